//! Namespaces: what a create, an update, `/finalize` and a delete do, the system namespaces,
//! discovery, and kube-apiserver's `NamespaceLifecycle` admission (no create in a namespace
//! that does not exist or is terminating; `default` never deleted). The reference runs
//! without kube-controller-manager: a deleted namespace stays `Terminating` there, so each
//! case holds its namespace with an object it cannot delete, or compares what comes before
//! the namespace controller.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const NAMESPACES: &str = "/api/v1/namespaces";

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn service(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "finalizers": finalizers},
        "spec": {"clusterIP": "None"}})
}

/// A namespace as made: its label, finalizer, phase and managed fields; the system
/// namespaces; a list by the name label; what `/finalize` and `/status` take.
async fn a_namespace_is_made_as_kube_makes_it(s: &mut Session) {
    s.send(Request::post(NAMESPACES, &namespace("made-here")))
        .await;
    let made = format!("{NAMESPACES}/made-here");
    s.send(Request::get(&made)).await;
    for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        s.send(
            Request::get(&format!("{NAMESPACES}/{system}")).selecting(|ns| {
                json!({"metadata": {"name": ns["metadata"]["name"],
                "labels": ns["metadata"]["labels"],
                "managedFields": ns["metadata"]["managedFields"]},
                "spec": ns["spec"], "status": ns["status"]})
            }),
        )
        .await;
    }
    s.send(Request::get(&format!(
        "{NAMESPACES}?labelSelector=kubernetes.io/metadata.name=made-here"
    )))
    .await;
    // An update keeps the finalizers and the status; the label comes back.
    s.send(Request::put(
        &made,
        &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "made-here", "labels": {"team": "a"}},
            "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}),
    ))
    .await;
    // `/status` holds the phase to `deletionTimestamp`.
    s.send(Request::patch(
        &format!("{made}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Terminating"}}),
    ))
    .await;
    // `/finalize` takes a PUT alone.
    s.send(Request::get(&format!("{made}/finalize"))).await;
    s.send(Request::patch(
        &format!("{made}/finalize"),
        "application/merge-patch+json",
        &json!({"spec": {"finalizers": []}}),
    ))
    .await;
    s.send(Request::with_method("DELETE", NAMESPACES)).await;
    s.send(Request::post(
        NAMESPACES,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Not_OK"},
            "spec": {"finalizers": ["mine"]}}),
    ))
    .await;
}

/// A namespace without finalizers: the first delete marks it, the second removes it.
async fn a_finalized_namespace_is_deleted_on_the_second_delete(s: &mut Session) {
    let path = format!("{NAMESPACES}/finalized-first");
    s.send(Request::post(NAMESPACES, &namespace("finalized-first")))
        .await;
    s.send(Request::put(
        &format!("{path}/finalize"),
        &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "finalized-first"}, "spec": {"finalizers": []}}),
    ))
    .await;
    s.send(Request::delete(&path)).await;
    s.send(Request::get(&path)).await;
    s.send(Request::delete(&path)).await;
    s.send(Request::get(&path)).await;
}

/// `NamespaceLifecycle`: a create in a namespace that does not exist is 404 about the
/// namespace, in a terminating one 403 about the object; `default` may not be deleted.
async fn no_content_is_created_in_a_missing_or_terminating_namespace(s: &mut Session) {
    let services = |ns: &str| format!("{NAMESPACES}/{ns}/services");
    s.send(Request::post(&services("nowhere"), &service("lost", &[])))
        .await;
    // A server-side apply that would create is held the same way.
    s.send(Request::patch(
        &format!("{}/lost?fieldManager=differential", services("nowhere")),
        "application/apply-patch+yaml",
        &service("lost", &[]),
    ))
    .await;
    s.send(Request::delete(&format!("{NAMESPACES}/default")))
        .await;
    s.send(Request::post(NAMESPACES, &namespace("terminating-here")))
        .await;
    // An object the namespace controller cannot delete keeps it terminating on apfkit too.
    s.send(Request::post(
        &services("terminating-here"),
        &service("held", &["example.com/hold"]),
    ))
    .await;
    let terminating = |ns: &Value| {
        json!({"metadata": {"name": ns["metadata"]["name"],
            "finalizers": ns["metadata"]["finalizers"]},
            "spec": ns["spec"], "phase": ns["status"]["phase"],
            "deleting": ns["metadata"]["deletionTimestamp"].is_string()})
    };
    s.send(Request::delete(&format!("{NAMESPACES}/terminating-here")).selecting(terminating))
        .await;
    s.send(Request::post(
        &services("terminating-here"),
        &service("late", &[]),
    ))
    .await;
    s.send(Request::post(
        &services("terminating-here"),
        &json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"generateName": "late-"}, "spec": {"clusterIP": "None"}}),
    ))
    .await;
}

/// How discovery lists Namespaces and their subresources.
async fn discovery_describes_namespaces_as_kube_does(s: &mut Session) {
    s.send(Request::get("/api/v1").selecting(|list| {
        json!(
            list["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("namespaces")))
                .collect::<Vec<_>>()
        )
    }))
    .await;
    s.send(
        Request::get("/api")
            .accept("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
            .selecting(|list| {
                list.pointer("/items/0/versions/0/resources")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|r| r["resource"] == "namespaces")
                    .cloned()
                    .unwrap_or_default()
            }),
    )
    .await;
}

crate::cases!(
    a_namespace_is_made_as_kube_makes_it,
    a_finalized_namespace_is_deleted_on_the_second_delete,
    no_content_is_created_in_a_missing_or_terminating_namespace,
    discovery_describes_namespaces_as_kube_does,
);
