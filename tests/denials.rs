//! Denials, named: a call that fails after the plugin was refused a read, a
//! write or a connection its grants do not reach says so, as the plugin's
//! report (plughost did not see the refusal, see `words.rs`), with the
//! grant that allows it; `doctor NAME` lists the recent ones apart from the
//! sandbox's own records; a failure the grants do not explain names none,
//! even when the plugin says "Permission denied".

use serde_json::Value;

use crate::util::{self, Sandbox};

fn landlock() -> bool {
    util::prerequisite(
        "Landlock (file system confinement)",
        plughost::sandbox::SandboxSupport::here().filesystem,
    )
}

/// A plugin whose entrypoint runs `script` (after reading its request).
fn plugin(sandbox: &Sandbox, name: &str, script: &str) {
    let tool = name.replace('-', "_");
    sandbox.write_plugin(
        name,
        &util::manifest(name, &tool),
        &format!("#!/bin/sh\ncat >/dev/null\n{script}\n"),
    );
}

fn call_json(sandbox: &Sandbox, tool: &str) -> Value {
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["--json", "call", tool, "{}"]);
        c
    });
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", util::stdout(&out)))
}

#[test]
fn a_refused_read_is_named_with_the_grant_that_allows_it() {
    if !landlock() {
        return;
    }
    let sandbox = Sandbox::new();
    let secret = sandbox.root.path().join("elsewhere/config.toml");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "x = 1").unwrap();
    plugin(
        &sandbox,
        "reads-config",
        &format!("cat '{}' || exit 3", secret.display()),
    );
    let v = call_json(&sandbox, "reads_config");
    let message = v["error"]["message"].as_str().unwrap();
    assert_eq!(v["error"]["kind"], "failed", "{v:#}");
    let real = secret.canonicalize().unwrap();
    assert!(
        message.contains(&format!(
            "the plugin reported a permission error reading {}, which its grants do not reach; if it needs it, grant \"filesystem:read:{}\"",
            real.display(),
            real.display()
        )) && !message.contains("sandbox refused"),
        "{message}"
    );
    // doctor NAME lists it, as the plugin's report.
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["doctor", "reads-config"]);
        c
    });
    let text = util::stdout(&out);
    assert!(
        text.contains("no recent sandbox denials")
            && text.contains("permission errors the plugin reported")
            && text.contains(&real.display().to_string()),
        "{text}"
    );
}

#[test]
fn a_refused_write_is_named_with_the_folder_to_grant() {
    if !landlock() {
        return;
    }
    let sandbox = Sandbox::new();
    let folder = sandbox.root.path().join("reports");
    std::fs::create_dir_all(&folder).unwrap();
    let target = folder.join("out.txt");
    plugin(
        &sandbox,
        "writes-report",
        &format!("echo hi > '{}' || exit 3", target.display()),
    );
    let v = call_json(&sandbox, "writes_report");
    let message = v["error"]["message"].as_str().unwrap();
    let folder = folder.canonicalize().unwrap();
    assert!(
        message.contains("the plugin reported a permission error writing")
            && message.contains(&format!(
                "if it needs it, grant \"filesystem:write:{}\"",
                folder.display()
            )),
        "{message}"
    );
}

/// A plugin that writes into its own folder (as a package that keeps its
/// file next to its code does) is told that no grant reaches plughost's
/// plugins folder and where to write instead, not given a grant that would
/// not work.
#[test]
fn a_refused_write_into_the_plugins_folder_names_no_grant() {
    if !landlock() {
        return;
    }
    let sandbox = Sandbox::new();
    plugin(
        &sandbox,
        "keeps-file",
        "echo hi > \"$(dirname \"$0\")/memory.jsonl\" || exit 3",
    );
    let v = call_json(&sandbox, "keeps_file");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    let folder = sandbox.plugins().canonicalize().unwrap();
    assert!(
        message.contains(&format!(
            "the plugin reported a permission error writing {}/keeps-file/memory.jsonl, which its grants do not reach, plughost's plugins, binary or configuration ({}): no grant reaches it; a plugin keeps what it writes in its data folder ($PLUGHOST_DATA_DIR)",
            folder.display(),
            folder.display()
        )) && !message.contains("grant \"filesystem"),
        "{v:#}"
    );
}

/// A plugin with no network grant connects to a listener on loopback (Node
/// says `connect EACCES 127.0.0.1:PORT`) and looks a name up (`getaddrinfo
/// EAI_AGAIN`): both are named with the `network:` grant. Without the
/// sandbox, the same plugin reaches the listener.
#[test]
fn a_refused_connection_and_name_lookup_are_named_with_the_host_grant() {
    let support = plughost::sandbox::SandboxSupport::here();
    if !util::prerequisite(
        "Landlock TCP rules and seccomp filters",
        support.network_tcp && support.network_sockets,
    ) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sandbox = Sandbox::new();
    let script = |target: &str| {
        format!(
            "#!/usr/bin/env node\n\
             process.stdin.resume(); process.stdin.on('end', () => {{ {target}\n\
             .then(() => {{ console.log(JSON.stringify({{result: 'reached'}})); }})\n\
             .catch(e => {{ console.error('Error: ' + e.message); process.exit(3); }}); }});\n"
        )
    };
    let connect = format!(
        "new Promise((ok, no) => require('net').connect({port}, '127.0.0.1').on('connect', function () {{ this.destroy(); ok(); }}).on('error', no))"
    );
    // The entrypoint is a Node script (its name is the manifest's `main.sh`).
    let write_js = |body: String| {
        sandbox.write_plugin(
            "dials-out",
            &util::manifest("dials-out", "dials_out"),
            &body,
        );
    };
    write_js(script(&connect));
    let v = call_json(&sandbox, "dials_out");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "the plugin reported a permission error connecting to 127.0.0.1:{port}, which its grants do not reach; if it needs it, grant \"network:127.0.0.1:{port}\""
        )),
        "{v:#}"
    );
    write_js(script(
        "require('dns').promises.lookup('api.example.invalid')",
    ));
    let v = call_json(&sandbox, "dials_out");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the plugin reported a permission error connecting to api.example.invalid, which its grants do not reach (looking a name up needs the network); if it needs it, grant \"network:api.example.invalid\""),
        "{v:#}"
    );
    // The same plugin unconfined reaches the listener: the refusal was the sandbox's.
    write_js(script(&connect));
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["--no-sandbox", "--json", "call", "dials_out", "{}"]);
        c
    });
    assert!(
        util::stdout(&out).contains("reached"),
        "{}",
        util::stdout(&out)
    );
}

/// The plugin says "Permission denied" about a path the sandbox lets it
/// read, and fails on a file that does not exist: neither is the sandbox's.
#[test]
fn a_failure_the_sandbox_did_not_cause_names_no_denial() {
    let sandbox = Sandbox::new();
    plugin(
        &sandbox,
        "fails-alone",
        "echo 'cannot run /usr/bin/env: Permission denied' >&2; cat /nonexistent/file; exit 3",
    );
    let v = call_json(&sandbox, "fails_alone");
    let message = v["error"]["message"].as_str().unwrap();
    assert_eq!(v["error"]["kind"], "failed", "{v:#}");
    assert!(
        !message.contains("sandbox refused") && !message.contains("reported a permission"),
        "{message}"
    );
    assert!(
        !sandbox.state().join("denials/fails-alone.json").exists(),
        "nothing recorded"
    );
}
