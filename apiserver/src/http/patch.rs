//! PATCH (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): JSON patch, merge patch,
//! strategic merge patch, and server-side apply.

use apfkit_runtime::Object;
use apfkit_runtime::scheme::{ReadError, UnknownFields};
use axum::response::Response;
use serde_json::Value;

use super::request::{Target, Write, decode_document, invalid_options, made_here, writer_of};
use super::response::object_response;
use super::server::ApiServer;
use super::update::{check_place, replace};
use crate::error::ApiError;

/// How many times a patch is tried again when the object changed under it, as
/// kube-apiserver's patcher does (`maxRetryWhenPatchConflicts`).
pub(super) const PATCH_RETRIES: usize = 5;

/// The patch types, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PatchType {
    Json,
    Merge,
    Strategic,
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
}

pub(super) fn patch_type<H>(
    target: &Target<H>,
    content_type: Option<&str>,
) -> Result<PatchType, ApiError> {
    let content_type = content_type.unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    match essence {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" if target.served.config.strategic_merge => {
            Ok(PatchType::Strategic)
        }
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        // A built-in kind's PATCH route consumes only its patch types: go-restful refuses any
        // other before the handler runs.
        _ if !target.served.config.custom => Err(ApiError::unsupported_by_route()),
        _ => {
            let mut accepted = vec![
                "application/json-patch+json",
                "application/merge-patch+json",
            ];
            if target.served.config.strategic_merge {
                accepted.push("application/strategic-merge-patch+json");
            }
            accepted.push("application/apply-patch+yaml");
            Err(ApiError::unsupported_patch(&accepted))
        }
    }
}

/// Applies a patch to the stored object in the URL's version, then updates it as a PUT of
/// the result would; tried again when the object changed meanwhile, unless the patch names
/// the `resourceVersion` it applies to.
pub(super) async fn patch<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
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
        PatchType::Strategic => config.schema.as_ref().and_then(|f| f(target.codec().gvk())),
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
            PatchType::Json => crate::patch::json_patch(
                &mut document,
                body,
                query.field_validation != UnknownFields::Ignore,
            ),
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
        if kind == PatchType::Strategic {
            // kube takes the patched map into its Go type with the unstructured converter,
            // and quotes the patch as Go's `%+v` prints it.
            let codec = target.codec();
            if let Err(error) = crate::go_decode::convert_unstructured(
                &codec.api_version(),
                codec.kind(),
                &mut document,
            ) {
                let patch: Value = serde_json::from_slice(body).unwrap_or_default();
                return Err(invalid_patch(crate::go_decode::go_plus_v(&patch), error));
            }
        }
        let patched_version = document
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let names_version = patched_version != current_version;
        let (object, warnings) = match decode_document(target, query, made_here(document)) {
            Ok(decoded) => decoded,
            Err(error) if error.code == 400 => {
                return Err(patched_type_error(server, target, kind, body)
                    .await
                    .unwrap_or(error));
            }
            Err(error) => return Err(error),
        };
        match replace(
            server,
            target,
            query,
            write.user,
            object,
            Some(&manager),
            &Default::default(),
        )
        .await
        {
            Ok(written) => {
                let warnings = [warnings, written.warnings].concat();
                return object_response(200, target.codec(), written.object, format, &warnings);
            }
            Err(error) if error.code == 409 && !names_version && tries < PATCH_RETRIES => {}
            Err(error) => return Err(error.with_warnings(&warnings)),
        }
    }
}

/// What kube-apiserver answers a JSON or merge patch whose result has a value its Go type
/// cannot take: 422 about `patch`, quoting the patched document as evanphx/json-patch wrote
/// it and Go's decoder's error (`"" is invalid: patch: Invalid value: "{…}": json: cannot
/// unmarshal string into Go struct field …`), or a custom resource's coercer's error;
/// `None` for other patches and errors that are not of a value's type.
async fn patched_type_error<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    kind: PatchType,
    body: &[u8],
) -> Option<ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let body = std::str::from_utf8(body).ok()?;
    // The object the patch applied to, as kube-apiserver encodes it.
    let current = server
        .objects
        .get(&target.served, target.place())
        .await
        .ok()?;
    let codec = target.codec();
    let encoded = codec
        .encode_to(
            current,
            apfkit_runtime::scheme::Encoding::Json,
            &mut Vec::new(),
        )
        .ok()?;
    let current = std::str::from_utf8(&encoded).ok()?;
    let patched = match kind {
        PatchType::Json => crate::evanphx::json_patched(current, body)?,
        PatchType::Merge => crate::evanphx::merge_patched(current, body)?,
        _ => return None,
    };
    let error = if target.served.config.custom {
        // The custom resource's coercer, on the patched object.
        let value: Value = serde_json::from_str(&patched).ok()?;
        let error = codec
            .decode(&value, UnknownFields::Ignore, &mut Vec::new())
            .err()
            .filter(|error| error.kind == apfkit_runtime::scheme::ErrorKind::InvalidValue)?;
        error.to_string()
    } else {
        crate::go_decode::type_error(&codec.api_version(), codec.kind(), patched.as_bytes())?
    };
    Some(invalid_patch(patched, error))
}

/// kube-apiserver's 422 for a patch whose result its Go type cannot take: `"" is invalid:
/// patch: Invalid value: "<shown>": <error>`, of no kind and no name.
fn invalid_patch(shown: String, error: String) -> ApiError {
    let cause = apfkit_runtime::field::FieldError::invalid(
        "patch",
        apfkit_runtime::field::BadValue::Str(shown),
        error,
    );
    let nothing = crate::error::Subject {
        group: String::new(),
        kind: String::new(),
        name: String::new(),
    };
    ApiError::invalid(&nothing, vec![crate::error::Cause::from(&cause)])
}

/// Server-side apply (`PATCH` with `application/apply-patch+yaml`): the configuration
/// merged into the stored object by the field manager, or the object created from it when
/// there is none, as kube-apiserver's `applyPatcher` does; tried again when the object
/// changed meanwhile.
pub(super) async fn apply<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
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
                super::create::create_new(
                    server,
                    target,
                    query,
                    write.user,
                    object,
                    super::create::Creating::FromApply,
                )
                .await
                .map(|written| (201, written))
            }
            Some(_) => replace(
                server,
                target,
                query,
                write.user,
                object,
                None,
                &Default::default(),
            )
            .await
            .map(|written| (200, written)),
        };
        match written {
            Ok((code, written)) => {
                let warnings = [warnings.clone(), written.warnings].concat();
                return object_response(code, target.codec(), written.object, format, &warnings);
            }
            // Created or changed meanwhile: apply again to what is stored now.
            Err(error) if error.code == 409 && error.causes.is_empty() && tries < PATCH_RETRIES => {
            }
            Err(error) => return Err(error),
        }
    }
}
