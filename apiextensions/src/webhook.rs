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
    url: String,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).finish()
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
        Ok(Webhook { url, agent })
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
        let answer = blocking(|| {
            let mut response = self
                .agent
                .post(&self.url)
                .header("Content-Type", "application/json")
                .send(&body[..])
                .map_err(|e| format!("Post {:?}: {e}", self.url))?;
            let status = response.status();
            let bytes = response
                .body_mut()
                .with_config()
                .limit(MAX_RESPONSE_BYTES)
                .read_to_vec()
                .map_err(|e| format!("Post {:?}: {e}", self.url))?;
            if !status.is_success() {
                return Err(format!("Post {:?}: the server answered {status}", self.url));
            }
            Ok(bytes)
        })
        .map_err(failed)?;
        let answer: Value = serde_json::from_slice(&answer)
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
            return Err(format!(
                "conversion webhook for {kind} returned failure: {message}"
            ));
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
        let original = review
            .pointer("/request/objects/0")
            .cloned()
            .unwrap_or_default();
        restore_metadata(&original, converted, api_version).map_err(failed)
    }
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
