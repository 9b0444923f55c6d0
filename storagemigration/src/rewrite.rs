//! A resource of the server's own store as `apfkit_migrator::engine` writes it back: a page
//! read at the newest revision, and each object written as kube-controller-manager's migrator
//! writes it through the API (a merge patch of nothing but its `apiVersion`, `kind` and
//! `resourceVersion`, field manager `storage-version-migrator-controller`): the stored object
//! with that precondition, prepared, validated and encoded again in the storage version, and
//! stored only if the bytes differ ([`Objects::write_back`]; the patch changes nothing, so
//! its field manager records nothing, as kube's records nothing).
//!
//! [`Objects::write_back`]: apfkit_apiserver::store::Objects::write_back

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::{ListRequest, Place, Served, SharedVersion, Stored};
use apfkit_migrator::engine::{self, Page, WriteBack};
use apfkit_runtime::Object;

/// One resource of `server`, written back in its preferred version.
pub(crate) struct StoreResource<H: 'static> {
    pub(crate) server: Arc<ApiServer<ServedObject<H>>>,
    pub(crate) served: Arc<Served<ServedObject<H>>>,
    /// The version the migrator's client reads and writes (the preferred one).
    pub(crate) codec: SharedVersion<ServedObject<H>>,
}

/// Whether an error is one kube-controller-manager's migrator waits out (`isRetriableError`:
/// throttling, timeouts, an unavailable or failing server) rather than fails on.
pub(crate) fn is_retriable(error: &ApiError) -> bool {
    matches!(error.code, 429 | 500 | 503 | 504)
}

impl<H> engine::Resource for StoreResource<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// A value as listed, and the object decoded from it.
    type Object = (Stored, ServedObject<H>);
    type Cursor = Vec<u8>;
    type Error = ApiError;

    async fn page(
        &self,
        from: Option<&Vec<u8>>,
        limit: u32,
    ) -> Result<Page<Self::Object, Vec<u8>>, ApiError> {
        let request = ListRequest {
            start: from.cloned().unwrap_or_default(),
            limit: limit as usize,
            ..ListRequest::default()
        };
        let objects = self.server.objects();
        let listed = objects.list_stored(&self.served, &request).await?;
        let decoded = listed
            .items
            .into_iter()
            .map(|stored| {
                let object = objects.decode_listed(&self.served, &stored)?;
                Ok((stored, object))
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(Page {
            objects: decoded,
            next: listed.next,
        })
    }

    async fn write_back(&self, (stored, object): &Self::Object) -> Result<WriteBack, ApiError> {
        let written = self
            .server
            .objects()
            .write_back(
                &self.served,
                stored,
                object.clone(),
                &self.codec.api_version(),
            )
            .await;
        match written {
            Ok(_) => Ok(WriteBack::Written),
            Err(error) if error.code == 404 => Ok(WriteBack::Gone),
            Err(error) if error.code == 409 => Ok(WriteBack::Conflict),
            Err(error) if is_retriable(&error) => Err(error),
            Err(error) => Ok(WriteBack::Refused(error.message)),
        }
    }

    async fn read_again(&self, object: &Self::Object) -> Result<Option<Self::Object>, ApiError> {
        let place = self.place(object);
        let place = Place {
            namespace: place.namespace.as_deref(),
            name: &place.name,
        };
        let objects = self.server.objects();
        match objects.get_stored(&self.served, place).await {
            Ok(stored) => {
                let object = objects.decode_listed(&self.served, &stored)?;
                Ok(Some((stored, object)))
            }
            Err(error) if error.code == 404 => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn place(&self, (_, object): &Self::Object) -> engine::Place {
        let metadata = object.metadata();
        engine::Place {
            namespace: metadata.namespace.clone(),
            name: metadata.name.clone().unwrap_or_default(),
        }
    }

    fn revision(&self, (stored, _): &Self::Object) -> Option<u64> {
        Some(stored.revision().0)
    }
}

impl<H> StoreResource<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The objects stored now, and those of them written at or before `checkpoint`: what
    /// kube-controller-manager's messages count (`totalObjects`, the candidates), read from
    /// the stored values' revisions without decoding them.
    pub(crate) async fn count(&self, checkpoint: u64) -> Result<(u64, u64), ApiError> {
        let mut request = ListRequest {
            limit: 1_000,
            ..ListRequest::default()
        };
        let (mut total, mut candidates) = (0, 0);
        loop {
            let page = self
                .server
                .objects()
                .list_stored(&self.served, &request)
                .await?;
            total += page.items.len() as u64;
            candidates += page
                .items
                .iter()
                .filter(|stored| stored.revision().0 <= checkpoint)
                .count() as u64;
            match page.next {
                Some(next) => request.start = next,
                None => return Ok((total, candidates)),
            }
        }
    }
}
