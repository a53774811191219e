//! The environment variables plughost itself gives plugin processes, by
//! name: those passed on from its own environment, those that point a
//! plugin at its egress proxy, and those that tell its TLS libraries what
//! to trust. The manifest's checks and the process builder read the same
//! lists.

/// Variables every plugin gets from the host's environment, when set. `LC_*` is
/// matched as a prefix. The interpreter-manager variables keep pyenv and nvm
/// installations working.
pub(crate) const ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "NVM_DIR",
    "NVM_BIN",
];

/// The variables the egress proxy (`Proxy::env`) sets or a proxied child must not have.
pub(crate) const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "NODE_USE_ENV_PROXY",
];

/// The variables that point the common TLS libraries at a file of roots:
/// OpenSSL and everything built on it (`SSL_CERT_FILE`: curl, Python's
/// `ssl`, Ruby, PHP), Python's requests, curl's own, Node (which adds the
/// file to its bundled roots), git, Deno, pip and the AWS SDKs.
pub(crate) const TRUST_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "DENO_CERT",
    "PIP_CERT",
    "AWS_CA_BUNDLE",
];

/// Whether `name` is a variable a brokered secret may not take: one the
/// allowlist passes, plughost sets, or the loader and the proxy read.
pub(crate) fn reserved(name: &str) -> bool {
    ALLOWLIST.contains(&name)
        || name.starts_with("LC_")
        || name.starts_with("LD_")
        || name.starts_with("PLUGHOST_")
        || ["TMPDIR", "TRACEPARENT", "TRACESTATE"].contains(&name)
        || PROXY_VARIABLES.contains(&name)
        || TRUST_VARIABLES.contains(&name)
}
