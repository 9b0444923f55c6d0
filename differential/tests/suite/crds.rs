//! CustomResourceDefinitions: a deleted CRD terminates until its custom resources are gone
//! (item 12).

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS: &str = "/apis/terminating.example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "terminating.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name, "finalizers": finalizers}, "spec": {"size": 1}})
}

/// What a terminating CRD shows: its finalizers, whether it is marked, and its conditions
/// but their times (the rest is compared where CRDs are served).
fn terminating(crd: &Value) -> Value {
    let conditions: Vec<Value> = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!([c["type"], c["status"], c["reason"], c["message"]]))
        .collect();
    json!({
        "finalizers": crd["metadata"]["finalizers"],
        "marked": crd["metadata"]["deletionTimestamp"].is_string(),
        "conditions": conditions,
        "code": crd["code"],
    })
}

/// A deleted CRD gets the cleanup finalizer and the `Terminating` condition; its custom
/// resources are deleted (one with a finalizer stays, marked), new ones refused; once the
/// last is gone, so is the CRD.
async fn a_deleted_crd_terminates_until_its_custom_resources_are_gone(s: &mut Session) {
    let crd = format!("{CRDS}/gadgets.terminating.example.com");
    s.send(Request::post(
        CRDS,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.terminating.example.com"},
            "spec": {"group": "terminating.example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    ))
    .await;
    s.wait_until(Request::get(GADGETS), |code, _| code == 200)
        .await;
    s.send(Request::post(
        GADGETS,
        &gadget("kept", &["example.com/keep"]),
    ))
    .await;
    s.send(Request::post(GADGETS, &gadget("plain", &[]))).await;
    s.send(Request::delete(&crd).selecting(terminating)).await;
    s.wait_until(Request::get(&format!("{GADGETS}/plain")), |code, _| {
        code == 404
    })
    .await;
    s.wait_until(Request::get(&crd).selecting(terminating), |_, crd| {
        crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["reason"] == "InstanceDeletionInProgress")
    })
    .await;
    s.send(
        Request::get(&format!("{GADGETS}/kept")).selecting(|gadget| {
            json!({"finalizers": gadget["metadata"]["finalizers"],
                "marked": gadget["metadata"]["deletionTimestamp"].is_string()})
        }),
    )
    .await;
    s.send(Request::post(GADGETS, &gadget("late", &[]))).await;
    s.send(Request::patch(
        &format!("{GADGETS}/kept"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
    s.wait_until(Request::get(&crd), |code, _| code == 404)
        .await;
    s.wait_until(Request::get(GADGETS), |code, _| code == 404)
        .await;
}

crate::cases!(a_deleted_crd_terminates_until_its_custom_resources_are_gone);
