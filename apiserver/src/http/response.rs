//! What the handlers share about answers: bodies with their media type, objects in the URL's
//! version, `Status` errors, `Warning` headers, tables, and lists around written items.

use apfkit_runtime::Object;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::media::{self, Format};
use super::query::IncludeObject;
use super::request::Target;
use crate::error::ApiError;
use crate::store::VersionCodec;

/// A response with a body.
pub(super) fn respond(code: u16, content_type: &str, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// An answer as Go's `http.Error` writes it: `message` and a newline as plain text, with
/// `X-Content-Type-Options: nosniff` (kube-apiserver's 429s, its authorizer's 500s,
/// kube-aggregator's 503s).
pub fn plain_text(status: StatusCode, message: &str) -> Response {
    apfkit_https::answers::go_error(status, message)
}

/// kube-apiserver's `responsewriters.InternalError`: 500, `Internal Server Error: "URI":
/// ERROR` in plain text, nothing in it that reads as HTML.
pub(super) fn internal_error_text(uri: &str, error: &str) -> Response {
    let message = format!("Internal Server Error: {uri:?}: {error}")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    plain_text(StatusCode::INTERNAL_SERVER_ERROR, &message)
}

pub(super) fn json_response(code: u16, value: &serde_json::Value) -> Response {
    respond(
        code,
        media::JSON,
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// A `Status` answered with `code`, which is also the audit event's `responseStatus`
/// (`LogResponseObject` copies a `Status` answer's status, message, reason and details).
pub(super) fn status_response(code: u16, status: serde_json::Value) -> Response {
    with_status(json_response(code, &status), status)
}

/// `response`, which answers with `status`, marked so for the audit event.
fn with_status(mut response: Response, status: serde_json::Value) -> Response {
    response
        .extensions_mut()
        .insert(crate::audit::ResponseStatus(std::sync::Arc::new(status)));
    response
}

/// An error as a `Status` in JSON.
pub(super) fn error_response(error: &ApiError) -> Response {
    error_response_in(error, Format::Json)
}

/// The format of the errors answered to a request whose `Accept` header is `accept`: what
/// it negotiates for a `Status` ([`media::error_format`]), as kube-apiserver's
/// `ErrorNegotiated` writes errors.
pub(super) fn error_format(accept: Option<&HeaderValue>) -> Format {
    media::error_format(accept.and_then(|v| v.to_str().ok()))
}

/// An error as a `Status` in `format` (in JSON if it cannot be written so).
pub(super) fn error_response_in(error: &ApiError, format: Format) -> Response {
    let status = error.status();
    let written = match format {
        Format::Json => None,
        Format::Yaml => serde_saphyr::to_string(&status)
            .ok()
            .map(String::into_bytes),
        Format::Protobuf => apfkit_wire::shaped::write_enveloped(&status, |api_version, kind| {
            (api_version == "v1" && kind == "Status").then_some(&apfkit_wire::shaped::STATUS)
        })
        .and_then(Result::ok),
    };
    let mut response = match written {
        Some(body) => with_status(respond(error.code, content_type(format), body), status),
        None => status_response(error.code, status),
    };
    // As responsewriters.ErrorNegotiated: a retry hint in the details is also the header.
    if let Some(seconds) = error.retry_after_seconds.filter(|s| *s > 0) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    with_warnings(response, &error.warnings)
}

/// Adds `Warning` headers as kube-apiserver writes them (`299 - "text"`).
pub(super) fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// The media type of a format for a response.
pub(super) fn content_type(format: Format) -> &'static str {
    format.media_type()
}

/// An object in the URL's version, written as `format` asks.
pub(super) fn encode<H>(
    codec: &dyn VersionCodec<H>,
    object: H,
    format: Format,
) -> Result<Vec<u8>, ApiError> {
    codec
        .encode_to(object, format.encoding(), &mut Vec::new())
        .map_err(ApiError::internal)
}

pub(super) fn object_response<H>(
    code: u16,
    codec: &dyn VersionCodec<H>,
    object: H,
    format: Format,
    warnings: &[String],
) -> Result<Response, ApiError> {
    let body = encode(codec, object, format)?;
    Ok(with_warnings(
        respond(code, content_type(format), body),
        warnings,
    ))
}

/// A JSON value written as `format` asks: JSON, YAML, or in protobuf the one kind of
/// `meta.k8s.io` a read transformed into is written in it by kube, `PartialObjectMetadata`
/// (and its list, whose fields v1beta1 numbers otherwise).
pub(super) fn written(value: &Value, format: Format) -> Result<Vec<u8>, ApiError> {
    use apfkit_wire::shaped::{
        PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST, PARTIAL_OBJECT_METADATA_LIST_V1BETA1,
    };
    match format {
        Format::Yaml => serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .map_err(ApiError::internal),
        Format::Protobuf => {
            let shape_of = |api_version: &str, kind: &str| match (api_version, kind) {
                ("meta.k8s.io/v1" | "meta.k8s.io/v1beta1", "PartialObjectMetadata") => {
                    Some(&PARTIAL_OBJECT_METADATA)
                }
                ("meta.k8s.io/v1", "PartialObjectMetadataList") => {
                    Some(&PARTIAL_OBJECT_METADATA_LIST)
                }
                ("meta.k8s.io/v1beta1", "PartialObjectMetadataList") => {
                    Some(&PARTIAL_OBJECT_METADATA_LIST_V1BETA1)
                }
                _ => None,
            };
            apfkit_wire::shaped::write_enveloped(value, shape_of)
                .unwrap_or_else(|| Err("no protobuf message for this kind".to_owned()))
                .map_err(ApiError::internal)
        }
        _ => serde_json::to_vec(value).map_err(ApiError::internal),
    }
}

/// A `Table` asked for: what each row carries of its object, and the `apiVersion` of
/// `meta.k8s.io` it is written in (with its rows' `PartialObjectMetadata`), as kube-apiserver
/// writes the version the client asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsTable {
    pub(super) include: IncludeObject,
    pub(super) api_version: &'static str,
}

/// What a read answers instead of the objects themselves, as the client's `Accept` asked.
#[derive(Debug, Clone, Copy)]
pub(super) enum Transform {
    /// A `Table`.
    Table(AsTable),
    /// `PartialObjectMetadata`, or its list, in `meta.k8s.io` version `api_version`.
    Metadata {
        /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
        api_version: &'static str,
        /// Whether the list form was asked for.
        list: bool,
    },
}

/// `objects` (one object read when `!is_list`) as `transform` says, with the list's
/// `metadata`: kube-apiserver's `transformResponseObject`.
///
/// # Errors
///
/// 406 for a metadata form that is not the read's (a list asked of one object, or the
/// reverse), in kube-apiserver's words; encoding errors.
pub(super) fn transformed<H: Object + Clone>(
    target: &Target<H>,
    objects: Vec<H>,
    transform: Transform,
    metadata: Value,
    is_list: bool,
) -> Result<Value, ApiError> {
    let (api_version, list) = match transform {
        Transform::Table(as_table) => return table_of(target, objects, as_table, metadata),
        Transform::Metadata { api_version, list } => (api_version, list),
    };
    if list != is_list {
        let (asked, what) = if list {
            ("PartialObjectMetadataList", "is not a list")
        } else {
            ("PartialObjectMetadata", "is a list")
        };
        return Err(ApiError::not_acceptable_because(format!(
            "you requested {asked}, but the requested object {what} ({})",
            go_type(target, is_list)
        )));
    }
    let mut partials = Vec::with_capacity(objects.len());
    for object in objects {
        let value = target
            .codec()
            .encode(object, &mut Vec::new())
            .map_err(ApiError::internal)?;
        partials.push(partial_metadata(&value, api_version));
    }
    if !is_list {
        return Ok(partials.pop().unwrap_or_default());
    }
    Ok(serde_json::json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": api_version,
        "metadata": metadata,
        // Go's `encoding/json` writes a nil slice as null.
        "items": if partials.is_empty() { Value::Null } else { Value::Array(partials) },
    }))
}

/// The Go type kube-apiserver's handler holds for a read of `target` (`%T`): the internal
/// type of a built-in kind, `unstructured` for a custom resource.
fn go_type<H>(target: &Target<H>, list: bool) -> String {
    let config = &target.served.config;
    let suffix = if list { "List" } else { "" };
    if config.storage_encoding == apfkit_runtime::scheme::StorageEncoding::Json && config.custom {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match config.group.split('.').next().unwrap_or_default() {
        "" => "core",
        package => package,
    };
    format!("*{package}.{}{suffix}", config.kind)
}

/// A `Table` of `objects` with the resource's printer (or the default columns), rows in the
/// printer's order, each row carrying what `includeObject` asks for.
pub(super) fn table_of<H: Object + Clone>(
    target: &Target<H>,
    objects: Vec<H>,
    as_table: AsTable,
    metadata: Value,
) -> Result<Value, ApiError> {
    let printer = target.served.strategy().printer();
    let printed_in = printer
        .and_then(|p| target.served.version(&p.version))
        .unwrap_or(target.codec());
    let mut printed = Vec::with_capacity(objects.len());
    for object in objects {
        let value = printed_in
            .encode(object.clone(), &mut Vec::new())
            .map_err(ApiError::internal)?;
        printed.push((value, object));
    }
    if let Some(order) = printer.and_then(|p| p.order) {
        printed.sort_by(|(a, _), (b, _)| order(a, b));
    }
    let mut rows = Vec::with_capacity(printed.len());
    for (value, object) in printed {
        let object = match as_table.include {
            // The row's empty `RawExtension`, which Go writes as `null`.
            IncludeObject::None => Value::Null,
            IncludeObject::Metadata => partial_metadata(&value, as_table.api_version),
            IncludeObject::Object => target
                .codec()
                .encode(object, &mut Vec::new())
                .map_err(ApiError::internal)?,
        };
        rows.push(serde_json::json!({"cells": cells(printer, &value), "object": object}));
    }
    Ok(table_document(
        printer,
        rows,
        metadata,
        as_table.api_version,
    ))
}

/// A watch's bookmark (`bookmark`: an object of the kind with only its metadata) as
/// `transform` says, as kube's watch encoder transforms it: `PartialObjectMetadata`, or a
/// one-row `Table` whose row is printed from the bookmark and carries its metadata when it
/// ends a WatchList's initial events (whatever `includeObject` asks), else what
/// `includeObject` asks.
pub(super) fn bookmark_transformed<H: Object + Clone>(
    target: &Target<H>,
    bookmark: &Value,
    transform: Transform,
) -> Value {
    let metadata = serde_json::json!({"resourceVersion": bookmark["metadata"]["resourceVersion"]});
    let as_table = match transform {
        Transform::Metadata { api_version, .. } => {
            return partial_metadata(bookmark, api_version);
        }
        Transform::Table(as_table) => as_table,
    };
    let ends_initial_events =
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true";
    let object = match as_table.include {
        IncludeObject::Object if !ends_initial_events => bookmark.clone(),
        IncludeObject::None if !ends_initial_events => Value::Null,
        _ => partial_metadata(bookmark, as_table.api_version),
    };
    let printer = target.served.strategy().printer();
    let row = serde_json::json!({"cells": cells(printer, bookmark), "object": object});
    table_document(printer, vec![row], metadata, as_table.api_version)
}

/// `value`'s metadata as a `PartialObjectMetadata` of `meta.k8s.io` version `api_version`.
fn partial_metadata(value: &Value, api_version: &str) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": value.get("metadata").cloned().unwrap_or_default(),
    })
}

/// A row's cells of `value`: the printer's, or the default columns'.
fn cells(printer: Option<&crate::table::Printer>, value: &Value) -> Vec<Value> {
    match printer {
        Some(printer) => (printer.cells)(value),
        None => crate::table::default_cells(value),
    }
}

/// A `Table` of `rows` in `api_version`, with the printer's columns (or the default ones).
fn table_document(
    printer: Option<&crate::table::Printer>,
    rows: Vec<Value>,
    metadata: Value,
    api_version: &str,
) -> Value {
    let default_columns;
    let columns: &[crate::table::Column] = match printer {
        Some(printer) => &printer.columns,
        None => {
            default_columns = crate::table::default_columns();
            &default_columns
        }
    };
    serde_json::json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": crate::table::column_definitions(columns),
        "rows": rows,
    })
}

/// Appends an item of a built-in kind's list, given as compact JSON, to `out` as
/// kube-apiserver writes it in JSON and YAML: without `kind` and `apiVersion` (a typed list's
/// items carry no `TypeMeta`; a custom resource's unstructured list keeps them). The two are
/// the first members of every encoder here (Go's order, or sorted), and are skipped without a
/// copy; anything else is read and written again.
pub(super) fn push_typed_item(item: &[u8], out: &mut Vec<u8>) {
    /// The members' text after `{`, without a leading `"kind":"…",` or `"apiVersion":"…",`.
    fn after_type_field(rest: &[u8]) -> Option<&[u8]> {
        let value = rest
            .strip_prefix(b"\"kind\":\"")
            .or_else(|| rest.strip_prefix(b"\"apiVersion\":\""))?;
        let end = value.iter().position(|&b| b == b'"' || b == b'\\')?;
        if value[end] != b'"' {
            return None;
        }
        let after = &value[end + 1..];
        Some(after.strip_prefix(b",").unwrap_or(after))
    }
    if let Some(members) = item.strip_prefix(b"{")
        && let Some(rest) = after_type_field(members)
        && let Some(rest) = after_type_field(rest)
        && !rest.starts_with(b"\"kind\"")
        && !rest.starts_with(b"\"apiVersion\"")
    {
        out.push(b'{');
        out.extend_from_slice(rest);
        return;
    }
    match serde_json::from_slice::<Value>(item) {
        Ok(Value::Object(mut members)) => {
            members.remove("kind");
            members.remove("apiVersion");
            if serde_json::to_writer(&mut *out, &members).is_err() {
                out.extend_from_slice(item);
            }
        }
        _ => out.extend_from_slice(item),
    }
}

/// A `<Kind>List` around items already written as compact JSON.
pub(super) fn list_body<H>(
    scheme: &apfkit_runtime::scheme::Scheme<()>,
    target: &Target<H>,
    metadata: Value,
    items: &[Vec<u8>],
    format: Format,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(items.iter().map(Vec::len).sum::<usize>() + 256);
    body.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut body, &target.served.list_kind()).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut body, &target.codec().api_version()).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut body, &metadata).map_err(ApiError::internal)?;
    body.extend_from_slice(b",\"items\":[");
    // Protobuf is written from the items as they are (its items have no type fields).
    let typed = !target.served.config.custom && format != Format::Protobuf;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        if typed {
            push_typed_item(item, &mut body);
        } else {
            body.extend_from_slice(item);
        }
    }
    body.extend_from_slice(b"]}");
    match format {
        Format::Json => Ok(body),
        Format::Yaml => {
            let value: Value = serde_json::from_slice(&body).map_err(ApiError::internal)?;
            serde_saphyr::to_string(&value)
                .map(String::into_bytes)
                .map_err(ApiError::internal)
        }
        Format::Protobuf => {
            let value: Value = serde_json::from_slice(&body).map_err(ApiError::internal)?;
            scheme
                .encode_value(&value, apfkit_runtime::scheme::Encoding::Protobuf)
                .map_err(ApiError::internal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push_typed_item;

    #[test]
    fn a_typed_lists_items_lose_their_type_fields() {
        let cases: [(&str, &str); 5] = [
            // Go's order, then sorted keys.
            (
                r#"{"kind":"FlowSchema","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (
                r#"{"apiVersion":"v1","kind":"Namespace","metadata":{},"spec":{}}"#,
                r#"{"metadata":{},"spec":{}}"#,
            ),
            // Elsewhere, or with an escape: read and written again.
            (
                r#"{"metadata":{"name":"kind"},"kind":"Service","apiVersion":"v1"}"#,
                r#"{"metadata":{"name":"kind"}}"#,
            ),
            (
                r#"{"kind":"A\"B","apiVersion":"v1","spec":1}"#,
                r#"{"spec":1}"#,
            ),
            // Not an object: as it is.
            ("[1]", "[1]"),
        ];
        for (item, typed) in cases {
            let mut written = b"[".to_vec();
            push_typed_item(item.as_bytes(), &mut written);
            written.push(b']');
            let written: serde_json::Value = serde_json::from_slice(&written).unwrap();
            let written = written[0].clone();
            let wanted: serde_json::Value = serde_json::from_str(typed).unwrap();
            assert_eq!(written, wanted, "{item}");
        }
    }
}
