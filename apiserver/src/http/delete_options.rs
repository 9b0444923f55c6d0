//! `DeleteOptions` as kube-apiserver's delete handlers read them (`handlers/delete.go`): from
//! the body when there is one, in its media type (JSON, YAML, or protobuf in the `k8s\0`
//! envelope, which client-go sends for kube's own kinds), else from the query, and checked as
//! apimachinery's `ValidateDeleteOptions` checks them. Of the options, the server acts on the
//! preconditions, `dryRun`, `propagationPolicy` and `orphanDependents` (the garbage
//! collector's finalizers: [`crate::store::Propagation`]) and
//! `ignoreStoreReadErrorWithClusterBreakingPotential` (1.37's
//! `AllowUnsafeMalformedObjectDeletion`, on); `gracePeriodSeconds` is read and checked but
//! changes nothing here, as no kind served has graceful deletion.

use apfkit_runtime::scheme::PROTOBUF_PREFIX;
use serde::Deserialize;

use super::media::{Format, body_format};
use super::query::{Query, invalid_options};
use crate::error::ApiError;
use crate::store::{Preconditions, Propagation, PropagationPolicy};

/// What a delete asks besides its target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// What the object must be to be deleted.
    pub preconditions: Preconditions,
    /// Whether `preconditions` were given at all (`{}` included), which the unsafe delete
    /// refuses.
    preconditions_given: bool,
    /// `dryRun` values, as given.
    pub dry_run: Vec<String>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`.
    pub propagation_policy: Option<String>,
    /// `orphanDependents` (deprecated).
    pub orphan_dependents: Option<bool>,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential`: delete an object whose stored value
    /// no longer reads, without reading it (authorized as `unsafe-delete-ignore-read-errors`).
    pub ignore_store_read_error: Option<bool>,
}

impl DeleteOptions {
    /// The options of a delete with `body` (of `content_type`) and `query`: the body's when
    /// it has any bytes, else the query's; checked as apimachinery's `ValidateDeleteOptions`
    /// checks them.
    ///
    /// # Errors
    ///
    /// 415 for a body in another media type, 400 for one that does not decode (or is another
    /// kind), 422 for options kube refuses (`DeleteOptions.meta.k8s.io "" is invalid`).
    pub fn read(
        content_type: Option<&str>,
        body: &[u8],
        query: &Query,
    ) -> Result<DeleteOptions, ApiError> {
        let options = if body.is_empty() {
            DeleteOptions {
                preconditions: Preconditions::default(),
                preconditions_given: false,
                dry_run: query.dry_run_values.clone(),
                grace_period_seconds: query.grace_period_seconds,
                propagation_policy: query.propagation_policy.clone(),
                orphan_dependents: query.orphan_dependents,
                ignore_store_read_error: query.ignore_store_read_error,
            }
        } else {
            decode(content_type, body)?
        };
        options.validate()?;
        Ok(options)
    }

    /// Whether the delete is a dry run.
    pub fn is_dry_run(&self) -> bool {
        !self.dry_run.is_empty()
    }

    /// What the delete asks for the object's dependents (once validated, the policy is one
    /// kube knows).
    pub fn propagation(&self) -> Propagation {
        Propagation {
            orphan_dependents: self.orphan_dependents,
            policy: self
                .propagation_policy
                .as_deref()
                .and_then(PropagationPolicy::parse),
        }
    }

    /// Whether the delete asks to remove an object whose stored value does not read.
    pub fn ignores_store_read_errors(&self) -> bool {
        self.ignore_store_read_error == Some(true)
    }

    /// apimachinery's `ValidateDeleteOptions`: `propagationPolicy` with `orphanDependents`, or
    /// of an unknown value; `dryRun`; the unsafe delete with any option it cannot honour.
    fn validate(&self) -> Result<(), ApiError> {
        use apfkit_runtime::field::{BadValue, FieldError};
        const UNSAFE: &str = "ignoreStoreReadErrorWithClusterBreakingPotential";
        let mut errors = Vec::new();
        if let Some(policy) = &self.propagation_policy {
            if self.orphan_dependents.is_some() {
                errors.push(FieldError::invalid(
                    "propagationPolicy",
                    BadValue::Str(policy.clone()),
                    "orphanDependents and deletionPropagation cannot be both set",
                ));
            }
            if !matches!(policy.as_str(), "Foreground" | "Background" | "Orphan") {
                errors.push(FieldError::not_supported(
                    "propagationPolicy",
                    BadValue::Str(policy.clone()),
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
            }
        }
        if !self.dry_run.iter().all(|v| v == "All") {
            errors.push(FieldError::not_supported(
                "dryRun",
                BadValue::Strings(self.dry_run.clone()),
                &["All"],
            ));
        }
        if self.ignores_store_read_errors() {
            let set = [
                (self.propagation_policy.is_some(), ".propagationPolicy"),
                (self.orphan_dependents.is_some(), ".orphanDependents"),
                (self.grace_period_seconds.is_some(), ".gracePeriodSeconds"),
                (self.preconditions_given, ".preconditions"),
            ];
            for (_, option) in set.iter().filter(|(set, _)| *set) {
                errors.push(FieldError::invalid(
                    UNSAFE,
                    BadValue::Go("true".into()),
                    format!("cannot be set together with {option}"),
                ));
            }
        }
        invalid_options("DeleteOptions", &errors)
    }
}

/// The JSON (and YAML) form, `metav1.DeleteOptions`; unknown fields ignored, as kube's
/// decoder ignores them here.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Written {
    kind: Option<String>,
    api_version: Option<String>,
    #[serde(default)]
    preconditions: Option<WrittenPreconditions>,
    #[serde(default)]
    dry_run: Option<Vec<String>>,
    // Read for their types only.
    #[serde(default)]
    grace_period_seconds: Option<i64>,
    #[serde(default)]
    propagation_policy: Option<String>,
    #[serde(default)]
    orphan_dependents: Option<bool>,
    #[serde(default)]
    ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenPreconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

fn decode(content_type: Option<&str>, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let format = body_format(content_type)?;
    let written: Written = match format {
        Format::Protobuf => return decode_protobuf(body),
        Format::Json => serde_json::from_slice(body).map_err(json_error)?,
        Format::Yaml => {
            let text = std::str::from_utf8(body)
                .map_err(|e| ApiError::bad_request(format!("yaml: invalid UTF-8: {e}")))?;
            serde_saphyr::from_str(text).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
    };
    check_kind(
        written.api_version.as_deref().unwrap_or_default(),
        written.kind.as_deref().unwrap_or_default(),
    )?;
    let preconditions_given = written.preconditions.is_some();
    let preconditions = written
        .preconditions
        .map_or_else(Preconditions::default, |p| Preconditions {
            uid: p.uid,
            resource_version: p.resource_version,
        });
    Ok(DeleteOptions {
        preconditions,
        preconditions_given,
        dry_run: written.dry_run.unwrap_or_default(),
        grace_period_seconds: written.grace_period_seconds,
        propagation_policy: written.propagation_policy,
        orphan_dependents: written.orphan_dependents,
        ignore_store_read_error: written.ignore_store_read_error_with_cluster_breaking_potential,
    })
}

/// A JSON body that does not decode: kube finds the kind first, so malformed JSON is its
/// "couldn't get version/kind" (Go's words at the end of the input), a value of the wrong
/// type the decoder's.
fn json_error(error: serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    match error.classify() {
        Category::Eof => ApiError::bad_request(
            "couldn't get version/kind; json parse error: unexpected end of JSON input",
        ),
        Category::Syntax | Category::Io => ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {error}"
        )),
        Category::Data => ApiError::bad_request(format!("decoding DeleteOptions: {error}")),
    }
}

/// A body of another kind is not `DeleteOptions`: kube's scheme finds no conversion to it.
fn check_kind(api_version: &str, kind: &str) -> Result<(), ApiError> {
    if kind.is_empty() || kind == "DeleteOptions" {
        return Ok(());
    }
    let version = api_version.rsplit('/').next().unwrap_or_default();
    Err(ApiError::bad_request(format!(
        "converting ({version}.{kind}) to (v1.DeleteOptions): unknown conversion"
    )))
}

/// `runtime.Unknown`, the envelope after `k8s\0` (apimachinery `runtime/generated.proto`).
#[derive(Clone, PartialEq, prost::Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// `metav1.DeleteOptions` (apimachinery `meta/v1/generated.proto`).
#[derive(Clone, PartialEq, prost::Message)]
struct DeleteOptionsMessage {
    #[prost(int64, optional, tag = "1")]
    grace_period_seconds: Option<i64>,
    #[prost(message, optional, tag = "2")]
    preconditions: Option<PreconditionsMessage>,
    #[prost(bool, optional, tag = "3")]
    orphan_dependents: Option<bool>,
    #[prost(string, optional, tag = "4")]
    propagation_policy: Option<String>,
    #[prost(string, repeated, tag = "5")]
    dry_run: Vec<String>,
    #[prost(bool, optional, tag = "6")]
    ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PreconditionsMessage {
    #[prost(string, optional, tag = "1")]
    uid: Option<String>,
    #[prost(string, optional, tag = "2")]
    resource_version: Option<String>,
}

fn decode_protobuf(body: &[u8]) -> Result<DeleteOptions, ApiError> {
    use prost::Message as _;
    let Some(enveloped) = body.strip_prefix(PROTOBUF_PREFIX) else {
        return Err(ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ));
    };
    let unknown = Unknown::decode(enveloped)
        .map_err(|e| ApiError::bad_request(format!("decoding DeleteOptions: {e}")))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    check_kind(
        type_meta.api_version.as_deref().unwrap_or_default(),
        type_meta.kind.as_deref().unwrap_or_default(),
    )?;
    let message = DeleteOptionsMessage::decode(unknown.raw.unwrap_or_default().as_slice())
        .map_err(|e| ApiError::bad_request(format!("decoding DeleteOptions: {e}")))?;
    let preconditions_given = message.preconditions.is_some();
    let preconditions = message.preconditions.unwrap_or_default();
    Ok(DeleteOptions {
        preconditions_given,
        preconditions: Preconditions {
            uid: preconditions.uid,
            resource_version: preconditions.resource_version,
        },
        dry_run: message.dry_run,
        grace_period_seconds: message.grace_period_seconds,
        propagation_policy: message.propagation_policy,
        orphan_dependents: message.orphan_dependents,
        ignore_store_read_error: message.ignore_store_read_error_with_cluster_breaking_potential,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str) -> Query {
        Query::parse(Some(text)).unwrap()
    }

    /// What client-go 1.37 sends for `Delete(ctx, name, DeleteOptions{})`.
    const CLIENT_GO_EMPTY: &[u8] =
        b"k8s\x00\n0\n\x1fflowcontrol.apiserver.k8s.io/v1\x12\rDeleteOptions\x12\x00\x1a\x00\"\x00";

    fn protobuf(options: &DeleteOptionsMessage, kind: &str) -> Vec<u8> {
        use prost::Message as _;
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("meta.k8s.io/v1".into()),
                kind: Some(kind.into()),
            }),
            raw: Some(options.encode_to_vec()),
        };
        [PROTOBUF_PREFIX, unknown.encode_to_vec().as_slice()].concat()
    }

    #[test]
    fn the_body_gives_the_options_in_each_media_type_and_the_query_only_without_one() {
        let protobuf_type = Some("application/vnd.kubernetes.protobuf");
        let empty =
            DeleteOptions::read(protobuf_type, CLIENT_GO_EMPTY, &query("dryRun=All")).unwrap();
        assert_eq!(
            empty,
            DeleteOptions::default(),
            "the body's options, not the query's"
        );
        let options = protobuf(
            &DeleteOptionsMessage {
                preconditions: Some(PreconditionsMessage {
                    uid: Some("u".into()),
                    resource_version: Some("7".into()),
                }),
                dry_run: vec!["All".into()],
                ..DeleteOptionsMessage::default()
            },
            "DeleteOptions",
        );
        let read = DeleteOptions::read(protobuf_type, &options, &query("")).unwrap();
        assert!(read.is_dry_run());
        assert_eq!(read.preconditions.uid.as_deref(), Some("u"));
        assert_eq!(read.preconditions.resource_version.as_deref(), Some("7"));

        let json = br#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"],"preconditions":{"uid":"u"},"unknown":1}"#;
        let read = DeleteOptions::read(None, json, &query("")).unwrap();
        assert!(read.is_dry_run());
        assert_eq!(read.preconditions.uid.as_deref(), Some("u"));
        let yaml = b"dryRun: [All]\npreconditions:\n  resourceVersion: \"3\"\n";
        let read = DeleteOptions::read(Some("application/yaml"), yaml, &query("")).unwrap();
        assert!(read.is_dry_run());
        assert_eq!(read.preconditions.resource_version.as_deref(), Some("3"));

        let from_query = DeleteOptions::read(None, b"", &query("dryRun=All")).unwrap();
        assert!(from_query.is_dry_run());
    }

    #[test]
    fn options_are_checked_as_validate_delete_options_checks_them() {
        let refused = |body: &str| {
            DeleteOptions::read(None, body.as_bytes(), &query(""))
                .unwrap_err()
                .message
        };
        assert_eq!(
            refused(r#"{"propagationPolicy":"Sideways"}"#),
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#
        );
        assert_eq!(
            refused(r#"{"propagationPolicy":"Orphan","orphanDependents":true}"#),
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set"#
        );
        // Every option the unsafe delete cannot honour, in kube's order; `{}` preconditions
        // count as given.
        assert_eq!(
            refused(
                r#"{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"preconditions":{},"gracePeriodSeconds":0,"propagationPolicy":"Background"}"#
            ),
            "DeleteOptions.meta.k8s.io \"\" is invalid: [ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .propagationPolicy, ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .gracePeriodSeconds, ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .preconditions]"
        );
        // False, or alone: accepted; from the query as from the body.
        let read = |body: &str, text: &str| {
            DeleteOptions::read(None, body.as_bytes(), &query(text)).unwrap()
        };
        assert!(
            !read(
                r#"{"ignoreStoreReadErrorWithClusterBreakingPotential":false,"gracePeriodSeconds":1}"#,
                ""
            )
            .ignores_store_read_errors()
        );
        assert!(
            read("", "ignoreStoreReadErrorWithClusterBreakingPotential=true")
                .ignores_store_read_errors()
        );
        let error = DeleteOptions::read(
            None,
            b"",
            &query("ignoreStoreReadErrorWithClusterBreakingPotential=true&orphanDependents=false"),
        )
        .unwrap_err();
        assert!(
            error
                .message
                .ends_with("cannot be set together with .orphanDependents")
        );
        let protobuf_type = Some("application/vnd.kubernetes.protobuf");
        let options = protobuf(
            &DeleteOptionsMessage {
                ignore_store_read_error_with_cluster_breaking_potential: Some(true),
                ..DeleteOptionsMessage::default()
            },
            "DeleteOptions",
        );
        assert!(
            DeleteOptions::read(protobuf_type, &options, &query(""))
                .unwrap()
                .ignores_store_read_errors()
        );
    }

    #[test]
    fn hostile_and_mistaken_bodies_are_refused_as_kube_refuses_them() {
        let refused = |content_type: Option<&str>, body: &[u8]| {
            DeleteOptions::read(content_type, body, &query("")).unwrap_err()
        };
        let error = refused(None, br#"{"dryRun":["bogus"]}"#);
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["bogus"]: supported values: "All""#
        );
        assert_eq!(refused(None, br#"{"dryRun":"All"}"#).code, 400);
        assert_eq!(
            refused(None, br#"{"kind":"Status","apiVersion":"v1"}"#).message,
            "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"
        );
        assert_eq!(refused(Some("text/plain"), b"{}").code, 415);
        let protobuf_type = Some("application/vnd.kubernetes.protobuf");
        assert_eq!(
            refused(
                protobuf_type,
                &protobuf(&DeleteOptionsMessage::default(), "Status")
            )
            .code,
            400
        );
        // Truncated, garbage, without the envelope, an oversized length.
        let mut truncated = CLIENT_GO_EMPTY.to_vec();
        truncated.truncate(20);
        for body in [
            truncated.as_slice(),
            b"k8s\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
            b"{}",
            b"k8s\x00\x12\xff\xff\xff\xff\x0f",
        ] {
            assert_eq!(refused(protobuf_type, body).code, 400, "{body:?}");
        }
        // The same field ten thousand times: the last one counts, as protobuf says.
        let mut repeated = PROTOBUF_PREFIX.to_vec();
        for _ in 0..10_000 {
            repeated.extend_from_slice(b"\x12\x02\x12\x00");
        }
        assert!(DeleteOptions::read(protobuf_type, &repeated, &query("")).is_ok());
        assert_eq!(
            refused(None, b"{").message,
            "couldn't get version/kind; json parse error: unexpected end of JSON input"
        );
        let deep = "{\"dryRun\":[".repeat(1000);
        for body in [&b"[]"[..], b"null x", deep.as_bytes()] {
            assert_eq!(refused(None, body).code, 400);
        }
    }
}
