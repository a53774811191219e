//! Persistent workers against real worker processes: state kept across calls,
//! every per-call limit per request, a fresh worker after any failure, the
//! pool's bounds, reload, idle stop and shutdown, checked in /proc.

use crate::util;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plughost::events::HostEvent;
use plughost::events::{Notice, WorkerStop};
use plughost::protocol::Invocation;
use plughost::{CallError, CallOptions, ErrorKind, Limits, PluginHost, Progress, ToolOutcome};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use util::{Sandbox, assert_no_processes_in, processes_in};

const PLUGIN: &str = "worker-counter";

fn host_with(sandbox: &Sandbox, timeout: Duration) -> PluginHost {
    PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .reap_orphans(true)
        .limits(Limits {
            timeout,
            kill_grace: Duration::from_millis(200),
            ..Limits::default()
        })
        .build()
        .unwrap()
}

fn setup() -> (Sandbox, PluginHost) {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let host = host_with(&sandbox, Duration::from_secs(10));
    (sandbox, host)
}

async fn call(host: &PluginHost, tool: &str, input: Value) -> Result<ToolOutcome, CallError> {
    host.call(tool, input, Invocation::default()).await
}

/// (count, pid) from `worker_count`, the pid as the host names it.
async fn count(host: &PluginHost) -> (u64, u64) {
    let o = call(host, "worker_count", json!({})).await.unwrap();
    let s = o.structured.unwrap();
    let pid = host_pid(s["tmpdir"].as_str().unwrap());
    (s["count"].as_u64().unwrap(), pid)
}

/// The pid of the worker whose temp folder is `tmpdir`, as the host names
/// it. The worker cannot say: in its PID namespace it is process 2, and its
/// `/proc` is that namespace's. Its temp folder is its own: the one process
/// running `main.py` with that `TMPDIR` is it.
fn host_pid(tmpdir: &str) -> u64 {
    let env = format!("TMPDIR={tmpdir}\0").into_bytes();
    let holds = |text: &[u8], part: &[u8]| text.windows(part.len()).any(|w| w == part);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u64>().ok()?;
            let environ = std::fs::read(e.path().join("environ")).ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (holds(&environ, &env) && holds(&cmdline, b"main.py")).then_some(pid)
        })
        .next()
        .unwrap_or_else(|| panic!("no worker runs with TMPDIR={tmpdir}"))
}

fn dir(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.plugins().join(PLUGIN)
}

/// Waits for an event matching `pick`, up to a deadline.
async fn wait_event<T>(
    rx: &mut broadcast::Receiver<HostEvent>,
    mut pick: impl FnMut(&HostEvent) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Ok(e)) => {
                if let Some(t) = pick(&e) {
                    return t;
                }
            }
            other => panic!("no matching event: {other:?}"),
        }
    }
}

#[tokio::test]
async fn one_worker_keeps_its_state_across_calls() {
    let (sandbox, host) = setup();
    let mut rx = host.events();
    let (c1, pid) = count(&host).await;
    let (c2, pid2) = count(&host).await;
    let (c3, pid3) = count(&host).await;
    assert_eq!((c1, c2, c3), (1, 2, 3));
    assert_eq!(
        (pid, pid),
        (pid2, pid3),
        "the same process served all three"
    );
    let started = wait_event(&mut rx, |e| match e {
        HostEvent::WorkerStarted { plugin, worker } => Some((plugin.clone(), *worker)),
        _ => None,
    })
    .await;
    assert_eq!(started, (PLUGIN.to_owned(), pid as u32));
    let o = call(&host, "worker_count", json!({})).await.unwrap();
    let s = o.structured.unwrap();
    assert_eq!(s["persistent"], "1", "workers get PLUGHOST_PERSISTENT=1");
    let tmp = s["tmpdir"].as_str().unwrap();
    assert!(std::path::Path::new(tmp).is_dir(), "TMPDIR {tmp} exists");
    assert_eq!(o.exit_code, None, "a worker's answer has no exit code");
    assert_eq!(host.workers()[PLUGIN].len(), 1);
    let loads = host.worker_loads();
    let load = loads.iter().find(|l| l.plugin == PLUGIN).expect("its load");
    assert_eq!(
        (load.running, load.busy, load.starting, load.backing_off),
        (1, 0, 0, false),
        "one worker, idle between calls: {loads:?}"
    );
    drop(host);
    assert_no_processes_in(&dir(&sandbox));
    assert!(
        !std::path::Path::new(tmp).exists(),
        "the worker's TMPDIR is removed"
    );
}

#[tokio::test]
async fn each_request_carries_its_own_context() {
    let (_sandbox, host) = setup();
    let mut ids = Vec::new();
    for n in 0..2 {
        let o = host
            .call(
                "worker_count",
                json!({}),
                Invocation {
                    request_id: Some(format!("req-{n}")),
                    ..Invocation::default()
                },
            )
            .await
            .unwrap();
        ids.push(o.structured.unwrap()["request_id"].clone());
    }
    assert_eq!(ids, [json!("req-0"), json!("req-1")]);
}

#[tokio::test]
async fn a_timeout_kills_the_worker_tree_and_the_next_call_starts_fresh() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let host = host_with(&sandbox, Duration::from_millis(800));
    let (_, pid) = count(&host).await;
    let started = Instant::now();
    let err = call(&host, "worker_hang", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_no_processes_in(&dir(&sandbox));
    let (c, pid2) = count(&host).await;
    assert_eq!(c, 1, "state is reset: a fresh worker");
    assert_ne!(pid, pid2);
}

#[tokio::test]
async fn cancelling_a_call_kills_the_worker_tree() {
    let (sandbox, host) = setup();
    let cancel = CancellationToken::new();
    let call = host.call_with(
        "worker_hang",
        json!({}),
        CallOptions {
            cancel: Some(cancel.clone()),
            ..CallOptions::default()
        },
    );
    let task = tokio::spawn(call);
    util::wait_for_processes(&dir(&sandbox), 2).await;
    cancel.cancel();
    let err = task.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    assert_no_processes_in(&dir(&sandbox));
    assert_eq!(count(&host).await.0, 1);
}

#[tokio::test]
async fn a_worker_that_exits_mid_call_fails_that_call_with_its_stderr() {
    let (sandbox, host) = setup();
    count(&host).await;
    let err = call(&host, "worker_crash", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed, "{err}");
    assert!(
        err.to_string().contains("exited with code 3"),
        "the exit code is named: {err}"
    );
    assert_eq!(err.exit_code(), Some(3));
    assert!(
        err.stderr_tail().unwrap().contains("crashing on purpose"),
        "{err:?}"
    );
    assert_eq!(count(&host).await.0, 1, "a fresh worker");
    drop(host);
    assert_no_processes_in(&dir(&sandbox));
}

#[tokio::test]
async fn two_lines_or_garbage_are_invalid_output_and_the_worker_is_replaced() {
    let (_sandbox, host) = setup();
    for tool in ["worker_two_lines", "worker_garbage"] {
        let (_, pid) = count(&host).await;
        let err = call(&host, tool, json!({})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidOutput, "{tool}: {err}");
        let (c, pid2) = count(&host).await;
        assert_eq!(c, 1, "{tool}: replaced by a fresh worker");
        assert_ne!(pid, pid2);
    }
}

#[tokio::test]
async fn a_line_that_never_ends_is_cut_at_the_cap_with_memory_flat() {
    let (sandbox, host) = setup();
    let before = util::vm_hwm_kib();
    let err = call(&host, "worker_flood", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutputTooLarge, "{err}");
    let grew = util::vm_hwm_kib().saturating_sub(before);
    assert!(grew < 32 * 1024, "peak memory grew by {grew} KiB");
    assert_no_processes_in(&dir(&sandbox));
    assert_eq!(count(&host).await.0, 1);
}

#[tokio::test]
async fn progress_arrives_before_the_answer() {
    let (_sandbox, host) = setup();
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let o = host
        .call_with(
            "worker_progress",
            json!({}),
            CallOptions {
                on_progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap();
    // Taken the moment the call returns: nothing may still be on its way.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(o.result, "progress done");
    let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn stderr_is_kept_per_call() {
    let (_sandbox, host) = setup();
    let first = call(&host, "worker_stderr", json!({})).await.unwrap();
    let second = call(&host, "worker_stderr", json!({})).await.unwrap();
    assert_eq!(second.result, "call 2");
    assert!(first.stderr_tail.contains("call 1 says hello"));
    assert!(second.stderr_tail.contains("call 2 says hello"));
    assert!(
        !second.stderr_tail.contains("call 1"),
        "{:?}",
        second.stderr_tail
    );
}

#[tokio::test]
async fn eight_concurrent_calls_never_run_more_than_max_workers() {
    let (sandbox, host) = setup();
    let host = Arc::new(host);
    let mut calls = Vec::new();
    for _ in 0..8 {
        let call = host.call("worker_nap", json!({"secs": 0.3}), Invocation::default());
        calls.push(tokio::spawn(call));
    }
    let mut most = 0;
    while calls.iter().any(|c| !c.is_finished()) {
        most = most.max(processes_in(&dir(&sandbox)).len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Each worker answers with its temp folder, its own.
    let mut workers = std::collections::BTreeSet::new();
    for c in calls {
        workers.insert(c.await.unwrap().unwrap().result);
    }
    assert!(workers.len() <= 2, "served by {workers:?}");
    assert!(
        most <= 2,
        "{most} worker processes at once (max_workers is 2)"
    );
    assert!(most >= 1);
}

#[tokio::test]
async fn an_edited_script_is_served_by_the_next_call() {
    let (sandbox, host) = setup();
    let (_, old_pid) = count(&host).await;
    let main = dir(&sandbox).join("main.py");
    let text = std::fs::read_to_string(&main).unwrap().replace(
        "answer({\"result\": str(count),",
        "answer({\"result\": \"edited \" + str(count),",
    );
    std::fs::write(&main, text).unwrap();
    let mut rx = host.events();
    host.reload_folders(vec![PLUGIN.to_owned()]);
    let reason = wait_event(&mut rx, |e| match e {
        HostEvent::WorkerStopped { worker, reason, .. } if u64::from(*worker) == old_pid => {
            Some(reason.clone())
        }
        _ => None,
    })
    .await;
    assert_eq!(reason, WorkerStop::PluginChanged);
    let o = call(&host, "worker_count", json!({})).await.unwrap();
    assert_eq!(o.result, "edited 1");
}

#[tokio::test]
async fn an_idle_worker_is_stopped_after_its_timeout() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let manifest = dir(&sandbox).join("plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["persistent"]["idle_timeout_secs"] = json!(1);
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let host = host_with(&sandbox, Duration::from_secs(10));
    let mut rx = host.events();
    let (_, pid) = count(&host).await;
    let started = Instant::now();
    let (worker, reason, calls) = wait_event(&mut rx, |e| match e {
        HostEvent::WorkerStopped {
            worker,
            reason,
            calls,
            ..
        } => Some((*worker, reason.clone(), *calls)),
        _ => None,
    })
    .await;
    assert_eq!(
        (u64::from(worker), reason, calls),
        (pid, WorkerStop::Idle { secs: 1 }, 1)
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_no_processes_in(&dir(&sandbox));
    assert!(host.workers().is_empty());
}

#[tokio::test]
async fn a_worker_that_dies_at_start_up_is_retried_with_backoff_and_reported_once() {
    let sandbox = Sandbox::new().with_fixtures(&["worker-dies-at-start"]);
    let host = host_with(&sandbox, Duration::from_secs(10));
    let mut rx = host.events();
    let err = call(&host, "dies_at_start", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string()
            .contains("exited with code 1 before answering"),
        "{err}"
    );
    assert!(err.stderr_tail().unwrap().contains("missing configuration"));
    // At once again: refused without starting it, saying when it retries.
    let started = Instant::now();
    let err = call(&host, "dies_at_start", json!({})).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(200));
    assert!(err.to_string().contains("next start is in"), "{err}");
    // After the backoff (250 ms, then doubling) it is tried again.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let err = call(&host, "dies_at_start", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("before answering"), "{err}");
    let err = call(&host, "dies_at_start", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("2 times in a row"), "{err}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let err = call(&host, "dies_at_start", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("before answering"), "{err}");
    let mut notices = 0;
    let mut worker_starts = 0;
    while let Ok(e) = rx.try_recv() {
        match e {
            HostEvent::Notice(Notice::WorkerBackoff { .. }) => notices += 1,
            HostEvent::WorkerStarted { .. } => worker_starts += 1,
            _ => {}
        }
    }
    assert_eq!(notices, 1, "one report per streak");
    assert_eq!(
        worker_starts, 3,
        "started only when a call came after the backoff"
    );
    assert_no_processes_in(&sandbox.plugins().join("worker-dies-at-start"));
}

#[tokio::test]
async fn revoking_stops_the_workers_before_any_further_call() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let manifest = dir(&sandbox).join("plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["permissions"] = json!(["network"]);
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let host = host_with(&sandbox, Duration::from_secs(10));
    host.approve(PLUGIN).await.unwrap();
    count(&host).await;
    assert!(!processes_in(&dir(&sandbox)).is_empty());
    assert!(host.revoke(PLUGIN).unwrap());
    assert_no_processes_in(&dir(&sandbox));
    let err = call(&host, "worker_count", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAllowed);
}

/// A worker granted `network` while a revoke comes from another `plughost`
/// process: the host notices the approvals file changed and kills the
/// worker within a second, without waiting for a call or the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_from_another_process_stops_the_worker_within_a_second() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let manifest = dir(&sandbox).join("plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["permissions"] = json!(["network"]);
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let host = host_with(&sandbox, Duration::from_secs(10));
    host.approve(PLUGIN).await.unwrap();
    let mut events = host.events();
    count(&host).await;
    assert!(!processes_in(&dir(&sandbox)).is_empty());
    let mut revoke = sandbox.cmd();
    revoke.args(["revoke", PLUGIN]);
    let out = util::run(revoke);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let revoked = Instant::now();
    let deadline = revoked + Duration::from_secs(3);
    while !processes_in(&dir(&sandbox)).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_no_processes_in(&dir(&sandbox));
    assert!(
        revoked.elapsed() < Duration::from_millis(1500),
        "the worker stopped {:?} after the revoke",
        revoked.elapsed()
    );
    wait_event(&mut events, |e| {
        matches!(e, HostEvent::ApprovalRevoked { plugin } if plugin == PLUGIN).then_some(())
    })
    .await;
    let err = call(&host, "worker_count", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAllowed);
}

/// Calls through the CLI, each its own `plughost` process, leave nothing in
/// the state folder's `tmp`: a worker's temp folder and the folders that held
/// it go with the process.
#[test]
fn cli_calls_of_a_persistent_plugin_leave_no_temp_folders() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    for _ in 0..3 {
        let mut c = sandbox.cmd();
        c.args(["call", "worker_count", "{}"]);
        let out = util::run(c);
        assert!(out.status.success(), "{}", util::stderr(&out));
    }
    let tmp = sandbox.state().join("tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", tmp.display());
}

/// A host killed without a chance to clean up leaves `STATE/tmp/PID`; the
/// next host removes the folders of hosts that no longer run.
#[test]
fn the_temp_folders_of_a_host_that_died_are_removed_by_the_next() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    // A pid that is not running: a child that has exited and been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = sandbox
        .state()
        .join("tmp")
        .join(dead.to_string())
        .join(PLUGIN)
        .join("7");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("left.txt"), "x").unwrap();
    let mut c = sandbox.cmd();
    c.args(["call", "worker_count", "{}"]);
    let out = util::run(c);
    assert!(out.status.success(), "{}", util::stderr(&out));
    assert!(
        !sandbox.state().join("tmp").join(dead.to_string()).exists(),
        "the dead host's folder was removed"
    );
}

#[tokio::test]
async fn stop_workers_closes_stdin_and_waits() {
    let (sandbox, host) = setup();
    let mut rx = host.events();
    count(&host).await;
    host.stop_workers().await;
    assert!(
        processes_in(&dir(&sandbox)).is_empty(),
        "gone when it returns"
    );
    let reason = wait_event(&mut rx, |e| match e {
        HostEvent::WorkerStopped { reason, .. } => Some(reason.clone()),
        _ => None,
    })
    .await;
    assert_eq!(reason, WorkerStop::AskedToStop);
    assert_eq!(
        count(&host).await.0,
        1,
        "the next call starts a fresh worker"
    );
}

#[tokio::test]
async fn metrics_and_the_audit_log_name_the_worker() {
    let sandbox = Sandbox::new().with_fixtures(&[PLUGIN]);
    let log = sandbox.root.path().join("audit.jsonl");
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .audit_log(&log, false)
        .build()
        .unwrap();
    let (_, pid) = count(&host).await;
    call(&host, "worker_crash", json!({})).await.unwrap_err();
    count(&host).await;
    let stats = &host.worker_metrics()[PLUGIN];
    assert_eq!(stats.started, 2);
    assert_eq!(stats.stopped["it exited before answering"], 1);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["worker"], json!(pid));
    assert_eq!(
        lines[1]["worker"],
        json!(pid),
        "the worker that failed the call"
    );
    assert_ne!(lines[2]["worker"], json!(pid));
}
