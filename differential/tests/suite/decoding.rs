//! Bodies a server cannot decode, answered in Go's words (issue 55, item 13): JSON cut
//! short or with text after it, a body that is not an object, `null` and `{}`, an
//! `apiVersion` or `kind` of the wrong type, YAML that is a list, on a built-in kind and a
//! core kind.

use apfkit_differential::{Request, Session};
use serde_json::json;

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SERVICES: &str = "/api/v1/namespaces/default/services";

/// Bodies that are not JSON objects, or not JSON at all.
async fn bodies_that_do_not_decode_are_refused_in_gos_words(s: &mut Session) {
    for (path, body) in [
        (
            LEVELS,
            &b"{\"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\", \"kind\""[..],
        ),
        (LEVELS, b"[1, 2]"),
        (LEVELS, b"\"text\""),
        (LEVELS, b"null"),
        (LEVELS, b""),
        (LEVELS, b"{}"),
        (LEVELS, b"{\"kind\": 5}"),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {",
        ),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\"} trailing",
        ),
    ] {
        s.send(Request::post(path, &json!(null)).raw("application/json", body))
            .await;
    }
    s.send(Request::post(LEVELS, &json!(null)).raw("application/yaml", b"- 1\n- 2\n"))
        .await;
}

/// A value of the wrong JSON type, at the top, in metadata, in a spec, in a list and in a
/// map: Go's `json: cannot unmarshal … into Go struct field …` with the field's path.
async fn values_of_the_wrong_type_are_refused_in_gos_words(s: &mut Session) {
    let level = |spec: serde_json::Value, metadata: serde_json::Value| {
        let mut metadata = metadata;
        metadata["name"] = json!("wrong-type");
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": metadata, "spec": spec})
    };
    let limited = |shares: serde_json::Value| {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
            "limitResponse": {"type": "Reject"}}})
    };
    for body in [
        level(limited(json!("high")), json!({})),
        level(limited(json!(1.5)), json!({})),
        level(limited(json!(1e20)), json!({})),
        level(limited(json!(-1)), json!({})),
        level(limited(json!([1])), json!({})),
        level(json!("spec"), json!({})),
        level(json!({"type": 1}), json!({})),
        level(limited(json!(5)), json!({"labels": {"a": 1}})),
        level(limited(json!(5)), json!({"labels": ["a"]})),
        level(limited(json!(5)), json!({"finalizers": "a"})),
        level(limited(json!(5)), json!({"generation": "1"})),
        level(limited(json!(5)), json!({"creationTimestamp": 5})),
        level(limited(json!(5)), json!({"creationTimestamp": "yesterday"})),
        level(
            limited(json!(5)),
            json!({"creationTimestamp": "2026-02-30T00:00:00Z"}),
        ),
        level(limited(json!(5)), json!({"creationTimestamp": null})),
        level(limited(json!(5)), json!({"name": 7})),
    ] {
        s.send(Request::post(LEVELS, &body)).await;
    }
    s.send(Request::post(
        FLOW_SCHEMAS,
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "wrong-type"},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": 3}}]}]}}),
    ))
    .await;
    s.send(Request::post(
        SERVICES,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wrong-type"},
            "spec": {"ports": [{"port": "80"}]}}),
    ))
    .await;
    s.send(Request::post(
        SERVICES,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wrong-type"},
            "spec": {"selector": {"app": true}}}),
    ))
    .await;
}

crate::cases!(
    bodies_that_do_not_decode_are_refused_in_gos_words,
    values_of_the_wrong_type_are_refused_in_gos_words,
);
