//! The MCP front end's own bookkeeping, over real HTTP on loopback.

use std::sync::Arc;
use std::time::Duration;

use crate::PluginHost;
use crate::test_support::http::{Client, TOKEN};

use super::{HttpOptions, McpServer, Tenant};

/// Sessions that come and go (initialize, then DELETE) leave no peer of
/// theirs in the server's list for tools/list_changed: each one held its
/// session's channel, so a long-lived server grew without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_sessions_leave_no_peer_behind() {
    let root = tempfile::tempdir().unwrap();
    let host = PluginHost::builder()
        .plugins_dir(root.path().join("plugins"))
        .state_dir(root.path().join("state"))
        .build()
        .unwrap();
    let server = McpServer::new(Arc::new(host));
    let sessions = server.sessions.clone();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stop = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn({
        let stop = stop.clone();
        super::serve_http(
            vec![Tenant {
                name: "default".into(),
                token: TOKEN.into(),
                server,
            }],
            HttpOptions::new(([127, 0, 0, 1], port).into()),
            async move { stop.cancelled().await },
            |_| {},
        )
    });
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "never listened");
            std::thread::sleep(Duration::from_millis(10));
        }
        for _ in 0..40 {
            let client = Client {
                port,
                token: TOKEN.into(),
                session: None,
            }
            .initialize();
            assert_eq!(client.delete().status, 204);
        }
    })
    .await
    .unwrap();
    let held = sessions.lock().unwrap().len();
    assert!(held <= 2, "{held} sessions held after 40 ended");
    stop.cancel();
    serving.await.unwrap().unwrap();
}
