//! Which revision a server speaks, asked before rmcp starts: plughost sends
//! its own `server/discover` (with an id of its own) and reads the answer.
//! A server that answers with a result naming 2026-07-28 speaks it, and so
//! does one whose error (`-32022`, unsupported version) lists it among the
//! versions it supports; one that answers with another error, or not within
//! the wait, gets the 2025-11-25 handshake. The answer is kept from rmcp whenever it comes (the [`Wire`] sets it aside), so
//! a slow server's late answer never reaches the handshake that followed.
//!
//! rmcp's own probe gives up after a fixed 10 seconds and then fails on the
//! late answer; this one waits half the start-up time, and the host skips it
//! for a server it knows to speak 2025-11-25 (its cached listing says so).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::wire::{PROBE_ID, Wire};
use crate::run::executor::{Output, Stdin};

/// The revision the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spoken {
    /// 2026-07-28: `server/discover` named it.
    Modern,
    /// Anything else: the `initialize` handshake.
    Legacy,
}

/// Sends the probe and reads until its answer, within `wait`.
pub(super) async fn probe(stdin: &mut Stdin, stdout: &mut Wire<Output>, wait: Duration) -> Spoken {
    let request = json!({"jsonrpc": "2.0", "id": PROBE_ID, "method": "server/discover",
    "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "plughost", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
        return Spoken::Legacy;
    }
    match tokio::time::timeout(wait, stdout.probe_answer()).await {
        Ok(Ok(Some(answer))) if speaks_2026(&answer) => Spoken::Modern,
        _ => Spoken::Legacy,
    }
}

/// Whether a probe answer is a result that names 2026-07-28, or an error
/// that lists it as supported.
fn speaks_2026(answer: &Value) -> bool {
    [
        &answer["result"]["supportedVersions"],
        &answer["error"]["data"]["supported"],
    ]
    .iter()
    .any(|list| {
        list.as_array()
            .is_some_and(|v| v.iter().any(|v| v == "2026-07-28"))
    })
}

#[cfg(test)]
mod tests {
    use super::speaks_2026;
    use serde_json::json;

    #[test]
    fn a_server_speaks_2026_when_its_answer_or_its_refusal_names_it() {
        let result = json!({"result": {"supportedVersions": ["2026-07-28"]}});
        assert!(speaks_2026(&result));
        // An unsupported-version error that lists 2026-07-28 as supported.
        let refused = json!({"error": {"code": -32022, "message": "unsupported",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}});
        assert!(speaks_2026(&refused));
        let older = json!({"error": {"code": -32601, "message": "Method not found"}});
        assert!(!speaks_2026(&older));
        let other = json!({"error": {"code": -32022, "data": {"supported": ["2025-11-25"]}}});
        assert!(!speaks_2026(&other));
    }
}
