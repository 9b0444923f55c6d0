//! What the handlers share about a request: what a resource request is about ([`Target`],
//! resolved from the request's [`RequestInfo`]), its headers and bounded body, and a body
//! decoded as the URL's kind as kube-apiserver decodes it.

use std::sync::Arc;

use apfkit_runtime::Object;
use apfkit_runtime::scheme::{
    Document, ErrorKind, ReadError, UnknownFields, go_yaml_error, read_first_yaml,
};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::header;
use serde_json::{Map, Value};

use super::media::{self, Format};
use super::query::Query;
use super::server::{ApiServer, Catalog, MAX_BODY_BYTES};
use crate::error::ApiError;
use crate::request_info::RequestInfo;
use crate::store::{Place, Served, VersionCodec};

/// What a resource request is about.
pub(super) struct Target<H: 'static> {
    pub(super) served: Arc<Served<H>>,
    /// The index of the URL's version in the resource's versions.
    pub(super) version: usize,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) status: bool,
    /// The `/scale` subresource.
    pub(super) scale: bool,
    /// The `/finalize` subresource (Namespaces').
    pub(super) finalize: bool,
    /// A subresource that takes only a POST (a `super::SubresourceCreator`'s), by name.
    pub(super) created: Option<String>,
}

impl<H> Target<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The resource request `info` reads, among the resources `catalog` serves: 404 for a
    /// resource, version or subresource not served, a name without the namespace of a
    /// namespaced resource, or a namespace for a cluster-scoped one.
    pub(super) fn resolve(catalog: &Catalog<H>, info: &RequestInfo) -> Result<Self, ApiError> {
        let parts: Vec<&str> = info.parts.iter().map(String::as_str).collect();
        let [plural, tail @ ..] = parts.as_slice() else {
            return Err(ApiError::no_route());
        };
        let served = catalog
            .served(&info.api_group, plural)
            .cloned()
            .ok_or_else(ApiError::no_route)?;
        // `namespaces/NAME[/status|/finalize]` is read as a namespace and left in the parts
        // (kube-apiserver's reading, for its Namespaces): then it names no namespace here.
        let own_path =
            parts.first() == Some(&"namespaces") && parts.get(1) == Some(&info.namespace.as_str());
        let namespace = (!info.namespace.is_empty() && !own_path).then(|| info.namespace.clone());
        // `namespaces//RESOURCE` names an empty namespace, not all of them.
        let empty_namespace = info.namespace.is_empty() && info.path.contains("/namespaces//");
        if empty_namespace || (namespace.is_some() && !served.config.namespaced) {
            return Err(ApiError::no_route());
        }
        let version = served
            .versions
            .iter()
            .position(|c| c.version() == info.api_version)
            .ok_or_else(ApiError::no_route)?;
        let (mut status, mut scale, mut finalize) = (false, false, false);
        let mut created = None;
        let name = match tail {
            [] => None,
            [name] => Some((*name).to_owned()),
            [name, "status"] if served.config.status => {
                status = true;
                Some((*name).to_owned())
            }
            [name, "scale"] if served.config.scale.is_some() => {
                scale = true;
                Some((*name).to_owned())
            }
            [name, "finalize"] if served.config.finalize => {
                finalize = true;
                Some((*name).to_owned())
            }
            [name, subresource]
                if served
                    .config
                    .created_subresources
                    .iter()
                    .any(|(own, _)| own == subresource) =>
            {
                created = Some((*subresource).to_owned());
                Some((*name).to_owned())
            }
            _ => return Err(ApiError::no_route()),
        };
        if served.config.namespaced && namespace.is_none() && name.is_some() {
            return Err(ApiError::no_route());
        }
        if name.as_deref().is_some_and(str::is_empty) {
            // `…//status`: the route matches with an empty name, which its handler refuses.
            return Err(if status || scale || finalize || created.is_some() {
                ApiError::bad_request("name must be provided")
            } else {
                ApiError::no_route()
            });
        }
        Ok(Target {
            served,
            version,
            namespace,
            name,
            status,
            scale,
            finalize,
            created,
        })
    }
}

impl<H> Target<H> {
    /// The subresource the URL names, as managed fields record it.
    pub(super) fn subresource(&self) -> Option<&str> {
        if self.status {
            Some("status")
        } else if self.scale {
            Some("scale")
        } else if self.finalize {
            Some("finalize")
        } else {
            self.created.as_deref()
        }
    }

    /// The codec of the URL's version.
    pub(super) fn codec(&self) -> &dyn VersionCodec<H> {
        &*self.served.versions[self.version]
    }

    pub(super) fn place(&self) -> Place<'_> {
        Place {
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref().unwrap_or_default(),
        }
    }
}

/// A write's request: what it is about and its body.
pub(super) struct Write<'a, H: 'static> {
    pub(super) target: &'a Target<H>,
    /// Who writes (the strategy's admission checks read it).
    pub(super) user: &'a crate::auth::UserInfo,
    pub(super) query: &'a Query,
    pub(super) content_type: Option<&'a str>,
    pub(super) user_agent: Option<&'a str>,
    pub(super) body: &'a [u8],
    pub(super) format: Format,
    /// The request's audit, when it is audited.
    pub(super) audit: Option<crate::audit::AuditContext>,
}

impl<H: apfkit_runtime::Object + Clone + Send + Sync + 'static> Write<'_, H> {
    /// Logs the object decoded from the body in the request's audit event, as kube's create
    /// and update handlers do (`audit.LogRequestObject`): written in the request's version,
    /// with what decoding defaulted.
    pub(super) fn log_request_object(&self, object: &H) {
        if let Some(audit) = &self.audit {
            audit.log_request_object(object.metadata(), || {
                let mut json = Vec::new();
                self.target
                    .codec()
                    .encode_into(
                        object.clone(),
                        apfkit_runtime::scheme::Encoding::Json,
                        &mut json,
                        &mut Vec::new(),
                    )
                    .ok()?;
                crate::audit::compact_json(&json)
            });
        }
    }
}

/// The manager a write records: `fieldManager` (checked as kube-apiserver checks it, the
/// options named by `options`) or the user agent's first word.
pub(super) fn writer_of<H>(write: &Write<'_, H>, options: &str) -> Result<String, ApiError> {
    let given = write.query.field_manager.as_deref();
    let causes = given
        .map(crate::fields::field_manager_causes)
        .unwrap_or_default();
    if !causes.is_empty() {
        return Err(invalid_options(options, causes));
    }
    Ok(crate::fields::manager_name(given, write.user_agent))
}

/// 422 about a request's options (`PatchOptions.meta.k8s.io "" is invalid: ...`).
pub(super) fn invalid_options(options: &str, causes: Vec<crate::error::Cause>) -> ApiError {
    let subject = crate::error::Subject {
        group: "meta.k8s.io".to_owned(),
        kind: options.to_owned(),
        name: String::new(),
    };
    ApiError::invalid(&subject, causes)
}

/// A header's value, when it is text.
pub(super) fn header_text(request: &Request, name: header::HeaderName) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Bytes past the body limit read and dropped before a 413 is answered, so that the client,
/// still sending, reads the answer instead of a reset (Go's HTTP server reads up to 256 KiB
/// of an unread body for the same reason).
pub(super) const DRAIN_BYTES: usize = 256 << 10;

/// Reads a request body of at most [`MAX_BODY_BYTES`]; a longer one (declared or sent) is
/// drained up to [`DRAIN_BYTES`] more and answered 413.
pub(super) async fn read_body(request: Request) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt as _;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut too_large = declared.is_some_and(|length| length > MAX_BODY_BYTES as u64);
    let mut body = request.into_body();
    let mut kept = Vec::new();
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        read += data.len();
        if read > MAX_BODY_BYTES {
            too_large = true;
        }
        if too_large {
            kept = Vec::new();
            if read > MAX_BODY_BYTES + DRAIN_BYTES {
                break;
            }
        } else {
            kept.extend_from_slice(&data);
        }
    }
    if too_large {
        return Err(ApiError::too_large(MAX_BODY_BYTES));
    }
    Ok(Bytes::from(kept))
}

/// Reads and drops what a client sends of a body that is refused before it is read (up to
/// [`DRAIN_BYTES`], for at most a second), so that an HTTP/2 client still sending reads the
/// answer rather than a reset of its stream.
pub(super) async fn drain(body: axum::body::Body) {
    use http_body_util::BodyExt as _;
    let mut body = body;
    let draining = async {
        let mut read = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), draining).await;
}

/// A request body, read as `Content-Type` says, as the URL's kind: missing `apiVersion` and
/// `kind` taken from the URL, others refused; fields reported as `fieldValidation` says.
pub(super) fn decode_body<H>(
    server: &ApiServer<H>,
    write: &Write<'_, H>,
) -> Result<(H, Vec<String>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (target, query, body) = (write.target, write.query, write.body);
    let format = media::body_format(write.content_type)?;
    if format == Format::Protobuf && !target.served.protobuf() {
        return Err(ApiError::unsupported_media_type());
    }
    let unrecognized = |why: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {why} ({})",
            target.codec().kind(),
            summarize(body)
        ))
    };
    match format {
        Format::Json => {
            // kube's JSON serializer finds the kind first, with Go's decoder on the whole
            // body: its syntax errors, and its type errors of a body that is no object.
            if let Some(error) = apfkit_wire::go_scanner::syntax_error(body) {
                return Err(unrecognized(format!(
                    "couldn't get version/kind; json parse error: {}",
                    error.message
                )));
            }
            // `null` decodes into the kind's zero value (the wire readers take it for no
            // document at all).
            if body.trim_ascii() == b"null" {
                return decode_document(target, query, made_here(Value::Object(Map::new())));
            }
        }
        Format::Protobuf if !body.starts_with(apfkit_runtime::scheme::PROTOBUF_PREFIX) => {
            // The prefix as Go's `%v` prints bytes: `[107 56 115 0]`.
            let prefix: Vec<String> = apfkit_runtime::scheme::PROTOBUF_PREFIX
                .iter()
                .map(u8::to_string)
                .collect();
            return Err(unrecognized(format!(
                "provided data does not appear to be a protobuf message, expected prefix [{}]",
                prefix.join(" ")
            )));
        }
        Format::Protobuf => {}
        Format::Yaml if body.iter().all(u8::is_ascii_whitespace) => {
            // An empty YAML document is JSON's `null`.
            return decode_document(target, query, made_here(Value::Object(Map::new())));
        }
        Format::Yaml => {}
    }
    let document = if format == Format::Yaml {
        // go-yaml reads the first document, whatever follows it.
        match read_first_yaml(body, &server.body_limits) {
            Ok(Some(document)) => document,
            // Comments alone: an empty document.
            Ok(None) => {
                return decode_document(target, query, made_here(Value::Object(Map::new())));
            }
            Err(error) => {
                let go = std::str::from_utf8(body).ok().and_then(go_yaml_error);
                return Err(
                    go.map_or_else(|| ApiError::bad_request(error.to_string()), unrecognized)
                );
            }
        }
    } else {
        one_document(server, body)?
    };
    if format != Format::Protobuf
        && let Some(why) = kind_error(&document.value)
    {
        return Err(unrecognized(format!(
            "couldn't get version/kind; json parse error: {why}"
        )));
    }
    // A custom resource is decoded as unstructured, which takes no kind from the URL.
    if target.served.config.custom
        && document
            .value
            .get("kind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        let data = match format {
            Format::Json => String::from_utf8_lossy(body).into_owned(),
            // The YAML serializer hands the decoder the document as JSON.
            _ => document.value.to_string(),
        };
        return Err(unrecognized(format!(
            "Object 'Kind' is missing in '{data}'"
        )));
    }
    decode_document(target, query, document).map_err(|error| {
        if error.code != 400 || format == Format::Protobuf {
            return error;
        }
        go_type_error(server, target, format, body).unwrap_or(error)
    })
}

/// A body of the URL's kind whose values do not fit its Go types, refused in the words of
/// Go's decoder (`K in version "v1" cannot be handled as a K: json: cannot unmarshal …`),
/// when the kind is one of kube's. A JSON body is walked in its own order; YAML in the
/// order of its keys, as Go's `YAMLToJSON` writes them.
fn go_type_error<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    format: Format,
    body: &[u8],
) -> Option<ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let codec = target.codec();
    let yaml_as_json;
    let json = match format {
        Format::Json => body,
        _ => {
            let document = read_first_yaml(body, &server.body_limits).ok()??;
            yaml_as_json = serde_json::to_vec(&document.value).ok()?;
            &yaml_as_json
        }
    };
    let error = crate::go_decode::type_error(&codec.api_version(), codec.kind(), json)?;
    Some(cannot_be_handled(target, &error))
}

/// What kube's create and update handlers make of a decoder's error (`transformDecodeError`):
/// `K in version "v1" cannot be handled as a K: <error>`.
fn cannot_be_handled<H>(target: &Target<H>, error: &dyn std::fmt::Display) -> ApiError
where
    H: Object + Clone + Send + Sync + 'static,
{
    let codec = target.codec();
    let kind = codec.kind();
    ApiError::bad_request(format!(
        "{kind} in version {:?} cannot be handled as a {kind}: {error}",
        codec.version()
    ))
}

/// What Go's decoder answers when it reads a body's `apiVersion` and `kind` into
/// apimachinery's `findKind` struct (members matched without regard to case): a body that is
/// not an object (nor `null`), or an `apiVersion` or `kind` that is not a string.
fn kind_error(value: &Value) -> Option<String> {
    let members = match value {
        Value::Null => return None,
        Value::Object(members) => members,
        other => {
            return Some(format!(
                "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \
                 \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \
                 \"json:\\\"kind,omitempty\\\"\" }}",
                apfkit_wire::go_scanner::value_kind(other)
            ));
        }
    };
    members.iter().find_map(|(key, value)| {
        let field = ["apiVersion", "kind"]
            .into_iter()
            .find(|field| key.eq_ignore_ascii_case(field))?;
        (!matches!(value, Value::String(_) | Value::Null)).then(|| {
            format!(
                "json: cannot unmarshal {} into Go struct field .{field} of type string",
                apfkit_wire::go_scanner::value_kind(value)
            )
        })
    })
}

/// kube's `summarizeData` of a body it could not decode, 30 bytes at most: the text of an
/// object, the hexadecimal of anything else, `<empty>` for nothing.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (shown, more) = (&body[..body.len().min(MAX)], body.len() > MAX);
    let mut out = match body.first() {
        None => return "<empty>".to_owned(),
        Some(b'{') => String::from_utf8_lossy(shown).into_owned(),
        Some(_) => shown.iter().map(|b| format!("{b:02x}")).collect(),
    };
    if more {
        out.push_str(" ...");
    }
    out
}

/// The one document of a body, read by the server's wire formats within its body limits.
fn one_document<H>(server: &ApiServer<H>, body: &[u8]) -> Result<Document, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut documents = Vec::new();
    server
        .objects
        .wire()
        .read_values(body, &server.body_limits, |document| {
            documents.push(document);
            Ok::<(), ReadError>(())
        })
        .map_err(|error| ApiError::bad_request(error.error.to_string()))?;
    <[_; 1]>::try_from(documents)
        .map(|[document]| document)
        .map_err(|documents| {
            ApiError::bad_request(format!(
                "the body holds {} documents; one object was expected",
                documents.len()
            ))
        })
}

/// A request body as one JSON value, read as `Content-Type` says (JSON, YAML, or protobuf in
/// its envelope through the server's wire formats) within the server's body limits.
///
/// # Errors
///
/// 415 for another content type, 400 for a body that does not read or holds more than one
/// document.
pub(super) fn body_value<H>(
    server: &ApiServer<H>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    media::body_format(content_type)?;
    one_document(server, body).map(|document| document.value)
}

/// A read document as the URL's kind; see [`decode_body`].
pub(super) fn decode_document<H>(
    target: &Target<H>,
    query: &Query,
    document: Document,
) -> Result<(H, Vec<String>), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut value = document.value.clone();
    let Value::Object(map) = &mut value else {
        return Err(ApiError::bad_request("the body is not an object"));
    };
    let expected_version = target.codec().api_version();
    match map.get("apiVersion") {
        None => {
            map.insert("apiVersion".into(), expected_version.clone().into());
        }
        Some(Value::String(v)) if *v == expected_version => {}
        Some(other) => {
            let found = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({found}) does not match the expected API version \
                 ({expected_version})"
            )));
        }
    }
    match map.get("kind") {
        None => {
            map.insert("kind".into(), target.codec().kind().into());
        }
        Some(Value::String(k)) if k == target.codec().kind() => {}
        Some(other) => {
            let found = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({found}) does not match the expected kind ({})",
                target.codec().kind()
            )));
        }
    }
    let unknown = query.field_validation;
    // Repeated keys (and fields a protobuf body's type lacks) go into one strict decoding
    // error with the unknown fields conversion finds, after them, as kube-apiserver's strict
    // decoder lists both (field_validation.go: `unknown field "spec.unknownField", duplicate
    // field "spec.replicas"`).
    let strict = unknown == UnknownFields::Strict;
    let reported = document
        .reported_fields(if strict { UnknownFields::Warn } else { unknown })
        .map_err(bad_decode)?;
    let strictly_refused = |message: Option<String>| {
        let mut fields: Vec<String> = message.into_iter().collect();
        fields.extend(reported.iter().map(ToString::to_string));
        ApiError::bad_request(format!("strict decoding error: {}", fields.join(", ")))
    };
    let mut warnings = Vec::new();
    let object = match target.codec().decode(&value, unknown, &mut warnings) {
        Err(error) if strict && !reported.is_empty() && error.kind == ErrorKind::UnknownFields => {
            let found = error.message.strip_prefix("strict decoding error: ");
            return Err(strictly_refused(Some(
                found.unwrap_or(&error.message).to_owned(),
            )));
        }
        // A custom resource's coercer answers in its own words.
        Err(error) if target.served.config.custom && error.kind == ErrorKind::InvalidValue => {
            return Err(cannot_be_handled(target, &error));
        }
        Err(error) => return Err(bad_decode(error)),
        Ok(_) if strict && !reported.is_empty() => return Err(strictly_refused(None)),
        Ok(object) => object,
    };
    let mut texts: Vec<String> = reported.iter().map(ToString::to_string).collect();
    texts.extend(warnings.iter().map(ToString::to_string));
    Ok((object, texts))
}

/// A document the server made (a patched or applied object): nothing to report of how it
/// was written.
pub(super) fn made_here(value: Value) -> Document {
    Document {
        index: 0,
        value,
        duplicate_fields: Vec::new(),
        unknown_fields: Vec::new(),
    }
}

pub(super) fn bad_decode(error: apfkit_runtime::scheme::SchemeError) -> ApiError {
    ApiError::bad_request(error.to_string())
}
