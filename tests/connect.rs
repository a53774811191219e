//! `plughost connect CLIENT` through the real binary, in a throwaway HOME:
//! for each client, a real example of its configuration (from its
//! documentation, with other servers and unrelated keys: see
//! `tests/fixtures/connect/README.md`) gets plughost's entry in the shape the
//! client documents (checked against a schema of that documentation), keeps
//! every other byte, does not change on a second run, and comes back byte for
//! byte with `--undo`. The written entries are then used as a client would:
//! the stdio one is started and listed over MCP, the HTTP one is reached with
//! its URL and header.

use crate::mcp_client;
use crate::util;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use util::{Sandbox, run, stderr, stdout};

/// One client: its name, its file under HOME, the example it starts from,
/// and the key its servers are under.
struct Case {
    client: &'static str,
    file: &'static str,
    fixture: &'static str,
    servers: &'static str,
}

const CLAUDE_DESKTOP: Case = Case {
    client: "claude-desktop",
    file: ".config/Claude/claude_desktop_config.json",
    fixture: "claude_desktop_config.json",
    servers: "mcpServers",
};
const CLAUDE_CODE: Case = Case {
    client: "claude-code",
    file: ".claude.json",
    fixture: "claude.json",
    servers: "mcpServers",
};
const VSCODE: Case = Case {
    client: "vscode",
    file: ".config/Code/User/mcp.json",
    fixture: "vscode-mcp.json",
    servers: "servers",
};
const CURSOR: Case = Case {
    client: "cursor",
    file: ".cursor/mcp.json",
    fixture: "cursor-mcp.json",
    servers: "mcpServers",
};
const WINDSURF: Case = Case {
    client: "windsurf",
    file: ".codeium/windsurf/mcp_config.json",
    fixture: "windsurf-mcp_config.json",
    servers: "mcpServers",
};
const CODEX: Case = Case {
    client: "codex",
    file: ".codex/config.toml",
    fixture: "codex-config.toml",
    servers: "mcp_servers",
};
const GEMINI: Case = Case {
    client: "gemini",
    file: ".gemini/settings.json",
    fixture: "gemini-settings.json",
    servers: "mcpServers",
};

const ALL: [&Case; 7] = [
    &CLAUDE_DESKTOP,
    &CLAUDE_CODE,
    &VSCODE,
    &CURSOR,
    &WINDSURF,
    &CODEX,
    &GEMINI,
];

impl Case {
    fn fixture_text(&self) -> String {
        std::fs::read_to_string(fixtures().join(self.fixture)).unwrap()
    }

    fn is_toml(&self) -> bool {
        self.fixture.ends_with(".toml")
    }

    /// The file's content as JSON (TOML converted; comments dropped).
    fn parse(&self, text: &str) -> Value {
        if self.is_toml() {
            let doc: toml_edit::DocumentMut = text
                .parse()
                .unwrap_or_else(|e| panic!("{} wrote TOML that does not parse: {e}", self.client));
            toml_to_json(doc.as_item())
        } else {
            serde_json::from_str(&strip_comments(text)).unwrap_or_else(|e| {
                panic!(
                    "{} wrote JSON that does not parse: {e}\n{text}",
                    self.client
                )
            })
        }
    }

    /// Fails unless `value` (a whole file) matches the schema written from
    /// the client's documentation.
    fn check_schema(&self, value: &Value) {
        let path = fixtures().join(format!("schemas/{}.json", self.client));
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{}'s file does not match its documented format: {errors:?}\n{value:#}",
            self.client
        );
    }

    /// plughost's stdio entry as this client documents it.
    fn stdio_entry(&self, command: &str, args: &[String]) -> Value {
        let mut entry = json!({"command": command, "args": args});
        if matches!(self.client, "claude-code" | "vscode" | "cursor") {
            entry["type"] = json!("stdio");
        }
        entry
    }

    /// plughost's HTTP entry as this client documents it.
    fn http_entry(&self, url: &str, token: &str) -> Value {
        let headers = json!({"Authorization": format!("Bearer {token}")});
        match self.client {
            "cursor" => json!({"url": url, "headers": headers}),
            "windsurf" => json!({"serverUrl": url, "headers": headers}),
            "codex" => json!({"url": url, "bearer_token_env_var": "PLUGHOST_HTTP_TOKEN"}),
            _ => json!({"type": "http", "url": url, "headers": headers}),
        }
    }
}

fn fixtures() -> PathBuf {
    util::repo().join("tests/fixtures/connect")
}

/// A HOME of its own, with plughost's folders in the sandbox and a PATH
/// that holds only what a test puts there.
struct Home {
    sandbox: Sandbox,
}

impl Home {
    fn new() -> Home {
        let sandbox = Sandbox::new();
        std::fs::create_dir_all(sandbox.root.path().join("home/bin")).unwrap();
        Home { sandbox }
    }

    fn path(&self) -> PathBuf {
        self.sandbox.root.path().join("home")
    }

    fn file(&self, case: &Case) -> PathBuf {
        self.path().join(case.file)
    }

    fn place(&self, case: &Case, text: &str) {
        let file = self.file(case);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
    }

    fn read(&self, case: &Case) -> String {
        std::fs::read_to_string(self.file(case)).unwrap()
    }

    fn backup(&self, case: &Case) -> PathBuf {
        PathBuf::from(format!("{}.plughost-backup", self.file(case).display()))
    }

    /// `plughost` as a user of this HOME runs it, in a session of its own:
    /// there is no terminal to ask on, as in a script.
    fn cmd(&self) -> Command {
        let mut c = self.sandbox.cmd();
        c.env("HOME", self.path())
            .env("PATH", self.path().join("bin"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CODEX_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PLUGHOST_AUDIT_LOG")
            .stdin(Stdio::null());
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        c
    }

    fn connect(&self, args: &[&str]) -> Output {
        let mut c = self.cmd();
        c.arg("connect").args(args);
        run(c)
    }

    fn token(&self) -> String {
        std::fs::read_to_string(self.sandbox.state().join("http-token"))
            .unwrap()
            .trim()
            .to_owned()
    }
}

fn exe() -> String {
    std::fs::canonicalize(crate::util::plughost())
        .unwrap()
        .display()
        .to_string()
}

/// The arguments plughost writes for a sandbox: its folders, then `serve`.
fn serve_args(sandbox: &Sandbox) -> Vec<String> {
    vec![
        "--plugins-dir".into(),
        sandbox.plugins().display().to_string(),
        "--state-dir".into(),
        sandbox.state().display().to_string(),
        "serve".into(),
    ]
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(o), stderr(o));
}

/// Asserts `after` is `before` with one stretch of text inserted or
/// replaced: every byte around plughost's entry is the original's.
fn assert_one_stretch_changed(before: &str, after: &str) -> String {
    let prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = before[prefix..]
        .bytes()
        .rev()
        .zip(after[prefix..].bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &before[prefix..before.len() - suffix];
    assert!(
        removed.trim_matches([',', ' ', '\n']).is_empty(),
        "text of the original was changed: {removed:?}\n{after}"
    );
    after[prefix..after.len() - suffix].to_owned()
}

/// Every server and every top-level key of `before` but plughost's is in
/// `after`, equal.
fn assert_others_untouched(case: &Case, before: &Value, after: &Value) {
    for (key, value) in before.as_object().unwrap() {
        if key != case.servers {
            assert_eq!(&after[key], value, "{}: {key} changed", case.client);
        }
    }
    let servers = after[case.servers].as_object().unwrap();
    for (name, server) in before[case.servers].as_object().unwrap() {
        assert_eq!(
            &servers[name], server,
            "{}: server {name} changed",
            case.client
        );
    }
    assert_eq!(
        servers.len(),
        before[case.servers].as_object().unwrap().len() + 1,
        "{}",
        case.client
    );
    assert_eq!(
        after.as_object().unwrap().len(),
        before.as_object().unwrap().len(),
        "{}",
        case.client
    );
}

/// The whole round: connect, check, connect again, undo, undo again.
fn round_trip(case: &Case) {
    let home = Home::new();
    let original = case.fixture_text();
    let before = case.parse(&original);
    // The schema accepts the documentation's own examples.
    case.check_schema(&before);
    home.place(case, &original);

    let o = home.connect(&[case.client, "--yes"]);
    ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains(&format!("will change {}", home.file(case).display())),
        "{out}"
    );
    assert!(
        out.contains("+++ ") && out.contains("\"plughost\"")
            || out.contains("[mcp_servers.plughost]"),
        "{out}"
    );
    let written = home.read(case);
    let inserted = assert_one_stretch_changed(&original, &written);
    assert!(inserted.contains("plughost"), "{inserted}");
    let after = case.parse(&written);
    case.check_schema(&after);
    assert_eq!(
        after[case.servers]["plughost"],
        case.stdio_entry(&exe(), &serve_args(&home.sandbox)),
        "{}:\n{written}",
        case.client
    );
    assert_others_untouched(case, &before, &after);
    assert_eq!(
        std::fs::read_to_string(home.backup(case)).unwrap(),
        original
    );

    let again = home.connect(&[case.client, "--yes"]);
    ok(&again);
    assert!(
        stdout(&again).contains("nothing to change"),
        "{}",
        stdout(&again)
    );
    assert_eq!(home.read(case), written, "a second run changed the file");

    let undo = home.connect(&[case.client, "--undo", "--yes"]);
    ok(&undo);
    assert!(stdout(&undo).contains("restored"), "{}", stdout(&undo));
    assert_eq!(
        home.read(case),
        original,
        "undo did not restore the file byte for byte"
    );
    assert!(!home.backup(case).exists());
    let undo_again = home.connect(&[case.client, "--undo", "--yes"]);
    ok(&undo_again);
    assert!(stdout(&undo_again).contains("nothing to undo"));
    assert_eq!(home.read(case), original);
}

#[test]
fn claude_desktop_round_trip() {
    round_trip(&CLAUDE_DESKTOP);
}

#[test]
fn claude_code_round_trip() {
    round_trip(&CLAUDE_CODE);
}

#[test]
fn vscode_round_trip() {
    round_trip(&VSCODE);
}

#[test]
fn cursor_round_trip() {
    round_trip(&CURSOR);
}

#[test]
fn windsurf_round_trip() {
    round_trip(&WINDSURF);
}

#[test]
fn codex_round_trip() {
    round_trip(&CODEX);
}

#[test]
fn gemini_round_trip() {
    round_trip(&GEMINI);
}

#[test]
fn a_missing_file_is_created_private_and_undo_removes_it() {
    for case in ALL {
        let home = Home::new();
        let o = home.connect(&[case.client, "--yes"]);
        ok(&o);
        assert!(stdout(&o).contains("will create"), "{}", stdout(&o));
        let file = home.file(case);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", case.client);
        let written = home.read(case);
        let value = case.parse(&written);
        case.check_schema(&value);
        let mut expected = json!({});
        expected[case.servers] =
            json!({"plughost": case.stdio_entry(&exe(), &serve_args(&home.sandbox))});
        assert_eq!(value, expected, "{}:\n{written}", case.client);
        assert!(!home.backup(case).exists());

        let again = home.connect(&[case.client, "--yes"]);
        ok(&again);
        assert_eq!(home.read(case), written);

        let undo = home.connect(&[case.client, "--undo", "--yes"]);
        ok(&undo);
        assert!(
            stdout(&undo).contains("plughost had created it"),
            "{}",
            stdout(&undo)
        );
        assert!(!file.exists(), "{}", case.client);
    }
}

#[test]
fn http_entries_carry_the_url_and_the_token_where_each_client_takes_them() {
    for case in ALL.iter().filter(|c| c.client != "claude-desktop") {
        let home = Home::new();
        let original = case.fixture_text();
        home.place(case, &original);
        let o = home.connect(&[case.client, "--http", "127.0.0.1:8765", "--yes"]);
        ok(&o);
        let token = home.token();
        assert!(token.len() >= 32);
        assert!(
            !stdout(&o).contains(&token),
            "the preview shows the token:\n{}",
            stdout(&o)
        );
        let written = home.read(case);
        assert_one_stretch_changed(&original, &written);
        let after = case.parse(&written);
        case.check_schema(&after);
        assert_eq!(
            after[case.servers]["plughost"],
            case.http_entry("http://127.0.0.1:8765/mcp", &token),
            "{}:\n{written}",
            case.client
        );
        assert_others_untouched(case, &case.parse(&original), &after);
        if case.client == "codex" {
            assert!(!written.contains(&token), "the token is in config.toml");
            let export = format!(
                "export PLUGHOST_HTTP_TOKEN=\"$(cat {})\"",
                home.sandbox.state().join("http-token").display()
            );
            assert!(stdout(&o).contains(&export), "{}", stdout(&o));
        }

        // The same URL again changes nothing; stdio then replaces the entry,
        // and undo still goes back to the file from before the first change.
        let again = home.connect(&[case.client, "--http", "http://127.0.0.1:8765/mcp", "--yes"]);
        ok(&again);
        assert_eq!(home.read(case), written);
        ok(&home.connect(&[case.client, "--yes"]));
        let stdio = case.parse(&home.read(case));
        assert_eq!(
            stdio[case.servers]["plughost"],
            case.stdio_entry(&exe(), &serve_args(&home.sandbox))
        );
        let undo = home.connect(&[case.client, "--undo", "--yes"]);
        ok(&undo);
        assert_eq!(home.read(case), original, "{}", case.client);
    }
}

#[test]
fn the_undo_preview_hides_the_token_too() {
    let home = Home::new();
    ok(&home.connect(&["cursor", "--http", "127.0.0.1:8765", "--yes"]));
    let token = home.token();
    let dry = home.connect(&["cursor", "--undo", "--dry-run"]);
    ok(&dry);
    assert!(stdout(&dry).contains("Bearer ***"), "{}", stdout(&dry));
    assert!(!stdout(&dry).contains(&token));
    let shown = home.connect(&["cursor", "--undo", "--dry-run", "--show-token"]);
    assert!(stdout(&shown).contains(&token));
}

#[test]
fn claude_desktop_with_http_is_refused_in_a_sentence() {
    let home = Home::new();
    let original = CLAUDE_DESKTOP.fixture_text();
    home.place(&CLAUDE_DESKTOP, &original);
    let o = home.connect(&["claude-desktop", "--http", "127.0.0.1:8765", "--yes"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("holds only servers it starts itself")
            && err.contains("without --http")
            && err.contains("Connectors"),
        "{err}"
    );
    assert_eq!(home.read(&CLAUDE_DESKTOP), original);
}

#[test]
fn a_file_that_does_not_parse_is_named_and_left_alone() {
    let cases: [(&Case, &str, &str); 4] = [
        (
            &CURSOR,
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}\n",
            "is not valid JSON (line 4, column 5: expected `,` or `}`)",
        ),
        (
            &CODEX,
            "model = \"o3\"\n[mcp_servers.docs\ncommand = \"npx\"\n",
            "is not valid TOML (line 2",
        ),
        (
            &GEMINI,
            "{\"mcpServers\": [\"not\", \"an\", \"object\"]}",
            "holding something other than an object under \"mcpServers\"",
        ),
        (
            &CLAUDE_CODE,
            "[1, 2, 3]\n",
            "is not a JSON object at the top",
        ),
    ];
    for (case, text, says) in cases {
        let home = Home::new();
        home.place(case, text);
        let o = home.connect(&[case.client, "--yes"]);
        assert_eq!(o.status.code(), Some(2), "{}", case.client);
        let err = stderr(&o);
        assert!(
            err.contains(&home.file(case).display().to_string()),
            "{err}"
        );
        assert!(err.contains(says), "{err}");
        assert!(err.contains("it was left as it is"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert_eq!(home.read(case), text, "{}", case.client);
        assert!(!home.backup(case).exists());
        let undo = home.connect(&[case.client, "--undo", "--yes"]);
        assert_eq!(undo.status.code(), Some(2));
        assert_eq!(home.read(case), text);
    }
}

#[test]
fn without_a_terminal_it_asks_for_yes_and_dry_run_writes_nothing() {
    let home = Home::new();
    let original = CURSOR.fixture_text();
    home.place(&CURSOR, &original);
    let o = home.connect(&["cursor"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no terminal to confirm on: run it again with --yes"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("+    \"plughost\": {"),
        "{}",
        stdout(&o)
    );
    assert_eq!(home.read(&CURSOR), original);
    assert!(!home.backup(&CURSOR).exists());

    let dry = home.connect(&["cursor", "--dry-run"]);
    ok(&dry);
    assert!(stdout(&dry).contains("nothing written (--dry-run)"));
    assert_eq!(home.read(&CURSOR), original);
}

#[test]
fn undo_after_the_client_changed_its_file_takes_out_only_plughost() {
    let home = Home::new();
    let original = CLAUDE_CODE.fixture_text();
    home.place(&CLAUDE_CODE, &original);
    ok(&home.connect(&["claude-code", "--yes"]));
    // Claude Code counts its starts in the same file.
    let changed = home
        .read(&CLAUDE_CODE)
        .replace("\"numStartups\": 42", "\"numStartups\": 43");
    std::fs::write(home.file(&CLAUDE_CODE), &changed).unwrap();
    let undo = home.connect(&["claude-code", "--undo", "--yes"]);
    ok(&undo);
    assert!(
        stdout(&undo).contains("changed since plughost connected"),
        "{}",
        stdout(&undo)
    );
    assert_eq!(
        home.read(&CLAUDE_CODE),
        original.replace("\"numStartups\": 42", "\"numStartups\": 43")
    );
}

#[test]
fn an_entry_of_the_same_name_is_replaced_and_comes_back_on_undo() {
    let home = Home::new();
    let original = "{\n  \"mcpServers\": {\n    \"plughost\": {\"command\": \"/opt/old/plughost\", \"args\": [\"serve\"], \"timeout\": 5000},\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
    home.place(&GEMINI, original);
    let o = home.connect(&["gemini", "--yes"]);
    ok(&o);
    assert!(
        stdout(&o).contains("-    \"plughost\": {\"command\": \"/opt/old/plughost\""),
        "{}",
        stdout(&o)
    );
    let after = GEMINI.parse(&home.read(&GEMINI));
    assert_eq!(after["mcpServers"]["plughost"]["command"], exe());
    assert_eq!(after["mcpServers"]["other"], json!({"command": "x"}));
    ok(&home.connect(&["gemini", "--undo", "--yes"]));
    assert_eq!(home.read(&GEMINI), original);

    // A named entry of its own, beside the user's.
    ok(&home.connect(&["gemini", "--name", "tools", "--yes"]));
    let named = GEMINI.parse(&home.read(&GEMINI));
    assert_eq!(named["mcpServers"]["tools"]["command"], exe());
    assert_eq!(
        named["mcpServers"]["plughost"]["command"],
        "/opt/old/plughost"
    );
    ok(&home.connect(&["gemini", "--name", "tools", "--undo", "--yes"]));
    assert_eq!(home.read(&GEMINI), original);
    let bad = home.connect(&["gemini", "--name", "my_tools", "--yes"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("without it"), "{}", stderr(&bad));
}

#[test]
fn a_linked_file_stays_a_link_and_keeps_its_mode() {
    let home = Home::new();
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("cursor-mcp.json");
    let original = CURSOR.fixture_text();
    std::fs::write(&target, &original).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
    std::os::unix::fs::symlink(&target, home.file(&CURSOR)).unwrap();

    ok(&home.connect(&["cursor", "--yes"]));
    let link = std::fs::symlink_metadata(home.file(&CURSOR)).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert!(home.read(&CURSOR).contains("\"plughost\""));
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    let backup = dotfiles.join("cursor-mcp.json.plughost-backup");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
    assert_eq!(
        std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
        0o640
    );
    ok(&home.connect(&["cursor", "--undo", "--yes"]));
    assert!(
        std::fs::symlink_metadata(home.file(&CURSOR))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), original);
}

#[test]
fn config_names_another_file() {
    let home = Home::new();
    let other = home.path().join("project/.cursor/mcp.json");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, CURSOR.fixture_text()).unwrap();
    let other_arg = other.display().to_string();
    let o = home.connect(&["cursor", "--config", &other_arg, "--yes"]);
    ok(&o);
    assert!(
        stdout(&o).contains(&format!(
            "plughost connect cursor --undo --config {other_arg}"
        )),
        "{}",
        stdout(&o)
    );
    assert!(!home.file(&CURSOR).exists());
    assert!(
        std::fs::read_to_string(&other)
            .unwrap()
            .contains("\"plughost\"")
    );
    ok(&home.connect(&["cursor", "--config", &other_arg, "--undo", "--yes"]));
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        CURSOR.fixture_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_entry_starts_this_plughost_with_the_same_plugins_and_options() {
    let home = Home::new();
    home.sandbox.write_plugin(
        "hello",
        &util::manifest("hello", "hello_there"),
        &util::answer_script("hi"),
    );
    let mut c = home.cmd();
    c.args(["--timeout", "7", "connect", "cursor", "--yes"]);
    ok(&run(c));
    let entry = CURSOR.parse(&home.read(&CURSOR))["mcpServers"]["plughost"].clone();
    let args: Vec<String> = serde_json::from_value(entry["args"].clone()).unwrap();
    let mut expected = serve_args(&home.sandbox);
    expected.splice(4..4, ["--timeout".to_owned(), "7".to_owned()]);
    assert_eq!(args, expected);

    // As the client starts it: its own environment, not the shell's.
    let mut cmd = tokio::process::Command::new(entry["command"].as_str().unwrap());
    cmd.args(&args).env_clear().env("HOME", home.path());
    let session = mcp_client::connect_command(cmd, None).await;
    let tools = session.client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "hello_there"), "{tools:?}");
    let result = session
        .client
        .call_tool(mcp_client::call("hello_there", json!({})))
        .await
        .unwrap();
    assert_eq!(mcp_client::text(&result), "hi");
    session.client.cancel().await.unwrap();
}

#[test]
fn the_http_entry_reaches_a_running_server() {
    let home = Home::new();
    home.sandbox.write_plugin(
        "hello",
        &util::manifest("hello", "hello_there"),
        &util::answer_script("hi"),
    );
    let server = util::http::Server::start(&home.sandbox, &[]);
    let token_file = home.sandbox.root.path().join("token").display().to_string();
    let url = server.url();
    ok(&home.connect(&[
        "gemini",
        "--http",
        &url,
        "--token-file",
        &token_file,
        "--yes",
    ]));
    let entry = GEMINI.parse(&home.read(&GEMINI))["mcpServers"]["plughost"].clone();
    assert_eq!(entry["url"], url);
    let token = entry["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap();
    let client = server.client_with(token).initialize();
    let r = client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = r.answer(&json!(1)).expect("a tools/list answer");
    assert_eq!(
        tools["result"]["tools"][0]["name"], "hello_there",
        "{tools}"
    );
}

#[test]
fn list_shows_installed_clients_and_how_plughost_is_connected() {
    let home = Home::new();
    // Codex is on PATH; Cursor, Gemini and VS Code have their folders.
    util::write_executable(&home.path().join("bin/codex"), "#!/bin/sh\n");
    ok(&home.connect(&["cursor", "--yes"]));
    ok(&home.connect(&["codex", "--http", "127.0.0.1:8765", "--yes"]));
    home.place(&GEMINI, "{ not json");
    std::fs::create_dir_all(home.path().join(".config/Code")).unwrap();

    let mut c = home.cmd();
    c.args(["connect", "--list"]);
    let o = run(c);
    ok(&o);
    let out = stdout(&o);
    let line = |client: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{client} ")))
            .unwrap_or_else(|| panic!("no line for {client}:\n{out}"))
            .split("  ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("cursor"),
        ["cursor", "yes (~/.cursor)", "stdio", "~/.cursor/mcp.json"]
    );
    assert_eq!(
        line("codex"),
        [
            "codex",
            "yes (codex on PATH)",
            "http http://127.0.0.1:8765/mcp",
            "~/.codex/config.toml"
        ]
    );
    assert_eq!(line("vscode")[1..3], ["yes (~/.config/Code)", "no"]);
    assert_eq!(line("claude-desktop")[1..3], ["no", "no"]);
    assert_eq!(line("claude-code")[1..3], ["no", "no"]);
    let gemini = line("gemini");
    assert_eq!(gemini[1], "yes (~/.gemini)");
    assert!(gemini[2].starts_with("? (not valid JSON"), "{gemini:?}");

    let mut c = home.cmd();
    c.args(["--json", "connect", "--list"]);
    let o = run(c);
    ok(&o);
    let rows: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = |client: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["client"] == client)
            .unwrap()
            .clone()
    };
    assert_eq!(
        row("cursor")["connected"],
        json!({"transport": "stdio", "command": exe()})
    );
    assert_eq!(row("codex")["installed"], true);
    assert_eq!(
        row("codex")["binary"],
        home.path().join("bin/codex").display().to_string()
    );
    assert_eq!(row("windsurf")["installed"], false);
    assert_eq!(row("windsurf")["connected"], Value::Null);
    assert!(
        row("gemini")["error"]
            .as_str()
            .unwrap()
            .starts_with("not valid JSON")
    );
}

/// JSON with `//` and `/* */` comments (VS Code's files) as plain JSON.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn toml_to_json(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => toml_value(v),
        toml_edit::Item::Table(t) => t
            .iter()
            .map(|(k, v)| (k.to_owned(), toml_to_json(v)))
            .collect(),
        toml_edit::Item::ArrayOfTables(a) => a
            .iter()
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.to_owned(), toml_to_json(v)))
                    .collect::<Value>()
            })
            .collect(),
    }
}

fn toml_value(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => json!(s.value()),
        V::Integer(i) => json!(i.value()),
        V::Float(f) => json!(f.value()),
        V::Boolean(b) => json!(b.value()),
        V::Datetime(d) => json!(d.value().to_string()),
        V::Array(a) => a.iter().map(toml_value).collect(),
        V::InlineTable(t) => t
            .iter()
            .map(|(k, v)| (k.to_owned(), toml_value(v)))
            .collect(),
    }
}

#[test]
fn each_fixture_is_the_shape_its_schema_describes() {
    for case in ALL {
        let value = case.parse(&case.fixture_text());
        case.check_schema(&value);
        assert!(
            value[case.servers].as_object().unwrap().len() >= 2,
            "{} has other servers",
            case.client
        );
    }
    // And the schemas refuse what each client does not take.
    let wrong = [
        (&CLAUDE_CODE, json!({"url": "http://x/mcp"})),
        (
            &CLAUDE_DESKTOP,
            json!({"type": "http", "url": "http://x/mcp"}),
        ),
        (&WINDSURF, json!({"type": "http", "url": "http://x/mcp"})),
        (
            &CODEX,
            json!({"url": "http://x/mcp", "bearer_token": "secret"}),
        ),
        (&VSCODE, json!({"url": "http://x/mcp"})),
    ];
    for (case, entry) in wrong {
        let path = fixtures().join(format!("schemas/{}.json", case.client));
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut file = json!({});
        file[case.servers] = json!({"x": entry});
        assert!(
            !jsonschema::is_valid(&schema, &file),
            "{} accepts {file}",
            case.client
        );
    }
}
