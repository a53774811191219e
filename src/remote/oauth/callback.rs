//! The loopback redirect of a sign-in (RFC 8252): where the browser comes
//! back with the code, and how that code is judged.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{OAuthError, discover};

/// Waits for the browser to come back to `listener` with the code; checks
/// its `state` and its issuer (RFC 9207: a present `iss` must be the
/// issuer, exactly; an absent one is refused where the server said it
/// sends one). Each connection is read on its own, for 10 seconds at
/// most, so one that idles (another program, a browser's pre-connect)
/// holds nothing up; a redirect of another sign-in (its `state`) is
/// answered with an error page and the wait goes on.
pub(super) async fn wait(
    listener: &tokio::net::TcpListener,
    state: &str,
    authority: &discover::Authority,
) -> Result<String, OAuthError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<String, OAuthError>>(4);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => {
                accepted.map_err(|e| OAuthError::Authorization(e.to_string()))?
            }
            Some(outcome) = rx.recv() => return outcome,
        };
        let tx = tx.clone();
        let (state, authority) = (state.to_owned(), authority.clone());
        tokio::spawn(async move {
            let read =
                tokio::time::timeout(Duration::from_secs(10), answer(stream, &state, &authority));
            if let Ok(Some(outcome)) = read.await {
                let _ = tx.send(outcome).await;
            }
        });
    }
}

/// Reads one request of the browser and answers it: `None` when it is not
/// the end of this sign-in (another path, another sign-in's state).
async fn answer(
    mut stream: tokio::net::TcpStream,
    state: &str,
    authority: &discover::Authority,
) -> Option<Result<String, OAuthError>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("");
    let Some(query) = target.strip_prefix("/callback?") else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return None;
    };
    let pairs: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
    let ours = pairs.get("state").map(String::as_str) == Some(state);
    let outcome = match ours {
        true => judge(&pairs, state, authority),
        false => Err(OAuthError::Authorization(
            "this page came back with another sign-in's state: it is refused".into(),
        )),
    };
    let page = match &outcome {
        Ok(_) => "Signed in: plughost has what it needs. You can close this page.".to_owned(),
        Err(e) => format!("The sign-in failed: {e}"),
    };
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    ours.then_some(outcome)
}

/// The code of a redirect, or why it is refused.
fn judge(
    pairs: &std::collections::HashMap<String, String>,
    state: &str,
    authority: &discover::Authority,
) -> Result<String, OAuthError> {
    if pairs.get("state").map(String::as_str) != Some(state) {
        return Err(OAuthError::Authorization(
            "the browser came back with another sign-in's state: it is refused".into(),
        ));
    }
    match pairs.get("iss") {
        Some(iss) if iss != &authority.issuer => {
            return Err(OAuthError::Authorization(format!(
                "the browser came back from the issuer \"{iss}\", not from \"{}\": a mix-up, refused",
                authority.issuer
            )));
        }
        None if authority.iss_in_redirect => {
            return Err(OAuthError::Authorization(format!(
                "the browser came back without the issuer, which {} says it always sends: refused",
                authority.issuer
            )));
        }
        _ => {}
    }
    if let Some(error) = pairs.get("error") {
        let more = pairs
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(OAuthError::Authorization(format!(
            "the authorization server refused ({error}{more})"
        )));
    }
    pairs
        .get("code")
        .cloned()
        .ok_or_else(|| OAuthError::Authorization("the browser came back without a code".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(iss: bool) -> discover::Authority {
        discover::Authority {
            issuer: "http://127.0.0.1:9".into(),
            iss_in_redirect: iss,
            ..Default::default()
        }
    }

    fn pairs(list: &[(&str, &str)]) -> std::collections::HashMap<String, String> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_redirect_is_judged_by_its_state_and_its_issuer() {
        let ok = pairs(&[("code", "c"), ("state", "s")]);
        assert_eq!(judge(&ok, "s", &authority(false)).unwrap(), "c");
        assert!(judge(&ok, "other", &authority(false)).is_err());
        // Advertised, and missing: refused.
        assert!(judge(&ok, "s", &authority(true)).is_err());
        let with = |iss| pairs(&[("code", "c"), ("state", "s"), ("iss", iss)]);
        assert!(judge(&with("http://127.0.0.1:9"), "s", &authority(true)).is_ok());
        // Compared as strings: no normalization, whether advertised or not.
        assert!(judge(&with("http://127.0.0.1:9/"), "s", &authority(true)).is_err());
        assert!(judge(&with("https://evil.example.com"), "s", &authority(false)).is_err());
    }

    /// A connection that idles, and a redirect of another sign-in, hold
    /// nothing up: the browser's own redirect still ends the wait.
    #[test]
    fn the_callback_waits_past_idle_connections_and_other_sign_ins() {
        use tokio::io::AsyncWriteExt;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .unwrap();
            let port = listener.local_addr().unwrap().port();
            let auth = authority(false);
            let visits = async move {
                let _idle = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                for query in ["code=evil&state=forged", "code=good&state=s"] {
                    let mut c = tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .unwrap();
                    let request = format!("GET /callback?{query} HTTP/1.1\r\nHost: x\r\n\r\n");
                    c.write_all(request.as_bytes()).await.unwrap();
                    let mut page = String::new();
                    let _ = c.read_to_string(&mut page).await;
                }
                std::future::pending::<()>().await;
            };
            let waited = tokio::time::timeout(Duration::from_secs(5), async {
                tokio::select! {
                    code = wait(&listener, "s", &auth) => code,
                    _ = visits => unreachable!(),
                }
            });
            let code = waited.await.expect("the callback was held up");
            assert_eq!(code.unwrap(), "good");
        });
    }
}
