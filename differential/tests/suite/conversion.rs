//! A CRD converted by a webhook both servers call: one webhook on a loopback port converts
//! `Widget`s between `v1` (`spec.size`) and `v2` (`spec.replicas`), or answers what an
//! object's `spec.fault` asks for, so that each server's checks of a webhook's answer
//! (kube-apiserver's `webhook_converter.go`) are compared, message for message.

use apfkit_differential::{Request, Session};
use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const V1: &str = "/apis/conversion.example.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/conversion.example.com/v2/namespaces/default/widgets";

/// The webhook's URL and CA bundle (PEM), started once for the run.
static WEBHOOK: OnceCell<(String, String)> = OnceCell::const_new();

/// The faults the webhook can be asked for, each by an object of its name.
const FAULTS: [&str; 12] = [
    "uid",
    "failure",
    "silent-failure",
    "extra-object",
    "name",
    "kind",
    "version",
    "label-not-a-string",
    "bad-annotation",
    "no-metadata",
    "review-kind",
    "no-response",
];

/// A `Widget` in `v1`, asking the webhook for `fault` (none when empty).
fn widget(name: &str, fault: &str) -> Value {
    json!({"apiVersion": "conversion.example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": "w"}}, "spec": {"size": 3, "fault": fault}})
}

/// `object` in `api_version`: `spec.size` of v1 is `spec.replicas` of v2.
fn converted(object: &Value, api_version: &str) -> Value {
    let mut object = object.clone();
    let (from, to) = if api_version.ends_with("/v2") {
        ("size", "replicas")
    } else {
        ("replicas", "size")
    };
    if let Some(spec) = object["spec"].as_object_mut()
        && let Some(value) = spec.remove(from)
    {
        spec.insert(to.to_owned(), value);
    }
    object["apiVersion"] = json!(api_version);
    object
}

/// The webhook's answer to `review`: the objects converted, or the fault the first object
/// that asks for one asks for.
fn answer(review: &Value) -> (u16, Vec<u8>) {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let fault = objects
        .iter()
        .find_map(|o| o["spec"]["fault"].as_str().filter(|f| !f.is_empty()))
        .unwrap_or_default();
    let mut converted: Vec<Value> = objects.iter().map(|o| converted(o, desired)).collect();
    let mut result = json!({"status": "Success"});
    let mut uid = request["uid"].clone();
    for object in &mut converted {
        if object["spec"]["fault"] != json!(fault) {
            continue;
        }
        match fault {
            "name" => object["metadata"]["name"] = json!("renamed"),
            "kind" => object["kind"] = json!("Gadget"),
            "version" => object["apiVersion"] = json!("conversion.example.com/v3"),
            "label-not-a-string" => object["metadata"]["labels"] = json!({"app": 1}),
            "bad-annotation" => object["metadata"]["annotations"] = json!({"not valid": "x"}),
            "no-metadata" => {
                object.as_object_mut().map(|o| o.remove("metadata"));
            }
            _ => {}
        }
    }
    match fault {
        "uid" => uid = json!("not-the-one-sent"),
        "failure" => result = json!({"status": "Failure", "message": "the widget refuses"}),
        "silent-failure" => result = json!({"status": "Failure"}),
        "extra-object" => converted.push(converted[0].clone()),
        _ => {}
    }
    let mut answer = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "result": result, "convertedObjects": converted}});
    match fault {
        "review-kind" => answer["kind"] = json!("AdmissionReview"),
        "no-response" => {
            answer.as_object_mut().map(|a| a.remove("response"));
        }
        _ => {}
    }
    (200, serde_json::to_vec(&answer).unwrap_or_default())
}

/// The CRD of `Widget`s, converted by the webhook at `url` trusting `ca`.
fn crd(url: &str, ca: &str) -> Value {
    let schema = |count: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {count: {"type": "integer"}, "fault": {"type": "string"}}}}}})
    };
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conversion.example.com"},
        "spec": {"group": "conversion.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("replicas")}],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": url, "caBundle": bundle}}}}})
}

/// Widgets read and written in the version they are not stored in, through the webhook;
/// then one object per fault read in `v2`, each refused with the message of the server's
/// check, and a list holding a faulty object.
async fn a_webhooks_conversions_and_faults_are_checked_as_kube_checks_them(s: &mut Session) {
    let (url, ca) = WEBHOOK
        .get_or_init(|| apfkit_test_support::extension::json_webhook(answer))
        .await;
    s.send(Request::post(CRDS, &crd(url, ca)).kind_only()).await;
    s.wait_until(Request::get(V2), |code, _| code == 200).await;
    s.send(Request::post(V1, &widget("plain", ""))).await;
    s.send(Request::get(&format!("{V2}/plain"))).await;
    let made_in_v2 = converted(&widget("made-in-v2", ""), "conversion.example.com/v2");
    s.send(Request::post(V2, &made_in_v2)).await;
    s.send(Request::get(&format!("{V1}/made-in-v2"))).await;
    s.send(Request::get(V2)).await;
    for fault in FAULTS {
        s.send(Request::post(V1, &widget(fault, fault))).await;
        s.send(Request::get(&format!("{V2}/{fault}"))).await;
    }
    // A list of the two good widgets and one faulty one: one review for all three.
    for fault in FAULTS.iter().filter(|f| **f != "name") {
        s.send(Request::delete(&format!("{V1}/{fault}")).kind_only())
            .await;
    }
    s.send(Request::get(V2)).await;
    s.send(Request::delete(&format!("{CRDS}/widgets.conversion.example.com")).kind_only())
        .await;
}

crate::cases!(a_webhooks_conversions_and_faults_are_checked_as_kube_checks_them);
