//! `metadata.managedFields` as kube-apiserver writes it, through `FieldManager`: entries,
//! identifiers, times and order; what is never managed; conflicts with kube-apiserver's
//! message and causes; the first apply over an unmanaged object; `kubectl`'s move from
//! client-side to server-side apply; managedFields sent by clients; ten update managers at
//! most. Expected values follow `k8s.io/apimachinery/pkg/util/managedfields/internal` (each
//! test names the file) and what kube-apiserver answers.

use std::collections::BTreeMap;

use apfkit_fieldmanager::managed::{FieldManager, FieldManagerError, LAST_APPLIED_ANNOTATION};
use apfkit_fieldmanager::path::PathElement;
use apfkit_fieldmanager::schema::Schema;
use apfkit_fieldmanager::set::FieldSet;
use apfkit_fieldmanager::updater::OneVersion;
use serde_json::{Value, json};

const V1: &str = "example.com/v1";
const T0: &str = "2026-11-26T10:00:00Z";
const T1: &str = "2026-11-26T10:00:01Z";
const T2: &str = "2026-11-26T10:00:02Z";

fn versions() -> OneVersion {
    OneVersion {
        api_version: V1.to_owned(),
        schema: Schema::compile(&json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "image": {"type": "string"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["port"],
                          "items": {"type": "object", "properties": {
                              "port": {"type": "integer"}, "name": {"type": "string"}}}},
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
        }})),
    }
}

fn reset_status() -> BTreeMap<String, FieldSet> {
    let mut status = FieldSet::new();
    status.insert(&[PathElement::Field("status".into())]);
    BTreeMap::from([(V1.to_owned(), status)])
}

fn manager(versions: &OneVersion) -> FieldManager<'_> {
    FieldManager::new(versions, V1, "Widget", None, reset_status())
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": V1, "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

/// The object as stored after a create: the server sets uid and the like.
fn stored(mut object: Value) -> Value {
    object["metadata"]["uid"] = json!("0b7b1f0e");
    object["metadata"]["resourceVersion"] = json!("7");
    object
}

fn entries(object: &Value) -> &Vec<Value> {
    object["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
}

#[test]
fn a_create_records_its_manager_without_the_server_owned_fields() {
    // managedfields.go (encodeManagedFields), stripmeta.go, buildmanagerinfo.go.
    let versions = versions();
    let created = manager(&versions).update(
        &json!({}),
        widget(json!({"replicas": 1, "ports": [{"port": 80}]})),
        "kubectl-create",
        T0,
    );
    assert_eq!(
        entries(&created),
        &vec![json!({
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": V1,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {".": {}, "f:ports": {".": {}, "k:{\"port\":80}": {".": {}, "f:port": {}}}, "f:replicas": {}}},
        })]
    );
    // Without a fieldManager, kube-apiserver names the manager from the user agent; with
    // neither it is "unknown".
    let created = manager(&versions).update(&json!({}), widget(json!({"replicas": 1})), "", T0);
    assert_eq!(entries(&created)[0]["manager"], "unknown");
}

#[test]
fn applying_the_same_configuration_twice_changes_nothing() {
    let versions = versions();
    let fm = manager(&versions);
    let config = widget(json!({"replicas": 2, "ports": [{"port": 80, "name": "http"}]}));
    let first = stored(fm.apply(&json!({}), &config, "gitops", false, T0).unwrap());
    assert_eq!(
        entries(&first),
        &vec![json!({
            "manager": "gitops",
            "operation": "Apply",
            "apiVersion": V1,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:ports": {"k:{\"port\":80}": {".": {}, "f:name": {}, "f:port": {}}}, "f:replicas": {}}},
        })]
    );
    let second = fm.apply(&first, &config, "gitops", false, T1).unwrap();
    assert_eq!(
        second, first,
        "a no-op apply keeps the object and its times"
    );
}

#[test]
fn conflicts_are_answered_as_kube_apiserver_answers_them() {
    // conflict.go, NewConflictError and printManager.
    let versions = versions();
    let fm = manager(&versions);
    let applied = stored(
        fm.apply(
            &json!({}),
            &widget(json!({"replicas": 2, "image": "a"})),
            "gitops",
            false,
            T0,
        )
        .unwrap(),
    );
    let mut scaled = applied.clone();
    scaled["spec"]["replicas"] = json!(5);
    scaled["spec"]["image"] = json!("b");
    let scaled = fm.update(&applied, scaled, "autoscaler", T1);
    let config = widget(json!({"replicas": 3}));
    match fm.apply(&scaled, &config, "gitops", false, T2) {
        Err(FieldManagerError::Conflict { message, causes }) => {
            assert_eq!(
                message,
                "Apply failed with 1 conflict: conflict with \"autoscaler\" using example.com/v1: .spec.replicas"
            );
            assert_eq!(
                causes,
                vec![(
                    "conflict with \"autoscaler\" using example.com/v1".to_owned(),
                    ".spec.replicas".to_owned()
                )]
            );
        }
        other => panic!("{other:?}"),
    }
    let both = widget(json!({"replicas": 3, "image": "c"}));
    match fm.apply(&scaled, &both, "other", false, T2) {
        Err(FieldManagerError::Conflict { message, causes }) => {
            assert_eq!(
                message,
                "Apply failed with 2 conflicts: conflicts with \"autoscaler\" using example.com/v1:\n- .spec.image\n- .spec.replicas"
            );
            assert_eq!(causes.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    // Forced, the applier takes the field.
    let forced = fm.apply(&scaled, &config, "gitops", true, T2).unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    let managers: Vec<(&str, &Value)> = entries(&forced)
        .iter()
        .map(|e| (e["manager"].as_str().unwrap(), &e["fieldsV1"]))
        .collect();
    assert_eq!(
        managers,
        vec![
            ("gitops", &json!({"f:spec": {"f:replicas": {}}})),
            ("autoscaler", &json!({"f:spec": {"f:image": {}}})),
        ]
    );
}

#[test]
fn the_first_apply_over_an_unmanaged_object_keeps_what_it_held() {
    // skipnonapplied.go: an object nobody manages gets `before-first-apply`, and updates of
    // an existing unmanaged object are not tracked.
    let versions = versions();
    let fm = manager(&versions);
    let unmanaged = stored(widget(json!({"replicas": 1, "image": "a"})));
    let updated = fm.update(&unmanaged, unmanaged.clone(), "someone", T0);
    assert!(
        updated["metadata"].get("managedFields").is_none(),
        "{updated}"
    );
    let config = widget(json!({"image": "a", "ports": [{"port": 80}]}));
    let applied = stored(fm.apply(&unmanaged, &config, "gitops", false, T1).unwrap());
    assert_eq!(
        applied["spec"],
        json!({"replicas": 1, "image": "a", "ports": [{"port": 80}]})
    );
    let managers: Vec<(&str, &Value)> = entries(&applied)
        .iter()
        .map(|e| (e["manager"].as_str().unwrap(), &e["fieldsV1"]))
        .collect();
    assert_eq!(
        managers,
        [
            (
                "gitops",
                &json!({"f:spec": {"f:image": {}, "f:ports": {"k:{\"port\":80}": {".": {}, "f:port": {}}}}})
            ),
            (
                "before-first-apply",
                &json!({"f:spec": {".": {}, "f:image": {}, "f:replicas": {}}})
            ),
        ]
    );
    // The values it held are `before-first-apply`'s: changing one is a conflict.
    match fm.apply(
        &applied,
        &widget(json!({"image": "b"})),
        "gitops",
        false,
        T2,
    ) {
        Err(FieldManagerError::Conflict { message, .. }) => assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using example.com/v1: .spec.image"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn kubectl_moves_from_client_side_to_server_side_apply() {
    // lastappliedmanager.go and lastappliedupdater.go: conflicts on fields the
    // last-applied-configuration still holds do not stop `kubectl`, and the annotation
    // follows what it applies.
    let versions = versions();
    let fm = manager(&versions);
    let last = widget(json!({"replicas": 2, "image": "a"}));
    let mut object = last.clone();
    object["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: format!("{}\n", last)});
    let created = stored(fm.update(&json!({}), object, "kubectl-client-side-apply", T0));
    let config = widget(json!({"replicas": 3, "image": "a"}));
    // Another manager would conflict...
    assert!(matches!(
        fm.apply(&created, &config, "someone-else", false, T1),
        Err(FieldManagerError::Conflict { .. })
    ));
    // ...kubectl does not.
    let applied = fm.apply(&created, &config, "kubectl", false, T1).unwrap();
    assert_eq!(applied["spec"]["replicas"], 3);
    assert_eq!(
        applied["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        format!(
            "{}\n",
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"image":"a","replicas":3}}"#
        )
    );
    // A field the live object no longer holds as last applied is a real conflict.
    let mut drifted = created.clone();
    drifted["spec"]["image"] = json!("z");
    let drifted = fm.update(&created, drifted, "editor", T1);
    assert!(matches!(
        fm.apply(
            &drifted,
            &widget(json!({"image": "b"})),
            "kubectl",
            false,
            T2
        ),
        Err(FieldManagerError::Conflict { .. })
    ));
}

#[test]
fn managed_fields_sent_by_clients_are_reset_kept_or_refused_as_kube_apiserver_does() {
    // fieldmanager.go, decodeLiveOrNew and isResetManagedFields; structuredmerge.go.
    let versions = versions();
    let fm = manager(&versions);
    let created = stored(fm.update(&json!({}), widget(json!({"replicas": 1})), "a", T0));
    // Garbage: the live object's managed fields are kept.
    let mut garbage = created.clone();
    garbage["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Delete"}]);
    garbage["spec"]["image"] = json!("i");
    let kept = fm.update(&created, garbage, "b", T1);
    let names: Vec<&str> = entries(&kept)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    // An empty list resets them: the update is then the only manager of what it changed.
    let mut reset = kept.clone();
    reset["metadata"]["managedFields"] = json!([]);
    let reset = fm.update(&kept, reset, "c", T2);
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
    // An apply may not set them.
    let mut applied = widget(json!({"replicas": 1}));
    applied["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        fm.apply(&created, &applied, "a", false, T1),
        Err(FieldManagerError::BadRequest(
            "metadata.managedFields must be nil".into()
        ))
    );
    // Nor be of another kind or version.
    let mut other = widget(json!({}));
    other["apiVersion"] = json!("example.com/v2");
    assert_eq!(
        fm.apply(&created, &other, "a", false, T1),
        Err(FieldManagerError::BadRequest(
            "invalid object type: example.com/v2, Kind=Widget".into()
        ))
    );
    // Duplicate keys in an applied list: kube-apiserver's 500 and message.
    let duplicated = widget(json!({"ports": [{"port": 80}, {"port": 80}]}));
    match fm.apply(&created, &duplicated, "a", false, T1) {
        Err(FieldManagerError::Internal(message)) => assert_eq!(
            message,
            "failed to create typed patch object (/w; example.com/v1, Kind=Widget): .spec.ports: duplicate entries for key [port=80]"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn status_is_nobody_s_field_on_the_main_resource_and_subresources_are_named() {
    let versions = versions();
    let fm = manager(&versions);
    let created = stored(fm.update(&json!({}), widget(json!({"replicas": 1})), "a", T0));
    let mut with_status = created.clone();
    with_status["status"] = json!({"ready": true});
    let unchanged = fm.update(&created, with_status.clone(), "a", T1);
    assert_eq!(entries(&unchanged), entries(&created));
    let status = FieldManager::new(&versions, V1, "Widget", Some("status"), BTreeMap::new());
    let written = status.update(&created, with_status, "controller", T1);
    let last = entries(&written).last().unwrap();
    assert_eq!(last["manager"], "controller");
    assert_eq!(last["subresource"], "status");
    assert_eq!(
        last["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
}

#[test]
fn at_most_ten_update_managers_are_kept() {
    // capmanagers.go: the oldest are merged into `ancient-changes`.
    let versions = versions();
    let fm = manager(&versions);
    let mut object = stored(fm.update(&json!({}), widget(json!({"replicas": 0})), "m00", T0));
    for i in 1..=12 {
        // Each manager adds a port of its own.
        let mut next = object.clone();
        match next["spec"]["ports"].as_array_mut() {
            Some(ports) => ports.push(json!({"port": i})),
            None => next["spec"]["ports"] = json!([{"port": i}]),
        }
        object = fm.update(
            &object,
            next,
            &format!("m{i:02}"),
            &format!("2026-11-26T10:00:{i:02}Z"),
        );
    }
    let names: Vec<&str> = entries(&object)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    // m00 to m03 (the oldest four of thirteen) went into one `ancient-changes`.
    assert_eq!(names.len(), 10, "{names:?}");
    assert_eq!(names[0], "ancient-changes", "{names:?}");
    assert_eq!(
        names[1..],
        [
            "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m12"
        ]
    );
    let ancient = &entries(&object)[0]["fieldsV1"]["f:spec"];
    assert!(
        ancient.get("f:replicas").is_some() && ancient["f:ports"].get("k:{\"port\":3}").is_some(),
        "{ancient}"
    );
}
