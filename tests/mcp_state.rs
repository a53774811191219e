//! `plughost serve` over a state folder that is read-only, full, or holds an
//! approvals file that is a symlink or huge. A real MCP client (rmcp's); the
//! read-only and full folders are mounts in a user namespace (`unshare -rm`),
//! since permission bits do not stop root.
#![cfg(feature = "mcp-server")]

use crate::mcp_client;
use crate::util;

use std::process::Command;
use std::time::{Duration, Instant};

use mcp_client::{call, connect, connect_command, text};
use serde_json::json;
use util::Sandbox;

/// Whether this machine lets an unprivileged process mount in a namespace of
/// its own: a read-only bind mount and a small tmpfs.
fn mount_namespaces() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg("mount --bind -o ro \"$1\" \"$1\" && mount -t tmpfs -o size=64k none \"$1\"")
        .arg("sh")
        .arg(dir.path())
        .output()
        .is_ok_and(|o| o.status.success());
    util::prerequisite(
        "user and mount namespaces (unshare -rm: a read-only bind mount and a tmpfs)",
        ok,
    )
}

/// `plughost ARGS` in a mount namespace where `setup` (a shell line, with
/// `$STATE` the state folder) ran first.
fn in_namespace(sandbox: &Sandbox, setup: &str, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("unshare");
    c.args(["-rm", "sh", "-c"])
        .arg(format!(
            "set -e; {setup}; exec \"$BIN\" --plugins-dir \"$PLUGINS\" --state-dir \"$STATE\" \"$@\""
        ))
        .arg("sh")
        .args(args)
        .env("BIN", crate::util::plughost())
        .env("PLUGINS", sandbox.plugins())
        .env("STATE", sandbox.state());
    c
}

async fn doctor(sandbox: &Sandbox, setup: &str) -> String {
    let out = in_namespace(sandbox, setup, &["doctor"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Calls a plugin whose data folder exists (it runs) and one whose data
/// folder is missing (a clear `failed` naming the folder and the fix).
async fn calls_go_on_where_folders_exist(sandbox: &Sandbox, setup: &str, fix: &str) {
    let cmd = in_namespace(sandbox, setup, &["serve"]);
    let s = connect_command(cmd, None).await;
    for round in 0..3 {
        let r = s
            .client
            .call_tool(call("hello_greet", json!({"name": format!("ro{round}")})))
            .await
            .unwrap();
        assert_eq!(
            (text(&r), r.is_error),
            (format!("Hello, ro{round}!"), Some(false))
        );
    }
    let r = s
        .client
        .call_tool(call("kv_get", json!({"key": "k"})))
        .await
        .unwrap();
    let t = text(&r);
    assert_eq!(r.is_error, Some(true));
    assert!(
        t.starts_with("error failed:")
            && t.contains(&sandbox.state().join("data/kv-store").display().to_string())
            && t.contains(fix),
        "{t}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_state_folder_stops_only_what_needs_a_new_folder() {
    if !mount_namespaces() {
        return;
    }
    let sandbox = Sandbox::new().with_examples();
    std::fs::create_dir_all(sandbox.state().join("data/hello-world")).unwrap();
    let setup = "mount --bind -o ro \"$STATE\" \"$STATE\"";
    calls_go_on_where_folders_exist(&sandbox, setup, "writable").await;
    let report = doctor(&sandbox, setup).await;
    assert!(
        report.contains("NOT writable") && report.contains("read-only file system"),
        "{report}"
    );
    assert!(!sandbox.state().join("data/kv-store").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_state_folder_stops_only_what_needs_a_new_folder() {
    if !mount_namespaces() {
        return;
    }
    let sandbox = Sandbox::new().with_examples();
    // A 256 KiB file system of 64 inodes, its data folder made, then filled to the brim.
    let setup = "mount -t tmpfs -o size=256k,nr_inodes=64 none \"$STATE\"; mkdir -p \"$STATE/data/hello-world\"; \
                 dd if=/dev/zero of=\"$STATE/filler\" bs=4k 2>/dev/null || true; \
                 i=0; while mkdir \"$STATE/d$i\" 2>/dev/null; do i=$((i+1)); done";
    calls_go_on_where_folders_exist(&sandbox, setup, "full").await;
    let report = doctor(&sandbox, setup).await;
    assert!(
        report.contains("NOT writable") && report.contains("full file system"),
        "{report}"
    );
}

/// A valid approvals file granting `net-tool` its network permission.
fn grant_elsewhere(sandbox: &Sandbox) -> std::path::PathBuf {
    let elsewhere = sandbox.root.path().join("elsewhere");
    let out = util::run({
        let mut c = Command::new(crate::util::plughost());
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(&elsewhere)
            .args(["approve", "net-tool", "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
    elsewhere.join("approvals.json")
}

fn network_plugin(sandbox: &Sandbox) {
    let mut m = util::manifest("net-tool", "net_fetch");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin("net-tool", &m, &util::answer_script("fetched"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_approvals_file_is_refused_by_name_and_never_written_through() {
    let sandbox = Sandbox::new().with_examples();
    network_plugin(&sandbox);
    let target = grant_elsewhere(&sandbox);
    let before = std::fs::read(&target).unwrap();
    let link = sandbox.state().join("approvals.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    // A client that would approve when asked: approving must not write through the link.
    let s = connect(&sandbox, Some(true)).await;
    // Approvals that cannot be read offer nothing that needs approval.
    let tools = s.client.list_all_tools().await.unwrap();
    assert!(
        tools.iter().all(|t| t.name != "net_fetch"),
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    assert!(tools.iter().any(|t| t.name == "hello_greet"));
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    let t = text(&r);
    assert_eq!(r.is_error, Some(true));
    assert!(
        t.starts_with("error not_allowed:")
            && t.contains(&link.display().to_string())
            && t.contains("symbolic link"),
        "{t}"
    );
    // Plugins that need no approval go on.
    let r = s
        .client
        .call_tool(call("hello_greet", json!({"name": "Ada"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "Hello, Ada!");
    s.client.cancel().await.unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), before, "written through");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());

    // The command line says the same.
    let out = util::run({
        let mut c = sandbox.cmd();
        c.arg("list");
        c
    });
    let listed = util::stdout(&out);
    assert!(listed.contains("symbolic link"), "{listed}");
}

#[test]
fn a_huge_approvals_file_is_refused_before_it_is_read() {
    let sandbox = Sandbox::new().with_examples();
    network_plugin(&sandbox);
    let path = sandbox.state().join("approvals.json");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(50 * 1024 * 1024).unwrap();
    drop(f);
    for args in [&["list"][..], &["call", "net_fetch"], &["doctor"]] {
        let start = Instant::now();
        let out = util::run({
            let mut c = sandbox.cmd();
            c.args(args);
            c
        });
        let all = format!("{}{}", util::stdout(&out), util::stderr(&out));
        assert!(
            all.contains("4 MiB") && all.contains(&path.display().to_string()),
            "{args:?}: {all}"
        );
        assert!(start.elapsed() < Duration::from_secs(5), "{args:?}");
    }
    // Tier-1 plugins still run.
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["call", "hello_greet", r#"{"name":"Ada"}"#]);
        c
    });
    assert_eq!(util::stdout(&out).trim(), "Hello, Ada!");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 50 * 1024 * 1024);
}
