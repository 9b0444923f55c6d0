//! The verbs on a resource: get, list, create, update, patch, delete, deletecollection, and the
//! `/status` subresource, as kube-apiserver's REST handlers answer them
//! (`k8s.io/apiserver/pkg/endpoints/handlers`).

use std::sync::Arc;

use apfkit_runtime::Object;
use apfkit_runtime::scheme::{Document, Encoding, ErrorKind, ReadError, UnknownFields};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::response::Response;
use serde_json::Value;

use super::media::{self, Format, Wanted};
use super::query::{self, IncludeObject, Query, ReadAt};
use super::written::Writing;
use super::{ApiServer, MAX_BODY_BYTES, content_type, respond, with_warnings};
use crate::error::ApiError;
use crate::objects::{ListRequest, Objects, Place, Preconditions, UpdateKind};
use crate::resource::{Served, VersionCodec};
use crate::storage::{Backend, KeyValue};

/// What a resource request is about.
pub(super) struct Target<H: 'static> {
    pub(super) served: Arc<Served<H>>,
    /// The index of the URL's version in the resource's versions.
    pub(super) version: usize,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) status: bool,
    /// The `/scale` subresource.
    pub(super) scale: bool,
}

impl<H> Target<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// Parses `<plural>[/<name>[/status]]` or `namespaces/<ns>/<plural>[/...]` under
    /// `/apis/<group>/<version>`.
    pub(super) fn parse(
        catalog: &super::Catalog<H>,
        group: &str,
        version: &str,
        rest: &[&str],
    ) -> Result<Self, ApiError> {
        let (namespace, plural, tail) = match rest {
            ["namespaces", namespace, plural, tail @ ..]
                if catalog
                    .served(group, plural)
                    .is_some_and(|s| s.config.namespaced) =>
            {
                (Some((*namespace).to_owned()), *plural, tail)
            }
            [plural, tail @ ..] => (None, *plural, tail),
            [] => return Err(ApiError::no_route()),
        };
        let served = catalog
            .served(group, plural)
            .cloned()
            .ok_or_else(ApiError::no_route)?;
        let version = served
            .versions
            .iter()
            .position(|c| c.version() == version)
            .ok_or_else(ApiError::no_route)?;
        let (name, status, scale) = match tail {
            [] => (None, false, false),
            [name] => (Some((*name).to_owned()), false, false),
            [name, "status"] if served.config.status => (Some((*name).to_owned()), true, false),
            [name, "scale"] if served.config.scale.is_some() => {
                (Some((*name).to_owned()), false, true)
            }
            _ => return Err(ApiError::no_route()),
        };
        if served.config.namespaced && namespace.is_none() && name.is_some() {
            return Err(ApiError::no_route());
        }
        if name.as_deref().is_some_and(str::is_empty) {
            return Err(ApiError::no_route());
        }
        Ok(Target {
            served,
            version,
            namespace,
            name,
            status,
            scale,
        })
    }
}

impl<H> Target<H> {
    /// The codec of the URL's version.
    pub(super) fn codec(&self) -> &dyn VersionCodec<H> {
        &*self.served.versions[self.version]
    }

    pub(super) fn place(&self) -> Place<'_> {
        Place {
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref().unwrap_or_default(),
        }
    }
}

/// Which of a resource's paths a request came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Path {
    /// `/apis/G/V/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]`.
    Resource,
    /// The deprecated `/apis/G/V/watch/[namespaces/NS/]RESOURCE[/NAME]`: a watch of the
    /// collection, of the one object when named.
    Watch,
}

/// Serves one resource request.
pub(super) async fn serve<H, B>(
    server: &Arc<ApiServer<H, B>>,
    mut target: Target<H>,
    request: Request,
    path: Path,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    if path == Path::Watch && (target.status || target.scale) {
        return Err(ApiError::no_route());
    }
    if let (true, Some(paths)) = (target.scale, target.served.config.scale.as_ref()) {
        return super::scale::serve(server, &target, paths, request).await;
    }
    let mut query = Query::parse(request.uri().query())?;
    if path == Path::Watch {
        query.watch = true;
        // kube-apiserver watches a named object through a `metadata.name` field selector
        // (k8s.io/apiserver/pkg/endpoints/handlers/get.go, ListResource).
        if let Some(name) = target.name.take() {
            query.fields = std::mem::take(&mut query.fields)
                .for_name(&name)
                .map_err(ApiError::bad_request)?;
        }
    }
    if target.name.is_none() && request.method() == Method::GET {
        query.validate()?;
    }
    check_field_labels(&target, &query)?;
    let accept = header_text(&request, header::ACCEPT);
    let request_type = header_text(&request, header::CONTENT_TYPE);
    let user_agent = header_text(&request, header::USER_AGENT);
    let method = request.method().clone();
    let reads = method == Method::GET;
    let protobuf = server.objects.wire().writes_protobuf() && target.served.protobuf();
    let (format, table) = match media::negotiate(accept.as_deref(), reads, false, protobuf)? {
        Wanted::Object(format) => (format, None),
        Wanted::Table(format, api_version) => (
            format,
            Some(AsTable {
                include: query.include_object,
                api_version,
            }),
        ),
        Wanted::Discovery(_) => return Err(ApiError::not_acceptable(&[media::JSON])),
    };
    match (method, target.name.is_some()) {
        (Method::GET, false) if query.watch => {
            Ok(super::watch::watch(server.clone(), &target, query, format, table).await)
        }
        (Method::GET, false) if format == Format::Json && table.is_none() && streams(&query) => {
            stream_list(server, &target, &query).await
        }
        (Method::GET, false) => list(server, &target, &query, format, table).await,
        (Method::GET, true) => get(server, &target, &query, format, table).await,
        (method @ (Method::POST | Method::PUT | Method::PATCH), named)
            if (method == Method::POST) != named =>
        {
            let body = read_body(request).await?;
            let write = Write {
                target: &target,
                query: &query,
                content_type: request_type.as_deref(),
                user_agent: user_agent.as_deref(),
                body: &body,
                format,
            };
            match method {
                Method::POST => create(server, &write).await,
                Method::PUT => update(server, &write).await,
                _ => patch(server, &write).await,
            }
        }
        (Method::DELETE, true) => {
            let body = read_body(request).await?;
            delete(server, &target, &query, &body).await
        }
        (Method::DELETE, false) => delete_collection(server, &target, &query, format).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// A write's request: what it is about and its body.
struct Write<'a, H: 'static> {
    target: &'a Target<H>,
    query: &'a Query,
    content_type: Option<&'a str>,
    user_agent: Option<&'a str>,
    body: &'a [u8],
    format: Format,
}

/// The manager a write records: `fieldManager` (checked as kube-apiserver checks it, the
/// options named by `options`) or the user agent's first word.
fn writer_of<H>(write: &Write<'_, H>, options: &str) -> Result<String, ApiError> {
    let given = write.query.field_manager.as_deref();
    let causes = given
        .map(crate::fields::field_manager_causes)
        .unwrap_or_default();
    if !causes.is_empty() {
        return Err(invalid_options(options, causes));
    }
    Ok(crate::fields::manager_name(given, write.user_agent))
}

/// 422 about a request's options (`PatchOptions.meta.k8s.io "" is invalid: ...`).
fn invalid_options(options: &str, causes: Vec<crate::error::Cause>) -> ApiError {
    let subject = crate::error::Subject {
        group: "meta.k8s.io".to_owned(),
        kind: options.to_owned(),
        name: String::new(),
    };
    ApiError::invalid(&subject, causes)
}

/// A header's value, when it is text.
pub(super) fn header_text(request: &Request, name: header::HeaderName) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Bytes past the body limit read and dropped before a 413 is answered, so that the client,
/// still sending, reads the answer instead of a reset (Go's HTTP server reads up to 256 KiB
/// of an unread body for the same reason).
const DRAIN_BYTES: usize = 256 << 10;

/// Reads a request body of at most [`MAX_BODY_BYTES`]; a longer one (declared or sent) is
/// drained up to [`DRAIN_BYTES`] more and answered 413.
pub(super) async fn read_body(request: Request) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt as _;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut too_large = declared.is_some_and(|length| length > MAX_BODY_BYTES as u64);
    let mut body = request.into_body();
    let mut kept = Vec::new();
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        read += data.len();
        if read > MAX_BODY_BYTES {
            too_large = true;
        }
        if too_large {
            kept = Vec::new();
            if read > MAX_BODY_BYTES + DRAIN_BYTES {
                break;
            }
        } else {
            kept.extend_from_slice(&data);
        }
    }
    if too_large {
        return Err(ApiError::too_large(MAX_BODY_BYTES));
    }
    Ok(Bytes::from(kept))
}

/// Reads and drops what a client sends of a body that is refused before it is read (up to
/// [`DRAIN_BYTES`], for at most a second), so that an HTTP/2 client still sending reads the
/// answer rather than a reset of its stream.
pub(super) async fn drain(body: axum::body::Body) {
    use http_body_util::BodyExt as _;
    let mut body = body;
    let draining = async {
        let mut read = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), draining).await;
}

/// An object in the URL's version, written as `format` asks.
fn encode<H>(codec: &dyn VersionCodec<H>, object: H, format: Format) -> Result<Vec<u8>, ApiError> {
    codec
        .encode_to(object, format.encoding(), &mut Vec::new())
        .map_err(ApiError::internal)
}

fn object_response<H>(
    code: u16,
    codec: &dyn VersionCodec<H>,
    object: H,
    format: Format,
    warnings: &[String],
) -> Result<Response, ApiError> {
    let body = encode(codec, object, format)?;
    Ok(with_warnings(
        respond(code, content_type(format), body),
        warnings,
    ))
}

async fn get<H, B>(
    server: &ApiServer<H, B>,
    target: &Target<H>,
    query: &Query,
    format: Format,
    table: Option<AsTable>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    // A resourceVersion is "not older than" for a get (store_tests.go, RunTestGet).
    if let ReadAt::NotOlderThan(wanted) | ReadAt::Exact(wanted) = query.read_at {
        not_ahead(server, wanted).await?;
    }
    let kv = server
        .objects
        .get_stored(&target.served, target.place())
        .await?;
    if let Some(as_table) = table {
        let object = server.objects.decode_kept(&target.served, &kv)?;
        let metadata = serde_json::json!({
            "resourceVersion": object.metadata().resource_version,
        });
        let table = table_of(target, vec![object], as_table, metadata)?;
        return Ok(respond(200, content_type(format), written(&table, format)?));
    }
    // Written once per revision, version and format, for every GET that asks alike.
    let how = (
        target.served.codec_id(target.version),
        format,
        Writing::Object,
    );
    let body = server
        .written
        .get_or_write(&kv.key, kv.mod_revision, how, || {
            let object = server.objects.decode_kept(&target.served, &kv)?;
            Ok(Bytes::from(encode(target.codec(), object, format)?))
        })?;
    Ok(respond(200, content_type(format), body))
}

/// A JSON value written as `format` asks (JSON or YAML).
pub(super) fn written(value: &Value, format: Format) -> Result<Vec<u8>, ApiError> {
    match format {
        Format::Yaml => serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .map_err(ApiError::internal),
        _ => serde_json::to_vec(value).map_err(ApiError::internal),
    }
}

/// A `Table` asked for: what each row carries of its object, and the `apiVersion` of
/// `meta.k8s.io` it is written in (with its rows' `PartialObjectMetadata`), as kube-apiserver
/// writes the version the client asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsTable {
    pub(super) include: IncludeObject,
    pub(super) api_version: &'static str,
}

/// A `Table` of `objects` with the resource's printer (or the default columns), rows in the
/// printer's order, each row carrying what `includeObject` asks for.
pub(super) fn table_of<H: Object + Clone>(
    target: &Target<H>,
    objects: Vec<H>,
    as_table: AsTable,
    metadata: Value,
) -> Result<Value, ApiError> {
    let printer = target.served.config.printer.as_ref();
    let printed_in = printer
        .and_then(|p| target.served.version(&p.version))
        .unwrap_or(target.codec());
    let mut printed = Vec::with_capacity(objects.len());
    for object in objects {
        let value = printed_in
            .encode(object.clone(), &mut Vec::new())
            .map_err(ApiError::internal)?;
        printed.push((value, object));
    }
    if let Some(order) = printer.and_then(|p| p.order) {
        printed.sort_by(|(a, _), (b, _)| order(a, b));
    }
    let mut rows = Vec::with_capacity(printed.len());
    for (value, object) in printed {
        let cells = match printer {
            Some(printer) => (printer.cells)(&value),
            None => crate::table::default_cells(&value),
        };
        let mut row = serde_json::json!({"cells": cells});
        match as_table.include {
            IncludeObject::None => {}
            IncludeObject::Metadata => {
                row["object"] = serde_json::json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": as_table.api_version,
                    "metadata": value.get("metadata").cloned().unwrap_or_default(),
                });
            }
            IncludeObject::Object => {
                row["object"] = target
                    .codec()
                    .encode(object, &mut Vec::new())
                    .map_err(ApiError::internal)?;
            }
        }
        rows.push(row);
    }
    let columns = printer.map_or(crate::table::DEFAULT_COLUMNS, |p| &p.columns);
    Ok(serde_json::json!({
        "kind": "Table",
        "apiVersion": as_table.api_version,
        "metadata": metadata,
        "columnDefinitions": crate::table::column_definitions(columns),
        "rows": rows,
    }))
}

async fn list<H, B>(
    server: &Arc<ApiServer<H, B>>,
    target: &Target<H>,
    query: &Query,
    format: Format,
    table: Option<AsTable>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
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
    let mut metadata = serde_json::Map::new();
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
    if let Some(as_table) = table {
        let table = table_of(target, page.items, as_table, Value::Object(metadata))?;
        return Ok(respond(200, content_type(format), written(&table, format)?));
    }
    let items = page
        .items
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
async fn list_start<H, B>(
    server: &ApiServer<H, B>,
    query: &Query,
) -> Result<(Vec<u8>, Option<crate::storage::Revision>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
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
pub(super) async fn not_ahead<H, B>(
    server: &ApiServer<H, B>,
    wanted: crate::storage::Revision,
) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
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
fn list_expired(error: ApiError, query: &Query) -> ApiError {
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
const STREAM_PAGE: usize = 500;

/// Whether a list is streamed: all of its objects, or more than a page of them unfiltered
/// (a filtered page with a limit reads on until it holds that many objects that match,
/// [`Objects::list_matching`]).
fn streams(query: &Query) -> bool {
    query.limit == 0 || (query.limit > STREAM_PAGE && !query.has_selectors())
}

/// Objects written into one chunk of a streamed list's body (about 60 KiB of FlowSchemas):
/// the writer yields between chunks.
const STREAM_CHUNK: usize = 100;

/// A JSON list written while it is read, a page of [`STREAM_PAGE`] objects at a time at one
/// revision, so that its memory does not grow with its length. One task reads and decodes the
/// pages while another writes them, one page ahead at most. The list's `metadata` comes after
/// its items (JSON decoders take keys in any order), once the continue token is known. The
/// first page is read and decoded before answering, so that its errors are a `Status`; a
/// later storage or decoding error cuts the body short, which clients see as a broken list
/// (docs/decisions.md).
async fn stream_list<H, B>(
    server: &Arc<ApiServer<H, B>>,
    target: &Target<H>,
    query: &Query,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
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
    let decoded = first
        .items
        .iter()
        .map(|kv| server.objects.decode_listed(&target.served, kv))
        .collect::<Result<Vec<_>, _>>()?;
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
                    let Ok(()) =
                        codec.encode_into(object, Encoding::Json, &mut chunk, &mut Vec::new())
                    else {
                        return;
                    };
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
            let mut metadata = serde_json::Map::new();
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
    Ok(respond(200, media::JSON, body))
}

/// A page of a streamed list, all read at the list's revision.
struct StreamPage<H> {
    items: StreamItems<H>,
    /// Where the next page starts, when there are more keys.
    next: Option<Vec<u8>>,
    /// How many keys the next pages hold, when counted.
    remaining: u64,
}

/// A streamed page's objects: the first page's decoded before answering, the others' as
/// stored, to be decoded just before they are written, on the writer's thread.
enum StreamItems<H> {
    Decoded(Vec<H>),
    Stored(Vec<KeyValue>),
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
    fn into_objects<'a, B: Backend + 'static>(
        self,
        objects: &'a Objects<H, B>,
        served: &'a Served<H>,
    ) -> Box<dyn Iterator<Item = Result<H, ApiError>> + Send + 'a> {
        match self {
            StreamItems::Decoded(decoded) => Box::new(decoded.into_iter().map(Ok)),
            StreamItems::Stored(values) => Box::new(
                values
                    .into_iter()
                    .map(move |kv| objects.decode_listed(served, &kv)),
            ),
        }
    }
}

/// The request for a streamed list's page after `listed` items: at most a page, or what is
/// left of `limit`; counted when it is the page that reaches the limit.
fn stream_page(
    namespace: Option<&str>,
    start: Vec<u8>,
    revision: Option<crate::storage::Revision>,
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
/// kube-apiserver does (400, `field label not supported: spec.x`).
fn check_field_labels<H>(target: &Target<H>, query: &Query) -> Result<(), ApiError> {
    match query
        .fields
        .fields()
        .find(|field| !target.codec().selects_field(field))
    {
        Some(field) => Err(ApiError::bad_request(format!(
            "field label not supported: {field}"
        ))),
        None => Ok(()),
    }
}

/// A `<Kind>List` around items already written as compact JSON.
fn list_body<H>(
    scheme: &apfkit_runtime::scheme::Scheme<()>,
    target: &Target<H>,
    metadata: Value,
    items: &[Vec<u8>],
    format: Format,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(items.iter().map(Vec::len).sum::<usize>() + 256);
    body.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut body, &target.served.list_kind()).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut body, &target.codec().api_version()).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut body, &metadata).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    match format {
        Format::Json => Ok(body),
        Format::Yaml => {
            let value: Value = serde_json::from_slice(&body).map_err(ApiError::internal)?;
            serde_saphyr::to_string(&value)
                .map(String::into_bytes)
                .map_err(ApiError::internal)
        }
        Format::Protobuf => {
            let value: Value = serde_json::from_slice(&body).map_err(ApiError::internal)?;
            scheme
                .encode_value(&value, apfkit_runtime::scheme::Encoding::Protobuf)
                .map_err(ApiError::internal)
        }
    }
}

/// A request body, read as `Content-Type` says, as the URL's kind: missing `apiVersion` and
/// `kind` taken from the URL, others refused; fields reported as `fieldValidation` says.
fn decode_body<H, B>(
    server: &ApiServer<H, B>,
    write: &Write<'_, H>,
) -> Result<(H, Vec<String>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let (target, query, body) = (write.target, write.query, write.body);
    let format = media::body_format(write.content_type)?;
    if format == Format::Protobuf && !target.served.protobuf() {
        return Err(ApiError::unsupported_media_type(format.media_type()));
    }
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let looks_right = match format {
        Format::Json => start.is_some_and(|i| body[i] == b'{'),
        Format::Protobuf => body.starts_with(apfkit_runtime::scheme::PROTOBUF_PREFIX),
        Format::Yaml => start.is_some(),
    };
    if !looks_right {
        return Err(ApiError::bad_request(format!(
            "the body is not a {} object",
            format.media_type()
        )));
    }
    let mut documents = Vec::new();
    server
        .objects
        .wire()
        .read_values(body, &server.body_limits, |document| {
            documents.push(document);
            Ok::<(), ReadError>(())
        })
        .map_err(|error| ApiError::bad_request(error.error.to_string()))?;
    let [document] = <[_; 1]>::try_from(documents).map_err(|documents| {
        ApiError::bad_request(format!(
            "the body holds {} documents; one object was expected",
            documents.len()
        ))
    })?;
    decode_document(target, query, document)
}

/// A read document as the URL's kind; see [`decode_body`].
fn decode_document<H>(
    target: &Target<H>,
    query: &Query,
    document: Document,
) -> Result<(H, Vec<String>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut value = document.value.clone();
    let Value::Object(map) = &mut value else {
        return Err(ApiError::bad_request("the body is not an object"));
    };
    let expected_version = target.codec().api_version();
    match map.get("apiVersion") {
        None => {
            map.insert("apiVersion".into(), expected_version.clone().into());
        }
        Some(Value::String(v)) if *v == expected_version => {}
        Some(other) => {
            let found = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({found}) does not match the expected API version \
                 ({expected_version})"
            )));
        }
    }
    match map.get("kind") {
        None => {
            map.insert("kind".into(), target.codec().kind().into());
        }
        Some(Value::String(k)) if k == target.codec().kind() => {}
        Some(other) => {
            let found = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({found}) does not match the expected kind ({})",
                target.codec().kind()
            )));
        }
    }
    let unknown = query.field_validation;
    // Repeated keys (and fields a protobuf body's type lacks) go into one strict decoding
    // error with the unknown fields conversion finds, after them, as kube-apiserver's strict
    // decoder lists both (field_validation.go: `unknown field "spec.unknownField", duplicate
    // field "spec.replicas"`).
    let strict = unknown == UnknownFields::Strict;
    let reported = document
        .reported_fields(if strict { UnknownFields::Warn } else { unknown })
        .map_err(bad_decode)?;
    let strictly_refused = |message: Option<String>| {
        let mut fields: Vec<String> = message.into_iter().collect();
        fields.extend(reported.iter().map(ToString::to_string));
        ApiError::bad_request(format!("strict decoding error: {}", fields.join(", ")))
    };
    let mut warnings = Vec::new();
    let object = match target.codec().decode(&value, unknown, &mut warnings) {
        Err(error) if strict && !reported.is_empty() && error.kind == ErrorKind::UnknownFields => {
            let found = error.message.strip_prefix("strict decoding error: ");
            return Err(strictly_refused(Some(
                found.unwrap_or(&error.message).to_owned(),
            )));
        }
        Err(error) => return Err(bad_decode(error)),
        Ok(_) if strict && !reported.is_empty() => return Err(strictly_refused(None)),
        Ok(object) => object,
    };
    let mut texts: Vec<String> = reported.iter().map(ToString::to_string).collect();
    texts.extend(warnings.iter().map(ToString::to_string));
    Ok((object, texts))
}

/// A document the server made (a patched or applied object): nothing to report of how it
/// was written.
fn made_here(value: Value) -> Document {
    Document {
        index: 0,
        value,
        duplicate_fields: Vec::new(),
        unknown_fields: Vec::new(),
    }
}

fn bad_decode(error: apfkit_runtime::scheme::SchemeError) -> ApiError {
    ApiError::bad_request(error.to_string())
}

async fn create<H, B>(server: &ApiServer<H, B>, write: &Write<'_, H>) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    let manager = writer_of(write, "CreateOptions")?;
    let (object, warnings) = decode_body(server, write)?;
    let object = crate::fields::record_update(
        &target.served,
        target.codec(),
        false,
        None,
        object,
        &manager,
    )?;
    let namespace = target.namespace.as_deref();
    if target.served.config.namespaced
        && let Some(given) = object.metadata().namespace.as_deref()
        && !given.is_empty()
        && Some(given) != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the \
             request",
        ));
    }
    let written = server
        .objects
        .create(
            &target.served,
            namespace,
            object,
            &target.codec().api_version(),
            query.dry_run,
        )
        .await?;
    object_response(201, target.codec(), written.object, format, &warnings)
}

async fn update<H, B>(server: &ApiServer<H, B>, write: &Write<'_, H>) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    let manager = writer_of(write, "UpdateOptions")?;
    let (object, warnings) = decode_body(server, write)?;
    // The body's uid is a precondition of the update, as kube-apiserver's
    // `defaultUpdatedObjectInfo.Preconditions` makes it (store_tests.go,
    // RunTestGuaranteedUpdate "UID mismatch").
    let preconditions = Preconditions {
        uid: object.metadata().uid.clone().filter(|uid| !uid.is_empty()),
        resource_version: None,
    };
    let written = replace(
        server,
        target,
        query,
        object,
        Some(&manager),
        &preconditions,
    )
    .await?;
    object_response(200, target.codec(), written.object, format, &warnings)
}

/// How many times a patch is tried again when the object changed under it, as
/// kube-apiserver's patcher does (`maxRetryWhenPatchConflicts`).
const PATCH_RETRIES: usize = 5;

/// The patch types, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
}

fn patch_type<H>(target: &Target<H>, content_type: Option<&str>) -> Result<PatchType, ApiError> {
    let content_type = content_type.unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    match essence {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" if target.served.config.strategic_merge => {
            Ok(PatchType::Strategic)
        }
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => {
            let mut accepted = vec![
                "application/json-patch+json",
                "application/merge-patch+json",
            ];
            if target.served.config.strategic_merge {
                accepted.push("application/strategic-merge-patch+json");
            }
            accepted.push("application/apply-patch+yaml");
            Err(ApiError::unsupported_patch(content_type, &accepted))
        }
    }
}

/// Applies a patch to the stored object in the URL's version, then updates it as a PUT of
/// the result would; tried again when the object changed meanwhile, unless the patch names
/// the `resourceVersion` it applies to.
async fn patch<H, B>(server: &ApiServer<H, B>, write: &Write<'_, H>) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    let kind = patch_type(target, write.content_type)?;
    if kind == PatchType::Apply {
        return apply(server, write).await;
    }
    if query.force.is_some() {
        let mut causes = vec![crate::error::Cause {
            reason: "FieldValueForbidden".to_owned(),
            message: "Forbidden: may not be specified for non-apply patch".to_owned(),
            field: "force".to_owned(),
        }];
        if let Some(given) = query.field_manager.as_deref() {
            causes.extend(crate::fields::field_manager_causes(given));
        }
        return Err(invalid_options("PatchOptions", causes));
    }
    let manager = writer_of(write, "PatchOptions")?;
    let body = write.body;
    let place = target.place();
    let config = &target.served.config;
    let schema = match kind {
        PatchType::Strategic => config
            .schema
            .as_ref()
            .and_then(|f| f(&config.group, target.codec().version(), &config.kind)),
        _ => None,
    };
    let mut tries = 0;
    loop {
        tries += 1;
        let current = server.objects.get(&target.served, place).await?;
        let current_version = current.metadata().resource_version.clone();
        let mut document = target
            .codec()
            .encode(current, &mut Vec::new())
            .map_err(ApiError::internal)?;
        let applied = match kind {
            PatchType::Json => crate::patch::json_patch(&mut document, body),
            PatchType::Merge => crate::patch::merge_patch(&mut document, body),
            PatchType::Strategic => {
                let view = match &schema {
                    Some(schema) => crate::patch::SchemaView::new(schema),
                    None => crate::patch::schemaless(),
                };
                crate::patch::strategic_merge_patch(&mut document, body, view)
            }
            PatchType::Apply => unreachable!("answered above"),
        };
        applied.map_err(|error| ApiError::from_patch(&error, body))?;
        let patched_version = document
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let names_version = patched_version != current_version;
        let (object, warnings) = decode_document(target, query, made_here(document))?;
        match replace(
            server,
            target,
            query,
            object,
            Some(&manager),
            &Default::default(),
        )
        .await
        {
            Ok(written) => {
                return object_response(200, target.codec(), written.object, format, &warnings);
            }
            Err(error) if error.code == 409 && !names_version && tries < PATCH_RETRIES => {}
            Err(error) => return Err(error),
        }
    }
}

/// Writes `object` over the stored object of the URL (or its status, for `/status`), once its
/// name and namespace are checked against the URL's.
async fn replace<H, B>(
    server: &ApiServer<H, B>,
    target: &Target<H>,
    query: &Query,
    object: H,
    manager: Option<&str>,
    preconditions: &Preconditions,
) -> Result<crate::objects::Written<H>, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let place = target.place();
    check_place(target, &object)?;
    let subject = Objects::<H, B>::subject(&target.served, place.name);
    let kind = if target.status {
        UpdateKind::Status
    } else {
        UpdateKind::Main
    };
    server
        .objects
        .update_with(
            &target.served,
            place,
            object,
            &target.codec().api_version(),
            kind,
            query.dry_run,
            |live, new| {
                crate::objects::check_preconditions(&subject, live, preconditions)?;
                match manager {
                    Some(manager) => crate::fields::record_update(
                        &target.served,
                        target.codec(),
                        target.status,
                        Some(live),
                        new,
                        manager,
                    ),
                    None => Ok(new),
                }
            },
        )
        .await
}

/// Checks that an object written to a named URL has the URL's name, and its namespace when
/// it names one.
fn check_place<H: Object + Clone + Send + Sync>(
    target: &Target<H>,
    object: &H,
) -> Result<(), ApiError> {
    let place = target.place();
    if object.name() != place.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({})",
            object.name(),
            place.name
        )));
    }
    if let Some(given) = object.metadata().namespace.as_deref()
        && !given.is_empty()
        && target.served.config.namespaced
        && Some(given) != place.namespace
    {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({given}) does not match the namespace on the request \
             ({})",
            place.namespace.unwrap_or_default()
        )));
    }
    Ok(())
}

/// Server-side apply (`PATCH` with `application/apply-patch+yaml`): the configuration
/// merged into the stored object by the field manager, or the object created from it when
/// there is none, as kube-apiserver's `applyPatcher` does; tried again when the object
/// changed meanwhile.
async fn apply<H, B>(server: &ApiServer<H, B>, write: &Write<'_, H>) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    if query.field_manager.as_deref().is_none_or(str::is_empty) {
        return Err(invalid_options(
            "PatchOptions",
            vec![crate::error::Cause {
                reason: "FieldValueRequired".to_owned(),
                message: "Required value: is required for apply patch".to_owned(),
                field: "fieldManager".to_owned(),
            }],
        ));
    }
    let manager = &writer_of(write, "PatchOptions")?;
    let force = query.force.unwrap_or(false);
    if query.field_validation == UnknownFields::Strict
        && let Some(repeated) = crate::patch::repeated_yaml_key(write.body)
    {
        return Err(ApiError::bad_request(format!(
            "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal \
             errors:\n  {repeated}"
        )));
    }
    let mut documents = Vec::new();
    server
        .objects
        .wire()
        .read_values(write.body, &server.body_limits, |document| {
            documents.push(document);
            Ok::<(), ReadError>(())
        })
        .map_err(|error| ApiError::bad_request(format!("error decoding YAML: {}", error.error)))?;
    let [config] = <[_; 1]>::try_from(documents).map_err(|documents| {
        ApiError::bad_request(format!(
            "error decoding YAML: the body holds {} documents; one object was expected",
            documents.len()
        ))
    })?;
    if !config.value.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the body is not an object",
        ));
    }
    let warnings: Vec<String> = config
        .reported_fields(query.field_validation)
        .map_err(|e| ApiError::bad_request(format!("error strict decoding YAML: {e}")))?
        .iter()
        .map(ToString::to_string)
        .collect();
    let place = target.place();
    let mut tries = 0;
    loop {
        tries += 1;
        let current = match server.objects.get(&target.served, place).await {
            Ok(current) => Some(current),
            Err(error) if error.code == 404 && !target.status => None,
            Err(error) => return Err(error),
        };
        let applied = crate::fields::apply(
            &target.served,
            target.codec(),
            target.status,
            current.as_ref(),
            &config.value,
            manager,
            force,
        )?;
        let (object, _) = decode_document(target, query, made_here(applied))?;
        let written = match current {
            None => {
                // A replace checks it; a create must too.
                check_place(target, &object)?;
                let namespace = target.namespace.as_deref();
                server
                    .objects
                    .create(
                        &target.served,
                        namespace,
                        object,
                        &target.codec().api_version(),
                        query.dry_run,
                    )
                    .await
                    .map(|written| (201, written))
            }
            Some(_) => replace(server, target, query, object, None, &Default::default())
                .await
                .map(|written| (200, written)),
        };
        match written {
            Ok((code, written)) => {
                return object_response(code, target.codec(), written.object, format, &warnings);
            }
            // Created or changed meanwhile: apply again to what is stored now.
            Err(error) if error.code == 409 && error.causes.is_empty() && tries < PATCH_RETRIES => {
            }
            Err(error) => return Err(error),
        }
    }
}

/// `DeleteOptions` of a delete's body, if it has one.
fn preconditions(body: &[u8]) -> Result<Preconditions, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Preconditions::default());
    }
    let options: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("decoding DeleteOptions: {e}")))?;
    let field = |name: &str| {
        options
            .pointer(&format!("/preconditions/{name}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Preconditions {
        uid: field("uid"),
        resource_version: field("resourceVersion"),
    })
}

/// The `Status` kube-apiserver answers for a delete that removed the object at once.
fn deleted_status<H: Object>(served: &Served<H>, object: &H) -> Value {
    let meta = object.metadata();
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": meta.name,
            "group": served.config.group,
            "kind": served.plural,
            "uid": meta.uid,
        },
    })
}

async fn delete<H, B>(
    server: &ApiServer<H, B>,
    target: &Target<H>,
    query: &Query,
    body: &[u8],
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let preconditions = preconditions(body)?;
    let object = server
        .objects
        .delete(
            &target.served,
            target.place(),
            &preconditions,
            query.dry_run,
        )
        .await?;
    Ok(super::json_response(
        200,
        &deleted_status(&target.served, &object),
    ))
}

async fn delete_collection<H, B>(
    server: &ApiServer<H, B>,
    target: &Target<H>,
    query: &Query,
    format: Format,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let page = server
        .objects
        .list(
            &target.served,
            &ListRequest {
                namespace: target.namespace.as_deref(),
                ..ListRequest::default()
            },
        )
        .await?;
    let mut deleted = Vec::new();
    for object in page
        .items
        .iter()
        .filter(|o| selected(query, target.codec(), *o))
    {
        let place = Place {
            namespace: object.metadata().namespace.as_deref(),
            name: object.name(),
        };
        match server
            .objects
            .delete(
                &target.served,
                place,
                &Preconditions::default(),
                query.dry_run,
            )
            .await
        {
            Ok(object) => deleted.push(encode(target.codec(), object, Format::Json)?),
            // Deleted by someone else meanwhile.
            Err(error) if error.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    let metadata = serde_json::json!({"resourceVersion": page.revision.to_string()});
    let body = list_body(server.objects.wire(), target, metadata, &deleted, format)?;
    Ok(respond(200, content_type(format), body))
}

#[cfg(test)]
mod tests {
    #[test]
    fn delete_options_give_the_preconditions() {
        assert!(super::preconditions(b"  ").unwrap().uid.is_none());
        assert!(super::preconditions(b"{").is_err());
        let options = br#"{"preconditions":{"uid":"u","resourceVersion":"5"}}"#;
        let parsed = super::preconditions(options).unwrap();
        assert_eq!(parsed.uid.as_deref(), Some("u"));
        assert_eq!(parsed.resource_version.as_deref(), Some("5"));
    }
}
