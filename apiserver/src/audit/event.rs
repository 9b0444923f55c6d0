//! The `audit.k8s.io/v1` `Event`, written as kube-apiserver's JSON encoder writes it: its
//! fields in the Go struct's order, empty optional fields left out, annotations by key.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use super::{Level, Stage};

/// One audit event: a request at one stage of its handling.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `Event`.
    pub kind: &'static str,
    /// `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The level the policy gave the request.
    pub level: Level,
    /// The request's audit ID (the `Audit-ID` header: the client's, or a new UUID).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event was written at.
    pub stage: Stage,
    /// The request's path and query.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// Kubernetes verb for resource requests, the lower-case HTTP method otherwise.
    pub verb: String,
    /// The authenticated user.
    pub user: UserInfo,
    /// The user the request impersonated, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<UserInfo>,
    /// How the request was authenticated: the constrained impersonation mode that allowed
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication_metadata: Option<AuthenticationMetadata>,
    /// The client's address.
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The client's `User-Agent` (cut to 1,024 bytes and `...TRUNCATED`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object of a resource request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The response's status: its code, and for a `Status` answer its words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<serde_json::Value>,
    /// The request's body, as JSON (levels `Request` and `RequestResponse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Box<RawValue>>,
    /// The response's body, as JSON (level `RequestResponse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Box<RawValue>>,
    /// When the request was received (`MicroTime`).
    pub request_received_timestamp: String,
    /// When this stage was reached (`MicroTime`).
    pub stage_timestamp: String,
    /// What the layers that handled the request noted (by key).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// How a request was authenticated (`AuthenticationMetadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationMetadata {
    /// The verb of the constrained impersonation mode that allowed the impersonated user
    /// (`impersonate:user-info`).
    pub impersonation_constraint: &'static str,
}

/// A user as an event names it (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The uid, when known.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// What else the authenticator knows of the user, by key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&crate::auth::UserInfo> for UserInfo {
    fn from(user: &crate::auth::UserInfo) -> Self {
        UserInfo {
            username: user.name.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
        }
    }
}

/// The object of a resource request (`audit.k8s.io/v1` `ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The resource (plural).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid, when the request's object names one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group; empty for the core group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resource version, when the request's object names one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// `metav1.MicroTime` of now, as the JSON encoder writes it (`2006-01-02T15:04:05.000000Z`).
pub(super) fn micro_time_now() -> String {
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        timestamp(std::time::SystemTime::now()),
    ))
    .ok()
    .and_then(|value| value.as_str().map(str::to_owned))
    .unwrap_or_default()
}

/// A system time as a timestamp (UTC); times before 1970 as 1970.
pub(super) fn timestamp(time: std::time::SystemTime) -> k8s_openapi::jiff::Timestamp {
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let nanos = i32::try_from(since.subsec_nanos()).unwrap_or(0);
    k8s_openapi::jiff::Timestamp::new(seconds, nanos).unwrap_or_default()
}

/// How deeply a body written into an event may nest: deeper ones are left out, so that every
/// line of the log stays readable by JSON readers with depth limits (jq's is 10,000).
const MAX_DEPTH: usize = 1000;

/// A JSON document without the whitespace between its tokens (Go's `json.Compact`), so that
/// an event stays one line; `None` when `json` is not one JSON document or nests deeper than
/// [`MAX_DEPTH`].
pub(crate) fn compact_json(json: &[u8]) -> Option<Box<RawValue>> {
    serde_json::from_slice::<&RawValue>(json).ok()?;
    let mut out = String::with_capacity(json.len());
    let text = std::str::from_utf8(json).ok()?;
    let mut in_string = false;
    let mut escaped = false;
    let mut depth = 0usize;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            match c {
                '{' | '[' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                }
                '}' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.push(c);
        }
    }
    RawValue::from_string(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacting_keeps_strings_and_order_and_refuses_what_is_not_json() {
        let compacted = compact_json(b" {\"b\": [1, 2],\n \"a\": \"x y\\\" z\"}\n").unwrap();
        assert_eq!(compacted.get(), r#"{"b":[1,2],"a":"x y\" z"}"#);
        assert!(compact_json(b"{\"a\": ").is_none());
        assert!(compact_json(b"{} {}").is_none());
        assert!(compact_json(b"\xff").is_none());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(
            compact_json(deep.as_bytes()).is_none(),
            "too deep for JSON readers"
        );
        let nested = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(compact_json(nested.as_bytes()).unwrap().get(), nested);
    }

    #[test]
    fn micro_time_has_six_fraction_digits() {
        let now = micro_time_now();
        assert_eq!(now.len(), "2006-01-02T15:04:05.000000Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }
}
