//! A StorageVersionMigration of 100,000 custom resources, run by apfkit's server on etcd and
//! by kube-controller-manager 1.37 beside the reference kube-apiserver on its own etcd, with
//! etcd's own puts of the same values measured in the same run.
//!
//! `cargo bench -p apfkit-differential --bench migration` (needs the reference binaries:
//! `reference/build`, or `APFKIT_REFERENCE_BIN`). Each server gets the same CRD
//! (`gadgets.example.com`, v1 and v2), and its etcd the same 100,000 objects stored in v1,
//! written straight into etcd; v2 is then made the storage version and a migration made:
//! - **put**: the 100,000 values put into apfkit's etcd, 256 in flight (etcd's best here);
//! - **transactions**: the same values written under other keys by transactions of one
//!   compare and one put, as kube-apiserver writes every object, 256 in flight;
//! - **apfkit**: from the migration's create to its `Succeeded`, with the growth of the
//!   process's peak resident memory (the server runs in this process; the peak is reset
//!   before the migration);
//! - **kube-controller-manager**: from the create to `Succeeded` (its migrator reads the
//!   objects from its garbage collector's cache, which must first watch the new resource:
//!   its discovery finds one every 30 s).
//!
//! Afterwards every object in apfkit's etcd is checked to be stored in v2.
//! `APFKIT_MIGRATION_OBJECTS` sets another count; `APFKIT_MIGRATION_APFKIT_ONLY=1` leaves the
//! reference out (to profile apfkit's side).

use std::time::{Duration, Instant};

use apfkit_server::{Config, Storage};
use apfkit_storage::etcd::{EtcdOptions, Store};
use apfkit_test_support::etcd::Etcd;
use apfkit_test_support::reference::{KubeApiserver, binary};
use apfkit_test_support::requests::{
    api_resource, client, custom_resource_definitions, namespaces, storage_version_migrations,
    until,
};
use futures_util::stream::{self, StreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, WatchParams};
use kube::core::WatchEvent;
use serde_json::{Value, json};

/// etcd's best put concurrency on this machine (see apfkit-storage's migrate bench).
const PUTS_IN_FLIGHT: usize = 256;

fn objects() -> usize {
    std::env::var("APFKIT_MIGRATION_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

/// `gadgets.example.com`, stored in `storage`.
fn gadgets(storage: &str) -> DynamicObject {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"}, "color": {"type": "string"}}}}});
    let versions: Vec<Value> = ["v1", "v2"]
        .iter()
        .map(|name| {
            json!({"name": name, "served": true, "storage": *name == storage,
                   "schema": {"openAPIV3Schema": root}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets"}, "versions": versions},
    }))
    .expect("a CRD")
}

/// The CRD made, served, then stored in v2.
async fn prepare(client: &kube::Client) {
    namespaces(client, &["bench"]).await;
    let crds = custom_resource_definitions(client);
    crds.create(&PostParams::default(), &gadgets("v1"))
        .await
        .expect("the CRD is created");
    let v1: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "bench",
        &api_resource("example.com", "v1", "Gadget", "gadgets"),
    );
    let served = until(Duration::from_secs(30), || async {
        v1.list(&Default::default()).await.is_ok()
    })
    .await;
    assert!(served, "gadgets are served");
    crds.patch(
        "gadgets.example.com",
        &PatchParams::apply("bench").force(),
        &Patch::Apply(gadgets("v2")),
    )
    .await
    .expect("the CRD is updated");
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// The objects as kube-apiserver stores a custom resource created in v1: key and JSON.
fn stored_objects(count: usize) -> Vec<(String, Vec<u8>)> {
    (0..count)
        .map(|i| {
            let name = format!("gadget-{i:06}");
            let object = json!({
                "apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": name, "namespace": "bench", "generation": 1,
                    "uid": format!("00000000-0000-0000-0000-{i:012}"),
                    "creationTimestamp": "2026-11-30T00:00:00Z"},
                "spec": {"size": i, "color": "a colour of some length, as real specs have"},
            });
            let key = format!("/registry/example.com/gadgets/bench/{name}");
            (key, serde_json::to_vec(&object).expect("JSON"))
        })
        .collect()
}

async fn store(endpoint: &str) -> Store {
    Store::connect(&EtcdOptions {
        endpoints: vec![endpoint.to_owned()],
        ..EtcdOptions::default()
    })
    .await
    .expect("etcd answers")
}

/// How a baseline writes each value.
#[derive(Clone, Copy)]
enum Write {
    /// A plain put.
    Put,
    /// Under another key, in a transaction of one compare (that the key does not exist) and
    /// one put: the shape of kube-apiserver's every write.
    Transaction,
}

/// Writes every value as `how` says, `PUTS_IN_FLIGHT` at a time: how long it took.
async fn write_all(store: &Store, values: &[(String, Vec<u8>)], how: Write) -> Duration {
    let started = Instant::now();
    stream::iter(values)
        .map(|(key, value)| {
            let store = store.handle();
            async move {
                match how {
                    Write::Put => store
                        .put(key.as_bytes(), value.clone())
                        .await
                        .expect("a put"),
                    Write::Transaction => {
                        let key = format!("/bench-transactions{key}");
                        let written = store.swap(key.as_bytes(), value, 0).await;
                        assert!(written.expect("a transaction"), "{key} was new");
                    }
                }
            }
        })
        .buffer_unordered(PUTS_IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    started.elapsed()
}

/// Runs a migration of the gadgets: how long from its create to `Succeeded`.
async fn migrate(client: &kube::Client, within: Duration) -> Duration {
    let api = storage_version_migrations(client);
    let migration: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
        "metadata": {"name": "gadgets-to-v2"},
        "spec": {"resource": {"group": "example.com", "resource": "gadgets"}},
    }))
    .expect("a migration");
    let started = Instant::now();
    let created = api
        .create(&PostParams::default(), &migration)
        .await
        .expect("the migration is created");
    let follow = async {
        let params = WatchParams::default().fields("metadata.name=gadgets-to-v2");
        let mut from = created
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        loop {
            let mut events = api.watch(&params, &from).await.expect("a watch").boxed();
            while let Some(event) = events.next().await {
                let (WatchEvent::Added(object) | WatchEvent::Modified(object)) =
                    event.expect("an event")
                else {
                    continue;
                };
                from = object.metadata.resource_version.clone().unwrap_or_default();
                let status = &object.data["status"];
                let holds = |kind: &str| {
                    status["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == kind && c["status"] == "True")
                };
                assert!(!holds("Failed"), "the migration failed: {status:#}");
                if holds("Succeeded") {
                    return Instant::now();
                }
            }
        }
    };
    let succeeded = tokio::time::timeout(within, follow)
        .await
        .expect("the migration ends in time");
    succeeded - started
}

/// This process's resident memory and its peak, in KiB (`/proc/self/status`).
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Stored apiVersions of the gadgets in `store`, counted.
async fn stored_in(store: &Store, count: usize) -> std::collections::BTreeMap<String, usize> {
    let mut versions = std::collections::BTreeMap::new();
    for i in 0..count {
        let key = format!("/registry/example.com/gadgets/bench/gadget-{i:06}");
        let value = store
            .get(key.as_bytes())
            .await
            .expect("etcd answers")
            .expect("stored");
        let object: Value = serde_json::from_slice(&value.value).expect("JSON");
        *versions
            .entry(object["apiVersion"].as_str().unwrap_or_default().to_owned())
            .or_insert(0) += 1;
    }
    versions
}

fn main() {
    let count = objects();
    let with_reference = std::env::var("APFKIT_MIGRATION_APFKIT_ONLY").as_deref() != Ok("1");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let values = stored_objects(count);
        let bytes: usize = values.iter().map(|(_, v)| v.len()).sum();
        println!(
            "{count} gadgets of {:.1} MB stored in v1, migrated to v2",
            bytes as f64 / 1e6
        );
        let reference = if with_reference {
            let reference = tokio::task::spawn_blocking(|| KubeApiserver::start(&[]))
                .await
                .expect("the reference starts");
            let manager = reference.start_controller_manager_with(&[
                "--controllers=garbage-collector-controller,storage-version-migrator-controller",
            ]);
            let client = client(&reference.kubeconfig(), "apfkit").await;
            prepare(&client).await;
            write_all(&store(reference.etcd_endpoint()).await, &values, Write::Put).await;
            Some((reference, manager, client))
        } else {
            None
        };
        let etcd = Etcd::start_binary(&binary("etcd").display().to_string(), &[]);
        let data = tempfile::tempdir().expect("a temporary folder");
        let mut config = Config::new(data.path().join("data"));
        config.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
        let apfkit = apfkit_server::start(config)
            .await
            .expect("apfkit's server starts");
        let apfkit_client = client(apfkit.kubeconfig(), "apfkit").await;
        prepare(&apfkit_client).await;
        let apfkit_store = store(&etcd.endpoint).await;
        let put = write_all(&apfkit_store, &values, Write::Put).await;
        let transactions = write_all(&apfkit_store, &values, Write::Transaction).await;
        drop(values);

        let (rss_before, _) = memory();
        // Resets the peak to the resident memory now (proc(5), `clear_refs`).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let apfkit_time = migrate(&apfkit_client, Duration::from_secs(1800)).await;
        let (_, peak) = memory();
        let stored = stored_in(&apfkit_store, count).await;
        assert_eq!(
            stored,
            std::collections::BTreeMap::from([("example.com/v2".to_owned(), count)]),
            "every object is stored in v2"
        );
        apfkit.shutdown().await;

        let rate = |d: Duration| count as f64 / d.as_secs_f64();
        let row = |pass: &str, d: Duration| {
            println!("| {pass} | {:.1} s | {:.0} |", d.as_secs_f64(), rate(d));
        };
        println!("| pass | time | objects/s |");
        println!("|---|---|---|");
        row(&format!("etcd puts ({PUTS_IN_FLIGHT} in flight)"), put);
        row(
            &format!("etcd transactions of a compare and a put ({PUTS_IN_FLIGHT} in flight)"),
            transactions,
        );
        row("apfkit, create → Succeeded", apfkit_time);
        println!(
            "apfkit ÷ etcd's puts: {:.2}; ÷ etcd's transactions: {:.2}",
            put.as_secs_f64() / apfkit_time.as_secs_f64(),
            transactions.as_secs_f64() / apfkit_time.as_secs_f64()
        );
        if let Some((_reference, manager, client)) = reference {
            let total = migrate(&client, Duration::from_secs(3600)).await;
            drop(manager);
            row("kube-controller-manager, create → Succeeded", total);
            println!(
                "apfkit ÷ kube-controller-manager: {:.1}× faster",
                total.as_secs_f64() / apfkit_time.as_secs_f64()
            );
        }
        println!(
            "apfkit's process: {:.1} MiB resident before, peak {:.1} MiB during the migration \
             (+{:.1} MiB)",
            rss_before as f64 / 1024.0,
            peak as f64 / 1024.0,
            peak.saturating_sub(rss_before) as f64 / 1024.0
        );
    });
}
