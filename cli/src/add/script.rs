//! What `server.sh` sets for the server: the variables `add` was given or
//! chose (a registry's defaults, a file kept in the data folder), and the
//! ones the server's code reads that it is still not given.

use super::super::terminal::say;

/// `export NAME=VALUE` lines for a `server.sh`.
pub(super) fn export_lines(exports: &[(String, String)]) -> Vec<String> {
    exports
        .iter()
        .map(|(k, v)| format!("export {k}={}", crate::shell::quote(v)))
        .collect()
}

/// For each variable naming a file its code keeps beside itself (in the
/// plugin folder, which no plugin may write) that is neither `given` (in
/// `env`) nor set by `exports`: its `export` line pointing into the
/// plugin's data folder, with a sentence saying so.
pub(super) fn in_data_folder(
    kept_beside: &[(String, String)],
    given: &[String],
    exports: &[(String, String)],
) -> Vec<(String, String)> {
    kept_beside
        .iter()
        .filter(|(var, _)| !given.contains(var) && !exports.iter().any(|(k, _)| k == var))
        .map(|(var, file)| {
            (
                format!(
                    "  sets {var}=$PLUGHOST_DATA_DIR/{file} (in server.sh: its code keeps {file} beside itself, in the plugin folder, which no plugin may write)"
                ),
                format!("export {var}=\"$PLUGHOST_DATA_DIR\"/{}", crate::shell::quote(file)),
            )
        })
        .collect()
}

/// `script` with `lines` after its leading comments.
pub(super) fn with_lines(script: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return script.to_owned();
    }
    let old: Vec<&str> = script.lines().collect();
    let at = old.iter().take_while(|l| l.starts_with('#')).count();
    let mut out: Vec<String> = old[..at].iter().map(|l| l.to_string()).collect();
    out.extend(lines.iter().cloned());
    out.extend(old[at..].iter().map(|l| l.to_string()));
    out.join("\n") + "\n"
}

/// Names the variables the server's code reads that it is not given yet:
/// neither in `given` (its `env`) nor set in `server.sh`.
pub(super) fn say_env(vars: &[String], given: &[String], script: &str) {
    let vars: Vec<&String> = vars
        .iter()
        .filter(|v| !given.contains(v) && !script.contains(&format!("export {v}=")))
        .collect();
    if vars.is_empty() {
        return;
    }
    say!(
        "its code reads {}: {}; to pass one, list it in plugin.json's \"env\" and set it where plughost runs",
        if vars.len() == 1 {
            "the variable"
        } else {
            "the variables"
        },
        vars.iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
