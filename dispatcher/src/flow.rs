//! Flow identification (`hashFlowID` in upstream's `apf_controller.go`): a flow is (FlowSchema name, distinguisher), hashed with SHA-256.

use sha2::{Digest, Sha256};

/// The hash of a flow: SHA-256 of `flow_schema ‖ 0x00 ‖ distinguisher`, first 8 digest bytes
/// read as a little-endian integer.
///
/// ```
/// assert_eq!(apfkit_dispatcher::flow::flow_hash("global-default", "alice"), 17644606172554983095);
/// ```
pub fn flow_hash(flow_schema: &str, distinguisher: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(flow_schema.as_bytes());
    hasher.update([0u8]);
    hasher.update(distinguisher.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}
