//! Approvals with real files and real processes: the tiers, the states a
//! manifest change leads to, the approvals file across restarts, corruption and
//! concurrent writers, and the prompt on a real pseudo-terminal.
//!
//! Some tests run this test binary again as a child in a special role (see
//! [`child_process_role`]): a granter for the concurrency test, and a prompter
//! whose controlling terminal is a pseudo-terminal driven by python3's `pty`.

mod file;
mod prompt_tests;
mod states;

pub(super) use std::path::{Path, PathBuf};
pub(super) use std::process::{Command, Stdio};
pub(super) use std::time::{Duration, Instant};

pub(super) use crate::approval::store::APPROVALS_FILE;
pub(super) use crate::approval::{self, ApprovalError, ApprovalState, ApprovalStore, Tier, prompt};
pub(super) use crate::plugins::manifest::{EnvVarName, Manifest, Permission};
pub(super) use serde_json::{Value, json};

// ---------------------------------------------------------------- helpers

/// The env var that puts this binary in a child role, and the role's inputs.
pub(super) const ROLE: &str = "PLUGHOST_APPROVAL_TEST_ROLE";
pub(super) const ROLE_STATE: &str = "PLUGHOST_APPROVAL_TEST_STATE";
pub(super) const ROLE_MANIFEST: &str = "PLUGHOST_APPROVAL_TEST_MANIFEST";
pub(super) const ROLE_GO: &str = "PLUGHOST_APPROVAL_TEST_GO";
pub(super) const ROLE_RESULT: &str = "PLUGHOST_APPROVAL_TEST_RESULT";

pub(super) fn manifest_json(name: &str, permissions: &[&str], env: &[&str]) -> Value {
    json!({
        "name": name,
        "version": "1.0.0",
        "description": "Keeps notes between calls.",
        "author": "Ada Example",
        "entrypoint": "main.sh",
        "permissions": permissions,
        "env": env,
        "tools": [
            {
                "name": "note_add",
                "description": "Adds a note.\nSecond line that is not shown.",
                "input_schema": {"type": "object"}
            },
            {
                "name": "note_list",
                "description": "Lists every note.",
                "input_schema": {"type": "object"}
            }
        ]
    })
}

pub(super) fn manifest(name: &str, permissions: &[&str], env: &[&str]) -> Manifest {
    serde_json::from_value(manifest_json(name, permissions, env)).unwrap()
}

pub(super) fn state_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("plughost-approval-")
        .tempdir()
        .unwrap()
}

pub(super) fn env_name(s: &str) -> EnvVarName {
    EnvVarName(s.to_owned())
}

/// This test binary run again in `role`, filtered to the role dispatcher.
pub(super) fn child(role: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(child_args()).env(ROLE, role);
    c
}

pub(super) fn child_args() -> [&'static str; 5] {
    [
        "--exact",
        "approval::tests::child_process_role",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
}

// ---------------------------------------------------------------- child roles

/// Does nothing in a normal run. In a child started by another test (with
/// `ROLE` set) it plays that role:
/// - `grant`: waits for the `GO` file, then grants the manifest in `STATE`;
/// - `prompt`: asks on the terminal, grants on yes, writes `yes`/`no` to `RESULT`;
/// - `no-terminal`: checks there is no terminal to ask on.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let state = std::env::var(ROLE_STATE).unwrap_or_default();
    let manifest =
        || -> Manifest { serde_json::from_str(&std::env::var(ROLE_MANIFEST).unwrap()).unwrap() };
    match role.as_str() {
        "grant" => {
            let go = PathBuf::from(std::env::var(ROLE_GO).unwrap());
            let deadline = Instant::now() + Duration::from_secs(5);
            while !go.exists() {
                assert!(Instant::now() < deadline, "no go signal");
                std::thread::sleep(Duration::from_millis(1));
            }
            ApprovalStore::new(&state).grant(&manifest()).unwrap();
        }
        "prompt" => {
            let m = manifest();
            let store = ApprovalStore::new(&state);
            let current = store.state(&m).unwrap();
            assert!(
                prompt::is_interactive(),
                "the pty is the controlling terminal"
            );
            let yes = prompt::ask(&m, &current).unwrap();
            if yes {
                store.grant(&m).unwrap();
            }
            let result = std::env::var(ROLE_RESULT).unwrap();
            std::fs::write(result, if yes { "yes" } else { "no" }).unwrap();
        }
        "no-terminal" => {
            assert!(!prompt::is_interactive());
            let m = manifest();
            assert!(prompt::ask(&m, &ApprovalState::NeedsApproval).is_err());
        }
        other => panic!("unknown role {other}"),
    }
}
