//! The collector at work: a watch of every resource served (following CRDs as they come and
//! go) keeps the [`Graph`] and says which objects to look at; one worker looks at each, as
//! kube's `attemptToDelete` and `attemptToOrphan` workers do, reading what it decides on from
//! the store and writing as kube-controller-manager.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::update_as;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::{
    FOREGROUND_FINALIZER, ListRequest, ORPHAN_FINALIZER, Place, Preconditions, Propagation, Served,
    UpdateKind,
};
use apfkit_runtime::Object;
use apfkit_runtime::identity::split_api_version;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use tokio::sync::Notify;

use crate::decide::{Action, Owner, decide};
use crate::graph::{Graph, Key};

/// Who the collector writes as: kube-controller-manager's clients name themselves so.
const CONTROLLER: &str = "kube-controller-manager";

/// How long the collector waits before it looks again at an object whose handling failed
/// (a conflict with another write, storage errors), doubled at each failure in a row up to
/// [`MAX_RETRY`]; and before it watches again.
const RETRY: Duration = Duration::from_secs(1);

/// The longest wait before an object that keeps failing is looked at again.
const MAX_RETRY: Duration = Duration::from_secs(256);

/// Objects listed at a time when a watch starts.
const PAGE: usize = 500;

/// A resource watched, and the task that watches it.
type Watching<H> = (Arc<Served<H>>, tokio::task::JoinHandle<()>);

/// kube-controller-manager's garbage collector over the resources of a server: objects whose
/// owners are all gone are deleted; an owner deleted with `propagationPolicy: Orphan` has its
/// dependents' references to it removed before it goes (its `orphan` finalizer), one deleted
/// with `Foreground` has its dependents deleted and waits for those that block it (its
/// `foregroundDeletion` finalizer). Built with [`GarbageCollector::new`], started with
/// [`GarbageCollector::keep_collecting`].
pub struct GarbageCollector<H: 'static> {
    server: Arc<ApiServer<H>>,
    graph: Mutex<Graph>,
    queue: Queue,
    /// The objects whose handling failed, with how many times in a row.
    failures: Mutex<HashMap<Key, u32>>,
}

impl<H> GarbageCollector<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// A collector of the objects of `server`.
    pub fn new(server: Arc<ApiServer<H>>) -> Self {
        GarbageCollector {
            server,
            graph: Mutex::new(Graph::default()),
            queue: Queue::default(),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Collects until the server stops: every resource served now and later is watched, and
    /// every object that may have lost an owner is looked at.
    pub fn keep_collecting(self: Arc<Self>) {
        let follower = self.clone();
        self.server
            .spawn_until_stopped(async move { follower.follow_resources().await });
        let worker = self.clone();
        self.server
            .spawn_until_stopped(async move { worker.work().await });
    }

    fn graph(&self) -> MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches each resource served, starting a watch for each one that comes (or changes)
    /// and ending those of resources that go.
    async fn follow_resources(self: Arc<Self>) {
        let mut changed = self.server.resources_changed();
        let mut watching: HashMap<(String, String), Watching<H>> = HashMap::new();
        loop {
            let mut served_now = HashSet::new();
            for served in self.server.resources() {
                let id = (served.config.group.clone(), served.plural.clone());
                served_now.insert(id.clone());
                if watching
                    .get(&id)
                    .is_some_and(|(current, _)| Arc::ptr_eq(current, &served))
                {
                    continue;
                }
                if let Some((_, task)) = watching.remove(&id) {
                    task.abort();
                }
                let watcher = self.clone().watch(served.clone());
                watching.insert(id, (served, self.server.spawn_until_stopped(watcher)));
            }
            watching.retain(|(group, plural), (_, task)| {
                let served = served_now.contains(&(group.clone(), plural.clone()));
                if !served {
                    task.abort();
                    self.graph().remove_resource(group, plural);
                }
                served
            });
            // An owner of a kind that came or went resolves otherwise now.
            self.look_at_every_owned_object();
            if changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Keeps the graph of one resource: a list, then a watch from it, again after a failure.
    async fn watch(self: Arc<Self>, served: Arc<Served<H>>) {
        let mut relist = false;
        loop {
            if let Err(error) = self.list_and_watch(&served, relist).await {
                tracing::debug!("garbage collector: {}: {error}", served.plural);
            }
            relist = true;
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Lists the resource into the graph, then follows its watch; `relist` after a watch
    /// that ended, whose missed deletes may have left dependents elsewhere to look at.
    async fn list_and_watch(&self, served: &Served<H>, relist: bool) -> Result<(), ApiError> {
        let objects = self.server.objects();
        let revision = objects.current_revision().await?;
        self.graph()
            .remove_resource(&served.config.group, &served.plural);
        let mut start = Vec::new();
        loop {
            let page = objects
                .list_metadata(
                    served,
                    &ListRequest {
                        start,
                        limit: PAGE,
                        revision: Some(revision),
                        ..ListRequest::default()
                    },
                )
                .await?;
            for meta in &page.items {
                self.observe(served, meta, false);
            }
            match page.next {
                Some(next) => start = next,
                None => break,
            }
        }
        // Owners deleted while nobody watched leave dependents to look at. On a first list
        // each object with owners was queued as it was listed (and dependents of other
        // resources as theirs were), so only a relist needs this.
        if relist {
            self.look_at_every_owned_object();
        }
        let mut watch = objects.watch(served, None, revision).await?;
        while let Some(event) = watch.next().await {
            let (meta, deleted) = objects.watched_metadata(served, &event?)?;
            self.observe(served, &meta, deleted);
        }
        Ok(())
    }

    fn look_at_every_owned_object(&self) {
        let owned = self.graph().owned();
        for key in owned {
            self.queue.push(key);
        }
    }

    /// Takes in a change of an object (`deleted`: its delete) and queues what it concerns:
    /// the object when it has owners or is being deleted with the collector's finalizers, its
    /// dependents when it went or waits for them, its owners that wait for it.
    fn observe(&self, served: &Served<H>, meta: &ObjectMeta, deleted: bool) {
        let key = Key {
            group: served.config.group.clone(),
            plural: served.plural.clone(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        };
        let uid = meta.uid.as_deref().unwrap_or_default();
        let references = meta.owner_references.as_deref().unwrap_or_default();
        let mut graph = self.graph();
        let mut concerned = graph.waiting_among(references);
        let dependents_of = |graph: &Graph| -> Vec<Key> {
            graph
                .dependents(uid)
                .into_iter()
                .map(|(key, _)| key)
                .collect()
        };
        if deleted {
            graph.remove(&key);
            concerned.extend(dependents_of(&graph));
        } else {
            graph.set(&key, uid, references);
            let deleting = meta.deletion_timestamp.is_some();
            let orphaning = deleting && has_finalizer(meta, ORPHAN_FINALIZER);
            let waiting = deleting && has_finalizer(meta, FOREGROUND_FINALIZER);
            graph.set_waiting(uid, &key, waiting);
            if waiting {
                concerned.extend(dependents_of(&graph));
            }
            if !references.is_empty() || orphaning || waiting {
                concerned.push(key);
            }
        }
        drop(graph);
        for key in concerned {
            self.queue.push(key);
        }
    }

    /// Looks at the objects queued, one at a time; one whose handling failed is queued
    /// again after [`RETRY`], twice as long after each failure in a row.
    async fn work(self: Arc<Self>) {
        loop {
            let key = self.queue.pop().await;
            let attempted = self.attempt(&key).await;
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            let Err(error) = attempted else {
                failures.remove(&key);
                continue;
            };
            tracing::debug!("garbage collector: {}/{}: {error}", key.plural, key.name);
            let failed = failures.entry(key.clone()).or_default();
            let wait = retry_after(*failed);
            *failed = failed.saturating_add(1);
            drop(failures);
            let collector = self.clone();
            self.server.spawn_until_stopped(async move {
                tokio::time::sleep(wait).await;
                collector.queue.push(key);
            });
        }
    }

    /// `attemptToDeleteItem` and `attemptToOrphanWorker` for the object at `key`, as it is
    /// stored now.
    async fn attempt(&self, key: &Key) -> Result<(), ApiError> {
        let Some(served) = self.server.resource(&key.group, &key.plural) else {
            return Ok(());
        };
        let place = place_of(key);
        let object = match self.server.objects().get(&served, place).await {
            Ok(object) => object,
            Err(error) if error.code == 404 => return Ok(()),
            Err(error) => return Err(error),
        };
        let meta = object.metadata();
        let uid = meta.uid.clone().unwrap_or_default();
        if meta.deletion_timestamp.is_some() {
            if has_finalizer(meta, ORPHAN_FINALIZER) {
                return self.orphan_dependents(&served, key, object).await;
            }
            if has_finalizer(meta, FOREGROUND_FINALIZER) {
                return self.delete_dependents_first(&served, key, object).await;
            }
            // Being deleted otherwise: nothing for the collector.
            return Ok(());
        }
        let references = meta.owner_references.clone().unwrap_or_default();
        if references.is_empty() {
            return Ok(());
        }
        let mut owners = Vec::with_capacity(references.len());
        for reference in &references {
            match self.owner(key, reference).await? {
                Some(found) => owners.push((reference.uid.clone(), found)),
                // An owner of a kind not served, or a namespaced owner of a cluster-scoped
                // object: kube's collector leaves the object (and tries again later).
                None => return Ok(()),
            }
        }
        let has_dependents = !self.graph().dependents(&uid).is_empty();
        let finalizers = meta.finalizers.clone().unwrap_or_default();
        match decide(&owners, has_dependents, &finalizers) {
            Action::Nothing => Ok(()),
            Action::RemoveReferences(gone) => {
                let mut object = object;
                remove_references(object.metadata_mut(), |r| gone.contains(&r.uid));
                self.write(&served, key, object).await
            }
            Action::Delete(policy) => {
                let preconditions = Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                };
                let propagation = Propagation {
                    orphan_dependents: None,
                    policy: Some(policy),
                };
                let deleted = self
                    .server
                    .objects()
                    .delete(&served, place, &preconditions, propagation, false)
                    .await;
                match deleted {
                    // Gone already, or replaced by another object of the same name.
                    Err(error) if !matches!(error.code, 404 | 409) => Err(error),
                    _ => Ok(()),
                }
            }
        }
    }

    /// What `reference` of the object at `item` points at (`isDangling`): the owner of that
    /// kind and name, in the object's namespace if the kind is namespaced, read from the
    /// store, with the reference's uid. `None` when it cannot be told: a kind not served, or
    /// a namespaced owner named by a cluster-scoped object.
    async fn owner(
        &self,
        item: &Key,
        reference: &OwnerReference,
    ) -> Result<Option<Owner>, ApiError> {
        let (group, _) = split_api_version(&reference.api_version);
        let Some(served) = self.server.resource_of_kind(group, &reference.kind) else {
            return Ok(None);
        };
        let namespace = match (served.config.namespaced, item.namespace.as_deref()) {
            (true, None) => return Ok(None),
            (true, namespace) => namespace,
            (false, _) => None,
        };
        let place = Place {
            namespace,
            name: &reference.name,
        };
        let owner = match self.server.objects().get(&served, place).await {
            Ok(owner) => owner,
            Err(error) if error.code == 404 => return Ok(Some(Owner::Absent)),
            Err(error) => return Err(error),
        };
        let meta = owner.metadata();
        Ok(Some(if meta.uid.as_deref() != Some(&reference.uid) {
            Owner::Absent
        } else if meta.deletion_timestamp.is_some() && has_finalizer(meta, FOREGROUND_FINALIZER) {
            Owner::WaitingForDependents
        } else {
            Owner::Solid
        }))
    }

    /// `attemptToOrphan`: every dependent's reference to the owner removed, then its `orphan`
    /// finalizer.
    async fn orphan_dependents(
        &self,
        served: &Served<H>,
        key: &Key,
        owner: H,
    ) -> Result<(), ApiError> {
        let uid = owner.metadata().uid.clone().unwrap_or_default();
        let dependents = self.graph().dependents(&uid);
        for (dependent, _) in dependents {
            let Some(dependent_served) = self.server.resource(&dependent.group, &dependent.plural)
            else {
                continue;
            };
            let mut object = match self
                .server
                .objects()
                .get(&dependent_served, place_of(&dependent))
                .await
            {
                Ok(object) => object,
                Err(error) if error.code == 404 => continue,
                Err(error) => return Err(error),
            };
            if remove_references(object.metadata_mut(), |r| r.uid == uid) {
                self.write(&dependent_served, &dependent, object).await?;
            }
        }
        self.remove_finalizer(served, key, owner, ORPHAN_FINALIZER)
            .await
    }

    /// `processDeletingDependentsItem`: an owner deleted in the foreground loses its
    /// `foregroundDeletion` finalizer once no dependent that blocks its deletion is left;
    /// until then those dependents are looked at (each is deleted as its owners say).
    async fn delete_dependents_first(
        &self,
        served: &Served<H>,
        key: &Key,
        owner: H,
    ) -> Result<(), ApiError> {
        let uid = owner.metadata().uid.clone().unwrap_or_default();
        let (blocking, to_look_at) = {
            let mut graph = self.graph();
            graph.set_waiting(&uid, key, true);
            let blocking: Vec<Key> = graph
                .dependents(&uid)
                .into_iter()
                .filter(|(_, reference)| reference.block_owner_deletion == Some(true))
                .map(|(dependent, _)| dependent)
                .collect();
            // One waiting for its own dependents (itself, in a cycle) still blocks, but is
            // looked at when they change, not now: as kube's, else it would be looked at
            // again and again.
            let to_look_at: Vec<Key> = blocking
                .iter()
                .filter(|dependent| !graph.is_waiting(dependent))
                .cloned()
                .collect();
            (blocking, to_look_at)
        };
        if blocking.is_empty() {
            return self
                .remove_finalizer(served, key, owner, FOREGROUND_FINALIZER)
                .await;
        }
        for dependent in to_look_at {
            self.queue.push(dependent);
        }
        Ok(())
    }

    /// Removes the collector's `finalizer` from an object being deleted: with no finalizer
    /// left, the store removes it.
    async fn remove_finalizer(
        &self,
        served: &Served<H>,
        key: &Key,
        object: H,
        finalizer: &str,
    ) -> Result<(), ApiError> {
        let mut object = object;
        let finalizers = &mut object.metadata_mut().finalizers;
        if let Some(list) = finalizers {
            list.retain(|f| f != finalizer);
            if list.is_empty() {
                *finalizers = None;
            }
        }
        self.write(served, key, object).await
    }

    /// Writes an object read from the store back changed, as kube-controller-manager: its
    /// `resourceVersion` a precondition (a conflict is an error: the object is looked at
    /// again), the change recorded in its managed fields in the preferred version.
    async fn write(&self, served: &Served<H>, key: &Key, object: H) -> Result<(), ApiError> {
        let codec = served.versions.first().unwrap_or(&served.storage);
        let written = update_as(
            self.server.objects(),
            served,
            &**codec,
            place_of(key),
            object,
            UpdateKind::Main,
            CONTROLLER,
        )
        .await;
        match written {
            Err(error) if error.code != 404 => Err(error),
            _ => Ok(()),
        }
    }
}

/// The wait before an object that failed `failed` times in a row before this failure is
/// looked at again.
fn retry_after(failed: u32) -> Duration {
    RETRY.saturating_mul(1 << failed.min(8)).min(MAX_RETRY)
}

fn place_of(key: &Key) -> Place<'_> {
    Place {
        namespace: key.namespace.as_deref(),
        name: &key.name,
    }
}

fn has_finalizer(meta: &ObjectMeta, name: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == name)
}

/// Removes the owner references `gone` picks, leaving none as absent; answers whether any
/// was removed.
fn remove_references(meta: &mut ObjectMeta, gone: impl Fn(&OwnerReference) -> bool) -> bool {
    let Some(references) = &mut meta.owner_references else {
        return false;
    };
    let before = references.len();
    references.retain(|r| !gone(r));
    let removed = references.len() != before;
    if references.is_empty() {
        meta.owner_references = None;
    }
    removed
}

/// The objects to look at, each once however often it is queued before it is looked at.
#[derive(Default)]
struct Queue {
    waiting: Mutex<(VecDeque<Key>, HashSet<Key>)>,
    ready: Notify,
}

impl Queue {
    fn push(&self, key: Key) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.1.insert(key.clone()) {
            waiting.0.push_back(key);
            self.ready.notify_one();
        }
    }

    async fn pop(&self) -> Key {
        loop {
            {
                let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(key) = waiting.0.pop_front() {
                    waiting.1.remove(&key);
                    return key;
                }
            }
            self.ready.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            group: String::new(),
            plural: "services".into(),
            namespace: Some("default".into()),
            name: name.into(),
        }
    }

    #[tokio::test]
    async fn a_key_queued_twice_before_it_is_taken_is_taken_once() {
        let queue = Queue::default();
        queue.push(key("a"));
        queue.push(key("b"));
        queue.push(key("a"));
        assert_eq!(queue.pop().await, key("a"));
        assert_eq!(queue.pop().await, key("b"));
        // Taken, it may be queued again.
        queue.push(key("a"));
        assert_eq!(queue.pop().await, key("a"));
        let waiting = queue.waiting.lock().unwrap();
        assert!(waiting.0.is_empty() && waiting.1.is_empty());
    }

    #[test]
    fn an_object_that_keeps_failing_waits_longer_each_time_up_to_a_bound() {
        assert_eq!(retry_after(0), Duration::from_secs(1));
        assert_eq!(retry_after(1), Duration::from_secs(2));
        assert_eq!(retry_after(8), MAX_RETRY);
        assert_eq!(retry_after(u32::MAX), MAX_RETRY);
    }

    #[test]
    fn references_are_removed_by_uid_and_none_left_is_absent() {
        let reference = |uid: &str| OwnerReference {
            uid: uid.into(),
            ..OwnerReference::default()
        };
        let mut meta = ObjectMeta {
            owner_references: Some(vec![reference("a"), reference("b")]),
            ..ObjectMeta::default()
        };
        assert!(remove_references(&mut meta, |r| r.uid == "a"));
        assert_eq!(meta.owner_references.as_ref().unwrap().len(), 1);
        assert!(!remove_references(&mut meta, |r| r.uid == "a"));
        assert!(remove_references(&mut meta, |r| r.uid == "b"));
        assert_eq!(meta.owner_references, None);
    }
}
