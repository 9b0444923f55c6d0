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
use super::request_info::RequestInfo;
use super::response::AsTable;
use super::server::ApiServer;
use super::{create, delete, get, list, patch, scale, update, watch};
use crate::error::ApiError;

/// The handler a resource request runs: the verb its [`RequestInfo`] reads, the one it was
/// authorized, flow-controlled and audited as, held to the methods kube-apiserver's routes
/// take at its path (`k8s.io/apiserver/pkg/endpoints/installer.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Action {
    /// The action of a request with `info` and `method` at `target`: 404 where kube-apiserver
    /// has no route for the path (a `/proxy/` path, a watch of a subresource), 405 where the
    /// path's routes do not take the method (a `/watch/` path takes GET only, a subresource
    /// GET, PUT and PATCH, the all-namespaces path of a namespaced resource GET only).
    pub(super) fn of<H>(
        info: &RequestInfo,
        method: &Method,
        target: &Target<H>,
    ) -> Result<Action, ApiError> {
        let subresource = target.status || target.scale;
        let named = target.name.is_some();
        let all_namespaces = target.served.config.namespaced && target.namespace.is_none();
        let (action, allowed) = match info.verb.as_str() {
            "proxy" => return Err(ApiError::no_route()),
            "watch" if subresource => return Err(ApiError::no_route()),
            "watch" => (Action::Watch, method == Method::GET),
            "get" => (Action::Get, method == Method::GET),
            "list" => (Action::List, method == Method::GET),
            "create" => (Action::Create, !named && !all_namespaces),
            "update" => (Action::Update, named),
            "patch" => (Action::Patch, named),
            "delete" => (Action::Delete, named && !subresource),
            "deletecollection" => (Action::DeleteCollection, !all_namespaces),
            _ => return Err(ApiError::method_not_allowed()),
        };
        if allowed {
            Ok(action)
        } else {
            Err(ApiError::method_not_allowed())
        }
    }

    /// Whether it reads (GET).
    fn reads(self) -> bool {
        matches!(self, Action::Get | Action::List | Action::Watch)
    }
}

/// Serves one resource request as `action`.
pub(super) async fn serve<H>(
    server: &Arc<ApiServer<H>>,
    mut target: Target<H>,
    request: Request,
    action: Action,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    if let (true, Some(paths)) = (target.scale, target.served.config.scale.as_ref()) {
        return scale::serve(server, &target, paths, request, action).await;
    }
    let mut query = Query::parse(request.uri().query())?;
    query.watch = action == Action::Watch;
    // kube-apiserver watches a named object (`/watch/RESOURCE/NAME`) through a
    // `metadata.name` field selector (k8s.io/apiserver/pkg/endpoints/handlers/get.go,
    // ListResource).
    if action == Action::Watch
        && let Some(name) = target.name.take()
    {
        query.fields = std::mem::take(&mut query.fields)
            .for_name(&name)
            .map_err(ApiError::bad_request)?;
    }
    if matches!(action, Action::List | Action::Watch) {
        query.validate()?;
    }
    list::check_field_labels(&target, &query)?;
    let accept = header_text(&request, header::ACCEPT);
    let request_type = header_text(&request, header::CONTENT_TYPE);
    let user_agent = header_text(&request, header::USER_AGENT);
    let reads = action.reads();
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
    match action {
        Action::Watch => Ok(watch::watch(server.clone(), &target, query, format, table).await),
        Action::List if format == Format::Json && table.is_none() && list::streams(&query) => {
            list::stream_list(server, &target, &query).await
        }
        Action::List => list::list(server, &target, &query, format, table).await,
        Action::Get => get::get(server, &target, &query, format, table).await,
        Action::Create | Action::Update | Action::Patch => {
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
            match action {
                Action::Create => create::create(server, &write).await,
                Action::Update => update::update(server, &write).await,
                _ => patch::patch(server, &write).await,
            }
        }
        Action::Delete => {
            let body = read_body(request).await?;
            delete::delete(server, &target, &query, &body).await
        }
        Action::DeleteCollection => {
            delete::delete_collection(server, &target, &query, format).await
        }
    }
}
