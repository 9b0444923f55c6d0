//! StorageVersionMigrations run by the server as kube-controller-manager runs them, on etcd
//! (whose stored values the tests read), through kube-rs.

use std::time::Duration;

use apfkit_server::{Config, Storage, start};
use apfkit_storage::etcd::{EtcdOptions, Store};
use apfkit_test_support::crd::{definition, version};
use apfkit_test_support::etcd::Etcd;
use apfkit_test_support::requests::{
    api_resource, client, custom_resource_definitions, namespaces, storage_version_migrations,
    until,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn migrations(client: &kube::Client) -> Api<DynamicObject> {
    storage_version_migrations(client)
}

fn crds(client: &kube::Client) -> Api<DynamicObject> {
    custom_resource_definitions(client)
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// Creates the migration `name` of `resource` of `group`.
async fn migrate(client: &kube::Client, name: &str, group: &str, resource: &str) {
    let migration = object(json!({
        "apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
        "metadata": {"name": name},
        "spec": {"resource": {"group": group, "resource": resource}},
    }));
    migrations(client)
        .create(&PostParams::default(), &migration)
        .await
        .unwrap();
}

/// The condition `kind` of a migration: its status, reason and message.
fn condition(migration: &DynamicObject, kind: &str) -> Option<(String, String, String)> {
    let found = migration.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?
        .clone();
    let text = |field: &str| found[field].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

/// The migration `name` once it ended and is no longer running (the runner's last step), as
/// it is then.
async fn ended(client: &kube::Client, name: &str) -> DynamicObject {
    let api = migrations(client);
    let done = until(Duration::from_secs(60), || async {
        let migration = api.get(name).await.unwrap();
        condition(&migration, "Running").is_some_and(|c| c.0 == "False")
    })
    .await;
    let migration = api.get(name).await.unwrap();
    assert!(done, "{:#}", migration.data["status"]);
    migration
}

/// A CRD of three versions, `v1` the storage version, converted by `None`.
fn gadgets() -> Value {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
    definition(
        "gadgets.example.com",
        "Gadget",
        json!([
            version("v1", true, root.clone()),
            version("v2", false, root.clone()),
            version("v3", false, root),
        ]),
    )
}

/// `gadgets.example.com` stored in `storage` from now on.
async fn store_gadgets_in(client: &kube::Client, storage: &str) {
    let mut crd = gadgets();
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        version["storage"] = json!(version["name"] == storage);
    }
    let params = PatchParams::apply("test").force();
    crds(client)
        .patch("gadgets.example.com", &params, &Patch::Apply(object(crd)))
        .await
        .unwrap();
}

/// Namespace `team`, the gadgets' CRD, and `count` gadgets made there in v1 (`spec.size` their
/// number): the v1 API and their names.
async fn make_gadgets(client: &kube::Client, count: usize) -> (Api<DynamicObject>, Vec<String>) {
    namespaces(client, &["team"]).await;
    crds(client)
        .create(&PostParams::default(), &object(gadgets()))
        .await
        .unwrap();
    let gadgets_v1: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "team",
        &api_resource("example.com", "v1", "Gadget", "gadgets"),
    );
    assert!(
        until(Duration::from_secs(10), || async {
            gadgets_v1.list(&Default::default()).await.is_ok()
        })
        .await
    );
    let names: Vec<String> = (0..count).map(|i| format!("gadget-{i:04}")).collect();
    for (i, name) in names.iter().enumerate() {
        let gadget = object(json!({"apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"size": i}}));
        gadgets_v1
            .create(&PostParams::default(), &gadget)
            .await
            .unwrap();
    }
    (gadgets_v1, names)
}

/// The apiVersion each gadget of `team` is stored in, read from etcd.
async fn stored_versions(etcd: &Etcd, names: &[String]) -> Vec<String> {
    let store = Store::connect(&EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    })
    .await
    .unwrap();
    let mut versions = Vec::new();
    for name in names {
        let key = format!("/registry/example.com/gadgets/team/{name}");
        let stored = store.get(key.as_bytes()).await.unwrap().unwrap();
        let value: Value = serde_json::from_slice(&stored.value).unwrap();
        versions.push(value["apiVersion"].as_str().unwrap().to_owned());
    }
    versions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_rewrites_a_crds_objects_in_its_storage_version_and_trims_its_stored_versions()
{
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("data"));
    config.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
    let server = start(config).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    // More than one page of the migrator's (500).
    let (gadgets_v1, names) = make_gadgets(&client, 620).await;
    store_gadgets_in(&client, "v3").await;
    // The CRD now lists both versions as stored.
    assert!(
        until(Duration::from_secs(10), || async {
            let crd = crds(&client).get("gadgets.example.com").await.unwrap();
            crd.data["status"]["storedVersions"] == json!(["v1", "v3"])
        })
        .await
    );
    migrate(&client, "gadgets-to-v3", "example.com", "gadgets").await;
    let migration = ended(&client, "gadgets-to-v3").await;
    assert_eq!(
        condition(&migration, "Succeeded").unwrap(),
        (
            "True".to_owned(),
            "StorageVersionMigrationSucceeded".to_owned(),
            "Migration completed".to_owned()
        )
    );
    assert_eq!(
        condition(&migration, "Running").unwrap(),
        (
            "False".to_owned(),
            "MigrationCompleted".to_owned(),
            "Migration completed".to_owned()
        )
    );
    assert!(condition(&migration, "Failed").is_none());
    assert!(
        migration.data["status"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| rv.parse::<u64>().is_ok())
    );
    // Every object is stored in v3, its content as it was.
    let stored = stored_versions(&etcd, &names).await;
    assert!(stored.iter().all(|v| v == "example.com/v3"), "{stored:?}");
    let gadget = gadgets_v1.get("gadget-0007").await.unwrap();
    assert_eq!(gadget.data["spec"]["size"], 7);
    // The CRD: its stored versions trimmed, its condition says so.
    let crd = crds(&client).get("gadgets.example.com").await.unwrap();
    assert_eq!(crd.data["status"]["storedVersions"], json!(["v3"]));
    let migrating = crd.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "StorageMigrating")
        .unwrap()
        .clone();
    assert_eq!(migrating["status"], "False");
    assert_eq!(migrating["reason"], "MigrationSucceeded");
    assert_eq!(
        migrating["message"],
        "The migration has succeeded and the stored versions have been updated"
    );
    assert_eq!(
        migrating["observedGeneration"],
        crd.metadata.generation.unwrap()
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_of_one_resource_run_one_at_a_time_the_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path().join("data"))).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    migrate(
        &client,
        "b-first",
        "flowcontrol.apiserver.k8s.io",
        "flowschemas",
    )
    .await;
    // Made a second later (creation times have seconds; within one, names order them).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    migrate(
        &client,
        "a-second",
        "flowcontrol.apiserver.k8s.io",
        "flowschemas",
    )
    .await;
    // Not served: it runs, and waits a minute for the resource before it fails.
    migrate(&client, "missing", "example.com", "nothings").await;
    let first = ended(&client, "b-first").await;
    let second = ended(&client, "a-second").await;
    let succeeded_at = |migration: &DynamicObject| {
        migration.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Succeeded")
            .unwrap()["lastTransitionTime"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(succeeded_at(&first) <= succeeded_at(&second));
    let first_rv: u64 = first.data["status"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let second_rv: u64 = second.data["status"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        first_rv < second_rv,
        "the second started after the first ended ({first_rv}, {second_rv})"
    );
    // kube-controller-manager's client wrote the status.
    let managers = first.metadata.managed_fields.unwrap_or_default();
    assert!(
        managers
            .iter()
            .any(|m| m.manager.as_deref() == Some("kube-controller-manager")
                && m.subresource.as_deref() == Some("status"))
    );
    let missing = migrations(&client).get("missing").await.unwrap();
    assert_eq!(
        condition(&missing, "Running").map(|c| c.0),
        Some("True".to_owned()),
        "{:#}",
        missing.data["status"]
    );
    assert!(condition(&missing, "Failed").is_none());
    assert!(missing.data["status"]["resourceVersion"].is_null());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_running_when_the_server_stopped_goes_on_when_it_starts_again() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("data"));
    config.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
    // First without the migrator: the migration is left as a stopped controller left it.
    config.controllers.storage_version_migrator = false;
    let server = start(config.clone()).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    let (_, names) = make_gadgets(&client, 20).await;
    store_gadgets_in(&client, "v2").await;
    migrate(&client, "resumed", "example.com", "gadgets").await;
    let checkpoint = server_revision(&client).await;
    let status = json!({"status": {"resourceVersion": checkpoint, "conditions": [{
        "type": "Running", "status": "True", "reason": "MigrationRunning",
        "message": "The migration is running", "lastTransitionTime": "2026-11-30T00:00:00Z"}]}});
    migrations(&client)
        .patch_status("resumed", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    server.shutdown().await;

    config.controllers.storage_version_migrator = true;
    let server = start(config).await.unwrap();
    let client = apfkit_test_support::requests::client(server.kubeconfig(), "apfkit").await;
    let migration = ended(&client, "resumed").await;
    assert_eq!(
        condition(&migration, "Succeeded").map(|c| c.0),
        Some("True".to_owned())
    );
    assert_eq!(migration.data["status"]["resourceVersion"], checkpoint);
    let stored = stored_versions(&etcd, &names).await;
    assert!(stored.iter().all(|v| v == "example.com/v2"), "{stored:?}");
    server.shutdown().await;
}

/// The server's newest revision: a list's `resourceVersion`.
async fn server_revision(client: &kube::Client) -> String {
    let mut core = api_resource("", "v1", "Namespace", "namespaces");
    core.api_version = "v1".to_owned();
    let namespaces: Api<DynamicObject> = Api::all_with(client.clone(), &core);
    namespaces
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}
