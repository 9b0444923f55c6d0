//! Stored widgets migrated in etcd with the example's own scheme (`apfkit-storage`'s
//! `migrate_kinds` with `Custom(&api::SCHEME)`): custom resources stored as v1alpha1 JSON under
//! `/registry/example.com/widgets/` rewritten in v1, the storage version, with the same grouped
//! compare-and-swap as kube-apiserver's own objects: nothing lost, a concurrent writer's
//! changes kept, what cannot be read left untouched and reported, a second run a no-op.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use apfkit_example_widgets::api;
use apfkit_storage::etcd::{EtcdOptions, Store, StoredResource};
use apfkit_storage::migrate::{Custom, MigrateOptions, migrate_kinds};
use apfkit_test_support::etcd::Etcd;
use serde_json::{Value, json};

const WIDGETS: StoredResource = StoredResource::custom("example.com", "widgets");

fn key(name: &str) -> String {
    format!("/registry/example.com/widgets/default/{name}")
}

/// A widget as an older release stored it: v1alpha1, with `size` and a one-string image.
fn stored_v1alpha1(name: &str, size: i64) -> Vec<u8> {
    let object = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"size": size, "image": "registry/app:1.2"}
    });
    let mut bytes = serde_json::to_vec(&object).unwrap();
    bytes.push(b'\n');
    bytes
}

async fn store(etcd: &Etcd) -> Store {
    Store::connect(&EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    })
    .await
    .unwrap()
}

async fn stored(store: &Store, name: &str) -> Value {
    let raw = store.get(key(name).as_bytes()).await.unwrap().unwrap();
    assert!(
        raw.value.ends_with(b"\n"),
        "stored as apiextensions-apiserver stores JSON"
    );
    serde_json::from_slice(&raw.value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_widgets_are_rewritten_in_the_storage_version_through_the_scheme() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    for i in 0..300 {
        store
            .put(
                key(&format!("w{i:03}")).as_bytes(),
                stored_v1alpha1(&format!("w{i:03}"), i),
            )
            .await
            .unwrap();
    }
    // What must be left untouched: a value that is not JSON, a kind the scheme lacks, a
    // widget stored as protobuf (apiextensions-apiserver never writes one).
    store
        .put(key("garbage").as_bytes(), b"{not json".to_vec())
        .await
        .unwrap();
    store
        .put(
            key("stranger").as_bytes(),
            br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"stranger"}}"#
                .to_vec(),
        )
        .await
        .unwrap();
    let mut protobuf = b"k8s\0".to_vec();
    protobuf.extend_from_slice(b"\n\x1e\n\x14example.com/v1alpha1\x12\x06Widget");
    store
        .put(key("protobuf").as_bytes(), protobuf.clone())
        .await
        .unwrap();

    // A concurrent writer keeps changing w000's size in v1alpha1 while the migration runs;
    // its last write must survive, converted.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (store, writing) = (store.handle(), writing.clone());
        tokio::spawn(async move {
            let mut size = 1000;
            while writing.load(Ordering::Relaxed) {
                size += 1;
                store
                    .put(key("w000").as_bytes(), stored_v1alpha1("w000", size))
                    .await
                    .unwrap();
            }
            size
        })
    };
    let mut options = MigrateOptions::new("example.com/v1".parse().unwrap());
    options.batch = 16;
    let summary = migrate_kinds(&store, &Custom(&api::SCHEME), &[WIDGETS], &options, &|| {})
        .await
        .unwrap();
    writing.store(false, Ordering::Relaxed);
    let last_size = writer.await.unwrap();

    assert_eq!(summary.examined, 303);
    let failed: Vec<(String, &str)> = summary
        .failed
        .iter()
        .map(|f| {
            (
                String::from_utf8_lossy(&f.key.0).into_owned(),
                f.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(failed[0].0.ends_with("/garbage"), "{failed:?}");
    assert!(
        failed[1].0.ends_with("/protobuf") && failed[1].1.contains("stored as protobuf"),
        "{failed:?}"
    );
    assert!(
        failed[2].0.ends_with("/stranger") && failed[2].1.contains("Gadget"),
        "{failed:?}"
    );
    // w000 may have been written by the migration before the writer's last change: then the
    // writer's v1alpha1 is what is stored, and the next run takes it.
    assert!(summary.migrated >= 299, "{summary:?}");

    // Untouched: byte for byte.
    let raw = store
        .get(key("protobuf").as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.value, protobuf);

    // A second run finishes w000 if the writer's last write came after its migration, and
    // changes nothing else.
    let again = migrate_kinds(&store, &Custom(&api::SCHEME), &[WIDGETS], &options, &|| {})
        .await
        .unwrap();
    assert!(
        again.migrated <= 1 && again.already_current >= 299,
        "{again:?}"
    );

    let widget = stored(&store, "w042").await;
    assert_eq!(widget["apiVersion"], "example.com/v1");
    assert_eq!(widget["spec"]["replicas"], 42);
    assert_eq!(
        widget["spec"]["image"],
        json!({"repository": "registry/app", "tag": "1.2"})
    );
    assert_eq!(widget["metadata"]["uid"], "uid-w042");
    assert!(widget["metadata"].get("resourceVersion").is_none());
    let first = stored(&store, "w000").await;
    assert_eq!(first["apiVersion"], "example.com/v1");
    assert_eq!(
        first["spec"]["replicas"], last_size,
        "the concurrent writer's last size"
    );
}
