//! Validation ratcheting, as kube-apiserver checks an update of a custom resource
//! (`RatchetingSchemaValidator`, the CEL validator's `ratchetingOptions`): what an unchanged
//! value breaks of the schema is dropped, and of its rules (but transition rules) answered as
//! warnings, where the value correlates with the old object's.

use apfkit_crd::CustomResourceDefinition;
use serde_json::{Value, json};

fn crd() -> CustomResourceDefinition {
    let ok = json!({"type": "string", "enum": ["ok"]});
    let ruled = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self == 'ok'"}]});
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "field": ok, "ruled": ruled, "other": {"type": "string"},
        "grown": {"type": "string", "x-kubernetes-validations":
            [{"rule": "self.size() >= oldSelf.size()", "message": "may only grow"}]},
        "list": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "required": ["key"],
                "properties": {"key": {"type": "string"}, "field": ok}}},
        "atomic": {"type": "array", "items": ok},
        "map": {"type": "object", "additionalProperties": ok}}}}});
    let version = apfkit_test_support::crd::version("v1", true, schema);
    let crd =
        apfkit_test_support::crd::definition("ratchets.example.com", "Ratchet", json!([version]));
    CustomResourceDefinition::from_value(&crd).expect("a valid CRD")
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Ratchet",
        "metadata": {"name": "r", "namespace": "default"}, "spec": spec})
}

/// The errors and warnings of an update from `old` to `new`, as text.
fn update(old: Value, new: Value) -> (Vec<String>, Vec<String>) {
    let crd = crd();
    let version = crd.version_of("example.com/v1").expect("v1");
    let checked = version.check(&object(new), Some(&object(old)));
    let text = |errors: &[apfkit_runtime::field::FieldError]| {
        errors.iter().map(ToString::to_string).collect()
    };
    (text(&checked.errors), text(&checked.warnings))
}

fn bad() -> Value {
    json!({"field": "no", "ruled": "no", "other": "a",
        "list": [{"key": "a", "field": "no"}], "atomic": ["no"], "map": {"a": "no"}})
}

#[test]
fn unchanged_values_are_kept_and_their_rules_only_warn() {
    let mut new = bad();
    new["other"] = json!("b");
    let (errors, warnings) = update(bad(), new);
    assert_eq!(errors, Vec::<String>::new());
    assert_eq!(
        warnings,
        [r#"spec.ruled: Invalid value: "no": failed rule: self == 'ok'"#]
    );
    // A create is held to everything.
    let crd = crd();
    let version = crd.version_of("example.com/v1").unwrap();
    assert_eq!(version.validate(&object(bad()), None).len(), 5);
}

#[test]
fn changed_values_are_held_to_the_schema_and_rules() {
    let mut new = bad();
    new["field"] = json!("still no");
    new["map"]["a"] = json!("still no");
    // A schema error leaves the rules unchecked, as kube-apiserver does.
    let (errors, _) = update(bad(), new);
    assert_eq!(
        errors,
        [
            r#"spec.field: Unsupported value: "still no": supported values: "ok""#,
            r#"spec.map.a: Unsupported value: "still no": supported values: "ok""#,
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    let mut new = bad();
    new["ruled"] = json!("still no");
    let (errors, warnings) = update(bad(), new);
    assert_eq!(
        errors,
        [r#"spec.ruled: Invalid value: "still no": failed rule: self == 'ok'"#]
    );
    assert!(warnings.is_empty());
}

#[test]
fn map_list_items_correlate_by_key_and_atomic_list_items_do_not() {
    let mut new = bad();
    new["list"] = json!([{"key": "b", "field": "ok"}, {"key": "a", "field": "no"}]);
    assert_eq!(update(bad(), new).0, Vec::<String>::new());
    let mut new = bad();
    new["atomic"] = json!(["no", "ok"]);
    assert_eq!(
        update(bad(), new).0[0],
        r#"spec.atomic[0]: Unsupported value: "no": supported values: "ok""#
    );
}

#[test]
fn transition_rules_are_not_ratcheted() {
    let old = json!({"grown": "abc"});
    let (errors, warnings) = update(old.clone(), json!({"grown": "ab"}));
    assert_eq!(
        errors,
        [r#"spec.grown: Invalid value: "ab": may only grow"#]
    );
    assert!(warnings.is_empty());
    // Unchanged, it holds.
    assert_eq!(update(old.clone(), old), (Vec::new(), Vec::new()));
}
