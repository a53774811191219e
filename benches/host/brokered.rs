//! Brokered secrets: what placing a secret costs an HTTPS request and a
//! megabyte's download, next to the same curl sending the value itself
//! through the proxy's tunnel (`network:HOST`, the value in `env`) and
//! straight to the server (plain `network`), in one run. Every curl
//! verifies against a bundle of the system's roots and the run's root, as
//! a real client of a real host would (loading a bundle of ~150 roots is a
//! good part of a curl's start).
//!
//! The HTTPS origin is the bench's own, on 127.0.0.1, with a root made for
//! the run: plughost verifies it through `SSL_CERT_FILE`, which must be set
//! when the host starts, so the bench runs itself again with it set
//! ([`reexec_with_roots`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use plughost::protocol::Invocation;
use serde_json::{Value, json};

use crate::stats::{pct, ratio};
use crate::{Bench, cell};

/// The value the origin wants as a bearer token.
const VALUE: &str = "bench-secret-value";
/// The bytes `/big` answers with.
const BIG: usize = 1024 * 1024;
/// Where the run's root and the origin's certificate are kept.
const PKI: &str = "plughost-bench-pki";

/// The folder of the run's root and certificate.
fn pki_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(PKI)
}

/// When `SSL_CERT_FILE` is not the run's root, makes the root and runs this
/// bench again with it set; the exit status when it did.
pub(crate) fn reexec_with_roots(args: &[String]) -> Option<i32> {
    let root = pki_dir().join("root.pem");
    if std::env::var_os("SSL_CERT_FILE").is_some_and(|f| Path::new(&f) == root) {
        return None;
    }
    make_pki(&pki_dir());
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(&args[1..])
        .env("SSL_CERT_FILE", &root)
        .status()
        .unwrap();
    Some(status.code().unwrap_or(1))
}

fn make_pki(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::default();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "plughost bench root");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::write(dir.join("root.pem"), ca_cert.pem()).unwrap();
    let mut bundle = std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
    bundle.extend_from_slice(ca_cert.pem().as_bytes());
    std::fs::write(dir.join("bundle.pem"), bundle).unwrap();
    std::fs::write(dir.join("server.der"), leaf.der()).unwrap();
    std::fs::write(dir.join("server.key.der"), key.serialize_der()).unwrap();
}

/// An HTTPS origin on 127.0.0.1, a thread per connection: `/big` is a
/// megabyte, anything else a few bytes; 401 without the right bearer.
pub(crate) fn origin() -> u16 {
    let dir = pki_dir();
    let cert =
        rustls::pki_types::CertificateDer::from(std::fs::read(dir.join("server.der")).unwrap());
    let key = rustls::pki_types::PrivateKeyDer::try_from(
        std::fs::read(dir.join("server.key.der")).unwrap(),
    )
    .unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let big = Arc::new(vec![b'x'; BIG]);
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (config, big) = (config.clone(), big.clone());
            std::thread::spawn(move || {
                let Ok(tls) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut s = rustls::StreamOwned::new(tls, conn);
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let ok = text.contains(&format!("Authorization: Bearer {VALUE}\r\n"));
                let body: &[u8] = match (ok, head.starts_with(b"GET /big ")) {
                    (false, _) => b"unauthorised",
                    (true, true) => &big,
                    (true, false) => b"ok",
                };
                let status = if ok { "200 OK" } else { "401 Unauthorized" };
                let _ = s.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                let _ = s.write_all(body);
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    port
}

/// The three plugins: `brokered` holds a placeholder bound to the origin;
/// `https-tunnel` is granted the origin's host and gets the value itself
/// (`env`); `https-direct` is granted `network` and gets the value.
/// Each runs curl once per call on the path its input names.
pub(crate) fn setup(bench: &Bench, port: u16) {
    let store =
        plughost::secrets::SecretStore::new(&bench.state).keeping_in(plughost::secrets::Kept::File);
    store
        .set(
            "BENCH_TOKEN",
            VALUE,
            &[
                "brokered".into(),
                "https-tunnel".into(),
                "https-direct".into(),
            ],
        )
        .unwrap();
    for name in ["brokered", "https-tunnel", "https-direct"] {
        let dir = bench.plugins.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("main.sh"),
            format!(
                "#!/bin/sh\npath=$(cat | sed -n 's/.*\"path\": *\"\\([^\"]*\\)\".*/\\1/p')\nsize=$(curl -sS -f -o /dev/null --cacert \"${{CURL_CA_BUNDLE:-{root}}}\" -H \"Authorization: Bearer $BENCH_TOKEN\" -w '%{{size_download}}' https://127.0.0.1:{port}$path) || exit 1\necho \"{{\\\"result\\\":\\\"$size\\\"}}\"\n",
                root = pki_dir().join("bundle.pem").display()
            ),
        )
        .unwrap();
        let mut perms = std::fs::metadata(dir.join("main.sh"))
            .unwrap()
            .permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(dir.join("main.sh"), perms).unwrap();
        let tool = format!("{}_get", name.replace('-', "_"));
        let mut m = json!({
            "name": name, "version": "1.0.0", "description": "Fetches over HTTPS.",
            "entrypoint": "main.sh", "permissions": [],
            "tools": [{"name": tool, "description": "Fetches.", "input_schema": {"type": "object"}}]
        });
        let pki = format!("filesystem:read:{}", pki_dir().display());
        match name {
            "brokered" => {
                m["secrets"] = json!({"BENCH_TOKEN": {"hosts": [format!("127.0.0.1:{port}")]}});
            }
            "https-tunnel" => {
                m["permissions"] = json!([format!("network:127.0.0.1:{port}"), pki]);
                m["env"] = json!(["BENCH_TOKEN"]);
            }
            _ => {
                m["permissions"] = json!(["network", pki]);
                m["env"] = json!(["BENCH_TOKEN"]);
            }
        }
        std::fs::write(dir.join("plugin.json"), m.to_string()).unwrap();
    }
}

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let port = origin();
    setup(bench, port);
    let host = bench.host(true);
    for plugin in ["brokered", "https-tunnel", "https-direct"] {
        host.approve(plugin).await.unwrap();
    }
    let mut rows = Vec::new();
    for (what, path, calls, expect) in [
        ("request", "/", bench.iters(300, 30), "2"),
        ("1 MB download", "/big", bench.iters(100, 10), "1048576"),
    ] {
        let (mut brokered, mut tunnel, mut direct) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..calls.max(5) {
            for (tool, times) in [
                ("brokered_get", &mut brokered),
                ("https_tunnel_get", &mut tunnel),
                ("https_direct_get", &mut direct),
            ] {
                let t = Instant::now();
                let o = host
                    .call(tool, json!({"path": path}), Invocation::default())
                    .await
                    .unwrap();
                assert_eq!(o.result, expect, "{tool} {path}: {}", o.stderr_tail);
                times.push(t.elapsed());
            }
        }
        let ms = |us: f64| (us / 10.0).round() / 100.0;
        let (b50, t50, d50) = (
            pct(&mut brokered, 50),
            pct(&mut tunnel, 50),
            pct(&mut direct, 50),
        );
        rows.push(
            json!({"what": what, "brokered_p50_ms": ms(b50), "tunnel_p50_ms": ms(t50),
                         "direct_p50_ms": ms(d50), "ratio_p50": ratio(b50, d50),
                         "ratio_tunnel_p50": ratio(b50, t50)}),
        );
    }
    report["brokered"] = json!(rows);
}

pub(crate) fn print(r: &Value) {
    let Some(rows) = r["brokered"].as_array() else {
        return;
    };
    println!(
        "brokered secret over HTTPS, curl (ms)   brokered p50  tunnel p50  direct p50  brokered/direct  brokered/tunnel"
    );
    for row in rows {
        println!(
            "  {:<38} {:>12} {:>11} {:>11} {:>16} {:>16}",
            cell(&row["what"]),
            cell(&row["brokered_p50_ms"]),
            cell(&row["tunnel_p50_ms"]),
            cell(&row["direct_p50_ms"]),
            cell(&row["ratio_p50"]),
            cell(&row["ratio_tunnel_p50"])
        );
    }
}
