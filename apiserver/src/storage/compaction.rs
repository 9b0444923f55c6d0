//! History compacted on a timer, as kube-apiserver compacts etcd (`--etcd-compaction-interval`,
//! k8s.io/apiserver/pkg/storage/etcd3/compact.go) and kine its table: each round compacts to
//! the revision the round before it saw, so at least one interval of history stays for watches
//! and continue tokens, and a store under a steady load of updates keeps a bounded number of
//! old values.

use std::time::Duration;

use super::{Backend, Revision, StoreError};

/// The compactions of one store: what the last round saw.
#[derive(Debug, Default)]
pub struct Compactor {
    /// The revision the previous round saw, which the next compacts to.
    seen: Option<Revision>,
}

impl Compactor {
    /// A compactor that has seen nothing yet: its first round only notes the revision.
    pub fn new() -> Self {
        Compactor::default()
    }

    /// One round: compacts to the revision the previous round saw (none on the first round),
    /// then notes the current one. Answers the revision compacted to, if any.
    ///
    /// # Errors
    ///
    /// The store's errors; the round is then tried again from the same point.
    pub async fn round<B: Backend>(&mut self, backend: &B) -> Result<Option<Revision>, StoreError> {
        let current = backend.current_revision().await?;
        let compacted = match self.seen {
            Some(seen) if seen > Revision(0) && seen < current => {
                backend.compact(seen).await?;
                Some(seen)
            }
            _ => None,
        };
        self.seen = Some(current);
        Ok(compacted)
    }

    /// Runs a round every `interval` for as long as the task lives; a failed round is logged
    /// and the next one tries again.
    pub async fn run<B: Backend>(mut self, backend: &B, interval: Duration) {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match self.round(backend).await {
                Ok(Some(revision)) => tracing::debug!(%revision, "compacted"),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "compaction failed"),
            }
        }
    }
}
