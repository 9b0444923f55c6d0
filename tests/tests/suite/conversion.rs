//! Conversion through the hub, as kube-apiserver converts: the vectors of upstream's
//! `v1beta3/conversion_test.go` and the other versions' conversion tests, the worked
//! examples of each version's quirks (decode, default in the source version, convert, encode:
//! v1beta2's 0 shares become 30, v1beta3's kept 0 by annotation), and the
//! bootstrap configuration converted between every pair of versions.

use apfkit_scheme::{FromHub, ToHub};
use apfkit_tests::{apiservices, bootstrap, flowcontrol_versions};
use apfkit_types::hub::flowcontrol as hub;
use apfkit_types::{ApplyDefaults, apiregistration, flowcontrol};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const KEY: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// Decodes `input` as version `S`, defaults it, converts it through the hub to `T`, encodes it.
fn convert<S, T, H>(input: Value) -> Value
where
    S: DeserializeOwned + ApplyDefaults + ToHub<Hub = H>,
    T: FromHub<Hub = H> + Serialize,
{
    let mut source: S = serde_json::from_value(input).expect("decodes");
    source.apply_defaults();
    serde_json::to_value(T::from_owned_hub(source.into_hub())).expect("encodes")
}

fn plc(version: &str, metadata: Value, spec: Value) -> Value {
    json!({"apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"), "kind": "PriorityLevelConfiguration", "metadata": metadata, "spec": spec})
}

fn reject(shares_field: &str, shares: Value) -> Value {
    json!({"type": "Limited", "limited": {shares_field: shares, "limitResponse": {"type": "Reject"}}})
}

mod vectors_7_5 {
    use super::*;
    use flowcontrol::v1beta3::PriorityLevelConfiguration as B3;

    fn v1beta3(annotations: Value, spec: Value) -> B3 {
        serde_json::from_value(plc(
            "v1beta3",
            json!({"name": "p", "annotations": annotations}),
            spec,
        ))
        .unwrap()
    }

    /// A hub level with these annotations (the key, if wanted, is added by the caller: the
    /// v1beta3 hook strips it on the way in).
    fn hub_level(annotations: Value, shares: i32) -> hub::PriorityLevelConfiguration {
        v1beta3(
            annotations,
            reject("nominalConcurrencyShares", json!(shares)),
        )
        .to_hub()
    }

    fn annotations_of(level: &B3) -> Value {
        serde_json::to_value(&level.metadata.annotations).unwrap()
    }

    #[test]
    fn to_hub_strips_the_key_and_leaves_the_source_alone() {
        let source = v1beta3(
            json!({"foo": "bar", KEY: ""}),
            reject("nominalConcurrencyShares", json!(0)),
        );
        let before = source.clone();
        let converted = source.to_hub();
        assert_eq!(
            serde_json::to_value(&converted.metadata.annotations).unwrap(),
            json!({"foo": "bar"})
        );
        assert_eq!(
            converted.spec.limited.unwrap().nominal_concurrency_shares,
            Some(0)
        );
        assert_eq!(source, before, "the source object is not mutated");
    }

    #[test]
    fn to_hub_strips_the_key_even_with_an_empty_spec() {
        let converted = v1beta3(json!({"foo": "bar", KEY: ""}), json!({})).to_hub();
        assert_eq!(
            serde_json::to_value(&converted.metadata.annotations).unwrap(),
            json!({"foo": "bar"})
        );
    }

    #[test]
    fn to_hub_without_the_key_changes_nothing() {
        let converted = v1beta3(
            json!({"foo": "bar"}),
            reject("nominalConcurrencyShares", json!(0)),
        )
        .to_hub();
        assert_eq!(
            serde_json::to_value(&converted.metadata.annotations).unwrap(),
            json!({"foo": "bar"})
        );
        assert_eq!(
            converted.spec.limited.unwrap().nominal_concurrency_shares,
            Some(0)
        );
    }

    #[test]
    fn from_hub_adds_the_key_for_zero_shares_only() {
        let zero = hub_level(json!({"foo": "bar"}), 0);
        assert_eq!(
            annotations_of(&B3::from_hub(&zero)),
            json!({"foo": "bar", KEY: ""})
        );
        let one = hub_level(json!({"foo": "bar"}), 1);
        assert_eq!(annotations_of(&B3::from_hub(&one)), json!({"foo": "bar"}));
    }

    #[test]
    fn from_hub_keeps_an_existing_key_and_its_value() {
        let zero = hub_level(json!({"foo": "bar"}), 0);
        let mut zero_with_key = zero.clone();
        zero_with_key
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(KEY.to_owned(), String::new());
        assert_eq!(
            annotations_of(&B3::from_hub(&zero_with_key)),
            json!({"foo": "bar", KEY: ""})
        );
        let mut non_empty = zero;
        non_empty
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(KEY.to_owned(), "non-empty".to_owned());
        assert_eq!(
            annotations_of(&B3::from_hub(&non_empty)),
            json!({"foo": "bar", KEY: "non-empty"})
        );
        let mut one = hub_level(json!({"foo": "bar"}), 1);
        one.metadata
            .annotations
            .get_or_insert_default()
            .insert(KEY.to_owned(), "non-empty".to_owned());
        assert_eq!(
            annotations_of(&B3::from_hub(&one)),
            json!({"foo": "bar", KEY: "non-empty"})
        );
    }

    #[test]
    fn assured_shares_are_the_hub_nominal_shares() {
        macro_rules! check {
            ($($version:ident),*) => {$(
                let external: flowcontrol::$version::PriorityLevelConfiguration =
                    serde_json::from_value(plc(stringify!($version), json!({"name": "p"}), reject("assuredConcurrencyShares", json!(100)))).unwrap();
                let converted = external.to_hub();
                assert_eq!(converted.spec.limited.as_ref().unwrap().nominal_concurrency_shares, Some(100));
                assert_eq!(flowcontrol::$version::PriorityLevelConfiguration::from_hub(&converted), external);
            )*};
        }
        check!(v1alpha1, v1beta1, v1beta2);
    }
}

mod worked_examples_3_4 {
    use super::*;
    use flowcontrol::{v1, v1beta2, v1beta3};

    #[test]
    fn a_v1beta2_write_v1_read() {
        let input = plc(
            "v1beta2",
            json!({"name": "p1"}),
            json!({"type": "Limited", "limited": {"assuredConcurrencyShares": 0, "limitResponse": {"type": "Queue", "queuing": {}}}}),
        );
        let out = convert::<v1beta2::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
            input,
        );
        assert_eq!(out["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
        assert_eq!(
            out["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
    }

    #[test]
    fn b_v1_jail_level_through_v1beta3_is_lossless() {
        let input = plc(
            "v1",
            json!({"name": "jail", "annotations": {"foo": "bar"}}),
            reject("nominalConcurrencyShares", json!(0)),
        );
        let as_v1beta3 =
            convert::<v1::PriorityLevelConfiguration, v1beta3::PriorityLevelConfiguration, _>(
                input.clone(),
            );
        assert_eq!(
            as_v1beta3["metadata"]["annotations"],
            json!({"foo": "bar", KEY: ""})
        );
        assert_eq!(
            as_v1beta3["spec"]["limited"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0, "limitResponse": {"type": "Reject"}})
        );
        // Written back through v1beta3: defaulting keeps 0, conversion removes the annotation.
        let back = convert::<v1beta3::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
            as_v1beta3,
        );
        let direct = convert::<v1::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
            input.clone(),
        );
        assert_eq!(back, direct);
        assert_eq!(back["metadata"]["annotations"], json!({"foo": "bar"}));
        // Read through v1beta2 the zero is written as 0, with no annotation; read back it becomes 30.
        let as_v1beta2 =
            convert::<v1::PriorityLevelConfiguration, v1beta2::PriorityLevelConfiguration, _>(
                input,
            );
        assert_eq!(as_v1beta2["spec"]["limited"]["assuredConcurrencyShares"], 0);
        assert_eq!(as_v1beta2["metadata"]["annotations"], json!({"foo": "bar"}));
        let lossy = convert::<v1beta2::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
            as_v1beta2,
        );
        assert_eq!(lossy["spec"]["limited"]["nominalConcurrencyShares"], 30);
    }

    #[test]
    fn c_v1beta3_zero_without_annotation_becomes_thirty() {
        let input = plc(
            "v1beta3",
            json!({"name": "p"}),
            reject("nominalConcurrencyShares", json!(0)),
        );
        let out = convert::<v1beta3::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
            input,
        );
        assert_eq!(
            out["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Reject"}})
        );
    }

    #[test]
    fn d_v1_unset_shares_become_thirty() {
        for shares in [Value::Null, json!("absent")] {
            let mut spec = reject("nominalConcurrencyShares", shares.clone());
            if shares == json!("absent") {
                spec["limited"]
                    .as_object_mut()
                    .unwrap()
                    .remove("nominalConcurrencyShares");
            }
            let out = convert::<v1::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
                plc("v1", json!({"name": "p"}), spec),
            );
            assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 30);
            assert_eq!(out["spec"]["limited"]["lendablePercent"], 0);
        }
    }

    #[test]
    fn e_exempt_defaulting_in_every_version() {
        macro_rules! check {
            ($($version:ident),*) => {$(
                let out = convert::<flowcontrol::$version::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
                    plc(stringify!($version), json!({"name": "exempt"}), json!({"type": "Exempt", "exempt": {}})));
                assert_eq!(out["spec"]["exempt"], json!({"nominalConcurrencyShares": 0, "lendablePercent": 0}));
                let bare = convert::<flowcontrol::$version::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
                    plc(stringify!($version), json!({"name": "exempt"}), json!({"type": "Exempt"})));
                assert!(bare["spec"].get("exempt").is_none());
            )*};
        }
        check!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);
    }

    #[test]
    fn f_annotation_on_a_nonzero_v1beta3_object_is_dropped() {
        let input = plc(
            "v1beta3",
            json!({"name": "p", "annotations": {KEY: ""}}),
            reject("nominalConcurrencyShares", json!(5)),
        );
        let hub_view =
            convert::<v1beta3::PriorityLevelConfiguration, v1::PriorityLevelConfiguration, _>(
                input.clone(),
            );
        assert_eq!(hub_view["spec"]["limited"]["nominalConcurrencyShares"], 5);
        // The only annotation is removed; the empty map is left unset, as Go omits it.
        assert!(
            hub_view["metadata"].get("annotations").is_none(),
            "{hub_view}"
        );
        let read_back =
            convert::<v1beta3::PriorityLevelConfiguration, v1beta3::PriorityLevelConfiguration, _>(
                input,
            );
        assert!(
            read_back["metadata"].get("annotations").is_none(),
            "not regenerated: shares are not 0"
        );
        assert_eq!(read_back["spec"]["limited"]["nominalConcurrencyShares"], 5);
    }
}

/// Every bootstrap object converts from every version into every version and matches the
/// fixture of the target version exactly.
#[test]
fn bootstrap_objects_convert_between_every_pair_of_versions() {
    fn to_hub_levels(version: &str, objects: &[Value]) -> Vec<hub::PriorityLevelConfiguration> {
        macro_rules! go {
            ($($v:ident),*) => {
                match version {
                    $(stringify!($v) => objects.iter().map(|o| { let mut x: flowcontrol::$v::PriorityLevelConfiguration = serde_json::from_value(o.clone()).unwrap(); x.apply_defaults(); x.to_hub() }).collect(),)*
                    _ => unreachable!(),
                }
            };
        }
        go!(v1alpha1, v1beta1, v1beta2, v1beta3, v1)
    }
    fn to_hub_schemas(version: &str, objects: &[Value]) -> Vec<hub::FlowSchema> {
        macro_rules! go {
            ($($v:ident),*) => {
                match version {
                    $(stringify!($v) => objects.iter().map(|o| { let mut x: flowcontrol::$v::FlowSchema = serde_json::from_value(o.clone()).unwrap(); x.apply_defaults(); x.to_hub() }).collect(),)*
                    _ => unreachable!(),
                }
            };
        }
        go!(v1alpha1, v1beta1, v1beta2, v1beta3, v1)
    }
    fn from_hub(
        version: &str,
        levels: &[hub::PriorityLevelConfiguration],
        schemas: &[hub::FlowSchema],
    ) -> (Vec<Value>, Vec<Value>) {
        macro_rules! go {
            ($($v:ident),*) => {
                match version {
                    $(stringify!($v) => (
                        levels.iter().map(|l| serde_json::to_value(flowcontrol::$v::PriorityLevelConfiguration::from_hub(l)).unwrap()).collect(),
                        schemas.iter().map(|s| serde_json::to_value(flowcontrol::$v::FlowSchema::from_hub(s)).unwrap()).collect(),
                    ),)*
                    _ => unreachable!(),
                }
            };
        }
        go!(v1alpha1, v1beta1, v1beta2, v1beta3, v1)
    }
    for source in flowcontrol_versions() {
        let (levels, schemas) = bootstrap(source);
        let hub_levels = to_hub_levels(source, &levels);
        let hub_schemas = to_hub_schemas(source, &schemas);
        for target in flowcontrol_versions() {
            let (expected_levels, expected_schemas) = bootstrap(target);
            let (out_levels, out_schemas) = from_hub(target, &hub_levels, &hub_schemas);
            assert_eq!(out_levels, expected_levels, "levels {source} → {target}");
            assert_eq!(out_schemas, expected_schemas, "schemas {source} → {target}");
        }
    }
}

#[test]
fn apiservices_convert_between_versions() {
    for (source, target) in [("v1", "v1beta1"), ("v1beta1", "v1"), ("v1", "v1")] {
        let expected = apiservices(target);
        for (object, expected) in apiservices(source).into_iter().zip(expected) {
            let out = match (source, target) {
                ("v1", "v1beta1") => convert::<
                    apiregistration::v1::APIService,
                    apiregistration::v1beta1::APIService,
                    _,
                >(object),
                ("v1beta1", "v1") => convert::<
                    apiregistration::v1beta1::APIService,
                    apiregistration::v1::APIService,
                    _,
                >(object),
                _ => {
                    convert::<apiregistration::v1::APIService, apiregistration::v1::APIService, _>(
                        object,
                    )
                }
            };
            assert_eq!(out, expected, "{source} → {target}");
        }
    }
    // A service without a port gets 443 from defaulting before it reaches the hub.
    let no_port = json!({"apiVersion": "apiregistration.k8s.io/v1beta1", "kind": "APIService", "metadata": {"name": "v1.x"},
        "spec": {"group": "x", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1, "service": {"namespace": "n", "name": "s"}}});
    let out = convert::<apiregistration::v1beta1::APIService, apiregistration::v1::APIService, _>(
        no_port,
    );
    assert_eq!(out["spec"]["service"]["port"], 443);
}

/// Snapshots of the bootstrap configuration converted from v1 into every version.
#[test]
fn bootstrap_in_every_version_snapshot() {
    let (levels, schemas) = bootstrap("v1");
    for target in flowcontrol_versions() {
        let mut all = Vec::new();
        macro_rules! go {
            ($($v:ident),*) => {
                match target {
                    $(stringify!($v) => {
                        for l in &levels { all.push(convert::<flowcontrol::v1::PriorityLevelConfiguration, flowcontrol::$v::PriorityLevelConfiguration, _>(l.clone())); }
                        for s in &schemas { all.push(convert::<flowcontrol::v1::FlowSchema, flowcontrol::$v::FlowSchema, _>(s.clone())); }
                    })*
                    _ => unreachable!(),
                }
            };
        }
        go!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);
        insta::assert_json_snapshot!(format!("bootstrap_{target}"), all);
    }
}

#[test]
fn typed_lists_convert_with_their_items() {
    let (_, schemas) = bootstrap("v1beta2");
    let list: flowcontrol::v1beta2::FlowSchemaList = serde_json::from_value(json!({
        "metadata": {"resourceVersion": "42"},
        "items": schemas,
    }))
    .unwrap();
    let converted = flowcontrol::v1::FlowSchemaList::from_hub(&list.to_hub());
    assert_eq!(converted.metadata.resource_version.as_deref(), Some("42"));
    let expected: Vec<flowcontrol::v1::FlowSchema> = bootstrap("v1")
        .1
        .into_iter()
        .map(|o| serde_json::from_value(o).unwrap())
        .collect();
    assert_eq!(converted.items, expected);
    let back = flowcontrol::v1beta2::FlowSchemaList::from_owned_hub(converted.into_hub());
    assert_eq!(back, list);
}
