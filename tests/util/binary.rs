//! The `plughost` binary of this tree, for the integration tests and the
//! bench (each includes this file): it is the command-line crate's (`cli/`),
//! which the engine's tests and benches cannot name by
//! `CARGO_BIN_EXE_plughost`.

use std::path::{Path, PathBuf};

/// Built once per run, in the profile of the running test or bench.
pub fn plughost() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the running binary's path");
        // target/PROFILE/deps/NAME-HASH
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("tests and benches run from target/PROFILE/deps")
            .to_owned();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build
            .args([
                "build",
                "--quiet",
                "-p",
                "plughost-cli",
                "--bin",
                "plughost",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let built = build.status().is_ok_and(|s| s.success());
        assert!(
            built,
            "cannot build the plughost binary: cargo build -p plughost-cli"
        );
        profile_dir.join("plughost")
    })
}
