//! Events (issue 57 §1): core/v1 and events.k8s.io/v1 over one storage, each read through the
//! other; what each version's checks refuse; the field labels each selects on; updates,
//! deletes whose garbage-collection options do nothing; columns and protobuf. Each object in
//! `default`.

use apfkit_differential::{Request, Session};
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message as _;
use serde_json::{Value, json};

const CORE: &str = "/api/v1/namespaces/default/events";
const NEWER: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const MERGE: &str = "application/merge-patch+json";

/// An Event as client-go's old recorder (`record.EventRecorder`) posts it through core/v1.
fn core_event(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "settings",
            "apiVersion": "v1", "fieldPath": "data"},
        "reason": "Loaded", "message": "settings loaded\n", "type": "Normal",
        "source": {"component": "loader", "host": "node-1"},
        "firstTimestamp": "2026-12-01T10:00:00Z", "lastTimestamp": "2026-12-01T10:00:05Z",
        "count": 2})
}

/// An Event as kube-rs's `Recorder` (and client-go's events.k8s.io recorder) posts it.
fn newer_event(name: &str) -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-12-01T10:00:00.123456Z",
        "reportingController": "example.com/widgets", "reportingInstance": "widgets-0",
        "action": "Reconcile", "reason": "Reconciled", "type": "Normal",
        "regarding": {"kind": "Widget", "namespace": "default", "name": "w",
            "apiVersion": "example.com/v1"},
        "note": "reconciled"})
}

/// A table's rows with the times ("Last Seen", "First Seen") that are not `<unknown>` left
/// out: they count from the moment each server answers.
fn rows(table: &Value) -> Value {
    let cells: Vec<Value> = table["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let mut cells = row["cells"].as_array().cloned().unwrap_or_default();
            for index in [0, 7] {
                if let Some(cell) = cells.get_mut(index)
                    && cell != "<unknown>"
                {
                    *cell = "<time>".into();
                }
            }
            Value::Array(cells)
        })
        .collect();
    json!({"columnDefinitions": table["columnDefinitions"], "cells": cells})
}

/// An Event written through one version is read through the other, in JSON and as a table;
/// a core/v1 Event sent in protobuf. (Answers in protobuf hold each server's uid and resource
/// version in their bytes; the unit tests hold the messages to upstream's.)
async fn events_are_one_storage_read_through_both_versions(s: &mut Session) {
    s.send(Request::post(CORE, &core_event("loaded.1"))).await;
    s.send(Request::get(&format!("{NEWER}/loaded.1"))).await;
    s.send(Request::post(NEWER, &newer_event("reconciled.1")))
        .await;
    s.send(Request::get(&format!("{CORE}/reconciled.1"))).await;
    for path in [CORE, NEWER] {
        s.send(
            Request::get(&format!("{path}?fieldSelector=metadata.name%3Dloaded.1"))
                .accept(TABLE)
                .selecting(rows),
        )
        .await;
        s.send(
            Request::get(&format!(
                "{path}?fieldSelector=metadata.name%3Dreconciled.1"
            ))
            .accept(TABLE)
            .selecting(rows),
        )
        .await;
    }
    // In protobuf, as client-go's typed clients send a core/v1 Event.
    let sent = core::Event {
        metadata: Some(meta::ObjectMeta {
            name: Some("sent.1".to_owned()),
            namespace: Some("default".to_owned()),
            ..Default::default()
        }),
        involved_object: Some(core::ObjectReference {
            kind: Some("Pod".to_owned()),
            namespace: Some("default".to_owned()),
            name: Some("p".to_owned()),
            ..Default::default()
        }),
        reason: Some("Pulled".to_owned()),
        r#type: Some("Normal".to_owned()),
        ..Default::default()
    };
    let envelope = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some("v1".to_owned()),
            kind: Some("Event".to_owned()),
        }),
        raw: Some(sent.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(envelope.encode_to_vec());
    s.send(
        Request::with_method("POST", CORE)
            .raw(PROTOBUF, &body)
            .accept("application/json"),
    )
    .await;
    s.send(Request::get(&format!("{NEWER}/sent.1"))).await;
    for name in ["loaded.1", "reconciled.1", "sent.1"] {
        s.send(Request::delete(&format!("{CORE}/{name}"))).await;
    }
}

/// What each version's checks refuse: events.k8s.io/v1's stricter rules on a create, and an
/// update's immutable fields; core/v1's legacy rules.
async fn events_are_checked_by_the_rules_of_the_requests_version(s: &mut Session) {
    let mut refused = Vec::new();
    let mut without_time = newer_event("refused.1");
    without_time["eventTime"] = Value::Null;
    refused.push(without_time);
    let mut odd = newer_event("refused.2");
    odd["type"] = "Odd".into();
    odd["deprecatedCount"] = 3.into();
    odd["deprecatedSource"] = json!({"component": "kubelet"});
    odd["series"] = json!({"count": 1, "lastObservedTime": "2026-12-01T10:00:00.000000Z"});
    odd["reportingController"] = "not a name".into();
    refused.push(odd);
    let mut long = newer_event("refused.3");
    long["action"] = "a".repeat(129).into();
    long["note"] = "n".repeat(1025).into();
    long["regarding"]["namespace"] = "elsewhere".into();
    refused.push(long);
    for event in &refused {
        s.send(Request::post(NEWER, event)).await;
    }
    // Through core/v1 only the legacy rules hold.
    let mut elsewhere = core_event("refused.4");
    elsewhere["involvedObject"]["namespace"] = "elsewhere".into();
    s.send(Request::post(CORE, &elsewhere)).await;
    let mut new_style = core_event("legacy.1");
    new_style["eventTime"] = "2026-12-01T10:00:00.000000Z".into();
    s.send(Request::post(CORE, &new_style)).await;
    new_style["reportingComponent"] = "loader".into();
    new_style["reportingInstance"] = "node-1".into();
    new_style["action"] = "Load".into();
    s.send(Request::post(CORE, &new_style)).await;
    // An update may not change what happened through events.k8s.io/v1; it may through core/v1.
    s.send(Request::post(NEWER, &newer_event("updated.1")))
        .await;
    let path = format!("{NEWER}/updated.1");
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"note": "changed", "reason": "Other", "regarding": {"name": "v"}}),
    ))
    .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"series": {"count": 2, "lastObservedTime": "2026-12-01T10:05:00.000000Z"}}),
    ))
    .await;
    s.send(Request::patch(
        &format!("{CORE}/updated.1"),
        MERGE,
        &json!({"message": "changed", "reason": "Other"}),
    ))
    .await;
    // A PUT may create an Event, and needs no resourceVersion.
    let mut put = core_event("put.1");
    s.send(Request::put(&format!("{CORE}/put.1"), &put)).await;
    put["message"] = "again".into();
    s.send(Request::put(&format!("{CORE}/put.1"), &put)).await;
    for name in ["legacy.1", "updated.1", "put.1"] {
        s.send(Request::delete(&format!("{CORE}/{name}"))).await;
    }
}

/// The field labels of each version, and a delete's garbage-collection options, which an
/// Event does not take (its policy is `Unsupported`).
async fn events_select_on_their_own_field_labels(s: &mut Session) {
    s.send(Request::post(CORE, &core_event("selected.1"))).await;
    s.send(Request::post(NEWER, &newer_event("selected.2")))
        .await;
    // The other cases run beside this one in `default`: only this case's Events are named.
    let names = |list: &Value| -> Value {
        let mut names: Vec<Value> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| item["metadata"]["name"].clone())
            .filter(|name| {
                name.as_str()
                    .is_some_and(|name| name.starts_with("selected."))
            })
            .collect();
        names.sort_by_key(ToString::to_string);
        Value::Array(names)
    };
    for selector in [
        "involvedObject.name=settings",
        "involvedObject.kind=Widget",
        "source=loader",
        "source=example.com/widgets",
        "reportingComponent=example.com/widgets",
        "reason=Loaded,type=Normal",
        "involvedObject.fieldPath=data",
        "regarding.name=w",
    ] {
        s.send(Request::get(&format!("{CORE}?fieldSelector={selector}")).selecting(names))
            .await;
    }
    for selector in [
        "regarding.name=w",
        "regarding.kind=ConfigMap",
        "reportingController=example.com/widgets",
        "reason=Reconciled",
        "involvedObject.name=settings",
        "source=loader",
    ] {
        s.send(Request::get(&format!("{NEWER}?fieldSelector={selector}")).selecting(names))
            .await;
    }
    // Foreground and orphan deletes of an Event remove it at once, its GC finalizers gone.
    let mut finalized = core_event("finalized.1");
    finalized["metadata"]["finalizers"] = json!(["orphan", "example.com/keep"]);
    s.send(Request::post(CORE, &finalized)).await;
    s.send(Request::delete(&format!("{CORE}/finalized.1")).raw(
        "application/json",
        br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}"#,
    ))
    .await;
    s.send(Request::patch(
        &format!("{CORE}/finalized.1"),
        MERGE,
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
    s.send(Request::delete(&format!("{CORE}/selected.1")).raw(
        "application/json",
        br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}"#,
    ))
    .await;
    s.send(Request::delete(&format!("{NEWER}/selected.2")))
        .await;
}

crate::cases!(
    events_are_one_storage_read_through_both_versions,
    events_are_checked_by_the_rules_of_the_requests_version,
    events_select_on_their_own_field_labels,
);
