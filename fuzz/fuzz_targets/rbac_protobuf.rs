//! Kubernetes protobuf of RBAC's kinds and the access reviews (what `kubectl create
//! clusterrolebinding` and `kubectl auth can-i` send `apfkit serve`): the bytes after `k8s\0`
//! with the envelope of one of the kinds the first byte picks, read by
//! `apfkit_rbac::protobuf::read` within small limits; whatever it reads is written back in
//! protobuf (for the kinds it writes) and read again to the same value.
#![no_main]

mod common;

const KINDS: &[(&str, &str)] = &[
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "RoleBindingList"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, raw)) = data.split_first() else {
        return;
    };
    let (api_version, kind) = KINDS[usize::from(pick) % KINDS.len()];
    let bytes = apfkit_wire::envelope::wrap(api_version, kind, raw);
    let limits = common::limits();
    let Some(read) = apfkit_rbac::protobuf::read(&bytes, &limits) else {
        panic!("{api_version} {kind} is read here");
    };
    let Ok((value, _unknown)) = read else {
        return;
    };
    if let Some(written) = apfkit_rbac::protobuf::write(&value) {
        let written = written.expect("what was read is written");
        let (again, _) = apfkit_rbac::protobuf::read(&written, &limits)
            .expect("one of the group's kinds")
            .expect("what was written reads back");
        assert_eq!(again, value, "{kind}");
    }
});
