//! The model backend: every revision of every key in memory, as etcd's MVCC store keeps them.
//!
//! It is what the real backends are held to (the conformance tests run the same cases on each)
//! and a backend for tests of what sits above storage. Nothing is persisted.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::watchers::Watchers;
use super::{
    Backend, Event, KeyValue, ListOptions, ListPage, Revision, StoreError, Watch, not_ahead,
    readable, watchable,
};

/// Events a watcher may have waiting before it is ended.
pub const WATCH_BUFFER: usize = 1024;

/// Every key's history in memory.
#[derive(Debug)]
pub struct MemoryBackend {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    revision: Revision,
    /// History before this revision is gone.
    compacted: Revision,
    /// Each key's versions, oldest first; `None` marks a delete.
    keys: BTreeMap<Vec<u8>, Vec<Version>>,
    /// Every change, in revision order (since the compaction point).
    log: Vec<std::sync::Arc<Event>>,
    watchers: Watchers,
}

#[derive(Debug, Clone)]
struct Version {
    revision: Revision,
    value: Option<KeyValue>,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        MemoryBackend::with_watch_buffer(WATCH_BUFFER)
    }
}

impl MemoryBackend {
    /// An empty store whose watchers may fall `buffer` events behind before they are ended.
    /// It is at revision 1, as a new etcd is: the first write is 2.
    pub fn with_watch_buffer(buffer: usize) -> Self {
        MemoryBackend {
            state: Mutex::new(State {
                revision: Revision(1),
                compacted: Revision(0),
                keys: BTreeMap::new(),
                log: Vec::new(),
                watchers: Watchers::new(buffer),
            }),
        }
    }

    /// A store of its own holding what this one holds now: every key's history, the change
    /// log and the revisions, with no watcher. Writes to either are not seen by the other.
    pub fn snapshot(&self) -> MemoryBackend {
        let state = self.state();
        MemoryBackend {
            state: Mutex::new(State {
                revision: state.revision,
                compacted: state.compacted,
                keys: state.keys.clone(),
                log: state.log.clone(),
                watchers: Watchers::new(state.watchers.buffer()),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave a half-written state: every write
        // below changes the state only after its checks passed.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    /// The key's value at `revision`.
    fn at(&self, key: &[u8], revision: Revision) -> Option<&KeyValue> {
        let versions = self.keys.get(key)?;
        let version = versions.iter().rev().find(|v| v.revision <= revision)?;
        version.value.as_ref()
    }

    fn current(&self, key: &[u8]) -> Option<&KeyValue> {
        self.keys.get(key)?.last()?.value.as_ref()
    }

    /// Records a change at the next revision and tells the watchers.
    fn record(&mut self, key: &[u8], value: Option<KeyValue>, event: Event) {
        self.keys.entry(key.to_vec()).or_default().push(Version {
            revision: self.revision,
            value,
        });
        let event = std::sync::Arc::new(event);
        self.watchers.notify(&event);
        self.log.push(event);
    }

    fn next_revision(&mut self) -> Revision {
        self.revision = Revision(self.revision.0 + 1);
        self.revision
    }
}

impl Backend for MemoryBackend {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.state().revision)
    }

    async fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, StoreError> {
        Ok(self.state().current(key).cloned())
    }

    async fn list(&self, options: &ListOptions) -> Result<ListPage, StoreError> {
        let state = self.state();
        let revision = options.revision.unwrap_or(state.revision);
        readable(revision, state.revision, state.compacted)?;
        let start = if options.start.is_empty() {
            options.prefix.clone()
        } else {
            options.start.clone()
        };
        let mut live = state
            .keys
            .range(start..)
            .take_while(|(key, _)| key.starts_with(&options.prefix))
            .filter_map(|(key, _)| state.at(key, revision));
        let limit = if options.limit == 0 {
            usize::MAX
        } else {
            options.limit
        };
        let items: Vec<KeyValue> = live.by_ref().take(limit).cloned().collect();
        let next = live.next().map(|kv| kv.key.clone());
        let remaining = match next {
            Some(_) if options.count => 1 + live.count() as u64,
            _ => 0,
        };
        Ok(ListPage {
            items,
            revision,
            next,
            remaining,
        })
    }

    async fn create(&self, key: &[u8], value: Vec<u8>) -> Result<KeyValue, StoreError> {
        let mut state = self.state();
        if state.current(key).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        let revision = state.next_revision();
        let kv = KeyValue {
            key: key.to_vec(),
            value,
            create_revision: revision,
            mod_revision: revision,
        };
        let event = Event::Put {
            current: kv.clone(),
            previous: None,
        };
        state.record(key, Some(kv.clone()), event);
        Ok(kv)
    }

    async fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StoreError> {
        let mut state = self.state();
        let current = state.current(key).ok_or(StoreError::NotFound)?;
        if current.mod_revision != expected {
            return Err(StoreError::Conflict {
                expected,
                actual: current.mod_revision,
            });
        }
        let previous = current.clone();
        let revision = state.next_revision();
        let kv = KeyValue {
            key: key.to_vec(),
            value,
            create_revision: previous.create_revision,
            mod_revision: revision,
        };
        let event = Event::Put {
            current: kv.clone(),
            previous: Some(previous),
        };
        state.record(key, Some(kv.clone()), event);
        Ok(kv)
    }

    async fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StoreError> {
        let mut state = self.state();
        let current = state.current(key).ok_or(StoreError::NotFound)?.clone();
        if let Some(expected) = expected
            && current.mod_revision != expected
        {
            return Err(StoreError::Conflict {
                expected,
                actual: current.mod_revision,
            });
        }
        let revision = state.next_revision();
        let event = Event::Delete {
            previous: current.clone(),
            revision,
        };
        state.record(key, None, event);
        Ok((current, revision))
    }

    async fn watch(&self, prefix: &[u8], after: Revision) -> Result<Watch, StoreError> {
        let mut state = self.state();
        watchable(after, state.revision, state.compacted)?;
        let replay: Vec<std::sync::Arc<Event>> = state
            .log
            .iter()
            .filter(|e| e.revision() > after && e.key().starts_with(prefix))
            .cloned()
            .collect();
        Ok(state.watchers.subscribe(prefix, replay))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        let mut state = self.state();
        not_ahead(revision, state.revision)?;
        if revision <= state.compacted {
            return Ok(());
        }
        state.compacted = revision;
        // The change at the compaction point stays: a watch may start there.
        state.log.retain(|event| event.revision() >= revision);
        // Each key keeps the version readable at `revision` and later ones.
        state.keys.retain(|_, versions| {
            let keep_from = versions
                .iter()
                .rposition(|v| v.revision <= revision)
                .unwrap_or(0);
            versions.drain(..keep_from);
            // A key whose only version is a delete at or before the compaction is gone.
            !(versions.len() == 1
                && versions[0].value.is_none()
                && versions[0].revision <= revision)
        });
        Ok(())
    }
}
