//! The call path against real misbehaving plugins: each test checks the error
//! kind, that the call returns within its limit plus the grace, and that no
//! process of the plugin survives it.

use crate::util;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plughost::protocol::{Invocation, Scope, Source};
use plughost::{CallError, CallOptions, ErrorKind, Limits, PluginHost, Progress};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use util::{Sandbox, assert_no_processes_in, lingering_zombies};

const TIMEOUT: Duration = Duration::from_millis(800);
const GRACE: Duration = Duration::from_millis(200);

fn host(sandbox: &Sandbox) -> PluginHost {
    PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .reap_orphans(true)
        .limits(Limits {
            timeout: TIMEOUT,
            kill_grace: GRACE,
            ..Limits::default()
        })
        .build()
        .unwrap()
}

/// Calls a fixture tool with a fresh host; returns the result and how long it took.
async fn call_fixture(
    fixture: &str,
    tool: &str,
    input: Value,
) -> (Sandbox, Result<plughost::ToolOutcome, CallError>, Duration) {
    let sandbox = Sandbox::new().with_fixtures(&[fixture]);
    let host = host(&sandbox);
    let start = Instant::now();
    let result = host.call(tool, input, Invocation::default()).await;
    (sandbox, result, start.elapsed())
}

fn kind(r: &Result<plughost::ToolOutcome, CallError>) -> Option<ErrorKind> {
    r.as_ref().err().map(CallError::kind)
}

async fn expect_error(
    fixture: &str,
    tool: &str,
    expected: ErrorKind,
    within: Duration,
) -> CallError {
    let (sandbox, result, took) = call_fixture(fixture, tool, json!({})).await;
    assert_eq!(kind(&result), Some(expected), "{tool}: {result:?}");
    assert!(took < within, "{tool} took {took:?}, limit {within:?}");
    assert_no_processes_in(&sandbox.plugins().join(fixture));
    result.unwrap_err()
}

#[tokio::test]
async fn a_sleeper_times_out_and_its_tree_is_killed() {
    expect_error(
        "slow-sleeper",
        "slow_sleep",
        ErrorKind::Timeout,
        TIMEOUT + GRACE + Duration::from_secs(1),
    )
    .await;
}

#[tokio::test]
async fn a_plugin_that_ignores_sigterm_is_killed_after_the_grace() {
    let e = expect_error(
        "ignores-sigterm",
        "ignore_sigterm",
        ErrorKind::Timeout,
        TIMEOUT + GRACE + Duration::from_secs(1),
    )
    .await;
    assert!(e.to_string().contains("did not answer within"), "{e}");
}

#[tokio::test]
async fn fifty_children_all_die_with_the_timeout() {
    expect_error(
        "many-children",
        "many_children",
        ErrorKind::Timeout,
        TIMEOUT + GRACE + Duration::from_secs(1),
    )
    .await;
}

#[tokio::test]
async fn the_per_tool_timeout_applies() {
    let sandbox = Sandbox::new().with_fixtures(&["tool-timeout"]);
    // A long host default: only the tool's own timeout_secs (1 s) can stop it.
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .limits(Limits {
            kill_grace: GRACE,
            ..Limits::default()
        })
        .build()
        .unwrap();
    let start = Instant::now();
    let r = host
        .call("tool_timeout_sleep", json!({}), Invocation::default())
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_no_processes_in(&sandbox.plugins().join("tool-timeout"));
}

#[tokio::test]
async fn a_stdout_flood_is_cut_at_the_cap() {
    let e = expect_error(
        "stdout-flood",
        "stdout_flood",
        ErrorKind::OutputTooLarge,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("1048576 bytes"), "{e}");
}

#[tokio::test]
async fn a_stderr_flood_is_drained_and_the_answer_kept() {
    let (sandbox, r, _) = call_fixture("stderr-flood", "stderr_flood", json!({})).await;
    let outcome = r.unwrap();
    assert_eq!(outcome.result, "survived stderr flood");
    assert!(
        outcome.stderr_tail.len() <= 64 * 1024 + 100,
        "kept {} bytes",
        outcome.stderr_tail.len()
    );
    assert!(outcome.stderr_tail.contains("omitted"));
    assert_no_processes_in(&sandbox.plugins().join("stderr-flood"));
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hold_the_call() {
    let (sandbox, r, took) =
        call_fixture("grandchild-holds-stdout", "grandchild_stdout", json!({})).await;
    assert_eq!(r.unwrap().result, "answered before grandchild");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_no_processes_in(&sandbox.plugins().join("grandchild-holds-stdout"));
    assert_eq!(lingering_zombies(), Vec::<u32>::new());
}

/// A member of the plugin's group that ignores SIGTERM and takes long to
/// die after SIGKILL (it frees 1.5 GB on the way out): the bounded kill
/// returns before it is gone, and it must still be reaped, never left a
/// zombie under the host.
#[tokio::test]
async fn a_member_that_dies_slowly_is_reaped_after_the_call() {
    let sandbox = Sandbox::new();
    let python = util::real_python3();
    let mut m = util::manifest("slow-death", "slow_death");
    m["tools"][0]["timeout_secs"] = json!(3);
    let dir = sandbox.write_plugin(
        "slow-death",
        &m,
        &format!(
            "#!/bin/sh\ncat >/dev/null\n'{}' -c 'import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); x = b\"a\" * 1_500_000_000; print(\"ready\", flush=True); time.sleep(100)' >&2 &\nsleep 100\n",
            python.display()
        ),
    );
    let host = host(&sandbox);
    let r = host
        .call("slow_death", json!({}), Invocation::default())
        .await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{r:?}");
    assert_no_processes_in(&dir);
    assert_eq!(lingering_zombies(), Vec::<u32>::new());
}

#[tokio::test]
async fn a_plugin_that_never_reads_a_large_input_cannot_deadlock() {
    let big = "x".repeat(10 * 1024 * 1024);
    let sandbox = Sandbox::new().with_fixtures(&["ignores-stdin"]);
    // The fixture sleeps 1 s before answering: give it room. The input is
    // over the default 1 MiB cap on purpose.
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .limits(Limits {
            max_input: 64 << 20,
            ..Limits::default()
        })
        .build()
        .unwrap();
    let start = Instant::now();
    let r = host
        .call(
            "ignore_stdin",
            json!({ "blob": big }),
            Invocation::default(),
        )
        .await;
    let took = start.elapsed();
    assert_eq!(r.unwrap().result, "ignored input");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_no_processes_in(&sandbox.plugins().join("ignores-stdin"));
}

#[tokio::test]
async fn a_plugin_that_exits_before_reading_stdin_still_answers() {
    let big = "y".repeat(4 * 1024 * 1024);
    let sandbox = Sandbox::new().with_fixtures(&["early-exit"]);
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .limits(Limits {
            max_input: 64 << 20,
            ..Limits::default()
        })
        .build()
        .unwrap();
    let r = host
        .call("early_exit", json!({ "blob": big }), Invocation::default())
        .await;
    assert_eq!(r.unwrap().result, "early exit");
}

#[tokio::test]
async fn garbage_two_objects_and_nothing_are_invalid_output() {
    let e = expect_error(
        "invalid-json",
        "invalid_json",
        ErrorKind::InvalidOutput,
        Duration::from_secs(3),
    )
    .await;
    let text = e.to_string();
    assert!(
        text.contains("this is not json"),
        "shows the first bytes: {text}"
    );
    assert!(
        text.contains("about to print garbage"),
        "shows the stderr tail: {text}"
    );
    let e = expect_error(
        "two-json-objects",
        "two_objects",
        ErrorKind::InvalidOutput,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("more than one JSON value"), "{e}");
    let e = expect_error(
        "empty-output",
        "empty_output",
        ErrorKind::InvalidOutput,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("printed nothing"), "{e}");
}

#[tokio::test]
async fn a_nonzero_exit_is_failed_and_keeps_the_plugins_message() {
    let e = expect_error(
        "exit-error-body",
        "exit_error_body",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(
        e.to_string().contains("code 3") && e.to_string().contains("disk on fire"),
        "{e}"
    );
    let e = expect_error(
        "exit-no-body",
        "exit_no_body",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("code 3"), "{e}");
    assert!(e.stderr_tail().unwrap().contains("something broke"));
}

#[tokio::test]
async fn death_by_signal_names_the_signal() {
    let e = expect_error(
        "self-signal",
        "self_sigkill",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("signal 9 (SIGKILL)"), "{e}");
    let e = expect_error(
        "self-signal",
        "self_sigsegv",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("signal 11 (SIGSEGV)"), "{e}");
}

#[tokio::test]
async fn a_missing_interpreter_is_explained() {
    let e = expect_error(
        "missing-interpreter",
        "missing_interpreter",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(e.to_string().contains("nosuchlang-interp"), "{e}");
    let e = expect_error(
        "missing-interpreter-abs",
        "missing_interpreter_abs",
        ErrorKind::Failed,
        Duration::from_secs(3),
    )
    .await;
    assert!(
        e.to_string().contains("interpreter") && e.to_string().contains("does not exist"),
        "{e}"
    );
}

/// An entrypoint still open for writing (a build or a copy finishing) is
/// waited for briefly, not reported: a call that starts meanwhile runs once
/// it is closed. The second call runs in the first one's resident PID
/// namespace where the sandbox has one, which starts the plugin without
/// the host waiting for its `exec`.
#[tokio::test]
async fn an_entrypoint_still_open_for_writing_is_waited_for() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let host = host(&sandbox);
    let call = || host.call("slow_ok", json!({}), Invocation::default());
    assert_eq!(call().await.unwrap().result, "slow ok");
    let main = sandbox.plugins().join("slow-ok/main.sh");
    let writer = std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(40));
        drop(writer);
    });
    let answer = call().await;
    release.join().unwrap();
    assert_eq!(answer.unwrap().result, "slow ok");
}

/// Calls dropped as they start (while a resident PID namespace is being
/// made for them, or handed them) leave no resident taken for good: once
/// the host is dropped, every resident's thread is gone. Run in a process
/// of its own, whose threads are only this test's host's.
#[tokio::test]
async fn calls_dropped_as_they_start_leave_no_resident_behind() {
    const NAME: &str = "executor::calls_dropped_as_they_start_leave_no_resident_behind";
    if std::env::var_os("PLUGHOST_ALONE").is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env("PLUGHOST_ALONE", "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && said.contains("1 passed"), "{said}");
        return;
    }
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let host = Arc::new(host(&sandbox));
    for round in 0..40u64 {
        let calls: Vec<_> = (0..16u64)
            .map(|i| {
                let host = host.clone();
                let wait = Duration::from_micros((round * 16 + i) * 397 % 4000);
                tokio::spawn(async move {
                    let call = host.call("slow_ok", json!({}), Invocation::default());
                    let _ = tokio::time::timeout(wait, call).await;
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap();
        }
    }
    drop(host);
    let residents = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.starts_with("plughost-resid"))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while residents() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        residents(),
        0,
        "residents left after their host was dropped"
    );
}

#[tokio::test]
async fn an_entrypoint_made_non_executable_or_deleted_after_load_is_explained() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let host = host(&sandbox);
    let main = sandbox.plugins().join("slow-ok/main.sh");
    util::write_executable(&main, "#!/bin/sh\necho '{\"result\":\"x\"}'\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&main, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = host
        .call("slow_ok", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Failed);
    // As root, exec of a mode-644 file still fails with EACCES.
    assert!(e.to_string().contains("not executable"), "{e}");
    std::fs::remove_file(&main).unwrap();
    let e = host
        .call("slow_ok", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no longer exists"), "{e}");
}

#[tokio::test]
async fn non_string_results_structured_and_attachments() {
    let sandbox = Sandbox::new().with_fixtures(&["odd-results"]);
    let host = host(&sandbox);
    let o = host
        .call("non_string_result", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(o.result, r#"{"a":1}"#);
    let o = host
        .call("structured_attachments", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(o.structured, Some(json!({"n": 1})));
    let path = o.attachments[0].path.clone().unwrap();
    assert!(
        path.is_absolute() && path.ends_with("data/odd-results/out.png"),
        "{path:?}"
    );
    assert!(path.exists());
}

#[tokio::test]
async fn the_request_carries_the_context_and_the_environment_is_filtered() {
    let sandbox = Sandbox::new().with_fixtures(&["echo-request"]);
    let host = host(&sandbox);
    // The fixture names an environment variable, so it needs approval.
    host.approve("echo-request").await.unwrap();
    let invocation = Invocation {
        request_id: Some("req-1".into()),
        session_id: Some("sess-9".into()),
        actor: Some("alice".into()),
        source: Some(Source::Library),
        scope: Some(Scope::Background),
        trace: None,
    };
    let o = host
        .call("echo_request", json!({"q": "hi"}), invocation)
        .await
        .unwrap();
    let request: Value = serde_json::from_str(&o.result).unwrap();
    assert_eq!(request["tool"], "echo_request");
    assert_eq!(request["input"], json!({"q": "hi"}));
    let ctx = &request["context"];
    let plugin_dir = sandbox
        .plugins()
        .join("echo-request")
        .canonicalize()
        .unwrap();
    assert_eq!(ctx["plugin_dir"], json!(plugin_dir));
    let data_dir = std::path::PathBuf::from(ctx["data_dir"].as_str().unwrap());
    assert!(data_dir.is_dir(), "the data folder exists before the call");
    for (k, v) in [
        ("request_id", "req-1"),
        ("session_id", "sess-9"),
        ("actor", "alice"),
        ("source", "library"),
        ("scope", "background"),
    ] {
        assert_eq!(ctx[k], v, "{k}");
    }

    // SAFETY: set before the call that reads it; these names are used by no other test.
    unsafe {
        std::env::set_var("PLUGHOST_TEST_SECRET_TOKEN", "hunter2");
        std::env::set_var("PLUGHOST_FIXTURE_ALLOWED", "declared");
    }
    let o = host
        .call("echo_env", json!({}), Invocation::default())
        .await
        .unwrap();
    let env: Value = serde_json::from_str(&o.result).unwrap();
    assert!(
        env.get("PLUGHOST_TEST_SECRET_TOKEN").is_none(),
        "a secret leaked: {env}"
    );
    assert_eq!(env["PLUGHOST_FIXTURE_ALLOWED"], "declared");
    assert_eq!(env["PLUGHOST_PLUGIN_DIR"], json!(plugin_dir));
    assert_eq!(env["PLUGHOST_DATA_DIR"], json!(data_dir));
    assert!(env.get("PATH").is_some());
    let tmp = env["TMPDIR"].as_str().unwrap();
    assert!(
        std::fs::read_dir(tmp).map_or(true, |mut d| d.next().is_none()),
        "the private temp folder is emptied after the call"
    );
}

#[tokio::test]
async fn invalid_args_spawn_nothing_and_unknown_tools_get_a_hint() {
    let sandbox = Sandbox::new();
    // The data folder is the one place a sandboxed plugin may write.
    let marker = sandbox.state().join("data/strict/spawned");
    let mut m = util::manifest("strict", "strict_tool");
    m["tools"][0]["input_schema"] = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["name"],
        "additionalProperties": false
    });
    sandbox.write_plugin(
        "strict",
        &m,
        "#!/bin/sh\ntouch \"$PLUGHOST_DATA_DIR/spawned\"\necho '{\"result\":\"ran\"}'\n",
    );
    let host = host(&sandbox);
    let e = host
        .call(
            "strict_tool",
            json!({"n": "x", "extra": 1}),
            Invocation::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    let text = e.to_string();
    assert!(
        text.contains("/n") && text.contains("name") && text.contains("extra"),
        "every violation listed: {text}"
    );
    assert!(!marker.exists(), "nothing was spawned");

    let e = host
        .call("strict_tol", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.to_string().contains("did you mean \"strict_tool\""),
        "{e}"
    );

    assert_eq!(
        host.call("strict_tool", json!({"name": "a"}), Invocation::default())
            .await
            .unwrap()
            .result,
        "ran"
    );
    assert!(marker.exists());
}

#[tokio::test]
async fn cancelling_a_call_kills_its_tree() {
    let sandbox = Sandbox::new().with_fixtures(&["many-children"]);
    let host = host(&sandbox);
    let cancel = CancellationToken::new();
    let call = tokio::spawn(host.call_with(
        "many_children",
        json!({}),
        CallOptions {
            cancel: Some(cancel.clone()),
            ..CallOptions::default()
        },
    ));
    util::wait_for_processes(&sandbox.plugins().join("many-children"), 50).await;
    let start = Instant::now();
    cancel.cancel();
    let r = call.await.unwrap();
    assert_eq!(kind(&r), Some(ErrorKind::Cancelled));
    assert!(start.elapsed() < GRACE + Duration::from_secs(1));
    assert_no_processes_in(&sandbox.plugins().join("many-children"));
}

#[tokio::test]
async fn dropping_the_host_kills_calls_in_flight() {
    let sandbox = Sandbox::new().with_fixtures(&["many-children", "slow-sleeper"]);
    let host = host(&sandbox);
    let a = tokio::spawn(host.call("many_children", json!({}), Invocation::default()));
    let b = tokio::spawn(host.call("slow_sleep", json!({}), Invocation::default()));
    util::wait_for_processes(&sandbox.plugins().join("many-children"), 50).await;
    drop(host);
    assert_eq!(kind(&a.await.unwrap()), Some(ErrorKind::Cancelled));
    assert_eq!(kind(&b.await.unwrap()), Some(ErrorKind::Cancelled));
    assert_no_processes_in(&sandbox.plugins().join("many-children"));
    assert_no_processes_in(&sandbox.plugins().join("slow-sleeper"));
}

#[test]
fn dropping_the_runtime_mid_call_kills_the_tree() {
    let sandbox = Sandbox::new().with_fixtures(&["many-children"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let host = rt.block_on(async { host(&sandbox) });
    let dir = sandbox.plugins().join("many-children");
    rt.spawn(host.call("many_children", json!({}), Invocation::default()));
    rt.block_on(util::wait_for_processes(&dir, 50));
    drop(rt);
    assert_no_processes_in(&dir);
}

#[tokio::test]
async fn progress_reports_reach_the_caller() {
    let sandbox = Sandbox::new().with_fixtures(&["progress-reporter"]);
    let host = host(&sandbox);
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = seen.clone();
    let o = host
        .call_with(
            "report_progress",
            json!({}),
            CallOptions {
                on_progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(o.result, "progress done");
    let seen = seen.lock().unwrap();
    let steps: Vec<(f64, Option<f64>)> = seen.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        steps,
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    assert_eq!(seen[0].message.as_deref(), Some("step one"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_leak_nothing() {
    let sandbox = Sandbox::new().with_fixtures(&["early-exit"]);
    let host = Arc::new(host(&sandbox));
    // The first call opens the folders its sandbox allows, kept for the next.
    host.call("early_exit", json!({}), Invocation::default())
        .await
        .unwrap();
    let fds_before = open_fds();
    let calls: Vec<_> = (0..200)
        .map(|_| tokio::spawn(host.call("early_exit", json!({}), Invocation::default())))
        .collect();
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().result, "early exit");
    }
    assert_no_processes_in(&sandbox.plugins().join("early-exit"));
    assert_eq!(lingering_zombies(), Vec::<u32>::new());
    // Other tests run in this process at the same time, so allow a little slack.
    let fds_after = open_fds();
    assert!(
        fds_after <= fds_before + 20,
        "fds before {fds_before}, after {fds_after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_capped_and_waiters_run_in_order() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let host = Arc::new(
        PluginHost::builder()
            .plugins_dir(sandbox.plugins())
            .state_dir(sandbox.state())
            .concurrency(2)
            .build()
            .unwrap(),
    );
    let start = Instant::now();
    let calls: Vec<_> = (0..6)
        .map(|_| tokio::spawn(host.call("slow_ok", json!({}), Invocation::default())))
        .collect();
    for c in calls {
        c.await.unwrap().unwrap();
    }
    // 6 calls of 0.3 s, 2 at a time: at least 3 rounds.
    assert!(
        start.elapsed() >= Duration::from_millis(850),
        "{:?}",
        start.elapsed()
    );
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_gets_a_private_temp_folder_emptied_afterwards() {
    let sandbox = Sandbox::new();
    // Lists TMPDIR (must be empty), leaves a file in it, and reports where it was.
    sandbox.write_plugin(
        "tmp-user",
        &util::manifest("tmp-user", "tmp_use"),
        "#!/bin/sh\ncat >/dev/null\nn=$(ls -A \"$TMPDIR\" | wc -l)\necho leftover > \"$TMPDIR/f\"\nsleep 0.2\necho \"{\\\"result\\\":\\\"$n $TMPDIR\\\"}\"\n",
    );
    let host = Arc::new(host(&sandbox));
    let calls: Vec<_> = (0..4)
        .map(|_| tokio::spawn(host.call("tmp_use", json!({}), Invocation::default())))
        .collect();
    let mut dirs = Vec::new();
    for c in calls {
        let result = c.await.unwrap().unwrap().result;
        let (seen, dir) = result.split_once(' ').unwrap();
        assert_eq!(seen, "0", "a call never sees another call's files");
        dirs.push(dir.to_owned());
    }
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 4, "concurrent calls never share a temp folder");
    let again = host
        .call("tmp_use", json!({}), Invocation::default())
        .await
        .unwrap();
    assert!(again.result.starts_with("0 "), "{}", again.result);
}

/// A plugin cannot have the host read, on its behalf, a file it may not read
/// itself: without filesystem:read, attachments must be its own files.
#[tokio::test]
async fn attachments_outside_the_plugins_own_folders_are_refused() {
    let sandbox = Sandbox::new();
    let secret = sandbox.root.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();
    let attach = |path: &str| {
        format!(
            "#!/bin/sh\ncat >/dev/null\nln -sf '{}' \"$PLUGHOST_DATA_DIR/link\" 2>/dev/null\necho own > \"$PLUGHOST_DATA_DIR/own.txt\"\necho '{{\"result\":\"see file\",\"attachments\":[{{\"media_type\":\"file\",\"path\":\"{path}\"}}]}}'\n",
            secret.display()
        )
    };
    for (path, allowed) in [
        (secret.display().to_string(), false),
        ("../../../secret.txt".to_owned(), false),
        ("link".to_owned(), false),
        ("own.txt".to_owned(), true),
    ] {
        let name = "attacher";
        sandbox.write_plugin(name, &util::manifest(name, "attach_file"), &attach(&path));
        let host = host(&sandbox);
        let r = host
            .call("attach_file", json!({}), Invocation::default())
            .await;
        if allowed {
            let outcome = r.unwrap();
            assert_eq!(
                outcome.attachments[0].size,
                Some(4),
                "the size is filled in"
            );
        } else {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOutput, "{path}: {e}");
            // A link in the data folder is refused as a link, never followed.
            let why = match path.as_str() {
                "link" => "is a symbolic link",
                _ => "outside the plugin's data folder",
            };
            assert!(e.to_string().contains(why), "{e}");
        }
    }
}
