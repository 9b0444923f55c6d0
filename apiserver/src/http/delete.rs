//! DELETE of an object and of a collection (`k8s.io/apiserver/pkg/endpoints/handlers/
//! delete.go`).

use apfkit_runtime::Object;
use axum::response::Response;
use serde_json::Value;

use super::delete_options::DeleteOptions;
use super::list::selected;
use super::media::Format;
use super::query::Query;
use super::request::Target;
use super::response::{content_type, encode, list_body, object_response, respond, status_response};
use super::server::ApiServer;
use crate::error::ApiError;
use crate::store::{Deletion, ListRequest, Place, Served};

/// The `Status` kube-apiserver answers for a delete that removed the object at once.
pub(super) fn deleted_status<H: Object>(served: &Served<H>, object: &H) -> Value {
    let meta = object.metadata();
    let mut status = serde_json::json!({
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
    });
    // `StatusDetails.Group` is `omitempty`: the core group's is left out.
    if served.config.group.is_empty()
        && let Some(details) = status["details"].as_object_mut()
    {
        details.remove("group");
    }
    status
}

pub(super) async fn delete<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    options: &DeleteOptions,
    format: Format,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let deletion = server
        .objects
        .delete(
            &target.served,
            target.place(),
            &options.preconditions,
            options.propagation(),
            options.is_dry_run(),
        )
        .await?;
    // kube-apiserver's `Store.Delete`: an object kept for its finalizers is answered as it
    // now is (202 when `orphanDependents: false` asked for cascading deletion, as the
    // handler answers it); a removed one as a `Status`, unless the kind returns deleted
    // objects.
    match deletion {
        Deletion::Removed(object) if !target.served.config.return_deleted_object => Ok(
            status_response(200, deleted_status(&target.served, &object)),
        ),
        deletion => {
            let cascading = options.orphan_dependents == Some(false);
            let code = match deletion {
                Deletion::Finalizing(_) if cascading => 202,
                _ => 200,
            };
            object_response(code, target.codec(), deletion.object(), format, &[])
        }
    }
}

/// A delete with `ignoreStoreReadErrorWithClusterBreakingPotential` (1.37's
/// `AllowUnsafeMalformedObjectDeletion`, on), as kube's delete handler runs it: noted in the
/// audit event (`apiserver.k8s.io/unsafe-delete-ignore-read-error`), authorized once more as
/// `unsafe-delete-ignore-read-errors` on the object (403 in admission's words), then the
/// object removed without being read ([`crate::store::Objects::delete_corrupt`]) and answered
/// as a bare `Status` naming it and its kind.
pub(super) async fn unsafe_delete<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    options: &DeleteOptions,
    asked: &UnsafeDeleteAsked<'_>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    if let Some(audit) = asked.audit {
        audit.annotate("apiserver.k8s.io/unsafe-delete-ignore-read-error", "");
    }
    let place = target.place();
    if let Some(authorizer) = server.authorizer.as_deref() {
        let mut attributes = crate::authz::Attributes::of_request(asked.info, asked.user);
        attributes.verb = "unsafe-delete-ignore-read-errors".into();
        attributes.path = String::new();
        attributes.subresource = String::new();
        let verdict = authorizer.authorize(&attributes).await;
        if !verdict.allowed() {
            let why = match &verdict.error {
                Some(error) => format!(
                    "error while checking permission for \"unsafe-delete-ignore-read-errors\", {error}"
                ),
                None => format!(
                    "not permitted to do \"unsafe-delete-ignore-read-errors\", reason: {}",
                    verdict.reason
                ),
            };
            let subject = crate::store::Objects::<H>::subject(&target.served, place.name);
            return Err(ApiError::forbidden(&subject, &why));
        }
    }
    server
        .objects
        .delete_corrupt(&target.served, place, options.is_dry_run())
        .await?;
    Ok(status_response(
        200,
        serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": place.name, "kind": target.served.config.kind},
            "code": 200,
        }),
    ))
}

/// Who asks for an unsafe delete, and the request as kube-apiserver read it.
pub(super) struct UnsafeDeleteAsked<'a> {
    pub(super) user: &'a crate::auth::UserInfo,
    pub(super) info: &'a crate::request_info::RequestInfo,
    pub(super) audit: Option<&'a crate::audit::AuditContext>,
}

/// A delete of a collection may not ignore read errors: kube's 422.
pub(super) fn refuse_unsafe_collection_delete(options: &DeleteOptions) -> Result<(), ApiError> {
    if !options.ignores_store_read_errors() {
        return Ok(());
    }
    super::query::invalid_options(
        "DeleteOptions",
        &[apfkit_runtime::field::FieldError::invalid(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            apfkit_runtime::field::BadValue::Go("true".into()),
            "is not allowed with DELETECOLLECTION, try again after removing the option",
        )],
    )
}

pub(super) async fn delete_collection<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
    options: &DeleteOptions,
    format: Format,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
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
                &options.preconditions,
                options.propagation(),
                options.is_dry_run(),
            )
            .await
        {
            // kube's `DeleteCollection` answers the list it deleted from, each object as it
            // was listed (not as its delete left it), one deleted by someone else meanwhile
            // included.
            Ok(_) => {}
            Err(error) if error.code == 404 => {}
            Err(error) => return Err(error),
        }
        deleted.push(encode(target.codec(), object.clone(), Format::Json)?);
    }
    let mut metadata = super::list::list_metadata(&target.served);
    metadata.insert("resourceVersion".into(), page.revision.to_string().into());
    let metadata = Value::Object(metadata);
    let body = list_body(server.objects.wire(), target, metadata, &deleted, format)?;
    Ok(respond(200, content_type(format), body))
}
