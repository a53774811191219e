//! The prompt's text, and the prompt on a real pseudo-terminal.

use super::*;

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
        new_secrets: vec![],
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

#[test]
fn prompt_text_names_each_brokered_secret_and_its_hosts_and_a_changed_binding_asks_again() {
    let mut m = manifest("gh", &[], &[]);
    m.secrets.insert(
        "GITHUB_TOKEN".into(),
        crate::plugins::manifest::BrokeredSecret {
            hosts: vec!["api.github.com:443".into()],
            headers: None,
            plain_http: false,
        },
    );
    let text = prompt::text(&m, &ApprovalState::NeedsApproval);
    assert!(
        text.contains("Secrets it uses without holding them")
            && text.contains("  GITHUB_TOKEN: api.github.com:443\n"),
        "{text}"
    );
    // Approved as it is; the same secret sent to one more host is new.
    let approvals = crate::approval::Approvals {
        plugins: [("gh".to_owned(), approval::Grant::of(&m, 0))].into(),
    };
    assert_eq!(approvals.state(&m), ApprovalState::Approved);
    m.secrets.get_mut("GITHUB_TOKEN").unwrap().hosts =
        vec!["uploads.github.com:443".into(), "api.github.com:443".into()];
    let state = approvals.state(&m);
    assert_eq!(
        state,
        ApprovalState::NeedsReapproval {
            new_permissions: vec![],
            new_env: vec![],
            new_secrets: vec!["GITHUB_TOKEN".into()],
        }
    );
    let text = prompt::text(&m, &state);
    assert!(
        text.contains("now asks for more than you approved: secret GITHUB_TOKEN.")
            && text.contains("  GITHUB_TOKEN: uploads.github.com:443, api.github.com:443  (new)\n"),
        "{text}"
    );
    // The same hosts in another order are the same binding.
    m.secrets.get_mut("GITHUB_TOKEN").unwrap().hosts.reverse();
    let approvals = crate::approval::Approvals {
        plugins: [("gh".to_owned(), approval::Grant::of(&m, 0))].into(),
    };
    m.secrets.get_mut("GITHUB_TOKEN").unwrap().hosts.reverse();
    assert_eq!(approvals.state(&m), ApprovalState::Approved);
}
