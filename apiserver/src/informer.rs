//! Work kept in step with stored objects, as client-go's informers keep a controller: a watch
//! of each resource, restarted from the newest revision when it fails (compaction, storage),
//! and a sync run after every change, changes that come together gathered into one sync.
//! Everything ends when the server stops ([`ApiServer::stop`], or serving ends).
//!
//! The controllers of `apfkit serve` (the APF configuration, CRDs, RBAC's policy, the
//! aggregator's routing table) are informers over the resources they read.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::http::ApiServer;
use crate::storage::Revision;
use crate::store::Served;

/// How long an informer waits after a change for more before it syncs.
pub const SETTLE: Duration = Duration::from_millis(20);

/// How long an informer waits before it watches again after a watch failed, and before it
/// syncs again after a sync failed.
pub const RETRY: Duration = Duration::from_secs(1);

/// A sync kept in step with the objects of some resources: built with [`Informer::new`],
/// started with [`Informer::run`].
pub struct Informer<H: 'static> {
    server: Arc<ApiServer<H>>,
    resources: Vec<Arc<Served<H>>>,
    from: Option<Revision>,
    settle: Duration,
}

impl<H> Informer<H>
where
    H: apfkit_runtime::Object + Clone + Send + Sync + 'static,
{
    /// An informer of `resources` of `server`: it syncs once when it starts, then after
    /// changes.
    pub fn new(server: Arc<ApiServer<H>>, resources: Vec<Arc<Served<H>>>) -> Self {
        Informer {
            server,
            resources,
            from: None,
            settle: SETTLE,
        }
    }

    /// The informer with the objects as of `revision` already handled: its first watches
    /// start there, and it syncs only after a change.
    #[must_use]
    pub fn handled_at(mut self, revision: Revision) -> Self {
        self.from = Some(revision);
        self
    }

    /// The informer waiting `settle` after a change for more before it syncs ([`SETTLE`]
    /// unless told).
    #[must_use]
    pub fn settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// Starts the watches and the syncs, in tasks that end when the server stops. A sync that
    /// fails is run again after [`RETRY`].
    pub fn run<S, F, T, E>(self, mut sync: S)
    where
        S: FnMut() -> F + Send + 'static,
        F: Future<Output = Result<T, E>> + Send,
    {
        // One change waiting is enough: a sync reads everything.
        let (changed, mut changes) = mpsc::channel::<()>(1);
        // Until its first sync has read the store, `/readyz`'s `informer-sync` fails (kube's
        // caches synced, whatever its controller made of them); one that starts from a
        // revision already handled has synced.
        let synced = self.server.register_informer();
        if self.from.is_some() {
            synced.store(true, std::sync::atomic::Ordering::Release);
        }
        for served in self.resources {
            let watching = watched(self.server.clone(), served, self.from, changed.clone());
            self.server.spawn_until_stopped(watching);
        }
        let settle = self.settle;
        self.server.spawn_until_stopped(async move {
            while changes.recv().await.is_some() {
                tokio::time::sleep(settle).await;
                // The changes that came while settling are read by this sync.
                while changes.try_recv().is_ok() {}
                let failed = sync().await.is_err();
                synced.store(true, std::sync::atomic::Ordering::Release);
                if failed {
                    tokio::time::sleep(RETRY).await;
                    let _ = changed.try_send(());
                }
            }
        });
    }
}

/// Watches `served` for as long as the task lives, saying each change through `changed`; a
/// watch that ends starts again from the newest revision, which counts as a change (events
/// may have been missed).
async fn watched<H>(
    server: Arc<ApiServer<H>>,
    served: Arc<Served<H>>,
    mut from: Option<Revision>,
    changed: mpsc::Sender<()>,
) where
    H: apfkit_runtime::Object + Clone + Send + Sync + 'static,
{
    loop {
        let start = match from.take() {
            Some(handled) => Some(handled),
            None => {
                let newest = server.objects().current_revision().await.ok();
                if newest.is_some() {
                    let _ = changed.try_send(());
                }
                newest
            }
        };
        if let Some(start) = start
            && let Ok(mut watch) = server.objects().watch(&served, None, start).await
        {
            while let Some(Ok(_)) = watch.next().await {
                let _ = changed.try_send(());
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}
