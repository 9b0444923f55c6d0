//! One resource request, sent to its verb's handler: get, list (or a streamed list), watch,
//! create, update, patch, delete, deletecollection, and the `/status` and `/scale`
//! subresources, as kube-apiserver's REST handlers answer them
//! (`k8s.io/apiserver/pkg/endpoints/handlers`).

use std::sync::Arc;

use apfkit_runtime::Object;
use axum::extract::Request;
use axum::http::header;
use axum::response::Response;

use super::action::Action;
use super::delete_options::DeleteOptions;
use super::media::{self, Format, Wanted};
use super::query::Query;
use super::request::{Target, Write, header_text, read_body};
use super::response::{AsTable, Transform};
use super::server::ApiServer;
use super::{create, delete, get, list, patch, scale, update, watch};
use crate::error::ApiError;

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
    let protobuf = match (
        server.objects.wire().writes_protobuf(),
        target.served.protobuf(),
    ) {
        (true, true) => media::Protobuf::Objects,
        // A custom resource: protobuf is its serializer's (errors, metadata), not its objects'.
        (true, false) => media::Protobuf::Errors,
        (false, _) => media::Protobuf::No,
    };
    let (format, transform) = match media::negotiate(
        accept.as_deref(),
        reads,
        false,
        protobuf,
        target.name.is_none(),
    )? {
        Wanted::Object(format) => (format, None),
        Wanted::Table(format, api_version) => (
            format,
            Some(Transform::Table(AsTable {
                include: query.include_object,
                api_version,
            })),
        ),
        Wanted::Metadata {
            format,
            api_version,
            list,
        } => (format, Some(Transform::Metadata { api_version, list })),
        Wanted::Discovery(_) => return Err(ApiError::not_acceptable(&[media::JSON])),
    };
    match action {
        Action::Watch => {
            let gzip = super::compression::accepts_gzip(
                header_text(&request, header::ACCEPT_ENCODING).as_deref(),
            );
            Ok(watch::watch(server.clone(), &target, query, format, transform, gzip).await)
        }
        Action::List if format == Format::Json && transform.is_none() && list::streams(&query) => {
            list::stream_list(server, &target, &query).await
        }
        Action::List => list::list(server, &target, &query, format, transform).await,
        Action::Get => get::get(server, &target, &query, format, transform).await,
        Action::Create | Action::CreateSubresource | Action::Update | Action::Patch => {
            if let Some(options) = action.write_options() {
                query.check_dry_run(options)?;
            }
            let (user, audit) = user_and_audit(&request);
            let body = read_body(request).await?;
            let write = Write {
                target: &target,
                user: &user,
                query: &query,
                content_type: request_type.as_deref(),
                user_agent: user_agent.as_deref(),
                body: &body,
                format,
                audit,
            };
            match action {
                Action::Create => create::create(server, &write).await,
                Action::CreateSubresource => create::create_subresource(server, &write).await,
                Action::Update => update::update(server, &write).await,
                _ => patch::patch(server, &write).await,
            }
        }
        Action::Delete | Action::DeleteCollection => {
            let (user, audit) = user_and_audit(&request);
            let info = crate::request_info::of(&request);
            let body = read_body(request).await?;
            let options = DeleteOptions::read(request_type.as_deref(), &body, &query)?;
            if action == Action::DeleteCollection {
                delete::refuse_unsafe_collection_delete(&options)?;
                return delete::delete_collection(server, &target, &query, &options, format).await;
            }
            if options.ignores_store_read_errors() {
                let asked = delete::UnsafeDeleteAsked {
                    user: &user,
                    info: &info,
                    audit: audit.as_ref(),
                };
                return delete::unsafe_delete(server, &target, &options, &asked).await;
            }
            delete::delete(server, &target, &options, format).await
        }
    }
}

/// The user a request acts as and its audit context, which the writing verbs need.
fn user_and_audit(
    request: &Request,
) -> (crate::auth::UserInfo, Option<crate::audit::AuditContext>) {
    let user = request
        .extensions()
        .get::<crate::auth::UserInfo>()
        .cloned()
        .unwrap_or_default();
    (user, crate::audit::AuditContext::of(request.extensions()))
}
