//! Every fixture object decodes into its typed struct, re-encodes to the same JSON, and is
//! left unchanged by defaulting (the bootstrap objects carry every default explicitly).

use apfkit_tests::{apiservices, bootstrap, flowcontrol_versions};
use apfkit_types::{ApplyDefaults, apiregistration, flowcontrol};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn assert_round_trip_and_default_no_op<
    T: DeserializeOwned + Serialize + ApplyDefaults + PartialEq + std::fmt::Debug + Clone,
>(
    object: &Value,
) {
    let name = &object["metadata"]["name"];
    let typed: T = serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let encoded = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &encoded, object,
        "{name} does not re-encode to the same JSON"
    );
    let mut defaulted = typed.clone();
    defaulted.apply_defaults();
    assert_eq!(defaulted, typed, "defaulting changed {name}");
}

macro_rules! check_version {
    ($version:ident) => {{
        let (levels, schemas) = bootstrap(stringify!($version));
        assert_eq!(levels.len(), 8);
        assert_eq!(schemas.len(), 11);
        for level in &levels {
            assert_round_trip_and_default_no_op::<flowcontrol::$version::PriorityLevelConfiguration>(level);
        }
        for schema in &schemas {
            assert_round_trip_and_default_no_op::<flowcontrol::$version::FlowSchema>(schema);
        }
    }};
}

#[test]
fn bootstrap_objects_round_trip_in_every_version() {
    assert_eq!(
        flowcontrol_versions(),
        ["v1alpha1", "v1beta1", "v1beta2", "v1beta3", "v1"]
    );
    check_version!(v1alpha1);
    check_version!(v1beta1);
    check_version!(v1beta2);
    check_version!(v1beta3);
    check_version!(v1);
}

#[test]
fn apiservices_round_trip() {
    for object in apiservices("v1") {
        assert_round_trip_and_default_no_op::<apiregistration::v1::APIService>(&object);
    }
    for object in apiservices("v1beta1") {
        assert_round_trip_and_default_no_op::<apiregistration::v1beta1::APIService>(&object);
    }
}

#[test]
fn wrong_api_version_or_kind_is_rejected() {
    let (levels, schemas) = bootstrap("v1beta3");
    let err =
        serde_json::from_value::<flowcontrol::v1::PriorityLevelConfiguration>(levels[0].clone())
            .unwrap_err();
    assert!(
        err.to_string()
            .contains("flowcontrol.apiserver.k8s.io/v1beta3"),
        "{err}"
    );
    let err = serde_json::from_value::<flowcontrol::v1beta3::PriorityLevelConfiguration>(
        schemas[0].clone(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("FlowSchema"), "{err}");
}

#[test]
fn absent_null_and_empty_stay_apart() {
    use flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
    let level: PriorityLevelConfiguration = serde_json::from_value(serde_json::json!({
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": null, "limitResponse": {"type": "Reject"}}}
    }))
    .unwrap();
    assert_eq!(
        level
            .spec
            .limited
            .as_ref()
            .unwrap()
            .nominal_concurrency_shares,
        None
    );
    let zero: PriorityLevelConfiguration = serde_json::from_value(serde_json::json!({
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}
    }))
    .unwrap();
    assert_eq!(
        zero.spec
            .limited
            .as_ref()
            .unwrap()
            .nominal_concurrency_shares,
        Some(0)
    );

    let schema = |namespaces: Value| -> FlowSchema {
        serde_json::from_value(serde_json::json!({"spec": {"priorityLevelConfiguration": {"name": "p"}, "rules": [
            {"subjects": [], "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": namespaces}]}
        ]}}))
        .unwrap()
    };
    let rule = |s: &FlowSchema| {
        s.spec.rules.as_ref().unwrap()[0]
            .resource_rules
            .as_ref()
            .unwrap()[0]
            .clone()
    };
    assert_eq!(rule(&schema(Value::Null)).namespaces, None);
    assert_eq!(
        rule(&schema(serde_json::json!([]))).namespaces,
        Some(vec![])
    );
    // Encoding keeps the difference: an empty list stays, an unset one is left out.
    let empty = serde_json::to_value(schema(serde_json::json!([]))).unwrap();
    assert_eq!(
        empty["spec"]["rules"][0]["resourceRules"][0]["namespaces"],
        serde_json::json!([])
    );
    let unset = serde_json::to_value(schema(Value::Null)).unwrap();
    assert!(
        unset["spec"]["rules"][0]["resourceRules"][0]
            .get("namespaces")
            .is_none()
    );
    // Struct values that Go always writes are always written.
    assert_eq!(unset["metadata"], serde_json::json!({}));
    assert_eq!(unset["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    assert_eq!(unset["kind"], "FlowSchema");
}
