//! Attachments a plugin returns by `path`: where such a file may be, and the
//! file opened once, checked on its descriptor, and read only through it.
//!
//! A plugin writes in its data folder, so between plughost's look at an
//! attachment and plughost's read it can swap the file for a link to one
//! the sandbox keeps from it (`~/.ssh/id_ed25519`), and the host would send
//! that file to the client on its behalf. So an attachment is never reached
//! through a link:
//!
//! 1. The path (relative: in the data folder) is made absolute and its `..`
//!    resolved by name, without asking the file system.
//! 2. It must lie in one of the places the plugin may attach from: its data
//!    folder, its own folder, a folder (or file) a scoped `filesystem` grant
//!    names, or, with `filesystem:read`, anywhere. Never in a secret of the
//!    user's a grant does not name, nor in plughost's state folder outside
//!    the plugin's own data folder.
//! 3. The most specific such place is opened (the data folder beneath the
//!    state folder with no link followed; the others as plughost or the user
//!    named them), and the rest of the path beneath it with
//!    [`Dir::open_file`]: no link at any step, a regular file checked on the
//!    descriptor (not a device, FIFO or folder), its size from `fstat`.
//! 4. For images and audio, which the MCP front end inlines, that
//!    descriptor travels with the outcome ([`Opened`]) and is what gets read,
//!    capped: the file checked is the file read, whatever the path names by
//!    then.
//!
//! A link in the path is refused, not followed, even one the user made and
//! the plugin could not change: with `filesystem:read` an attachment outside
//! the plugin's own places is named by its real path.

use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::fsat::{Dir, is_link_error};
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Permission;
use crate::protocol::{Attachment, MediaType};

/// An attachment's file, held open since it was checked: what the MCP front
/// end reads to inline an image or audio, instead of its path.
pub(crate) type Opened = Option<Arc<File>>;

/// A place a plugin may attach from.
struct Place {
    /// As plughost or the user named it (what the plugin was told).
    named: PathBuf,
    /// With its links resolved.
    real: PathBuf,
    /// How to open it.
    open: OpenPlace,
}

enum OpenPlace {
    /// The plugin's data folder: its name opened beneath the folder that
    /// holds it, no link followed (the plugin can change what is in it).
    Data,
    /// A folder plughost or the user named, opened as named.
    AsNamed,
    /// A file a grant names: only that file.
    File,
}

/// Checks `a` for `plugin` (whose data folder is `data_dir`): with a `path`,
/// the returned attachment names the file by its real path with its size,
/// and for images and audio comes with its open file. The error says why it
/// is refused, naming the path.
pub(crate) fn check(
    a: &Attachment,
    plugin: &Plugin,
    data_dir: &Path,
) -> Result<(Attachment, Opened), String> {
    let mut a = a.clone();
    let Some(path) = a.path.clone() else {
        return Ok((a, None));
    };
    let shown = path.display();
    let wanted = by_name(&if path.is_relative() {
        data_dir.join(&path)
    } else {
        path.clone()
    });
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let permissions = &plugin.manifest.permissions;
    let granted: Vec<PathBuf> = permissions
        .iter()
        .filter_map(|p| p.folder(home.as_deref()))
        .collect();
    let places = places(plugin, data_dir, &granted, permissions);
    let Some((place, rel)) = most_specific(&places, &wanted) else {
        return Err(format!(
            "attachment {shown} is outside the plugin's data folder; without filesystem:read a plugin attaches only its own files"
        ));
    };
    let real = place.real.join(&rel);
    refuse_protected(&real, &granted, data_dir, home.as_deref())
        .map_err(|why| format!("attachment {shown} is in {why}"))?;
    let file = open(place, data_dir, &rel).map_err(|e| {
        if is_link_error(&e) {
            format!(
                "attachment {shown} is a symbolic link, or is reached through one: plughost does not follow links where a plugin could change them; attach the file itself, by its real path"
            )
        } else {
            format!("attachment {shown} cannot be opened: {e}")
        }
    })?;
    let size = file
        .metadata()
        .map_err(|e| format!("attachment {shown} cannot be examined: {e}"))?
        .len();
    a.size = a.size.or(Some(size));
    a.path = Some(real);
    let opened =
        matches!(a.media_type, MediaType::Image | MediaType::Audio).then(|| Arc::new(file));
    Ok((a, opened))
}

/// The places `plugin` may attach from, most specific first when nested.
fn places(
    plugin: &Plugin,
    data_dir: &Path,
    granted: &[PathBuf],
    permissions: &[Permission],
) -> Vec<Place> {
    let place = |named: &Path, open| Place {
        named: by_name(named),
        real: named.canonicalize().unwrap_or_else(|_| by_name(named)),
        open,
    };
    let mut places = vec![
        place(data_dir, OpenPlace::Data),
        place(&plugin.dir, OpenPlace::AsNamed),
    ];
    for folder in granted {
        let open = match folder.is_file() {
            true => OpenPlace::File,
            false => OpenPlace::AsNamed,
        };
        places.push(place(folder, open));
    }
    if permissions.contains(&Permission::FilesystemRead) {
        places.push(place(Path::new("/"), OpenPlace::AsNamed));
    }
    places
}

/// The place that holds `wanted` most narrowly (by its name as given, or by
/// its real path), and the rest of `wanted` beneath it.
fn most_specific<'p>(places: &'p [Place], wanted: &Path) -> Option<(&'p Place, PathBuf)> {
    places
        .iter()
        .flat_map(|p| [(p, &p.named), (p, &p.real)])
        .filter_map(|(p, prefix)| {
            let rel = wanted.strip_prefix(prefix).ok()?;
            let fits = match p.open {
                OpenPlace::File => rel.as_os_str().is_empty(),
                _ => true,
            };
            fits.then(|| (p, rel.to_path_buf(), prefix.components().count()))
        })
        .max_by_key(|(_, _, depth)| *depth)
        .map(|(p, rel, _)| (p, rel))
}

/// Opens the file `rel` beneath `place`, following no link beneath it.
fn open(place: &Place, data_dir: &Path, rel: &Path) -> std::io::Result<File> {
    match place.open {
        OpenPlace::Data => {
            let (Some(holder), Some(name)) = (data_dir.parent(), data_dir.file_name()) else {
                return Dir::open(data_dir)?.open_file(rel);
            };
            Dir::open(holder)?.open_dir(Path::new(name))?.open_file(rel)
        }
        OpenPlace::AsNamed => Dir::open(&place.real)?.open_file(rel),
        OpenPlace::File => {
            let (Some(folder), Some(name)) = (place.real.parent(), place.real.file_name()) else {
                return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
            };
            Dir::open(folder)?.open_file(Path::new(name))
        }
    }
}

/// What no grant reaches but by naming it: the user's secrets, and the
/// state folder (approvals, tokens, other plugins' data) but for the
/// plugin's own data folder. The sandbox keeps the plugin from reading them;
/// the host does not read them on its behalf either. The error says where
/// `real` is.
fn refuse_protected(
    real: &Path,
    granted: &[PathBuf],
    data_dir: &Path,
    home: Option<&Path>,
) -> Result<(), String> {
    let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| by_name(p));
    let names = |protected: &Path| granted.iter().any(|g| resolved(g).starts_with(protected));
    let secret = crate::protect::user_paths(home)
        .into_iter()
        .filter(|p| p.kind == crate::protect::Kind::Secret)
        .find(|p| {
            let protected = resolved(&p.path);
            real.starts_with(&protected) && !names(&protected)
        });
    if let Some(p) = secret {
        return Err(format!(
            "{}, which holds {}: no plugin attaches it unless a grant names it",
            p.path.display(),
            p.what
        ));
    }
    let state = data_dir.parent().and_then(Path::parent).map(resolved);
    if state.is_some_and(|s| real.starts_with(s)) && !real.starts_with(resolved(data_dir)) {
        return Err(
            "plughost's state folder: a plugin attaches only its own data there".to_owned(),
        );
    }
    Ok(())
}

/// `path` with `.` dropped and each `..` taking off the name before it, by
/// name alone: the file system is not asked (nothing is followed).
fn by_name(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
