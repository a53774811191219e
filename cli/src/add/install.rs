//! What installing a package gives the plugin folder, whatever the
//! ecosystem: the wrapper that starts the server, the interpreter it runs
//! on, and what the package says about itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A package installed into a staging folder.
pub struct Installed {
    pub version: String,
    pub description: Option<String>,
    /// The interpreter (or program) `server.sh` runs, as a full path.
    pub program: PathBuf,
    /// The files to write beside the install: `server.sh` first.
    pub files: Vec<(&'static str, String)>,
    /// The environment variables the server's own code reads.
    pub env_vars: Vec<String>,
    /// Those that name a file the code keeps beside itself unless told
    /// otherwise, with that file's name: `add` points them into the
    /// plugin's data folder.
    pub kept_beside: Vec<(String, String)>,
}

/// Runs an installer, saying in one sentence what failed (with the end of
/// what it printed).
pub fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program} to install {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = tail[tail.len().saturating_sub(6)..].join("\n  ");
    Err(format!(
        "{program} could not install {what} ({}):\n  {tail}",
        out.status
    ))
}

/// The names of the variables that `text` reads through one of `readers`
/// followed by a quoted name (`os.getenv("NAME"`) or, for `.`-ending
/// readers, a property (`process.env.NAME`).
pub fn env_reads(text: &str, readers: &[&str], found: &mut Vec<String>) {
    for reader in readers {
        let mut rest = text;
        while let Some(at) = rest.find(reader) {
            rest = &rest[at + reader.len()..];
            let after = rest.trim_start();
            let name_start = match after.chars().next() {
                Some('"' | '\'') => &after[1..],
                Some(_) if reader.ends_with('.') => after,
                _ => continue,
            };
            let name: String = name_start
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let looks_like_a_variable = name.len() >= 3
                && name.starts_with(|c: char| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if looks_like_a_variable && !COMMON.contains(&name.as_str()) && !found.contains(&name) {
                found.push(name);
            }
        }
    }
}

/// Among `vars`, those that name a file (`…_PATH`, `…_FILE`) and whose
/// default is a file beside the code: near where `text` reads the variable,
/// a file name is joined to the code's own folder (one of `here`:
/// `import.meta.url`, `__dirname`, `__file__`). Each with that file name.
/// In a read-only plugin folder such a server cannot write its file (the
/// memory server's `memory.jsonl`).
pub fn kept_beside(text: &str, vars: &[String], here: &[&str], found: &mut Vec<(String, String)>) {
    /// How far from a read of the variable its default is looked for.
    const NEAR: usize = 800;
    /// How far after the folder the file name must follow.
    const JOINED: usize = 80;
    for var in vars {
        let names_a_file = ["_PATH", "_FILE"].iter().any(|s| var.ends_with(s));
        if !names_a_file || found.iter().any(|(v, _)| v == var) {
            continue;
        }
        let file = text.match_indices(var.as_str()).find_map(|(at, _)| {
            let window = around(text, at, NEAR);
            here.iter()
                .flat_map(|marker| window.match_indices(marker))
                .find_map(|(h, m)| first_file_name(around(&window[h + m.len()..], 0, JOINED)))
        });
        if let Some(file) = file {
            found.push((var.clone(), file));
        }
    }
}

/// `text` from `at - before` to `at + after` (`before` = `after` = `n`
/// unless `at` is 0), on character boundaries.
fn around(text: &str, at: usize, n: usize) -> &str {
    let mut start = at.saturating_sub(if at == 0 { 0 } else { n });
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + n).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    &text[start..end]
}

/// The first quoted file name in `text` (`'memory.jsonl'`): a name with an
/// extension, and not code (`.js`, `.py`…).
fn first_file_name(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(q) = rest.find(['\'', '"', '`']) {
        let quote = rest[q..].chars().next()?;
        let after = &rest[q + 1..];
        let end = after.find(quote)?;
        let word = &after[..end];
        rest = &after[end + 1..];
        let Some((stem, ext)) = word.rsplit_once('.') else {
            continue;
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        };
        let code = ["js", "mjs", "cjs", "ts", "py", "pyc", "node"].contains(&ext);
        if plain(stem) && plain(ext) && ext.len() <= 8 && !code {
            return Some(word.to_owned());
        }
    }
    None
}

/// Variables every program may read that say nothing about a server.
const COMMON: &[&str] = &[
    "HOME",
    "PATH",
    "USER",
    "TMPDIR",
    "TEMP",
    "TMP",
    "NODE_ENV",
    "DEBUG",
    "LANG",
    "TERM",
    "SHELL",
    "PWD",
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "PYTHONPATH",
    "PYTHONIOENCODING",
    "PYTHONUNBUFFERED",
    "APPDATA",
    "USERPROFILE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "LOCALAPPDATA",
    "PLUGHOST_DATA_DIR",
    "PLUGHOST_PLUGIN_DIR",
];

/// The files under `dir` with one of `extensions`, skipping folders named
/// in `skip`, at most `max` of them.
pub fn source_files(dir: &Path, extensions: &[&str], skip: &[&str], max: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !skip.iter().any(|s| name == *s) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && path
                    .extension()
                    .is_some_and(|x| extensions.iter().any(|e| x == *e))
            {
                out.push(path);
                if out.len() >= max {
                    return out;
                }
            }
        }
    }
    out
}

/// A program on `PATH`, as a full path, if there is one.
pub fn on_path(program: &str) -> Option<PathBuf> {
    super::super::scaffold::mcp::resolve(program).ok()
}

#[cfg(test)]
mod tests {
    use super::kept_beside;

    fn found(text: &str, vars: &[&str], here: &[&str]) -> Vec<(String, String)> {
        let vars: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
        let mut out = Vec::new();
        kept_beside(text, &vars, here, &mut out);
        out
    }

    #[test]
    fn a_file_kept_beside_the_code_is_found_and_nothing_else() {
        // The memory server's code.
        let memory = "export const defaultMemoryPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'memory.jsonl');\n\
             // migrate memory.json\n\
             if (process.env.MEMORY_FILE_PATH) { return path.isAbsolute(process.env.MEMORY_FILE_PATH) }";
        assert_eq!(
            found(
                memory,
                &["MEMORY_FILE_PATH"],
                &["import.meta.url", "__dirname"]
            ),
            [("MEMORY_FILE_PATH".to_owned(), "memory.jsonl".to_owned())]
        );
        // Python's `__file__`.
        let py = "DB = os.environ.get('NOTES_DB_PATH', os.path.join(os.path.dirname(__file__), \"notes.sqlite3\"))";
        assert_eq!(
            found(py, &["NOTES_DB_PATH"], &["__file__"]),
            [("NOTES_DB_PATH".to_owned(), "notes.sqlite3".to_owned())]
        );
        // A variable that is not a file, a default that is not beside the
        // code, code files: none.
        assert!(found(memory, &["MEMORY_REGION"], &["import.meta.url"]).is_empty());
        let elsewhere =
            "const p = process.env.CONFIG_PATH || path.join(os.homedir(), '.config.json');";
        assert!(
            found(
                elsewhere,
                &["CONFIG_PATH"],
                &["import.meta.url", "__dirname"]
            )
            .is_empty()
        );
        let code = "const f = process.env.ENTRY_FILE || path.join(__dirname, 'index.js');";
        assert!(found(code, &["ENTRY_FILE"], &["__dirname"]).is_empty());
    }
}
