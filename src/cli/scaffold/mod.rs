//! `plughost new NAME --lang bash|python|node`: writes a plugin folder that
//! validates, runs by hand with `echo json | ./main.*`, and answers through
//! plughost. Its entrypoint shows input reading, an error result and progress.

use std::path::{Path, PathBuf};

use serde_json::json;

use plughost::manifest::MANIFEST_FILE;

/// The languages a new plugin can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Bash,
    Python,
    Node,
}

impl Lang {
    fn entrypoint(self) -> (&'static str, &'static str) {
        match self {
            Lang::Bash => ("main.sh", include_str!("main.sh")),
            Lang::Python => ("main.py", include_str!("main.py")),
            Lang::Node => ("main.js", include_str!("main.js")),
        }
    }
}

/// The bash JSON helpers, shared with the hello-world example.
const JSON_SH: &str = include_str!("../../../plugins-examples/hello-world/json.sh");

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

/// Writes the plugin folder `parent/name`; returns its path. Refuses a bad name
/// or an existing folder.
pub fn create(parent: &Path, name: &str, lang: Lang) -> Result<PathBuf, String> {
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
    let tool = tool_name(name);
    let (entrypoint, template) = lang.entrypoint();
    let manifest = json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("{name}: describe what it does in one sentence."),
        "entrypoint": entrypoint,
        "permissions": [],
        "tools": [{
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
        }]
    });
    let write = |file: &str, text: &str, executable: bool| -> Result<(), String> {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
        }
        Ok(())
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let manifest_text =
        serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
    write(MANIFEST_FILE, &manifest_text, false)?;
    write(
        entrypoint,
        &template
            .replace("{{name}}", name)
            .replace("{{tool}}", &tool),
        true,
    )?;
    if lang == Lang::Bash {
        write("json.sh", JSON_SH, false)?;
    }
    Ok(dir)
}
