//! What the store hands out before decoding: an object as stored, and a watch's changes as the
//! backend saw them. Readers that may not need the object (a server that keeps the bytes it
//! wrote for a revision) decode it only when they must.

use std::sync::Arc;

use crate::error::{ApiError, Subject};
use crate::storage::{self, Event, KeyValue, Revision};

/// An object as the backend holds it: read, not yet decoded ([`Objects::decode_kept`],
/// [`Objects::decode_listed`]).
///
/// [`Objects::decode_kept`]: super::Objects::decode_kept
/// [`Objects::decode_listed`]: super::Objects::decode_listed
#[derive(Debug, Clone)]
pub struct Stored(pub(super) KeyValue);

impl Stored {
    /// Its storage key.
    pub fn key(&self) -> &[u8] {
        &self.0.key
    }

    /// The revision that last wrote it: its `resourceVersion`.
    pub fn revision(&self) -> Revision {
        self.0.mod_revision
    }

    /// Its size as stored, in bytes.
    pub fn size(&self) -> usize {
        self.0.value.len()
    }
}

/// A write a watch saw, not yet decoded ([`Objects::change`]).
///
/// [`Objects::change`]: super::Objects::change
#[derive(Debug, Clone)]
pub struct Watched(pub(super) Arc<Event>);

impl Watched {
    /// The storage key written.
    pub fn key(&self) -> &[u8] {
        self.0.key()
    }

    /// The revision of the write.
    pub fn revision(&self) -> Revision {
        self.0.revision()
    }
}

/// The changes to a resource's objects after a revision, in order ([`Objects::watch`]).
///
/// [`Objects::watch`]: super::Objects::watch
#[derive(Debug)]
pub struct Watch(pub(super) storage::Watch);

impl Watch {
    /// The next change; `None` when the watch ended, after an error when it ended because of
    /// one (a watcher that fell too far behind: 410 `Expired`, as kube-apiserver ends it).
    pub async fn next(&mut self) -> Option<Result<Watched, ApiError>> {
        Some(match self.0.next().await? {
            Ok(event) => Ok(Watched(event)),
            Err(error) => Err(ApiError::from_store(error, &Subject::default())),
        })
    }
}
