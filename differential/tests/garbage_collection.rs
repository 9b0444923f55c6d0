//! Owner references followed by kube-controller-manager 1.37's garbage collector beside the
//! reference kube-apiserver, and by apfkit's collector on etcd and on its embedded store: the
//! same owners and dependents, the same deletes (background, orphan, foreground; owners
//! dangling, of another uid, of a kind not served, namespaced owners of cluster-scoped
//! objects), and the same end on each: which objects are left, with which references,
//! finalizers, deletion marks and managers.

use std::time::Duration;

use apfkit_differential::controllers::WithControllers;
use apfkit_test_support::requests::{api_resource, client, namespaces, until};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// How long a server's collector may take for one step.
const WITHIN: Duration = Duration::from_secs(60);
/// The namespace of the namespaced objects.
const NAMESPACE: &str = "collected";

/// One object of the scenario: its API, and its name.
#[derive(Clone, Copy)]
struct Named {
    kind: Kind,
    name: &'static str,
}

#[derive(Clone, Copy)]
enum Kind {
    Service,
    EndpointSlice,
    Role,
    ClusterRole,
}

impl Kind {
    fn api(self, client: &kube::Client) -> Api<DynamicObject> {
        let (group, kind, plural) = match self {
            Kind::Service => ("", "Service", "services"),
            Kind::EndpointSlice => ("discovery.k8s.io", "EndpointSlice", "endpointslices"),
            Kind::Role => ("rbac.authorization.k8s.io", "Role", "roles"),
            Kind::ClusterRole => ("rbac.authorization.k8s.io", "ClusterRole", "clusterroles"),
        };
        let resource = api_resource(group, "v1", kind, plural);
        match self {
            Kind::ClusterRole => Api::all_with(client.clone(), &resource),
            _ => Api::namespaced_with(client.clone(), NAMESPACE, &resource),
        }
    }

    /// The object's body, with `metadata`.
    fn body(self, name: &str, metadata: Value) -> DynamicObject {
        let mut metadata = metadata;
        metadata["name"] = json!(name);
        let body = match self {
            Kind::Service => json!({"apiVersion": "v1", "kind": "Service",
                "spec": {"clusterIP": "None"}}),
            Kind::EndpointSlice => json!({"apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice", "addressType": "IPv4", "endpoints": []}),
            Kind::Role => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "rules": []}),
            Kind::ClusterRole => json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole", "rules": []}),
        };
        let mut body = body;
        body["metadata"] = metadata;
        serde_json::from_value(body).expect("an object")
    }
}

/// A reference to `owner`, of `kind` (`Service` or `ClusterRole`).
fn reference(owner: &DynamicObject, kind: &str, block: bool) -> Value {
    let api_version = if kind == "Service" {
        "v1"
    } else {
        "rbac.authorization.k8s.io/v1"
    };
    json!({"apiVersion": api_version, "kind": kind, "name": owner.metadata.name,
           "uid": owner.metadata.uid, "blockOwnerDeletion": block})
}

/// What the scenario compares of one object: whether it is there, its references (by name),
/// finalizers, deletion mark and managers.
async fn summary(client: &kube::Client, named: Named) -> Value {
    let Some(object) = named.kind.api(client).get_opt(named.name).await.unwrap() else {
        return json!({"name": named.name, "exists": false});
    };
    let meta = &object.metadata;
    json!({
        "name": named.name,
        "exists": true,
        "ownerReferences": meta.owner_references.iter().flatten()
            .map(|r| format!("{}/{} block={:?}", r.kind, r.name, r.block_owner_deletion))
            .collect::<Vec<_>>(),
        "finalizers": meta.finalizers,
        "deleting": meta.deletion_timestamp.is_some(),
        "managers": meta.managed_fields.iter().flatten()
            .map(|m| format!("{} {}", m.manager.as_deref().unwrap_or(""),
                             m.operation.as_deref().unwrap_or("")))
            .collect::<Vec<_>>(),
    })
}

/// Waits until `done` holds of the summaries of `objects` on `client` (or [`WITHIN`]), and
/// answers them.
async fn settled(
    client: &kube::Client,
    objects: &[Named],
    done: impl Fn(&[Value]) -> bool,
) -> (bool, Vec<Value>) {
    let reached = until(WITHIN, || async {
        let mut now = Vec::new();
        for named in objects {
            now.push(summary(client, *named).await);
        }
        done(&now)
    })
    .await;
    let mut now = Vec::new();
    for named in objects {
        now.push(summary(client, *named).await);
    }
    (reached, now)
}

fn exists(summaries: &[Value], name: &str) -> bool {
    summaries
        .iter()
        .any(|s| s["name"] == name && s["exists"] == true)
}

async fn create(client: &kube::Client, kind: Kind, name: &str, metadata: Value) -> DynamicObject {
    kind.api(client)
        .create(&PostParams::default(), &kind.body(name, metadata))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The scenario on one server, step by step: each step's summaries once its end was reached.
async fn scenario(client: &kube::Client) -> Vec<(String, bool, Vec<Value>)> {
    namespaces(client, &[NAMESPACE]).await;
    let mut steps = Vec::new();
    let keeper = create(client, Kind::Service, "keeper", json!({})).await;

    // Background: a dependent with no other owner goes; one with another loses the reference.
    let owner = create(client, Kind::Service, "background-owner", json!({})).await;
    let only = json!({"ownerReferences": [reference(&owner, "Service", false)]});
    create(client, Kind::EndpointSlice, "background-only", only).await;
    let two = json!({"ownerReferences": [reference(&owner, "Service", false),
                                         reference(&keeper, "Service", false)]});
    create(client, Kind::Role, "background-two", two).await;
    Kind::Service
        .api(client)
        .delete("background-owner", &DeleteParams::default())
        .await
        .unwrap();
    let objects = [
        Named {
            kind: Kind::Service,
            name: "background-owner",
        },
        Named {
            kind: Kind::EndpointSlice,
            name: "background-only",
        },
        Named {
            kind: Kind::Role,
            name: "background-two",
        },
    ];
    let (reached, now) = settled(client, &objects, |now| {
        !exists(now, "background-only")
            && now[2]["ownerReferences"]
                .as_array()
                .is_some_and(|r| r.len() == 1)
    })
    .await;
    steps.push(("background".to_owned(), reached, now));

    // Orphan: the references to the owner removed, the owner gone, the dependents kept.
    let owner = create(client, Kind::Service, "orphan-owner", json!({})).await;
    let owned = |block| json!({"ownerReferences": [reference(&owner, "Service", block)]});
    create(client, Kind::EndpointSlice, "orphan-slice", owned(true)).await;
    let two = json!({"ownerReferences": [reference(&keeper, "Service", false),
                                         reference(&owner, "Service", false)]});
    create(client, Kind::Role, "orphan-role", two).await;
    Kind::Service
        .api(client)
        .delete("orphan-owner", &DeleteParams::orphan())
        .await
        .unwrap();
    let objects = [
        Named {
            kind: Kind::Service,
            name: "orphan-owner",
        },
        Named {
            kind: Kind::EndpointSlice,
            name: "orphan-slice",
        },
        Named {
            kind: Kind::Role,
            name: "orphan-role",
        },
    ];
    let (reached, now) = settled(client, &objects, |now| !exists(now, "orphan-owner")).await;
    steps.push(("orphan".to_owned(), reached, now));

    // Foreground: the owner waits for its blocking dependent, held by a finalizer of its
    // own; the other dependent goes.
    let owner = create(client, Kind::Service, "foreground-owner", json!({})).await;
    let held = json!({"ownerReferences": [reference(&owner, "Service", true)],
                      "finalizers": ["example.com/hold"]});
    create(client, Kind::EndpointSlice, "foreground-blocking", held).await;
    let free = json!({"ownerReferences": [reference(&owner, "Service", false)]});
    create(client, Kind::Role, "foreground-free", free).await;
    Kind::Service
        .api(client)
        .delete("foreground-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let objects = [
        Named {
            kind: Kind::Service,
            name: "foreground-owner",
        },
        Named {
            kind: Kind::EndpointSlice,
            name: "foreground-blocking",
        },
        Named {
            kind: Kind::Role,
            name: "foreground-free",
        },
    ];
    let (reached, now) = settled(client, &objects, |now| {
        !exists(now, "foreground-free") && now[1]["deleting"] == true
    })
    .await;
    steps.push(("foreground, waiting".to_owned(), reached, now));
    Kind::EndpointSlice
        .api(client)
        .patch(
            "foreground-blocking",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    let (reached, now) = settled(client, &objects, |now| !exists(now, "foreground-owner")).await;
    steps.push(("foreground, done".to_owned(), reached, now));

    // Owners that are not there: another uid goes; a kind not served, and a namespaced
    // owner named by a cluster-scoped object, are left as they are.
    let mut stale = reference(&keeper, "Service", false);
    stale["uid"] = json!("00000000-0000-0000-0000-00000000000a");
    create(
        client,
        Kind::Role,
        "stale-owner",
        json!({"ownerReferences": [stale]}),
    )
    .await;
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Nothing", "name": "x",
                         "uid": "00000000-0000-0000-0000-00000000000b"});
    create(
        client,
        Kind::Role,
        "unknown-owner",
        json!({"ownerReferences": [unknown]}),
    )
    .await;
    let namespaced = json!({"ownerReferences": [reference(&keeper, "Service", false)]});
    create(
        client,
        Kind::ClusterRole,
        "collected-namespaced-owner",
        namespaced,
    )
    .await;
    // An owner of itself, blocking, deleted in the foreground: it waits for itself for good.
    let itself = create(client, Kind::Role, "self-owned", json!({})).await;
    let roles = Kind::Role.api(client);
    let own = json!({"metadata": {"ownerReferences": [{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "name": "self-owned",
        "uid": itself.metadata.uid, "blockOwnerDeletion": true}]}});
    roles
        .patch("self-owned", &PatchParams::default(), &Patch::Merge(own))
        .await
        .unwrap();
    roles
        .delete("self-owned", &DeleteParams::foreground())
        .await
        .unwrap();
    // Cluster-scoped owners and dependents.
    let cluster_owner = create(client, Kind::ClusterRole, "collected-owner", json!({})).await;
    let cluster_owned =
        json!({"ownerReferences": [reference(&cluster_owner, "ClusterRole", false)]});
    create(
        client,
        Kind::ClusterRole,
        "collected-dependent",
        cluster_owned,
    )
    .await;
    Kind::ClusterRole
        .api(client)
        .delete("collected-owner", &DeleteParams::default())
        .await
        .unwrap();
    let objects = [
        Named {
            kind: Kind::Role,
            name: "stale-owner",
        },
        Named {
            kind: Kind::Role,
            name: "unknown-owner",
        },
        Named {
            kind: Kind::ClusterRole,
            name: "collected-namespaced-owner",
        },
        Named {
            kind: Kind::ClusterRole,
            name: "collected-dependent",
        },
        Named {
            kind: Kind::Role,
            name: "self-owned",
        },
    ];
    let (reached, mut now) = settled(client, &objects, |now| {
        !exists(now, "stale-owner") && !exists(now, "collected-dependent")
    })
    .await;
    // What is left is left for good: the same a few seconds on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut later = Vec::new();
    for named in &objects {
        later.push(summary(client, *named).await);
    }
    assert_eq!(now, later, "objects left alone stay as they were");
    now = later;
    steps.push(("owners not there".to_owned(), reached, now));
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn owner_references_are_followed_as_kube_controller_managers_collector_follows_them() {
    let servers = WithControllers::start("garbage-collector-controller").await;
    let targets = [
        (
            "reference",
            client(&servers.reference.kubeconfig(), "apfkit").await,
        ),
        (
            "apfkit on etcd",
            client(servers.on_etcd.kubeconfig(), "apfkit").await,
        ),
        (
            "apfkit embedded",
            client(servers.embedded.kubeconfig(), "apfkit").await,
        ),
    ];
    let runs = futures_util::future::join_all(targets.iter().map(|(_, c)| scenario(c))).await;
    for ((name, _), steps) in targets.iter().zip(&runs) {
        for (step, reached, now) in steps {
            assert!(reached, "{name}: the step {step:?} did not end: {now:#?}");
        }
    }
    for ((name, _), steps) in targets.iter().zip(&runs).skip(1) {
        for ((step, _, expected), (_, _, got)) in runs[0].iter().zip(steps) {
            assert_eq!(
                got, expected,
                "{name}: after the step {step:?}, otherwise than kube-controller-manager's collector"
            );
        }
    }
    servers.shutdown().await;
}
