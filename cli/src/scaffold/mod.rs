//! `plughost new NAME --lang bash|python|node|rust`: writes a plugin folder
//! that validates, runs by hand with `echo json | ./main.*`, and answers
//! through plughost. Its one tool shows input reading, an error with a kind
//! and progress.
//!
//! Python, Node and Rust plugins use the author SDKs in `sdk/`. The SDK files
//! are compiled into the binary (`include_str!`) and copied into the folder,
//! so a plugin stands alone and always gets the SDK this plughost was built
//! with; tests keep the bundled examples' copies identical to `sdk/`.

pub mod mcp;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use plughost::manifest::MANIFEST_FILE;

/// The languages a new plugin can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Bash,
    Python,
    Node,
    Rust,
}

/// The bash JSON helpers, shared with the hello-world example.
const JSON_SH: &str = include_str!("../../../sdk/bash/plughost_json.sh");
const PYTHON_SDK: &str = include_str!("../../../sdk/python/plughost_plugin.py");
const NODE_SDK: &str = include_str!("../../../sdk/node/plughost_plugin.mjs");
const NODE_SDK_TYPES: &str = include_str!("../../../sdk/node/plughost_plugin.d.ts");
/// The Rust SDK's lock file: a new Rust plugin starts from the dependency
/// versions the SDK is tested with, and builds offline when they are cached.
const RUST_SDK_LOCK: &str = include_str!("../../../sdk/rust/Cargo.lock");

/// Where a new Rust plugin finds the SDK: this checkout's `sdk/rust`. A path
/// rather than git: the SDK is not published anywhere, and a path keeps the
/// plugin building offline against exactly the SDK that plughost ships.
/// (This package is the checkout's `cli/`.)
pub fn rust_sdk_dir() -> std::path::PathBuf {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(cli).join("sdk/rust")
}

/// One file of a new plugin; `{{name}}`, `{{tool}}`, `{{crate}}` and
/// `{{sdk_path}}` in a template are filled in, SDK files are copied as they are.
struct File {
    path: &'static str,
    text: &'static str,
    template: bool,
    executable: bool,
}

const fn template(path: &'static str, text: &'static str, executable: bool) -> File {
    File {
        path,
        text,
        template: true,
        executable,
    }
}

const fn copy(path: &'static str, text: &'static str) -> File {
    File {
        path,
        text,
        template: false,
        executable: false,
    }
}

impl Lang {
    /// The entrypoint and every file of a plugin in this language.
    fn files(self, persistent: bool) -> (&'static str, Vec<File>) {
        match self {
            Lang::Bash => {
                // A worker loops over request lines; a per-call plugin reads stdin whole.
                let main = if persistent {
                    include_str!("main_worker.sh")
                } else {
                    include_str!("main.sh")
                };
                let files = vec![template("main.sh", main, true), copy("json.sh", JSON_SH)];
                ("main.sh", files)
            }
            Lang::Python => {
                let files = vec![
                    template("main.py", include_str!("main.py"), true),
                    copy("plughost_plugin.py", PYTHON_SDK),
                ];
                ("main.py", files)
            }
            Lang::Node => {
                let files = vec![
                    template("main.mjs", include_str!("main.mjs"), true),
                    copy("plughost_plugin.mjs", NODE_SDK),
                    copy("plughost_plugin.d.ts", NODE_SDK_TYPES),
                ];
                ("main.mjs", files)
            }
            Lang::Rust => {
                let files = vec![
                    template("main.sh", include_str!("rust/main.sh"), true),
                    template("build.sh", include_str!("rust/build.sh"), true),
                    template("Cargo.toml", include_str!("rust/Cargo.toml.tmpl"), false),
                    copy("Cargo.lock", RUST_SDK_LOCK),
                    template("src/main.rs", include_str!("rust/main.rs.tmpl"), false),
                    copy(".gitignore", include_str!("rust/gitignore")),
                ];
                ("main.sh", files)
            }
        }
    }
}

/// The tool name a new plugin starts with: `my-plugin` offers `my_plugin_echo`.
pub fn tool_name(plugin: &str) -> String {
    let snake = plugin.replace('-', "_");
    let mut snake = if snake.starts_with(|c: char| c.is_ascii_alphabetic()) {
        snake
    } else {
        format!("t_{snake}")
    };
    // Tool names are at most 64 characters; "_echo" takes five.
    snake.truncate(59);
    format!("{snake}_echo")
}

/// The Cargo package (and binary) name of a Rust plugin: the plugin's name,
/// unless Cargo refuses it (a leading digit, or a name its built-in crates use).
pub fn crate_name(plugin: &str) -> String {
    let reserved = ["test", "core", "std", "alloc", "proc-macro", "build"];
    if plugin.starts_with(|c: char| c.is_ascii_digit()) || reserved.contains(&plugin) {
        format!("plugin-{plugin}")
    } else {
        plugin.to_owned()
    }
}

/// The `tools` array of a new plugin's manifest. The SDK templates declare the
/// same tool in code; a test checks that their `--manifest-tools` prints this.
pub fn manifest_tools(tool: &str) -> Value {
    json!([{
        "name": tool,
        "description": "Echoes the text back, in capitals when shout is true.",
        "input_schema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "description": "The text to echo"},
                "shout": {"type": "boolean", "description": "Echo in capitals", "default": false}
            },
            "required": ["text"],
            "additionalProperties": false
        }
    }])
}

/// What [`create`] wrote.
pub struct Created {
    pub dir: PathBuf,
    pub entrypoint: &'static str,
}

/// Writes the plugin folder `parent/name`. Refuses a bad name or an existing
/// folder. `persistent` makes it a long-lived worker (`"persistent": {}`).
pub fn create(parent: &Path, name: &str, lang: Lang, persistent: bool) -> Result<Created, String> {
    let dir = check_new(parent, name)?;
    let tool = tool_name(name);
    let (entrypoint, files) = lang.files(persistent);
    let mut manifest = json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("{name}: describe what it does in one sentence."),
        "entrypoint": entrypoint,
        "permissions": [],
        "tools": manifest_tools(&tool),
    });
    if persistent {
        manifest["persistent"] = json!({});
    }
    // A TOML basic string: the path may hold quotes or backslashes.
    let sdk_path = rust_sdk_dir()
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{tool}}", &tool)
            .replace("{{crate}}", &crate_name(name))
            .replace("{{sdk_path}}", &sdk_path)
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let manifest_text =
        serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
    write(&dir.join(MANIFEST_FILE), &manifest_text, false)?;
    for file in files {
        let text = if file.template {
            fill(file.text)
        } else {
            file.text.to_owned()
        };
        write(&dir.join(file.path), &text, file.executable)?;
    }
    Ok(Created { dir, entrypoint })
}

/// The folder `parent/name` for a new plugin: refuses a bad name or an
/// existing folder.
pub(crate) fn check_new(parent: &Path, name: &str) -> Result<PathBuf, String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(format!(
            "\"{name}\" is not a plugin name: use lowercase letters, digits and dashes, starting with a letter or digit"
        ));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(format!("{} already exists", dir.display()));
    }
    Ok(dir)
}

/// Writes `text` as a new file at `path`. Whatever was at `path` is removed
/// first and the new file is made there, never opened through a link: an
/// install's code, which may write the staging folder, could have left a
/// symbolic or hard link there to a file of yours.
pub(crate) fn write(path: &Path, text: &str, executable: bool) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot replace {}: {e}", path.display()));
        }
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if executable { 0o755 } else { 0o644 })
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if executable {
        // The mode given at creation is narrowed by the umask.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

/// Compiles the Python SDK into `__pycache__/` now, while the folder is
/// writable: under the sandbox the plugin folder is read-only, so without this
/// every call would compile the module again (about 6 ms). Failure (no
/// python3) only costs that time; the returned line says which happened.
pub fn precompile_python(dir: &Path) -> String {
    let out = std::process::Command::new("python3")
        .args(["-m", "py_compile", "plughost_plugin.py"])
        .current_dir(dir)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env_remove("PYTHONPYCACHEPREFIX")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => "compiled plughost_plugin.py into __pycache__/ \
             (the sandbox keeps the folder read-only, so calls could not cache it themselves)"
            .to_owned(),
        Ok(o) => format!(
            "could not compile plughost_plugin.py ({}); ignored: each call compiles it (about 6 ms)",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!(
            "could not run python3 to compile plughost_plugin.py ({e}); ignored: each call compiles it (about 6 ms)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::write;

    #[test]
    fn a_link_left_where_a_file_is_written_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let yours = dir.path().join("bashrc");
        std::fs::write(&yours, "# mine\n").unwrap();
        let stage = dir.path().join("stage");
        std::fs::create_dir(&stage).unwrap();
        std::os::unix::fs::symlink(&yours, stage.join("server.sh")).unwrap();
        std::fs::hard_link(&yours, stage.join("plugin.json")).unwrap();
        write(&stage.join("server.sh"), "#!/bin/sh\n", true).unwrap();
        write(&stage.join("plugin.json"), "{}\n", false).unwrap();
        assert_eq!(std::fs::read_to_string(&yours).unwrap(), "# mine\n");
        let meta = std::fs::symlink_metadata(stage.join("server.sh")).unwrap();
        assert!(meta.file_type().is_file());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert_eq!(
            std::fs::read_to_string(stage.join("plugin.json")).unwrap(),
            "{}\n"
        );
    }
}
