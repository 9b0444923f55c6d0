//! The watches a server has open, by what they watch (kube-apiserver's `watchTracker`,
//! `k8s.io/apiserver/pkg/util/flowcontrol/watch_tracker.go`): the work estimator gives a
//! mutating request final seats for the watches it will wake.
//!
//! ```
//! use apfkit_dispatcher::watches::{WatchTracker, Watched};
//!
//! let tracker = WatchTracker::default();
//! let all = tracker.register(Watched { api_group: "apps", resource: "deployments", namespace: "", name: "" });
//! let one = tracker.register(Watched { api_group: "apps", resource: "deployments", namespace: "a", name: "web" });
//! let update = Watched { api_group: "apps", resource: "deployments", namespace: "a", name: "web" };
//! assert_eq!(tracker.interested("update", &update), 2);
//! assert_eq!(tracker.interested("get", &update), 0, "reads wake no watch");
//! drop((all, one));
//! assert_eq!(tracker.interested("update", &update), 0);
//! ```

use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxHashMap;

/// What a watch watches, or what a request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Watched<'a> {
    /// API group.
    pub api_group: &'a str,
    /// Resource.
    pub resource: &'a str,
    /// Namespace; empty for all (or cluster-scoped).
    pub namespace: &'a str,
    /// Object name; empty for all.
    pub name: &'a str,
}

type Key = (String, String, String, String);

/// Open watches counted by what they watch; clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct WatchTracker {
    counts: Arc<Mutex<FxHashMap<Key, u64>>>,
}

/// A registered watch; dropping it forgets the watch.
#[derive(Debug)]
pub struct Registration {
    counts: Arc<Mutex<FxHashMap<Key, u64>>>,
    key: Option<Box<Key>>,
}

fn key(watched: &Watched<'_>) -> Key {
    (
        watched.api_group.to_owned(),
        watched.resource.to_owned(),
        watched.namespace.to_owned(),
        watched.name.to_owned(),
    )
}

fn lock(counts: &Mutex<FxHashMap<Key, u64>>) -> MutexGuard<'_, FxHashMap<Key, u64>> {
    counts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl WatchTracker {
    /// Counts a watch of `watched` until the registration is dropped.
    pub fn register(&self, watched: Watched<'_>) -> Registration {
        let key = key(&watched);
        *lock(&self.counts).entry(key.clone()).or_default() += 1;
        Registration {
            counts: self.counts.clone(),
            key: Some(Box::new(key)),
        }
    }

    /// The watches a request with `verb` on `watched` wakes: none for reads (`get`, `list`,
    /// `watch`, `proxy`); otherwise the watches of the whole resource, of its namespace and
    /// of its object (`GetInterestedWatchCount`).
    pub fn interested(&self, verb: &str, watched: &Watched<'_>) -> u64 {
        if matches!(verb, "get" | "list" | "watch" | "proxy") {
            return 0;
        }
        let counts = lock(&self.counts);
        if counts.is_empty() {
            return 0;
        }
        let count = |namespace: &str, name: &str| {
            counts
                .get(&key(&Watched {
                    namespace,
                    name,
                    ..*watched
                }))
                .copied()
                .unwrap_or(0)
        };
        let mut total = count("", "");
        if !watched.namespace.is_empty() {
            total += count(watched.namespace, "");
        }
        if !watched.name.is_empty() {
            total += count(watched.namespace, watched.name);
        }
        total
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut counts = lock(&self.counts);
        if let Some(count) = counts.get_mut(&*key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&*key);
            }
        }
    }
}
