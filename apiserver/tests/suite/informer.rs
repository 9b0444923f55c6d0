//! Informers: one sync at start, one per burst of changes, a failed sync tried again, none
//! before a change when the objects were already handled, and nothing left running (nor the
//! server held) once the server stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::storage::memory::MemoryBackend;

use crate::support::{self, Running, wait_until};

const SETTLE: Duration = Duration::from_millis(300);

async fn running() -> Running {
    support::start(MemoryBackend::default(), Duration::from_secs(5)).await
}

/// An informer of the server's FlowSchemas counting its syncs; each sync answers what `fails`
/// says for its number (from 1).
fn counted(running: &Running, fails: impl Fn(usize) -> bool + Send + 'static) -> Arc<AtomicUsize> {
    let syncs = Arc::new(AtomicUsize::new(0));
    let counter = syncs.clone();
    Informer::new(running.server.clone(), running.server.resources())
        .settle(SETTLE)
        .run(move || {
            let number = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let failed = fails(number);
            async move { if failed { Err("failed") } else { Ok(()) } }
        });
    syncs
}

#[tokio::test]
async fn an_informer_syncs_at_start_then_once_for_a_burst_of_changes() {
    let running = running().await;
    let syncs = counted(&running, |_| false);
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) == 1).await);
    for i in 0..5 {
        running.create(&format!("burst-{i}"), 0).await;
    }
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) == 2).await);
    tokio::time::sleep(SETTLE * 3).await;
    assert_eq!(
        syncs.load(Ordering::SeqCst),
        2,
        "five changes together, one sync"
    );
}

#[tokio::test]
async fn a_failed_sync_is_tried_again_without_a_change() {
    let running = running().await;
    let syncs = counted(&running, |number| number == 1);
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) == 2).await);
    tokio::time::sleep(SETTLE + apfkit_apiserver::informer::RETRY).await;
    assert_eq!(syncs.load(Ordering::SeqCst), 2, "the second sync succeeded");
}

#[tokio::test]
async fn objects_already_handled_are_not_synced_again() {
    let running = running().await;
    let revision = running.server.objects().current_revision().await.unwrap();
    let syncs = Arc::new(AtomicUsize::new(0));
    let counter = syncs.clone();
    Informer::new(running.server.clone(), running.server.resources())
        .handled_at(revision)
        .settle(SETTLE)
        .run(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), ()>(()) }
        });
    tokio::time::sleep(SETTLE * 3).await;
    assert_eq!(syncs.load(Ordering::SeqCst), 0);
    running.create("after", 0).await;
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) == 1).await);
}

#[tokio::test]
async fn an_informer_ends_when_its_server_stops_and_lets_the_server_go() {
    let running = running().await;
    let syncs = counted(&running, |_| false);
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) == 1).await);
    running.server.stop();
    running.create("unseen", 0).await;
    tokio::time::sleep(SETTLE * 3).await;
    assert_eq!(syncs.load(Ordering::SeqCst), 1, "no sync once stopped");
    let server = Arc::downgrade(&running.server);
    drop(running);
    assert!(
        wait_until(Duration::from_secs(5), || server.upgrade().is_none()).await,
        "something still holds the server"
    );
}

/// `/readyz`'s `informer-sync` says an informer has read the store, as kube-apiserver's says
/// its caches have synced: a controller whose sync keeps failing (a namespace whose objects
/// are not gone yet) does not make the server unready.
#[tokio::test]
async fn an_informer_whose_sync_fails_has_still_synced_for_readyz() {
    let running = running().await;
    assert_eq!(
        running.get_text("/readyz/informer-sync").await,
        (200, "ok".to_owned()),
        "no informer yet"
    );
    let syncs = counted(&running, |_| true);
    assert!(wait_until(Duration::from_secs(5), || syncs.load(Ordering::SeqCst) >= 1).await);
    let mut ready = running.get_text("/readyz/informer-sync").await;
    for _ in 0..50 {
        if ready.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        ready = running.get_text("/readyz/informer-sync").await;
    }
    assert_eq!(ready, (200, "ok".to_owned()));
}
