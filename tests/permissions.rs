//! Approval through the real binary: refusals that say how to approve, the
//! prompt on a real pseudo-terminal, persistence, re-approval, a corrupt file.

use crate::util;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use util::{Sandbox, run, stderr, stdout};

/// A plugin asking for `network` that appends a line to a marker in its data
/// folder (the one place the sandbox lets it write) each time it runs.
fn network_plugin(sandbox: &Sandbox) -> PathBuf {
    let mut m = util::manifest("net-tool", "net_fetch");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin(
        "net-tool",
        &m,
        "#!/bin/sh\ncat >/dev/null\necho ran >> \"$PLUGHOST_DATA_DIR/ran\"\necho '{\"result\":\"fetched\"}'\n",
    );
    sandbox.state().join("data/net-tool/ran")
}

fn approvals_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.state().join("approvals.json")
}

/// Runs `plughost ARGS` on a pseudo-terminal (util-linux `script`), typing
/// `answer` at the prompt. The call's JSON comes through a pipe, so the prompt
/// must read the terminal, not stdin.
fn on_terminal(sandbox: &Sandbox, args: &str, answer: &str) -> Output {
    let exe = crate::util::plughost().display();
    let line = format!(
        "echo '{{}}' | {exe} --plugins-dir '{}' --state-dir '{}' {args}",
        sandbox.plugins().display(),
        sandbox.state().display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ran(marker: &Path) -> usize {
    std::fs::read_to_string(marker)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn an_unapproved_plugin_is_refused_with_the_command_that_approves_it() {
    let sandbox = Sandbox::new();
    let marker = network_plugin(&sandbox);
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "net_fetch"]).stdin(Stdio::null());
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("error: not_allowed: plugin \"net-tool\" needs approval for network"),
        "{err}"
    );
    assert!(err.contains("approve net-tool"), "{err}");
    assert_eq!(ran(&marker), 0, "nothing ran");
    assert!(!approvals_file(&sandbox).exists(), "nothing was written");
}

#[test]
fn the_prompt_on_a_terminal_approves_on_yes_and_refuses_on_no() {
    let sandbox = Sandbox::new();
    let marker = network_plugin(&sandbox);

    let no = on_terminal(&sandbox, "call net_fetch -", "n\n");
    let screen = stdout(&no);
    assert!(
        screen.contains("net-tool") && screen.contains("network"),
        "the prompt shows the plugin: {screen}"
    );
    assert!(screen.contains("Approve? [y/N]"), "{screen}");
    assert!(screen.contains("not_allowed"), "{screen}");
    assert_eq!(ran(&marker), 0, "no: the plugin does not run");
    assert!(!approvals_file(&sandbox).exists(), "no: nothing is written");

    let yes = on_terminal(&sandbox, "call net_fetch -", "y\n");
    assert!(stdout(&yes).contains("fetched"), "{}", stdout(&yes));
    assert_eq!(ran(&marker), 1, "yes: the plugin runs");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(approvals_file(&sandbox)).unwrap()).unwrap();
    assert_eq!(
        saved["plugins"]["net-tool"]["permissions"],
        json!(["network"])
    );

    // Persisted: a later non-interactive call runs without asking.
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "net_fetch"]).stdin(Stdio::null());
    assert_eq!(run(cmd).status.code(), Some(0));
    assert_eq!(ran(&marker), 2);
}

#[test]
fn approval_persists_new_permissions_ask_again_and_revoke_withdraws() {
    let sandbox = Sandbox::new();
    let marker = network_plugin(&sandbox);
    let state = |sandbox: &Sandbox| -> String {
        let mut cmd = sandbox.cmd();
        cmd.args(["--json", "list"]);
        let v: Value = serde_json::from_slice(&run(cmd).stdout).unwrap();
        v["plugins"][0]["approval"].as_str().unwrap().to_owned()
    };
    assert_eq!(state(&sandbox), "needs approval");
    let mut cmd = sandbox.cmd();
    cmd.args(["approve", "net-tool", "--yes"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(state(&sandbox), "approved");

    let mut cmd = sandbox.cmd();
    cmd.args(["call", "net_fetch"]).stdin(Stdio::null());
    assert_eq!(run(cmd).status.code(), Some(0));

    // The manifest now also wants an environment variable: ask again before any call.
    let manifest_path = sandbox.plugins().join("net-tool/plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    m["env"] = json!(["NET_TOOL_TOKEN"]);
    std::fs::write(&manifest_path, serde_json::to_vec(&m).unwrap()).unwrap();
    assert!(
        state(&sandbox).starts_with("needs re-approval"),
        "{}",
        state(&sandbox)
    );
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "net_fetch"]).stdin(Stdio::null());
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("NET_TOOL_TOKEN"), "{}", stderr(&out));
    assert_eq!(ran(&marker), 1);

    let mut cmd = sandbox.cmd();
    cmd.args(["revoke", "net-tool"]);
    assert_eq!(run(cmd).status.code(), Some(0));
    assert_eq!(state(&sandbox), "needs approval");
}

#[test]
fn a_corrupt_approvals_file_approves_nothing_and_is_left_alone() {
    let sandbox = Sandbox::new();
    let marker = network_plugin(&sandbox);
    let mut cmd = sandbox.cmd();
    cmd.args(["approve", "net-tool", "--yes"]);
    assert_eq!(run(cmd).status.code(), Some(0));
    let file = approvals_file(&sandbox);
    let full = std::fs::read(&file).unwrap();
    let truncated = &full[..full.len() / 2];
    std::fs::write(&file, truncated).unwrap();

    let mut cmd = sandbox.cmd();
    cmd.args(["call", "net_fetch"]).stdin(Stdio::null());
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not_allowed") && stderr(&out).contains(&file.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(ran(&marker), 0);

    let mut cmd = sandbox.cmd();
    cmd.args(["approve", "net-tool", "--yes"]);
    let out = run(cmd);
    assert_eq!(
        out.status.code(),
        Some(2),
        "approving over a corrupt file fails"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        truncated,
        "the corrupt file is never overwritten"
    );

    // Tier-1 plugins still run: they never needed the file.
    let sandbox_ok = sandbox.with_fixtures(&["slow-ok"]);
    let mut cmd = sandbox_ok.cmd();
    cmd.args(["call", "slow_ok"]);
    assert_eq!(run(cmd).status.code(), Some(0));
}

/// 20 `plughost approve` processes at once, each for another plugin, leave a
/// valid approvals file holding all 20.
#[test]
fn twenty_concurrent_approve_processes_keep_every_approval() {
    let sandbox = Sandbox::new();
    for i in 0..20 {
        let name = format!("net-{i}");
        let mut m = util::manifest(&name, &format!("net_tool_{i}"));
        m["permissions"] = json!(["network"]);
        sandbox.write_plugin(&name, &m, &util::answer_script("ok"));
    }
    let children: Vec<_> = (0..20)
        .map(|i| {
            let mut cmd = sandbox.cmd();
            cmd.args(["approve", &format!("net-{i}"), "--yes"])
                .stdout(Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let saved: Value =
        serde_json::from_slice(&std::fs::read(approvals_file(&sandbox)).unwrap()).unwrap();
    let approved = saved["plugins"].as_object().unwrap();
    assert_eq!(approved.len(), 20, "{saved}");
}

mod sandboxed {
    //! The sandbox through the host: real plugins, real files, a real listener.

    use std::net::TcpListener;
    use std::time::Duration;

    use plughost::protocol::Invocation;
    use plughost::{ErrorKind, PluginHost};
    use serde_json::json;

    use super::util::{self, Sandbox};

    fn landlock() -> bool {
        let s = plughost::sandbox::SandboxSupport::here();
        util::prerequisite(
            &format!("a kernel with Landlock ABI 4+ ({:?})", s.notes),
            s.filesystem && s.network_tcp,
        )
    }

    /// A bash plugin asking for `permissions`, running `script` after reading its request.
    async fn host_with(
        sandbox: &Sandbox,
        permissions: serde_json::Value,
        script: &str,
    ) -> PluginHost {
        let mut m = util::manifest("probe", "probe_run");
        m["permissions"] = permissions;
        sandbox.write_plugin(
            "probe",
            &m,
            &format!("#!/usr/bin/env bash\ncat >/dev/null\n{script}\n"),
        );
        let host = PluginHost::builder()
            .plugins_dir(sandbox.plugins())
            .state_dir(sandbox.state())
            .build()
            .unwrap();
        host.approve("probe").await.unwrap();
        host
    }

    #[tokio::test]
    async fn writes_stay_in_the_data_folder_without_filesystem_write() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        // Beside the plugins and state folders, not in the folder that holds
        // them: a folder that holds a protected path takes no new files.
        let outside = sandbox.root.path().join("elsewhere/outside.txt");
        std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
        let script = format!(
            "echo data > \"$PLUGHOST_DATA_DIR/inside.txt\" || exit 5\n\
             if echo x > '{}' 2>/dev/null; then echo '{{\"result\":\"escaped\"}}'; else echo '{{\"result\":\"refused\"}}'; fi",
            outside.display()
        );
        let host = host_with(&sandbox, json!([]), &script).await;
        let o = host
            .call("probe_run", json!({}), Invocation::default())
            .await
            .unwrap();
        assert_eq!(o.result, "refused");
        assert!(
            !outside.exists(),
            "the file outside the data folder was not created"
        );
        assert!(
            sandbox.state().join("data/probe/inside.txt").exists(),
            "the data folder is writable"
        );

        let host = host_with(&sandbox, json!(["filesystem:write"]), &script).await;
        let o = host
            .call("probe_run", json!({}), Invocation::default())
            .await
            .unwrap();
        assert_eq!(
            o.result, "escaped",
            "granted filesystem:write writes anywhere"
        );
    }

    #[tokio::test]
    async fn reads_stay_in_the_plugins_folders_without_filesystem_read() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        let secret = sandbox.root.path().join("secret.txt");
        std::fs::write(&secret, "s3cret").unwrap();
        let script = format!(
            "own=$(cat plugin.json | head -c 1)\n\
             if cat '{}' >/dev/null 2>&1; then r=read; else r=refused; fi\n\
             echo \"{{\\\"result\\\":\\\"$own $r\\\"}}\"",
            secret.display()
        );
        let host = host_with(&sandbox, json!([]), &script).await;
        assert_eq!(
            host.call("probe_run", json!({}), Invocation::default())
                .await
                .unwrap()
                .result,
            "{ refused"
        );
        let host = host_with(&sandbox, json!(["filesystem:read"]), &script).await;
        assert_eq!(
            host.call("probe_run", json!({}), Invocation::default())
                .await
                .unwrap()
                .result,
            "{ read"
        );
    }

    #[tokio::test]
    async fn a_scoped_grant_opens_exactly_its_folder() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        let scope = sandbox.root.path().join("scope");
        let beside = sandbox.root.path().join("beside");
        std::fs::create_dir_all(scope.join("sub")).unwrap();
        std::fs::create_dir_all(&beside).unwrap();
        std::fs::write(scope.join("sub/in.txt"), "in").unwrap();
        std::fs::write(beside.join("secret.txt"), "s3cret").unwrap();
        let script = format!(
            "r1=$(cat '{s}/sub/in.txt' 2>/dev/null || echo refused)\n\
             r2=$(cat '{b}/secret.txt' 2>/dev/null || echo refused)\n\
             if echo w > '{s}/new.txt' 2>/dev/null; then w1=wrote; else w1=refused; fi\n\
             if echo w > '{b}/new.txt' 2>/dev/null; then w2=wrote; else w2=refused; fi\n\
             echo \"{{\\\"result\\\":\\\"$r1 $r2 $w1 $w2\\\"}}\"",
            s = scope.display(),
            b = beside.display()
        );
        let read = format!("filesystem:read:{}", scope.display());
        let host = host_with(&sandbox, json!([read]), &script).await;
        let o = host
            .call("probe_run", json!({}), Invocation::default())
            .await;
        assert_eq!(o.unwrap().result, "in refused refused refused");

        let write = format!("filesystem:write:{}", scope.display());
        let host = host_with(&sandbox, json!([write]), &script).await;
        let o = host
            .call("probe_run", json!({}), Invocation::default())
            .await;
        assert_eq!(o.unwrap().result, "in refused wrote refused");
        assert!(scope.join("new.txt").exists() && !beside.join("new.txt").exists());
    }

    #[tokio::test]
    async fn the_prepared_sandbox_follows_a_changed_manifest_and_its_approval() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        // Beside the plugins and state folders, not in the folder that holds
        // them: a folder that holds a protected path takes no new files.
        let outside = sandbox.root.path().join("elsewhere/outside.txt");
        std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
        let script = format!(
            "if echo x > '{}' 2>/dev/null; then r=escaped; else r=refused; fi\n\
             echo \"{{\\\"result\\\":\\\"$r\\\"}}\"",
            outside.display()
        );
        let host = host_with(&sandbox, json!([]), &script).await;
        let call = || host.call("probe_run", json!({}), Invocation::default());
        assert_eq!(call().await.unwrap().result, "refused");

        // The same host: the manifest now asks for more, which needs approval.
        let mut m = util::manifest("probe", "probe_run");
        m["permissions"] = json!(["filesystem:write"]);
        sandbox.write_plugin(
            "probe",
            &m,
            &format!("#!/usr/bin/env bash\ncat >/dev/null\n{script}\n"),
        );
        host.reload();
        assert_eq!(call().await.unwrap_err().kind(), ErrorKind::NotAllowed);
        host.approve("probe").await.unwrap();
        assert_eq!(call().await.unwrap().result, "escaped");
        assert!(outside.exists());

        // And back: asking for less confines it again.
        std::fs::remove_file(&outside).unwrap();
        m["permissions"] = json!([]);
        sandbox.write_plugin(
            "probe",
            &m,
            &format!("#!/usr/bin/env bash\ncat >/dev/null\n{script}\n"),
        );
        host.reload();
        assert_eq!(call().await.unwrap().result, "refused");
        assert!(!outside.exists());
    }

    #[tokio::test]
    async fn data_and_scoped_folders_deleted_and_made_again_keep_working() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        let scope = sandbox.root.path().join("scope");
        std::fs::create_dir_all(&scope).unwrap();
        let script = format!(
            "echo d > \"$PLUGHOST_DATA_DIR/d.txt\" && d=data || d=refused\n\
             echo s > '{}/s.txt' && s=scope || s=refused\n\
             echo \"{{\\\"result\\\":\\\"$d $s\\\"}}\"",
            scope.display()
        );
        let write = format!("filesystem:write:{}", scope.display());
        let host = host_with(&sandbox, json!([write]), &script).await;
        let call = || host.call("probe_run", json!({}), Invocation::default());
        assert_eq!(call().await.unwrap().result, "data scope");

        let data = sandbox.state().join("data/probe");
        std::fs::remove_dir_all(&data).unwrap();
        std::fs::remove_dir_all(&scope).unwrap();
        std::fs::create_dir(&scope).unwrap();
        assert_eq!(call().await.unwrap().result, "data scope");
        assert!(data.join("d.txt").exists() && scope.join("s.txt").exists());

        // Gone for good: the call says which folder, and the host goes on.
        std::fs::remove_dir_all(&scope).unwrap();
        let err = call().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotAllowed);
        assert!(err.to_string().contains("scope"), "{err}");
        std::fs::create_dir(&scope).unwrap();
        assert_eq!(call().await.unwrap().result, "data scope");
    }

    #[tokio::test]
    async fn a_scoped_folder_that_is_missing_fails_the_call_by_name() {
        let sandbox = Sandbox::new();
        let missing = sandbox.root.path().join("not-there");
        let read = format!("filesystem:read:{}", missing.display());
        let host = host_with(&sandbox, json!([read]), "echo '{\"result\":\"ran\"}'").await;
        let s = plughost::sandbox::SandboxSupport::here();
        let result = host
            .call("probe_run", json!({}), Invocation::default())
            .await;
        if s.filesystem {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotAllowed);
            assert!(err.to_string().contains("not-there"), "{err}");
        } else {
            assert_eq!(result.unwrap().result, "ran");
        }
    }

    #[tokio::test]
    async fn no_connection_without_network() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let script = format!(
            "if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then r=connected; else r=refused; fi\n\
             echo \"{{\\\"result\\\":\\\"$r\\\"}}\""
        );
        let host = host_with(&sandbox, json!([]), &script).await;
        assert_eq!(
            host.call("probe_run", json!({}), Invocation::default())
                .await
                .unwrap()
                .result,
            "refused"
        );
        std::thread::sleep(Duration::from_millis(50));
        assert!(listener.accept().is_err(), "the listener saw no connection");

        let host = host_with(&sandbox, json!(["network"]), &script).await;
        assert_eq!(
            host.call("probe_run", json!({}), Invocation::default())
                .await
                .unwrap()
                .result,
            "connected"
        );
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            listener.accept().is_ok(),
            "with network the plugin connects"
        );
    }

    #[tokio::test]
    async fn no_sandbox_turns_it_off_and_required_refuses_nothing_here() {
        if !landlock() {
            return;
        }
        let sandbox = Sandbox::new();
        // Beside the plugins and state folders, not in the folder that holds
        // them: a folder that holds a protected path takes no new files.
        let outside = sandbox.root.path().join("elsewhere/outside.txt");
        std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
        let mut m = util::manifest("probe", "probe_run");
        m["permissions"] = json!([]);
        sandbox.write_plugin("probe", &m, &format!("#!/bin/sh\ncat >/dev/null\necho x > '{}' || exit 4\necho '{{\"result\":\"ok\"}}'\n", outside.display()));
        let off = PluginHost::builder()
            .plugins_dir(sandbox.plugins())
            .state_dir(sandbox.state())
            .sandbox(plughost::SandboxMode::Off)
            .build()
            .unwrap();
        off.call("probe_run", json!({}), Invocation::default())
            .await
            .unwrap();
        assert!(outside.exists(), "--no-sandbox: permissions are advisory");
        std::fs::remove_file(&outside).unwrap();
        let required = PluginHost::builder()
            .plugins_dir(sandbox.plugins())
            .state_dir(sandbox.state())
            .sandbox(plughost::SandboxMode::Required)
            .build()
            .unwrap();
        let e = required
            .call("probe_run", json!({}), Invocation::default())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Failed,
            "the write fails inside the sandbox: {e}"
        );
        assert!(!outside.exists());
    }
}
