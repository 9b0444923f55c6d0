//! Several servers on one etcd serve one API: two backends (replicas) on a three-member etcd
//! cluster see each other's writes through their watches, and no acknowledged write is lost
//! when a member is killed under load.

use std::time::Duration;

use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::{Backend, Event, ListOptions, Revision};
use apfkit_test_support::etcd::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_three_members_lose_no_acknowledged_write() {
    let mut cluster = Cluster::start(3);
    let endpoints = cluster.endpoints();
    // Each replica talks to every member, as kube-apiserver's --etcd-servers lists them all.
    let writer = EtcdBackend::connect(&endpoints).await.unwrap();
    let reader = EtcdBackend::connect(&endpoints).await.unwrap();

    // A write through one replica is seen by a watch through the other.
    let start = reader.current_revision().await.unwrap();
    let mut watch = reader.watch(b"/registry/widgets/", start).await.unwrap();
    let written = writer
        .create(b"/registry/widgets/first", b"1".to_vec())
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the other replica's watch sees the write")
        .unwrap()
        .unwrap();
    assert_eq!(
        *seen,
        Event::Put {
            current: written,
            previous: None
        }
    );

    // Writes go on while a member is killed; every write that was acknowledged is there after.
    let load = tokio::spawn(async move {
        let mut acknowledged = Vec::new();
        for n in 0..300u32 {
            let key = format!("/registry/widgets/w{n:04}").into_bytes();
            let attempt = tokio::time::timeout(
                Duration::from_secs(5),
                writer.create(&key, n.to_string().into_bytes()),
            )
            .await;
            if let Ok(Ok(kv)) = attempt {
                acknowledged.push(kv);
            }
        }
        acknowledged
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!load.is_finished(), "the member is killed under load");
    cluster.members[2].stop();
    let acknowledged = load.await.unwrap();
    assert!(
        acknowledged.len() >= 150,
        "most writes go through with two of three members up: {}",
        acknowledged.len()
    );

    let stored = reader
        .list(&ListOptions {
            prefix: b"/registry/widgets/w".to_vec(),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    for kv in &acknowledged {
        let found = stored.items.iter().find(|s| s.key == kv.key);
        assert_eq!(found, Some(kv), "acknowledged write lost: {:?}", kv.key);
    }
    // Revisions are one history: strictly increasing in the order acknowledged.
    let revisions: Vec<Revision> = acknowledged.iter().map(|kv| kv.mod_revision).collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
}

/// Issue 39, §3: with etcd down a request waits for it, asking again, rather than failing at
/// once: it is answered when etcd is back within the wait, and fails as unavailable (504 at
/// the HTTP layer) when it is not, in no more time than the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waits_for_etcd_to_come_back_until_its_wait_is_over() {
    let mut etcd = apfkit_test_support::etcd::Etcd::start();
    let waiting = EtcdBackend::connect(std::slice::from_ref(&etcd.endpoint))
        .await
        .unwrap()
        .with_unavailable_wait(Duration::from_secs(20));
    let written = waiting
        .create(b"/registry/widgets/a", b"1".to_vec())
        .await
        .unwrap();
    let impatient = waiting
        .clone()
        .with_unavailable_wait(Duration::from_secs(1));
    etcd.stop();

    let started = std::time::Instant::now();
    assert_eq!(
        impatient.get(b"/registry/widgets/a").await,
        Err(apfkit_apiserver::storage::StoreError::Unavailable {
            waited: Duration::from_secs(1)
        })
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );

    let read = tokio::spawn(async move { waiting.get(b"/registry/widgets/a").await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!read.is_finished(), "the read waits while etcd is down");
    let _etcd = tokio::task::spawn_blocking(move || {
        etcd.restart();
        etcd
    })
    .await
    .unwrap();
    let read = tokio::time::timeout(Duration::from_secs(15), read)
        .await
        .expect("answered once etcd is back")
        .unwrap();
    assert_eq!(read, Ok(Some(written)));
}
