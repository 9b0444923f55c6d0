//! Patches of every type, as kube-apiserver applies them.

use apfkit_differential::{Request, Session};
use serde_json::json;

use crate::deletion::priority_level;

const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A JSON patch `test` of an absent member against `null` passes: absent is null (item 3;
/// kube-rs's `finalizer()` sends exactly this).
async fn a_json_patch_test_of_an_absent_member_against_null_passes(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-test");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("json-patch-test", json!({})),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/x"]}]),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    ))
    .await;
}

/// What a JSON patch that does not apply is answered: kube-apiserver's generic 422, without
/// the library's words; one that is no patch, 400 in the words of Go's decoder (item 13).
async fn json_patches_that_do_not_apply_are_answered_as_kube_answers_them(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-failures");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("json-patch-failures", json!({})),
    ))
    .await;
    for patch in [
        json!([{"op": "remove", "path": "/nothing"}]),
        json!([{"op": "add", "path": "/x/y", "value": 1}]),
        json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        json!([{"op": "replace", "path": "/spec/limited/nothing", "value": 1}]),
        json!([{"op": "move", "path": "/a"}]),
        json!([{"op": "frob", "path": "/a"}]),
        json!([{"op": "add", "path": "/metadata/labels/-", "value": "x"}]),
        json!({"op": "add"}),
        json!(["add"]),
    ] {
        s.send(Request::patch(&path, "application/json-patch+json", &patch))
            .await;
    }
}

crate::cases!(
    a_json_patch_test_of_an_absent_member_against_null_passes,
    json_patches_that_do_not_apply_are_answered_as_kube_answers_them,
);
