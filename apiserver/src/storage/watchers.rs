//! The watchers of one backend: each with a prefix and a bounded buffer; one that falls behind
//! by more than its buffer is ended with [`StoreError::WatchOverflow`], never buffered without
//! bound.

use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use super::{Event, StoreError, Watch};

/// Every open watch of a backend.
#[derive(Debug)]
pub(crate) struct Watchers {
    open: Vec<Watcher>,
    buffer: usize,
}

#[derive(Debug)]
struct Watcher {
    prefix: Vec<u8>,
    sender: mpsc::Sender<Event>,
    ended: Arc<OnceLock<StoreError>>,
}

impl Watchers {
    /// No watchers yet; each will hold up to `buffer` events.
    pub(crate) fn new(buffer: usize) -> Self {
        Watchers {
            open: Vec::new(),
            buffer: buffer.max(1),
        }
    }

    /// A new watch of `prefix` that first gets `replay` (the changes it missed), then every
    /// change [`Watchers::notify`] is told of. The caller holds the backend's write lock, so
    /// that no change falls between the two.
    pub(crate) fn subscribe(
        &mut self,
        prefix: &[u8],
        replay: impl IntoIterator<Item = Event>,
    ) -> Watch {
        let (sender, events) = mpsc::channel(self.buffer);
        let ended = Arc::new(OnceLock::new());
        for event in replay {
            if sender.try_send(event).is_err() {
                let _ = ended.set(StoreError::WatchOverflow {
                    buffer: self.buffer,
                });
                return Watch::new(events, ended);
            }
        }
        self.open.push(Watcher {
            prefix: prefix.to_vec(),
            sender,
            ended: Arc::clone(&ended),
        });
        Watch::new(events, ended)
    }

    /// Hands a change to every watch of its key; ends those that are full and forgets those
    /// that were dropped.
    pub(crate) fn notify(&mut self, event: &Event) {
        self.open.retain(|watcher| {
            if !event.key().starts_with(&watcher.prefix) {
                return !watcher.sender.is_closed();
            }
            match watcher.sender.try_send(event.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let buffer = watcher.sender.max_capacity();
                    let _ = watcher.ended.set(StoreError::WatchOverflow { buffer });
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }
}
