//! Hooks, metrics, the audit log and the call policy, against real plugins.

use crate::util;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use plughost::Policy;
use plughost::events::HostEvent;
use plughost::observe::AuditRecord;
use plughost::observe::Observer;
use plughost::observe::{CallInfo, CallSummary, Interests, ObserverResult};
use plughost::protocol::Invocation;
use plughost::{CallError, ErrorKind, PluginHost, Progress, ToolOutcome};
use serde_json::json;
use util::Sandbox;

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Observer for Recorder {
    fn event(&self, event: &HostEvent) -> ObserverResult {
        if let HostEvent::PluginAdded {
            plugin, version, ..
        }
        | HostEvent::PluginUpdated {
            plugin,
            new_version: version,
            ..
        } = event
        {
            self.seen
                .lock()
                .unwrap()
                .push(format!("loaded {plugin} {version}"));
        }
        Ok(())
    }
    fn call_started(&self, call: &CallInfo) -> ObserverResult {
        self.seen
            .lock()
            .unwrap()
            .push(format!("started {} {}", call.tool, call.plugin));
        Ok(())
    }
    fn call_progress(&self, call: &CallInfo, p: &Progress) -> ObserverResult {
        self.seen
            .lock()
            .unwrap()
            .push(format!("progress {} {}", call.tool, p.progress));
        Ok(())
    }
    fn call_ended(
        &self,
        call: &CallInfo,
        ended: &Result<ToolOutcome, CallError>,
        s: &CallSummary,
    ) -> ObserverResult {
        let line = match ended {
            Ok(outcome) => {
                assert_eq!(s.bytes_out, outcome.result.len());
                format!("finished {} exit {:?}", call.tool, s.exit_code)
            }
            Err(e) => format!("failed {} {} {:?}", call.tool, e.kind(), s.error_kind),
        };
        self.seen.lock().unwrap().push(line);
        Ok(())
    }
}

/// Fails or panics on every call: the calls must not notice.
struct Broken {
    panics: bool,
}

impl Observer for Broken {
    fn call_started(&self, _: &CallInfo) -> ObserverResult {
        if self.panics {
            panic!("observer bug");
        }
        Err("observer could not write".into())
    }
    fn call_ended(
        &self,
        _: &CallInfo,
        _: &Result<ToolOutcome, CallError>,
        _: &CallSummary,
    ) -> ObserverResult {
        if self.panics {
            panic!("observer bug");
        }
        Err("observer could not write".into())
    }
}

/// Wants calls only: must never hear of plugins.
#[derive(Default)]
struct CallsOnly {
    plugin_events: AtomicUsize,
}

impl Observer for CallsOnly {
    fn interests(&self) -> Interests {
        Interests::CALLS
    }
    fn event(&self, _: &HostEvent) -> ObserverResult {
        self.plugin_events.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[tokio::test]
async fn observers_see_calls_progress_and_reloads_and_broken_ones_do_not_matter() {
    let sandbox = Sandbox::new().with_fixtures(&["progress-reporter", "exit-no-body"]);
    let recorder = Arc::new(Recorder::default());
    let calls_only = Arc::new(CallsOnly::default());
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .observer(Arc::new(Broken { panics: true }))
        .observer(recorder.clone())
        .observer(Arc::new(Broken { panics: false }))
        .observer(calls_only.clone())
        .build()
        .unwrap();

    let o = host
        .call("report_progress", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(o.result, "progress done");
    let e = host
        .call("exit_no_body", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Failed);
    let e = host
        .call("nope", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);

    util::copy_dir(
        &util::fixtures().join("slow-ok"),
        &sandbox.plugins().join("slow-ok"),
    );
    let events = host.reload();
    assert!(matches!(&events[..], [HostEvent::PluginAdded { plugin, .. }] if plugin == "slow-ok"));

    let seen = recorder.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            // The plugins found at start are reported like later ones.
            "loaded exit-no-body 1.0.0",
            "loaded progress-reporter 1.0.0",
            "started report_progress progress-reporter",
            "progress report_progress 1",
            "progress report_progress 2",
            "progress report_progress 3",
            "finished report_progress exit Some(0)",
            "started exit_no_body exit-no-body",
            "failed exit_no_body failed Some(Failed)",
            "started nope ",
            "failed nope not_found Some(NotFound)",
            "loaded slow-ok 1.0.0",
        ]
    );
    assert_eq!(
        calls_only.plugin_events.load(Ordering::Relaxed),
        0,
        "dispatched only to those that care"
    );

    let metrics = host.metrics();
    assert_eq!(metrics["report_progress"].ok, 1);
    assert_eq!(metrics["exit_no_body"].host_errors["failed"], 1);
    assert_eq!(metrics["nope"].host_errors["not_found"], 1);
}

#[tokio::test]
async fn the_audit_log_has_one_line_per_call_and_inputs_only_when_asked() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok", "exit-error-body"]);
    let log = sandbox.root.path().join("logs/audit.jsonl");
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .audit_log(&log, false)
        .build()
        .unwrap();
    let invocation = Invocation {
        session_id: Some("s-1".into()),
        source: Some(plughost::protocol::Source::Mcp),
        ..Invocation::default()
    };
    host.call("slow_ok", json!({"secret": "hunter2"}), invocation.clone())
        .await
        .unwrap();
    host.call("exit_error_body", json!({}), invocation)
        .await
        .unwrap_err();
    drop(host);

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("hunter2"),
        "inputs are not logged unless asked"
    );
    let records: Vec<AuditRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(
        (records[0].tool.as_str(), records[0].outcome.as_str()),
        ("slow_ok", "ok")
    );
    assert_eq!(records[0].plugin, "slow-ok");
    assert_eq!(records[0].source.as_deref(), Some("mcp"));
    assert_eq!(records[0].session_id.as_deref(), Some("s-1"));
    assert!(
        records[0].duration_ms >= 250.0,
        "{}",
        records[0].duration_ms
    );
    assert!(records[0].time.ends_with('Z') && records[0].time.len() == 24);
    assert_eq!(records[1].outcome, "failed");

    let with_inputs = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .audit_log(&log, true)
        .build()
        .unwrap();
    with_inputs
        .call("slow_ok", json!({"q": 1}), Invocation::default())
        .await
        .unwrap();
    let last: AuditRecord = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last.input, Some(json!({"q": 1})));

    // `plughost stats` reads the same log.
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "stats"]).arg(&log);
    let out = util::run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["tools"]["slow_ok"]["calls"], 2);
    assert_eq!(
        stats["tools"]["exit_error_body"]["host_errors"]["failed"],
        1
    );
}

#[tokio::test]
async fn rate_limits_and_session_budgets_refuse_before_spawning() {
    let sandbox = Sandbox::new();
    let marker = sandbox.state().join("data/counter/spawns");
    sandbox.write_plugin(
        "counter",
        &util::manifest("counter", "count_spawn"),
        "#!/bin/sh\ncat >/dev/null\necho x >> \"$PLUGHOST_DATA_DIR/spawns\"\necho '{\"result\":\"ok\"}'\n",
    );
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .policy(Policy {
            rate_per_minute: Some(2),
            session_budget: Some(1),
            ..Policy::default()
        })
        .build()
        .unwrap();
    let session = |id: &str| Invocation {
        session_id: Some(id.into()),
        ..Invocation::default()
    };
    host.call("count_spawn", json!({}), session("a"))
        .await
        .unwrap();
    let e = host
        .call("count_spawn", json!({}), session("a"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAllowed);
    assert!(e.to_string().contains("budget of 1"), "{e}");
    host.call("count_spawn", json!({}), session("b"))
        .await
        .unwrap();
    let e = host
        .call("count_spawn", json!({}), session("c"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAllowed);
    assert!(e.to_string().contains("2 calls per minute"), "{e}");
    let spawns = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(spawns.lines().count(), 2, "refused calls spawn nothing");
}
