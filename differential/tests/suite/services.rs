//! Services: how their lists and maps merge (item 4), by the schema kube-apiserver
//! publishes for them (item 5). Headless, so that no cluster IP is allocated.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";
const APPLY: &str = "application/apply-patch+yaml";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

fn headless(name: &str, spec: &Value) -> Value {
    let mut spec = spec.clone();
    spec["clusterIP"] = json!("None");
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

/// A strategic merge patch merges `spec.ports` by `port` (its `$patch: delete` removes one)
/// and `spec.selector` by key.
async fn a_strategic_merge_patch_merges_service_ports_by_port(s: &mut Session) {
    let service = format!("{SERVICES}/merged-ports");
    s.send(Request::post(
        SERVICES,
        &headless(
            "merged-ports",
            &json!({"selector": {"app": "a"}, "ports": [{"name": "http", "port": 80}]}),
        ),
    ))
    .await;
    for patch in [
        json!({"spec": {"ports": [{"name": "https", "port": 443}]}}),
        json!({"spec": {"ports": [{"name": "web", "port": 80}]}}),
        json!({"spec": {"ports": [{"port": 80, "$patch": "delete"}]}}),
        json!({"spec": {"selector": {"tier": "web"}}}),
    ] {
        s.send(Request::patch(&service, STRATEGIC, &patch)).await;
    }
}

/// A merged list in kube's order: the patch's items in its order, the others interleaved
/// where the server had them; primitives (finalizers) likewise.
async fn a_strategic_merge_patch_orders_merged_lists_as_kube_does(s: &mut Session) {
    let service = format!("{SERVICES}/ordered-ports");
    let ports = |numbers: &[u16]| -> Value {
        numbers
            .iter()
            .map(|port| json!({"name": format!("p{port}"), "port": port}))
            .collect()
    };
    s.send(Request::post(
        SERVICES,
        &headless(
            "ordered-ports",
            &json!({"ports": ports(&[1001, 1002, 1003, 1004]),
                "selector": {"app": "a"}}),
        ),
    ))
    .await;
    s.send(Request::patch(
        &service,
        STRATEGIC,
        &json!({"spec": {"ports": ports(&[1003, 1005, 1001])}}),
    ))
    .await;
    s.send(Request::patch(
        &service,
        STRATEGIC,
        &json!({"spec": {"$setElementOrder/ports": [{"port": 1004}, {"port": 1006}, {"port": 1002}],
            "ports": ports(&[1006])}}),
    ))
    .await;
    s.send(Request::patch(
        &service,
        STRATEGIC,
        &json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}),
    ))
    .await;
    s.send(Request::patch(
        &service,
        STRATEGIC,
        &json!({"metadata": {"finalizers": ["example.com/c", "example.com/a"],
            "$deleteFromPrimitiveList/finalizers": ["example.com/b"]}}),
    ))
    .await;
    s.send(Request::patch(
        &service,
        STRATEGIC,
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
}

/// Server-side apply owns each port by `port` and `protocol`: two managers apply a port each
/// without a conflict, one that stops applying its port removes only that one; the selector
/// is owned whole, so a second manager's selector conflicts.
async fn server_side_apply_owns_service_ports_one_by_one(s: &mut Session) {
    let service = format!("{SERVICES}/applied-ports");
    let apply = |manager: &str, spec: Value| {
        Request::patch(
            &format!("{service}?fieldManager={manager}"),
            APPLY,
            &headless("applied-ports", &spec),
        )
    };
    s.send(apply(
        "first",
        json!({"selector": {"app": "a"}, "ports": [{"name": "http", "port": 80}]}),
    ))
    .await;
    s.send(apply(
        "second",
        json!({"ports": [{"name": "metrics", "port": 9090}]}),
    ))
    .await;
    s.send(apply("second", json!({"selector": {"app": "b"}})))
        .await;
    s.send(apply("first", json!({"selector": {"app": "a"}})))
        .await;
}

crate::cases!(
    a_strategic_merge_patch_orders_merged_lists_as_kube_does,
    a_strategic_merge_patch_merges_service_ports_by_port,
    server_side_apply_owns_service_ports_one_by_one,
);
