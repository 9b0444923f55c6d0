//! DELETE of an object and of a collection (`k8s.io/apiserver/pkg/endpoints/handlers/
//! delete.go`).

use apfkit_runtime::Object;
use axum::response::Response;
use serde_json::Value;

use super::list::selected;
use super::media::Format;
use super::query::Query;
use super::request::Target;
use super::response::{content_type, encode, json_response, list_body, object_response, respond};
use super::server::ApiServer;
use crate::error::ApiError;
use crate::store::{Deletion, ListRequest, Place, Preconditions, Served};

/// `DeleteOptions` of a delete's body, if it has one.
pub(super) fn preconditions(body: &[u8]) -> Result<Preconditions, ApiError> {
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
    query: &Query,
    body: &[u8],
    format: Format,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let preconditions = preconditions(body)?;
    let deletion = server
        .objects
        .delete(
            &target.served,
            target.place(),
            &preconditions,
            query.dry_run,
        )
        .await?;
    // kube-apiserver's `Store.Delete`: an object kept for its finalizers is answered as it
    // now is; a removed one as a `Status`, unless the kind returns deleted objects.
    match deletion {
        Deletion::Removed(object) if !target.served.config.return_deleted_object => {
            Ok(json_response(200, &deleted_status(&target.served, &object)))
        }
        deletion => object_response(200, target.codec(), deletion.object(), format, &[]),
    }
}

pub(super) async fn delete_collection<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
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
                &Preconditions::default(),
                query.dry_run,
            )
            .await
        {
            Ok(deletion) => deleted.push(encode(target.codec(), deletion.object(), Format::Json)?),
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
