//! What kube-apiserver's work estimator reads of the server in `apfkit serve`: how many
//! objects each resource stores and their average size (kube-apiserver's storage object
//! count tracker, refreshed every minute), and the open watches (the dispatcher's
//! `WatchTracker`, which the APF layer keeps).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::ListRequest;
use apfkit_dispatcher::estimate::ObjectCount;

/// How often the counts are read again, as kube-apiserver's tracker does.
const PERIOD: Duration = Duration::from_secs(60);

/// Objects read per page while counting.
const PAGE: usize = 500;

/// The stored objects of each served resource: (API group, resource) → count and average
/// size. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct ObjectStats {
    counts: Arc<RwLock<HashMap<(String, String), ObjectCount>>>,
}

impl ObjectStats {
    /// What is known of `resource` in `api_group`: untracked resources (not served) cost
    /// lists one seat, as upstream.
    pub fn get(&self, api_group: &str, resource: &str) -> ObjectCount {
        self.counts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(api_group.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(ObjectCount::Untracked)
    }

    /// Counts every served resource's stored objects and their bytes, a page at a time. A
    /// resource that cannot be read is marked stale (the estimator then assumes the worst,
    /// as upstream does when its statistics fail).
    pub async fn refresh(&self, server: &ApiServer<crate::ServeObject>) {
        for served in server.resources() {
            let mut request = ListRequest {
                namespace: None,
                start: Vec::new(),
                limit: PAGE,
                revision: None,
                count: false,
            };
            let (mut count, mut bytes) = (0i64, 0i64);
            let counted = loop {
                match server.objects().list_stored(&served, &request).await {
                    Ok(page) => {
                        count += page.items.len() as i64;
                        bytes += page.items.iter().map(|kv| kv.size() as i64).sum::<i64>();
                        match page.next {
                            Some(next) => {
                                request.start = next;
                                request.revision = Some(page.revision);
                            }
                            None => break true,
                        }
                    }
                    Err(_) => break false,
                }
            };
            let stats = if counted {
                ObjectCount::Known {
                    count,
                    average_size: if count > 0 { bytes / count } else { 0 },
                }
            } else {
                ObjectCount::Stale
            };
            self.counts
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    (served.config.group.clone(), served.plural.to_owned()),
                    stats,
                );
        }
    }
}

/// Refreshes `stats` every minute from now on.
pub fn keep_counted(server: Arc<ApiServer<crate::ServeObject>>, stats: ObjectStats) {
    let counted = server.clone();
    server.spawn_until_stopped(async move {
        loop {
            tokio::time::sleep(PERIOD).await;
            stats.refresh(&counted).await;
        }
    });
}
