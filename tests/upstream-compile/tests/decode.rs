//! The generated upstream types, used as a program would use them.

use apfkit_upstream_compile::*;

#[test]
fn all_40_upstream_documents_compiled() {
    assert_eq!(DOCUMENTS.len(), 40, "{DOCUMENTS:?}");
}

#[test]
fn generated_upstream_types_decode_real_objects() {
    use apfkit_runtime::k8s_openapi::Resource;
    use r1_35_flowcontrol_apiserver_k8s_io_v1::api::flowcontrol::v1 as fc;
    let level: fc::PriorityLevelConfiguration = serde_json::from_value(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "catch-all"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}
    }))
    .unwrap();
    assert_eq!(level.metadata.name.as_deref(), Some("catch-all"));
    assert_eq!(
        level
            .spec
            .limited
            .as_ref()
            .unwrap()
            .nominal_concurrency_shares,
        Some(5)
    );
    assert_eq!(
        fc::PriorityLevelConfiguration::URL_PATH_SEGMENT,
        "prioritylevelconfigurations"
    );
    assert_eq!(
        fc::FlowSchema::API_VERSION,
        "flowcontrol.apiserver.k8s.io/v1"
    );

    // Upstream defaults are Go zero values: a v1beta3 value-typed field defaults to 0.
    use apfkit_runtime::ApplyDefaults as _;
    use r1_31_flowcontrol_apiserver_k8s_io_v1beta3::api::flowcontrol::v1beta3 as b3;
    let mut queuing = b3::QueuingConfiguration::default();
    queuing.apply_defaults();
    assert_eq!(queuing.queues, Some(0));

    use r1_35_apiregistration_k8s_io_v1::kube_aggregator::pkg::apis::apiregistration::v1 as ar;
    let service: ar::APIService = serde_json::from_value(serde_json::json!({
        "kind": "APIService", "metadata": {"name": "v1.x"}, "spec": {"groupPriorityMinimum": 1, "versionPriority": 2}
    }))
    .unwrap();
    assert_eq!(service.spec.version_priority, 2);
}
