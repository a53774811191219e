//! One approval state for many hosts: `--approvals FILE`. `approve` and
//! `revoke` write the file (not the state folder's); `serve` only reads it,
//! follows its changes within seconds (a revoke, a ConfigMap-style link
//! swapped to a new version) and fails closed on a missing or broken file.
#![cfg(feature = "mcp-server")]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_client;
use crate::util::{self, Sandbox, stderr, stdout};

/// A plugin that needs approval (it asks for the network), and one whose
/// tool answers `ok`.
fn fleet_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    let mut manifest = util::manifest("greeter", "greet");
    manifest["permissions"] = json!(["network"]);
    sandbox.write_plugin("greeter", &manifest, &util::answer_script("hello"));
    sandbox
}

fn with_approvals(sandbox: &Sandbox, file: &Path, args: &[&str]) -> std::process::Output {
    let mut c = sandbox.cmd();
    c.arg("--approvals").arg(file).args(args);
    util::run(c)
}

/// `plughost serve` reading `file`, with an MCP client that approves what
/// it is asked to (`approve`), or cannot be asked (`None`).
async fn serve(sandbox: &Sandbox, file: &Path, approve: Option<bool>) -> mcp_client::Session {
    let mut c = tokio::process::Command::new(util::plughost());
    c.arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .arg("--approvals")
        .arg(file)
        .arg("serve");
    mcp_client::connect_command(c, approve).await
}

async fn greet(s: &mcp_client::Session) -> (bool, String) {
    let r = s
        .client
        .call_tool(mcp_client::call("greet", json!({})))
        .await
        .unwrap();
    (r.is_error != Some(true), mcp_client::text(&r))
}

/// Calls `greet` until `done` holds of its answer, for at most 3 s.
async fn until(s: &mcp_client::Session, done: impl Fn(bool, &str) -> bool) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (ok, text) = greet(s).await;
        if done(ok, &text) || Instant::now() > deadline {
            return (ok, text);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn replicas_share_an_approvals_file_they_only_read() {
    let sandbox = fleet_sandbox();
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let file = fleet.join("approvals.json");

    // The operator approves into the file; the state folder gets none.
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"greeter\"")
    );
    assert!(!sandbox.state().join("approvals.json").exists());
    let out = with_approvals(&sandbox, &file, &["call", "greet", "{}"]);
    assert_eq!(stdout(&out).trim(), "hello", "{}", stderr(&out));

    // A replica answers from it, and never writes it: a client's approval
    // of another plugin is refused with the reason.
    let before = std::fs::read(&file).unwrap();
    let s = serve(&sandbox, &file, Some(true)).await;
    assert_eq!(greet(&s).await, (true, "hello".to_owned()));
    let mut other = util::manifest("other", "other_tool");
    other["permissions"] = json!(["network"]);
    sandbox.write_plugin("other", &other, &util::answer_script("no"));
    let deadline = Instant::now() + Duration::from_secs(5);
    let refused = loop {
        let r = s
            .client
            .call_tool(mcp_client::call("other_tool", json!({})))
            .await
            .unwrap();
        let text = mcp_client::text(&r);
        if text.contains("only read here") || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        refused.contains("are only read here, never written"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A revoke where the file is kept reaches the replica within seconds.
    let out = with_approvals(&sandbox, &file, &["revoke", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let started = Instant::now();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok, "still answered after a revoke: {text}");
    assert!(started.elapsed() < Duration::from_secs(3));

    // A broken file, then a missing one, withhold everything, saying why.
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(until(&s, |ok, _| ok).await, (true, "hello".to_owned()));
    std::fs::write(&file, "{").unwrap();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok && text.contains("is corrupt"), "{text}");
    std::fs::remove_file(&file).unwrap();
    let (ok, text) = until(&s, |_, t| t.contains("does not exist")).await;
    assert!(!ok && text.contains("does not exist"), "{text}");
    s.client.cancel().await.unwrap();
}

/// A Kubernetes ConfigMap is a link (`approvals.json` -> `..data/approvals.json`,
/// `..data` -> a folder per version) swapped to a new version: followed.
#[tokio::test]
async fn a_configmap_style_link_is_followed_to_its_new_version() {
    let sandbox = fleet_sandbox();
    let mount = sandbox.root.path().join("mount");
    let v1 = mount.join("..2026_11_27_v1");
    let v2 = mount.join("..2026_11_27_v2");
    std::fs::create_dir_all(&v1).unwrap();
    std::fs::create_dir_all(&v2).unwrap();
    // v1 approves the plugin, v2 approves nothing.
    let scratch = sandbox.root.path().join("scratch/approvals.json");
    std::fs::create_dir_all(scratch.parent().unwrap()).unwrap();
    let out = with_approvals(&sandbox, &scratch, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::copy(&scratch, v1.join("approvals.json")).unwrap();
    std::fs::write(
        v2.join("approvals.json"),
        "{\"version\": 1, \"plugins\": {}}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("..2026_11_27_v1", mount.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/approvals.json", mount.join("approvals.json")).unwrap();

    let file = mount.join("approvals.json");
    let s = serve(&sandbox, &file, None).await;
    assert_eq!(greet(&s).await, (true, "hello".to_owned()));
    // The swap as the kubelet makes it: a new link renamed over `..data`.
    std::os::unix::fs::symlink("..2026_11_27_v2", mount.join("..data_tmp")).unwrap();
    std::fs::rename(mount.join("..data_tmp"), mount.join("..data")).unwrap();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok && text.contains("needs approval"), "{text}");
    s.client.cancel().await.unwrap();
}
