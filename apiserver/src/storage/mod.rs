//! Storage with kube-apiserver's semantics, whatever holds the bytes.
//!
//! kube-apiserver keeps objects in etcd and takes its semantics from it: every write gets the
//! next cluster-wide revision, an object's `resourceVersion` is the revision that last wrote it
//! (its *mod revision*), updates and deletes are compare-and-swap on that revision, a list is
//! read at one revision (and continued from a key at that same revision), and a watch replays
//! every change after a revision. Once history before a revision is compacted, a list or watch
//! asking for it is refused (kube-apiserver answers 410 Gone, reason `Expired`). [`Backend`] is
//! that contract; `memory` is its model.

pub mod compaction;
pub mod etcd;
pub mod memory;
pub mod sqlite;
mod watchers;

use std::fmt;

/// A cluster-wide revision: every write gets the next one. `Revision(0)` is "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Revision(pub u64);

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One stored key with its value and the revisions that created and last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key, such as `/registry/flowcontrol.apiserver.k8s.io/flowschemas/exempt`.
    pub key: Vec<u8>,
    /// The stored bytes.
    pub value: Vec<u8>,
    /// The revision that created the key (since it last did not exist).
    pub create_revision: Revision,
    /// The revision of the last write: the object's `resourceVersion`.
    pub mod_revision: Revision,
}

/// Which keys a list reads, from where, how many, and at which revision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListOptions {
    /// Keys starting with this.
    pub prefix: Vec<u8>,
    /// Start at this key (inclusive): where a `continue` token points. Empty: the prefix.
    pub start: Vec<u8>,
    /// At most this many keys; 0: all.
    pub limit: usize,
    /// Read at this revision; `None`: the current one.
    pub revision: Option<Revision>,
    /// Whether to count the keys after the page into [`ListPage::remaining`]; a store may
    /// have to read them all to do so. Without it `remaining` is 0.
    pub count: bool,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// The keys, in key order.
    pub items: Vec<KeyValue>,
    /// The revision the page was read at; the next page is read at the same one.
    pub revision: Revision,
    /// Where the next page starts, when there are more keys.
    pub next: Option<Vec<u8>>,
    /// How many keys the next pages hold (kube-apiserver's `remainingItemCount`), when
    /// [`ListOptions::count`] asked for it; 0 otherwise.
    pub remaining: u64,
}

/// A change a watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The key was created or updated: its new value and revisions, and for an update what it
    /// held before (etcd's `prev_kv`), which a watch with selectors compares with, as
    /// kube-apiserver's watch does, to tell `ADDED`, `MODIFIED` and `DELETED` apart.
    Put {
        /// The value written.
        current: KeyValue,
        /// The value it replaced; `None` when the write created the key.
        previous: Option<KeyValue>,
    },
    /// The key was deleted at `revision`; `previous` is what it held.
    Delete {
        /// The value before the delete.
        previous: KeyValue,
        /// The revision of the delete.
        revision: Revision,
    },
}

impl Event {
    /// The revision of the change.
    pub fn revision(&self) -> Revision {
        match self {
            Event::Put { current, .. } => current.mod_revision,
            Event::Delete { revision, .. } => *revision,
        }
    }

    /// The key that changed.
    pub fn key(&self) -> &[u8] {
        match self {
            Event::Put { current, .. } => &current.key,
            Event::Delete { previous, .. } => &previous.key,
        }
    }
}

/// Why a storage operation was refused; each maps to one of kube-apiserver's answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No such key (404 NotFound).
    #[error("not found")]
    NotFound,
    /// The key exists (409 AlreadyExists).
    #[error("already exists")]
    AlreadyExists,
    /// The key's mod revision is not the expected one (409 Conflict).
    #[error("the object has been modified: expected revision {expected}, found {actual}")]
    Conflict {
        /// The revision the caller read.
        expected: Revision,
        /// The revision the key has now.
        actual: Revision,
    },
    /// The revision asked for is compacted away (410 Gone, reason Expired).
    #[error("revision {requested} is compacted; the oldest kept is {compacted}")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The compaction point: history before it is gone.
        compacted: Revision,
    },
    /// The revision asked for is ahead of the store (kube-apiserver: 504 Timeout while it
    /// waits, "Too large resource version").
    #[error("revision {requested} is ahead of the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
    /// A watcher fell behind by more than its buffer; the watch is over, and the client
    /// starts a new one (kube-apiserver ends such a watch too).
    #[error("the watch fell {buffer} events behind and was ended")]
    WatchOverflow {
        /// The buffer it overflowed.
        buffer: usize,
    },
    /// No member of the backend answered within the time a request may wait for one (etcd
    /// down): kube-apiserver's 504 Timeout, "request did not complete within requested timeout
    /// - context deadline exceeded".
    #[error("no storage member answered within {}s", waited.as_secs())]
    Unavailable {
        /// How long the request waited.
        waited: std::time::Duration,
    },
    /// The backend itself failed (a disk error, a database that is not ours): 500.
    #[error("storage: {0}")]
    Backend(String),
}

/// Refuses a revision ahead of the store's `current` one.
pub(crate) fn not_ahead(requested: Revision, current: Revision) -> Result<(), StoreError> {
    if requested > current {
        return Err(StoreError::FutureRevision { requested, current });
    }
    Ok(())
}

/// Whether a read at `revision` is within the kept history: not ahead of `current`, not
/// before the compaction point.
pub(crate) fn readable(
    revision: Revision,
    current: Revision,
    compacted: Revision,
) -> Result<(), StoreError> {
    not_ahead(revision, current)?;
    if revision < compacted {
        return Err(StoreError::Compacted {
            requested: revision,
            compacted,
        });
    }
    Ok(())
}

/// Whether every change after `after` is kept (the first is `after + 1`, which may be the
/// compaction point itself) and `after` is not ahead of `current`.
pub(crate) fn watchable(
    after: Revision,
    current: Revision,
    compacted: Revision,
) -> Result<(), StoreError> {
    if after.0 + 1 < compacted.0 {
        return Err(StoreError::Compacted {
            requested: after,
            compacted,
        });
    }
    not_ahead(after, current)
}

/// The first key after every key that starts with `prefix` (etcd's range end for a prefix);
/// `None` when there is none (an empty prefix, or one of 0xff bytes only).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A storage backend with kube-apiserver's semantics.
pub trait Backend: Send + Sync {
    /// The current revision (the last write's).
    fn current_revision(&self) -> impl Future<Output = Result<Revision, StoreError>> + Send;

    /// The key's value now.
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<KeyValue>, StoreError>> + Send;

    /// One page of keys, read at one revision.
    ///
    /// Errors: [`StoreError::Compacted`] or [`StoreError::FutureRevision`] for a revision
    /// outside the kept history.
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ListPage, StoreError>> + Send;

    /// Creates a key; its create and mod revision are the new revision.
    ///
    /// Errors: [`StoreError::AlreadyExists`].
    fn create(
        &self,
        key: &[u8],
        value: Vec<u8>,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send;

    /// Replaces a key's value if its mod revision is `expected`.
    ///
    /// Errors: [`StoreError::NotFound`], [`StoreError::Conflict`].
    fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send;

    /// [`Backend::update`] of the value the caller read as `read` (its key and mod revision
    /// the precondition): the same, and a backend that learns a key's create revision only by
    /// reading it back after the write takes it from `read` instead.
    ///
    /// Errors: as [`Backend::update`].
    fn update_read(
        &self,
        read: &KeyValue,
        value: Vec<u8>,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send {
        self.update(&read.key, value, read.mod_revision)
    }

    /// Deletes a key, if its mod revision is `expected` when one is given; returns what it
    /// held and the revision of the delete.
    ///
    /// Errors: [`StoreError::NotFound`], [`StoreError::Conflict`].
    fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> impl Future<Output = Result<(KeyValue, Revision), StoreError>> + Send;

    /// Every change to keys under `prefix` after revision `after`, then every new one, in
    /// revision order.
    ///
    /// Errors: [`StoreError::Compacted`] when changes after `after` are gone.
    fn watch(
        &self,
        prefix: &[u8],
        after: Revision,
    ) -> impl Future<Output = Result<Watch, StoreError>> + Send;

    /// Forgets history before `revision`: older values and events are gone, and lists and
    /// watches that ask for them are refused.
    fn compact(&self, revision: Revision) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The events of one watch, as they come. Dropping it ends the watch.
#[derive(Debug)]
pub struct Watch {
    events: tokio::sync::mpsc::Receiver<std::sync::Arc<Event>>,
    ended: std::sync::Arc<std::sync::OnceLock<StoreError>>,
    reported: bool,
}

impl Watch {
    /// The next event (shared with the other watches it went to); `None` when the backend is
    /// gone; an error once when the watch was ended (a watcher that fell behind its buffer),
    /// after the events buffered before it.
    pub async fn next(&mut self) -> Option<Result<std::sync::Arc<Event>, StoreError>> {
        match self.events.recv().await {
            Some(event) => Some(Ok(event)),
            None if self.reported => None,
            None => {
                self.reported = true;
                self.ended.get().cloned().map(Err)
            }
        }
    }

    /// A watch fed by `events`; `ended` holds why the sender stopped, if it was ended.
    pub(crate) fn new(
        events: tokio::sync::mpsc::Receiver<std::sync::Arc<Event>>,
        ended: std::sync::Arc<std::sync::OnceLock<StoreError>>,
    ) -> Self {
        Watch {
            events,
            ended,
            reported: false,
        }
    }
}

/// A shared backend is a backend: the server's store and whoever else needs the same storage
/// (a compaction task, a test that injects faults) hold it as an `Arc`.
impl<B: Backend> Backend for std::sync::Arc<B> {
    fn current_revision(&self) -> impl Future<Output = Result<Revision, StoreError>> + Send {
        B::current_revision(self)
    }
    fn get(&self, key: &[u8]) -> impl Future<Output = Result<Option<KeyValue>, StoreError>> + Send {
        B::get(self, key)
    }
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ListPage, StoreError>> + Send {
        B::list(self, options)
    }
    fn create(
        &self,
        key: &[u8],
        value: Vec<u8>,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send {
        B::create(self, key, value)
    }
    fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send {
        B::update(self, key, value, expected)
    }
    fn update_read(
        &self,
        read: &KeyValue,
        value: Vec<u8>,
    ) -> impl Future<Output = Result<KeyValue, StoreError>> + Send {
        B::update_read(self, read, value)
    }
    fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> impl Future<Output = Result<(KeyValue, Revision), StoreError>> + Send {
        B::delete(self, key, expected)
    }
    fn watch(
        &self,
        prefix: &[u8],
        after: Revision,
    ) -> impl Future<Output = Result<Watch, StoreError>> + Send {
        B::watch(self, prefix, after)
    }
    fn compact(&self, revision: Revision) -> impl Future<Output = Result<(), StoreError>> + Send {
        B::compact(self, revision)
    }
}
