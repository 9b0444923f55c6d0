//! The `/scale` subresource of a resource that has one (a custom resource whose CRD names
//! `subresources.scale`), as kube-apiserver serves it
//! (`k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go`, `ScaleREST`): an
//! `autoscaling/v1` `Scale` read from the object's replica and selector paths, and written
//! back as an update of the object that sets its replica path.

use apfkit_runtime::Object;
use apfkit_runtime::scheme::UnknownFields;
use axum::extract::Request;
use axum::http::header;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::action::Action;
use super::media::{self, Format, Wanted};
use super::query::Query;
use super::request::{Target, header_text, read_body};
use super::response::{content_type, respond, written};
use super::server::ApiServer;
use crate::error::{ApiError, Cause, Subject};
use crate::store::UpdateKind;
use apfkit_runtime::kind::ScaleSubresource;

/// Serves `GET`, `PUT` and `PATCH` (JSON or merge patch) of `<object>/scale`, the actions
/// [`Action::of`] lets through to a subresource.
pub(super) async fn serve<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    paths: &ScaleSubresource,
    request: Request,
    action: Action,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let query = Query::parse(request.uri().query())?;
    let accept = header_text(&request, header::ACCEPT);
    let content = header_text(&request, header::CONTENT_TYPE);
    let format =
        match media::negotiate(accept.as_deref(), false, false, media::Protobuf::No, false)? {
            Wanted::Object(format) => format,
            _ => return Err(ApiError::not_acceptable(&[media::JSON])),
        };
    if let Some(options) = action.write_options() {
        query.check_dry_run(options)?;
    }
    let change = match action {
        Action::Get => None,
        Action::Update => Some(Change::Replace(parse(&read_body(request).await?)?)),
        Action::Patch => {
            let body = read_body(request).await?.to_vec();
            let kind = content.as_deref().unwrap_or_default();
            let kind = kind.split(';').next().unwrap_or_default().trim();
            match kind {
                "application/json-patch+json" => Some(Change::Json(body)),
                // A Scale has no list: a strategic merge patch is a merge patch.
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    Some(Change::Merge(body))
                }
                _ => {
                    return Err(ApiError::unsupported_patch(&[
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/strategic-merge-patch+json",
                    ]));
                }
            }
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let place = target.place();
    let codec = target.codec();
    let current = server.objects.get(&target.served, place).await?;
    let Some(change) = change else {
        let value = codec
            .encode(current, &mut Vec::new())
            .map_err(ApiError::internal)?;
        return respond_scale(&scale_of(&value, paths), format);
    };
    let mut value = codec
        .encode(current, &mut Vec::new())
        .map_err(ApiError::internal)?;
    let scale = match change {
        Change::Replace(scale) => scale,
        Change::Json(patch) => {
            let mut scale = scale_of(&value, paths);
            let validated = query.field_validation != UnknownFields::Ignore;
            crate::patch::json_patch(&mut scale, &patch, validated)
                .map_err(|error| ApiError::from_patch(&error, &patch))?;
            scale
        }
        Change::Merge(patch) => {
            let mut scale = scale_of(&value, paths);
            crate::patch::merge_patch(&mut scale, &patch)
                .map_err(|error| ApiError::from_patch(&error, &patch))?;
            scale
        }
    };
    let replicas = replicas_of(&scale, place.name)?;
    set(&mut value, &paths.spec_replicas_path, json!(replicas));
    // The Scale's resourceVersion, when it names one, is the object's precondition.
    let expected = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty());
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        match expected {
            Some(rv) => metadata.insert("resourceVersion".into(), rv.into()),
            None => metadata.remove("resourceVersion"),
        };
    }
    let object = codec
        .decode(&value, UnknownFields::Ignore, &mut Vec::new())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let written = server
        .objects
        .update(
            &target.served,
            place,
            object,
            &codec.api_version(),
            UpdateKind::Main,
            query.dry_run,
        )
        .await?;
    let value = codec
        .encode(written.object, &mut Vec::new())
        .map_err(ApiError::internal)?;
    respond_scale(&scale_of(&value, paths), format)
}

/// What a write to `/scale` asks for.
enum Change {
    /// `PUT` of a Scale.
    Replace(Value),
    /// A JSON patch of the current Scale.
    Json(Vec<u8>),
    /// A merge patch of the current Scale.
    Merge(Vec<u8>),
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not a JSON Scale: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the body is not a JSON Scale"));
    }
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("Scale");
    if kind != "Scale" {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind (Scale)"
        )));
    }
    Ok(value)
}

/// `spec.replicas` of a Scale, checked as kube-apiserver's `ValidateScale` checks it.
fn replicas_of(scale: &Value, name: &str) -> Result<i64, ApiError> {
    let subject = Subject {
        group: "autoscaling".to_owned(),
        kind: "Scale".to_owned(),
        name: name.to_owned(),
    };
    let replicas = scale.pointer("/spec/replicas").unwrap_or(&Value::Null);
    let invalid = |message: String| {
        ApiError::invalid(
            &subject,
            vec![Cause {
                reason: "FieldValueInvalid".to_owned(),
                message,
                field: "spec.replicas".to_owned(),
            }],
        )
    };
    match replicas {
        Value::Null => Ok(0),
        Value::Number(n) => match n.as_i64().filter(|r| i32::try_from(*r).is_ok()) {
            Some(r) if r >= 0 => Ok(r),
            Some(r) => Err(invalid(format!(
                "Invalid value: {r}: must be greater than or equal to 0"
            ))),
            None => Err(ApiError::bad_request(format!(
                "spec.replicas: {n} is not a 32-bit integer"
            ))),
        },
        other => Err(ApiError::bad_request(format!(
            "spec.replicas: {other} is not an integer"
        ))),
    }
}

/// The Scale of an object: its replicas at the spec and status paths (0 when absent) and its
/// selector at the selector path, with the object's identity.
pub fn scale_of(object: &Value, paths: &ScaleSubresource) -> Value {
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut kept = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = metadata.get(field) {
            kept.insert(field.into(), value.clone());
        }
    }
    let replicas = |path: &str| get(object, path).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&paths.status_replicas_path)});
    if let Some(selector) = paths
        .label_selector_path
        .as_deref()
        .and_then(|path| get(object, path))
        .and_then(Value::as_str)
    {
        status["selector"] = selector.into();
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": kept,
        "spec": {"replicas": replicas(&paths.spec_replicas_path)},
        "status": status,
    })
}

/// The fields of a simple JSON path (`.spec.replicas`).
fn fields(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|f| !f.is_empty())
}

fn get<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    fields(path).try_fold(object, |value, field| value.get(field))
}

/// Sets the value at a simple JSON path, making the objects on the way.
fn set(object: &mut Value, path: &str, value: Value) {
    let names: Vec<&str> = fields(path).collect();
    let Some((last, parents)) = names.split_last() else {
        return;
    };
    let mut at = object;
    for name in parents {
        if !at.get(*name).is_some_and(Value::is_object)
            && let Some(map) = at.as_object_mut()
        {
            map.insert((*name).to_owned(), json!({}));
        }
        match at.get_mut(*name) {
            Some(next) => at = next,
            None => return,
        }
    }
    if let Some(map) = at.as_object_mut() {
        map.insert((*last).to_owned(), value);
    }
}

fn respond_scale(scale: &Value, format: Format) -> Result<Response, ApiError> {
    let format = match format {
        Format::Protobuf => Format::Json,
        other => other,
    };
    Ok(respond(200, content_type(format), written(scale, format)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ScaleSubresource {
        ScaleSubresource {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        }
    }

    #[test]
    fn a_scale_reads_the_paths_and_writes_the_spec_path() {
        let object = json!({
            "metadata": {"name": "g", "namespace": "n", "uid": "u", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=g"},
        });
        assert_eq!(
            scale_of(&object, &paths()),
            json!({
                "kind": "Scale",
                "apiVersion": "autoscaling/v1",
                "metadata": {"name": "g", "namespace": "n", "uid": "u", "resourceVersion": "7"},
                "spec": {"replicas": 3},
                "status": {"replicas": 2, "selector": "app=g"},
            })
        );
        let mut bare = json!({"metadata": {"name": "g"}});
        assert_eq!(scale_of(&bare, &paths())["spec"]["replicas"], 0);
        set(&mut bare, ".spec.replicas", json!(5));
        assert_eq!(bare["spec"], json!({"replicas": 5}));
    }

    #[test]
    fn replicas_are_checked_as_kube_apiserver_checks_them() {
        assert_eq!(
            replicas_of(&json!({"spec": {"replicas": 4}}), "g").unwrap(),
            4
        );
        let negative = replicas_of(&json!({"spec": {"replicas": -1}}), "g").unwrap_err();
        assert_eq!(negative.code, 422);
        assert!(
            negative
                .message
                .contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
            "{}",
            negative.message
        );
        for bad in [
            json!({"spec": {"replicas": "3"}}),
            json!({"spec": {"replicas": 1.5}}),
            json!({"spec": {"replicas": 1e12}}),
        ] {
            assert_eq!(replicas_of(&bad, "g").unwrap_err().code, 400, "{bad}");
        }
    }
}
