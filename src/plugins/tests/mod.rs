//! Manifest validation, end to end: the bundled examples load, every broken
//! manifest is rejected with the right JSON pointer and words, hostile
//! `plugin.json` files fail fast, collisions resolve deterministically, and the
//! committed schemas match the generated ones. (What the CLI prints of it is in
//! `tests/cli_plugins.rs`.)

mod catalog;
mod entrypoint;
mod fields;
mod hostile;
mod input_schemas;

pub(super) use std::os::unix::fs::{PermissionsExt, symlink};
pub(super) use std::path::{Path, PathBuf};
pub(super) use std::sync::mpsc;
pub(super) use std::time::{Duration, Instant};

pub(super) use serde_json::{Value, json};

pub(super) use crate::plugins::catalog::Catalog;
pub(super) use crate::plugins::loader;
pub(super) use crate::plugins::manifest::MANIFEST_FILE;
pub(super) use crate::plugins::manifest::{MAX_MANIFEST_BYTES, ManifestError};
pub(super) use crate::plugins::validate::check_plugin;
pub(super) use crate::test_support::{
    Sandbox, example_manifests, examples, manifest, tool_names, write_executable,
};

// ---------------------------------------------------------------- helpers

/// Name of the plugin (and its folder) in the single-plugin tests.
pub(super) const NAME: &str = "demo";
/// Its one tool.
pub(super) const TOOL: &str = "demo_tool";

pub(super) const SCRIPT: &str = "#!/bin/sh\ncat >/dev/null\necho '{\"result\":\"ok\"}'\n";

/// Runs `f` on another thread and panics when it takes longer than `limit`:
/// a validator that blocks (on a FIFO, a huge file, a network fetch) fails
/// the test instead of hanging it.
pub(super) fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the validator panicked"),
    }
}

/// The errors of a plugin folder that must be rejected, through both
/// `loader::load_folder` and `validate::check_plugin` (which must agree).
pub(super) fn rejection(dir: &Path) -> Vec<ManifestError> {
    let owned = dir.to_path_buf();
    let (loaded, checked) = within(
        Duration::from_secs(5),
        &dir.display().to_string(),
        move || (loader::load_folder(&owned), check_plugin(&owned)),
    );
    let rejected = match loaded {
        Ok(p) => panic!("{} was accepted as plugin {:?}", dir.display(), p.name()),
        Err(r) => r,
    };
    let folder = dir.file_name().unwrap().to_string_lossy();
    assert_eq!(rejected.folder, folder);
    assert!(!rejected.errors.is_empty(), "rejected without a reason");
    let checked = checked.expect_err("check_plugin accepted what load_folder rejected");
    assert_eq!(
        checked, rejected.errors,
        "load_folder and check_plugin disagree"
    );
    for e in &rejected.errors {
        assert!(
            !e.message.trim().is_empty(),
            "empty message at {:?}",
            e.pointer
        );
    }
    rejected.errors
}

/// Asserts that `errors` are exactly these (pointer, message fragment) pairs,
/// in any order: each expected error is present and nothing else was reported.
#[track_caller]
pub(super) fn assert_errors(errors: &[ManifestError], expected: &[(&str, &str)]) {
    let shown = || {
        errors
            .iter()
            .map(|e| format!("  {:?}: {}", e.pointer, e.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (pointer, fragment) in expected {
        assert!(
            errors
                .iter()
                .any(|e| e.pointer == *pointer && e.message.contains(fragment)),
            "expected an error at {pointer:?} containing {fragment:?}; got:\n{}",
            shown()
        );
    }
    assert_eq!(
        errors.len(),
        expected.len(),
        "expected exactly {} error(s); got:\n{}",
        expected.len(),
        shown()
    );
}

/// A fresh sandbox holding plugin `demo` built from `crate::test_support::manifest` with `edit`
/// applied, and its folder.
pub(super) fn plugin_with(edit: impl FnOnce(&mut Value)) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    edit(&mut m);
    let dir = sb.write_plugin(NAME, &m, SCRIPT);
    (sb, dir)
}

/// The errors of `crate::test_support::manifest` with one edit.
pub(super) fn broken(edit: impl FnOnce(&mut Value)) -> Vec<ManifestError> {
    let (_sb, dir) = plugin_with(edit);
    rejection(&dir)
}

pub(super) fn remove(m: &mut Value, field: &str) {
    m.as_object_mut()
        .unwrap()
        .remove(field)
        .expect("field present");
}

pub(super) fn tool0(m: &mut Value) -> &mut Value {
    &mut m["tools"][0]
}

/// Renames `from` to `to` in the JSON object `v`.
pub(super) fn rename(v: &mut Value, from: &str, to: &str) {
    let obj = v.as_object_mut().unwrap();
    let value = obj.remove(from).expect("field present");
    obj.insert(to.to_owned(), value);
}

/// A plugin folder `demo` whose `plugin.json` is written by `make` (not a valid
/// manifest), next to a valid entrypoint.
pub(super) fn hostile(make: impl FnOnce(&Path)) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let dir = sb.plugins().join(NAME);
    std::fs::create_dir_all(&dir).unwrap();
    write_executable(&dir.join("main.sh"), SCRIPT);
    make(&dir.join(MANIFEST_FILE));
    (sb, dir)
}
