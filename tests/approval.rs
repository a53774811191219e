//! Approvals with real files and real processes: the tiers, the states a
//! manifest change leads to, the approvals file across restarts, corruption and
//! concurrent writers, and the prompt on a real pseudo-terminal.
//!
//! Some tests run this test binary again as a child in a special role (see
//! [`child_process_role`]): a granter for the concurrency test, and a prompter
//! whose controlling terminal is a pseudo-terminal driven by python3's `pty`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plughost::approval::{
    self, APPROVALS_FILE, ApprovalError, ApprovalState, ApprovalStore, Tier, prompt,
};
use plughost::plugins::manifest::{EnvVarName, Manifest, Permission};
use serde_json::{Value, json};

// ---------------------------------------------------------------- helpers

/// The env var that puts this binary in a child role, and the role's inputs.
const ROLE: &str = "PLUGHOST_APPROVAL_TEST_ROLE";
const ROLE_STATE: &str = "PLUGHOST_APPROVAL_TEST_STATE";
const ROLE_MANIFEST: &str = "PLUGHOST_APPROVAL_TEST_MANIFEST";
const ROLE_GO: &str = "PLUGHOST_APPROVAL_TEST_GO";
const ROLE_RESULT: &str = "PLUGHOST_APPROVAL_TEST_RESULT";

fn manifest_json(name: &str, permissions: &[&str], env: &[&str]) -> Value {
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

fn manifest(name: &str, permissions: &[&str], env: &[&str]) -> Manifest {
    serde_json::from_value(manifest_json(name, permissions, env)).unwrap()
}

fn state_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("plughost-approval-")
        .tempdir()
        .unwrap()
}

fn env_name(s: &str) -> EnvVarName {
    EnvVarName(s.to_owned())
}

/// This test binary run again in `role`, filtered to the role dispatcher.
fn child(role: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(child_args()).env(ROLE, role);
    c
}

fn child_args() -> [&'static str; 5] {
    [
        "--exact",
        "child_process_role",
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

// ---------------------------------------------------------------- tiers and states

#[test]
fn tiers_for_each_permission_and_env() {
    use Tier::*;
    let cases: &[(&[&str], &[&str], Tier)] = &[
        (&[], &[], Automatic),
        (&["filesystem:read"], &[], Automatic),
        (&["filesystem:write"], &[], NeedsApproval),
        (&["network"], &[], NeedsApproval),
        (&["shell:exec"], &[], NeedsApproval),
        (&["clipboard"], &[], NeedsApproval),
        (&["notifications"], &[], NeedsApproval),
        (&["filesystem:read", "filesystem:write"], &[], NeedsApproval),
        (&["filesystem:read", "network"], &[], NeedsApproval),
        (&["shell:exec", "network"], &[], NeedsApproval),
        (&[], &["API_TOKEN"], NeedsApproval),
        (&["filesystem:read"], &["API_TOKEN"], NeedsApproval),
    ];
    for (permissions, env, expected) in cases {
        let m = manifest("p", permissions, env);
        assert_eq!(approval::tier(&m), *expected, "{permissions:?} env {env:?}");
        let state = approval::Approvals::default().state(&m);
        match expected {
            Automatic => assert_eq!(state, ApprovalState::Automatic),
            NeedsApproval => assert_eq!(state, ApprovalState::NeedsApproval),
        }
        assert_eq!(state.allows_call(), *expected == Automatic);
    }
    // Only the pair earns the extra warning.
    for (permissions, warned) in [
        (&["shell:exec", "network"][..], true),
        (&["network", "filesystem:read", "shell:exec"][..], true),
        (&["shell:exec"][..], false),
        (&["network"][..], false),
    ] {
        let m = manifest("p", permissions, &[]);
        assert_eq!(approval::shell_and_network(&m), warned, "{permissions:?}");
        let text = prompt::text(&m, &ApprovalState::NeedsApproval);
        assert_eq!(
            text.contains(approval::SHELL_NETWORK_WARNING),
            warned,
            "{text}"
        );
    }
}

#[test]
fn adding_a_permission_or_variable_asks_again_and_fewer_stay_approved() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let v1 = manifest("notes", &["network", "filesystem:write"], &["API_TOKEN"]);
    assert_eq!(store.state(&v1).unwrap(), ApprovalState::NeedsApproval);
    let grant = store.grant(&v1).unwrap();
    assert_eq!(grant.plugin_version, "1.0.0");
    assert_eq!(store.state(&v1).unwrap(), ApprovalState::Approved);

    // A new permission, then a new variable: exactly the new ones are named.
    let more = manifest(
        "notes",
        &["network", "filesystem:write", "shell:exec"],
        &["API_TOKEN"],
    );
    let state = store.state(&more).unwrap();
    assert_eq!(
        state,
        ApprovalState::NeedsReapproval {
            new_permissions: vec![Permission::ShellExec],
            new_env: vec![],
        }
    );
    assert!(!state.allows_call());
    assert_eq!(
        approval::not_allowed_message(&more, &state).unwrap(),
        "plugin \"notes\" needs re-approval for new permissions shell:exec; run: plughost approve notes"
    );
    let new_var = manifest(
        "notes",
        &["network", "filesystem:write"],
        &["API_TOKEN", "OTHER"],
    );
    assert_eq!(
        store.state(&new_var).unwrap(),
        ApprovalState::NeedsReapproval {
            new_permissions: vec![],
            new_env: vec![env_name("OTHER")],
        }
    );
    // filesystem:read alone needs no approval, but it is new to an approved plugin.
    let reads_too = manifest(
        "notes",
        &["network", "filesystem:write", "filesystem:read"],
        &["API_TOKEN"],
    );
    assert_eq!(
        store.state(&reads_too).unwrap(),
        ApprovalState::NeedsReapproval {
            new_permissions: vec![Permission::FilesystemRead],
            new_env: vec![],
        }
    );

    // Fewer permissions and variables, or a new version: still approved.
    let mut fewer = manifest("notes", &["network"], &[]);
    fewer.version = "2.0.0".to_owned();
    assert_eq!(store.state(&fewer).unwrap(), ApprovalState::Approved);

    // Approving the bigger manifest grants exactly it; revoking forgets it.
    store.grant(&more).unwrap();
    assert_eq!(store.state(&more).unwrap(), ApprovalState::Approved);
    assert!(store.revoke("notes").unwrap());
    assert!(!store.revoke("notes").unwrap());
    assert_eq!(store.state(&more).unwrap(), ApprovalState::NeedsApproval);

    // A tier-1 plugin is automatic whatever is stored.
    let plain = manifest("notes", &["filesystem:read"], &[]);
    assert_eq!(store.state(&plain).unwrap(), ApprovalState::Automatic);
}

#[test]
fn not_allowed_messages_and_labels() {
    let m = manifest("kv-store", &["shell:exec", "network"], &[]);
    assert_eq!(
        approval::not_allowed_message(&m, &ApprovalState::NeedsApproval).unwrap(),
        "plugin \"kv-store\" needs approval for network, shell:exec; run: plughost approve kv-store"
    );
    let with_env = manifest("kv-store", &[], &["TOKEN_B", "TOKEN_A"]);
    assert_eq!(
        approval::not_allowed_message(&with_env, &ApprovalState::NeedsApproval).unwrap(),
        "plugin \"kv-store\" needs approval for env TOKEN_A, env TOKEN_B; run: plughost approve kv-store"
    );
    let re = ApprovalState::NeedsReapproval {
        new_permissions: vec![Permission::Network],
        new_env: vec![env_name("TOKEN_A")],
    };
    assert_eq!(
        approval::not_allowed_message(&m, &re).unwrap(),
        "plugin \"kv-store\" needs re-approval for new permissions network, env TOKEN_A; run: plughost approve kv-store"
    );
    assert_eq!(
        re.label(),
        "needs re-approval: new permissions network, env TOKEN_A"
    );
    assert_eq!(ApprovalState::NeedsApproval.label(), "needs approval");
    assert!(approval::not_allowed_message(&m, &ApprovalState::Approved).is_none());
    assert!(approval::not_allowed_message(&m, &ApprovalState::Automatic).is_none());

    // Non-default folders are named, quoted for a shell when needed.
    assert_eq!(
        approval::approve_command_in(
            "kv-store",
            Some(Path::new("/tmp/my plugins")),
            Some(Path::new("/tmp/state"))
        ),
        "plughost --plugins-dir '/tmp/my plugins' --state-dir /tmp/state approve kv-store"
    );
}

// ---------------------------------------------------------------- the file

#[test]
fn approval_survives_a_restart_in_the_documented_format() {
    let dir = state_dir();
    let m = manifest("kv-store", &["shell:exec", "network"], &["API_TOKEN"]);
    {
        let store = ApprovalStore::new(dir.path());
        assert!(
            store.load().unwrap().is_empty(),
            "missing file: no approvals"
        );
        store.grant(&m).unwrap();
    }
    let store = ApprovalStore::new(dir.path());
    let approvals = store.load().unwrap();
    assert_eq!(approvals.state(&m), ApprovalState::Approved);
    assert_eq!(approvals.len(), 1);

    let text = std::fs::read_to_string(dir.path().join(APPROVALS_FILE)).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["version"], 1);
    let entry = &file["plugins"]["kv-store"];
    assert_eq!(entry["permissions"], json!(["network", "shell:exec"]));
    assert_eq!(entry["env"], json!(["API_TOKEN"]));
    assert_eq!(entry["plugin_version"], "1.0.0");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = entry["granted_at"].as_u64().unwrap();
    assert!(at <= now && now - at < 60, "granted_at {at}, now {now}");

    // Private to the user, and no temp file left behind.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join(APPROVALS_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["approvals.json", "approvals.lock"]);
}

#[test]
fn a_broken_file_is_an_error_that_approves_nothing_and_is_never_overwritten() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let m = manifest("kv-store", &["network"], &[]);
    store.grant(&m).unwrap();
    store
        .grant(&manifest("other", &["clipboard"], &[]))
        .unwrap();
    let path = dir.path().join(APPROVALS_FILE);
    let whole = std::fs::read(&path).unwrap();

    let truncated = whole[..whole.len() / 2].to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", truncated),
        ("empty", Vec::new()),
        ("not json", b"\x00\x01garbage".to_vec()),
        ("no version", br#"{"plugins":{}}"#.to_vec()),
        (
            "future version",
            br#"{"version":2,"plugins":{"kv-store":{}}}"#.to_vec(),
        ),
        (
            "bad permission",
            br#"{"version":1,"plugins":{"kv-store":{"permissions":["everything"],"env":[],"plugin_version":"1.0.0","granted_at":1}}}"#.to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let err = store.load().unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string()),
            "{what}: {message}"
        );
        assert!(message.contains("delete"), "{what}: {message}");
        if what == "future version" {
            assert!(
                matches!(err, ApprovalError::UnsupportedVersion { .. }),
                "{err:?}"
            );
        } else {
            assert!(
                matches!(err, ApprovalError::Corrupt { .. }),
                "{what}: {err:?}"
            );
        }

        // Never approved from it, and a new store (a restart) says the same.
        assert!(ApprovalStore::new(dir.path()).state(&m).is_err(), "{what}");
        // A plugin that needs no approval still runs.
        let plain = manifest("plain", &[], &[]);
        assert_eq!(store.state(&plain).unwrap(), ApprovalState::Automatic);

        // grant and revoke refuse, and leave the file byte for byte.
        let err = store.grant(&m).unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        let err = store.revoke("kv-store").unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}");
    }

    // An unreadable file (a folder in its place here, since tests may run as root).
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let err = store.load().unwrap_err();
    assert!(matches!(err, ApprovalError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()));
    assert!(store.grant(&m).is_err());
    assert!(path.is_dir());
}

#[test]
fn twenty_concurrent_processes_keep_all_twenty_grants() {
    const N: usize = 20;
    let dir = state_dir();
    let state = dir.path().join("state");
    let go = dir.path().join("go");
    let mut children = Vec::new();
    for i in 0..N {
        let m = manifest_json(&format!("plugin-{i:02}"), &["network"], &[]);
        let c = child("grant")
            .env(ROLE_STATE, &state)
            .env(ROLE_MANIFEST, m.to_string())
            .env(ROLE_GO, &go)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push(c);
    }
    // Start them together, so they contend for the lock.
    std::fs::write(&go, "").unwrap();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a granter failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let approvals = ApprovalStore::new(&state).load().unwrap();
    let names: Vec<&str> = approvals.iter().map(|(n, _)| n).collect();
    let expected: Vec<String> = (0..N).map(|i| format!("plugin-{i:02}")).collect();
    assert_eq!(names, expected);
}

// ---------------------------------------------------------------- the prompt

#[test]
fn prompt_text_shows_the_plugin_its_tools_permissions_and_variables() {
    let m = manifest(
        "kv-store",
        &["shell:exec", "network", "filesystem:read"],
        &["API_TOKEN"],
    );
    let text = prompt::text(&m, &ApprovalState::NeedsApproval);
    for expected in [
        "Plugin \"kv-store\" asks for your approval.",
        "kv-store 1.0.0",
        "Author:       Ada Example",
        "Keeps notes between calls.",
        "  note_add: Adds a note.\n",
        "  note_list: Lists every note.\n",
        &format!("  network: {}\n", Permission::Network.grants()),
        &format!("  shell:exec: {}\n", Permission::ShellExec.grants()),
        &format!(
            "  filesystem:read: {}\n",
            Permission::FilesystemRead.grants()
        ),
        "  API_TOKEN\n",
        approval::SHELL_NETWORK_WARNING,
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("Second line"), "{text}");
    assert!(!text.contains("(new)"), "{text}");

    let re = ApprovalState::NeedsReapproval {
        new_permissions: vec![Permission::ShellExec],
        new_env: vec![env_name("API_TOKEN")],
    };
    let text = prompt::text(&m, &re);
    assert!(
        text.contains("now asks for more than you approved: shell:exec, env API_TOKEN."),
        "{text}"
    );
    assert!(text.contains(&format!(
        "  shell:exec: {}  (new)\n",
        Permission::ShellExec.grants()
    )));
    assert!(text.contains(&format!("  network: {}\n", Permission::Network.grants())));
    assert!(text.contains("  API_TOKEN  (new)\n"), "{text}");
}

#[test]
fn prompt_text_escapes_terminal_control_characters() {
    let mut m = manifest("kv-store", &["network"], &[]);
    m.description = "Harmless.\u{1b}[2J\u{1b}[1A\rApproved by your admin\u{202e}".to_owned();
    m.author = Some("Eve\u{7}".to_owned());
    m.tools[0].description = "Adds\u{1b}]0;title\u{7} a note.".to_owned();
    let text = prompt::text(&m, &ApprovalState::NeedsApproval);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(!text.contains('\u{202e}'), "{text:?}");
    assert!(text.contains("\\u{1b}[2J"), "{text}");
}

#[test]
fn prompt_answers_without_a_terminal() {
    let m = manifest("kv-store", &["network"], &[]);
    for (answer, yes) in [
        ("y\n", true),
        ("YES\n", true),
        (" Yes \n", true),
        ("n\n", false),
        ("\n", false),
        ("", false),
        ("yep\n", false),
    ] {
        let mut out = Vec::new();
        let got = prompt::ask_on(
            &m,
            &ApprovalState::NeedsApproval,
            &mut answer.as_bytes(),
            &mut out,
        )
        .unwrap();
        assert_eq!(got, yes, "{answer:?}");
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains(prompt::QUESTION), "{shown}");
    }
}

/// Runs the `prompt` role with a pseudo-terminal as its controlling terminal
/// and /dev/null as its stdin and stdout, answers `answer` once the question
/// shows, and returns what the terminal showed and what the child decided.
fn prompt_on_pty(state: &Path, m: &Value, answer: &str) -> (String, Option<String>) {
    const DRIVER: &str = r#"
import os, pty, select, sys, time
exe, answer = sys.argv[1], sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.execv(exe, [exe] + sys.argv[3:])
out, sent, deadline = b"", False, time.time() + 10
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.05)
    if ready:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if not sent and b"[y/N]" in out:
        os.write(fd, answer)
        sent = True
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 99)
"#;
    let result = state.with_extension("result");
    let _ = std::fs::remove_file(&result);
    let out = Command::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .arg(std::env::current_exe().unwrap())
        .arg(answer)
        .args(child_args())
        .env(ROLE, "prompt")
        .env(ROLE_STATE, state)
        .env(ROLE_MANIFEST, m.to_string())
        .env(ROLE_RESULT, &result)
        .output()
        .expect("python3 runs");
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(
        out.status.success(),
        "the prompting child failed ({}):\n{shown}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (shown, std::fs::read_to_string(&result).ok())
}

#[test]
fn prompt_on_a_real_terminal_yes_no_and_default_no() {
    let dir = state_dir();
    let state = dir.path().join("state");
    let m = manifest_json("kv-store", &["shell:exec", "network"], &["API_TOKEN"]);
    let parsed: Manifest = serde_json::from_value(m.clone()).unwrap();
    let store = ApprovalStore::new(&state);

    // No, then an empty answer: refused, and nothing is written at all.
    for answer in ["n\n", "\n"] {
        let (shown, decision) = prompt_on_pty(&state, &m, answer);
        assert_eq!(decision.as_deref(), Some("no"), "{answer:?}:\n{shown}");
        assert!(shown.contains("Not approved"), "{shown}");
        assert!(!state.exists(), "{answer:?} wrote to the state folder");
        assert_eq!(store.state(&parsed).unwrap(), ApprovalState::NeedsApproval);
    }

    // Yes: approved and recorded. The terminal showed the whole prompt.
    let (shown, decision) = prompt_on_pty(&state, &m, "y\n");
    assert_eq!(decision.as_deref(), Some("yes"), "{shown}");
    for expected in [
        "Plugin \"kv-store\" asks for your approval.",
        "kv-store 1.0.0",
        "Ada Example",
        "note_add: Adds a note.",
        &format!("network: {}", Permission::Network.grants()),
        &format!("shell:exec: {}", Permission::ShellExec.grants()),
        "API_TOKEN",
        approval::SHELL_NETWORK_WARNING,
        "Approve? [y/N]",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    assert_eq!(store.state(&parsed).unwrap(), ApprovalState::Approved);

    // A new permission asks again and says what is new.
    let more = manifest_json(
        "kv-store",
        &["shell:exec", "network", "clipboard"],
        &["API_TOKEN"],
    );
    let (shown, decision) = prompt_on_pty(&state, &more, "\n");
    assert_eq!(decision.as_deref(), Some("no"), "{shown}");
    assert!(
        shown.contains("now asks for more than you approved: clipboard."),
        "{shown}"
    );
    assert!(shown.contains("(new)"), "{shown}");
}

#[test]
fn without_a_terminal_there_is_no_prompt() {
    use std::os::unix::process::CommandExt;
    let m = manifest_json("kv-store", &["network"], &[]);
    let mut c = child("no-terminal");
    c.env(ROLE_MANIFEST, m.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: setsid is async-signal-safe; it drops the controlling terminal.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
