//! One resource request, sent to its verb's handler: get, list (or a streamed list), watch,
//! create, update, patch, delete, deletecollection, and the `/status` and `/scale`
//! subresources, as kube-apiserver's REST handlers answer them
//! (`k8s.io/apiserver/pkg/endpoints/handlers`).

use std::sync::Arc;

use apfkit_runtime::Object;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::response::Response;

use super::media::{self, Format, Wanted};
use super::query::Query;
use super::request::{Target, Write, header_text, read_body};
use super::response::AsTable;
use super::server::ApiServer;
use super::{create, delete, get, list, patch, scale, update, watch};
use crate::error::ApiError;

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
pub(super) async fn serve<H>(
    server: &Arc<ApiServer<H>>,
    mut target: Target<H>,
    request: Request,
    path: Path,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    if path == Path::Watch && (target.status || target.scale) {
        return Err(ApiError::no_route());
    }
    if let (true, Some(paths)) = (target.scale, target.served.config.scale.as_ref()) {
        return scale::serve(server, &target, paths, request).await;
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
    list::check_field_labels(&target, &query)?;
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
            Ok(watch::watch(server.clone(), &target, query, format, table).await)
        }
        (Method::GET, false)
            if format == Format::Json && table.is_none() && list::streams(&query) =>
        {
            list::stream_list(server, &target, &query).await
        }
        (Method::GET, false) => list::list(server, &target, &query, format, table).await,
        (Method::GET, true) => get::get(server, &target, &query, format, table).await,
        (method @ (Method::POST | Method::PUT | Method::PATCH), named)
            if (method == Method::POST) != named =>
        {
            let user = request
                .extensions()
                .get::<crate::auth::UserInfo>()
                .cloned()
                .unwrap_or_default();
            let body = read_body(request).await?;
            let write = Write {
                target: &target,
                user: &user,
                query: &query,
                content_type: request_type.as_deref(),
                user_agent: user_agent.as_deref(),
                body: &body,
                format,
            };
            match method {
                Method::POST => create::create(server, &write).await,
                Method::PUT => update::update(server, &write).await,
                _ => patch::patch(server, &write).await,
            }
        }
        (Method::DELETE, true) => {
            let body = read_body(request).await?;
            delete::delete(server, &target, &query, &body).await
        }
        (Method::DELETE, false) => delete::delete_collection(server, &target, &query, format).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}
