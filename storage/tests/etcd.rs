//! Listing stored objects from a real etcd: every encoding, broken values, keys outside the
//! resources, paging past one request, and unreachable servers.

#[path = "support/etcd.rs"]
mod support;

use std::time::{Duration, Instant};

use apfkit_storage::envelope::{Encoding, EnvelopeError, wrap};
use apfkit_storage::etcd::{EtcdOptions, StorageError, Store, Swap, Swapped};
use support::Etcd;

fn options(etcd: &Etcd) -> EtcdOptions {
    EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    }
}

async fn put(etcd: &Etcd, key: &str, value: &[u8]) {
    let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap();
    client.put(key, value, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_object_is_listed_with_its_encoding_and_version() {
    let etcd = Etcd::start();
    let flow_schema = wrap(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "FlowSchema",
        b"\x0a\x00",
    );
    put(&etcd, "/registry/flowschemas/catch-all", &flow_schema).await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/global-default",
        &wrap(
            "flowcontrol.apiserver.k8s.io/v1",
            "PriorityLevelConfiguration",
            b"",
        ),
    )
    .await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/secret",
        b"k8s:enc:aescbc:v1:key1:\x01\x02",
    )
    .await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/broken",
        b"k8s\0\x0a\xff",
    )
    .await;
    put(
        &etcd,
        "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        br#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1.apps"}}"#,
    )
    .await;
    // Not ours: other resources and look-alike prefixes.
    put(&etcd, "/registry/pods/default/p", b"k8s\0").await;
    put(&etcd, "/registry/flowschemasX/x", b"{}").await;
    put(&etcd, "/other/flowschemas/x", b"{}").await;

    let mut store = Store::connect(&options(&etcd)).await.unwrap();
    let entries = store.list().await.unwrap();
    let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "/registry/flowschemas/catch-all",
            "/registry/prioritylevelconfigurations/broken",
            "/registry/prioritylevelconfigurations/global-default",
            "/registry/prioritylevelconfigurations/secret",
            "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        ]
    );
    let first = entries[0].stored.as_ref().unwrap();
    assert_eq!(first.encoding, Encoding::Protobuf);
    assert_eq!(
        first.api_version.as_deref(),
        Some("flowcontrol.apiserver.k8s.io/v1beta3")
    );
    assert_eq!(entries[0].size, flow_schema.len());
    assert!(entries[0].mod_revision > 0);
    assert!(matches!(entries[1].stored, Err(EnvelopeError::Protobuf(_))));
    assert_eq!(
        entries[3].stored.as_ref().unwrap().encoding,
        Encoding::Encrypted {
            provider: "aescbc:v1:key1".to_owned()
        }
    );
    assert_eq!(entries[4].stored.as_ref().unwrap().encoding, Encoding::Json);
    assert_eq!(entries[4].resource.plural, "apiservices");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_objects_than_one_page_are_all_listed_once() {
    let etcd = Etcd::start();
    let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap();
    let value = wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", b"");
    for i in 0..450 {
        client
            .put(
                format!("/registry/flowschemas/fs-{i:04}"),
                value.clone(),
                None,
            )
            .await
            .unwrap();
    }
    let mut store = Store::connect(&options(&etcd)).await.unwrap();
    let entries = store.list().await.unwrap();
    assert_eq!(entries.len(), 450);
    assert!(
        entries.windows(2).all(|w| w[0].key < w[1].key),
        "in key order, no repeats"
    );
    assert_eq!(entries[449].key, "/registry/flowschemas/fs-0449");

    // Another prefix, as kube-apiserver's --etcd-prefix allows.
    client
        .put("/custom/flowschemas/a", value, None)
        .await
        .unwrap();
    let mut custom = Store::connect(&EtcdOptions {
        prefix: "/custom/".to_owned(),
        ..options(&etcd)
    })
    .await
    .unwrap();
    assert_eq!(custom.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_or_misconfigured_etcd_is_a_clear_error_in_time() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let options = EtcdOptions {
        endpoints: vec![format!("http://127.0.0.1:{closed}")],
        timeout: Duration::from_secs(2),
        ..EtcdOptions::default()
    };
    let started = Instant::now();
    let Err(err) = Store::connect(&options).await else {
        panic!("connected to a closed port")
    };
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(err, StorageError::Connect { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{closed}")),
        "{err}"
    );

    let half = EtcdOptions {
        cert: Some("/x/client.crt".into()),
        ..options.clone()
    };
    assert!(matches!(
        Store::connect(&half).await,
        Err(StorageError::HalfIdentity)
    ));
    let missing = EtcdOptions {
        ca: Some("/nonexistent/ca.crt".into()),
        ..options
    };
    let Err(err) = Store::connect(&missing).await else {
        panic!()
    };
    assert!(err.to_string().starts_with("/nonexistent/ca.crt:"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_swaps_is_written_whole_or_not_at_all() {
    let etcd = Etcd::start();
    let mut store = Store::connect(&options(&etcd)).await.unwrap();
    for key in ["/k/a", "/k/b", "/k/c"] {
        store.put(key.as_bytes(), b"old".to_vec()).await.unwrap();
    }
    let read = |raw: Option<apfkit_storage::etcd::RawValue>| raw.unwrap();
    let a = read(store.get(b"/k/a").await.unwrap());
    let b = read(store.get(b"/k/b").await.unwrap());
    let c = read(store.get(b"/k/c").await.unwrap());
    let swap = |raw: &apfkit_storage::etcd::RawValue| Swap {
        key: raw.key.clone(),
        value: b"new".to_vec(),
        mod_revision: raw.mod_revision,
    };
    // Another writer changes b and deletes c: nothing is written, and the answer carries the
    // current value of every key, in order.
    store.put(b"/k/b", b"theirs".to_vec()).await.unwrap();
    etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap()
        .delete("/k/c", None)
        .await
        .unwrap();
    let Swapped::None { current } = store
        .swap_batch(&[swap(&a), swap(&b), swap(&c)])
        .await
        .unwrap()
    else {
        panic!("a changed key must stop the whole batch");
    };
    assert_eq!(current.len(), 3);
    assert_eq!(current[0].as_ref(), Some(&a));
    let b_now = current[1].clone().unwrap();
    assert_eq!(b_now.value, b"theirs");
    assert!(b_now.mod_revision > b.mod_revision);
    assert_eq!(current[2], None);
    assert_eq!(read(store.get(b"/k/a").await.unwrap()).value, b"old");

    // With the current revisions, the batch goes through whole.
    assert_eq!(
        store.swap_batch(&[swap(&a), swap(&b_now)]).await.unwrap(),
        Swapped::All
    );
    assert_eq!(read(store.get(b"/k/a").await.unwrap()).value, b"new");
    assert_eq!(read(store.get(b"/k/b").await.unwrap()).value, b"new");
}
