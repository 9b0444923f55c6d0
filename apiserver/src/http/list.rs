//! LIST of a resource (`k8s.io/apiserver/pkg/endpoints/handlers/get.go`, `ListResource`):
//! pages at a revision with continue tokens, selectors, tables, and long lists streamed while
//! they are read.

use std::sync::Arc;

use apfkit_runtime::Object;
use apfkit_runtime::scheme::Encoding;
use axum::body::Bytes;
use axum::response::Response;

use super::media::{self, Format};
use super::query::{self, Query, ReadAt};
use super::request::Target;
use super::response::{Transform, content_type, encode, list_body, respond, transformed, written};
use super::server::ApiServer;
use crate::error::ApiError;
use crate::store::{ListRequest, Objects, Revision, Served, Stored, VersionCodec};
use serde_json::Value;

pub(super) async fn list<H>(
    server: &Arc<ApiServer<H>>,
    target: &Target<H>,
    query: &Query,
    format: Format,
    transform: Option<Transform>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (start, revision) = list_start(server, query).await?;
    let filtered = query.has_selectors();
    let page = server
        .objects
        .list_matching(
            &target.served,
            &ListRequest {
                namespace: target.namespace.as_deref(),
                start,
                limit: query.limit,
                revision,
                count: !filtered,
            },
            |object| !filtered || selected(query, target.codec(), object),
        )
        .await
        .map_err(|error| list_expired(error, query))?;
    let items = server
        .objects
        .read_page_as(&target.served, page.items, target.codec())?;
    let mut metadata = list_metadata(&target.served);
    metadata.insert("resourceVersion".into(), page.revision.to_string().into());
    if let Some(next) = &page.next {
        metadata.insert(
            "continue".into(),
            query::continue_token(Some(page.revision), next).into(),
        );
        // kube-apiserver leaves the count out when a selector filtered the page.
        if !filtered {
            metadata.insert("remainingItemCount".into(), page.remaining.into());
        }
    }
    if let Some(transform) = transform {
        // A table's or a metadata list's `ListMeta` is typed: no empty `continue`, whatever
        // the resource's own list has.
        if metadata.get("continue").and_then(Value::as_str) == Some("") {
            metadata.remove("continue");
        }
        let answer = transformed(target, items, transform, Value::Object(metadata), true)?;
        return Ok(respond(
            200,
            content_type(format),
            written(&answer, format)?,
        ));
    }
    let items = items
        .into_iter()
        .map(|object| encode(target.codec(), object, Format::Json))
        .collect::<Result<Vec<_>, _>>()?;
    let body = list_body(
        server.objects.wire(),
        target,
        Value::Object(metadata),
        &items,
        format,
    )?;
    Ok(respond(200, content_type(format), body))
}

/// Where a list starts and the revision it reads at, from `continue` and `resourceVersion`:
/// a legacy `resourceVersion` (no `resourceVersionMatch`) with a `limit` reads at exactly
/// that revision, as kube-apiserver's storage does (k8s.io/apiserver/pkg/storage/interfaces.go,
/// `ValidateListOptions`; `RunTestList`'s "test List with limit at current resource version").
pub(super) async fn list_start<H>(
    server: &ApiServer<H>,
    query: &Query,
) -> Result<(Vec<u8>, Option<Revision>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    Ok(match (&query.resume, query.read_at) {
        (Some(resume), _) => (resume.start.clone(), resume.revision),
        (None, ReadAt::Exact(revision)) => (Vec::new(), Some(revision)),
        (None, ReadAt::NotOlderThan(revision))
            if query.limit > 0 && query.resource_version_match.is_empty() =>
        {
            (Vec::new(), Some(revision))
        }
        (None, ReadAt::NotOlderThan(revision)) => {
            not_ahead(server, revision).await?;
            (Vec::new(), None)
        }
        (None, ReadAt::Newest | ReadAt::Any) => (Vec::new(), None),
    })
}

/// Refuses a revision ahead of the store's as kube-apiserver does once it has waited for its
/// cache in vain: 504 `Timeout`, "Too large resource version".
pub(super) async fn not_ahead<H>(server: &ApiServer<H>, wanted: Revision) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let current = server.objects.current_revision().await?;
    if wanted > current {
        return Err(ApiError::timeout(format!(
            "Too large resource version: {wanted}, current: {current}"
        )));
    }
    Ok(())
}

/// A list of a compacted revision in kube-apiserver's words
/// (k8s.io/apiserver/pkg/storage/etcd3/store.go, `interpretListError`); one asked for by a
/// continue token with its "inconsistent" continue token, which goes on from the same key at
/// the newest revision (`handleCompactedErrorForPaging`).
pub(super) fn list_expired(error: ApiError, query: &Query) -> ApiError {
    match (error.code, &query.resume) {
        (410, None) => ApiError::expired("The resourceVersion for the provided list is too old."),
        (410, Some(resume)) => ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter, or use the continue \
             token in this response to retrieve the remainder of the results. Continuing with \
             the provided token results in an inconsistent list - objects that were created, \
             modified, or deleted between the time the first chunk was returned and now may \
             show up in the list.",
        )
        .with_list_continue(query::continue_token(None, &resume.start)),
        _ => error,
    }
}

/// Objects a streamed list reads from storage at a time.
pub(super) const STREAM_PAGE: usize = 500;

/// Whether a list is streamed: all of its objects, or more than a page of them unfiltered
/// (a filtered page with a limit reads on until it holds that many objects that match,
/// [`Objects::list_matching`]).
pub(super) fn streams(query: &Query) -> bool {
    query.limit == 0 || (query.limit > STREAM_PAGE && !query.has_selectors())
}

/// Objects written into one chunk of a streamed list's body (about 60 KiB of FlowSchemas):
/// the writer yields between chunks.
pub(super) const STREAM_CHUNK: usize = 100;

/// A JSON list written while it is read, a page of [`STREAM_PAGE`] objects at a time at one
/// revision, so that its memory does not grow with its length. One task reads and decodes the
/// pages while another writes them, one page ahead at most. The list's `metadata` comes after
/// its items (JSON decoders take keys in any order), once the continue token is known. The
/// first page is read and decoded before answering, so that its errors are a `Status`; a
/// later storage or decoding error cuts the body short, which clients see as a broken list
/// (docs/decisions.md).
pub(super) async fn stream_list<H>(
    server: &Arc<ApiServer<H>>,
    target: &Target<H>,
    query: &Query,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (start, revision) = list_start(server, query).await?;
    let limit = query.limit;
    let first = server
        .objects
        .list_stored(
            &target.served,
            &stream_page(target.namespace.as_deref(), start, revision, limit, 0),
        )
        .await
        .map_err(|error| list_expired(error, query))?;
    let revision = first.revision;
    // The first page decoded now: an object that does not decode is a 500 `Status`, as
    // kube-apiserver answers a list it cannot decode (`RunTestTransformationFailure`).
    let decoded = server.objects.decode_page(&target.served, &first.items)?;
    let decoded = server
        .objects
        .read_page_as(&target.served, decoded, target.codec())?;
    let first = StreamPage {
        items: StreamItems::Decoded(decoded),
        next: first.next,
        remaining: first.remaining,
    };
    let (pages, mut read) = tokio::sync::mpsc::channel::<StreamPage<H>>(1);
    let reader = {
        let server = server.clone();
        let namespace = target.namespace.clone();
        let served = target.served.clone();
        tokio::spawn(async move {
            let served = &served;
            let mut listed = first.items.len();
            let mut next = first.next.clone();
            if pages.send(first).await.is_err() {
                return;
            }
            while let Some(start) = next.filter(|_| limit == 0 || listed < limit) {
                let request =
                    stream_page(namespace.as_deref(), start, Some(revision), limit, listed);
                let page = match server.objects.list_stored(served, &request).await {
                    Ok(page) => page,
                    // Cut short: the writer ends the body without closing the list.
                    Err(_) => return,
                };
                listed += page.items.len();
                next = page.next.clone();
                let page = StreamPage {
                    items: StreamItems::Stored(page.items),
                    next: page.next,
                    remaining: page.remaining,
                };
                if pages.send(page).await.is_err() {
                    return;
                }
            }
        })
    };
    let (served, version) = (target.served.clone(), target.version);
    let query = query.clone();
    let server = server.clone();
    let (chunks, body) = tokio::sync::mpsc::channel::<Result<Bytes, std::convert::Infallible>>(4);
    tokio::spawn(async move {
        let served = &served;
        let codec = &*served.versions[version];
        let filtered = query.has_selectors();
        let mut head = Vec::new();
        head.extend_from_slice(b"{\"kind\":");
        let _ = serde_json::to_writer(&mut head, &served.list_kind());
        head.extend_from_slice(b",\"apiVersion\":");
        let _ = serde_json::to_writer(&mut head, &codec.api_version());
        head.extend_from_slice(b",\"items\":[");
        if chunks.send(Ok(Bytes::from(head))).await.is_err() {
            return;
        }
        let mut listed = 0;
        let mut written = 0usize;
        let mut item = Vec::new();
        while let Some(page) = read.recv().await {
            listed += page.items.len();
            let mut items = page.items.into_objects(&server.objects, served).peekable();
            while items.peek().is_some() {
                let mut chunk = Vec::new();
                for object in items.by_ref().take(STREAM_CHUNK) {
                    // A later page's object that does not decode cuts the body short.
                    let Ok(object) = object else {
                        return;
                    };
                    if filtered && !selected(&query, codec, &object) {
                        continue;
                    }
                    if written > 0 {
                        chunk.push(b',');
                    }
                    // A custom resource's item as it is; a built-in kind's without its type
                    // fields, through one buffer for the whole stream.
                    let into = if served.config.custom {
                        &mut chunk
                    } else {
                        item.clear();
                        &mut item
                    };
                    let Ok(()) = codec.encode_into(object, Encoding::Json, into, &mut Vec::new())
                    else {
                        return;
                    };
                    if !served.config.custom {
                        super::response::push_typed_item(&item, &mut chunk);
                    }
                    written += 1;
                }
                if !chunk.is_empty() && chunks.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
            }
            let more = page.next.as_ref().filter(|_| limit == 0 || listed < limit);
            if more.is_some() {
                continue;
            }
            let mut metadata = list_metadata(served);
            metadata.insert("resourceVersion".into(), revision.to_string().into());
            if let Some(next) = &page.next {
                metadata.insert(
                    "continue".into(),
                    query::continue_token(Some(revision), next).into(),
                );
                if !filtered {
                    metadata.insert("remainingItemCount".into(), page.remaining.into());
                }
            }
            let mut tail = b"],\"metadata\":".to_vec();
            let _ = serde_json::to_writer(&mut tail, &metadata);
            tail.push(b'}');
            let _ = chunks.send(Ok(Bytes::from(tail))).await;
            return;
        }
        // The reader stopped early (a storage error): the body ends inside the list.
        reader.abort();
    });
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(body));
    let mut response = respond(200, media::JSON, body);
    response.extensions_mut().insert(super::Streamed);
    Ok(response)
}

/// A page of a streamed list, all read at the list's revision.
pub(super) struct StreamPage<H> {
    items: StreamItems<H>,
    /// Where the next page starts, when there are more keys.
    next: Option<Vec<u8>>,
    /// How many keys the next pages hold, when counted.
    remaining: u64,
}

/// A streamed page's objects: the first page's decoded before answering, the others' as
/// stored, to be decoded just before they are written, on the writer's thread.
pub(super) enum StreamItems<H> {
    Decoded(Vec<H>),
    Stored(Vec<Stored>),
}

impl<H> StreamItems<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    fn len(&self) -> usize {
        match self {
            StreamItems::Decoded(objects) => objects.len(),
            StreamItems::Stored(values) => values.len(),
        }
    }

    /// The page's objects in order, each decoded if it was not.
    fn into_objects<'a>(
        self,
        objects: &'a Objects<H>,
        served: &'a Served<H>,
    ) -> Box<dyn Iterator<Item = Result<H, ApiError>> + Send + 'a> {
        match self {
            StreamItems::Decoded(decoded) => Box::new(decoded.into_iter().map(Ok)),
            StreamItems::Stored(values) => Box::new(
                values
                    .into_iter()
                    .map(move |stored| objects.decode_listed(served, &stored)),
            ),
        }
    }
}

/// The request for a streamed list's page after `listed` items: at most a page, or what is
/// left of `limit`; counted when it is the page that reaches the limit.
pub(super) fn stream_page(
    namespace: Option<&str>,
    start: Vec<u8>,
    revision: Option<Revision>,
    limit: usize,
    listed: usize,
) -> ListRequest<'_> {
    ListRequest {
        namespace,
        start,
        limit: match limit {
            0 => STREAM_PAGE,
            limit => STREAM_PAGE.min(limit - listed),
        },
        revision,
        count: limit != 0 && listed + STREAM_PAGE >= limit,
    }
}

/// Whether an object passes the query's selectors, its fields other than its name and
/// namespace read as they are in `codec`'s version.
pub(super) fn selected<H: Object>(query: &Query, codec: &dyn VersionCodec<H>, object: &H) -> bool {
    let meta = object.metadata();
    query.labels.matches(meta.labels.as_ref())
        && query.fields.matches(
            meta.name.as_deref().unwrap_or_default(),
            meta.namespace.as_deref().unwrap_or_default(),
            |field| codec.field_value(object, field),
        )
}

/// Refuses a field selector on a label the URL's version does not support, as
/// kube-apiserver does (400, in the words of the kind's field label conversion).
pub(super) fn check_field_labels<H>(target: &Target<H>, query: &Query) -> Result<(), ApiError> {
    query
        .fields
        .fields()
        .try_for_each(|field| target.codec().convert_field_label(field))
        .map_err(ApiError::bad_request)
}

/// A list's metadata before its version and token: a custom resource's list is an
/// unstructured one in kube-apiserver, whose `continue` is there even when empty.
pub(super) fn list_metadata<H>(served: &Served<H>) -> serde_json::Map<String, Value> {
    let mut metadata = serde_json::Map::new();
    if served.config.custom {
        metadata.insert("continue".into(), "".into());
    }
    metadata
}
