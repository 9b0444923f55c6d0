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
            options.is_dry_run(),
        )
        .await?;
    // kube-apiserver's `Store.Delete`: an object kept for its finalizers is answered as it
    // now is; a removed one as a `Status`, unless the kind returns deleted objects.
    match deletion {
        Deletion::Removed(object) if !target.served.config.return_deleted_object => Ok(
            status_response(200, deleted_status(&target.served, &object)),
        ),
        deletion => object_response(200, target.codec(), deletion.object(), format, &[]),
    }
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
