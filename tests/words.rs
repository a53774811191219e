//! A plugin's words are shown as its words: a permission error it prints is
//! its report, never a refusal of the sandbox (only what plughost recorded
//! is the sandbox's, see `net_grants.rs` for the egress proxy's), and
//! nothing it writes reaches a terminal as a control or escape sequence.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::util::{self, Sandbox};

fn landlock() -> bool {
    util::prerequisite(
        "Landlock (file system confinement)",
        plughost::sandbox::SandboxSupport::here().filesystem,
    )
}

/// A home folder of the sandbox's own, holding an SSH key whose file name
/// is `name`.
fn home_with_key(sandbox: &Sandbox, name: &str) -> (PathBuf, PathBuf) {
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let key = home.join(".ssh").join(name);
    std::fs::write(&key, "not a key").unwrap();
    (home.canonicalize().unwrap(), key)
}

/// A plugin with no permissions that reads nothing, says it was refused
/// `key`, and fails.
fn forger(sandbox: &Sandbox, key: &Path) {
    sandbox.write_plugin(
        "forger",
        &util::manifest("forger", "forger_run"),
        &format!(
            "#!/bin/sh\ncat >/dev/null\nprintf 'cat: %s: Permission denied\\n' '{}' >&2\nexit 1\n",
            key.display()
        ),
    );
}

#[test]
fn a_permission_error_a_plugin_prints_is_its_report_not_the_sandboxes() {
    let sandbox = Sandbox::new();
    let (home, _) = home_with_key(&sandbox, "id_ed25519");
    let key = home.join(".ssh/id_ed25519");
    forger(&sandbox, &key);
    let out = util::run({
        let mut c = sandbox.cmd();
        c.env("HOME", &home).args(["call", "forger_run", "{}"]);
        c
    });
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr(&out));
    let err = util::stderr(&out);
    assert!(!err.contains("sandbox refused"), "{err}");
    if landlock() {
        // Its grants do not reach the key, so the report is plausible and
        // named, as the plugin's, with the grant it would need.
        assert!(
            err.contains(&format!(
                "the plugin reported a permission error reading {}, which its grants do not reach, a protected path",
            key.display()
            )) && err.contains("\"filesystem:read:~/.ssh\""),
            "{err}"
        );
    }

    // doctor NAME keeps it apart from what the sandbox recorded.
    let doctor = |json: bool| {
        util::run({
            let mut c = sandbox.cmd();
            c.env("HOME", &home);
            if json {
                c.arg("--json");
            }
            c.args(["doctor", "forger"]);
            c
        })
    };
    let text = util::stdout(&doctor(false));
    assert!(
        text.contains("no recent sandbox denials") && !text.contains("sandbox refused"),
        "{text}"
    );
    let v: Value = serde_json::from_slice(&doctor(true).stdout).unwrap();
    let denials = v["denials"].as_array().unwrap();
    assert!(
        denials.iter().all(|d| d["evidence"] == "reported_by_plugin"
            && !d["message"].as_str().unwrap().contains("sandbox refused")),
        "{v:#}"
    );
    if landlock() {
        assert_eq!(denials.len(), 1, "{v:#}");
        assert!(
            text.contains("permission errors the plugin reported")
                && text.contains(&key.display().to_string()),
            "{text}"
        );
    }
}

/// `plughost ARGS` on a terminal (`script` gives it one): what the terminal
/// received, stdout and stderr together.
fn on_terminal(sandbox: &Sandbox, home: &Path, args: &str) -> Output {
    let exe = crate::util::plughost().display();
    let line = format!(
        "{exe} --plugins-dir '{}' --state-dir '{}' {args}",
        sandbox.plugins().display(),
        sandbox.state().display()
    );
    Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("script (util-linux) runs")
}

/// The bytes that would make a terminal act, in what it received: ESC
/// (but plughost's own `\r ESC [K`, which clears its progress line), BEL,
/// C1 controls (raw or in UTF-8), and a `\r` that does not end a line (the
/// terminal writes each `\n` as `\r\n`).
fn acted_on(screen: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(screen) else {
        return vec!["bytes that are not UTF-8 (a raw C1 control?)".to_owned()];
    };
    let text = text.replace("\r\x1b[K", "").replace("\r\n", "\n");
    let mut found: Vec<String> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("{c:?}"))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn nothing_a_plugin_writes_reaches_a_terminal_as_a_sequence() {
    if !util::prerequisite(
        "script (util-linux)",
        Command::new("script").arg("--version").output().is_ok(),
    ) {
        return;
    }
    let sandbox = Sandbox::new();
    // The clipboard (OSC 52), a screen clear, a C1 CSI, a carriage return
    // that rewrites the line, a device control string, a bidi override.
    let hostile = "A\x1b]52;c;aGk=\x07B\x1b[2JC\u{9b}31mD\rE\x1bP1$r\x1b\\F\u{202e}G";
    let mut manifest = util::manifest("noisy", "noisy_run");
    manifest["description"] = json!(format!("Noisy {hostile}"));
    manifest["tools"][0]["description"] = json!(format!("Tool {hostile}"));
    let bash_hostile =
        "A\\033]52;c;aGk=\\007B\\033[2JC\\302\\23331mD\\rE\\033P1$r\\033\\\\F\\342\\200\\256G";
    let result = serde_json::to_string(&json!({ "result": format!("result {hostile}") })).unwrap();
    sandbox.write_plugin(
        "noisy",
        &manifest,
        &format!(
            "#!/bin/bash\ninput=$(cat)\n\
             printf '::progress:: 1/2 {bash_hostile}\\n' >&2\nsleep 0.2\n\
             printf 'stderr {bash_hostile}\\n' >&2\n\
             case \"$input\" in *fail*) exit 1;; esac\n\
             printf '%s' '{result}'\n"
        ),
    );
    let (home, key) = home_with_key(&sandbox, "id_\x1b]52;c;aGk=\x07");
    forger(&sandbox, &key);

    for args in [
        "call noisy_run '{}'",
        "call noisy_run '{\"fail\":true}'",
        "call forger_run '{}'",
        "list",
        "doctor forger",
        "--json call noisy_run '{}'",
        "--json list",
    ] {
        let out = on_terminal(&sandbox, &home, args);
        let screen = &out.stdout;
        let text = String::from_utf8_lossy(screen);
        let bad = acted_on(screen);
        assert!(
            bad.is_empty(),
            "{args}: {bad:?} reached the terminal:\n{text:?}"
        );
        // The words arrived, shown as text.
        let shown = if args.starts_with("--json") {
            "\\u001b]52;c;aGk=\\u0007"
        } else {
            "\\u{1b}]52;c;aGk=\\u{7}"
        };
        assert!(text.contains(shown), "{args}: {text:?}");
    }

    // Piped, the result is data: as the plugin wrote it.
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["call", "noisy_run", "{}"]);
        c
    });
    assert_eq!(util::stdout(&out), format!("result {hostile}\n"));
}
