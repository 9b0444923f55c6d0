//! The hashes kube-openapi and aggregated discovery write as their documents' entity tags.

/// A body's SHA-512 in upper-case hex (`%X`), as kube-openapi hashes its documents and
/// aggregated discovery tags its own.
pub(super) fn sha512_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}
