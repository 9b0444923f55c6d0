//! POST of a new object (`k8s.io/apiserver/pkg/endpoints/handlers/create.go`), and the
//! creation a PUT ends in where the kind creates on update.

use apfkit_runtime::Object;
use axum::response::Response;

use super::query::Query;
use super::request::{Target, Write, decode_body, writer_of};
use super::response::object_response;
use super::server::ApiServer;
use crate::error::ApiError;

pub(super) async fn create<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    let manager = writer_of(write, "CreateOptions")?;
    let (object, warnings) = decode_body(server, write)?;
    let written = create_new(server, target, query, write.user, object, &manager).await?;
    let warnings = [warnings, written.warnings].concat();
    object_response(201, target.codec(), written.object, format, &warnings)
}

/// Creates `object` in the URL's collection once the kind's strategy and admission let
/// `user` make it, with `manager`'s managed fields.
pub(super) async fn create_new<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
    user: &crate::auth::UserInfo,
    object: H,
    manager: &str,
) -> Result<crate::store::Written<H>, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    if let Some(why) = target.served.strategy().refuses_creates() {
        let subject = crate::error::Subject {
            group: target.served.config.group.clone(),
            kind: target.served.plural.clone(),
            name: object.name().to_owned(),
        };
        return Err(ApiError::forbidden(&subject, why));
    }
    let object =
        crate::fields::record_update(&target.served, target.codec(), None, None, object, manager)?;
    super::lifecycle::admit_create(server, target, &object).await?;
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
    target.served.strategy().admit(user, namespace, &object)?;
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
}
