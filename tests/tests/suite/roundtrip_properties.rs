//! Property tests of conversion: for every ordered pair of versions (a, b) and random objects
//! valid in a, a → hub → b → hub → a gives the object back as a stores it (defaulted), with no
//! warning. The one lossy case, zero shares through a version that cannot express zero
//! (v1alpha1, v1beta1, v1beta2), is asserted exactly: what changes and the warning given.
//! 1,000 cases, each run through all 25 pairs.

use std::fmt::Debug;

use serde::de::DeserializeOwned;

use apfkit_scheme::scheme::{HubObject, SCHEME, Target, UnknownFields};
use apfkit_scheme::validation::{self, Options};
use apfkit_scheme::{FromHub, ToHub};
use apfkit_tests::flowcontrol_versions;
use apfkit_types::ApplyDefaults;
use apfkit_types::flowcontrol;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const KEY: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
const CANNOT_EXPRESS_ZERO: &[&str] = &["v1alpha1", "v1beta1", "v1beta2"];

fn label() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,4})?"
}

fn annotations() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-z]{1,5}\\.example/[a-z]{1,6}", "[ -~]{0,12}", 0..3)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
}

fn conditions() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop::collection::btree_set("[A-Z][a-z]{2,8}", 1..3).prop_map(|types| {
        Value::Array(
            types
                .into_iter()
                .map(|t| json!({"type": t, "status": "True", "reason": "Seen", "lastTransitionTime": "2026-01-02T03:04:05Z"}))
                .collect(),
        )
    }))
}

/// A Limited level's parts in version-neutral form: (shares, lendable, borrowing, response).
fn limited() -> impl Strategy<Value = (Option<i32>, Option<i32>, Option<i32>, Value)> {
    let queue = (1..=128i32, 1..=1000i32).prop_flat_map(|(queues, limit)| {
        (1..=queues.min(8)).prop_map(move |hand| json!({"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": limit}}))
    });
    let response = prop_oneof![Just(json!({"type": "Reject"})), queue];
    (
        prop::option::of(prop_oneof![Just(0), 1..=1000i32]),
        prop::option::of(0..=100i32),
        prop::option::of(0..=500i32),
        response,
    )
}

/// A valid PriorityLevelConfiguration in `version`, from version-neutral parts.
#[derive(Debug, Clone)]
struct Level {
    name: String,
    annotations: Map<String, Value>,
    limited: (Option<i32>, Option<i32>, Option<i32>, Value),
    exempt: Option<(Option<i32>, Option<i32>)>,
    conditions: Option<Value>,
}

fn level() -> impl Strategy<Value = Level> {
    let exempt = prop::option::of((prop::option::of(0..=100i32), prop::option::of(0..=100i32)));
    (
        label(),
        annotations(),
        limited(),
        prop::option::weighted(0.2, exempt),
        conditions(),
    )
        .prop_map(|(name, annotations, limited, exempt, conditions)| Level {
            name: if exempt.is_some() {
                "exempt".into()
            } else {
                format!("pl-{name}")
            },
            annotations,
            limited,
            exempt: exempt.map(|e| e.unwrap_or_default()),
            conditions,
        })
}

impl Level {
    fn document(&self, version: &str) -> Value {
        let mut annotations = self.annotations.clone();
        let spec = match self.exempt {
            Some((shares, lendable)) => {
                let mut exempt = Map::new();
                if let Some(s) = shares {
                    exempt.insert("nominalConcurrencyShares".into(), s.into());
                }
                if let Some(l) = lendable {
                    exempt.insert("lendablePercent".into(), l.into());
                }
                json!({"type": "Exempt", "exempt": exempt})
            }
            None => {
                let (shares, lendable, borrowing, response) = &self.limited;
                let field = if CANNOT_EXPRESS_ZERO.contains(&version) {
                    "assuredConcurrencyShares"
                } else {
                    "nominalConcurrencyShares"
                };
                let mut limited = Map::new();
                limited.insert("limitResponse".into(), response.clone());
                if let Some(s) = shares {
                    limited.insert(field.into(), (*s).into());
                    if *s == 0 && version == "v1beta3" {
                        annotations.insert(KEY.into(), "".into());
                    }
                }
                if let Some(l) = lendable {
                    limited.insert("lendablePercent".into(), (*l).into());
                }
                if let Some(b) = borrowing {
                    limited.insert("borrowingLimitPercent".into(), (*b).into());
                }
                json!({"type": "Limited", "limited": limited})
            }
        };
        let mut doc = json!({
            "apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"),
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": self.name, "annotations": annotations},
            "spec": spec,
        });
        if let Some(conditions) = &self.conditions {
            doc["status"] = json!({"conditions": conditions});
        }
        doc
    }
}

fn subject() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z:]{1,12}".prop_map(|n| json!({"kind": "User", "user": {"name": n}})),
        "[a-z:]{1,12}".prop_map(|n| json!({"kind": "Group", "group": {"name": n}})),
        (label(), prop_oneof![Just("*".to_owned()), label()]).prop_map(|(ns, n)| json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": n}})),
    ]
}

fn verbs() -> impl Strategy<Value = Vec<String>> {
    let verb = prop::sample::select(vec![
        "get",
        "list",
        "create",
        "update",
        "delete",
        "deletecollection",
        "patch",
        "watch",
        "proxy",
    ]);
    prop_oneof![
        Just(vec!["*".to_owned()]),
        prop::collection::btree_set(verb, 1..4)
            .prop_map(|s| s.into_iter().map(str::to_owned).collect())
    ]
}

fn resource_rule() -> impl Strategy<Value = Value> {
    let star_or = |s: BoxedStrategy<String>| {
        prop_oneof![
            Just(vec!["*".to_owned()]),
            prop::collection::btree_set(s, 1..3).prop_map(|s| s.into_iter().collect::<Vec<_>>())
        ]
    };
    (
        verbs(),
        star_or("[a-z.]{0,10}".boxed()),
        star_or("[a-z]{1,8}(/status)?".boxed()),
        prop::option::of(any::<bool>()),
        prop::option::of(star_or(label().boxed())),
    )
        .prop_map(|(verbs, groups, resources, cluster_scope, namespaces)| {
            let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources});
            let cluster = cluster_scope.unwrap_or(false);
            if let Some(c) = cluster_scope {
                rule["clusterScope"] = c.into();
            }
            match namespaces {
                Some(ns) => rule["namespaces"] = json!(ns),
                None if !cluster => rule["namespaces"] = json!(["*"]),
                None => {}
            }
            rule
        })
}

fn non_resource_rule() -> impl Strategy<Value = Value> {
    let urls = prop_oneof![
        Just(vec!["*".to_owned()]),
        prop::collection::btree_set("/[a-z]{1,6}(/[a-z]{1,6})?(/\\*)?", 1..3)
            .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
    ];
    (verbs(), urls).prop_map(|(verbs, urls)| json!({"verbs": verbs, "nonResourceURLs": urls}))
}

fn rule() -> impl Strategy<Value = Value> {
    (prop::collection::vec(subject(), 1..3), prop::collection::vec(resource_rule(), 0..3), prop::collection::vec(non_resource_rule(), 0..2))
        .prop_map(|(subjects, mut resource_rules, non_resource_rules)| {
            if resource_rules.is_empty() && non_resource_rules.is_empty() {
                resource_rules.push(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}));
            }
            let mut r = json!({"subjects": subjects});
            if !resource_rules.is_empty() {
                r["resourceRules"] = json!(resource_rules);
            }
            if !non_resource_rules.is_empty() {
                r["nonResourceRules"] = json!(non_resource_rules);
            }
            r
        })
}

fn flow_schema() -> impl Strategy<Value = Value> {
    (label(), annotations(), prop::option::of(2..=10_000i32), label(), prop::option::of(prop::sample::select(vec!["ByUser", "ByNamespace"])), prop::collection::vec(rule(), 0..3), conditions())
        .prop_map(|(name, annotations, precedence, level, distinguisher, rules, conditions)| {
            let mut spec = json!({"priorityLevelConfiguration": {"name": level}, "rules": rules});
            if let Some(p) = precedence {
                spec["matchingPrecedence"] = p.into();
            }
            if let Some(d) = distinguisher {
                spec["distinguisherMethod"] = json!({"type": d});
            }
            let mut doc = json!({"kind": "FlowSchema", "metadata": {"name": format!("fs-{name}"), "annotations": annotations}, "spec": spec});
            if let Some(c) = conditions {
                doc["status"] = json!({"conditions": c});
            }
            doc
        })
}

/// The object as Kubernetes reads it: Go omits an empty annotation map, so `{}` and absent are
/// the same object. (A v1beta3 round trip with zero shares cannot keep that difference: once
/// the preserve-zero key is added and removed again, nothing tells the two apart.)
fn as_read(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && meta
            .get("annotations")
            .is_some_and(|a| a.as_object().is_some_and(Map::is_empty))
    {
        meta.remove("annotations");
    }
    object
}

fn convert(document: &Value, version: &str) -> (Value, Vec<String>) {
    let target: Target = version.parse().unwrap();
    let out = SCHEME
        .convert_value(document, &target, UnknownFields::Strict)
        .unwrap_or_else(|e| panic!("{e}\n{document}"));
    (
        out.object,
        out.warnings.iter().map(ToString::to_string).collect(),
    )
}

fn assert_valid(document: &Value, version: &str) {
    let (objects, _) = SCHEME
        .to_hub_value(document, UnknownFields::Strict)
        .unwrap();
    let errors = validation::validate(
        &objects[0],
        &Options {
            request_version: Some(version),
            ..Options::default()
        },
    );
    assert!(
        errors.is_empty(),
        "the generator made an invalid object: {errors:?}\n{document}"
    );
}

/// Runs a → b → a for every pair of versions on the object `make` builds in each version.
fn check_all_pairs(make: &dyn Fn(&str) -> Value) {
    for a in flowcontrol_versions() {
        let source = make(a);
        assert_valid(&source, a);
        let stored = SCHEME
            .default_value(&source, UnknownFields::Strict)
            .unwrap()
            .object;
        let zero_shares = ["nominalConcurrencyShares", "assuredConcurrencyShares"]
            .iter()
            .any(|f| stored["spec"]["limited"][f] == json!(0));
        for b in flowcontrol_versions() {
            let (in_b, warnings) = convert(&source, b);
            let (back, back_warnings) = convert(&in_b, a);
            assert!(
                back_warnings.is_empty(),
                "{a} → {b} → {a}: {back_warnings:?}"
            );
            if zero_shares && CANNOT_EXPRESS_ZERO.contains(&b) {
                assert_eq!(
                    warnings,
                    [format!(
                        "spec.limited.nominalConcurrencyShares: 0 cannot be kept in flowcontrol.apiserver.k8s.io/{b}: it reads back as 30"
                    )],
                    "{a} → {b}"
                );
                let mut expected = stored.clone();
                let field = if CANNOT_EXPRESS_ZERO.contains(&a) {
                    "assuredConcurrencyShares"
                } else {
                    "nominalConcurrencyShares"
                };
                expected["spec"]["limited"][field] = json!(30);
                // The key goes, and a map it leaves empty is left out (as the v1beta3 hook does).
                if let Some(annotations) = expected["metadata"]["annotations"].as_object_mut()
                    && annotations.remove(KEY).is_some()
                    && annotations.is_empty()
                {
                    expected["metadata"]
                        .as_object_mut()
                        .unwrap()
                        .remove("annotations");
                }
                assert_eq!(
                    as_read(back),
                    as_read(expected),
                    "{a} → {b} → {a} (zero shares)"
                );
            } else {
                assert!(warnings.is_empty(), "{a} → {b}: {warnings:?}");
                assert_eq!(as_read(back), as_read(stored.clone()), "{a} → {b} → {a}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn priority_levels_round_trip_between_every_pair(level in level()) {
        check_all_pairs(&|version| level.document(version));
    }

    #[test]
    fn flow_schemas_round_trip_between_every_pair(schema in flow_schema()) {
        check_all_pairs(&|version| {
            let mut doc = schema.clone();
            doc["apiVersion"] = json!(format!("flowcontrol.apiserver.k8s.io/{version}"));
            doc
        });
    }
}

/// What `FromHub::round_trips` and `ApplyDefaults::is_defaulted` claim, checked on `hub`
/// converted to `T`: a hub object said to round-trip comes back equal, and `is_defaulted` is
/// exactly whether defaulting changes nothing. Returns whether the conversion took the path
/// without a read-back.
fn check_predicates<T>(hub: &<T as FromHub>::Hub) -> bool
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Clone + PartialEq + Debug,
    <T as FromHub>::Hub: Clone + PartialEq + Debug,
{
    let external = T::from_hub(hub);
    let round_trips = T::round_trips(hub);
    if round_trips {
        assert_eq!(
            external.clone().into_hub(),
            *hub,
            "{} said to round-trip",
            std::any::type_name::<T>()
        );
    }
    let mut defaulted = external.clone();
    defaulted.apply_defaults();
    assert_eq!(
        external.is_defaulted(),
        defaulted == external,
        "is_defaulted of {external:?}"
    );
    round_trips && external.is_defaulted()
}

/// The hub object through every version's type of its kind: whether each took the path
/// without a read-back, by version.
fn check_predicates_everywhere(hub: &HubObject) -> Vec<(&'static str, bool)> {
    macro_rules! every_version {
        ($kind:ident, $hub:expr, $($version:ident),*) => {
            vec![$((stringify!($version), check_predicates::<flowcontrol::$version::$kind>($hub))),*]
        };
    }
    let checked = match hub {
        HubObject::PriorityLevelConfiguration(hub) => every_version!(
            PriorityLevelConfiguration,
            hub,
            v1alpha1,
            v1beta1,
            v1beta2,
            v1beta3,
            v1
        ),
        HubObject::FlowSchema(hub) => {
            every_version!(FlowSchema, hub, v1alpha1, v1beta1, v1beta2, v1beta3, v1)
        }
        HubObject::APIService(_) => unreachable!("flowcontrol objects only"),
    };
    let versions: Vec<&str> = checked.iter().map(|(version, _)| *version).collect();
    assert_eq!(
        versions,
        flowcontrol_versions(),
        "the list above is the registry's"
    );
    checked
}

fn metadata(object: &mut HubObject) -> &mut ObjectMeta {
    match object {
        HubObject::PriorityLevelConfiguration(level) => &mut level.metadata,
        HubObject::FlowSchema(schema) => &mut schema.metadata,
        HubObject::APIService(service) => &mut service.metadata,
    }
}

/// `is_defaulted` on an object as read in its own version, before any defaulting: exactly
/// whether defaulting changes nothing. Returns the answer.
fn check_is_defaulted(document: &Value, version: &str) -> bool {
    fn check<T: DeserializeOwned + ApplyDefaults + Clone + PartialEq + Debug>(
        document: &Value,
    ) -> bool {
        let read: T = serde_json::from_value(document.clone()).unwrap();
        let mut defaulted = read.clone();
        defaulted.apply_defaults();
        assert_eq!(read.is_defaulted(), defaulted == read, "{document}");
        read.is_defaulted()
    }
    macro_rules! by_version {
        ($($version:ident),*) => {
            match (version, document["kind"].as_str()) {
                $(
                    (stringify!($version), Some("FlowSchema")) => {
                        check::<flowcontrol::$version::FlowSchema>(document)
                    }
                    (stringify!($version), _) => {
                        check::<flowcontrol::$version::PriorityLevelConfiguration>(document)
                    }
                )*
                _ => unreachable!("{version} is not in the list"),
            }
        };
    }
    by_version!(v1alpha1, v1beta1, v1beta2, v1beta3, v1)
}

/// `hub` as a caller could hand it over: with the v1beta3 zero-shares key (which only that
/// version's hooks take away), with an empty annotation map, or with the defaulted fields a
/// version's defaulting would set taken out again.
fn variants(hub: &HubObject) -> Vec<HubObject> {
    let mut out = vec![hub.clone()];
    let mut keyed = hub.clone();
    metadata(&mut keyed)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(KEY.into(), "kept?".into());
    out.push(keyed);
    let mut empty = hub.clone();
    metadata(&mut empty).annotations = Some(Default::default());
    out.push(empty);
    let mut bare = hub.clone();
    match &mut bare {
        HubObject::PriorityLevelConfiguration(level) => {
            if let Some(limited) = level.spec.limited.as_mut() {
                limited.nominal_concurrency_shares = None;
                limited.lendable_percent = None;
            }
            if let Some(exempt) = level.spec.exempt.as_mut() {
                exempt.lendable_percent = None;
            }
        }
        HubObject::FlowSchema(schema) => schema.spec.matching_precedence = None,
        HubObject::APIService(_) => {}
    }
    out.push(bare);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The lossy-conversion check skips its read-back on what these two predicates say; in
    /// debug builds it also asserts the read-back agrees, but this holds in any build.
    #[test]
    fn lossless_predicates_agree_with_the_read_back(level in level(), schema in flow_schema()) {
        for version in flowcontrol_versions() {
            let mut schema = schema.clone();
            schema["apiVersion"] = json!(format!("flowcontrol.apiserver.k8s.io/{version}"));
            for document in [level.document(version), schema] {
                check_is_defaulted(&document, version);
                let mut unmarked = document.clone();
                if let Some(annotations) = unmarked["metadata"]["annotations"].as_object_mut() {
                    annotations.remove(KEY);
                }
                check_is_defaulted(&unmarked, version);
                let (hubs, _) = SCHEME.to_hub_value(&document, UnknownFields::Strict).unwrap();
                for hub in variants(&hubs[0]) {
                    check_predicates_everywhere(&hub);
                }
                // Read back in its own version, an object defaulted there takes the fast path
                // unless its annotations are an empty map in v1beta3 (which that version's
                // hooks cannot promise to keep).
                let own = check_predicates_everywhere(&hubs[0]);
                let empty_annotations =
                    document["metadata"]["annotations"].as_object().is_some_and(Map::is_empty);
                let fast = own.iter().find(|(v, _)| *v == version).unwrap().1;
                prop_assert!(
                    fast || (version == "v1beta3" && empty_annotations),
                    "{version}: {document}"
                );
            }
        }
    }
}

#[test]
fn v1_zero_shares_through_v1beta3_is_lossless() {
    let level = Level {
        name: "jail".into(),
        annotations: Map::new(),
        limited: (Some(0), None, None, json!({"type": "Reject"})),
        exempt: None,
        conditions: None,
    };
    let source = level.document("v1");
    let (in_v1beta3, warnings) = convert(&source, "v1beta3");
    assert!(warnings.is_empty(), "{warnings:?}");
    let (back, _) = convert(&in_v1beta3, "v1");
    assert_eq!(
        as_read(back.clone()),
        as_read(
            SCHEME
                .default_value(&source, UnknownFields::Strict)
                .unwrap()
                .object
        )
    );
    assert_eq!(back["spec"]["limited"]["nominalConcurrencyShares"], 0);
}
