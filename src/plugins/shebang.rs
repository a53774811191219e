//! Reading an entrypoint's `#!` line and finding the interpreter it names.
//! The sandbox allows the interpreter's install folder, error messages name a
//! missing interpreter, and `doctor` spots slow interpreter shims.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The `#!` line of `file`, without the `#!`, if it has one.
pub(crate) fn read_line(file: &Path) -> Option<String> {
    let mut head = [0u8; 512];
    let mut f = std::fs::File::open(file).ok()?;
    let n = f.read(&mut head).ok()?;
    let head = head[..n].strip_prefix(b"#!")?;
    let line = head.split(|&b| b == b'\n').next()?;
    Some(String::from_utf8_lossy(line).trim().to_owned())
}

/// The program a `#!` line runs: the interpreter itself, or for `env` the first
/// argument that is neither an option (`-S`) nor an assignment (`A=b`).
pub(crate) fn interpreter(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if Path::new(first).file_name().is_some_and(|n| n == "env") {
        words
            .find(|w| !w.starts_with('-') && !w.contains('='))
            .map(str::to_owned)
    } else {
        Some(first.to_owned())
    }
}

/// Where `program` is: a path as written (relative to the plugin folder), or the
/// first executable file of that name on `PATH`.
pub(crate) fn resolve(
    program: &str,
    path_var: Option<&OsString>,
    plugin_dir: &Path,
) -> Option<PathBuf> {
    if program.contains('/') {
        let p = plugin_dir.join(program);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_shebangs_name_the_program() {
        assert_eq!(
            interpreter("/usr/bin/env python3").as_deref(),
            Some("python3")
        );
        assert_eq!(
            interpreter("/usr/bin/env -S node --no-warnings").as_deref(),
            Some("node")
        );
        assert_eq!(
            interpreter("/usr/bin/env A=1 python3 -u").as_deref(),
            Some("python3")
        );
        assert_eq!(interpreter("/bin/bash -e").as_deref(), Some("/bin/bash"));
        assert_eq!(interpreter("").as_deref(), None);
    }
}
