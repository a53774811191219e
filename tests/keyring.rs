//! Secrets kept in the system keyring: a Secret Service of the test's own
//! (GNOME Keyring on a private session bus). A value set there is in the
//! keyring and never in plughost's record; brokered and `env` secrets reach
//! their plugins from it; `rm` deletes it; a locked or unreachable keyring
//! withholds the secret and says what to do, never falling back unasked.

use std::process::Command;

use serde_json::json;

use crate::brokered::{self, Level, VALUE};
use crate::mcp_client;
use crate::util::{self, keyring::Keyring};

fn prerequisites() -> bool {
    brokered::prerequisites()
        && util::prerequisite(
            "dbus-daemon, dbus-send, gnome-keyring-daemon and secret-tool (.ci/run installs them)",
            util::keyring::available(),
        )
}

/// A plugin `envp` that answers the `TOKEN` it was given, a worker.
fn env_plugin(s: &brokered::Setup) {
    let dir = s.sandbox.plugins().join("envp");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "name": "envp", "version": "1.0.0", "description": "Says its token.",
        "entrypoint": "main.sh", "permissions": [], "env": ["TOKEN"],
        "persistent": {},
        "tools": [{"name": "token", "description": "Its token.", "input_schema": {"type": "object"}}]
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    util::write_executable(
        &dir.join("main.sh"),
        "#!/bin/sh\nwhile read -r line; do printf '{\"result\": \"%s\"}\\n' \"$TOKEN\"; done\n",
    );
}

fn run(s: &brokered::Setup, args: &[&str]) -> std::process::Output {
    let mut c = s.cmd();
    c.args(args);
    util::run(c)
}

fn set(c: Command, value: &str) -> std::process::Output {
    util::run_input(c, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_the_keyring_reaches_its_plugins_and_never_plughosts_record() {
    if !prerequisites() {
        return;
    }
    let s = brokered::setup_with(Level::Namespace, false, Some(Keyring::start()));
    let keyring = s.keyring.as_ref().unwrap();
    let state = std::path::absolute(s.sandbox.state()).unwrap();
    let record = || std::fs::read_to_string(state.join("secrets.json")).unwrap();
    assert!(
        !record().contains(VALUE),
        "the record holds no value: {}",
        record()
    );
    assert!(record().contains("\"sealed\""), "{}", record());
    // The keyring holds the store's key alone, never the value.
    assert_eq!(keyring.lookup(&state, "API_TOKEN"), None);
    let key = keyring.lookup(&state, "plughost store key").unwrap();
    assert!(
        key.len() == 64 && key.chars().all(|c| c.is_ascii_hexdigit()),
        "{key}"
    );
    let listed = util::stdout(&run(&s, &["secret", "list"]));
    assert!(listed.contains("API_TOKEN  broker  (sealed)"), "{listed}");
    let doctor = util::stdout(&run(&s, &["doctor"]));
    assert!(
        doctor.contains("1 sealed with the keyring's key"),
        "{doctor}"
    );
    assert!(
        doctor.contains("new secrets are sealed with the keyring's key"),
        "{doctor}"
    );

    // An authority made where no keyring answered (a call whose secret
    // therefore cannot be placed) keeps its key in ca.key...
    let api = s.api("/");
    let mut c = s.cmd();
    util::away_from_the_keyring(&mut c, s.sandbox.root.path());
    c.args(["--json", "call", "broker"])
        .arg(s.input(json!([["curl", api]])).to_string());
    let out = util::run(c);
    assert!(
        util::stdout(&out).contains("401 unauthorised"),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let egress = state.join("egress");
    assert!(egress.join("ca.key").exists());
    let ca_pem = std::fs::read_to_string(egress.join("ca.pem")).unwrap();

    // Brokered: placed from the keyring; the plugin holds the placeholder.
    let got = s.call(json!([["curl", api], ["env"]]));
    assert_eq!(got[0], "200 authorised");
    assert!(
        got[1].starts_with("plughost-placeholder-API_TOKEN-"),
        "{got:?}"
    );
    // ...and is sealed with the keyring's key once one answers, with its
    // certificate: ca.key is gone, ca.pem is the same.
    assert!(!egress.join("ca.key").exists(), "the key left the disk");
    let sealed = std::fs::read_to_string(egress.join("ca.key.sealed")).unwrap();
    assert!(!sealed.contains("PRIVATE KEY"), "{sealed}");
    assert_eq!(
        std::fs::read_to_string(egress.join("ca.pem")).unwrap(),
        ca_pem
    );

    // An `env` secret, to a worker of one serve: a value set again in the
    // keyring starts a new worker with it.
    env_plugin(&s);
    let set_token = |value: &str, more: &[&str]| {
        let mut c = s.cmd();
        c.args(["secret", "set", "TOKEN", "--plugin", "envp"])
            .args(more);
        set(c, value)
    };
    let out = set_token("first-value", &[]);
    assert!(
        util::stdout(&out).contains("sealed with the keyring's key"),
        "{}",
        util::stderr(&out)
    );
    assert!(run(&s, &["approve", "envp", "--yes"]).status.success());
    let mut serve = s.cmd();
    serve.arg("serve");
    let session = mcp_client::connect_command(serve.into(), None).await;
    let token = async || {
        let r = session
            .client
            .call_tool(mcp_client::call("token", json!({})))
            .await
            .unwrap();
        mcp_client::text(&r)
    };
    assert_eq!(token().await, "first-value");
    assert!(set_token("second-value", &[]).status.success());
    assert_eq!(
        token().await,
        "second-value",
        "a new value reaches a new worker"
    );
    let _ = session.client.cancel().await;

    // rm forgets it; the next request goes unauthorised.
    assert!(run(&s, &["secret", "rm", "API_TOKEN"]).status.success());
    assert!(!record().contains("API_TOKEN"));
    assert_eq!(s.call(json!([["curl", s.api("/")]]))[0], "401 unauthorised");

    // Unreachable (plughost run where no session bus is): withheld, said.
    let call_token = |mut c: Command| {
        c.args(["--json", "call", "token", "{}"]);
        let out = util::run(c);
        (
            util::stdout(&out) + &util::stderr(&out),
            out.status.success(),
        )
    };
    let (said, ok) = call_token(s.sandbox.cmd());
    assert!(!ok, "{said}");
    assert!(
        said.contains("TOKEN is sealed with the keyring's key, but the keyring cannot be reached")
            && said.contains("run plughost where it reaches the keyring"),
        "{said}"
    );
    assert!(!said.contains("second-value"), "{said}");

    // Locked: withheld and said; a set does not fall back to the file
    // unasked, and goes there when asked.
    keyring.lock();
    let (said, ok) = call_token(s.cmd());
    assert!(!ok && !said.contains("second-value"), "{said}");
    assert!(
        said.contains("the keyring is locked; no plugin gets it until"),
        "{said}"
    );
    let mut c = s.cmd();
    c.args(["secret", "set", "OTHER"]);
    let out = set(c, "v");
    assert!(!out.status.success());
    assert!(
        util::stderr(&out).contains("--in file"),
        "{}",
        util::stderr(&out)
    );
    assert!(!record().contains("OTHER"));
    let out = set_token("third-value", &["--in", "file"]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    assert!(record().contains("third-value"));
    let (said, ok) = call_token(s.cmd());
    assert!(ok && said.contains("third-value"), "{said}");

    // Hung (the service holds its name and answers nothing): a set fails
    // within the calls' bound and says so, never falling back to the file;
    // a secret in the file is still given.
    keyring.freeze();
    let started = std::time::Instant::now();
    let mut c = s.cmd();
    c.args(["secret", "set", "LATER"]);
    let out = set(c, "v");
    let took = started.elapsed();
    assert!(!out.status.success());
    assert!(
        util::stderr(&out).contains("the keyring failed: it did not answer within 5 s"),
        "{}",
        util::stderr(&out)
    );
    assert!(!record().contains("LATER"));
    assert!(took < std::time::Duration::from_secs(12), "took {took:?}");
    let (said, ok) = call_token(s.cmd());
    assert!(ok && said.contains("third-value"), "{said}");
}

/// The same for an unprivileged user, whose desktop session is where a
/// keyring is: plughost, its bus and its keyring all run as `nobody`.
#[test]
fn an_unprivileged_user_seals_the_same() {
    if !prerequisites() {
        return;
    }
    let s = brokered::setup_with(Level::Unprivileged, false, Some(Keyring::start_as_nobody()));
    let keyring = s.keyring.as_ref().unwrap();
    let state = std::path::absolute(s.sandbox.state()).unwrap();
    let record = std::fs::read_to_string(state.join("secrets.json")).unwrap();
    assert!(
        record.contains("\"sealed\"") && !record.contains(VALUE),
        "{record}"
    );
    assert_eq!(keyring.lookup(&state, "API_TOKEN"), None);
    assert!(keyring.lookup(&state, "plughost store key").is_some());
    let got = s.call(json!([["curl", s.api("/")], ["env"]]));
    assert_eq!(got[0], "200 authorised");
    assert!(
        got[1].starts_with("plughost-placeholder-API_TOKEN-"),
        "{got:?}"
    );
    assert!(state.join("egress/ca.key.sealed").exists());
    assert!(!state.join("egress/ca.key").exists());
}
