//! Errors as kube-apiserver answers them: a `metav1.Status` with its reason, code and wording
//! (`k8s.io/apimachinery/pkg/api/errors/errors.go`).

use apfkit_runtime::identity::GroupResource;
use serde::Serialize;

use crate::storage::StoreError;

/// The resource an error is about, as `StatusDetails` names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    /// API group.
    pub group: String,
    /// Plural resource name (kube-apiserver's "kind" in most details), or the kind for
    /// `Invalid`.
    pub kind: String,
    /// Object name.
    pub name: String,
}

impl Subject {
    /// `flowschemas.flowcontrol.apiserver.k8s.io`, as apimachinery's `GroupResource` prints.
    fn qualified(&self) -> String {
        GroupResource::new(self.group.clone(), self.kind.clone()).to_string()
    }
}

/// One cause of an `Invalid` answer: a field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid` and the like (left out when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The message after the field path, such as `Required value`.
    pub message: String,
    /// The field path, such as `spec.rules[0].subjects` (left out when empty, as Go's
    /// `omitempty` leaves it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl From<&apfkit_runtime::field::FieldError> for Cause {
    /// The cause of a field error, as kube-apiserver's `Status` carries it: its reason, its
    /// message without the field, and the field (`<nil>` for the object itself).
    fn from(error: &apfkit_runtime::field::FieldError) -> Self {
        Cause {
            reason: error.error_type.reason().to_owned(),
            message: error.body(),
            field: error.field().to_owned(),
        }
    }
}

/// An error answered as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason`: `NotFound`, `Conflict`, ...
    pub reason: &'static str,
    /// The message.
    pub message: String,
    /// `details`, when the error is about a named object.
    pub details: Option<Box<Subject>>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds` (and the `Retry-After` header) when above zero; `Some(0)`
    /// writes an empty `details`, as Go writes a `StatusDetails` of zero values.
    pub retry_after_seconds: Option<u32>,
    /// `metadata.continue`: the token a list whose continue token expired may go on with
    /// (kube-apiserver's "inconsistent" continue token).
    pub list_continue: Option<Box<str>>,
    /// `Warning` headers of the answer: what the request's decoding reported before the
    /// error (kube-apiserver's warning recorder writes them on any answer).
    pub warnings: Box<[String]>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            causes: Vec::new(),
            retry_after_seconds: None,
            list_continue: None,
            warnings: Box::default(),
        }
    }

    /// The same error with `warnings` answered before its own.
    pub fn with_warnings(mut self, warnings: &[String]) -> Self {
        self.warnings = warnings
            .iter()
            .chain(self.warnings.iter())
            .cloned()
            .collect();
        self
    }

    fn about(mut self, subject: &Subject) -> Self {
        self.details = Some(Box::new(subject.clone()));
        self
    }

    /// 404 `NotFound`: `flowschemas.flowcontrol.apiserver.k8s.io "x" not found`.
    pub fn not_found(subject: &Subject) -> Self {
        let message = format!("{} {:?} not found", subject.qualified(), subject.name);
        ApiError::new(404, "NotFound", message).about(subject)
    }

    /// 409 `AlreadyExists`.
    pub fn already_exists(subject: &Subject) -> Self {
        let message = format!("{} {:?} already exists", subject.qualified(), subject.name);
        ApiError::new(409, "AlreadyExists", message).about(subject)
    }

    /// 409 `Conflict`: `Operation cannot be fulfilled on ...: <why>`.
    pub fn conflict(subject: &Subject, why: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {} {:?}: {why}",
            subject.qualified(),
            subject.name
        );
        ApiError::new(409, "Conflict", message).about(subject)
    }

    /// The conflict of a stale `resourceVersion`, in kube-apiserver's words.
    pub fn modified(subject: &Subject) -> Self {
        ApiError::conflict(
            subject,
            "the object has been modified; please apply your changes to the latest version and \
             try again",
        )
    }

    /// 422 `Invalid`: `Kind.group "x" is invalid: <causes>`; `subject.kind` is the kind here.
    pub fn invalid(subject: &Subject, causes: Vec<Cause>) -> Self {
        let mut listed: Vec<String> = Vec::with_capacity(causes.len());
        for cause in &causes {
            let line = if cause.field.is_empty() {
                cause.message.clone()
            } else {
                format!("{}: {}", cause.field, cause.message)
            };
            // `ErrorList.ToAggregate`: a message said twice is listed once.
            if !listed.contains(&line) {
                listed.push(line);
            }
        }
        // apimachinery's `NewInvalid` prints one cause bare and several as a list.
        let summary = match listed.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", listed.join(", ")),
        };
        let message = format!(
            "{} {:?} is invalid: {summary}",
            subject.qualified(),
            subject.name
        );
        let mut error = ApiError::new(422, "Invalid", message).about(subject);
        error.causes = causes;
        error
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// 405 `MethodNotAllowed`, with empty `details` (apimachinery's `NewMethodNotSupported`
    /// names no resource here).
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .about(&Subject::default())
    }

    /// 404 for a path nothing is served at, as kube-apiserver's mux answers: `NewNotFound` of
    /// no resource, whose `details` are empty.
    pub fn no_route() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .about(&Subject::default())
    }

    /// 406 `NotAcceptable` saying why (`newNotAcceptableError`).
    pub fn not_acceptable_because(message: String) -> Self {
        ApiError::new(406, "NotAcceptable", message)
    }

    /// 406 `NotAcceptable` of go-restful, whose route produces none of the media types asked
    /// for: it names the route's representations, with empty `details`.
    pub fn no_representation(produced: &[&str]) -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "406: Not Acceptable\n\nAvailable representations: {}",
                produced.join(", ")
            ),
        )
        .about(&Subject::default())
    }

    /// 406 `NotAcceptable` of kube-apiserver's negotiation.
    pub fn not_acceptable(supported: &[&str]) -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                supported.join(", ")
            ),
        )
    }

    /// 415 `UnsupportedMediaType` of kube's negotiation (`NewUnsupportedMediaTypeError`),
    /// which names the types it takes, not the one found.
    pub fn unsupported_media_type() -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    }

    /// 415 of go-restful, whose route consumes none of the request's media type (a built-in
    /// kind's PATCH of another type), through kube's service error handler: empty
    /// `details`.
    pub fn unsupported_by_route() -> Self {
        ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
            .about(&Subject::default())
    }

    /// 415 for a patch type the resource does not take: kube's patch handler names the
    /// types it takes, not the one found (`NewUnsupportedMediaTypeError`).
    pub fn unsupported_patch(accepted: &[&str]) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// A patch that could not be applied: 400 for a malformed patch, 413 for too many JSON
    /// patch operations, 422 for one that does not apply (with the patch as the bad value,
    /// as kube-apiserver reports it).
    pub fn from_patch(error: &crate::patch::PatchError, patch: &[u8]) -> Self {
        use crate::patch::PatchError;
        match error {
            PatchError::Malformed(message) => ApiError::bad_request(message.clone()),
            PatchError::TooManyOperations(_) => {
                ApiError::new(413, "RequestEntityTooLarge", error.to_string())
            }
            // `NewGenericServerResponse(422, …)`: its fixed message; the library's is not shown.
            PatchError::NotApplied(_) => ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
            .about(&Subject::default()),
            PatchError::Failed(message) => {
                let shown: String = String::from_utf8_lossy(patch).chars().take(256).collect();
                let mut error = ApiError::new(422, "Invalid", String::new());
                error.causes = vec![Cause {
                    reason: "FieldValueInvalid".to_owned(),
                    message: format!("Invalid value: {shown:?}: {message}"),
                    field: "patch".to_owned(),
                }];
                error.message = format!(" \"\" is invalid: patch: {}", error.causes[0].message);
                error
            }
        }
    }

    /// 409 `Conflict` of a server-side apply (`NewApplyConflict`): kube-apiserver's message,
    /// and a `FieldManagerConflict` cause per field.
    pub fn apply_conflict(message: String, causes: Vec<(String, String)>) -> Self {
        let mut error = ApiError::new(409, "Conflict", message);
        error.causes = causes
            .into_iter()
            .map(|(message, field)| Cause {
                reason: "FieldManagerConflict".to_owned(),
                message,
                field,
            })
            .collect();
        error
    }

    /// 401 `Unauthorized`, as kube-apiserver answers a request it could not authenticate.
    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 413 `RequestEntityTooLarge`.
    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 410 `Expired`.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// This error with `token` as its Status's `metadata.continue`.
    #[must_use]
    pub fn with_list_continue(mut self, token: String) -> Self {
        self.list_continue = Some(token.into());
        self
    }

    /// 500 with no reason and the bare message: what kube-apiserver answers for an error its
    /// handler did not turn into a `Status` (`ErrorToAPIStatus`: `StatusReasonUnknown`), such
    /// as server-side apply's "failed to create typed patch object".
    pub fn unknown(message: impl std::fmt::Display) -> Self {
        ApiError::new(500, "", message.to_string())
    }

    /// 500 `InternalError`, the error in its one cause as apimachinery's `NewInternalError`
    /// gives it.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        let mut error = ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        );
        error.causes = vec![Cause {
            reason: String::new(),
            message: message.to_string(),
            field: String::new(),
        }];
        error
    }

    /// 500 `StorageReadError` of a list some of whose stored values do not read (1.37's
    /// `AllowUnsafeMalformedObjectDeletion`, etcd3's `aggregatedStorageError`): `subject` the
    /// resource (plural and group), `failures` each value's key and storage error, in key
    /// order; `truncated` when the list stopped at the most it aggregates.
    pub fn store_read_error(
        subject: &Subject,
        failures: &[(String, String)],
        truncated: bool,
    ) -> Self {
        let first = failures
            .first()
            .map(|(_, error)| error.as_str())
            .unwrap_or_default();
        let mut message = format!(
            "failed to read one or more {} from the storage: {first}",
            subject.qualified()
        );
        if failures.len() > 1 {
            message.push_str(&format!(" (and {} more)", failures.len() - 1));
        }
        let mut error = ApiError::new(500, "StorageReadError", message).about(&Subject {
            name: "list".into(),
            ..subject.clone()
        });
        error.causes = failures
            .iter()
            .map(|(key, message)| Cause {
                reason: "UnexpectedServerResponse".into(),
                message: message.clone(),
                field: key.clone(),
            })
            .collect();
        if truncated {
            error.causes.push(Cause {
                reason: "FieldValueTooMany".into(),
                message: "too many errors, the list is truncated".into(),
                field: String::new(),
            });
        }
        error
    }

    /// The `StorageReadError` a watch ends with when it sees the delete of a value that
    /// does not read (etcd3's `corruptObjectDeletedError`).
    pub fn corrupt_object_deleted(why: &str) -> Self {
        ApiError::new(
            500,
            "StorageReadError",
            format!("saw a DELETED event, but object data is corrupt - {why}"),
        )
    }

    /// 504 `Timeout` (storage did not answer), with a retry hint.
    pub fn timeout(message: impl Into<String>) -> Self {
        let mut error = ApiError::new(504, "Timeout", message);
        error.retry_after_seconds = Some(1);
        error
    }

    /// 504 `Timeout` without a retry hint, as apimachinery's `NewTimeoutError(message, 0)`
    /// writes it: "Timeout: " before the message, and an empty `details`.
    pub fn timeout_after(message: &str) -> Self {
        let mut error = ApiError::new(504, "Timeout", format!("Timeout: {message}"));
        error.retry_after_seconds = Some(0);
        error
    }

    /// 403 `Forbidden`, as apimachinery's `NewForbidden` words it:
    /// `flowschemas.flowcontrol.apiserver.k8s.io "x" is forbidden: <why>`, without the name
    /// when there is none, and `forbidden: <why>` when there is no resource either.
    pub fn forbidden(subject: &Subject, why: &str) -> Self {
        let message = if subject.group.is_empty() && subject.kind.is_empty() {
            format!("forbidden: {why}")
        } else if subject.name.is_empty() {
            format!("{} is forbidden: {why}", subject.qualified())
        } else {
            format!(
                "{} {:?} is forbidden: {why}",
                subject.qualified(),
                subject.name
            )
        };
        ApiError::new(403, "Forbidden", message).about(subject)
    }

    /// A storage error about `subject`, in kube-apiserver's words.
    pub(crate) fn from_store(error: StoreError, subject: &Subject) -> Self {
        match error {
            StoreError::NotFound => ApiError::not_found(subject),
            StoreError::AlreadyExists => ApiError::already_exists(subject),
            StoreError::Conflict { .. } => ApiError::modified(subject),
            StoreError::Compacted {
                requested,
                compacted,
            } => ApiError::expired(format!(
                "too old resource version: {requested} ({compacted})"
            )),
            StoreError::FutureRevision { requested, current } => {
                // kube-apiserver waits for a revision ahead of its cache, then answers this.
                ApiError::timeout(format!(
                    "Too large resource version: {requested}, current: {current}"
                ))
            }
            StoreError::WatchOverflow { buffer } => ApiError::internal(format!(
                "the watch fell {buffer} events behind and was ended"
            )),
            // What a write answers when etcd does not, at the request's deadline
            // (k8s.io/apiserver pkg/endpoints/handlers/finisher/finisher.go).
            StoreError::Unavailable { .. } => ApiError::timeout_after(
                "request did not complete within requested timeout - context deadline exceeded",
            ),
            StoreError::Backend(message) => ApiError::internal(message),
        }
    }

    /// The `metav1.Status` body.
    pub fn status(&self) -> serde_json::Value {
        let mut status = serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": match &self.list_continue {
                Some(token) => serde_json::json!({"continue": token}),
                None => serde_json::json!({}),
            },
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty() {
            // metav1.Status omits an empty reason (`StatusReasonUnknown`).
            status.as_object_mut().map(|status| status.remove("reason"));
        }
        let mut details = serde_json::Map::new();
        if let Some(subject) = &self.details {
            if !subject.name.is_empty() {
                details.insert("name".into(), subject.name.clone().into());
            }
            if !subject.group.is_empty() {
                details.insert("group".into(), subject.group.clone().into());
            }
            if !subject.kind.is_empty() {
                details.insert("kind".into(), subject.kind.clone().into());
            }
        }
        if !self.causes.is_empty() {
            details.insert(
                "causes".into(),
                serde_json::to_value(&self.causes).unwrap_or_default(),
            );
        }
        // Go's `omitempty` drops a zero; the details stay, empty, as Go writes them.
        if let Some(seconds) = self.retry_after_seconds.filter(|s| *s > 0) {
            details.insert("retryAfterSeconds".into(), seconds.into());
        }
        // Go writes the details it has, all of whose fields may be empty.
        if self.details.is_some() || !details.is_empty() || self.retry_after_seconds.is_some() {
            status["details"] = serde_json::Value::Object(details);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject {
        Subject {
            group: "flowcontrol.apiserver.k8s.io".into(),
            kind: "flowschemas".into(),
            name: "x".into(),
        }
    }

    #[test]
    fn messages_are_kube_apiservers() {
        assert_eq!(
            ApiError::not_found(&subject()).message,
            r#"flowschemas.flowcontrol.apiserver.k8s.io "x" not found"#
        );
        assert_eq!(
            ApiError::modified(&subject()).message,
            "Operation cannot be fulfilled on flowschemas.flowcontrol.apiserver.k8s.io \"x\": \
             the object has been modified; please apply your changes to the latest version and \
             try again"
        );
        let invalid = Subject {
            kind: "FlowSchema".into(),
            ..subject()
        };
        let cause = |field: &str| Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: field.into(),
        };
        assert_eq!(
            ApiError::invalid(&invalid, vec![cause("spec.a")]).message,
            r#"FlowSchema.flowcontrol.apiserver.k8s.io "x" is invalid: spec.a: Required value"#
        );
        assert_eq!(
            ApiError::invalid(&invalid, vec![cause("spec.a"), cause("spec.b")]).message,
            "FlowSchema.flowcontrol.apiserver.k8s.io \"x\" is invalid: [spec.a: Required value, \
             spec.b: Required value]"
        );
    }

    #[test]
    fn the_status_body_carries_details_and_causes() {
        let status = ApiError::invalid(
            &subject(),
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: 1".into(),
                field: "spec.x".into(),
            }],
        )
        .status();
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["name"], "x");
        assert_eq!(status["details"]["causes"][0]["field"], "spec.x");
        assert_eq!(
            ApiError::no_route().status()["details"],
            serde_json::json!({})
        );
    }
}
