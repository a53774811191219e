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

/// What is wrong with an entrypoint's first line, seen as the kernel sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FirstLine {
    /// `#!` and an interpreter, or a binary: runnable as far as the line goes.
    Fine,
    /// The `#!` line ends in `\r` (Windows line endings): the kernel looks
    /// for an interpreter whose name ends in a carriage return.
    Crlf { line: String },
    /// A UTF-8 byte-order mark before `#!`: the kernel sees no `#!` at all.
    Bom,
    /// The `#!` line is not UTF-8.
    NotUtf8,
    /// Neither a `#!` line nor a binary this system runs.
    NoInterpreter,
}

/// Looks at the first bytes of `file`.
pub(crate) fn first_line(file: &Path) -> FirstLine {
    let mut head = [0u8; 512];
    let Ok(n) = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)) else {
        return FirstLine::Fine;
    };
    let head = &head[..n];
    if head.starts_with(b"\xEF\xBB\xBF") {
        return FirstLine::Bom;
    }
    let Some(rest) = head.strip_prefix(b"#!") else {
        // ELF (Linux, the BSDs) and Mach-O (macOS) binaries.
        let binary = head.starts_with(b"\x7fELF")
            || head.starts_with(&[0xCF, 0xFA, 0xED, 0xFE])
            || head.starts_with(&[0xCA, 0xFE, 0xBA, 0xBE]);
        return if binary || head.is_empty() {
            FirstLine::Fine
        } else {
            FirstLine::NoInterpreter
        };
    };
    let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    match std::str::from_utf8(line) {
        Err(_) => FirstLine::NotUtf8,
        Ok(text) if text.ends_with('\r') => FirstLine::Crlf {
            line: format!("#!{}", text.trim_end_matches('\r')),
        },
        Ok(_) => FirstLine::Fine,
    }
}

/// The problem of a first line, in words with the fix; `None` when it is fine.
pub(crate) fn explain(first: &FirstLine, entrypoint: &str) -> Option<String> {
    Some(match first {
        FirstLine::Fine => return None,
        FirstLine::Crlf { line } => format!(
            "the first line of \"{entrypoint}\", \"{line}\", ends with \"\\r\" (Windows line endings), so the system looks for an interpreter whose name ends in \"\\r\"; convert it to Unix line endings: sed -i 's/\\r$//' {entrypoint} (or dos2unix {entrypoint})"
        ),
        FirstLine::Bom => format!(
            "\"{entrypoint}\" starts with a UTF-8 byte-order mark, which hides its #! line from the system; save it as UTF-8 without a BOM"
        ),
        FirstLine::NotUtf8 => format!("the #! line of \"{entrypoint}\" is not UTF-8"),
        FirstLine::NoInterpreter => format!(
            "\"{entrypoint}\" has no #! line and is not a binary for this system; add one, like #!/bin/sh"
        ),
    })
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

/// A note when the interpreter the entrypoint's `#!` line names is not found
/// (on this process's `PATH`, which plugins get too).
pub(crate) fn missing_interpreter(entrypoint: &Path, plugin_dir: &Path) -> Option<String> {
    let line = read_line(entrypoint)?;
    let program = interpreter(&line)?;
    let found = resolve(&program, std::env::var_os("PATH").as_ref(), plugin_dir).is_some();
    (!found).then(|| {
        format!(
            "the interpreter \"{program}\" named on the entrypoint's first line (\"#!{line}\") is not found{}; install it, or name one that exists",
            if program.contains('/') { "" } else { " on PATH" }
        )
    })
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
