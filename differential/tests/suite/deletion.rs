//! Deletion: finalizers and `deletionTimestamp`, what a delete answers per kind, and what a
//! subresource allows.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A PriorityLevelConfiguration: no controller writes its status on either server, so what
/// each answers depends on the requests alone.
pub(crate) fn priority_level(name: &str, metadata: Value) -> Value {
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration", "metadata": metadata,
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "limitResponse": {"type": "Reject"}}}})
}

/// An object with a finalizer is kept, marked with `deletionTimestamp`, until its finalizers
/// are gone (issue 55, item 1).
async fn a_finalizer_keeps_a_deleted_object_until_it_is_removed(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/kept-by-finalizer");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level(
            "kept-by-finalizer",
            json!({"finalizers": ["example.com/hold"]}),
        ),
    ))
    .await;
    s.send(Request::delete(&path)).await;
    s.send(Request::get(&path)).await;
    // A second delete of an object being deleted changes nothing.
    s.send(Request::delete(&path)).await;
    s.send(Request::patch(
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
    s.send(Request::get(&path)).await;
}

/// What a delete says of dependents (`propagationPolicy`, `orphanDependents`) becomes the
/// garbage collector's finalizers on the object (`orphan`, `foregroundDeletion`), which then
/// keep it (the collector is not running beside either server); `Background` or
/// `orphanDependents: false` takes them away, and an object left without finalizers goes.
async fn deletes_leave_the_garbage_collectors_finalizers_as_asked(s: &mut Session) {
    const JSON: &str = "application/json";
    let levels = format!("{FLOW}/prioritylevelconfigurations");
    let create =
        |name: &str, metadata: Value| Request::post(&levels, &priority_level(name, metadata));
    // Another finalizer stays first; the policies replace each other.
    let held = format!("{levels}/gc-held");
    s.send(create(
        "gc-held",
        json!({"finalizers": ["example.com/hold"]}),
    ))
    .await;
    s.send(Request::delete(&held).json(JSON, &json!({"propagationPolicy": "Orphan"})))
        .await;
    s.send(Request::delete(&format!(
        "{held}?propagationPolicy=Foreground"
    )))
    .await;
    s.send(Request::delete(&held)).await;
    s.send(Request::delete(&held).json(JSON, &json!({"orphanDependents": false})))
        .await;
    s.send(Request::get(&held)).await;
    s.send(Request::patch(
        &held,
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
    // Foreground alone keeps an object; Background then removes it at once.
    let foreground = format!("{levels}/gc-foreground");
    s.send(create("gc-foreground", json!({}))).await;
    s.send(Request::delete(&foreground).json(
        JSON,
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
    ))
    .await;
    s.send(Request::get(&foreground)).await;
    s.send(Request::delete(&format!(
        "{foreground}?propagationPolicy=Background"
    )))
    .await;
    s.send(Request::get(&foreground)).await;
    // `orphanDependents` (deprecated) alike; a dry run shows the finalizer and keeps nothing.
    let orphaned = format!("{levels}/gc-orphaned");
    s.send(create("gc-orphaned", json!({}))).await;
    s.send(Request::delete(&format!(
        "{orphaned}?dryRun=All&propagationPolicy=Orphan"
    )))
    .await;
    s.send(Request::get(&orphaned)).await;
    s.send(Request::delete(&format!(
        "{orphaned}?orphanDependents=true"
    )))
    .await;
    s.send(Request::delete(&format!(
        "{orphaned}?orphanDependents=false"
    )))
    .await;
    s.send(Request::get(&orphaned)).await;
    // A namespace's first delete has its storage's own rules: `orphanDependents: false`
    // asks for foreground deletion there; later deletes are the generic store's.
    let namespaces = "/api/v1/namespaces";
    let namespace = format!("{namespaces}/gc-namespace");
    s.send(Request::post(
        namespaces,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gc-namespace"}}),
    ))
    .await;
    s.send(Request::put(
        &format!("{namespace}/finalize"),
        &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "gc-namespace"}, "spec": {"finalizers": []}}),
    ))
    .await;
    s.send(Request::delete(&namespace).json(JSON, &json!({"orphanDependents": false})))
        .await;
    s.send(Request::delete(&namespace)).await;
    s.send(Request::delete(&format!(
        "{namespace}?propagationPolicy=Background"
    )))
    .await;
    s.send(Request::get(&namespace)).await;
}

/// Status storage has get, update and patch only: a delete there is 405 (item 2).
async fn a_delete_of_a_status_subresource_is_not_allowed(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/status-not-deleted");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("status-not-deleted", json!({})),
    ))
    .await;
    s.send(Request::delete(&format!("{path}/status"))).await;
    s.send(Request::get(&path)).await;
}

/// What a Service's delete answers (item 11). A headless Service without ports: how their
/// list merges is item 4, still open.
async fn a_deleted_service_is_answered_as_its_kind_says(s: &mut Session) {
    let services = "/api/v1/namespaces/default/services";
    s.send(Request::post(
        services,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "deleted-service"},
            "spec": {"clusterIP": "None"}}),
    ))
    .await;
    s.send(Request::delete(&format!("{services}/deleted-service")))
        .await;
}

/// `metadata.generation` as each kind's strategy keeps it: none on Services; on
/// EndpointSlices one more for any change but to metadata other than labels (item 8).
async fn generations_are_kept_as_each_kinds_strategy_says(s: &mut Session) {
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = format!("{slices}/generation-slice");
    s.send(Request::post(
        slices,
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "generation-slice"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.1.1"]}]}),
    ))
    .await;
    for patch in [
        json!({"endpoints": [{"addresses": ["10.1.1.2"]}]}),
        json!({"metadata": {"annotations": {"a": "b"}}}),
        json!({"metadata": {"labels": {"a": "b"}}}),
    ] {
        s.send(Request::patch(
            &slice,
            "application/merge-patch+json",
            &patch,
        ))
        .await;
    }
    // A selector is an atomic map to kube's field manager: with item 4, still open. The
    // session affinity of a headless Service is warned about.
    let services = "/api/v1/namespaces/default/services";
    s.send(Request::post(
        services,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "generation-service"},
            "spec": {"clusterIP": "None"}}),
    ))
    .await;
    s.send(Request::patch(
        &format!("{services}/generation-service"),
        "application/merge-patch+json",
        &json!({"spec": {"sessionAffinity": "ClientIP"}}),
    ))
    .await;
}

/// A node port outside the node port range is refused by the allocator (item 16).
async fn a_node_port_outside_the_range_is_refused(s: &mut Session) {
    for node_port in [1, 29_999, 32_768] {
        s.send(Request::post(
            "/api/v1/namespaces/default/services",
            &json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": format!("node-port-{node_port}")},
                "spec": {"type": "NodePort", "selector": {"app": "x"},
                         "ports": [{"port": 80, "nodePort": node_port}]}}),
        ))
        .await;
    }
}

/// A delete that ignores store read errors (1.37's `AllowUnsafeMalformedObjectDeletion`, on):
/// its options checked as `ValidateDeleteOptions` checks them, noted in the audit event,
/// authorized once more as `unsafe-delete-ignore-read-errors`, refused by the storage for a
/// value that reads (a dry run too), and refused for a collection. (A value that does not
/// read cannot be made through either API; apfkit-apiextensions' conformance suite ports
/// upstream's tests of those.)
async fn a_delete_that_ignores_store_read_errors_is_checked_and_authorized(s: &mut Session) {
    use crate::authorization::{CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, grant_plain_user};
    const JSON: &str = "application/json";
    const UNSAFE: &str = "ignoreStoreReadErrorWithClusterBreakingPotential";
    // A FlowSchema, which the suite's audit policy audits.
    let schemas = format!("{FLOW}/flowschemas");
    let path = format!("{schemas}/unsafe-delete-target");
    s.send(
        Request::post(
            &schemas,
            &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                "metadata": {"name": "unsafe-delete-target"},
                "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                    "matchingPrecedence": 9000}}),
        )
        .kind_only(),
    )
    .await;
    s.send(
        Request::delete(&path)
            .json(JSON, &json!({UNSAFE: true}))
            .audited(),
    )
    .await;
    s.send(Request::delete(&format!("{path}?{UNSAFE}=true&dryRun=All")))
        .await;
    for options in [
        json!({UNSAFE: true, "propagationPolicy": "Background", "gracePeriodSeconds": 0}),
        json!({UNSAFE: true, "preconditions": {}, "orphanDependents": false}),
        json!({UNSAFE: false, "propagationPolicy": "Sideways"}),
        json!({"propagationPolicy": "Orphan", "orphanDependents": true}),
        json!({"dryRun": ["Some"], "propagationPolicy": "Sideways"}),
    ] {
        s.send(Request::delete(&path).json(JSON, &options)).await;
    }
    s.send(Request::delete(&format!(
        "{schemas}?labelSelector=unsafe%3Dnone&{UNSAFE}=true"
    )))
    .await;
    // Allowed to delete it, not to ignore read errors: admission's 403; then allowed that
    // too: the storage's 409.
    let roles = [
        ("unsafe-deleter", "delete"),
        (
            "unsafe-read-error-deleter",
            "unsafe-delete-ignore-read-errors",
        ),
    ];
    for (role, verb) in roles {
        grant_plain_user(
            s,
            role,
            json!([{"apiGroups": ["flowcontrol.apiserver.k8s.io"],
                "resources": ["flowschemas"], "verbs": [verb],
                "resourceNames": ["unsafe-delete-target"]}]),
        )
        .await;
        s.send(
            Request::delete(&path)
                .json(JSON, &json!({UNSAFE: true}))
                .as_plain_user(),
        )
        .await;
    }
    // `false` is a plain delete.
    s.send(
        Request::delete(&path)
            .json(JSON, &json!({UNSAFE: false}))
            .as_plain_user()
            .kind_only(),
    )
    .await;
    for (name, _) in roles {
        s.send(Request::delete(&format!("{CLUSTER_ROLE_BINDINGS}/{name}")).kind_only())
            .await;
        s.send(Request::delete(&format!("{CLUSTER_ROLES}/{name}")).kind_only())
            .await;
    }
}

crate::cases!(
    a_node_port_outside_the_range_is_refused,
    generations_are_kept_as_each_kinds_strategy_says,
    a_finalizer_keeps_a_deleted_object_until_it_is_removed,
    deletes_leave_the_garbage_collectors_finalizers_as_asked,
    a_delete_of_a_status_subresource_is_not_allowed,
    a_deleted_service_is_answered_as_its_kind_says,
    a_delete_that_ignores_store_read_errors_is_checked_and_authorized,
);
