//! Owner references followed as kube-controller-manager's garbage collector follows them, by
//! the collector the server runs: background, orphan and foreground deletion across built-in
//! kinds and custom resources, through kube-rs.

use std::time::Duration;

use apfkit_server::{Config, start};
use apfkit_test_support::crd::{definition, version};
use apfkit_test_support::requests::{
    api_resource, client, custom_resource_definitions, namespaces, until,
};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WITHIN: Duration = Duration::from_secs(20);

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        "team",
        &api_resource(group, version, kind, plural),
    )
}

fn services(client: &kube::Client) -> Api<DynamicObject> {
    api(client, "", "v1", "Service", "services")
}

fn slices(client: &kube::Client) -> Api<DynamicObject> {
    api(
        client,
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
    )
}

fn roles(client: &kube::Client) -> Api<DynamicObject> {
    api(client, "rbac.authorization.k8s.io", "v1", "Role", "roles")
}

/// A reference to `owner` (a Service), blocking its foreground deletion or not.
fn owned_by(owner: &DynamicObject, block: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "name": owner.metadata.name,
           "uid": owner.metadata.uid, "blockOwnerDeletion": block})
}

async fn service(client: &kube::Client, name: &str) -> DynamicObject {
    services(client)
        .create(
            &PostParams::default(),
            &object(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"clusterIP": "None"}}),
            ),
        )
        .await
        .unwrap()
}

async fn slice(client: &kube::Client, name: &str, metadata: Value) -> DynamicObject {
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    slices(client)
        .create(
            &PostParams::default(),
            &object(
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": metadata, "addressType": "IPv4", "endpoints": []}),
            ),
        )
        .await
        .unwrap()
}

async fn role(client: &kube::Client, name: &str, metadata: Value) -> DynamicObject {
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    roles(client)
        .create(
            &PostParams::default(),
            &object(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": metadata, "rules": []}),
            ),
        )
        .await
        .unwrap()
}

/// Whether `name` is gone from `api` within [`WITHIN`].
async fn gone(api: &Api<DynamicObject>, name: &str) -> bool {
    until(WITHIN, || async {
        api.get_opt(name).await.unwrap().is_none()
    })
    .await
}

fn references(object: &DynamicObject) -> Vec<String> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.name.clone())
        .collect()
}

async fn server() -> (apfkit_server::Server, tempfile::TempDir, kube::Client) {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path().join("data"))).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    namespaces(&client, &["team"]).await;
    (server, dir, client)
}

/// Background (a plain delete): each dependent whose owners are all gone is deleted, of any
/// kind, custom resources included; one with another owner there only loses its reference;
/// one created naming an owner that does not exist (or has another uid) goes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependents_whose_owners_are_gone_are_deleted_and_the_others_lose_the_reference() {
    let (_server, _dir, client) = server().await;
    let crds = custom_resource_definitions(&client);
    let root = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    crds.create(
        &PostParams::default(),
        &object(definition(
            "gadgets.example.com",
            "Gadget",
            json!([version("v1", true, root)]),
        )),
    )
    .await
    .unwrap();
    let gadgets = api(&client, "example.com", "v1", "Gadget", "gadgets");
    assert!(
        until(WITHIN, || async {
            gadgets.list(&Default::default()).await.is_ok()
        })
        .await
    );

    let owner = service(&client, "owner").await;
    let keeper = service(&client, "keeper").await;
    slice(
        &client,
        "only-owner",
        json!({"ownerReferences": [owned_by(&owner, false)]}),
    )
    .await;
    role(
        &client,
        "two-owners",
        json!({"ownerReferences": [owned_by(&owner, false), owned_by(&keeper, false)]}),
    )
    .await;
    gadgets
        .create(
            &PostParams::default(),
            &object(json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": "owned-gadget", "ownerReferences": [owned_by(&owner, true)]}})),
        )
        .await
        .unwrap();
    services(&client)
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    assert!(gone(&slices(&client), "only-owner").await);
    assert!(gone(&gadgets, "owned-gadget").await);
    let kept = roles(&client);
    assert!(
        until(WITHIN, || async {
            references(&kept.get("two-owners").await.unwrap()) == ["keeper"]
        })
        .await
    );
    // A reference to a Service of that name but another uid dangles as one to nothing.
    let mut stale = owned_by(&keeper, false);
    stale["uid"] = json!("00000000-0000-0000-0000-000000000000");
    role(&client, "stale-owner", json!({"ownerReferences": [stale]})).await;
    assert!(gone(&roles(&client), "stale-owner").await);
    // An owner of a kind not served is left alone, as kube leaves it.
    let unknown = json!({"apiVersion": "example.com/v9", "kind": "Nothing", "name": "x",
        "uid": "00000000-0000-0000-0000-000000000001"});
    role(
        &client,
        "unknown-owner",
        json!({"ownerReferences": [unknown]}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        roles(&client)
            .get_opt("unknown-owner")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        references(&kept.get("two-owners").await.unwrap()),
        ["keeper"]
    );
}

/// Orphan: the owner's `orphan` finalizer holds it while its dependents' references to it are
/// removed; then it goes and they stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_deleted_with_orphan_leaves_its_dependents_without_the_reference() {
    let (_server, _dir, client) = server().await;
    let owner = service(&client, "owner").await;
    let keeper = service(&client, "keeper").await;
    slice(
        &client,
        "orphaned",
        json!({"ownerReferences": [owned_by(&owner, true)]}),
    )
    .await;
    role(
        &client,
        "still-owned",
        json!({"ownerReferences": [owned_by(&keeper, false), owned_by(&owner, false)]}),
    )
    .await;
    services(&client)
        .delete("owner", &DeleteParams::orphan())
        .await
        .unwrap();
    assert!(gone(&services(&client), "owner").await);
    let slice = slices(&client).get("orphaned").await.unwrap();
    assert_eq!(slice.metadata.owner_references, None);
    assert_eq!(slice.metadata.deletion_timestamp, None);
    let role = roles(&client).get("still-owned").await.unwrap();
    assert_eq!(references(&role), ["keeper"]);
    // Nothing more happens to them.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(slices(&client).get_opt("orphaned").await.unwrap().is_some());
}

/// Foreground: the owner is kept (its `foregroundDeletion` finalizer) while its dependents
/// are deleted, until the last one that blocks it is gone; one that does not block does not
/// hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_deleted_in_the_foreground_waits_for_its_blocking_dependents() {
    let (_server, _dir, client) = server().await;
    let owner = service(&client, "owner").await;
    slice(
        &client,
        "blocking",
        json!({"ownerReferences": [owned_by(&owner, true)], "finalizers": ["example.com/hold"]}),
    )
    .await;
    role(
        &client,
        "not-blocking",
        json!({"ownerReferences": [owned_by(&owner, false)]}),
    )
    .await;
    services(&client)
        .delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    assert!(gone(&roles(&client), "not-blocking").await);
    let held = slices(&client);
    assert!(
        until(WITHIN, || async {
            held.get("blocking")
                .await
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some()
        })
        .await
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let waiting = services(&client).get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_owned()])
    );
    // The last blocking dependent goes: so does the owner.
    held.patch(
        "blocking",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(gone(&held, "blocking").await);
    assert!(gone(&services(&client), "owner").await);
}

/// Many dependents of one owner all go; two objects that own each other go when one of them
/// is deleted; an owner that blocks on itself in the foreground stays, as kube keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_dependents_cycles_and_an_owner_of_itself() {
    let (_server, _dir, client) = server().await;
    let owner = service(&client, "many-owner").await;
    for i in 0..300 {
        role(
            &client,
            &format!("dependent-{i:03}"),
            json!({"ownerReferences": [owned_by(&owner, i % 2 == 0)]}),
        )
        .await;
    }
    services(&client)
        .delete("many-owner", &DeleteParams::default())
        .await
        .unwrap();
    let all = roles(&client);
    assert!(
        until(WITHIN, || async {
            all.list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        })
        .await
    );
    // A cycle: each owns the other.
    let first = role(&client, "cycle-a", json!({})).await;
    let role_of = |object: &DynamicObject| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "name": object.metadata.name, "uid": object.metadata.uid})
    };
    let second = role(
        &client,
        "cycle-b",
        json!({"ownerReferences": [role_of(&first)]}),
    )
    .await;
    all.patch(
        "cycle-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [role_of(&second)]}})),
    )
    .await
    .unwrap();
    all.delete("cycle-a", &DeleteParams::default())
        .await
        .unwrap();
    assert!(gone(&all, "cycle-b").await);
    // Its own blocking owner, deleted in the foreground: kept, waiting for itself.
    let itself = role(&client, "self-owned", json!({})).await;
    let mut own = role_of(&itself);
    own["blockOwnerDeletion"] = json!(true);
    all.patch(
        "self-owned",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [own]}})),
    )
    .await
    .unwrap();
    all.delete("self-owned", &DeleteParams::foreground())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = all.get("self-owned").await.unwrap();
    assert!(kept.metadata.deletion_timestamp.is_some());
    assert_eq!(
        kept.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_owned()])
    );
}

/// Owners deleted while no collector ran: when the server starts again with one, it lists
/// every resource (in pages) and collects what was left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_owners_left_while_no_collector_ran_is_collected_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("data"));
    config.controllers.garbage_collector = false;
    let server = start(config.clone()).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    namespaces(&client, &["team"]).await;
    let owner = service(&client, "gone-owner").await;
    for i in 0..600 {
        role(
            &client,
            &format!("left-{i:03}"),
            json!({"ownerReferences": [owned_by(&owner, false)]}),
        )
        .await;
    }
    services(&client)
        .delete("gone-owner", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        roles(&client)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        600
    );
    server.shutdown().await;

    config.controllers.garbage_collector = true;
    let server = start(config).await.unwrap();
    let client = apfkit_test_support::requests::client(server.kubeconfig(), "apfkit").await;
    let left = roles(&client);
    assert!(
        until(WITHIN, || async {
            left.list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        })
        .await
    );
    server.shutdown().await;
}
