//! PUT of an object or its status (`k8s.io/apiserver/pkg/endpoints/handlers/update.go`), and
//! the replace every write to an existing object ends in.

use apfkit_runtime::Object;
use axum::response::Response;

use super::query::Query;
use super::request::{Target, Write, decode_body, writer_of};
use super::response::object_response;
use super::server::ApiServer;
use crate::error::ApiError;
use crate::store::{Objects, Preconditions, UpdateKind};

pub(super) async fn update<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let manager = writer_of(write, "UpdateOptions")?;
    let (object, warnings) = decode_body(server, write)?;
    write.log_request_object(&object);
    // What decoding reported is answered with any error after it too, as kube's warning
    // recorder writes it on every answer.
    write_decoded(server, write, &manager, object, &warnings)
        .await
        .map_err(|error| error.with_warnings(&warnings))
}

/// The update of a decoded object (whose decoding reported `warnings`), or the create it
/// turns into.
async fn write_decoded<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
    manager: &str,
    object: H,
    warnings: &[String],
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (target, query, format) = (write.target, write.query, write.format);
    // The body's uid is a precondition of the update, as kube-apiserver's
    // `defaultUpdatedObjectInfo.Preconditions` makes it (store_tests.go,
    // RunTestGuaranteedUpdate "UID mismatch").
    let preconditions = Preconditions {
        uid: object.metadata().uid.clone().filter(|uid| !uid.is_empty()),
        resource_version: None,
    };
    // Kept for a kind that creates what an update finds missing (`AllowCreateOnUpdate`).
    let to_create = (target.subresource().is_none()
        && target.served.strategy().allows_create_on_update())
    .then(|| object.clone());
    let written = match (
        replace(
            server,
            target,
            query,
            write.user,
            object,
            Some(manager),
            &preconditions,
        )
        .await,
        to_create,
    ) {
        (Err(missing), Some(mut object)) if missing.code == 404 => {
            // The store's `Update` creates it then (its preconditions held to an empty
            // object), its resource version cleared as storage clears it.
            let place = target.place();
            crate::store::check_preconditions(
                &Objects::<H>::subject(&target.served, place.name),
                || server.objects.key_text(&target.served, place),
                &Default::default(),
                &preconditions,
            )?;
            check_place(target, &object)?;
            object.metadata_mut().resource_version = None;
            let written = super::create::create_new(
                server,
                target,
                query,
                write.user,
                object,
                super::create::Creating::FromUpdate(manager),
            )
            .await?;
            let warnings = [warnings, &written.warnings].concat();
            return object_response(201, target.codec(), written.object, format, &warnings);
        }
        (written, _) => written?,
    };
    let warnings = [warnings, &written.warnings].concat();
    object_response(200, target.codec(), written.object, format, &warnings)
}

/// Writes `object` over the stored object of the URL (or its status, for `/status`), once its
/// name and namespace are checked against the URL's and the kind's strategy admits `user`'s
/// write.
pub(super) async fn replace<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
    user: &crate::auth::UserInfo,
    object: H,
    manager: Option<&str>,
    preconditions: &Preconditions,
) -> Result<crate::store::Written<H>, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let place = target.place();
    check_place(target, &object)?;
    target
        .served
        .strategy()
        .admit(user, place.namespace, &object)?;
    let subject = Objects::<H>::subject(&target.served, place.name);
    let kind = match target.subresource() {
        Some("status") => UpdateKind::Status,
        Some("finalize") => UpdateKind::Finalize,
        _ => UpdateKind::Main,
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
                unconditional_update_allowed(target, &new)?;
                crate::store::check_preconditions(
                    &subject,
                    || server.objects.key_text(&target.served, place),
                    live.metadata(),
                    preconditions,
                )?;
                match manager {
                    Some(manager) => crate::fields::record_update(
                        &target.served,
                        target.codec(),
                        kind.subresource(),
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

/// An update of a stored object that names no resource version, refused where the kind's
/// strategy does not allow it, as the generic store's `Update` refuses it: invalid, about the
/// resource (the store's `qualifiedResource` standing in for the kind).
fn unconditional_update_allowed<H: Object + Clone + Send + Sync>(
    target: &Target<H>,
    object: &H,
) -> Result<(), ApiError> {
    let named = object
        .metadata()
        .resource_version
        .as_deref()
        .is_some_and(|version| !version.is_empty());
    if named || target.served.strategy().allows_unconditional_update() {
        return Ok(());
    }
    let subject = Objects::<H>::subject(&target.served, target.place().name);
    let error = apfkit_runtime::field::FieldError::invalid(
        "metadata.resourceVersion",
        apfkit_runtime::field::BadValue::Int(0),
        "must be specified for an update",
    );
    Err(ApiError::invalid(&subject, vec![(&error).into()]))
}

/// Checks that an object written to a named URL has the URL's name, and its namespace when
/// it names one.
pub(super) fn check_place<H: Object + Clone + Send + Sync>(
    target: &Target<H>,
    object: &H,
) -> Result<(), ApiError> {
    let place = target.place();
    if object.name().is_empty() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({} based on URL) was undeterminable: name must be provided",
            place.name
        )));
    }
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
