//! Validation as kube-apiserver validates: the vectors of upstream's `validation_test.go`
//! (`TestFlowSchemaValidation`) and of the PriorityLevelConfiguration `strategy_test.go`
//! (zero shares on create and update), the rules of `ValidatePriorityLevelConfiguration` and of
//! kube-aggregator's `ValidateAPIService`, with kube-apiserver's paths and messages. Objects are decoded, defaulted
//! in their version and converted to the hub first, as the API server does.

use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_scheme::validation::{Options, validate};
use apfkit_tests::{apiservices, bootstrap, flowcontrol_versions};
use serde_json::{Value, json};

fn hub(document: &Value) -> HubObject {
    let (mut objects, _) = SCHEME
        .to_hub_value(document, UnknownFields::Strict)
        .expect("decodes");
    objects.remove(0)
}

fn errors_with(document: &Value, options: &Options<'_>) -> Vec<String> {
    validate(&hub(document), options)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn errors(document: &Value) -> Vec<String> {
    errors_with(document, &Options::default())
}

/// A valid base FlowSchema for the vectors: name `system-foo`, precedence 50, one user
/// subject, one resource rule.
fn base_fs() -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "system-foo"},
        "spec": {"matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "system-bar"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}})
}

/// `document` with the value at `pointer` set; the last segment may be a new key.
fn with(mut document: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("{pointer}"));
    let parent = document
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{pointer}"));
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{pointer}"),
    }
    document
}

const RULE: &str = "/spec/rules/0";
const S0: &str = "spec.rules[0].subjects[0]";

fn fixed_exempt_fs() -> Value {
    bootstrap("v1").1[0].clone()
}

fn fixed_catch_all_fs() -> Value {
    bootstrap("v1").1[10].clone()
}

#[test]
fn base_flow_schema_is_valid() {
    assert_eq!(errors(&base_fs()), Vec::<String>::new());
}

mod flow_schema_vectors_7_1 {
    use super::*;

    #[test]
    fn v01_rule_without_resource_or_non_resource_rules() {
        let doc = with(
            base_fs(),
            RULE,
            json!({"subjects": [{"kind": "User", "user": {"name": "noxu"}}]}),
        );
        assert_eq!(
            errors(&doc),
            [
                "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty"
            ]
        );
    }

    #[test]
    fn v02_group_subject() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/subjects/0"),
            json!({"kind": "Group", "group": {"name": "noxu"}}),
        );
        assert!(errors(&doc).is_empty());
    }

    #[test]
    fn v03_service_account_kind_with_user_and_group() {
        let doc = with(
            base_fs(),
            RULE,
            json!({"subjects": [{"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}),
        );
        assert_eq!(
            errors(&doc),
            [
                format!(
                    "{S0}.serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'"
                ),
                format!("{S0}.user: Forbidden: user is forbidden when subject kind is not 'User'"),
                format!(
                    "{S0}.group: Forbidden: group is forbidden when subject kind is not 'Group'"
                ),
            ]
        );
    }

    #[test]
    fn v04_user_kind_with_group_and_service_account() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/subjects/0"),
            json!({"kind": "User", "group": {"name": "fred"}, "serviceAccount": {"namespace": "s", "name": "n"}}),
        );
        assert_eq!(
            errors(&doc),
            [
                format!("{S0}.user: Required value: user is required when subject kind is 'User'"),
                format!(
                    "{S0}.serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"
                ),
                format!(
                    "{S0}.group: Forbidden: group is forbidden when subject kind is not 'Group'"
                ),
            ]
        );
    }

    #[test]
    fn v05_group_kind_with_user_and_service_account() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/subjects/0"),
            json!({"kind": "Group", "user": {"name": "fred"}, "serviceAccount": {"namespace": "s", "name": "n"}}),
        );
        assert_eq!(
            errors(&doc),
            [
                format!(
                    "{S0}.group: Required value: group is required when subject kind is 'Group'"
                ),
                format!(
                    "{S0}.serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"
                ),
                format!("{S0}.user: Forbidden: user is forbidden when subject kind is not 'User'"),
            ]
        );
    }

    #[test]
    fn v06_v09_mandatory_schemas_with_their_fixed_spec() {
        assert!(errors(&fixed_exempt_fs()).is_empty());
        assert!(errors(&fixed_catch_all_fs()).is_empty());
    }

    #[test]
    fn v07_exempt_schema_with_another_spec() {
        let doc = with(
            fixed_exempt_fs(),
            "/spec/rules/0/nonResourceRules/0/nonResourceURLs",
            json!(["/"]),
        );
        let found = errors(&doc);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("spec: Invalid value: ")
                && found[0].ends_with(": spec of 'exempt' must equal the fixed value"),
            "{found:?}"
        );
    }

    #[test]
    fn v08_catch_all_schema_with_another_spec() {
        let doc = with(
            fixed_catch_all_fs(),
            "/spec/rules/0/nonResourceRules/0/nonResourceURLs",
            json!(["/"]),
        );
        let found = errors(&doc);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].ends_with(": spec of 'catch-all' must equal the fixed value"),
            "{found:?}"
        );
    }

    #[test]
    fn empty_user_and_group_names_are_required() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/subjects"),
            json!([{"kind": "User", "user": {"name": ""}}, {"kind": "Group", "group": {"name": ""}}]),
        );
        assert_eq!(
            errors(&doc),
            [
                "spec.rules[0].subjects[0].user.name: Required value",
                "spec.rules[0].subjects[1].group.name: Required value",
            ]
        );
    }

    #[test]
    fn v10_precedence_one_is_only_for_exempt() {
        let doc = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "fred"},
            "spec": {"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"},
                "rules": [{"subjects": [{"kind": "Group", "group": {"name": "noxu"}}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
        assert_eq!(
            errors(&doc),
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"
            ]
        );
    }

    #[test]
    fn v11_star_with_other_entries() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/resourceRules/0"),
            json!({"verbs": ["*", "create"], "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["*"]}),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.rules[0].resourceRules[0].verbs: Invalid value: ["*","create"]: if '*' is present, must not specify other verbs"#,
                r#"spec.rules[0].resourceRules[0].apiGroups: Invalid value: ["*","tak"]: if '*' is present, must not specify other api groups"#,
                r#"spec.rules[0].resourceRules[0].resources: Invalid value: ["*","tok"]: if '*' is present, must not specify other resources"#,
            ]
        );
    }

    #[test]
    fn v12_resource_and_non_resource_rules() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/nonResourceRules"),
            json!([{"verbs": ["*"], "nonResourceURLs": ["/apis/*"]}]),
        );
        assert!(errors(&doc).is_empty());
    }

    #[test]
    fn v13_star_url_with_others() {
        let doc = with(
            base_fs(),
            RULE,
            json!({"subjects": [{"kind": "User", "user": {"name": "noxu"}}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*", "tik"]}]}),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.rules[0].nonResourceRules[0].nonResourceURLs: Invalid value: ["*","tik"]: if '*' is present, must not specify other non-resource URLs"#
            ]
        );
    }

    #[test]
    fn v14_v18_unknown_subject_kinds() {
        for kind in ["FooKind", ""] {
            let doc = with(
                base_fs(),
                &format!("{RULE}/subjects/0"),
                json!({"kind": kind}),
            );
            assert_eq!(
                errors(&doc),
                [format!(
                    r#"{S0}.kind: Unsupported value: "{kind}": supported values: "Group", "ServiceAccount", "User""#
                )]
            );
        }
    }

    #[test]
    fn v15_unsupported_verb() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/resourceRules/0/verbs"),
            json!(["feed"]),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.rules[0].resourceRules[0].verbs: Unsupported value: ["feed"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch""#
            ]
        );
    }

    #[test]
    fn v16_bad_priority_level_name() {
        let doc = with(
            base_fs(),
            "/spec/priorityLevelConfiguration/name",
            json!("system+++$$"),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.priorityLevelConfiguration.name: Invalid value: "system+++$$": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
            ]
        );
    }

    #[test]
    fn v17_service_account_without_namespace() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/subjects/0"),
            json!({"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}}),
        );
        assert_eq!(
            errors(&doc),
            [format!(
                "{S0}.serviceAccount.namespace: Required value: must specify namespace for service account"
            )]
        );
    }

    #[test]
    fn v19_v21_namespaces_and_cluster_scope() {
        let rule = |extra: Value| {
            let mut r = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
            r.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            with(base_fs(), &format!("{RULE}/resourceRules/0"), r)
        };
        assert_eq!(
            errors(&rule(json!({}))),
            [
                "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace"
            ]
        );
        assert!(errors(&rule(json!({"clusterScope": true}))).is_empty());
        assert!(errors(&rule(json!({"clusterScope": true, "namespaces": ["*"]}))).is_empty());
    }

    #[test]
    fn v22_v23_namespace_lists() {
        let doc = with(
            base_fs(),
            &format!("{RULE}/resourceRules/0/namespaces"),
            json!(["foo", "*"]),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.rules[0].resourceRules[0].namespaces: Invalid value: ["foo","*"]: if '*' is present, must not specify other namespaces"#
            ]
        );
        let doc = with(
            base_fs(),
            &format!("{RULE}/resourceRules/0/namespaces"),
            json!(["-foo"]),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "-foo": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
            ]
        );
    }

    #[test]
    fn v24_precedence_too_large() {
        let doc = with(base_fs(), "/spec/matchingPrecedence", json!(10001));
        assert_eq!(
            errors(&doc),
            ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]
        );
    }

    #[test]
    fn v25_empty_priority_level_name() {
        let doc = with(
            base_fs(),
            "/spec/priorityLevelConfiguration/name",
            json!(""),
        );
        assert_eq!(
            errors(&doc),
            [
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level"
            ]
        );
    }

    #[test]
    fn negative_precedence_gives_one_error() {
        let doc = with(base_fs(), "/spec/matchingPrecedence", json!(-5));
        assert_eq!(
            errors(&doc),
            ["spec.matchingPrecedence: Invalid value: -5: must be a positive value"]
        );
    }

    #[test]
    fn unsupported_distinguisher_prints_the_struct() {
        let doc = with(
            base_fs(),
            "/spec/distinguisherMethod",
            json!({"type": "ByGroup"}),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:"ByGroup"}: supported values: "ByNamespace", "ByUser""#
            ]
        );
    }

    #[test]
    fn metadata_rules() {
        let doc = with(
            base_fs(),
            "/metadata",
            json!({"name": "Bad_Name", "namespace": "default"}),
        );
        let found = errors(&doc);
        assert!(
            found[0].starts_with(
                r#"metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain"#
            ),
            "{found:?}"
        );
        assert_eq!(
            found[1],
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        let unnamed = with(base_fs(), "/metadata", json!({}));
        assert_eq!(
            errors(&unnamed),
            ["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn condition_types() {
        let doc = with(
            base_fs(),
            "/status",
            json!({"conditions": [{"type": "Dangling"}, {"type": "Dangling"}, {"status": "True"}]}),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"status.conditions[1].type: Duplicate value: "Dangling""#,
                "status.conditions[2].type: Required value: must not be empty",
            ]
        );
    }
}

fn plc(version: &str, name: &str, annotations: Value, spec: Value) -> Value {
    json!({"apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"), "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": annotations}, "spec": spec})
}

fn limited(field: &str, shares: Value, response: Value) -> Value {
    json!({"type": "Limited", "limited": {field: shares, "limitResponse": response}})
}

mod zero_shares_vectors_7_3 {
    use super::*;
    const KEY: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
    const MUST_BE_POSITIVE: &str =
        "spec.limited.nominalConcurrencyShares: Invalid value: 0: must be positive";

    fn foo(version: &str, shares: Value, annotated: bool) -> Value {
        let annotations = if annotated {
            json!({KEY: ""})
        } else {
            json!({})
        };
        plc(
            version,
            "foo",
            annotations,
            limited(
                "nominalConcurrencyShares",
                shares,
                json!({"type": "Reject"}),
            ),
        )
    }

    fn old(shares: i32) -> apfkit_types::hub::flowcontrol::PriorityLevelConfiguration {
        match hub(&foo("v1", json!(shares), false)) {
            HubObject::PriorityLevelConfiguration(level) => level,
            _ => unreachable!(),
        }
    }

    fn check(document: Value, gate: bool, old_shares: Option<i32>, expected: &[&str]) {
        let old = old_shares.map(old);
        let options = Options {
            allow_zero_shares: gate,
            old_priority_level: old.as_ref(),
            ..Options::default()
        };
        assert_eq!(
            errors_with(&document, &options),
            expected,
            "{document} gate={gate} old={old_shares:?}"
        );
    }

    #[test]
    fn create() {
        check(foo("v1", json!(0), false), false, None, &[MUST_BE_POSITIVE]);
        check(foo("v1", Value::Null, false), false, None, &[]);
        for gate in [false, true] {
            check(foo("v1", json!(1), false), gate, None, &[]);
            check(foo("v1beta3", json!(0), false), gate, None, &[]);
        }
        check(foo("v1", json!(0), false), true, None, &[]);
        check(
            foo("v1beta3", json!(0), true),
            false,
            None,
            &[MUST_BE_POSITIVE],
        );
        check(foo("v1beta3", json!(0), true), true, None, &[]);
    }

    #[test]
    fn update() {
        check(
            foo("v1", json!(0), false),
            false,
            Some(1),
            &[MUST_BE_POSITIVE],
        );
        check(foo("v1", json!(0), false), false, Some(0), &[]);
        check(foo("v1", json!(1), false), false, Some(0), &[]);
        check(foo("v1", json!(0), false), true, Some(1), &[]);
        check(foo("v1", json!(0), false), true, Some(0), &[]);
        check(
            foo("v1beta3", json!(0), true),
            false,
            Some(1),
            &[MUST_BE_POSITIVE],
        );
        check(foo("v1beta3", json!(0), true), false, Some(0), &[]);
        check(foo("v1beta3", json!(0), true), true, Some(1), &[]);
    }

    #[test]
    fn negative_shares_and_request_version_path() {
        let doc = foo("v1", json!(-1), false);
        assert_eq!(
            errors(&doc),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"
            ]
        );
        let v1beta2 = plc(
            "v1beta2",
            "foo",
            json!({}),
            limited(
                "assuredConcurrencyShares",
                json!(-1),
                json!({"type": "Reject"}),
            ),
        );
        let options = Options {
            request_version: Some("flowcontrol.apiserver.k8s.io/v1beta2"),
            ..Options::default()
        };
        assert_eq!(
            errors_with(&v1beta2, &options),
            [
                "spec.limited.assuredConcurrencyShares: Invalid value: -1: must be a non-negative integer"
            ]
        );
    }

    #[test]
    fn the_v1beta3_annotation_is_forbidden_in_the_hub() {
        // A v1 writer keeps the annotation (only v1beta3 conversion strips it).
        let doc = plc(
            "v1",
            "foo",
            json!({KEY: ""}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Reject"}),
            ),
        );
        assert_eq!(
            errors(&doc),
            [format!(
                "metadata.annotations: Forbidden: annotation '{KEY}' is forbidden"
            )]
        );
    }
}

mod priority_level_rules_4_6 {
    use super::*;

    fn queue(queuing: Value) -> Value {
        plc(
            "v1",
            "p",
            json!({}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Queue", "queuing": queuing}),
            ),
        )
    }

    #[test]
    fn type_and_name() {
        let doc = plc(
            "v1",
            "exempt",
            json!({}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Reject"}),
            ),
        );
        let found = errors(&doc);
        assert_eq!(
            found[0],
            r#"spec.type: Invalid value: "Limited": must be 'Exempt' if and only if `name` is 'exempt'"#
        );
        assert!(
            found[1].ends_with(
                "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"
            ),
            "{found:?}"
        );
        let bad = plc("v1", "p", json!({}), json!({"type": "Unlimited"}));
        assert_eq!(
            errors(&bad),
            [r#"spec.type: Unsupported value: "Unlimited": supported values: "Exempt", "Limited""#]
        );
        let missing = plc("v1", "p", json!({}), json!({"type": "Limited"}));
        assert_eq!(
            errors(&missing),
            // 1.37's declarative validation answers for the union: no detail.
            ["spec.limited: Required value"]
        );
    }

    #[test]
    fn exempt_members() {
        let doc = plc(
            "v1",
            "exempt",
            json!({}),
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}, "limited": {"limitResponse": {"type": "Reject"}}}),
        );
        let found = errors(&doc);
        assert_eq!(
            found[..3],
            [
                "spec.limited: Forbidden",
                "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            ]
        );
        // The fixed-spec check ignores spec.exempt but sees spec.limited.
        assert_eq!(found.len(), 4);
        assert!(
            found[3].starts_with("spec: Invalid value: ")
                && found[3].ends_with(
                    "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"
                ),
            "{found:?}"
        );
        // An operator may change the exempt level's exempt member (`bootstrap/default.go`
        // leaves it out of the mandatory spec the ensurer keeps).
        let changed = plc(
            "v1",
            "exempt",
            json!({}),
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 50}}),
        );
        assert!(errors(&changed).is_empty());
    }

    #[test]
    fn limit_response_messages_copy_upstream() {
        // kube 1.37 answers the union's errors by declarative validation: no detail.
        let doc = plc(
            "v1",
            "p",
            json!({}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Reject", "queuing": {}}),
            ),
        );
        assert_eq!(
            errors(&doc),
            ["spec.limited.limitResponse.queuing: Forbidden"]
        );
        let doc = plc(
            "v1",
            "p",
            json!({}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Queue"}),
            ),
        );
        assert_eq!(
            errors(&doc),
            ["spec.limited.limitResponse.queuing: Required value"]
        );
        let doc = plc(
            "v1",
            "p",
            json!({}),
            limited(
                "nominalConcurrencyShares",
                json!(5),
                json!({"type": "Drop"}),
            ),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"spec.limited.limitResponse.type: Unsupported value: "Drop": supported values: "Queue", "Reject""#
            ]
        );
    }

    #[test]
    fn queuing() {
        let q = "spec.limited.limitResponse.queuing";
        assert_eq!(
            errors(&queue(
                json!({"queues": 10, "handSize": 11, "queueLengthLimit": 5})
            )),
            [format!(
                "{q}.handSize: Invalid value: 11: should not be greater than queues (10)"
            )]
        );
        assert_eq!(
            errors(&queue(
                json!({"queues": 128, "handSize": 9, "queueLengthLimit": 5})
            )),
            [format!(
                "{q}.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60"
            )]
        );
        assert!(
            errors(&queue(
                json!({"queues": 1024, "handSize": 6, "queueLengthLimit": 5})
            ))
            .is_empty()
        );
        assert_eq!(
            errors(&queue(
                json!({"queues": 2147483647, "handSize": 3, "queueLengthLimit": 5})
            )),
            [
                format!("{q}.queues: Invalid value: 2147483647: must not be greater than 10000000"),
                format!(
                    "{q}.handSize: Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60"
                ),
            ]
        );
        assert_eq!(
            errors(&queue(
                json!({"queues": -1, "handSize": -1, "queueLengthLimit": -1})
            )),
            [
                format!("{q}.queueLengthLimit: Invalid value: -1: must be positive"),
                format!("{q}.queues: Invalid value: -1: must be positive"),
                format!("{q}.handSize: Invalid value: -1: must be positive"),
            ]
        );
    }

    #[test]
    fn lending_and_borrowing_limits() {
        let doc = plc(
            "v1",
            "p",
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": -1, "borrowingLimitPercent": -2, "limitResponse": {"type": "Reject"}}}),
        );
        assert_eq!(
            errors(&doc),
            [
                "spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
            ]
        );
        let big = plc(
            "v1",
            "p",
            json!({}),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "borrowingLimitPercent": 300, "limitResponse": {"type": "Reject"}}}),
        );
        assert!(errors(&big).is_empty());
    }
}

mod apiservice_rules_5_4 {
    use super::*;

    fn service(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn name_group_version_priorities() {
        let doc = service(
            "v1.bar",
            json!({"group": "foo", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1001}),
        );
        assert_eq!(
            errors(&doc),
            [
                r#"metadata.name: Invalid value: "v1.bar": must be `spec.version+"."+spec.group`: "v1.foo""#,
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            ]
        );
        let legacy = service(
            "v1.",
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
        );
        assert!(errors(&legacy).is_empty());
        let groupless = service(
            "v2.",
            json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}),
        );
        assert_eq!(
            errors(&groupless),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube"
            ]
        );
        let bad_version = service(
            "1v.foo",
            json!({"group": "foo", "version": "1v", "groupPriorityMinimum": 20000, "versionPriority": 1000}),
        );
        let found = errors(&bad_version);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with(r#"spec.version: Invalid value: "1v": a DNS-1035 label"#),
            "{found:?}"
        );
    }

    #[test]
    fn local_and_remote_services() {
        let local = service(
            "v1.foo",
            json!({"group": "foo", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "YWJj", "insecureSkipTLSVerify": true}),
        );
        assert_eq!(
            errors(&local),
            [
                r#"spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle"#,
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let remote = service(
            "v1.foo",
            json!({"group": "foo", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "YWJj", "insecureSkipTLSVerify": true,
            "service": {"port": 70000}}),
        );
        assert_eq!(
            errors(&remote),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn condition_statuses() {
        let mut doc = service(
            "v1.foo",
            json!({"group": "foo", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1}),
        );
        doc["status"] = json!({"conditions": [{"type": "Available", "status": "Maybe"}]});
        assert_eq!(
            errors(&doc),
            [
                r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
            ]
        );
    }
}

#[test]
fn bootstrap_and_apiservice_fixtures_are_valid_in_every_version() {
    for version in flowcontrol_versions() {
        let (levels, schemas) = bootstrap(version);
        for object in levels.iter().chain(&schemas) {
            let options = Options {
                request_version: Some(version),
                ..Options::default()
            };
            assert_eq!(
                errors_with(object, &options),
                Vec::<String>::new(),
                "{version} {}",
                object["metadata"]["name"]
            );
        }
    }
    for version in ["v1beta1", "v1"] {
        for object in apiservices(version) {
            assert_eq!(
                errors(&object),
                Vec::<String>::new(),
                "{}",
                object["metadata"]["name"]
            );
        }
    }
}
