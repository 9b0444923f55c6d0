//! The sending side of watches: each a bounded buffer; a watch that falls behind by more than
//! its buffer is ended with [`StoreError::WatchOverflow`], never buffered without bound. One
//! event is shared by all the watches it goes to, not copied for each.

use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use super::{Event, StoreError, Watch};

/// The sending side of one watch.
#[derive(Debug)]
pub(crate) struct Feed {
    sender: mpsc::Sender<Arc<Event>>,
    ended: Arc<OnceLock<StoreError>>,
}

impl Feed {
    /// A watch holding up to `buffer` events, and the feed that fills it.
    pub(crate) fn open(buffer: usize) -> (Feed, Watch) {
        let (sender, events) = mpsc::channel(buffer.max(1));
        let ended = Arc::new(OnceLock::new());
        let feed = Feed {
            sender,
            ended: Arc::clone(&ended),
        };
        (feed, Watch::new(events, ended))
    }

    /// Hands `event` to the watch; `false` when the watch is over: dropped by its reader, or
    /// ended now because its buffer is full.
    pub(crate) fn deliver(&self, event: Arc<Event>) -> bool {
        match self.sender.try_send(event) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                let buffer = self.sender.max_capacity();
                self.end(StoreError::WatchOverflow { buffer });
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Ends the watch with `error`, which its reader gets after the events already buffered.
    pub(crate) fn end(&self, error: StoreError) {
        let _ = self.ended.set(error);
    }

    /// Whether the reader dropped the watch.
    fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// Every open watch of a backend that serves watches itself.
#[derive(Debug)]
pub(crate) struct Watchers {
    open: Vec<(Vec<u8>, Feed)>,
    buffer: usize,
}

impl Watchers {
    /// No watchers yet; each will hold up to `buffer` events.
    pub(crate) fn new(buffer: usize) -> Self {
        Watchers {
            open: Vec::new(),
            buffer,
        }
    }

    /// How many events each watcher may hold.
    pub(crate) fn buffer(&self) -> usize {
        self.buffer
    }

    /// A new watch of `prefix` that first gets `replay` (the changes it missed), then every
    /// change [`Watchers::notify`] is told of. The caller holds the backend's write lock, so
    /// that no change falls between the two.
    pub(crate) fn subscribe(
        &mut self,
        prefix: &[u8],
        replay: impl IntoIterator<Item = Arc<Event>>,
    ) -> Watch {
        let (feed, watch) = Feed::open(self.buffer);
        for event in replay {
            if !feed.deliver(event) {
                return watch;
            }
        }
        self.open.push((prefix.to_vec(), feed));
        watch
    }

    /// Hands a change to every watch of its key; forgets those that are over.
    pub(crate) fn notify(&mut self, event: &Arc<Event>) {
        self.open.retain(|(prefix, feed)| {
            if event.key().starts_with(prefix) {
                feed.deliver(Arc::clone(event))
            } else {
                !feed.is_closed()
            }
        });
    }
}
