//! Structural-schema features on real CustomResourceDefinitions: every sample object decodes,
//! encodes back to exactly what was read (apart from what kube-apiserver itself prunes), and
//! `ApplyDefaults` gives what kube-apiserver's structural defaulting gives (the oracle in
//! `structural_defaults`).

use serde_json::{Value, json};

use crate::structural_defaults;

const FOOS: &str = include_str!("../../../fixtures/crds/foos.tests.example.com.yaml");
const HTTPROUTES: &str =
    include_str!("../../../fixtures/crds/httproutes.gateway.networking.k8s.io.yaml");
const PODMONITORS: &str =
    include_str!("../../../fixtures/crds/podmonitors.monitoring.coreos.com.yaml");
const CERTIFICATES: &str = include_str!("../../../fixtures/crds/certificates.cert-manager.io.yaml");
const OPERATIONS: &str = include_str!("../../../fixtures/crds/operations.ops.crossplane.io.yaml");

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("the fixture parses")
}

/// Decodes `sample` as `T`, checks that it encodes back to `expected_round_trip`, then checks
/// that `T`'s defaults equal the oracle's on `sample`.
fn check<T, D>(sample: &Value, expected_round_trip: &Value, crd: &str, version: &str, default: D)
where
    T: serde::de::DeserializeOwned + serde::Serialize,
    D: Fn(&mut T),
{
    let mut typed: T = serde_json::from_value(sample.clone()).expect("the sample decodes");
    assert_eq!(&serde_json::to_value(&typed).unwrap(), expected_round_trip);
    default(&mut typed);
    let mut expected = expected_round_trip.clone();
    structural_defaults::apply(&mut expected, &structural_defaults::schema_of(crd, version));
    assert_eq!(serde_json::to_value(&typed).unwrap(), expected);
}

mod embedded_resources {
    use super::*;
    use crate::embedded::com::example::tests::v1beta1::Foo;
    use apfkit_runtime::ApplyDefaults;

    /// Upstream's pruning test: embedded objects keep every field, their `metadata` is
    /// ObjectMeta (unknown metadata fields are pruned, as kube-apiserver prunes them), and an
    /// embedded object with `properties` keeps the fields it does not list too.
    #[test]
    fn embedded_objects_keep_every_field() {
        let sample = yaml(include_str!("../../../fixtures/crds/foo.yaml"));
        let mut expected = sample.clone();
        for pointer in [
            "/embedded/metadata",
            "/embeddedNested/metadata",
            "/embeddedNested/embedded/metadata",
        ] {
            expected
                .pointer_mut(pointer)
                .and_then(Value::as_object_mut)
                .unwrap()
                .remove("unspecified");
        }
        check::<Foo, _>(&sample, &expected, FOOS, "v1beta1", Foo::apply_defaults);
        let foo: Foo = serde_json::from_value(sample).unwrap();
        let nested = foo.embedded_nested.unwrap();
        assert_eq!(nested.kind.as_deref(), Some("Foo"));
        assert_eq!(nested.other_fields["spec"], json!({"paused": true}));
        let inner = nested.embedded.unwrap();
        assert_eq!(inner.metadata.unwrap().name.as_deref(), Some("foo"));
        assert_eq!(inner.other_fields["data"], json!({"key": "value"}));
    }

    /// The object default of upstream's test, applied as kube-apiserver applies it.
    #[test]
    fn an_object_default_applies_whole() {
        let mut foo: Foo = serde_json::from_value(json!({"metadata": {"name": "f"}})).unwrap();
        foo.apply_defaults();
        let encoded = serde_json::to_value(&foo).unwrap();
        assert_eq!(
            encoded["defaults"],
            json!({"apiVersion": "v1", "kind": "Pod", "labels": {"foo": "bar"}})
        );
    }

    #[test]
    fn the_status_subresource_is_recorded() {
        let kind = crate::embedded::KINDS
            .iter()
            .find(|k| k.kind == "Foo")
            .unwrap();
        assert_eq!(kind.subresources, ["status"]);
        assert_eq!(kind.scale, None);
    }
}

mod gateway_httproute {
    use super::*;
    use crate::gateway::networking::gateway::v1beta1::{HTTPRoute, PathType};
    use apfkit_runtime::ApplyDefaults;

    /// Array and object defaults (`rules`, `matches`) and scalar defaults deep inside them
    /// (`backendRefs[].group`, `kind`, `weight`) come out as kube-apiserver's.
    #[test]
    fn nested_array_and_object_defaults_match_kube_apiserver() {
        let sample = yaml(include_str!("../../../fixtures/crds/httproute.yaml"));
        check::<HTTPRoute, _>(
            &sample,
            &sample,
            HTTPROUTES,
            "v1beta1",
            HTTPRoute::apply_defaults,
        );
        let mut route: HTTPRoute = serde_json::from_value(sample).unwrap();
        route.apply_defaults();
        let encoded = serde_json::to_value(&route).unwrap();
        assert_eq!(
            encoded.pointer("/spec/rules/0/matches"),
            Some(&json!([{"path": {"type": "PathPrefix", "value": "/"}}]))
        );
        assert_eq!(
            encoded.pointer("/spec/rules/0/backendRefs/0/kind"),
            Some(&json!("Service"))
        );
        assert_eq!(
            encoded.pointer("/spec/rules/0/backendRefs/0/weight"),
            Some(&json!(1))
        );
        // With no rules at all, the whole default list applies.
        let mut bare: HTTPRoute =
            serde_json::from_value(json!({"metadata": {"name": "r"}, "spec": {}})).unwrap();
        bare.apply_defaults();
        let encoded = serde_json::to_value(&bare).unwrap();
        assert_eq!(
            encoded.pointer("/spec/rules"),
            Some(&json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]))
        );
    }

    /// With `Enums::Open`, a value a newer Gateway API adds is kept, not rejected.
    #[test]
    fn open_enums_keep_unlisted_values() {
        let path: PathType = serde_json::from_value(json!("PathPrefix")).unwrap();
        assert_eq!(path, PathType::PathPrefix);
        let newer: PathType = serde_json::from_value(json!("Glob")).unwrap();
        assert_eq!(newer, PathType::Other("Glob".to_owned()));
        assert_eq!(serde_json::to_value(&newer).unwrap(), json!("Glob"));
        assert_eq!(newer.as_str(), "Glob");
    }
}

mod prometheus_podmonitor {
    use super::*;
    use crate::prometheus::com::coreos::monitoring::v1::PodMonitor;
    use apfkit_runtime::ApplyDefaults;

    fn sample() -> Value {
        let mut sample = yaml(include_str!("../../../fixtures/crds/podmonitor.yaml"));
        let endpoints = sample.pointer_mut("/spec/podMetricsEndpoints").unwrap();
        endpoints.as_array_mut().unwrap().extend([
            json!({"targetPort": 8080, "scheme": "https"}),
            json!({"targetPort": "metrics"}),
        ]);
        sample["spec"]["nativeHistogramMinBucketFactor"] = json!("1.1");
        sample
    }

    /// `x-kubernetes-int-or-string` and controller-gen's Quantity keep the form they were
    /// written in (number or string); a closed enum is typed.
    #[test]
    fn int_or_string_and_quantities_round_trip() {
        let sample = sample();
        check::<PodMonitor, _>(
            &sample,
            &sample,
            PODMONITORS,
            "v1",
            PodMonitor::apply_defaults,
        );
        let monitor: PodMonitor = serde_json::from_value(sample.clone()).unwrap();
        let endpoints = monitor.spec.pod_metrics_endpoints.unwrap();
        assert_eq!(
            endpoints[1].target_port,
            Some(apfkit_runtime::IntOrString::Int(8080))
        );
        assert_eq!(
            endpoints[2].target_port,
            Some(apfkit_runtime::IntOrString::from("metrics"))
        );
        let factor = monitor.spec.native_histogram_min_bucket_factor.unwrap();
        assert_eq!(factor.as_str(), "1.1");
        let mut as_number = sample;
        as_number["spec"]["nativeHistogramMinBucketFactor"] = json!(2);
        let monitor: PodMonitor = serde_json::from_value(as_number.clone()).unwrap();
        assert_eq!(serde_json::to_value(&monitor).unwrap(), as_number);
        // Whole-number floats and exponents, as Go's Quantity.UnmarshalJSON takes them (issue
        // 24, item 9): read from the text, written back as the same number.
        for text in ["1000.0", "1e3", "2.5"] {
            let json = sample_text().replace("\"1.1\"", text);
            let monitor: PodMonitor =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("{text}: {e}"));
            let written = serde_json::to_value(&monitor).unwrap();
            let expected: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(written, expected, "{text}");
        }
    }

    /// The sample as JSON text, with its quantity as the string "1.1".
    fn sample_text() -> String {
        serde_json::to_string(&sample()).unwrap()
    }

    #[test]
    fn garbage_quantities_and_unlisted_enum_values_are_rejected() {
        let mut bad = sample();
        bad["spec"]["nativeHistogramMinBucketFactor"] = json!("1.1.1");
        let err = serde_json::from_value::<PodMonitor>(bad).unwrap_err();
        assert!(
            err.to_string().contains("\"1.1.1\" is not a quantity"),
            "{err}"
        );
        let mut bad = sample();
        bad["spec"]["podMetricsEndpoints"][1]["scheme"] = json!("gopher");
        let err = serde_json::from_value::<PodMonitor>(bad).unwrap_err();
        assert!(err.to_string().contains("gopher"), "{err}");
    }
}

mod certmanager_certificate {
    use super::*;
    use crate::certmanager::io::cert_manager::v1::{
        Certificate, CertificateSpecPrivateKeyAlgorithm,
    };
    use apfkit_runtime::ApplyDefaults;

    fn sample() -> Value {
        let mut sample = yaml(include_str!("../../../fixtures/crds/certificate.yaml"));
        sample["spec"]["privateKey"] = json!({"algorithm": "ECDSA", "size": 256});
        sample["status"] = json!({
            "notAfter": "2026-02-01T10:00:00Z",
            "notBefore": "2025-11-03T10:00:00.5+01:00",
            "renewalTime": "2026-01-02t10:00:00z"
        });
        sample
    }

    /// `format: date-time` values are checked and written back exactly as read (k8s-openapi's
    /// `Time` would rewrite the last two).
    #[test]
    fn times_are_checked_and_kept_as_written() {
        let sample = sample();
        check::<Certificate, _>(
            &sample,
            &sample,
            CERTIFICATES,
            "v1",
            Certificate::apply_defaults,
        );
        let certificate: Certificate = serde_json::from_value(sample.clone()).unwrap();
        let status = certificate.status.unwrap();
        assert_eq!(
            status.not_before.unwrap().as_str(),
            "2025-11-03T10:00:00.5+01:00"
        );
        assert_eq!(
            certificate.spec.unwrap().private_key.unwrap().algorithm,
            Some(CertificateSpecPrivateKeyAlgorithm::ECDSA)
        );
        let mut bad = sample;
        bad["status"]["notAfter"] = json!("2026-02-30T10:00:00Z");
        let err = serde_json::from_value::<Certificate>(bad).unwrap_err();
        assert!(err.to_string().contains("is not a date-time"), "{err}");
    }
}

mod crossplane_operation {
    use super::*;
    use crate::crossplane::io::crossplane::ops::v1alpha1::Operation;
    use apfkit_runtime::ApplyDefaults;

    /// A pipeline step's `input` is an embedded resource without `properties`: typed identity,
    /// everything else kept.
    #[test]
    fn embedded_input_keeps_everything() {
        let sample = json!({
            "apiVersion": "ops.crossplane.io/v1alpha1",
            "kind": "Operation",
            "metadata": {"name": "rotate"},
            "spec": {
                "mode": "Pipeline",
                "pipeline": [{
                    "step": "rotate",
                    "functionRef": {"name": "function-rotate"},
                    "input": {
                        "apiVersion": "rotate.fn.crossplane.io/v1",
                        "kind": "Input",
                        "rotateAfter": "720h",
                        "targets": [{"name": "a"}, {"name": "b"}]
                    }
                }]
            },
            "status": {"appliedResourceRefs": [], "pipeline": []}
        });
        check::<Operation, _>(
            &sample,
            &sample,
            OPERATIONS,
            "v1alpha1",
            Operation::apply_defaults,
        );
        let operation: Operation = serde_json::from_value(sample).unwrap();
        let input = operation.spec.unwrap().pipeline[0].input.clone().unwrap();
        assert_eq!(input.kind.as_deref(), Some("Input"));
        assert_eq!(input.other_fields["rotateAfter"], json!("720h"));
    }
}

mod edge_cases {
    use super::*;
    use crate::edges::KINDS;
    use crate::edges::com::example::edge::v1::{Edge, EdgeSpecMode};
    use apfkit_runtime::ApplyDefaults;

    const EDGES: &str = include_str!("../../../fixtures/crds/edge-cases.yaml");

    /// Defaults of every shape (scalars, enums, lists of objects, maps, quantities, times,
    /// bytes, objects with nested defaults) match kube-apiserver's, and what the schema does not
    /// list is kept.
    #[test]
    fn defaults_of_every_shape_match_kube_apiserver() {
        let sample = json!({
            "apiVersion": "edge.example.com/v1",
            "kind": "Edge",
            "metadata": {"name": "e"},
            "spec": {"ports": [{"name": "https", "port": "https"}], "extra": {"kept": [1, 2]}, "limits": {"memory": 3}}
        });
        check::<Edge, _>(&sample, &sample, EDGES, "v1", Edge::apply_defaults);
        let mut edge: Edge = serde_json::from_value(sample).unwrap();
        edge.apply_defaults();
        let spec = edge.spec.unwrap();
        assert_eq!(spec.mode, Some(EdgeSpecMode::KebabCase));
        assert_eq!(
            spec.limits.as_ref().unwrap().cpu.as_ref().unwrap().as_str(),
            "500m"
        );
        assert_eq!(spec.limits.unwrap().other_fields["memory"], 3);
        assert_eq!(spec.schedule.unwrap().strict, Some(false));
        assert_eq!(spec.other_fields["extra"], json!({"kept": [1, 2]}));
        let mut empty: Edge = serde_json::from_value(json!({"spec": {}})).unwrap();
        empty.apply_defaults();
        let encoded = serde_json::to_value(&empty).unwrap();
        assert_eq!(
            encoded["spec"]["ports"],
            json!([{"name": "http", "port": 80, "protocol": "TCP"}])
        );
    }

    /// Enum values that are not identifiers still name variants, and each keeps its string.
    #[test]
    fn every_enum_value_round_trips() {
        for value in [
            "",
            "kebab-case",
            "snake_case",
            "1h",
            "self",
            "Other",
            "Ünïcode",
            "later",
        ] {
            let mode: EdgeSpecMode = serde_json::from_value(json!(value)).unwrap();
            assert_eq!(mode.as_str(), value);
            assert_eq!(serde_json::to_value(&mode).unwrap(), json!(value));
        }
        assert_eq!(
            serde_json::from_value::<EdgeSpecMode>(json!("later")).unwrap(),
            EdgeSpecMode::Unlisted("later".to_owned())
        );
    }

    #[test]
    fn the_scale_subresource_is_recorded() {
        let kind = KINDS.iter().find(|k| k.kind == "Edge").unwrap();
        assert_eq!(kind.subresources, ["scale", "status"]);
        let scale = kind.scale.as_ref().unwrap();
        assert_eq!(scale.spec_replicas_path, ".spec.replicas");
        assert_eq!(
            scale.label_selector_path.as_deref(),
            Some(".status.selector")
        );
    }
}

mod empty_structs {
    use serde_json::json;

    /// Go writes a bare struct even when empty (`"metadata": {}`); with
    /// `EmptyStructs::Omitted` it is left out, as k8s-openapi leaves out an unset `Option`.
    /// Both read either form back to the same value.
    #[test]
    fn empty_bare_structs_are_written_or_omitted_as_set() {
        let object = json!({"apiVersion": "edge.example.com/v1", "kind": "Edge"});
        let go: crate::edges::com::example::edge::v1::Edge =
            serde_json::from_value(object.clone()).unwrap();
        let omitted: crate::edges_omitted::com::example::edge::v1::Edge =
            serde_json::from_value(object.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&go).unwrap(),
            json!({"apiVersion": "edge.example.com/v1", "kind": "Edge", "metadata": {}})
        );
        assert_eq!(serde_json::to_value(&omitted).unwrap(), object);
        let named =
            json!({"apiVersion": "edge.example.com/v1", "kind": "Edge", "metadata": {"name": "e"}});
        let omitted: crate::edges_omitted::com::example::edge::v1::Edge =
            serde_json::from_value(named.clone()).unwrap();
        assert_eq!(serde_json::to_value(&omitted).unwrap(), named);
    }
}
