//! The client side of a CRD's conversion webhook: an `apiextensions.k8s.io/v1`
//! `ConversionReview` sent over HTTPS to the URL the CRD names, trusting its `caBundle`, and
//! the answer checked as kube-apiserver checks it
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`): the
//! request's `uid` echoed, `Success`, one object per object sent, each in the version asked
//! for, and of the object's metadata only labels and annotations taken from the answer.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use serde_json::{Value, json};

/// How long kube-apiserver waits for a conversion webhook.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read.
const MAX_RESPONSE_BYTES: u64 = 32 << 20;

/// A CRD's conversion webhook.
pub struct Webhook {
    transport: Transport,
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

impl Webhook {
    /// The webhook `config` names for `crd`.
    ///
    /// # Errors
    ///
    /// A `service` reference (apfkit serves no Services to resolve it), no URL, or a
    /// `caBundle` without a PEM certificate.
    pub fn new(config: &api::WebhookClientConfig) -> Result<Self, String> {
        let field = "spec.conversion.webhook.clientConfig";
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
        })
    }

    /// A webhook whose reviews `handler` answers in this process, whatever URL the CRD
    /// names: nothing is sent over the network.
    pub fn in_process(handler: ReviewHandler) -> Self {
        Webhook {
            transport: Transport::InProcess(handler),
        }
    }

    /// `object` converted to `api_version` by the webhook.
    ///
    /// # Errors
    ///
    /// The webhook cannot be reached, fails, or answers something kube-apiserver would
    /// refuse, in kube-apiserver's words.
    pub fn convert(&self, object: Value, api_version: &str) -> Result<Value, String> {
        let kind = kind_of(&object);
        let failed = |why: String| format!("conversion webhook for {kind} failed: {why}");
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": [object]},
        });
        let body = serde_json::to_vec(&review).map_err(|e| failed(e.to_string()))?;
        let (url, agent) = match &self.transport {
            Transport::Https { url, agent } => (url, agent),
            Transport::InProcess(handler) => {
                let answer =
                    (handler.0)(&body).map_err(|why| failed(format!("in process: {why}")))?;
                return checked(&uid, &review, &answer, api_version, &kind);
            }
        };
        let answer = blocking(|| {
            let mut response = agent
                .post(url)
                .header("Content-Type", "application/json")
                .send(&body[..])
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
        .map_err(failed)?;
        checked(&uid, &review, &answer, api_version, &kind)
    }
}

/// The object of the webhook's `answer` to `review`, checked as kube-apiserver checks it.
fn checked(
    uid: &str,
    review: &Value,
    answer: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Value, String> {
    let original = review
        .pointer("/request/objects/0")
        .cloned()
        .unwrap_or_default();
    converted_object(uid, &original, answer, api_version).map_err(|why| match why {
        Answer::Failed(why) => format!("conversion webhook for {kind} failed: {why}"),
        Answer::Refused(message) => {
            format!("conversion webhook for {kind} returned failure: {message}")
        }
    })
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

/// What is wrong with a webhook's answer.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Not a valid answer.
    Failed(String),
    /// A valid answer that the conversion failed, with its message.
    Refused(String),
}

/// The object a webhook's answer `bytes` holds for the request `uid` of `original`, checked
/// as kube-apiserver checks it.
fn converted_object(
    uid: &str,
    original: &Value,
    bytes: &[u8],
    api_version: &str,
) -> Result<Value, Answer> {
    let failed = |why: String| Answer::Failed(why);
    let answer: Value = serde_json::from_slice(bytes)
        .map_err(|e| failed(format!("the answer is not JSON: {e}")))?;
    let response = answer
        .get("response")
        .ok_or_else(|| failed("no response in the ConversionReview".to_owned()))?;
    let answered_uid = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if answered_uid != uid {
        return Err(failed(format!(
            "expected response uid {uid:?}, got {answered_uid:?}"
        )));
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
        return Err(Answer::Refused(message.to_owned()));
    }
    let converted = match response.get("convertedObjects").and_then(Value::as_array) {
        Some(objects) if objects.len() == 1 => objects[0].clone(),
        Some(objects) => {
            return Err(failed(format!(
                "returned {} objects, expected 1",
                objects.len()
            )));
        }
        None => return Err(failed("returned no convertedObjects".to_owned())),
    };
    restore_metadata(original, converted, api_version).map_err(failed)
}

/// The converted object with the original's metadata, but for its labels and annotations,
/// which a webhook may change (kube-apiserver's `restoreObjectMeta`); checked to be of the
/// version asked for and of the same kind.
fn restore_metadata(
    original: &Value,
    mut converted: Value,
    api_version: &str,
) -> Result<Value, String> {
    let Value::Object(map) = &mut converted else {
        return Err("a converted object is not an object".to_owned());
    };
    let text =
        |value: &Value, name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    if map.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return Err(format!(
            "invalid converted object: expected apiVersion {api_version:?}, got {:?}",
            map.get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ));
    }
    if map.get("kind").and_then(Value::as_str).map(str::to_owned) != text(original, "kind") {
        return Err("invalid converted object: the kind changed".to_owned());
    }
    let mut metadata = original
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for field in ["labels", "annotations"] {
        let changed = map.get("metadata").and_then(|m| m.get(field)).cloned();
        if let Value::Object(metadata) = &mut metadata {
            match changed {
                Some(value) if !value.is_null() => {
                    metadata.insert(field.into(), value);
                }
                _ => {
                    metadata.remove(field);
                }
            }
        }
    }
    map.insert("metadata".into(), metadata);
    Ok(converted)
}

/// `group/version, Kind=Kind` of an object, as kube-apiserver names it in conversion errors.
pub fn kind_of(object: &Value) -> String {
    let text = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default();
    format!("{}, Kind={}", text("apiVersion"), text("kind"))
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

    fn converted(object: Value) -> Vec<u8> {
        answer(json!({"uid": "r", "result": {"status": "Success"}, "convertedObjects": [object]}))
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
        let object = json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "renamed", "uid": "other", "labels": {"b": "2"}, "annotations": {"c": "3"}},
            "spec": {"replicas": 3},
        });
        let out = converted_object("r", &original(), &converted(object), "example.com/v1").unwrap();
        assert_eq!(
            out["metadata"],
            json!({"name": "w", "namespace": "default", "uid": "u-1", "labels": {"b": "2"}, "annotations": {"c": "3"}})
        );
        assert_eq!(out["spec"], json!({"replicas": 3}));
    }

    #[test]
    fn bad_answers_are_refused_with_a_reason() {
        let v1 = |kind: &str| json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {}});
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"".to_vec(), "not JSON"),
            (b"{\"response\": {\"uid\": \"r\"".to_vec(), "not JSON"),
            (b"\x00\xff garbage".to_vec(), "not JSON"),
            (deep.into_bytes(), "not JSON"),
            (b"{}".to_vec(), "no response"),
            (
                answer(json!({"uid": "other", "result": {"status": "Success"}})),
                "expected response uid",
            ),
            (
                answer(json!({"uid": "r", "result": {"status": "Success"}})),
                "no convertedObjects",
            ),
            (
                answer(
                    json!({"uid": "r", "result": {"status": "Success"}, "convertedObjects": [v1("Widget"), v1("Widget")]}),
                ),
                "returned 2 objects",
            ),
            (
                converted(json!({"apiVersion": "example.com/v1beta1", "kind": "Widget"})),
                "expected apiVersion",
            ),
            (converted(v1("Gadget")), "the kind changed"),
            (converted(json!([1])), "not an object"),
        ];
        for (bytes, expected) in cases {
            match converted_object("r", &original(), &bytes, "example.com/v1") {
                Err(Answer::Failed(why)) => assert!(why.contains(expected), "{why} / {expected}"),
                other => panic!("{expected}: {other:?}"),
            }
        }
        let refused =
            answer(json!({"uid": "r", "result": {"status": "Failure", "message": "no way"}}));
        assert_eq!(
            converted_object("r", &original(), &refused, "example.com/v1"),
            Err(Answer::Refused("no way".to_owned()))
        );
    }
}
