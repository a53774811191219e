//! plughost never follows a path a plugin can change: the temp and data
//! folders it empties or makes, and the attachments it reads. Each test has a
//! plugin granted nothing point plughost at a "victim" folder or a secret
//! file through a link, runs the real binary (`plughost call`, a persistent
//! worker, `plughost serve`), and checks the victim is untouched and the
//! secret never comes back.

use crate::mcp_client;
use crate::util;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine;
use mcp_client::{call, connect, text};
use serde_json::json;
use util::Sandbox;

const SECRET: &str = "SECRET-KEY-MATERIAL-0123456789";

/// A folder outside every plugin's reach, with files that must survive.
fn victim(sandbox: &Sandbox, name: &str) -> PathBuf {
    let v = sandbox.root.path().join(name);
    std::fs::create_dir_all(v.join("inner")).unwrap();
    std::fs::write(v.join("keep.txt"), "keep").unwrap();
    std::fs::write(v.join("inner/keep.txt"), "keep").unwrap();
    v
}

fn assert_intact(victim: &Path) {
    for f in ["keep.txt", "inner/keep.txt"] {
        assert_eq!(
            std::fs::read_to_string(victim.join(f)).ok().as_deref(),
            Some("keep"),
            "{} was deleted through a link",
            victim.join(f).display()
        );
    }
    let names: Vec<_> = std::fs::read_dir(victim)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "nothing was written into the victim: {names:?}"
    );
}

/// Every symbolic link under `dir`, not following any.
fn links_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            found.push(e.path());
        } else if kind.is_dir() {
            found.extend(links_under(&e.path()));
        }
    }
    found
}

/// A plugin granted nothing, with the bash entrypoint `script`.
fn plugin(sandbox: &Sandbox, name: &str, script: &str, persistent: bool) -> String {
    let tool = name.replace('-', "_");
    let mut manifest = util::manifest(name, &tool);
    if persistent {
        manifest["persistent"] = json!({});
    }
    sandbox.write_plugin(name, &manifest, script);
    tool
}

fn call_cli(sandbox: &Sandbox, tool: &str) -> std::process::Output {
    util::run({
        let mut c = sandbox.cmd();
        c.args(["call", tool, "{}"]);
        c
    })
}

/// Replaces its temp folder with a link to the victim and says whether it could.
fn swap_tmpdir(victim: &Path) -> String {
    format!(
        "rm -rf \"$TMPDIR\" && ln -s '{}' \"$TMPDIR\" && echo '{{\"result\":\"swapped\"}}' || echo '{{\"result\":\"blocked\"}}'\n",
        victim.display()
    )
}

#[test]
fn a_temp_folder_replaced_by_a_link_is_removed_not_followed() {
    let sandbox = Sandbox::new();
    let v = victim(&sandbox, "victim");
    let tool = plugin(
        &sandbox,
        "tmp-swapper",
        &format!("#!/bin/sh\ncat >/dev/null\n{}", swap_tmpdir(&v)),
        false,
    );
    for _ in 0..2 {
        let out = call_cli(&sandbox, &tool);
        assert_eq!(
            util::stdout(&out).trim(),
            "swapped",
            "{}",
            util::stderr(&out)
        );
        assert_intact(&v);
    }
    assert_eq!(
        links_under(&sandbox.state().join("tmp")),
        Vec::<PathBuf>::new(),
        "the link is removed as a link when the host ends"
    );
}

#[test]
fn a_workers_temp_folder_replaced_by_a_link_is_removed_not_followed() {
    let sandbox = Sandbox::new();
    let v = victim(&sandbox, "victim");
    let script = format!(
        "#!/bin/bash\nwhile read -r line; do\n{}done\n",
        swap_tmpdir(&v)
    );
    let tool = plugin(&sandbox, "worker-swapper", &script, true);
    let out = call_cli(&sandbox, &tool);
    assert_eq!(
        util::stdout(&out).trim(),
        "swapped",
        "{}",
        util::stderr(&out)
    );
    assert_intact(&v);
    assert_eq!(
        links_under(&sandbox.state().join("tmp")),
        Vec::<PathBuf>::new()
    );
}

/// Links at every depth of the temp folder, to a folder and to a file: the
/// folder is emptied for the next call, the links removed, the victim kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_inside_the_temp_folder_are_removed_not_followed() {
    let sandbox = Sandbox::new();
    let v = victim(&sandbox, "victim");
    let script = format!(
        r#"#!/bin/bash
req=$(cat)
if [[ $req == *'"fill"'* ]]; then
  mkdir -p "$TMPDIR/a/b/c" && echo x > "$TMPDIR/a/b/c/f"
  ln -s '{v}' "$TMPDIR/dir-link" && ln -s '{v}' "$TMPDIR/a/b/dir-link"
  ln -s '{v}/keep.txt' "$TMPDIR/file-link" && ln -s '{v}/inner' "$TMPDIR/a/inner"
  echo '{{"result":"filled"}}'
else
  echo "{{\"result\":\"$(ls -A "$TMPDIR" | wc -l)\"}}"
fi
"#,
        v = v.display()
    );
    let mut manifest = util::manifest("tmp-filler", "tmp_filler");
    manifest["tools"][0]["input_schema"] =
        json!({"type": "object", "properties": {"mode": {"type": "string"}}});
    sandbox.write_plugin("tmp-filler", &manifest, &script);
    let s = connect(&sandbox, None).await;
    for _ in 0..3 {
        let r = s
            .client
            .call_tool(call("tmp_filler", json!({"mode": "fill"})))
            .await
            .unwrap();
        assert_eq!(text(&r), "filled");
        // The folder is given back emptied, off the call's path: the next
        // call may get it, or a new one, but never one with files in it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let r = s
                .client
                .call_tool(call("tmp_filler", json!({"mode": "count"})))
                .await
                .unwrap();
            if text(&r).trim() == "0" {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{}", text(&r));
        }
        assert_intact(&v);
    }
    s.client.cancel().await.unwrap();
    assert_intact(&v);
}

/// The data folder (or `data` above it) replaced with a link, as a plugin
/// granted the state folder could: the call fails naming the link; the
/// plugin is never sent there and nothing is made there.
#[test]
fn a_data_folder_that_is_a_link_fails_the_call() {
    for link_at in ["data/data-marker", "data"] {
        let sandbox = Sandbox::new();
        let v = victim(&sandbox, "victim");
        let tool = plugin(
            &sandbox,
            "data-marker",
            "#!/bin/sh\ncat >/dev/null\necho mark > \"$PLUGHOST_DATA_DIR/marker\"\necho '{\"result\":\"ran\"}'\n",
            false,
        );
        let link = sandbox.state().join(link_at);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(&v, &link).unwrap();
        let out = call_cli(&sandbox, &tool);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{link_at}: {}",
            util::stdout(&out)
        );
        let err = util::stderr(&out);
        assert!(err.contains("is a symbolic link"), "{link_at}: {err}");
        assert_intact(&v);
        assert!(
            !v.join("data-marker").exists() && !v.join("marker").exists(),
            "{link_at}: nothing is made behind the link"
        );
    }
}

/// An attachment that is a link, or is reached through one, is refused and
/// never read, with or without `filesystem:read`; through the CLI and MCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attachment_through_a_link_is_refused_not_read() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.png"), SECRET).unwrap();
    for (name, permissions, path) in [
        ("file-link", json!([]), "pic.png"),
        ("dir-link", json!([]), "folder/secret.png"),
        ("read-link", json!(["filesystem:read"]), "pic.png"),
    ] {
        let script = format!(
            "#!/bin/sh\ncat >/dev/null\nd=\"$PLUGHOST_DATA_DIR\"\nln -sfn '{o}/secret.png' \"$d/pic.png\"\nln -sfn '{o}' \"$d/folder\"\necho '{{\"result\":\"here\",\"attachments\":[{{\"media_type\":\"image\",\"mime_type\":\"image/png\",\"path\":\"{path}\"}}]}}'\n",
            o = outside.display()
        );
        let mut manifest = util::manifest(name, &name.replace('-', "_"));
        manifest["permissions"] = permissions;
        sandbox.write_plugin(name, &manifest, &script);
        let out = util::run({
            let mut c = sandbox.cmd();
            c.args(["--json", "call", &name.replace('-', "_"), "{}"]);
            c
        });
        assert_eq!(out.status.code(), Some(2), "{name}: {}", util::stdout(&out));
        // With --json the error is a JSON object on stdout.
        let both = util::stdout(&out) + &util::stderr(&out);
        assert!(
            both.contains("invalid_output") && both.contains("symbolic link"),
            "{name}: {both}"
        );
        assert!(!both.contains(SECRET), "{name}: {both}");
    }
    let s = connect(&sandbox, None).await;
    for tool in ["file_link", "dir_link", "read_link"] {
        let r = s.client.call_tool(call(tool, json!({}))).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        assert!(text(&r).contains("symbolic link"), "{tool}: {}", text(&r));
        assert!(r.content.iter().all(|c| c.as_image().is_none()), "{tool}");
    }
    s.client.cancel().await.unwrap();
}

/// The attachment is swapped for a link to a secret, and back, all the time
/// the calls run: whatever the timing, an image that comes back holds the
/// file the plugin wrote, never the secret. (Checking by path and then
/// reading by path lost this race within a few calls.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attachment_swapped_for_a_link_never_sends_what_it_points_at() {
    const CALLS: usize = 300;
    const REAL: &str = "REAL-PNG-BYTES";
    let sandbox = Sandbox::new();
    let secret = sandbox.root.path().join("id_ed25519");
    std::fs::write(&secret, SECRET).unwrap();
    let tool = plugin(
        &sandbox,
        "racer",
        "#!/bin/sh\ncat >/dev/null\necho '{\"result\":\"pic\",\"attachments\":[{\"media_type\":\"image\",\"mime_type\":\"image/png\",\"path\":\"pic.png\"}]}'\n",
        false,
    );
    let data = sandbox.state().join("data/racer");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("pic.png"), REAL).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, data, secret) = (stop.clone(), data.clone(), secret.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Each step an atomic rename over the name plughost reads.
                let _ = std::fs::remove_file(data.join("next"));
                if swaps & 1 == 0 {
                    symlink(&secret, data.join("next")).unwrap();
                } else {
                    std::fs::write(data.join("next"), REAL).unwrap();
                }
                std::fs::rename(data.join("next"), data.join("pic.png")).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let s = connect(&sandbox, None).await;
    let (mut images, mut refused) = (0, 0);
    for _ in 0..CALLS {
        let r = s.client.call_tool(call(&tool, json!({}))).await.unwrap();
        assert!(!text(&r).contains(SECRET));
        for image in r.content.iter().filter_map(|c| c.as_image()) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&image.data)
                .unwrap();
            assert_ne!(
                bytes,
                SECRET.as_bytes(),
                "the secret came back as the image"
            );
            assert_eq!(bytes, REAL.as_bytes());
            images += 1;
        }
        if r.is_error == Some(true) {
            assert!(text(&r).contains("symbolic link"), "{}", text(&r));
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    s.client.cancel().await.unwrap();
    assert!(
        swaps > CALLS as u64,
        "the swapper ran throughout ({swaps} swaps)"
    );
    assert!(
        images > 0,
        "some calls got the real file ({refused} refused)"
    );
    assert!(refused > 0, "some calls met the link ({images} images)");
}
