//! The store's one handle on a backend, whatever its type: [`Backend`]'s calls with their
//! futures boxed, so that the store, and the HTTP handlers above it, are not generic over the
//! backend (a box per storage call, next to a network or disk round trip).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::storage::{Backend, KeyValue, ListOptions, ListPage, Revision, StoreError, Watch};

/// A backend's answer to come.
pub(super) type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// [`Backend`] as a trait object.
pub(super) trait AnyBackend: Send + Sync {
    fn current_revision(&self) -> Pending<'_, Revision>;
    fn get<'a>(&'a self, key: &'a [u8]) -> Pending<'a, Option<KeyValue>>;
    fn list<'a>(&'a self, options: &'a ListOptions) -> Pending<'a, ListPage>;
    fn create<'a>(&'a self, key: &'a [u8], value: Vec<u8>) -> Pending<'a, KeyValue>;
    fn update_read<'a>(&'a self, read: &'a KeyValue, value: Vec<u8>) -> Pending<'a, KeyValue>;
    fn delete<'a>(
        &'a self,
        key: &'a [u8],
        expected: Option<Revision>,
    ) -> Pending<'a, (KeyValue, Revision)>;
    fn watch<'a>(&'a self, prefix: &'a [u8], after: Revision) -> Pending<'a, Watch>;
}

impl<B: Backend> AnyBackend for B {
    fn current_revision(&self) -> Pending<'_, Revision> {
        Box::pin(Backend::current_revision(self))
    }
    fn get<'a>(&'a self, key: &'a [u8]) -> Pending<'a, Option<KeyValue>> {
        Box::pin(Backend::get(self, key))
    }
    fn list<'a>(&'a self, options: &'a ListOptions) -> Pending<'a, ListPage> {
        Box::pin(Backend::list(self, options))
    }
    fn create<'a>(&'a self, key: &'a [u8], value: Vec<u8>) -> Pending<'a, KeyValue> {
        Box::pin(Backend::create(self, key, value))
    }
    fn update_read<'a>(&'a self, read: &'a KeyValue, value: Vec<u8>) -> Pending<'a, KeyValue> {
        Box::pin(Backend::update_read(self, read, value))
    }
    fn delete<'a>(
        &'a self,
        key: &'a [u8],
        expected: Option<Revision>,
    ) -> Pending<'a, (KeyValue, Revision)> {
        Box::pin(Backend::delete(self, key, expected))
    }
    fn watch<'a>(&'a self, prefix: &'a [u8], after: Revision) -> Pending<'a, Watch> {
        Box::pin(Backend::watch(self, prefix, after))
    }
}

/// A backend shared by the store and whoever else holds it.
pub(super) type SharedBackend = Arc<dyn AnyBackend>;
