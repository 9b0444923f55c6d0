//! StorageVersionMigrations run by kube-controller-manager 1.37 (its garbage collector and
//! storage-version migrator, which reads the collector's caches) beside the reference
//! kube-apiserver, and by apfkit's server on etcd and on its embedded store: the same CRD of
//! three versions with objects stored in the two old ones, the same migration, and the same
//! end on each: the migration's conditions as they came one after another, the CRD's stored
//! versions and condition, every object stored in the new version (read from etcd) with
//! the same managers; then the same for FlowSchemas, which kube stores in protobuf.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apfkit_differential::controllers::WithControllers;
use apfkit_storage::etcd::{EtcdOptions, Store};
use apfkit_test_support::requests::{
    api_resource, client, custom_resource_definitions, namespaces, storage_version_migrations,
    until,
};
use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams, WatchParams};
use kube::core::WatchEvent;
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// Objects stored before the migration: half in v1, half in v2.
const OBJECTS: usize = 10_000;
/// Creates in flight at once.
const PARALLEL: usize = 32;
/// How long one migration may take on any server (kube-controller-manager's collector finds
/// a new CRD by discovery every 30 s).
const WITHIN: Duration = Duration::from_secs(300);

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("an object")
}

fn gadgets_in(version: &str) -> ApiResource {
    api_resource("example.com", version, "Gadget", "gadgets")
}

fn migrations(client: &kube::Client) -> Api<DynamicObject> {
    storage_version_migrations(client)
}

fn crds(client: &kube::Client) -> Api<DynamicObject> {
    custom_resource_definitions(client)
}

/// `gadgets.example.com`, stored in `storage`.
fn gadgets(storage: &str) -> DynamicObject {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
    let versions: Vec<Value> = ["v1", "v2", "v3"]
        .iter()
        .map(|name| {
            json!({"name": name, "served": true, "storage": *name == storage,
                   "schema": {"openAPIV3Schema": root}})
        })
        .collect();
    object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets"}, "versions": versions},
    }))
}

/// One server: its client, and the etcd it stores in (none for the embedded store).
struct Target {
    name: &'static str,
    client: kube::Client,
    etcd: Option<String>,
}

/// What a migration ended as, with nothing that must differ between servers (times,
/// resource versions, uids).
#[derive(Debug, PartialEq)]
struct Ended {
    /// The migration's conditions after each change: `type status reason: message`.
    steps: Vec<Vec<String>>,
    /// Whether `status.resourceVersion` was recorded.
    checkpoint_recorded: bool,
    /// The CRD's `status.storedVersions` and its `StorageMigrating` condition.
    crd: Value,
    /// Stored apiVersions, by how many objects have each.
    stored: BTreeMap<String, usize>,
    /// Field managers, by how many objects have each list of them.
    managers: BTreeMap<String, usize>,
    /// How the migration itself is stored (its apiVersion and encoding), where etcd can be
    /// read.
    stored_as: Option<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_end_as_kube_controller_managers_end() {
    let servers =
        WithControllers::start("garbage-collector-controller,storage-version-migrator-controller")
            .await;
    let (reference, etcd) = (&servers.reference, &servers.etcd);
    let targets = [
        Target {
            name: "reference",
            client: client(&reference.kubeconfig(), "apfkit").await,
            etcd: Some(reference.etcd_endpoint().to_owned()),
        },
        Target {
            name: "apfkit on etcd",
            client: client(servers.on_etcd.kubeconfig(), "apfkit").await,
            etcd: Some(etcd.endpoint.clone()),
        },
        Target {
            name: "apfkit embedded",
            client: client(servers.embedded.kubeconfig(), "apfkit").await,
            etcd: None,
        },
    ];
    // The servers fill at once; then each migrates.
    let mut filling = JoinSet::new();
    for target in &targets {
        let client = target.client.clone();
        filling.spawn(async move { fill(&client).await });
    }
    while let Some(filled) = filling.join_next().await {
        filled.expect("the objects are made");
    }
    let mut ends = Vec::new();
    for target in &targets {
        let custom = migrate(target, "gadgets-to-v3", "example.com", "gadgets", |_| true).await;
        let builtin = migrate(
            target,
            "flowschemas",
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            // Those of kube-apiserver's bootstrap configuration (the same on each server).
            |name| ["catch-all", "exempt", "global-default"].contains(&name),
        )
        .await;
        ends.push((target.name, custom, builtin));
    }
    let (_, reference_custom, reference_builtin) = &ends[0];
    assert_eq!(
        reference_custom.stored,
        BTreeMap::from([("example.com/v3 (json)".to_owned(), OBJECTS)]),
        "the reference migrated every object"
    );
    for (name, custom, builtin) in &ends[1..] {
        for (what, reference, got) in [
            ("gadgets", reference_custom, custom),
            ("FlowSchemas", reference_builtin, builtin),
        ] {
            if let Some(differences) = differs(reference, got, name) {
                panic!("{name}: the migration of {what} ended otherwise:\n{differences}");
            }
        }
    }
    servers.shutdown().await;
}

/// Where two ends of a migration differ, in words; the embedded store's stored values are not
/// read.
fn differs(reference: &Ended, got: &Ended, name: &str) -> Option<String> {
    let mut differences = Vec::new();
    if got.steps != reference.steps {
        differences.push(format!(
            "the migration's steps:\n  reference {:#?}\n  {name} {:#?}",
            reference.steps, got.steps
        ));
    }
    if got.checkpoint_recorded != reference.checkpoint_recorded || got.crd != reference.crd {
        differences.push(format!(
            "the CRD:\n  reference {:#}\n  {name} {:#}",
            reference.crd, got.crd
        ));
    }
    if !got.stored.is_empty() && got.stored != reference.stored {
        differences.push(format!(
            "stored versions: reference {:?}, {name} {:?}",
            reference.stored, got.stored
        ));
    }
    if got.stored_as.is_some() && got.stored_as != reference.stored_as {
        differences.push(format!(
            "the migration stored as: reference {:?}, {name} {:?}",
            reference.stored_as, got.stored_as
        ));
    }
    if got.managers != reference.managers {
        differences.push(format!(
            "managers: reference {:?}, {name} {:?}",
            reference.managers, got.managers
        ));
    }
    (!differences.is_empty()).then(|| differences.join("\n"))
}

/// The CRD and its objects: half made while v1 is the storage version, half while v2 is,
/// then v3 made the storage version.
async fn fill(client: &kube::Client) {
    namespaces(client, &["svm"]).await;
    crds(client)
        .create(&PostParams::default(), &gadgets("v1"))
        .await
        .expect("the CRD is created");
    for (version, range) in [("v1", 0..OBJECTS / 2), ("v2", OBJECTS / 2..OBJECTS)] {
        if version != "v1" {
            store_in(client, version).await;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "svm", &gadgets_in(version));
        let served = until(Duration::from_secs(30), || async {
            api.list(&Default::default()).await.is_ok()
        })
        .await;
        assert!(served, "example.com/{version} gadgets are served");
        let mut creating = JoinSet::new();
        for i in range {
            if creating.len() >= PARALLEL {
                creating.join_next().await;
            }
            let api = api.clone();
            let gadget = object(json!({
                "apiVersion": format!("example.com/{version}"), "kind": "Gadget",
                "metadata": {"name": format!("gadget-{i:05}")}, "spec": {"size": i},
            }));
            creating.spawn(async move {
                api.create(&PostParams::default(), &gadget)
                    .await
                    .expect("a gadget is created");
            });
        }
        while creating.join_next().await.is_some() {}
    }
    store_in(client, "v3").await;
}

/// `gadgets.example.com` stored in `version` from now on: its CRD updated, then waited for
/// until its stored versions list the version and a write in it is stored so.
async fn store_in(client: &kube::Client, version: &str) {
    let params = PatchParams::apply("differential").force();
    crds(client)
        .patch(
            "gadgets.example.com",
            &params,
            &Patch::Apply(gadgets(version)),
        )
        .await
        .expect("the CRD is updated");
    let listed = until(Duration::from_secs(30), || async {
        let crd = crds(client).get("gadgets.example.com").await.unwrap();
        crd.data["status"]["storedVersions"]
            .as_array()
            .is_some_and(|stored| stored.iter().any(|v| v == version))
    })
    .await;
    assert!(listed, "storedVersions lists {version}");
    // Both servers take the new storage version from their CRD informers, a moment later.
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// Runs the migration `name` of `resource` of `group` on `target`, watching it until it
/// ends, and answers how it ended; `counted` chooses which stored keys count.
async fn migrate(
    target: &Target,
    name: &str,
    group: &str,
    plural: &str,
    counted: impl Fn(&str) -> bool,
) -> Ended {
    let api = migrations(&target.client);
    let migration = object(json!({
        "apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
        "metadata": {"name": name},
        "spec": {"resource": {"group": group, "resource": plural}},
    }));
    let created = api
        .create(&PostParams::default(), &migration)
        .await
        .expect("the migration is created");
    let mut steps: Vec<Vec<String>> = Vec::new();
    let mut last = created;
    let watch = async {
        let params = WatchParams::default().fields(&format!("metadata.name={name}"));
        let mut from = "0".to_owned();
        loop {
            let stream = api.watch(&params, &from).await.expect("a watch");
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let (WatchEvent::Added(object) | WatchEvent::Modified(object)) =
                    event.expect("an event")
                else {
                    continue;
                };
                from = object.metadata.resource_version.clone().unwrap_or_default();
                let conditions = conditions_of(&object);
                if steps.last() != Some(&conditions) && !conditions.is_empty() {
                    steps.push(conditions);
                }
                last = object;
                if steps
                    .last()
                    .is_some_and(|c| c.iter().any(|c| c.starts_with("Running False")))
                {
                    return;
                }
            }
        }
    };
    let started = std::time::Instant::now();
    let ended = tokio::time::timeout(WITHIN, watch).await.is_ok();
    eprintln!(
        "{}: the migration {name} ended in {:.1} s",
        target.name,
        started.elapsed().as_secs_f64()
    );
    assert!(
        ended,
        "{}: the migration {name} did not end in {WITHIN:?}: {steps:#?}",
        target.name
    );
    let crd = match crds(&target.client)
        .get_opt(&format!("{plural}.{group}"))
        .await
    {
        Ok(Some(crd)) => {
            let generation = json!(crd.metadata.generation);
            let migrating: Vec<Value> = crd.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["type"] == "StorageMigrating")
                .map(|c| {
                    json!({"status": c["status"], "reason": c["reason"], "message": c["message"],
                           "generationObserved": c["observedGeneration"] == generation})
                })
                .collect();
            json!({"storedVersions": crd.data["status"]["storedVersions"], "migrating": migrating})
        }
        _ => Value::Null,
    };
    let (stored, managers) = stored_objects(target, group, plural, &counted).await;
    Ended {
        steps,
        checkpoint_recorded: last.data["status"]["resourceVersion"].is_string(),
        crd,
        stored,
        managers,
        stored_as: stored_as(
            target,
            &format!("/registry/storageversionmigrations/{name}"),
        )
        .await,
    }
}

/// The conditions of a migration: `type status reason: message` each, in their order.
fn conditions_of(migration: &DynamicObject) -> Vec<String> {
    migration.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |field: &str| c[field].as_str().unwrap_or_default().to_owned();
            format!(
                "{} {} {}: {}",
                text("type"),
                text("status"),
                text("reason"),
                text("message")
            )
        })
        .collect()
}

/// The apiVersion and encoding of the value stored under `key` in the target's etcd; `None`
/// for the embedded store.
async fn stored_as(target: &Target, key: &str) -> Option<String> {
    let endpoint = target.etcd.as_ref()?;
    let store = Store::connect(&EtcdOptions {
        endpoints: vec![endpoint.clone()],
        ..EtcdOptions::default()
    })
    .await
    .expect("etcd answers");
    let value = store
        .get(key.as_bytes())
        .await
        .expect("etcd answers")
        .unwrap_or_else(|| panic!("{}: nothing stored under {key}", target.name));
    Some(described(&value.value))
}

/// A stored value's apiVersion and encoding: `v1 (protobuf)`.
fn described(value: &[u8]) -> String {
    let seen = apfkit_storage::envelope::inspect(value).expect("a stored object");
    format!(
        "{} ({})",
        seen.api_version.unwrap_or_default(),
        seen.stored_as.name()
    )
}

/// How the objects `counted` keeps of `plural` of `group` are stored (when the target's etcd
/// can be read: by the stored value's apiVersion and encoding) and who manages them.
async fn stored_objects(
    target: &Target,
    group: &str,
    plural: &str,
    counted: &impl Fn(&str) -> bool,
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let (version, kind) = if group == "example.com" {
        ("v3", "Gadget")
    } else {
        ("v1", "FlowSchema")
    };
    let api: Api<DynamicObject> = Api::all_with(
        target.client.clone(),
        &api_resource(group, version, kind, plural),
    );
    let objects = api.list(&Default::default()).await.expect("a list").items;
    let store = match &target.etcd {
        Some(endpoint) => Some(Arc::new(
            Store::connect(&EtcdOptions {
                endpoints: vec![endpoint.clone()],
                ..EtcdOptions::default()
            })
            .await
            .expect("etcd answers"),
        )),
        None => None,
    };
    let (mut stored, mut managers) = (BTreeMap::new(), BTreeMap::new());
    for object in objects {
        let name = object.metadata.name.clone().unwrap_or_default();
        if !counted(&name) {
            continue;
        }
        let mut entries: Vec<String> = object
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|entry| {
                format!(
                    "{} {} {}",
                    entry.manager.as_deref().unwrap_or_default(),
                    entry.operation.as_deref().unwrap_or_default(),
                    entry.subresource.as_deref().unwrap_or_default()
                )
            })
            .collect();
        entries.sort();
        *managers.entry(entries.join(", ")).or_default() += 1;
        let Some(store) = &store else { continue };
        let key = match &object.metadata.namespace {
            Some(namespace) => format!("/registry/{group}/{plural}/{namespace}/{name}"),
            None => format!("/registry/{plural}/{name}"),
        };
        let value = store
            .get(key.as_bytes())
            .await
            .expect("etcd answers")
            .unwrap_or_else(|| panic!("{}: nothing stored under {key}", target.name));
        *stored.entry(described(&value.value)).or_default() += 1;
    }
    (stored, managers)
}
