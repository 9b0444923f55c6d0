//! The conversion webhook's protocol: an `apiextensions.k8s.io/v1` (or `v1beta1`, the same
//! shape) `ConversionReview` in, the same review with its `response` out.
//!
//! As kube-apiserver expects: the response echoes the request's `uid` and the review's
//! `apiVersion`; `convertedObjects` are in the order of `objects`, each in
//! `desiredAPIVersion`; if any object fails, the result is `Failure` with a message naming
//! the object and the field, and no object is returned.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::scheme::Scheme;

/// The review versions answered: kube-apiserver sends the first of the CRD's
/// `conversionReviewVersions` that it knows.
pub const REVIEW_API_VERSIONS: [&str; 2] =
    ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"];

/// Why a body is not a conversion request (the HTTP answer is 400 Bad Request: there is no
/// `uid` to answer to).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    /// Not JSON, or not the shape of a ConversionReview.
    #[error("not a ConversionReview: {0}")]
    Malformed(String),
    /// A review of another version or kind.
    #[error("unsupported review {api_version:?} {kind:?}; expected ConversionReview of {}", REVIEW_API_VERSIONS.join(" or "))]
    Unsupported {
        /// The body's `apiVersion`.
        api_version: String,
        /// The body's `kind`.
        kind: String,
    },
    /// A review without `request`.
    #[error("the ConversionReview has no request")]
    NoRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    /// Read after the review's version and kind are known to be ours.
    request: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Request {
    uid: String,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: String,
    /// Go writes a nil slice as `null`.
    #[serde(default, deserialize_with = "null_as_empty")]
    objects: Vec<Value>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(deserializer)?.unwrap_or_default())
}

/// Decodes a struct from a JSON object only: serde would also take a JSON array, field by
/// field, which Go's decoder does not. `context` prefixes the message (`request: `).
fn decode_object<T: serde::de::DeserializeOwned>(
    json: &[u8],
    context: &str,
) -> Result<T, ReviewError> {
    if json.trim_ascii_start().first().is_some_and(|&b| b != b'{') {
        return Err(ReviewError::Malformed(format!(
            "{context}expected a JSON object"
        )));
    }
    serde_json::from_slice(json).map_err(|err| ReviewError::Malformed(format!("{context}{err}")))
}

/// Answers a ConversionReview body with the response review (JSON).
pub fn review<H>(scheme: &Scheme<H>, body: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let review: Review = decode_object(body, "")?;
    if review.kind != "ConversionReview"
        || !REVIEW_API_VERSIONS.contains(&review.api_version.as_str())
    {
        return Err(ReviewError::Unsupported {
            api_version: review.api_version,
            kind: review.kind,
        });
    }
    let request = review.request.ok_or(ReviewError::NoRequest)?;
    let request: Request = decode_object(request.get().as_bytes(), "request: ")?;
    let result = convert_all(scheme, request.objects, &request.desired_api_version);
    let response = match result {
        Ok(converted) => json!({
            "uid": request.uid,
            "convertedObjects": converted,
            "result": {"status": "Success"},
        }),
        Err(failure) => json!({
            "uid": request.uid,
            "convertedObjects": [],
            "result": {"status": "Failure", "message": failure.to_string()},
        }),
    };
    let answer = json!({
        "apiVersion": review.api_version,
        "kind": "ConversionReview",
        "response": response,
    });
    Ok(answer.to_string().into_bytes())
}

/// The first object of a review that did not convert; its message is the review's answer.
#[derive(Debug, thiserror::Error)]
#[error("objects[{index}]{label}: {source}")]
struct ObjectFailure {
    /// Its index in `request.objects`.
    index: usize,
    /// ` (Kind namespace/name)`, as far as the object says.
    label: String,
    /// Why it did not convert.
    source: crate::scheme::SchemeError,
}

/// Every object converted, or the first failure.
fn convert_all<H>(
    scheme: &Scheme<H>,
    objects: Vec<Value>,
    desired_api_version: &str,
) -> Result<Vec<Value>, ObjectFailure> {
    let mut converted = Vec::with_capacity(objects.len());
    for (index, object) in objects.into_iter().enumerate() {
        let label = describe(&object);
        match scheme.convert_object(object, desired_api_version) {
            Ok(object) => converted.push(object),
            Err(source) => {
                return Err(ObjectFailure {
                    index,
                    label,
                    source,
                });
            }
        }
    }
    Ok(converted)
}

/// ` (Kind namespace/name)`, as far as the object says.
fn describe(object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    match (
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    ) {
        (Some(kind), Some(namespace), Some(name)) => format!(" ({kind} {namespace}/{name})"),
        (Some(kind), None, Some(name)) => format!(" ({kind} {name})"),
        (Some(kind), _, None) => format!(" ({kind})"),
        _ => String::new(),
    }
}
