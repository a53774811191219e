//! Builds `plughost-init` (`init/main.rs`), the first process of a confined
//! plugin's PID namespace, for the target being built: a static executable
//! without libc of a few kilobytes, which the executor embeds and runs from
//! memory (see `src/run/sandbox/init.rs`).
//!
//! On Linux x86_64 and aarch64 only; elsewhere the image is empty and the
//! executor goes without it (`plughost doctor` says so). A failure on
//! x86_64, where it is tested, fails the build; on aarch64 it is a warning
//! and the image is empty.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=init/main.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let image = out.join("plughost-init");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let supported = os == "linux" && matches!(arch.as_str(), "x86_64" | "aarch64");
    if supported {
        match build(&image) {
            Ok(()) => return,
            Err(e) if arch == "x86_64" => panic!("cannot build plughost-init: {e}"),
            Err(e) => println!(
                "cargo:warning=plughost-init was not built ({e}); confined plugins run without a PID namespace of their own"
            ),
        }
    }
    std::fs::write(&image, []).expect("cannot write an empty plughost-init");
}

fn build(image: &std::path::Path) -> Result<(), String> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").map_err(|e| e.to_string())?;
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--edition",
        "2024",
        "--crate-type",
        "bin",
        "--target",
        &target,
    ])
    .args([
        "-C",
        "opt-level=s",
        "-C",
        "panic=abort",
        "-C",
        "strip=symbols",
    ])
    .args(["-C", "relocation-model=static"])
    .args(["-C", "link-arg=-nostartfiles", "-C", "link-arg=-nostdlib"])
    .args(["-C", "link-arg=-static"])
    .arg("-o")
    .arg(image)
    .arg("init/main.rs");
    if let Some(linker) = env::var_os(format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace('-', "_")
    )) {
        cmd.arg("-C").arg({
            let mut arg = std::ffi::OsString::from("linker=");
            arg.push(linker);
            arg
        });
    }
    // The host's flags for the crate (coverage, sanitizers) do not apply.
    cmd.env_remove("CARGO_ENCODED_RUSTFLAGS");
    let output = cmd.output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(())
}
