//! Approval order and the tier rule, through the real binary: a tool name a
//! plugin the user approved offers stays with it when a plugin that needs no
//! approval, whose folder name sorts first, arrives later (at rest, and during
//! `watch`); grants that name `/proc` (directly or through a link) need
//! approval; an MCP server whose read grant names a secret is not started
//! before approval; `validate --with-code --require-sandbox` runs nothing where
//! the sandbox cannot hold.

use crate::util;

use std::io::BufRead;
use std::process::Stdio;
use std::time::Duration;

use plughost::{PluginHost, SandboxMode};
use serde_json::{Value, json};
use util::{Sandbox, answer_script, manifest, run, stderr, stdout};

/// `zzz`, needing approval (it asks for `network`), approved, offering
/// `shared`; then, a few clock ticks later, `aaa`, needing none, offering
/// `shared` too.
fn approved_then_newcomer(sandbox: &Sandbox) {
    approved_holder(sandbox);
    newcomer(sandbox);
}

fn approved_holder(sandbox: &Sandbox) {
    let mut m = manifest("zzz", "shared");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin("zzz", &m, &answer_script("from zzz"));
    let mut c = sandbox.cmd();
    c.args(["approve", "zzz", "--yes"]);
    let out = run(c);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn newcomer(sandbox: &Sandbox) {
    std::thread::sleep(Duration::from_millis(50));
    sandbox.write_plugin(
        "aaa",
        &manifest("aaa", "shared"),
        &answer_script("from aaa"),
    );
}

fn cli(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut c = sandbox.cmd();
    c.args(args);
    run(c)
}

const SKIPPED: &str = "tool \"shared\" of plugin \"aaa\" is skipped: plugin \"zzz\" already offers a tool of that name (you approved it for that name)";

#[test]
fn an_approved_tool_is_not_taken_by_a_later_plugin_that_needs_no_approval() {
    let sandbox = Sandbox::new();
    approved_then_newcomer(&sandbox);
    let out = cli(&sandbox, &["call", "shared", "{}"]);
    assert_eq!(stdout(&out).trim(), "from zzz", "{}", stderr(&out));
    let out = cli(&sandbox, &["list"]);
    let text = stdout(&out);
    assert!(text.contains(SKIPPED), "{text}");
    assert!(
        text.contains(
            "[not offered: its name is kept by plugin \"zzz\" (you approved it for that name)]"
        ),
        "{text}"
    );
    let out = cli(&sandbox, &["--json", "list"]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listing["collisions"],
        json!([{"kind": "tool", "name": "shared", "kept_by": "zzz", "skipped_in": "aaa", "because": "approved"}])
    );
    let out = cli(&sandbox, &["doctor"]);
    assert!(
        stdout(&out).contains(&format!("collision: {SKIPPED}")),
        "{}",
        stdout(&out)
    );
    // Revoked, it still keeps the name against the newcomer (which came
    // later): a call asks for approval rather than reach the newcomer.
    assert!(cli(&sandbox, &["revoke", "zzz"]).status.success());
    let out = cli(&sandbox, &["call", "shared", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("zzz"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("from aaa"));
}

/// The newcomer arrives while `watch --json` runs: the event names the
/// approved holder as keeping the name.
#[test]
fn a_newcomer_during_watch_is_reported_and_does_not_take_the_name() {
    let sandbox = Sandbox::new();
    approved_holder(&sandbox);
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["event"], "notice");
    newcomer(&sandbox);
    let mut seen = Vec::new();
    let collision = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("watch ended; saw {seen:?}"))
            .unwrap();
        let event: Value = serde_json::from_str(&line).unwrap();
        if event.get("skipped_in").is_some() {
            break event;
        }
        seen.push(event);
        assert!(seen.len() < 10, "{seen:?}");
    };
    assert_eq!(
        (
            collision["kept_by"].as_str(),
            collision["skipped_in"].as_str()
        ),
        (Some("zzz"), Some("aaa")),
        "{collision}"
    );
    // SAFETY: kill takes plain integers; the pid is our own child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    let out = cli(&sandbox, &["call", "shared", "{}"]);
    assert_eq!(stdout(&out).trim(), "from zzz", "{}", stderr(&out));
}

/// In one host, with hot reload: the newcomer does not take the name, nor
/// does an edit of the holder's manifest, nor a reload of the holder; between
/// two plugins that need no approval, the one already loaded keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reload_never_hands_a_held_name_over() {
    let sandbox = Sandbox::new();
    approved_holder(&sandbox);
    sandbox.write_plugin("mmm", &manifest("mmm", "plain"), &answer_script("from mmm"));
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap();
    let _watch = host.watch().unwrap();
    let call = |tool: &'static str| {
        let f = host.call(tool, json!({}), plughost::protocol::Invocation::default());
        async move { f.await.map(|o| o.result) }
    };
    assert_eq!(call("shared").await.unwrap(), "from zzz");
    let mut m = manifest("aaa", "shared");
    m["tools"]
        .as_array_mut()
        .unwrap()
        .push(manifest("aaa", "plain")["tools"][0].clone());
    std::thread::sleep(Duration::from_millis(50));
    sandbox.write_plugin("aaa", &m, &answer_script("from aaa"));
    let collided = |host: &PluginHost, name: &str, kept_by: &str| {
        host.listing()
            .collisions
            .iter()
            .any(|c| c.name == name && c.kept_by == kept_by && c.skipped_in == "aaa")
    };
    util_wait(|| collided(&host, "plain", "mmm")).await;
    assert!(collided(&host, "shared", "zzz"));
    assert_eq!(call("shared").await.unwrap(), "from zzz");
    assert_eq!(call("plain").await.unwrap(), "from mmm");
    // The holders' manifests edited (a new version): nothing changes hands.
    for (name, tool) in [("zzz", "shared"), ("mmm", "plain")] {
        let mut m = manifest(name, tool);
        m["version"] = json!("1.1.0");
        if name == "zzz" {
            m["permissions"] = json!(["network"]);
        }
        std::fs::write(
            sandbox.plugins().join(name).join("plugin.json"),
            serde_json::to_vec(&m).unwrap(),
        )
        .unwrap();
    }
    util_wait(|| {
        host.listing()
            .plugins
            .iter()
            .filter(|p| p.version == "1.1.0")
            .count()
            == 2
    })
    .await;
    assert!(collided(&host, "shared", "zzz") && collided(&host, "plain", "mmm"));
    assert_eq!(call("shared").await.unwrap(), "from zzz");
    assert_eq!(call("plain").await.unwrap(), "from mmm");
    host.reload();
    assert_eq!(call("plain").await.unwrap(), "from mmm");
}

async fn util_wait(mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A read grant of `/proc`, or of a link to it, needs approval, and the
/// listing says what it gives.
#[test]
fn a_read_grant_of_proc_needs_approval_even_through_a_link() {
    let sandbox = Sandbox::new();
    let link = sandbox.root.path().join("innocent");
    std::os::unix::fs::symlink("/proc", &link).unwrap();
    for (name, grant) in [
        ("direct", "filesystem:read:/proc".to_owned()),
        ("linked", format!("filesystem:read:{}", link.display())),
        ("devices", "filesystem:read:/dev/tty".to_owned()),
    ] {
        let mut m = manifest(name, &format!("{name}_tool"));
        m["permissions"] = json!([grant]);
        sandbox.write_plugin(name, &m, &answer_script("ran"));
        let out = cli(&sandbox, &["call", &format!("{name}_tool"), "{}"]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("needs approval"),
            "{name}: {}",
            stderr(&out)
        );
        assert!(!stdout(&out).contains("ran"));
    }
    let text = stdout(&cli(&sandbox, &["list"]));
    assert!(
        text.contains(
            "/proc: other processes' command lines and, for your own processes, their environment"
        ),
        "{text}"
    );
    assert!(text.contains("/dev: devices"), "{text}");
    // A read grant of an ordinary folder still needs none.
    let mut m = manifest("plain", "plain_tool");
    m["permissions"] = json!([format!("filesystem:read:{}", sandbox.root.path().display())]);
    sandbox.write_plugin("plain", &m, &answer_script("ran"));
    let out = cli(&sandbox, &["call", "plain_tool", "{}"]);
    assert_eq!(stdout(&out).trim(), "ran", "{}", stderr(&out));
}

/// An MCP server that is not approved is started to list its tools only
/// when its grants alone need no approval: not when its read grant names a
/// secret. The server writes a marker when it starts.
#[tokio::test]
async fn a_server_whose_read_grant_names_a_secret_is_not_started_before_approval() {
    let sandbox = Sandbox::new();
    let marker = |name: &str| sandbox.root.path().join(format!("{name}.started"));
    for (name, grant) in [
        ("secret", "filesystem:read:~/.ssh/id_ed25519"),
        ("plain", "filesystem:read:/usr"),
    ] {
        let dir = sandbox.plugins().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let m = json!({"name": name, "version": "1.0.0", "description": "A server.",
                       "entrypoint": "main.sh", "protocol": "mcp", "permissions": [grant]});
        std::fs::write(dir.join("plugin.json"), m.to_string()).unwrap();
        util::write_executable(
            &dir.join("main.sh"),
            &format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker(name).display()),
        );
    }
    // Off, so that the marker proves the start whatever the sandbox allows.
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .sandbox(SandboxMode::Off)
        .build()
        .unwrap();
    let err = host.list_server("secret").await.unwrap_err();
    assert!(
        matches!(
            err,
            plughost::approval::ApproveError::NeedsApprovalFirst { .. }
        ),
        "{err}"
    );
    assert!(
        !marker("secret").exists(),
        "the server started before approval"
    );
    // The control: a server that reads an ordinary folder is started.
    let _ = host.list_server("plain").await;
    assert!(marker("plain").exists(), "the marker is written on start");
}

/// `validate --with-code` keeps `--require-sandbox`: where Landlock is
/// missing (a seccomp filter makes `landlock_create_ruleset` fail with
/// ENOSYS for plughost), the plugin's code is not run.
#[test]
fn validate_with_code_honours_require_sandbox() {
    use std::os::unix::process::CommandExt;
    let sandbox = Sandbox::new();
    let dir = sandbox.plugins().join("password-gen");
    util::copy_dir(&util::examples().join("password-gen"), &dir);
    let without_landlock = |args: &[&str]| {
        let mut c = sandbox.cmd();
        c.args(args).arg(&dir);
        // SAFETY: the hook only makes two prctl calls on data it owns.
        unsafe {
            c.pre_exec(no_landlock);
        }
        run(c)
    };
    let out = without_landlock(&["--require-sandbox", "validate", "--with-code"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("was not run: the sandbox is required but this system cannot enforce"),
        "{text}"
    );
    // The control: without the flag, the same system runs it.
    let out = without_landlock(&["validate", "--with-code"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("matches the tools in its code"), "{text}");
}

/// A seccomp filter that fails `landlock_create_ruleset` (444 on every
/// architecture) with ENOSYS, as a kernel without Landlock does.
fn no_landlock() -> std::io::Result<()> {
    const LANDLOCK_CREATE_RULESET: u32 = 444;
    let filter = [
        libc::sock_filter {
            code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: LANDLOCK_CREATE_RULESET,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls; `prog` and `filter` outlive them.
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
