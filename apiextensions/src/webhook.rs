//! The client side of a CRD's conversion webhook: an `apiextensions.k8s.io/v1`
//! `ConversionReview` sent over HTTPS to the URL the CRD names, trusting its `caBundle`, and
//! the answer checked as kube-apiserver checks it
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`): the
//! request's `uid` echoed, `Success`, one object per object sent, each in the version asked
//! for, and of the object's metadata only labels and annotations taken from the answer.

use std::time::Duration;

use apfkit_runtime::field::{FieldError, go_quote};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

/// How long kube-apiserver waits for a conversion webhook.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read.
const MAX_RESPONSE_BYTES: u64 = 32 << 20;
/// The versions of `ConversionReview` kube-apiserver can send, the ones a CRD's
/// `conversionReviewVersions` choose from (the first of its list that is one of these).
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's conversion webhook.
pub struct Webhook {
    transport: Transport,
    /// The CRD's `conversionReviewVersions`, in its order.
    review_versions: Vec<String>,
}

/// How a review reaches the webhook.
enum Transport {
    /// Posted over HTTPS to the URL the CRD names.
    Https { url: String, agent: ureq::Agent },
    /// Answered by code of this process (a test's, with its Rust conversions).
    InProcess(ReviewHandler),
}

/// A conversion webhook's code run in this process: a `ConversionReview` (JSON) in, the
/// answering review out, or why there is none. `apfkit_runtime::review::review` answers one
/// from a scheme's conversions. Its answer is checked as a webhook's is.
#[derive(Clone)]
pub struct ReviewHandler(pub std::sync::Arc<AnswerReview>);

/// What a [`ReviewHandler`] runs.
pub type AnswerReview = dyn Fn(&[u8]) -> Result<Vec<u8>, String> + Send + Sync;

impl std::fmt::Debug for ReviewHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReviewHandler")
    }
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.transport {
            Transport::Https { url, .. } => f.debug_struct("Webhook").field("url", url).finish(),
            Transport::InProcess(_) => f.write_str("Webhook(in process)"),
        }
    }
}

/// A conversion the webhook could not do, in kube-apiserver's words, with the exchange that
/// showed it when there was one.
#[derive(Debug, Clone)]
pub struct Refused {
    /// Why, as kube-apiserver says it.
    pub why: String,
    /// The review sent and the answer got.
    pub exchange: Option<Exchange>,
}

/// One exchange with a webhook, for those who look at more than its result (a check of the
/// webhook itself): the review sent and the bytes answered.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The `ConversionReview` sent.
    pub review: Value,
    /// The webhook's answer, as it came (empty when none came).
    pub answer: Vec<u8>,
}

impl Webhook {
    /// The webhook `conversion` names (`spec.conversion.webhook` of a CRD).
    ///
    /// # Errors
    ///
    /// A `service` reference (apfkit serves no Services to resolve it), no URL, or a
    /// `caBundle` without a PEM certificate.
    pub fn new(conversion: &api::WebhookConversion) -> Result<Self, String> {
        let field = "spec.conversion.webhook.clientConfig";
        let config = conversion
            .client_config
            .as_ref()
            .ok_or_else(|| format!("{field}: Required value"))?;
        if config.service.is_some() {
            return Err(format!(
                "{field}.service: apfkit serve resolves no Services; give the webhook's url"
            ));
        }
        let url = config
            .url
            .clone()
            .ok_or_else(|| format!("{field}.url: Required value"))?;
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(bundle) = &config.ca_bundle {
            let certificates: Vec<ureq::tls::Certificate<'static>> =
                ureq::tls::parse_pem(&bundle.0)
                    .filter_map(|item| match item {
                        Ok(ureq::tls::PemItem::Certificate(certificate)) => Some(certificate),
                        _ => None,
                    })
                    .collect();
            if certificates.is_empty() {
                return Err(format!("{field}.caBundle: no PEM certificate"));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certificates));
        }
        let agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        Ok(Webhook {
            transport: Transport::Https { url, agent },
            review_versions: conversion.conversion_review_versions.clone(),
        })
    }

    /// A webhook whose reviews `handler` answers in this process, whatever URL the CRD
    /// names: nothing is sent over the network. Its reviews are `apiextensions.k8s.io/v1`.
    pub fn in_process(handler: ReviewHandler) -> Self {
        Webhook {
            transport: Transport::InProcess(handler),
            review_versions: vec!["v1".to_owned()],
        }
    }

    /// `object` converted to `api_version` by the webhook, as kube-apiserver converts one
    /// object: not sent when it is in that version already (nor when it holds nothing but
    /// `apiVersion` and `kind`), and the answer checked with kube-apiserver's messages.
    ///
    /// # Errors
    ///
    /// The webhook cannot be reached, fails, or answers something kube-apiserver would
    /// refuse, in kube-apiserver's words.
    pub fn convert(&self, object: Value, api_version: &str) -> Result<Value, String> {
        let empty = object.as_object().is_some_and(|map| {
            map.len() == 2 && map.contains_key("kind") && map.contains_key("apiVersion")
        });
        if empty || text(&object, "apiVersion") == api_version {
            let mut object = object;
            if let Value::Object(map) = &mut object {
                map.insert("apiVersion".into(), api_version.into());
            }
            return Ok(object);
        }
        let kind = kind_of(&object);
        let (converted, _) = self
            .exchange(std::slice::from_ref(&object), api_version, &kind)
            .map_err(|refused| refused.why)?;
        let converted = converted.into_iter().next().unwrap_or_default();
        check_one(&object, converted, api_version, &kind)
    }

    /// A list's `items` converted to `api_version` in one review, as kube-apiserver converts
    /// a list: only the items in another version are sent; `list_kind` names the list in
    /// messages (`group/version, Kind=WidgetList`).
    ///
    /// # Errors
    ///
    /// As [`Webhook::convert`], with kube-apiserver's messages for a list.
    pub fn convert_list(
        &self,
        list_kind: &str,
        items: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, String> {
        self.convert_list_exchanged(list_kind, items, api_version)
            .map(|(items, _)| items)
            .map_err(|refused| refused.why)
    }

    /// As [`Webhook::convert_list`], with the exchange (none when no item needed
    /// converting).
    ///
    /// # Errors
    ///
    /// As [`Webhook::convert_list`]; the exchange is given with the error when there was one.
    pub fn convert_list_exchanged(
        &self,
        list_kind: &str,
        mut items: Vec<Value>,
        api_version: &str,
    ) -> Result<(Vec<Value>, Option<Exchange>), Refused> {
        let sent: Vec<usize> = (0..items.len())
            .filter(|&i| text(&items[i], "apiVersion") != api_version)
            .collect();
        if sent.is_empty() {
            return Ok((items, None));
        }
        let objects: Vec<Value> = sent.iter().map(|&i| items[i].clone()).collect();
        let (converted, exchange) = self.exchange(&objects, api_version, list_kind)?;
        let fail = |why: String| Refused {
            why: format!("conversion webhook for {list_kind} {why}"),
            exchange: Some(exchange.clone()),
        };
        for (index, (&at, converted)) in sent.iter().zip(converted).enumerate() {
            let original = &items[at];
            // kube-apiserver counts from 1 in all but the first of these messages.
            let invalid = |why: String| {
                format!(
                    "returned invalid converted object at index {}: {why}",
                    index + 1
                )
            };
            let converted = typed(converted).map_err(|why| {
                fail(format!(
                    "returned invalid converted object at index {index}: {why}"
                ))
            })?;
            check_type(original, &converted, api_version).map_err(|why| fail(invalid(why)))?;
            same_object(original, &converted).map_err(|why| fail(invalid(why)))?;
            let converted = restore_metadata(original, converted).map_err(|why| {
                fail(format!(
                    "returned invalid metadata in object at index {}: {why}",
                    index + 1
                ))
            })?;
            items[at] = converted;
        }
        Ok((items, Some(exchange)))
    }

    /// The objects the webhook answers for `objects` converted to `api_version`, as many as
    /// were sent, with the exchange; `kind` names what is converted in messages.
    fn exchange(
        &self,
        objects: &[Value],
        api_version: &str,
        kind: &str,
    ) -> Result<(Vec<Value>, Exchange), Refused> {
        let uid = uuid::Uuid::new_v4().to_string();
        let mut exchange = Exchange {
            review: Value::Null,
            answer: Vec::new(),
        };
        let refused = |why: String, exchange: &Exchange| Refused {
            why,
            exchange: Some(exchange.clone()),
        };
        let failed = |why: String| format!("conversion webhook for {kind} failed: {why}");
        let Some(version) = self
            .review_versions
            .iter()
            .find(|v| REVIEW_VERSIONS.contains(&v.as_str()))
        else {
            return Err(Refused {
                why: "no supported conversion review versions".to_owned(),
                exchange: None,
            });
        };
        exchange.review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{version}"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
        });
        let body = match serde_json::to_vec(&exchange.review) {
            Ok(body) => body,
            Err(e) => return Err(refused(failed(e.to_string()), &exchange)),
        };
        let answer = match &self.transport {
            Transport::Https { url, agent } => post(agent, url, &body),
            Transport::InProcess(handler) => {
                (handler.0)(&body).map_err(|why| format!("in process: {why}"))
            }
        };
        exchange.answer = match answer {
            Ok(answer) => answer,
            Err(why) => return Err(refused(failed(why), &exchange)),
        };
        let converted = match converted_objects(&uid, version, &exchange.answer) {
            Ok(converted) => converted,
            Err(why) => return Err(refused(failed(why), &exchange)),
        };
        if converted.len() != objects.len() {
            let why = format!(
                "conversion webhook for {kind} returned {} objects, expected {}",
                converted.len(),
                objects.len()
            );
            return Err(refused(why, &exchange));
        }
        Ok((converted, exchange))
    }
}

/// The answer of the webhook at `url` to `body`.
fn post(agent: &ureq::Agent, url: &str, body: &[u8]) -> Result<Vec<u8>, String> {
    blocking(|| {
        let mut response = agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(body)
            .map_err(|e| format!("Post {url:?}: {}", transport_error(url, &e)))?;
        let status = response.status();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(|e| format!("Post {url:?}: {}", transport_error(url, &e)))?;
        if !status.is_success() {
            return Err(format!("Post {url:?}: the server answered {status}"));
        }
        Ok(bytes)
    })
}

/// `convertedObjects` of the webhook's answer `bytes` to the review `uid` of `version`,
/// checked as kube-apiserver's `getConvertedObjectsFromResponse` checks it (the GVK and the
/// uid only of a `v1` review), in its words.
fn converted_objects(uid: &str, version: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut answer: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the answer is not JSON: {e}"))?;
    if !answer.is_object() {
        return Err("the answer is not a JSON object".to_owned());
    }
    // What the client's decoder, with both review versions registered, refuses first.
    let (api_version, kind) = (text(&answer, "apiVersion"), text(&answer, "kind"));
    let body = || String::from_utf8_lossy(bytes);
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{}'", body()));
    }
    if api_version.is_empty() {
        return Err(format!("Object 'apiVersion' is missing in '{}'", body()));
    }
    let registered = ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"];
    if kind != "ConversionReview" || !registered.contains(&api_version) {
        return Err(format!(
            "no kind {} is registered for version {} in scheme \"pkg/runtime/scheme.go:111\"",
            go_quote(kind),
            go_quote(api_version)
        ));
    }
    if version == "v1" {
        let gvk = go_gvk(&answer);
        let expected = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if gvk != expected {
            return Err(format!(
                "expected webhook response of {expected}, got {gvk}"
            ));
        }
    }
    let response = match answer.get_mut("response") {
        Some(response) if response.is_object() => response,
        _ => return Err("no response provided".to_owned()),
    };
    if version == "v1" {
        let answered = text(response, "uid");
        if answered != uid {
            return Err(format!(
                "expected response.uid={}, got {}",
                go_quote(uid),
                go_quote(answered)
            ));
        }
    }
    let status = response
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if status != "Success" {
        let message = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if message.is_empty() {
            return Err(format!(
                "response.result.status was '{status}', not 'Success'"
            ));
        }
        return Err(message.to_owned());
    }
    Ok(
        match response.get_mut("convertedObjects").map(Value::take) {
            Some(Value::Array(objects)) => objects,
            _ => Vec::new(),
        },
    )
}

/// One converted object of the webhook's answer for `original` of `kind`, checked as
/// kube-apiserver checks the conversion of one object, in its words.
fn check_one(
    original: &Value,
    converted: Value,
    api_version: &str,
    kind: &str,
) -> Result<Value, String> {
    // kube-apiserver returns the decoding error of the converted object as it is.
    let converted = typed(converted)?;
    let fail = |why: String| format!("conversion webhook for {kind} {why}");
    check_type(original, &converted, api_version)
        .map_err(|why| fail(format!("returned invalid object at index 0: {why}")))?;
    same_object(original, &converted)
        .map_err(|why| fail(format!("returned invalid object: {why}")))?;
    restore_metadata(original, converted)
        .map_err(|why| fail(format!("returned invalid metadata: {why}")))
}

/// A converted object as apimachinery's `Unstructured` reads it: a JSON object with a
/// `kind`.
fn typed(converted: Value) -> Result<Map<String, Value>, String> {
    match converted {
        Value::Object(map)
            if map
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| !k.is_empty()) =>
        {
            Ok(map)
        }
        other => Err(format!(
            "Object 'Kind' is missing in '{}'",
            if other.is_null() {
                String::new()
            } else {
                other.to_string()
            }
        )),
    }
}

/// The converted object is of the version asked for and of the original's kind.
fn check_type(
    original: &Value,
    converted: &Map<String, Value>,
    api_version: &str,
) -> Result<(), String> {
    let received = go_group_version(map_text(converted, "apiVersion"));
    if received != go_group_version(api_version) {
        return Err(format!(
            "invalid groupVersion (expected {}, received {received})",
            go_group_version(api_version)
        ));
    }
    let (expected, received) = (text(original, "kind"), map_text(converted, "kind"));
    if expected != received {
        return Err(format!(
            "invalid kind (expected {expected}, received {received})"
        ));
    }
    Ok(())
}

/// kube-apiserver's `validateConvertedObject`: the same name, namespace and uid (and kind,
/// which [`check_type`] has checked before, as kube-apiserver does too).
fn same_object(original: &Value, converted: &Map<String, Value>) -> Result<(), String> {
    fn meta<'a>(metadata: Option<&'a Value>, field: &str) -> &'a str {
        metadata
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    for (field, name) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let e = meta(original.get("metadata"), field);
        let a = meta(converted.get("metadata"), field);
        if e != a {
            return Err(format!("must have the same {name}: {e} != {a}"));
        }
    }
    Ok(())
}

/// kube-apiserver's `restoreObjectMeta`: the converted object with the original's metadata,
/// but for the labels and annotations the webhook answered, which must be string maps that
/// pass the checks of labels and annotations when they changed.
fn restore_metadata(original: &Value, mut converted: Map<String, Value>) -> Result<Value, String> {
    // Taken out: the original's metadata goes in its place.
    let mut answered = match converted.remove("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(metadata)) => metadata,
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(&other)
            ));
        }
    };
    let mut metadata = match original.get("metadata") {
        None => Map::new(),
        Some(Value::Object(metadata)) => metadata.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in input object",
                go_type(other)
            ));
        }
    };
    for field in ["labels", "annotations"] {
        let answer = match answered.remove(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
                continue;
            }
            Some(Value::Object(answer)) => answer,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(&other)
                ));
            }
        };
        let before = match metadata.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::Object(before)) => Some(before),
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in original object",
                    go_type(other)
                ));
            }
        };
        let mut strings = std::collections::BTreeMap::new();
        for (key, value) in &answer {
            let Value::String(value) = value else {
                return Err(format!(
                    "metadata.{field}[{key}] must be a string, but is {} in converted object",
                    go_type(value)
                ));
            };
            strings.insert(key.clone(), value.clone());
        }
        if before.is_none_or(|before| *before != answer) {
            let errors = changed_metadata_errors(field, strings);
            if !errors.is_empty() {
                return Err(apfkit_runtime::field::to_aggregate(&errors));
            }
        }
        metadata.insert(field.into(), Value::Object(answer));
    }
    converted.insert("metadata".into(), Value::Object(metadata));
    Ok(Value::Object(converted))
}

/// The errors of labels (`ValidateLabels`) or annotations (`ValidateAnnotations`, whose
/// path kube-apiserver gives as `metadata.annotation` here) a webhook answered.
fn changed_metadata_errors(
    field: &str,
    strings: std::collections::BTreeMap<String, String>,
) -> Vec<FieldError> {
    let meta = if field == "labels" {
        ObjectMeta {
            labels: Some(strings),
            ..ObjectMeta::default()
        }
    } else {
        ObjectMeta {
            annotations: Some(strings),
            ..ObjectMeta::default()
        }
    };
    let mut errors = apfkit_runtime::object_meta::validate_common(&meta, "metadata");
    for error in &mut errors {
        if let Some(rest) = error.path.strip_prefix("metadata.annotations") {
            error.path = format!("metadata.annotation{rest}");
        }
    }
    errors
}

/// The type Go's `%T` names for a JSON value apimachinery decoded.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// An `apiVersion` as Go prints its `schema.GroupVersion` (empty when it does not parse).
fn go_group_version(api_version: &str) -> &str {
    if api_version.matches('/').count() > 1 {
        ""
    } else {
        api_version
    }
}

/// A document's `apiVersion` and `kind` as Go prints its `schema.GroupVersionKind`.
fn go_gvk(document: &Value) -> String {
    let group_version = go_group_version(text(document, "apiVersion"));
    let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
    format!("{group}/{version}, Kind={}", text(document, "kind"))
}

fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn map_text<'a>(map: &'a Map<String, Value>, name: &str) -> &'a str {
    map.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// Why a request to the webhook at `url` failed, in the words Go's `net/http` client uses,
/// which kube-apiserver's errors carry: no more about the connection than they tell (no
/// operating system error codes, no TLS library's inner names).
fn transport_error(url: &str, error: &ureq::Error) -> String {
    use rustls::CertificateError as Certificate;
    const TIMEOUT: &str =
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)";
    let address = || {
        let uri: Option<ureq::http::Uri> = url.parse().ok();
        let host = uri.as_ref().and_then(|u| u.host()).unwrap_or_default();
        let port = uri.as_ref().and_then(|u| u.port_u16()).unwrap_or(443);
        format!("{host}:{port}")
    };
    let verify = |why: &str| format!("tls: failed to verify certificate: x509: {why}");
    match error {
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("dial tcp {}: connect: connection refused", address())
            }
            std::io::ErrorKind::ConnectionReset => {
                format!("read tcp {}: read: connection reset by peer", address())
            }
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => TIMEOUT.to_owned(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::BrokenPipe => "EOF".to_owned(),
            // The kind's words ("network unreachable"), never the system's error code.
            kind => format!("dial tcp {}: connect: {kind}", address()),
        },
        ureq::Error::Timeout(_) => TIMEOUT.to_owned(),
        ureq::Error::HostNotFound => {
            let host = address();
            let host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
            format!("dial tcp: lookup {host}: no such host")
        }
        ureq::Error::Rustls(rustls::Error::InvalidCertificate(why)) => match why {
            Certificate::UnknownIssuer => verify("certificate signed by unknown authority"),
            Certificate::Expired
            | Certificate::ExpiredContext { .. }
            | Certificate::NotValidYet
            | Certificate::NotValidYetContext { .. } => {
                verify("certificate has expired or is not yet valid")
            }
            Certificate::NotValidForName | Certificate::NotValidForNameContext { .. } => {
                let host = address();
                let host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
                verify(&format!("certificate is not valid for {host}"))
            }
            _ => verify("certificate is not valid"),
        },
        // A server that answers in plain HTTP sends what is no TLS record.
        ureq::Error::Rustls(rustls::Error::InvalidMessage(_)) | ureq::Error::Protocol(_) => {
            "http: server gave HTTP response to HTTPS client".to_owned()
        }
        ureq::Error::Rustls(_) | ureq::Error::Tls(_) => {
            "remote error: tls: handshake failure".to_owned()
        }
        ureq::Error::BodyExceedsLimit(limit) => {
            format!("the answer is larger than {limit} bytes")
        }
        ureq::Error::BodyStalled => TIMEOUT.to_owned(),
        other => other.to_string(),
    }
}

/// `group/version, Kind=Kind` of an object, as kube-apiserver names it in conversion errors.
pub fn kind_of(object: &Value) -> String {
    go_gvk(object)
}

/// Runs a blocking call from a task of a multi-threaded tokio runtime without stalling the
/// other tasks of its thread, or directly elsewhere.
fn blocking<T>(call: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(call)
        }
        _ => call(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn original() -> Value {
        json!({
            "apiVersion": "example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "labels": {"a": "1"}},
            "spec": {"size": 3},
        })
    }

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": response,
        }))
        .unwrap()
    }

    fn converted(objects: Vec<Value>) -> Vec<u8> {
        answer(json!({"uid": "r", "result": {"status": "Success"}, "convertedObjects": objects}))
    }

    /// A webhook answering every review with `answer(review)`, in this process.
    fn answering(answer: impl Fn(&Value) -> Vec<u8> + Send + Sync + 'static) -> Webhook {
        Webhook::in_process(ReviewHandler(std::sync::Arc::new(move |body: &[u8]| {
            let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
            Ok(answer(&review))
        })))
    }

    /// A webhook that converts each object it is sent with `change`, echoing the review's
    /// uid, as a well-behaved webhook does.
    fn converting(change: impl Fn(&mut Value) + Send + Sync + 'static) -> Webhook {
        answering(move |review| {
            let request = &review["request"];
            let objects: Vec<Value> = request["objects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|object| {
                    let mut object = object.clone();
                    object["apiVersion"] = request["desiredAPIVersion"].clone();
                    change(&mut object);
                    object
                })
                .collect();
            serde_json::to_vec(&json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects},
            }))
            .unwrap()
        })
    }

    /// A webhook that cannot be reached is described as Go's client describes it, in the
    /// error kube-apiserver returns, and with no more than that: no system error codes.
    #[test]
    fn transport_errors_are_go_clients_words() {
        let url = "https://127.0.0.1:9443/convert";
        let io = |kind: std::io::ErrorKind| ureq::Error::Io(std::io::Error::from(kind));
        for (error, expected) in [
            (
                io(std::io::ErrorKind::ConnectionRefused),
                "dial tcp 127.0.0.1:9443: connect: connection refused",
            ),
            (
                io(std::io::ErrorKind::ConnectionReset),
                "read tcp 127.0.0.1:9443: read: connection reset by peer",
            ),
            (io(std::io::ErrorKind::UnexpectedEof), "EOF"),
            (
                io(std::io::ErrorKind::NetworkUnreachable),
                "dial tcp 127.0.0.1:9443: connect: network unreachable",
            ),
            (
                ureq::Error::Rustls(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::UnknownIssuer,
                )),
                "tls: failed to verify certificate: x509: certificate signed by unknown authority",
            ),
            (
                ureq::Error::Rustls(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForName,
                )),
                "tls: failed to verify certificate: x509: certificate is not valid for 127.0.0.1",
            ),
            (
                ureq::Error::Rustls(rustls::Error::InvalidMessage(
                    rustls::InvalidMessage::InvalidContentType,
                )),
                "http: server gave HTTP response to HTTPS client",
            ),
        ] {
            assert_eq!(transport_error(url, &error), expected);
        }
        let raw = std::io::Error::from_raw_os_error(111);
        let said = transport_error(url, &ureq::Error::Io(raw));
        assert!(!said.contains("os error"), "{said}");
    }

    #[test]
    fn a_good_answer_keeps_the_metadata_but_labels_and_annotations() {
        let webhook = converting(|object| {
            object["metadata"]["labels"] = json!({"b": "2"});
            object["metadata"]["annotations"] = json!({"c": "3"});
            object["metadata"]["generation"] = json!(7);
            object["spec"] = json!({"replicas": 3});
        });
        let out = webhook.convert(original(), "example.com/v1").unwrap();
        assert_eq!(
            out["metadata"],
            json!({"name": "w", "namespace": "default", "uid": "u-1", "labels": {"b": "2"}, "annotations": {"c": "3"}})
        );
        assert_eq!(out["spec"], json!({"replicas": 3}));
        assert_eq!(out["apiVersion"], "example.com/v1");
    }

    /// An object in the version asked for, or holding only its type, is not sent.
    #[test]
    fn what_needs_no_conversion_is_not_sent() {
        let webhook = answering(|_| panic!("nothing is sent"));
        let mut object = original();
        object["apiVersion"] = json!("example.com/v1");
        assert_eq!(
            webhook.convert(object.clone(), "example.com/v1").unwrap(),
            object
        );
        let bare = json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget"});
        assert_eq!(
            webhook.convert(bare, "example.com/v1").unwrap(),
            json!({"apiVersion": "example.com/v1", "kind": "Widget"})
        );
        let (items, exchange) = webhook
            .convert_list_exchanged(
                "example.com/v1, Kind=WidgetList",
                vec![object.clone()],
                "example.com/v1",
            )
            .unwrap();
        assert_eq!((items, exchange.is_none()), (vec![object], true));
    }

    /// Every answer kube-apiserver refuses is refused here with its message
    /// (`webhook_converter.go`).
    #[test]
    fn bad_answers_are_refused_in_kube_apiservers_words() {
        let v1 = |kind: &str| json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "w", "namespace": "default", "uid": "u-1"}});
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let prefix = "conversion webhook for example.com/v1alpha1, Kind=Widget";
        let cases: Vec<(Vec<u8>, String)> = vec![
            (
                b"".to_vec(),
                format!("{prefix} failed: the answer is not JSON"),
            ),
            (
                b"{\"response\": {\"uid\": \"r\"".to_vec(),
                format!("{prefix} failed: the answer is not JSON"),
            ),
            (
                b"\x00\xff garbage".to_vec(),
                format!("{prefix} failed: the answer is not JSON"),
            ),
            (
                deep.into_bytes(),
                format!("{prefix} failed: the answer is not JSON"),
            ),
            (
                b"{}".to_vec(),
                format!("{prefix} failed: Object 'Kind' is missing in '{{}}'"),
            ),
            (
                br#"{"kind": "ConversionReview"}"#.to_vec(),
                format!(
                    "{prefix} failed: Object 'apiVersion' is missing in '{{\"kind\": \"ConversionReview\"}}'"
                ),
            ),
            (
                br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "AdmissionReview"}"#.to_vec(),
                format!(
                    "{prefix} failed: no kind \"AdmissionReview\" is registered for version \"apiextensions.k8s.io/v1\" in scheme \"pkg/runtime/scheme.go:111\""
                ),
            ),
            (
                br#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview"}"#
                    .to_vec(),
                format!(
                    "{prefix} failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
                ),
            ),
            (
                br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}"#
                    .to_vec(),
                format!("{prefix} failed: no response provided"),
            ),
            (
                answer(json!({"uid": "other", "result": {"status": "Success"}})),
                format!("{prefix} failed: expected response.uid=\"r\", got \"other\""),
            ),
            (
                answer(json!({"uid": "r", "result": {"status": "Failure", "message": "no way"}})),
                format!("{prefix} failed: no way"),
            ),
            (
                answer(json!({"uid": "r", "result": {"status": "Failure"}})),
                format!("{prefix} failed: response.result.status was 'Failure', not 'Success'"),
            ),
            (
                answer(json!({"uid": "r", "result": {"status": "Success"}})),
                format!("{prefix} returned 0 objects, expected 1"),
            ),
            (
                converted(vec![v1("Widget"), v1("Widget")]),
                format!("{prefix} returned 2 objects, expected 1"),
            ),
            (
                converted(vec![
                    json!({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {}}),
                ]),
                format!(
                    "{prefix} returned invalid object at index 0: invalid groupVersion (expected example.com/v1, received example.com/v1beta1)"
                ),
            ),
            (
                converted(vec![v1("Gadget")]),
                format!(
                    "{prefix} returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"
                ),
            ),
            (
                converted(vec![json!([1])]),
                "Object 'Kind' is missing in '[1]'".to_owned(),
            ),
            (
                converted(vec![
                    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x", "namespace": "default", "uid": "u-1"}}),
                ]),
                format!("{prefix} returned invalid object: must have the same name: w != x"),
            ),
            (
                converted(vec![
                    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}),
                ]),
                format!("{prefix} returned invalid object: must have the same UID: u-1 != "),
            ),
            (
                converted(vec![
                    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "labels": {"a": 1}}}),
                ]),
                format!(
                    "{prefix} returned invalid metadata: metadata.labels[a] must be a string, but is int64 in converted object"
                ),
            ),
            (
                converted(vec![
                    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "annotations": {"no way": "x"}}}),
                ]),
                format!(
                    "{prefix} returned invalid metadata: metadata.annotation: Invalid value: \"no way\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                ),
            ),
        ];
        for (bytes, expected) in cases {
            let webhook = answering(move |review| {
                // The uid of the answers above is "r": the review's is put there.
                let uid = review["request"]["uid"].as_str().unwrap().to_owned();
                String::from_utf8_lossy(&bytes)
                    .replace("\"uid\":\"r\"", &format!("\"uid\":\"{uid}\""))
                    .into_bytes()
            });
            let got = webhook.convert(original(), "example.com/v1").unwrap_err();
            let got = regex_lite_uid(&got);
            assert!(got.starts_with(&expected), "{got}\n/ {expected}");
        }
    }

    /// The review's random uid as `r`, so that the expected messages can name it.
    fn regex_lite_uid(message: &str) -> String {
        match message.find("expected response.uid=\"") {
            Some(at) => {
                let start = at + "expected response.uid=\"".len();
                let end = start + message[start..].find('"').unwrap();
                format!("{}r{}", &message[..start], &message[end..])
            }
            None => message.to_owned(),
        }
    }

    /// A list's items are sent in one review, those in the version asked for left out, and
    /// the answer's faults named as kube-apiserver names them for a list.
    #[test]
    fn a_list_is_converted_in_one_review() {
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = sent.clone();
        let inner = converting(|object| object["spec"]["converted"] = json!(true));
        let webhook = answering(move |review| {
            seen.lock()
                .unwrap()
                .push(review["request"]["objects"].as_array().unwrap().len());
            let Transport::InProcess(handler) = &inner.transport else {
                unreachable!()
            };
            (handler.0)(&serde_json::to_vec(review).unwrap()).unwrap()
        });
        let mut done = original();
        done["apiVersion"] = json!("example.com/v1");
        let items = vec![original(), done.clone(), original()];
        let list = "example.com/v1alpha1, Kind=WidgetList";
        let out = webhook.convert_list(list, items, "example.com/v1").unwrap();
        assert_eq!(*sent.lock().unwrap(), vec![2]);
        assert_eq!(out[1], done);
        assert_eq!(
            (
                out[0]["spec"]["converted"].clone(),
                out[2]["spec"]["converted"].clone()
            ),
            (json!(true), json!(true))
        );

        let renaming = converting(|object| object["metadata"]["name"] = json!("x"));
        let why = renaming
            .convert_list(list, vec![original()], "example.com/v1")
            .unwrap_err();
        assert_eq!(
            why,
            format!(
                "conversion webhook for {list} returned invalid converted object at index 1: must have the same name: w != x"
            )
        );
        // Without its metadata, the object is first of another name (kube's order).
        let dropping = converting(|object| {
            object.as_object_mut().unwrap().remove("metadata");
        });
        let why = dropping
            .convert_list(list, vec![original()], "example.com/v1")
            .unwrap_err();
        assert_eq!(
            why,
            format!(
                "conversion webhook for {list} returned invalid converted object at index 1: must have the same name: w != "
            )
        );
        let numbered = converting(|object| object["metadata"]["labels"] = json!({"a": 1.5}));
        let why = numbered
            .convert_list(list, vec![original()], "example.com/v1")
            .unwrap_err();
        assert_eq!(
            why,
            format!(
                "conversion webhook for {list} returned invalid metadata in object at index 1: metadata.labels[a] must be a string, but is float64 in converted object"
            )
        );
    }

    #[test]
    fn a_review_version_is_chosen_from_the_crds_list() {
        let conversion = |versions: &[&str]| api::WebhookConversion {
            client_config: Some(api::WebhookClientConfig {
                url: Some("https://127.0.0.1:1/convert".to_owned()),
                ..Default::default()
            }),
            conversion_review_versions: versions.iter().map(|v| (*v).to_owned()).collect(),
        };
        let webhook = Webhook::new(&conversion(&["v2", "v3"])).unwrap();
        assert_eq!(
            webhook.convert(original(), "example.com/v1").unwrap_err(),
            "no supported conversion review versions"
        );
        // A v1beta1 review: its answer's version and uid are not checked.
        let mut webhook = converting(|_| {});
        webhook.review_versions = vec!["v9".to_owned(), "v1beta1".to_owned(), "v1".to_owned()];
        let Transport::InProcess(handler) = &webhook.transport else {
            unreachable!()
        };
        let handler = handler.clone();
        let loose = Webhook {
            transport: Transport::InProcess(ReviewHandler(std::sync::Arc::new(
                move |body: &[u8]| {
                    let review: Value = serde_json::from_slice(body).unwrap();
                    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1beta1");
                    let mut answer: Value = serde_json::from_slice(&(handler.0)(body)?).unwrap();
                    answer["response"]["uid"] = json!("whatever");
                    // Of the other review version: taken too.
                    answer["apiVersion"] = json!("apiextensions.k8s.io/v1");
                    Ok(serde_json::to_vec(&answer).unwrap())
                },
            ))),
            review_versions: webhook.review_versions.clone(),
        };
        assert_eq!(
            loose.convert(original(), "example.com/v1").unwrap()["apiVersion"],
            "example.com/v1"
        );
    }
}
