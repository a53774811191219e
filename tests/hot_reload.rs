//! Hot reload with real files: each change is made the way tools make it, and
//! the test waits for the expected events, then checks nothing else arrives.

use crate::util;

use plughost::events::{Notice, Offering};

use std::path::Path;
use std::time::{Duration, Instant};

use plughost::PluginHost;
use plughost::events::HostEvent;
use plughost::protocol::Invocation;
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use util::{Sandbox, answer_script, copy_dir, manifest, write_executable};

fn host(sandbox: &Sandbox) -> PluginHost {
    PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap()
}

/// Receives the next event that is not a notice, or panics after a deadline.
async fn next_event(rx: &mut Receiver<HostEvent>) -> HostEvent {
    let deadline = Duration::from_secs(5);
    loop {
        match tokio::time::timeout(deadline, rx.recv()).await {
            Ok(Ok(HostEvent::Notice { .. })) => continue,
            Ok(Ok(e)) => return e,
            other => panic!("no event within {deadline:?}: {other:?}"),
        }
    }
}

/// Asserts no further (non-notice) event arrives for a while: one change, one event.
async fn assert_quiet(rx: &mut Receiver<HostEvent>) {
    let until = Instant::now() + Duration::from_millis(400);
    while let Ok(r) = tokio::time::timeout_at(until.into(), rx.recv()).await {
        match r {
            Ok(HostEvent::Notice { .. }) => {}
            other => panic!("unexpected extra event: {other:?}"),
        }
    }
}

/// Writes a plugin folder the way `cp -r` does: the folder, then file by file.
fn write_like_cp(dir: &Path, name: &str, tool: &str, version: &str) {
    std::fs::create_dir(dir).unwrap();
    let mut m = manifest(name, tool);
    m["version"] = json!(version);
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    write_executable(
        &dir.join("main.sh"),
        &answer_script(&format!("{tool} v{version}")),
    );
}

/// Saves a manifest the way editors do: write a temp file, rename it over.
fn save_like_editor(dir: &Path, manifest: &serde_json::Value) {
    let tmp = dir.join(".plugin.json.swp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(manifest).unwrap()).unwrap();
    std::fs::rename(&tmp, dir.join("plugin.json")).unwrap();
}

fn tool_names(host: &PluginHost) -> Vec<String> {
    host.tools().into_iter().map(|t| t.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_edit_break_fix_rename_and_delete_a_plugin() {
    let sandbox = Sandbox::new();
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch().unwrap();
    let dir = sandbox.plugins().join("weather");

    write_like_cp(&dir, "weather", "weather_now", "1.0.0");
    let added = Instant::now();
    match next_event(&mut rx).await {
        HostEvent::PluginAdded {
            plugin,
            version,
            tools,
        } => {
            assert_eq!(
                (plugin.as_str(), version.as_str(), tools),
                ("weather", "1.0.0", vec!["weather_now".to_owned()])
            );
        }
        e => panic!("expected plugin_added, got {e:?}"),
    }
    assert!(
        added.elapsed() < Duration::from_secs(1),
        "reload took {:?}",
        added.elapsed()
    );
    assert_quiet(&mut rx).await;
    assert_eq!(
        host.call("weather_now", json!({}), Invocation::default())
            .await
            .unwrap()
            .result,
        "weather_now v1.0.0"
    );

    let mut m = manifest("weather", "weather_now");
    m["version"] = json!("1.1.0");
    save_like_editor(&dir, &m);
    assert!(matches!(next_event(&mut rx).await,
        HostEvent::PluginUpdated { old_version, new_version, .. } if old_version == "1.0.0" && new_version == "1.1.0"));
    assert_quiet(&mut rx).await;

    let mut broken = m.clone();
    broken["version"] = json!("one");
    save_like_editor(&dir, &broken);
    match next_event(&mut rx).await {
        HostEvent::PluginRejected { folder, errors } => {
            assert_eq!(folder, "weather");
            assert!(errors.iter().any(|e| e.contains("/version")), "{errors:?}");
        }
        e => panic!("expected plugin_rejected, got {e:?}"),
    }
    assert!(
        tool_names(&host).is_empty(),
        "a broken plugin's tools are taken out"
    );
    assert_quiet(&mut rx).await;

    save_like_editor(&dir, &m);
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::PluginAdded { plugin, .. } if plugin == "weather")
    );
    assert_eq!(tool_names(&host), vec!["weather_now"]);
    assert_quiet(&mut rx).await;

    // A renamed folder is a remove plus an add (here rejected: the name no longer matches).
    std::fs::rename(&dir, sandbox.plugins().join("forecast")).unwrap();
    let mut seen = vec![next_event(&mut rx).await, next_event(&mut rx).await];
    seen.sort_by_key(|e| format!("{e:?}"));
    assert!(
        seen.iter()
            .any(|e| matches!(e, HostEvent::PluginRemoved { plugin } if plugin == "weather")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, HostEvent::PluginRejected { folder, .. } if folder == "forecast")),
        "{seen:?}"
    );
    assert_quiet(&mut rx).await;

    std::fs::remove_dir_all(sandbox.plugins().join("forecast")).unwrap();
    let event = next_event(&mut rx).await;
    assert!(
        matches!(&event, HostEvent::PluginRemoved { plugin } if plugin == "forecast"),
        "{event:?}"
    );
    assert_quiet(&mut rx).await;
    let listing = host.listing();
    assert!(listing.plugins.is_empty() && listing.rejected.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugins_folder_itself_can_be_deleted_and_recreated() {
    let sandbox = Sandbox::new();
    let root = sandbox.plugins();
    std::fs::remove_dir(&root).unwrap();
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch().unwrap();
    assert!(root.is_dir(), "a missing plugins folder is created");

    copy_dir(&util::fixtures().join("slow-ok"), &root.join("slow-ok"));
    assert!(matches!(
        next_event(&mut rx).await,
        HostEvent::PluginAdded { .. }
    ));

    std::fs::remove_dir_all(&root).unwrap();
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::PluginRemoved { plugin } if plugin == "slow-ok")
    );
    assert!(tool_names(&host).is_empty());

    std::fs::create_dir(&root).unwrap();
    copy_dir(&util::fixtures().join("slow-ok"), &root.join("slow-ok"));
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::PluginAdded { plugin, .. } if plugin == "slow-ok")
    );
    assert_quiet(&mut rx).await;
    assert_eq!(tool_names(&host), vec!["slow_ok"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_survives_its_folder_being_deleted() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch().unwrap();
    let call = tokio::spawn(host.call("slow_ok", json!({}), Invocation::default()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::remove_dir_all(sandbox.plugins().join("slow-ok")).unwrap();
    assert_eq!(call.await.unwrap().unwrap().result, "slow ok");
    assert!(matches!(
        next_event(&mut rx).await,
        HostEvent::PluginRemoved { .. }
    ));
    let e = host
        .call("slow_ok", json!({}), Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), plughost::ErrorKind::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collision_appearing_is_reported_once() {
    let sandbox = Sandbox::new();
    sandbox.write_plugin(
        "bbb",
        &manifest("bbb", "shared_tool"),
        &answer_script("from bbb"),
    );
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch().unwrap();
    write_like_cp(
        &sandbox.plugins().join("aaa"),
        "aaa",
        "shared_tool",
        "1.0.0",
    );
    let seen = [next_event(&mut rx).await, next_event(&mut rx).await];
    assert!(
        seen.iter()
            .any(|e| matches!(e, HostEvent::PluginAdded { plugin, .. } if plugin == "aaa")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|e| matches!(e, HostEvent::Collision { kind: Offering::Tool, kept_by, skipped_in, .. } if kept_by == "bbb" && skipped_in == "aaa")),
        "{seen:?}"
    );
    assert_quiet(&mut rx).await;
    // The plugin that offered the tool first keeps it, though the
    // newcomer's name sorts first.
    assert_eq!(
        host.call("shared_tool", json!({}), Invocation::default())
            .await
            .unwrap()
            .result,
        "from bbb"
    );
    // The collision going away is news too.
    std::fs::remove_dir_all(sandbox.plugins().join("aaa")).unwrap();
    let mut seen = vec![next_event(&mut rx).await, next_event(&mut rx).await];
    seen.sort_by_key(|e| format!("{e:?}"));
    assert!(
        seen.iter().any(|e| matches!(e, HostEvent::CollisionResolved { name, kept_by, .. } if name == "shared_tool" && kept_by == "bbb")),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_says_what_changed() {
    let sandbox = Sandbox::new();
    let mut m = manifest("notes", "notes_add");
    let dir = sandbox.write_plugin("notes", &m, &answer_script("ok"));
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch().unwrap();
    m["permissions"] = json!(["network"]);
    save_like_editor(&dir, &m);
    let event = next_event(&mut rx).await;
    let HostEvent::PluginUpdated { changes, .. } = &event else {
        panic!("expected an update, got {event:?}");
    };
    assert_eq!(changes, &["permissions (+network)"]);
    assert_eq!(
        event.to_string(),
        "updated  notes 1.0.0: permissions (+network)"
    );

    m["tools"][0]["name"] = json!("notes_append");
    m["env"] = json!(["NOTES_TOKEN"]);
    save_like_editor(&dir, &m);
    let event = next_event(&mut rx).await;
    assert_eq!(
        event.to_string(),
        "updated  notes 1.0.0: env (+NOTES_TOKEN); tools (+notes_append, -notes_add)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_polling_fallback_sees_changes_and_says_so_once() {
    let sandbox = Sandbox::new();
    let host = host(&sandbox);
    let mut rx = host.events();
    let _watch = host.watch_with(true).unwrap();
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Ok(HostEvent::Notice(Notice::WatchingFailed { polling, .. }))) => assert!(polling),
        other => panic!("expected the polling notice, got {other:?}"),
    }
    write_like_cp(
        &sandbox.plugins().join("polled"),
        "polled",
        "polled_tool",
        "1.0.0",
    );
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::PluginAdded { plugin, .. } if plugin == "polled")
    );
    std::fs::remove_dir_all(sandbox.plugins().join("polled")).unwrap();
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::PluginRemoved { plugin } if plugin == "polled")
    );
    if let Ok(Ok(e)) = tokio::time::timeout(Duration::from_millis(1200), rx.recv()).await {
        panic!("unexpected extra event (a second polling notice?): {e:?}");
    }
}
