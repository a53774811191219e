//! Secrets plughost makes (a bearer token, the key that seals
//! `requestState`, an egress proxy's credential): bytes from the kernel's
//! random source, or an error, never something weaker.

use std::io::Read;

/// `N` random bytes from `/dev/urandom`.
pub(crate) fn bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}
