//! Scans a plugins folder and loads each plugin folder in it.
//!
//! Dot-entries and loose files are skipped; a folder symlinked into the plugins
//! folder is followed (handy while developing a plugin elsewhere). A folder that
//! fails validation is kept as [`Rejected`] with every reason, and never stops
//! the others from loading.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::plugins::catalog::{Catalog, FolderResult, Plugin, Rejected};
use crate::plugins::manifest::ManifestError;
use crate::plugins::validate::check_plugin;
pub(crate) use crate::plugins::validate::folder_name;

/// Loads one plugin folder.
pub(crate) fn load_folder(dir: &Path) -> FolderResult {
    let folder = folder_name(dir);
    match check_plugin(dir) {
        Ok(checked) => Ok(Arc::new(Plugin::from(checked))),
        Err(errors) => Err(Rejected {
            folder,
            dir: dir.to_path_buf(),
            errors,
            tools: crate::plugins::validate::declared_tools(dir),
        }),
    }
}

/// Names of the plugin folders directly inside `root`, sorted.
pub(crate) fn plugin_folders(root: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if is_plugin_folder(root, &name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Whether `root/name` is a folder the loader considers (not hidden, a directory).
pub(crate) fn is_plugin_folder(root: &Path, name: &str) -> bool {
    !name.starts_with('.') && std::fs::metadata(root.join(name)).is_ok_and(|m| m.is_dir())
}

/// Loads every plugin folder in `root` into a new catalog. Folders are checked on
/// all cores, since a large plugins folder is dominated by schema compilation.
pub(crate) fn scan(root: &Path) -> io::Result<Catalog> {
    let names = plugin_folders(root)?;
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(names.len().max(1));
    let chunk = names.len().div_ceil(workers).max(1);
    let results: Vec<(String, FolderResult)> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|n| (n.clone(), load_guarded(&root.join(n))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("load_guarded catches panics"))
            .collect()
    });
    Ok(Catalog::new(results))
}

/// [`load_folder`], turning a panic (a bug in plughost, say in a schema
/// library) into a rejection of that folder instead of losing it.
pub(crate) fn load_guarded(dir: &Path) -> FolderResult {
    guarded(dir, load_folder)
}

/// Runs `load` on `dir`, a panic becoming the folder's rejection.
fn guarded(dir: &Path, load: impl FnOnce(&Path) -> FolderResult) -> FolderResult {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(dir))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Rejected {
            folder: folder_name(dir),
            dir: dir.to_path_buf(),
            errors: vec![ManifestError {
                pointer: String::new(),
                message: format!(
                    "plughost failed while checking this folder ({what}); this is a bug in plughost, please report it with the folder's plugin.json"
                ),
            }],
            tools: Vec::new(),
        })
    })
}

/// A rejection for a folder that could not even be listed or read.
pub(crate) fn unreadable(dir: &Path, err: &io::Error) -> Rejected {
    Rejected {
        folder: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: dir.to_path_buf(),
        errors: vec![ManifestError {
            pointer: String::new(),
            message: format!("cannot read the folder: {err}"),
        }],
        tools: Vec::new(),
    }
}

#[cfg(test)]
mod guard_tests {
    use super::*;

    #[test]
    fn a_panic_while_loading_rejects_the_folder_and_says_it_is_a_bug() {
        let dir = Path::new("/plugins/broken-one");
        let result = guarded(dir, |_| panic!("schema library exploded"));
        let rejected = result.expect_err("a panic is a rejection");
        assert_eq!(rejected.folder, "broken-one");
        let message = &rejected.errors[0].message;
        assert!(message.contains("schema library exploded"), "{message}");
        assert!(message.contains("bug in plughost"), "{message}");
    }
}
