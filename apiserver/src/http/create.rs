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
    write.log_request_object(&object);
    let written = create_new(
        server,
        target,
        query,
        write.user,
        object,
        Creating::Post(&manager),
    )
    .await
    .map_err(|error| error.with_warnings(&warnings))?;
    let warnings = [warnings, written.warnings].concat();
    object_response(201, target.codec(), written.object, format, &warnings)
}

/// A POST to a subresource answered by its [`super::SubresourceCreator`]: the body (in any
/// media type the server reads) decoded with the creator's defaults, given the managed fields
/// of what it set (kube's create handler gives them before the registry answers), handed to
/// the creator; its answer `201` in JSON with its warnings.
pub(super) async fn create_subresource<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let target = write.target;
    let manager = writer_of(write, "CreateOptions")?;
    let name = target.created.as_deref().unwrap_or_default();
    let (Some(creator), Some((_, kind))) = (
        server.creator(&target.served, name),
        target
            .served
            .config
            .created_subresources
            .iter()
            .find(|(own, _)| own == name),
    ) else {
        return Err(ApiError::no_route());
    };
    let mut object = super::request::body_value(server, write.content_type, write.body)?;
    creator.default(&mut object);
    let managed = object.is_object().then(|| {
        crate::fields::created_managed_fields(kind, &creator.zero(), &object, &manager, Some(name))
    });
    if let Some(managed) = managed.flatten() {
        if !object
            .get("metadata")
            .is_some_and(serde_json::Value::is_object)
        {
            object["metadata"] = serde_json::json!({});
        }
        object["metadata"]["managedFields"] = managed;
    }
    let created = creator
        .create(
            server,
            &target.served,
            target.place(),
            object,
            write.query.dry_run,
        )
        .await?;
    Ok(super::response::with_warnings(
        super::response::json_response(201, &created.object),
        &created.warnings,
    ))
}

/// How a create came to be, which decides what [`create_new`] does besides storing.
#[derive(Clone, Copy)]
pub(super) enum Creating<'a> {
    /// A POST by the named field manager.
    Post(&'a str),
    /// A PUT of a missing object by the named field manager, of a kind that creates on
    /// update: authorized as a create besides the update it was asked as.
    FromUpdate(&'a str),
    /// A server-side apply of a missing object, whose managed fields the apply wrote:
    /// authorized as a create besides the patch it was asked as.
    FromApply,
}

/// Creates `object` in the URL's collection once the kind's strategy and admission let
/// `user` make it, in the order of kube-apiserver's handlers: mutating admission (the
/// namespace's lifecycle), the strategy's checks of who writes, `rest.BeforeCreate`'s
/// preparation and validation, then the authorization of a create an update or an apply
/// turned into (`withAuthorization` wraps the store's `createValidation`), then storage.
pub(super) async fn create_new<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
    user: &crate::auth::UserInfo,
    object: H,
    creating: Creating<'_>,
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
    let object = match creating {
        Creating::Post(manager) | Creating::FromUpdate(manager) => crate::fields::record_update(
            &target.served,
            target.codec(),
            None,
            None,
            object,
            manager,
        )?,
        Creating::FromApply => object,
    };
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
    let api_version = target.codec().api_version();
    let prepared =
        server
            .objects
            .prepare_create(&target.served, namespace, object, &api_version)?;
    if !matches!(creating, Creating::Post(_)) {
        authorize_create(server, target, user).await?;
    }
    server
        .objects
        .insert(&target.served, namespace, prepared, query.dry_run)
        .await
}

/// The create an update or an apply of a missing object turns into, authorized as kube's
/// handlers authorize it (`withAuthorization` of the `create` verb): the request itself was
/// authorized only as an update or a patch. A verdict that could not decide is a 500, a
/// refusal kube's 403.
async fn authorize_create<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    user: &crate::auth::UserInfo,
) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let Some(authorizer) = &server.authorizer else {
        return Ok(());
    };
    let place = target.place();
    let attributes = crate::authz::Attributes {
        user: user.clone(),
        verb: "create".to_owned(),
        resource_request: true,
        api_group: target.served.config.group.clone(),
        api_version: target.codec().version().to_owned(),
        namespace: place.namespace.unwrap_or_default().to_owned(),
        resource: target.served.plural.clone(),
        subresource: target.subresource().unwrap_or_default().to_owned(),
        name: place.name.to_owned(),
        ..crate::authz::Attributes::default()
    };
    let verdict = authorizer.authorize(&attributes).await;
    if verdict.allowed() {
        return Ok(());
    }
    match verdict.error {
        Some(error) => Err(ApiError::internal(error)),
        None => Err(attributes.forbidden(&verdict.reason)),
    }
}
