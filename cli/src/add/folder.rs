//! A new plugin folder: made whole in a stage beside the plugins (which the
//! loader skips), and its manifest written in a fixed order.

use std::path::Path;

use serde_json::{Value, json};

/// Runs `fill` on a fresh `stage` folder; on failure the folder is removed.
pub(super) fn staged<T>(
    stage: &Path,
    fill: impl FnOnce(&Path) -> Result<T, String>,
) -> Result<T, String> {
    // A stage left by an install that was cut off.
    if stage.exists() {
        std::fs::remove_dir_all(stage).map_err(|e| {
            format!(
                "cannot remove the unfinished install {}: {e}",
                stage.display()
            )
        })?;
    }
    std::fs::create_dir_all(stage)
        .map_err(|e| format!("cannot create {}: {e}", stage.display()))?;
    let done = fill(stage);
    if done.is_err() {
        let _ = std::fs::remove_dir_all(stage);
    }
    done
}

/// A JSON object with its keys in this order, pretty-printed like
/// `plughost new` writes manifests.
pub(super) fn ordered(fields: &[(&str, Value)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            let value = serde_json::to_string_pretty(v)
                .expect("JSON")
                .replace('\n', "\n  ");
            format!("  {}: {value}", json!(k))
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}
