//! MCP over streamable HTTP, behind a bearer token.

use std::net::SocketAddr;
use std::path::Path;

use super::McpServer;

/// Reads the bearer token from `file`, or from `<state>/http-token`, creating
/// that one (mode 0600) with a random token on first use.
pub fn load_or_create_token(file: Option<&Path>, state_dir: &Path) -> Result<String, String> {
    if let Some(file) = file {
        let token = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        let token = token.trim().to_owned();
        if token.len() < 16 {
            return Err(format!(
                "the token in {} is shorter than 16 characters",
                file.display()
            ));
        }
        return Ok(token);
    }
    let path = state_dir.join("http-token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {
            return Err(format!(
                "the token file {} is empty; delete it to get a new token",
                path.display()
            ));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!(
                "cannot read the token file {}: {e}",
                path.display()
            ));
        }
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| format!("cannot read random bytes for a token: {e}"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(state_dir)
        .map_err(|e| format!("cannot create {}: {e}", state_dir.display()))?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot create the token file {}: {e}", path.display()))?;
    f.write_all(token.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot write the token file {}: {e}", path.display()))?;
    Ok(token)
}

/// Serves `server` over streamable HTTP on `addr`, requiring `token`.
pub async fn serve(
    _server: McpServer,
    addr: SocketAddr,
    _token: String,
    allow_remote: bool,
    _log: impl Fn(&str),
) -> Result<(), String> {
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "{addr} is not a loopback address; pass --allow-remote to serve other machines"
        ));
    }
    Err("MCP over HTTP is not available in this build yet; use stdio (plughost serve)".into())
}
