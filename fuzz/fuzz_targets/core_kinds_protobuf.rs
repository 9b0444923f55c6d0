//! Kubernetes protobuf of ConfigMaps, Secrets, ServiceAccounts, Leases and TokenRequests (what
//! client-go sends `apfkit serve`: a Lease's renewal, `kubectl create token`, and what it
//! stores): the bytes after `k8s\0` with the envelope of one of the kinds the first byte
//! picks, read by `apfkit_corekinds::protobuf::read` within small limits; whatever it reads
//! is written back in protobuf and read again, and from then on reads back to the same value
//! (`map<string, bytes>` as base64, `MicroTime`s truncated to microseconds on the first trip),
//! within limits four times as roomy (a list's items gain their metadata).
#![no_main]

mod common;

const KINDS: &[(&str, &str)] = &[
    ("v1", "ConfigMap"),
    ("v1", "ConfigMapList"),
    ("v1", "Secret"),
    ("v1", "SecretList"),
    ("v1", "ServiceAccount"),
    ("v1", "ServiceAccountList"),
    ("coordination.k8s.io/v1", "Lease"),
    ("coordination.k8s.io/v1", "LeaseList"),
    ("authentication.k8s.io/v1", "TokenRequest"),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, raw)) = data.split_first() else {
        return;
    };
    let (api_version, kind) = KINDS[usize::from(pick) % KINDS.len()];
    let bytes = apfkit_wire::envelope::wrap(api_version, kind, raw);
    let limits = common::limits();
    let Some(read) = apfkit_corekinds::protobuf::read(&bytes, &limits) else {
        panic!("{api_version} {kind} is read here");
    };
    let Ok((value, _unknown)) = read else {
        return;
    };
    // What is written may be larger than what was read, as Go's would be: every message of a
    // list has its (empty) metadata written, which the first read filled in without counting
    // it. So it reads back within roomier limits.
    let roomy = apfkit_runtime::scheme::Limits {
        max_document_bytes: limits.max_document_bytes * 4,
        max_nodes: limits.max_nodes * 4,
        ..limits
    };
    let trip = |value: &serde_json::Value| {
        let written = apfkit_corekinds::protobuf::write(value)
            .expect("one of the kinds")
            .expect("what was read is written");
        apfkit_corekinds::protobuf::read(&written, &roomy)
            .expect("one of the kinds")
            .expect("what was written reads back")
            .0
    };
    let once = trip(&value);
    assert_eq!(trip(&once), once, "{kind}");
});
