//! kube-apiserver's configuration producer (`pkg/registry/flowcontrol/ensurer/strategy.go`):
//! which bootstrap objects it creates, updates and deletes, given what is stored.

use apfkit_dispatcher::bootstrap::{self, AUTO_UPDATE_ANNOTATION, Change, ensure};
use apfkit_scheme::scheme::HubObject;
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};

/// The bootstrap objects as a server stores them: generation 1.
fn stored() -> (Vec<PriorityLevelConfiguration>, Vec<FlowSchema>) {
    let mut levels = bootstrap::priority_levels().to_vec();
    let mut schemas = bootstrap::flow_schemas().to_vec();
    for level in &mut levels {
        level.metadata.generation = Some(1);
    }
    for schema in &mut schemas {
        schema.metadata.generation = Some(1);
    }
    (levels, schemas)
}

fn schema<'a>(schemas: &'a mut [FlowSchema], name: &str) -> &'a mut FlowSchema {
    schemas
        .iter_mut()
        .find(|s| s.metadata.name.as_deref() == Some(name))
        .unwrap()
}

fn annotate(schema: &mut FlowSchema, value: Option<&str>) {
    let annotations = schema
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    match value {
        Some(value) => annotations.insert(AUTO_UPDATE_ANNOTATION.to_owned(), value.to_owned()),
        None => annotations.remove(AUTO_UPDATE_ANNOTATION),
    };
}

fn updated_schema(changes: &[Change]) -> Vec<&FlowSchema> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Update(HubObject::FlowSchema(s)) => Some(s),
            _ => None,
        })
        .collect()
}

fn annotation(schema: &FlowSchema) -> Option<&str> {
    schema
        .metadata
        .annotations
        .as_ref()?
        .get(AUTO_UPDATE_ANNOTATION)
        .map(String::as_str)
}

#[test]
fn the_stored_bootstrap_configuration_needs_nothing() {
    let (levels, schemas) = stored();
    assert_eq!(ensure(&levels, &schemas, true), []);
}

#[test]
fn missing_objects_are_created_the_suggested_ones_only_when_asked_for() {
    let all = ensure(&[], &[], true);
    assert_eq!(
        all.len(),
        bootstrap::priority_levels().len() + bootstrap::flow_schemas().len()
    );
    assert!(all.iter().all(|c| matches!(c, Change::Create(_))));
    let mandatory = ensure(&[], &[], false);
    let names: Vec<(&str, &str)> = mandatory
        .iter()
        .map(|c| match c {
            Change::Create(HubObject::FlowSchema(s)) => {
                ("FlowSchema", s.metadata.name.as_deref().unwrap())
            }
            Change::Create(HubObject::PriorityLevelConfiguration(l)) => (
                "PriorityLevelConfiguration",
                l.metadata.name.as_deref().unwrap(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            ("FlowSchema", "exempt"),
            ("FlowSchema", "catch-all"),
            ("PriorityLevelConfiguration", "exempt"),
            ("PriorityLevelConfiguration", "catch-all"),
        ]
    );
}

#[test]
fn a_suggested_object_is_kept_as_the_annotation_or_generation_says() {
    let bootstrap_precedence = |schemas: &[FlowSchema]| {
        schemas
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some("global-default"))
            .unwrap()
            .spec
            .matching_precedence
    };
    // (annotation, generation) → (spec restored, annotation written)
    let cases = [
        (Some("true"), 2, Some((true, None))),
        (Some("True"), 5, Some((true, None))),
        (Some("false"), 2, None),
        (Some("0"), 1, None),
        (None, 2, Some((false, Some("false")))),
        (None, 1, Some((true, Some("true")))),
        (Some("maybe"), 3, Some((false, Some("false")))),
    ];
    for (value, generation, expected) in cases {
        let (levels, mut schemas) = stored();
        let original = bootstrap_precedence(&schemas);
        let edited = schema(&mut schemas, "global-default");
        edited.spec.matching_precedence = Some(42);
        edited.metadata.generation = Some(generation);
        annotate(edited, value);
        let changes = ensure(&levels, &schemas, true);
        let updates = updated_schema(&changes);
        match expected {
            None => assert!(updates.is_empty(), "{value:?} {generation}: {changes:?}"),
            Some((restored, written)) => {
                assert_eq!(updates.len(), 1, "{value:?} {generation}");
                let update = updates[0];
                let precedence = update.spec.matching_precedence;
                assert_eq!(precedence == original, restored, "{value:?} {generation}");
                assert_eq!(
                    annotation(update),
                    written.or(value),
                    "{value:?} {generation}"
                );
            }
        }
    }
}

#[test]
fn a_mandatory_object_is_always_restored_and_marked_auto_updated() {
    let (levels, mut schemas) = stored();
    let catch_all = schema(&mut schemas, "catch-all");
    catch_all.spec.matching_precedence = Some(5000);
    catch_all.metadata.generation = Some(3);
    annotate(catch_all, Some("false"));
    let changes = ensure(&levels, &schemas, false);
    let updates = updated_schema(&changes);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].spec.matching_precedence, Some(10000));
    assert_eq!(annotation(updates[0]), Some("true"));
}

#[test]
fn objects_the_bootstrap_configuration_dropped_are_deleted_when_auto_updated() {
    let (levels, mut schemas) = stored();
    let mut leftover = schemas[1].clone();
    leftover.metadata.name = Some("retired-schema".to_owned());
    for (value, deleted) in [(Some("true"), true), (Some("false"), false), (None, false)] {
        annotate(&mut leftover, value);
        schemas.retain(|s| s.metadata.name.as_deref() != Some("retired-schema"));
        schemas.push(leftover.clone());
        let changes = ensure(&levels, &schemas, true);
        let delete = Change::Delete {
            kind: "FlowSchema",
            name: "retired-schema".to_owned(),
        };
        assert_eq!(changes.contains(&delete), deleted, "{value:?}: {changes:?}");
    }
}
