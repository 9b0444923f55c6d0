//! Server-side apply on a real kind: the FlowSchema v1 schema the generator wrote, compiled by
//! `apfkit-fieldmanager`. Lists merge as upstream's OpenAPI says (`spec.rules` atomic,
//! `status.conditions` keyed by `type`), ObjectMeta as apimachinery declares it (labels
//! granular, finalizers a set), and `status` is a reset field of the main resource, as in
//! kube-apiserver's FlowSchema strategy (`pkg/registry/flowcontrol/flowschema/strategy.go`,
//! `GetResetFields`).

use apfkit_fieldmanager::path::PathElement;
use apfkit_fieldmanager::schema::Schema;
use apfkit_fieldmanager::set::FieldSet;
use apfkit_fieldmanager::updater::{ApplyError, Managers, OneVersion, Updater};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_types::json_schema::{self, Variant};
use serde_json::{Value, json};

const V1: &str = "flowcontrol.apiserver.k8s.io/v1";

fn versions() -> OneVersion {
    let kind = apfkit_types::find_kind(&GroupVersionKind::from_static(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
    ))
    .expect("FlowSchema v1");
    OneVersion {
        api_version: V1.to_owned(),
        schema: Schema::compile(&json_schema::schema(kind, Variant::Open)),
    }
}

fn status() -> FieldSet {
    let mut set = FieldSet::new();
    set.insert(&[PathElement::Field("status".into())]);
    set
}

fn flow_schema(labels: Value, precedence: u32, rules: Value) -> Value {
    json!({
        "apiVersion": V1, "kind": "FlowSchema",
        "metadata": {"name": "team-a", "labels": labels},
        "spec": {
            "matchingPrecedence": precedence,
            "priorityLevelConfiguration": {"name": "workload-low"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": rules,
        },
    })
}

fn rule(group: &str) -> Value {
    json!([{"subjects": [{"kind": "Group", "group": {"name": group}}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}])
}

fn spec_fields(managers: &Managers, manager: &str) -> String {
    managers[manager]
        .set
        .with_prefix(&PathElement::Field("spec".into()))
        .to_fields_v1()
}

#[test]
fn appliers_share_a_flow_schema_and_conflict_where_kube_apiserver_would() {
    let versions = versions();
    let updater = Updater::new(&versions).ignoring(V1, status());
    let config = flow_schema(json!({"team": "a"}), 500, rule("team-a"));
    let (live, managers) = updater
        .apply(&json!({}), &config, V1, Managers::new(), "gitops", false)
        .unwrap();
    let live = live.expect("created");
    assert_eq!(
        spec_fields(&managers, "gitops"),
        r#"{"f:distinguisherMethod":{"f:type":{}},"f:matchingPrecedence":{},"f:priorityLevelConfiguration":{"f:name":{}},"f:rules":{}}"#
    );

    // Another applier adds a label and a finalizer: granular map and set, no conflict.
    let ops = json!({"apiVersion": V1, "kind": "FlowSchema",
        "metadata": {"name": "team-a", "labels": {"env": "prod"}, "finalizers": ["ops/keep"]}});
    let (live, managers) = updater
        .apply(&live, &ops, V1, managers, "ops", false)
        .unwrap();
    let live = live.expect("changed");
    assert_eq!(
        live["metadata"]["labels"],
        json!({"team": "a", "env": "prod"})
    );
    assert_eq!(live["spec"]["rules"], rule("team-a"));

    // `spec.rules` is atomic: another rule list is a conflict on the whole list.
    let rules = json!({"apiVersion": V1, "kind": "FlowSchema",
        "metadata": {"name": "team-a"}, "spec": {"rules": rule("intruders")}});
    match updater.apply(&live, &rules, V1, managers.clone(), "ops", false) {
        Err(ApplyError::Conflicts(conflicts)) => {
            assert_eq!(
                conflicts.to_string(),
                "conflict with \"gitops\": .spec.rules"
            );
        }
        other => panic!("{other:?}"),
    }

    // An update takes the field it changes; the next apply of the old value conflicts.
    let mut tuned = live.clone();
    tuned["spec"]["matchingPrecedence"] = json!(400);
    let managers = updater
        .update(&live, &tuned, V1, managers, "tuner")
        .unwrap();
    match updater.apply(&tuned, &config, V1, managers.clone(), "gitops", false) {
        Err(ApplyError::Conflicts(conflicts)) => assert_eq!(
            conflicts.to_string(),
            "conflict with \"tuner\": .spec.matchingPrecedence"
        ),
        other => panic!("{other:?}"),
    }

    // Status is reset by the main resource: a controller's status write is owned by no one
    // there, and never conflicts with an applier.
    let mut with_status = tuned.clone();
    with_status["status"] = json!({"conditions": [{"type": "Dangling", "status": "False"}]});
    let managers = updater
        .update(&tuned, &with_status, V1, managers, "controller")
        .unwrap();
    assert!(!managers.contains_key("controller"), "{managers:?}");

    // gitops stops applying its label: it goes (gitops was its only manager); ops's label
    // and finalizer stay, and forcing takes matchingPrecedence back.
    let config = flow_schema(json!({}), 500, rule("team-a"));
    let (live, managers) = updater
        .apply(&with_status, &config, V1, managers, "gitops", true)
        .unwrap();
    let live = live.expect("changed");
    assert_eq!(live["metadata"]["labels"], json!({"env": "prod"}));
    assert_eq!(live["metadata"]["finalizers"], json!(["ops/keep"]));
    assert_eq!(live["spec"]["matchingPrecedence"], 500);
    assert_eq!(live["status"], with_status["status"]);
    assert!(!managers.contains_key("tuner"), "{managers:?}");
}
