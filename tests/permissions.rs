//! Approval through the real binary: refusals that say how to approve, the
//! prompt on a real pseudo-terminal, persistence, re-approval, a corrupt file.

mod util;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use util::{Sandbox, run, stderr, stdout};

/// A plugin asking for `network` that appends a line to `marker` when it runs.
fn network_plugin(sandbox: &Sandbox) -> PathBuf {
    let marker = sandbox.root.path().join("ran");
    let mut m = util::manifest("net-tool", "net_fetch");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin(
        "net-tool",
        &m,
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho ran >> '{}'\necho '{{\"result\":\"fetched\"}}'\n",
            marker.display()
        ),
    );
    marker
}

fn approvals_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.state().join("approvals.json")
}

/// Runs `plughost ARGS` on a pseudo-terminal (util-linux `script`), typing
/// `answer` at the prompt. The call's JSON comes through a pipe, so the prompt
/// must read the terminal, not stdin.
fn on_terminal(sandbox: &Sandbox, args: &str, answer: &str) -> Output {
    let exe = env!("CARGO_BIN_EXE_plughost");
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
