//! Apply and update worked through sequences of operations, with the expected object, managers
//! and conflicts taken from the cases of structured-merge-diff's own tests
//! (`sigs.k8s.io/structured-merge-diff`, `merge/leaf_test.go`, `merge/set_test.go`,
//! `merge/multiple_appliers_test.go`; each case names its source). The cases are written here
//! anew in JSON; the schemas are the same shapes in JSON Schema.

use apfkit_fieldmanager::schema::Schema;
use apfkit_fieldmanager::set::FieldSet;
use apfkit_fieldmanager::updater::{ApplyError, Managers, Updater, Versions};
use serde_json::{Value, json};

/// Versions v1, v2 and v3 of one schema, converted as they are (the fixture's
/// `SameVersionParser`).
struct SameSchema(Schema);

impl Versions for SameSchema {
    fn schema(&self, api_version: &str) -> Option<&Schema> {
        ["v1", "v2", "v3"].contains(&api_version).then_some(&self.0)
    }

    fn convert(&self, object: &Value, _: &str) -> Result<Value, String> {
        Ok(object.clone())
    }
}

enum Kind {
    Plain,
    Force,
}

enum Op {
    Apply(&'static str, &'static str, Value),
    ForceApply(&'static str, &'static str, Value),
    /// An apply that fails with these conflicts, printed.
    Conflicts(&'static str, &'static str, Value, &'static str),
    Update(&'static str, &'static str, Value),
}

/// Runs the operations from an empty object; answers the object and the managers.
fn run(schema: Value, ops: Vec<Op>) -> (Value, Managers) {
    let versions = SameSchema(Schema::compile(&schema));
    let updater = Updater::new(&versions);
    let mut live = json!({});
    let mut managers = Managers::new();
    for op in ops {
        let op_kind = match op {
            Op::ForceApply(..) => Kind::Force,
            _ => Kind::Plain,
        };
        match op {
            Op::Apply(manager, version, config) | Op::ForceApply(manager, version, config) => {
                let force = matches!(op_kind, Kind::Force);
                let (new, after) = updater
                    .apply(&live, &config, version, managers, manager, force)
                    .unwrap();
                if let Some(new) = new {
                    live = new;
                }
                managers = after;
            }
            Op::Conflicts(manager, version, config, expected) => {
                match updater.apply(&live, &config, version, managers.clone(), manager, false) {
                    Err(ApplyError::Conflicts(conflicts)) => {
                        assert_eq!(conflicts.to_string(), expected);
                    }
                    other => panic!("expected conflicts, got {other:?}"),
                }
            }
            Op::Update(manager, version, new) => {
                managers = updater
                    .update(&live, &new, version, managers, manager)
                    .unwrap();
                live = new;
            }
        }
    }
    (live, managers)
}

fn assert_managers(managers: &Managers, expected: Value) {
    let expected = expected.as_object().unwrap();
    let names: Vec<&String> = managers.keys().collect();
    let expected_names: Vec<&String> = expected.keys().collect();
    assert_eq!(names, expected_names, "managers");
    for (name, entry) in expected {
        let (version, fields) = (entry[0].as_str().unwrap(), &entry[1]);
        assert_eq!(managers[name].api_version, version, "{name}'s version");
        assert_eq!(
            managers[name].set.to_fields_v1(),
            FieldSet::from_fields_v1(fields).unwrap().to_fields_v1(),
            "{name}'s fields"
        );
    }
}

fn leaf_fields() -> Value {
    json!({"type": "object", "properties": {
        "numeric": {"type": "number"},
        "string": {"type": "string"},
        "bool": {"type": "boolean"},
    }})
}

fn sets() -> Value {
    json!({"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
    }})
}

fn list_of_lists() -> Value {
    json!({"type": "object", "properties": {
        "listOfLists": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "value": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            }},
        },
    }})
}

#[test]
fn leaf_apply_twice() {
    // merge/leaf_test.go, TestUpdateLeaf "apply_twice".
    let (object, managers) = run(
        leaf_fields(),
        vec![
            Op::Apply("default", "v1", json!({"numeric": 1, "string": "string"})),
            Op::Apply(
                "default",
                "v1",
                json!({"numeric": 2, "string": "string", "bool": false}),
            ),
        ],
    );
    assert_eq!(
        object,
        json!({"numeric": 2, "string": "string", "bool": false})
    );
    assert_managers(
        &managers,
        json!({"default": ["v1", {"f:numeric": {}, "f:string": {}, "f:bool": {}}]}),
    );
}

#[test]
fn leaf_apply_update_apply_with_conflict() {
    // merge/leaf_test.go, TestUpdateLeaf "apply_update_apply_with_conflict".
    let config = json!({"numeric": 2, "string": "user string"});
    let (object, managers) = run(
        leaf_fields(),
        vec![
            Op::Apply("default", "v1", json!({"numeric": 1, "string": "string"})),
            Op::Update(
                "controller",
                "v1",
                json!({"numeric": 1, "string": "controller string", "bool": true}),
            ),
            Op::Conflicts(
                "default",
                "v1",
                config.clone(),
                "conflict with \"controller\": .string",
            ),
            Op::ForceApply("default", "v1", config),
        ],
    );
    assert_eq!(
        object,
        json!({"numeric": 2, "string": "user string", "bool": true})
    );
    assert_managers(
        &managers,
        json!({
            "controller": ["v1", {"f:bool": {}}],
            "default": ["v1", {"f:numeric": {}, "f:string": {}}],
        }),
    );
}

#[test]
fn leaf_apply_twice_remove() {
    // merge/leaf_test.go, TestUpdateLeaf "apply_twice_remove" and
    // "apply_twice_remove_different_version".
    for second in ["v1", "v2"] {
        let (object, managers) = run(
            leaf_fields(),
            vec![
                Op::Apply(
                    "default",
                    "v1",
                    json!({"numeric": 1, "string": "string", "bool": false}),
                ),
                Op::Apply("default", second, json!({"string": "new string"})),
            ],
        );
        assert_eq!(object, json!({"string": "new string"}));
        assert_managers(&managers, json!({"default": [second, {"f:string": {}}]}));
    }
}

#[test]
fn leaf_update_takes_what_an_applier_omits_later() {
    // merge/leaf_test.go, TestUpdateLeaf "update_apply_omits" and "update_remove_empty_set".
    let (object, managers) = run(
        leaf_fields(),
        vec![
            Op::Apply("default", "v1", json!({"numeric": 2})),
            Op::Update("controller", "v1", json!({"numeric": 1})),
            Op::Apply("default", "v1", json!({})),
        ],
    );
    assert_eq!(object, json!({"numeric": 1}));
    assert_managers(&managers, json!({"controller": ["v1", {"f:numeric": {}}]}));
}

#[test]
fn set_apply_update_apply_no_overlap() {
    // merge/set_test.go, TestUpdateSet "apply_update_apply_no_overlap": new items go after
    // the shared ones before them, the controller's items stay where they were.
    let (object, managers) = run(
        sets(),
        vec![
            Op::Apply("default", "v1", json!({"list": ["a", "c"]})),
            Op::Update("controller", "v1", json!({"list": ["a", "b", "c", "d"]})),
            Op::Apply(
                "default",
                "v1",
                json!({"list": ["a", "aprime", "c", "cprime"]}),
            ),
        ],
    );
    assert_eq!(
        object,
        json!({"list": ["a", "b", "aprime", "c", "d", "cprime"]})
    );
    assert_managers(
        &managers,
        json!({
            "controller": ["v1", {"f:list": {"v:\"b\"": {}, "v:\"d\"": {}}}],
            "default": ["v1", {"f:list": {"v:\"a\"": {}, "v:\"aprime\"": {}, "v:\"c\"": {}, "v:\"cprime\"": {}}}],
        }),
    );
}

#[test]
fn set_reorders() {
    // merge/set_test.go, TestUpdateSet "apply_twice_reorder" and "apply_update_apply_reorder".
    let (object, _) = run(
        sets(),
        vec![
            Op::Apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
            Op::Apply("default", "v1", json!({"list": ["a", "d", "c", "b"]})),
        ],
    );
    assert_eq!(object, json!({"list": ["a", "d", "c", "b"]}));
    let (object, managers) = run(
        sets(),
        vec![
            Op::Apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
            Op::Update("controller", "v1", json!({"list": ["a", "d", "c", "b"]})),
            Op::Apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
        ],
    );
    assert_eq!(object, json!({"list": ["a", "b", "c", "d"]}));
    // A reorder changes no field: the controller manages nothing.
    assert_managers(
        &managers,
        json!({"default": ["v1", {"f:list": {"v:\"a\"": {}, "v:\"b\"": {}, "v:\"c\"": {}, "v:\"d\"": {}}}]}),
    );
}

#[test]
fn multiple_appliers_remove_one_keep_one_with_dangling_subitem() {
    // merge/multiple_appliers_test.go, TestMultipleAppliersNestedType
    // "remove_one_keep_one_with_dangling_subitem": what only the applier owned goes, what
    // another applier or an updater owns stays.
    let (object, managers) = run(
        list_of_lists(),
        vec![
            Op::Apply(
                "apply-one",
                "v1",
                json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
            ),
            Op::Apply(
                "apply-two",
                "v2",
                json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
            ),
            Op::Update(
                "controller",
                "v2",
                json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c", "d", "e"]}]}),
            ),
            Op::Apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
        ],
    );
    assert_eq!(
        object,
        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d", "e"]}]})
    );
    assert_managers(
        &managers,
        json!({
            "apply-one": ["v3", {"f:listOfLists": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}],
            "apply-two": ["v2", {"f:listOfLists": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:value": {"v:\"d\"": {}}}}}],
            "controller": ["v2", {"f:listOfLists": {"k:{\"name\":\"b\"}": {"f:value": {"v:\"e\"": {}}}}}],
        }),
    );
}

#[test]
fn duplicate_keys_in_an_applied_configuration_are_refused() {
    let versions = SameSchema(Schema::compile(&list_of_lists()));
    let updater = Updater::new(&versions);
    let config = json!({"listOfLists": [{"name": "a"}, {"name": "a"}]});
    let error = updater
        .apply(&json!({}), &config, "v1", Managers::new(), "m", false)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        ".listOfLists: duplicate entries for key [name=\"a\"]"
    );
    let config = json!({"listOfLists": [{"value": ["x"]}]});
    let error = updater
        .apply(&json!({}), &config, "v1", Managers::new(), "m", false)
        .unwrap_err();
    assert!(
        error.to_string().contains("omits all key fields"),
        "{error}"
    );
}

fn associative_list() -> Value {
    json!({"type": "object", "properties": {
        "list": {"type": "array", "x-kubernetes-list-type": "map",
                 "x-kubernetes-list-map-keys": ["name"],
                 "items": {"type": "object", "properties": {
                     "name": {"type": "string"}, "value": {"type": "number"}}}},
    }})
}

#[test]
fn keyed_list_items_no_longer_applied_are_removed() {
    // merge/key_test.go, TestUpdateAssociativeLists "removing_obsolete_applied_structs".
    let (object, managers) = run(
        associative_list(),
        vec![
            Op::Apply(
                "default",
                "v1",
                json!({"list": [{"name": "a", "value": 1}]}),
            ),
            Op::Apply(
                "default",
                "v1",
                json!({"list": [{"name": "b", "value": 2}]}),
            ),
        ],
    );
    assert_eq!(object, json!({"list": [{"name": "b", "value": 2}]}));
    assert_managers(
        &managers,
        json!({"default": ["v1", {"f:list": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:value": {}}}}]}),
    );
}

fn nested() -> Value {
    json!({"type": "object", "properties": {
        "mapOfMaps": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": {"type": "string"}}},
        "struct": {"type": "object", "properties": {
            "name": {"type": "string"}, "value": {"type": "number"}}},
    }})
}

#[test]
fn maps_of_maps_merge_entry_by_entry() {
    // merge/nested_test.go, TestUpdateNestedType "mapOfMaps_change_value".
    let (object, managers) = run(
        nested(),
        vec![
            Op::Apply(
                "default",
                "v1",
                json!({"mapOfMaps": {"a": {"b": "x", "c": "y"}}}),
            ),
            Op::Apply(
                "default",
                "v1",
                json!({"mapOfMaps": {"a": {"a": "x", "c": "z"}}}),
            ),
        ],
    );
    assert_eq!(object, json!({"mapOfMaps": {"a": {"a": "x", "c": "z"}}}));
    assert_managers(
        &managers,
        json!({"default": ["v1", {"f:mapOfMaps": {"f:a": {".": {}, "f:a": {}, "f:c": {}}}}]}),
    );
}

#[test]
fn fields_an_updater_took_over_stay_when_the_applier_lets_go() {
    // merge/nested_test.go, TestUpdateNestedType "struct_apply_update_took_over".
    let (object, _) = run(
        nested(),
        vec![
            Op::Apply("default", "v1", json!({"struct": {"name": "a"}})),
            Op::Update(
                "controller",
                "v1",
                json!({"struct": {"name": "b", "value": 1}}),
            ),
            Op::Apply("default", "v1", json!({"struct": null})),
        ],
    );
    assert_eq!(object, json!({"struct": {"name": "b", "value": 1}}));
}

fn overrides() -> Value {
    json!({"type": "object", "properties": {
        "atomicMapReference": {"$ref": "#/$defs/unspecifiedMap", "x-kubernetes-map-type": "atomic"},
        "separableMapReference": {"$ref": "#/$defs/atomicMap", "x-kubernetes-map-type": "granular"},
    }, "$defs": {
        "unspecifiedMap": {"type": "object", "properties": {
            "name": {"type": "string"}, "value": {"type": "number"}}},
        "atomicMap": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
            "name": {"type": "string"}, "value": {"type": "number"}}},
    }})
}

#[test]
fn a_reference_can_make_its_type_atomic_or_granular() {
    // merge/field_level_overrides_test.go, TestFieldLevelOverrides
    // "test_override_unspecified_map_with_atomic" and "test_override_atomic_map_with_separable".
    let (object, managers) = run(
        overrides(),
        vec![
            Op::Apply(
                "apply_one",
                "v1",
                json!({"separableMapReference": {"name": "a"}}),
            ),
            Op::Apply(
                "apply_two",
                "v1",
                json!({"separableMapReference": {"value": 2}}),
            ),
            // (Other managers: apply_one applying only the atomic map would prune its name.)
            Op::Apply(
                "apply_three",
                "v1",
                json!({"atomicMapReference": {"name": "a"}}),
            ),
            Op::Conflicts(
                "apply_four",
                "v1",
                json!({"atomicMapReference": {"value": 2}}),
                "conflict with \"apply_three\": .atomicMapReference",
            ),
        ],
    );
    assert_eq!(
        object,
        json!({"separableMapReference": {"name": "a", "value": 2}, "atomicMapReference": {"name": "a"}})
    );
    assert_managers(
        &managers,
        json!({
            "apply_one": ["v1", {"f:separableMapReference": {"f:name": {}}}],
            "apply_three": ["v1", {"f:atomicMapReference": {}}],
            "apply_two": ["v1", {"f:separableMapReference": {"f:value": {}}}],
        }),
    );
}
