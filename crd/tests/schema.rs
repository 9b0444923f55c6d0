//! Definitions read and refused, objects pruned, defaulted and checked against every schema
//! keyword, list types, and hostile input: none of it panics, each refusal names the field.

use apfkit_crd::{CustomResourceDefinition, DefinitionError};
use serde_json::{Value, json};

mod support;

use support::definition;

fn crd(spec: Value) -> CustomResourceDefinition {
    support::widget_crd(spec).unwrap()
}

fn admit(crd: &CustomResourceDefinition, spec: Value) -> (Value, Vec<String>, Vec<String>) {
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "uid": "kept"}, "spec": spec});
    let admission = crd.versions[0].admit(&mut object, None);
    (
        object,
        admission.pruned,
        admission.errors.iter().map(ToString::to_string).collect(),
    )
}

#[test]
fn what_is_not_a_usable_definition_is_refused_with_the_reason() {
    let refused = |value: Value| CustomResourceDefinition::from_value(&value).unwrap_err();
    assert!(matches!(
        refused(json!({"kind": "ConfigMap"})),
        DefinitionError::Malformed(_)
    ));
    assert!(matches!(
        refused(json!("garbage")),
        DefinitionError::Malformed(_)
    ));
    let mut no_spec = definition(json!({"type": "object"}));
    no_spec.as_object_mut().unwrap().remove("spec");
    assert!(
        refused(no_spec)
            .to_string()
            .contains("must have exactly one version marked as storage version")
    );

    let mut two_storage = definition(json!({"type": "object"}));
    let version = two_storage["spec"]["versions"][0].clone();
    let mut v2 = version.clone();
    v2["name"] = json!("v2");
    two_storage["spec"]["versions"] = json!([version, v2]);
    assert!(
        refused(two_storage)
            .to_string()
            .contains("spec.versions: Invalid value: [\"v1\", \"v2\"]: must have exactly one version marked as storage version"),
    );

    let bad_pattern = refused(definition(json!({"type": "object", "properties": {
        "a": {"type": "string", "pattern": "+"}
    }})))
    .to_string();
    assert!(
        bad_pattern.contains(r#"spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: "+": must be a valid regular expression, but isn't"#),
        "{bad_pattern}"
    );

    let unique = refused(definition(json!({"type": "object", "properties": {
        "a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}
    }})))
    .to_string();
    assert!(
        unique.contains("spec.validation.openAPIV3Schema.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
        "{unique}"
    );

    let tuple = refused(definition(json!({"type": "object", "properties": {
        "a": {"type": "array", "items": [{"type": "string"}]}
    }})))
    .to_string();
    assert!(
        tuple.contains("spec.validation.openAPIV3Schema.properties[a].items: Forbidden: items must be a schema object and not an array"),
        "{tuple}"
    );
}

#[test]
fn different_schemas_per_version_are_named_at_their_version() {
    let mut value = definition(json!({"type": "object"}));
    let mut v2 = value["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"] = json!({"type": "objekt"});
    value["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let err = CustomResourceDefinition::from_value(&value)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            r#"spec.versions[1].schema.openAPIV3Schema.type: Unsupported value: "objekt""#
        ),
        "{err}"
    );
}

#[test]
fn a_schema_nested_deeper_than_the_limit_is_refused_not_overflowed() {
    let mut schema = json!({"type": "string"});
    for _ in 0..100 {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    let err = CustomResourceDefinition::from_value(&definition(schema))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("must not be nested more than 64 levels deep"),
        "{err}"
    );
}

#[test]
fn unknown_fields_are_pruned_and_listed_but_the_envelope_and_preserved_fields_are_kept() {
    let crd = crd(json!({"type": "object", "properties": {
        "known": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
    }}));
    let (object, pruned, errors) = admit(
        &crd,
        json!({
            "known": "x", "unknown": 1,
            "items": [{"a": 1, "b": 2}],
            "free": {"anything": {"deep": true}},
            "labels": {"any": "key"}
        }),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(pruned, ["spec.items[0].b", "spec.unknown"]);
    assert_eq!(object["metadata"]["uid"], "kept");
    assert_eq!(object["spec"]["free"]["anything"]["deep"], true);
    assert_eq!(object["spec"]["labels"]["any"], "key");
    assert!(object["spec"].get("unknown").is_none());
}

#[test]
fn defaults_fill_missing_and_non_nullable_null_fields_and_other_nulls_go() {
    let crd = crd(json!({"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "default": "fast"},
        "note": {"type": "string"},
        "maybe": {"type": "string", "nullable": true},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}}
    }}));
    let (object, _, errors) = admit(
        &crd,
        json!({"mode": null, "note": null, "maybe": null, "ports": [{"port": 80}]}),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        object["spec"],
        json!({"replicas": 1, "mode": "fast", "maybe": null, "ports": [{"port": 80, "protocol": "TCP"}]})
    );
}

#[test]
fn every_keyword_fails_with_kube_openapis_message() {
    let crd = crd(json!({"type": "object", "properties": {
        "short": {"type": "string", "minLength": 3},
        "long": {"type": "string", "maxLength": 3},
        "code": {"type": "string", "pattern": "^[a-z]+$"},
        "ip": {"type": "string", "format": "ipv4"},
        "even": {"type": "integer", "multipleOf": 2},
        "low": {"type": "number", "minimum": 1.5},
        "high": {"type": "integer", "maximum": 10, "exclusiveMaximum": true},
        "few": {"type": "array", "minItems": 2, "items": {"type": "string"}},
        "props": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}},
        "one": {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 9}]},
        "never": {"type": "string", "not": {"pattern": "^y$"}}
    }}));
    let (_, _, errors) = admit(
        &crd,
        json!({
            "short": "ab", "long": "abcd", "code": "ABC", "ip": "1.2.3", "even": 3,
            "low": 1, "high": 10, "few": ["a"],
            "props": {"a": "x"}, "one": "x", "never": "y"
        }),
    );
    let expected = [
        r#"spec.code: Invalid value: "ABC": spec.code in body should match '^[a-z]+$'"#,
        "spec.even: Invalid value: 3: spec.even in body should be a multiple of 2",
        r#"spec.few: Invalid value: 1: spec.few in body should have at least 2 items"#,
        "spec.high: Invalid value: 10: spec.high in body should be less than 10",
        r#"spec.ip: Invalid value: "1.2.3": spec.ip in body must be of type ipv4: "1.2.3""#,
        "spec.long: Too long: may not be more than 3 bytes",
        "spec.low: Invalid value: 1: spec.low in body should be greater than or equal to 1.5",
        r#"<nil>: Invalid value: "": "spec.never" must not validate the schema (not)"#,
        r#"<nil>: Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
        "spec.props: Invalid value: 1: spec.props in body should have at least 2 properties",
        r#"spec.short: Invalid value: "ab": spec.short in body should be at least 3 chars long"#,
    ];
    assert_eq!(errors, expected);
}

#[test]
fn list_types_refuse_repeated_items_and_keys_at_the_second_one() {
    let crd = crd(json!({"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}}
    }}));
    let (_, _, errors) = admit(
        &crd,
        json!({
            "tags": ["a", "b", "a", "a"],
            "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}]
        }),
    );
    assert_eq!(
        errors,
        [
            r#"spec.ports[2]: Duplicate value: {"port":80,"protocol":"TCP"}"#,
            r#"spec.tags[2]: Duplicate value: "a""#,
        ]
    );
}

#[test]
fn metadata_names_are_checked_as_for_every_object() {
    let crd = crd(json!({"type": "object"}));
    let check = |metadata: Value| {
        let mut object =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata});
        crd.versions[0]
            .admit(&mut object, None)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        check(json!({})),
        ["metadata.name: Required value: name or generateName is required"]
    );
    assert!(check(json!({"generateName": "w-"})).is_empty());
    assert_eq!(
        check(json!({"name": "Not_Valid"})),
        [
            r#"metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        ]
    );
}

#[test]
fn hostile_objects_never_panic() {
    let crd = crd(json!({"type": "object", "properties": {
        "list": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "object", "additionalProperties": {"type": "integer"}},
        "n": {"type": "integer", "multipleOf": 0.1, "x-kubernetes-validations": [{"rule": "self / 0 == 1"}]}
    }}));
    let long = "x".repeat(1 << 20);
    // Repeated items are found in one pass (a quadratic search would not end in time here).
    let many: Vec<Value> = (0..300_000)
        .map(|i| json!(format!("s{}", i % 1000)))
        .collect();
    let hostile = [
        json!({"list": many}),
        json!({"list": [long.clone()], "map": {long.clone(): 1}}),
        json!({"n": i64::MAX}),
        json!({"n": 1}),
        json!({"n": 1e308}),
        json!({"list": null, "map": null, "n": null}),
        json!([1, 2, 3]),
        json!("spec"),
    ];
    for spec in hostile {
        let (_, _, errors) = admit(&crd, spec);
        let _ = errors;
    }
    // A division by zero is the rule's error, not a panic (after kube-openapi's refusal of
    // an integer's `multipleOf` that is not whole).
    let (_, _, errors) = admit(&crd, json!({"n": 1}));
    assert_eq!(
        errors,
        [
            r#"<nil>: Invalid value: "": MultipleOf value must be of type integer (default format) in spec.n"#,
            r#"spec.n: Invalid value: "integer": division by zero evaluating rule: self / 0 == 1"#
        ]
    );
    // A deeply nested value under a schema that preserves it is pruned and walked without
    // overflowing the stack (as deep as a JSON reader gives).
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!({"a": deep});
    }
    let (_, pruned, _) = admit(&crd, json!({"unknown": deep}));
    assert_eq!(pruned, ["spec.unknown"]);
}

/// A root that preserves unknown fields keeps its envelope as it is, even where the schema
/// declares `metadata`: upstream's `skipPrune` skips the envelope of a resource's root, as
/// `prune` does. (Before, the preserving root walked `metadata` with its declared schema and
/// dropped the labels.)
#[test]
fn a_preserving_root_keeps_the_whole_metadata() {
    let crd = CustomResourceDefinition::from_value(&definition(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"metadata": {"type": "object"}, "spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
    })))
    .unwrap();
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"team": "a"}}, "spec": {"a": "x", "b": 1}, "extra": true});
    let admission = crd.versions[0].admit(&mut object, None);
    assert!(admission.errors.is_empty(), "{:?}", admission.errors);
    assert_eq!(admission.pruned, ["spec.b"]);
    assert_eq!(object["metadata"]["labels"]["team"], "a");
    assert_eq!(object["extra"], true);
}

/// kube-openapi checks a number's boundaries against its type and format before comparing
/// (`IsValueValidAgainstRange`): an integer's `maximum: 1.5` refuses every value, and a value
/// past it is refused twice, as the reference kube-apiserver answers.
#[test]
fn an_integers_boundaries_that_are_not_whole_refuse_every_value() {
    let crd = crd(json!({"type": "object", "properties": {
        "size": {"type": "integer", "maximum": 1.5, "minimum": 0.5},
        "count": {"type": "integer", "format": "int32", "maximum": 3e9},
        "whole": {"type": "integer", "maximum": 9.0, "multipleOf": 3.0}
    }}));
    let (_, _, errors) = admit(&crd, json!({"size": 1}));
    assert_eq!(
        errors,
        [
            r#"<nil>: Invalid value: "": Minimum boundary value must be of type integer (default format) in spec.size"#,
            r#"<nil>: Invalid value: "": Maximum boundary value must be of type integer (default format) in spec.size"#,
        ]
    );
    let (_, _, errors) = admit(&crd, json!({"size": 2}));
    assert_eq!(
        errors,
        [
            r#"<nil>: Invalid value: "": Minimum boundary value must be of type integer (default format) in spec.size"#,
            r#"<nil>: Invalid value: "": Maximum boundary value must be of type integer (default format) in spec.size"#,
            "spec.size: Invalid value: 2: spec.size in body should be less than or equal to 1.5",
        ]
    );
    let (_, _, errors) = admit(&crd, json!({"count": 1}));
    assert_eq!(
        errors,
        [
            r#"<nil>: Invalid value: "": Maximum boundary value must be of type integer with format int32 in spec.count"#
        ]
    );
    // Whole boundaries are held as integers.
    let (_, _, errors) = admit(&crd, json!({"whole": 6}));
    assert!(errors.is_empty(), "{errors:?}");
}
