//! kube-apiserver's defaulting, as `ApplyDefaults` reproduces it: every vector of upstream's
//! `pkg/apis/flowcontrol/*/defaults_test.go`, the order of the generated defaulters
//! (`zz_generated.defaults.go`), and APIService's defaults.

use apfkit_types::{ApplyDefaults, apiregistration, flowcontrol};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const PRESERVE: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// Decodes `input` as `T`, applies defaults, and returns the encoded result.
fn defaulted<T: DeserializeOwned + Serialize + ApplyDefaults>(input: Value) -> Value {
    let mut object: T = serde_json::from_value(input).expect("decodes");
    object.apply_defaults();
    serde_json::to_value(object).expect("encodes")
}

fn plc(metadata: Value, spec: Value) -> Value {
    json!({ "metadata": metadata, "spec": spec })
}

mod v1 {
    use super::*;
    type Plc = flowcontrol::v1::PriorityLevelConfiguration;

    #[test]
    fn exempt_empty_gets_zeros() {
        let out = defaulted::<Plc>(plc(json!({}), json!({"type": "Exempt", "exempt": {}})));
        assert_eq!(
            out["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
    }

    #[test]
    fn limited_shares_five_gets_lendable_percent() {
        let out = defaulted::<Plc>(plc(
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}),
        ));
        assert_eq!(
            out["spec"]["limited"],
            json!({"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}})
        );
    }

    #[test]
    fn null_shares_become_thirty() {
        let out = defaulted::<Plc>(plc(
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": null, "limitResponse": {"type": "Reject"}}}),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 30);
        assert_eq!(out["spec"]["limited"]["lendablePercent"], 0);
        let absent = defaulted::<Plc>(plc(
            json!({}),
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
        ));
        assert_eq!(absent["spec"]["limited"]["nominalConcurrencyShares"], 30);
    }

    #[test]
    fn zero_shares_stay_zero() {
        let out = defaulted::<Plc>(plc(
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 0);
        assert_eq!(out["spec"]["limited"]["lendablePercent"], 0);
    }

    #[test]
    fn exempt_absent_stays_absent() {
        let out = defaulted::<Plc>(plc(json!({}), json!({"type": "Exempt"})));
        assert!(out["spec"].get("exempt").is_none(), "{out}");
    }

    #[test]
    fn borrowing_limit_is_never_defaulted() {
        let out = defaulted::<Plc>(plc(
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}),
        ));
        assert!(
            out["spec"]["limited"]
                .get("borrowingLimitPercent")
                .is_none()
        );
    }
}

mod v1beta3 {
    use super::*;
    type Plc = flowcontrol::v1beta3::PriorityLevelConfiguration;

    fn limited(shares: i32, limit_response: Value) -> Value {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "limitResponse": limit_response}})
    }

    #[test]
    fn exempt_empty_gets_zeros() {
        let out = defaulted::<Plc>(plc(json!({}), json!({"type": "Exempt", "exempt": {}})));
        assert_eq!(
            out["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
    }

    #[test]
    fn shares_five_gets_lendable_percent() {
        let out = defaulted::<Plc>(plc(json!({}), limited(5, json!({"type": "Reject"}))));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 5);
        assert_eq!(out["spec"]["limited"]["lendablePercent"], 0);
    }

    #[test]
    fn empty_queuing_gets_queue_defaults() {
        let out = defaulted::<Plc>(plc(
            json!({}),
            limited(5, json!({"type": "Queue", "queuing": {}})),
        ));
        assert_eq!(
            out["spec"]["limited"]["limitResponse"]["queuing"],
            json!({"handSize": 8, "queues": 64, "queueLengthLimit": 50})
        );
    }

    #[test]
    fn zero_shares_without_annotation_become_thirty() {
        let out = defaulted::<Plc>(plc(
            json!({"name": "p"}),
            limited(0, json!({"type": "Reject"})),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 30);
    }

    #[test]
    fn zero_shares_with_empty_annotation_stay_zero() {
        let out = defaulted::<Plc>(plc(
            json!({"annotations": {PRESERVE: ""}}),
            limited(0, json!({"type": "Reject"})),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 0);
        assert_eq!(out["metadata"]["annotations"][PRESERVE], "");
    }

    #[test]
    fn zero_shares_with_any_annotation_value_stay_zero() {
        let out = defaulted::<Plc>(plc(
            json!({"annotations": {PRESERVE: "yes"}}),
            limited(0, json!({"type": "Reject"})),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 0);
    }

    #[test]
    fn positive_shares_with_annotation_are_kept_and_so_is_the_annotation() {
        let out = defaulted::<Plc>(plc(
            json!({"annotations": {PRESERVE: ""}}),
            limited(1, json!({"type": "Reject"})),
        ));
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 1);
        assert_eq!(out["metadata"]["annotations"][PRESERVE], "");
    }
}

mod older_versions {
    use super::*;

    #[test]
    fn assured_shares_five_gets_lendable_percent() {
        let spec = json!({"type": "Limited", "limited": {"assuredConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}});
        for out in [
            defaulted::<flowcontrol::v1beta2::PriorityLevelConfiguration>(plc(
                json!({}),
                spec.clone(),
            )),
            defaulted::<flowcontrol::v1beta1::PriorityLevelConfiguration>(plc(
                json!({}),
                spec.clone(),
            )),
            defaulted::<flowcontrol::v1alpha1::PriorityLevelConfiguration>(plc(
                json!({}),
                spec.clone(),
            )),
        ] {
            assert_eq!(
                out["spec"]["limited"],
                json!({"assuredConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}})
            );
        }
    }

    #[test]
    fn zero_assured_shares_cannot_be_expressed() {
        // v1beta2 with 0 shares and an empty queuing: both are filled in (shares 30; queues 64,
        // hand 8, queue length 50).
        let out = defaulted::<flowcontrol::v1beta2::PriorityLevelConfiguration>(plc(
            json!({"name": "p1"}),
            json!({"type": "Limited", "limited": {"assuredConcurrencyShares": 0, "limitResponse": {"type": "Queue", "queuing": {}}}}),
        ));
        assert_eq!(
            out["spec"]["limited"],
            json!({"assuredConcurrencyShares": 30, "lendablePercent": 0,
                   "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
    }
}

#[test]
fn matching_precedence_zero_or_unset_becomes_1000_in_every_version() {
    macro_rules! check {
        ($($version:ident),*) => {$(
            for spec in [json!({"priorityLevelConfiguration": {"name": "p"}}), json!({"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 0})] {
                let out = defaulted::<flowcontrol::$version::FlowSchema>(json!({"spec": spec}));
                assert_eq!(out["spec"]["matchingPrecedence"], 1000, "{}", stringify!($version));
            }
            let kept = defaulted::<flowcontrol::$version::FlowSchema>(json!({"spec": {"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 7}}));
            assert_eq!(kept["spec"]["matchingPrecedence"], 7);
        )*};
    }
    check!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);
}

#[test]
fn zero_queue_parameters_are_replaced_and_absent_queuing_is_not_created() {
    let out = defaulted::<flowcontrol::v1::PriorityLevelConfiguration>(plc(
        json!({}),
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0, "handSize": 0, "queueLengthLimit": 0}}}}),
    ));
    assert_eq!(
        out["spec"]["limited"]["limitResponse"]["queuing"],
        json!({"queues": 64, "handSize": 8, "queueLengthLimit": 50})
    );
    let reject = defaulted::<flowcontrol::v1::PriorityLevelConfiguration>(plc(
        json!({}),
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}),
    ));
    assert!(
        reject["spec"]["limited"]["limitResponse"]
            .get("queuing")
            .is_none()
    );
}

#[test]
fn apiservice_port_defaults_to_443_only_with_a_service() {
    let spec = |service: Value| json!({"spec": {"group": "g", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1, "service": service}});
    let out = defaulted::<apiregistration::v1::APIService>(spec(
        json!({"namespace": "ns", "name": "svc"}),
    ));
    assert_eq!(out["spec"]["service"]["port"], 443);
    let kept = defaulted::<apiregistration::v1beta1::APIService>(spec(
        json!({"namespace": "ns", "name": "svc", "port": 8443}),
    ));
    assert_eq!(kept["spec"]["service"]["port"], 8443);
    let local = defaulted::<apiregistration::v1::APIService>(
        json!({"spec": {"group": "g", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1}}),
    );
    assert!(local["spec"].get("service").is_none());
}
