//! Every verb on every kind both servers serve: create, get, list (by label), watch from the
//! created version, update, merge patch, the status subresource's get, update and patch
//! where the kind has one, delete, and deletecollection by label, each kind's answers
//! compared whole. APIServices too, for groups no server behind them serves.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const MERGE: &str = "application/merge-patch+json";
const NAMESPACE: &str = "verbs";
/// The label every object of the case carries, for its lists and deletecollections.
const LABEL: &str = "verbs.example.com/case";

/// One kind: where its objects are made, and a new object of it named `name`.
struct Kind {
    collection: String,
    api_version: &'static str,
    kind: &'static str,
    body: fn(&str) -> Value,
    status: bool,
    /// The names of its two objects, when the kind constrains them.
    names: Option<[&'static str; 2]>,
    /// Whether a controller of each server writes a condition into a new object's status
    /// (FlowSchemas' `Dangling`, APIServices' `Available`), at its own pace.
    conditions: bool,
}

impl Kind {
    fn object(&self, name: &str) -> Value {
        let mut object = (self.body)(name);
        object["apiVersion"] = json!(self.api_version);
        object["kind"] = json!(self.kind);
        object["metadata"] = json!({"name": name, "labels": {LABEL: "yes"}});
        object
    }
}

fn kinds() -> Vec<Kind> {
    let namespaced = |group_version: &str, plural: &str| {
        let root = if group_version == "v1" {
            "/api"
        } else {
            "/apis"
        };
        format!("{root}/{group_version}/namespaces/{NAMESPACE}/{plural}")
    };
    vec![
        Kind {
            collection: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas".to_owned(),
            api_version: "flowcontrol.apiserver.k8s.io/v1",
            kind: "FlowSchema",
            body: |_| {
                json!({"spec": {"priorityLevelConfiguration": {"name": "global-default"},
                    "matchingPrecedence": 9000}})
            },
            status: true,
            names: None,
            conditions: true,
        },
        Kind {
            collection: "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
                .to_owned(),
            api_version: "flowcontrol.apiserver.k8s.io/v1",
            kind: "PriorityLevelConfiguration",
            body: |_| {
                json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                    "limitResponse": {"type": "Reject"}}}})
            },
            status: true,
            names: None,
            conditions: false,
        },
        Kind {
            collection: "/apis/rbac.authorization.k8s.io/v1/clusterroles".to_owned(),
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            body: |_| json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            status: false,
            names: None,
            conditions: false,
        },
        Kind {
            collection: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".to_owned(),
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
            body: |_| {
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                        "name": "verbs-user"}]})
            },
            status: false,
            names: None,
            conditions: false,
        },
        Kind {
            collection: namespaced("rbac.authorization.k8s.io/v1", "roles"),
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "Role",
            body: |_| json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            status: false,
            names: None,
            conditions: false,
        },
        Kind {
            collection: namespaced("rbac.authorization.k8s.io/v1", "rolebindings"),
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            body: |_| {
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
                    "subjects": [{"kind": "ServiceAccount", "name": "default",
                        "namespace": NAMESPACE}]})
            },
            status: false,
            names: None,
            conditions: false,
        },
        Kind {
            collection: namespaced("v1", "services"),
            api_version: "v1",
            kind: "Service",
            body: |_| json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
            status: true,
            names: None,
            conditions: false,
        },
        Kind {
            collection: namespaced("discovery.k8s.io/v1", "endpointslices"),
            api_version: "discovery.k8s.io/v1",
            kind: "EndpointSlice",
            body: |_| {
                json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"],
                    "conditions": {"ready": true}}], "ports": [{"port": 80}]})
            },
            status: false,
            names: None,
            conditions: false,
        },
        Kind {
            collection: "/apis/apiregistration.k8s.io/v1/apiservices".to_owned(),
            api_version: "apiregistration.k8s.io/v1",
            kind: "APIService",
            body: |name| {
                let group = name.split_once('.').map_or(name, |(_, group)| group);
                json!({"spec": {"group": group, "version": "v1", "insecureSkipTLSVerify": true,
                    "service": {"namespace": NAMESPACE, "name": "api", "port": 443},
                    "groupPriorityMinimum": 100, "versionPriority": 10}})
            },
            status: true,
            names: Some(["v1.one.verbs.example.com", "v1.two.verbs.example.com"]),
            conditions: true,
        },
        Kind {
            collection: "/apis/verbs.example.com/v1/namespaces/verbs/gadgets".to_owned(),
            api_version: "verbs.example.com/v1",
            kind: "Gadget",
            body: |_| json!({"spec": {"size": 1}}),
            status: true,
            names: None,
            conditions: false,
        },
    ]
}

/// The verbs on one kind, in order: two objects made, read, listed, watched, updated,
/// patched, their status read and written, one deleted, the rest by deletecollection.
async fn verbs_on(s: &mut Session, kind: &Kind) {
    let [first, second] = kind.names.unwrap_or(["verbs-one", "verbs-two"]);
    let one = format!("{}/{first}", kind.collection);
    let created = s
        .send(Request::post(&kind.collection, &kind.object(first)))
        .await;
    s.send(Request::post(&kind.collection, &kind.object(second)))
        .await;
    let mut version = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let selector = format!("labelSelector={LABEL}%3Dyes");
    if kind.conditions {
        // Each server's controller writes a new object's condition (a FlowSchema's
        // `Dangling`, an APIService's `Available`) at its own pace: listed once both have it.
        // Watched from the settled list: the conditions' writes and the second create
        // interleave as each server's timing has them.
        // The list's own version is left out of what is compared: it counts other cases'
        // writes, so whether it equals its newest item's (and how the versions seen are
        // numbered) depends on each server's timing.
        let list = s
            .wait_until(
                Request::get(&format!("{}?{selector}", kind.collection))
                    .selecting(|list| json!({"kind": list["kind"], "items": list["items"]})),
                |_, list| {
                    list["items"].as_array().is_some_and(|items| {
                        items.len() == 2
                            && items
                                .iter()
                                .all(|item| item["status"]["conditions"].is_array())
                    })
                },
            )
            .await;
        // From the newest of its items (the list's own version counts other cases' writes).
        version = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item["metadata"]["resourceVersion"].as_str())
            .max_by_key(|v| v.parse::<u64>().unwrap_or(0))
            .unwrap_or_default()
            .to_owned();
    } else {
        s.send(Request::get(&format!("{}?{selector}", kind.collection)))
            .await;
    }
    s.send(Request::get(&format!(
        "{}?{selector}&watch=true&resourceVersion={version}&timeoutSeconds=1",
        kind.collection
    )))
    .await;
    let read = s.send(Request::get(&one)).await;
    let mut updated = read.clone();
    updated["metadata"]["annotations"] = json!({"verbs.example.com/updated": "yes"});
    s.send(Request::put(&one, &updated)).await;
    s.send(Request::patch(
        &one,
        MERGE,
        &json!({"metadata": {"labels": {"verbs.example.com/patched": "yes"}}}),
    ))
    .await;
    if kind.status {
        let status = format!("{one}/status");
        let read = s.send(Request::get(&status)).await;
        s.send(Request::put(&status, &read)).await;
        s.send(Request::patch(
            &status,
            MERGE,
            &json!({"metadata": {"annotations": {"verbs.example.com/status": "patched"}}}),
        ))
        .await;
    }
    s.send(Request::delete(&one)).await;
    s.send(Request::delete(&format!("{}?{selector}", kind.collection)))
        .await;
    s.send(Request::get(&format!("{}?{selector}", kind.collection)))
        .await;
}

/// Every verb on every kind, one kind after another.
async fn every_verb_on_every_kind(s: &mut Session) {
    s.send(Request::post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    ))
    .await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let mut version = apfkit_test_support::crd::version(
        "v1",
        true,
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
    );
    version["subresources"] = json!({"status": {}});
    s.send(Request::post(
        crds,
        &apfkit_test_support::crd::definition(
            "gadgets.verbs.example.com",
            "Gadget",
            json!([version]),
        ),
    ))
    .await;
    s.wait_until(
        Request::get("/apis/verbs.example.com/v1/namespaces/verbs/gadgets"),
        |code, _| code == 200,
    )
    .await;
    for kind in kinds() {
        verbs_on(s, &kind).await;
    }
    // Namespaces: a status write keeps its metadata changes; no deletecollection (405).
    s.send(Request::patch(
        &format!("/api/v1/namespaces/{NAMESPACE}/status"),
        MERGE,
        &json!({"metadata": {"annotations": {"verbs.example.com/status": "patched"}},
            "spec": {"finalizers": []}}),
    ))
    .await;
    s.send(Request::delete(&format!(
        "/api/v1/namespaces?labelSelector={LABEL}%3Dyes"
    )))
    .await;
    s.send(Request::delete(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=none%3Dnone",
    ))
    .await;
}

/// The APIServices kube-apiserver registers for the groups it serves itself, as stored: their
/// spec, the `Local` availability and the managers that wrote them.
async fn local_api_services_are_kubes(s: &mut Session) {
    for name in [
        "v1.flowcontrol.apiserver.k8s.io",
        "v1.apiregistration.k8s.io",
        "v1.",
        "v1.rbac.authorization.k8s.io",
    ] {
        s.send(Request::get(&format!(
            "/apis/apiregistration.k8s.io/v1/apiservices/{name}"
        )))
        .await;
    }
}

crate::cases!(every_verb_on_every_kind, local_api_services_are_kubes);
