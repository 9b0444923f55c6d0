//! Query parameters of resource requests, and list continue tokens as kube-apiserver writes
//! them (`k8s.io/apiserver/pkg/storage/continue.go`: base64url JSON of the API version, the
//! list's revision and the next key relative to the listed prefix).

use apfkit_runtime::scheme::UnknownFields;
use base64::Engine as _;

use crate::error::ApiError;
use crate::request_info::query_bool;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Revision;

/// How a read names the revision it wants (`resourceVersion` and `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// No `resourceVersion`: the newest data.
    Newest,
    /// `resourceVersion=0`: any data (served from the newest here).
    Any,
    /// `resourceVersion=N` (`NotOlderThan`): data at least that new.
    NotOlderThan(Revision),
    /// `resourceVersionMatch=Exact`: data at exactly that revision.
    Exact(Revision),
}

/// The query of a resource request.
#[derive(Debug, Clone)]
pub struct Query {
    /// `watch=true`.
    pub watch: bool,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit`; 0 for none.
    pub limit: usize,
    /// `continue`, decoded.
    pub resume: Option<Resume>,
    /// `resourceVersion` with `resourceVersionMatch`.
    pub read_at: ReadAt,
    /// `timeoutSeconds` of a watch.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents` of a watch (WatchList): `Some(true)` sends the objects as `ADDED`
    /// and then, with bookmarks allowed, a bookmark marking their end.
    pub send_initial_events: Option<bool>,
    /// `resourceVersionMatch` as given (empty when not), for [`Query::validate`].
    pub resource_version_match: String,
    /// `dryRun=All`: every `dryRun` value given, all `All` (a write verb checks them first:
    /// [`Query::check_dry_run`]).
    pub dry_run: bool,
    /// The `dryRun` values as given, in order.
    pub dry_run_values: Vec<String>,
    /// A delete's `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// A delete's `propagationPolicy`.
    pub propagation_policy: Option<String>,
    /// A delete's `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// A delete's `ignoreStoreReadErrorWithClusterBreakingPotential`.
    pub ignore_store_read_error: Option<bool>,
    /// `fieldValidation`; kube-apiserver's default is `Warn`.
    pub field_validation: UnknownFields,
    /// `includeObject` of a table: `None`, `Metadata` (default) or `Object`.
    pub include_object: IncludeObject,
    /// `fieldManager` of a write.
    pub field_manager: Option<String>,
    /// `force` of an apply patch.
    pub force: Option<bool>,
}

/// What a table row carries of its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// The object's metadata (`PartialObjectMetadata`).
    Metadata,
    /// The whole object.
    Object,
}

/// Where a continued list resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The revision of the first page; `None` for the newest (an "inconsistent" token, given
    /// with a 410 once the first page's revision was compacted: kube-apiserver writes it with
    /// revision -1).
    pub revision: Option<Revision>,
    /// The next key, relative to the listed prefix.
    pub start: Vec<u8>,
}

/// The `continue` token for a list read at `revision` (`None`: at the newest, as the
/// "inconsistent" token of an expired one) whose next key is `start`.
pub fn continue_token(revision: Option<Revision>, start: &[u8]) -> String {
    let rv = revision.map_or(-1, |revision| i64::try_from(revision.0).unwrap_or(i64::MAX));
    let token = serde_json::json!({
        "v": "meta.k8s.io/v1",
        "rv": rv,
        "start": String::from_utf8_lossy(start),
    });
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// A malformed continue token, worded as k8s.io/apiserver/pkg/storage/continue.go's errors
/// inside `ValidateListOptions`' "invalid continue token" (interfaces.go).
fn invalid_continue(why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "invalid continue token: continue key is not valid{why}"
    ))
}

/// The continue token as upstream's `continueToken` reads it: a missing field is its zero value.
#[derive(Debug, Default)]
struct ContinueToken {
    v: String,
    rv: i64,
    start: String,
}

/// Go's `base64.RawURLEncoding`, which ignores the bits past the last byte.
const GO_RAW_URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
);

/// Go's `base64.RawURLEncoding.DecodeString`: line breaks skipped, bits past the last byte
/// ignored; refused at the offset (in `token`) of a byte outside the alphabet, of a `=`, or
/// of a lone last character.
fn raw_url_base64(token: &str) -> Result<Vec<u8>, usize> {
    let kept: Vec<(usize, u8)> = token
        .bytes()
        .enumerate()
        .filter(|(_, byte)| !matches!(byte, b'\r' | b'\n'))
        .collect();
    let text: Vec<u8> = kept.iter().map(|&(_, byte)| byte).collect();
    GO_RAW_URL.decode(&text).map_err(|error| {
        use base64::DecodeError;
        let at = match error {
            DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => at,
            DecodeError::InvalidPadding => text.iter().position(|&b| b == b'=').unwrap_or(0),
            DecodeError::InvalidLength(_) => text.len().saturating_sub(1),
        };
        kept.get(at).map_or(0, |&(original, _)| original)
    })
}

/// The JSON of a token as Go's `json.Unmarshal` reads it into `continueToken`: its syntax
/// errors and type errors in Go's words, members matched to fields without regard to case
/// (the first type error Go meets is in the order of the document, here in the order of the
/// members' names).
fn read_continue_token(bytes: &[u8]) -> Result<ContinueToken, String> {
    if let Some(error) = apfkit_wire::go_scanner::syntax_error(bytes) {
        return Err(error.message);
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut token = ContinueToken::default();
    let members = match value {
        serde_json::Value::Null => return Ok(token),
        serde_json::Value::Object(members) => members,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type storage.continueToken",
                apfkit_wire::go_scanner::value_kind(&other)
            ));
        }
    };
    let mismatch = |field: &str, value: &serde_json::Value, go_type: &str| {
        let what = match value {
            serde_json::Value::Number(number) => format!("number {number}"),
            other => apfkit_wire::go_scanner::value_kind(other).to_owned(),
        };
        format!(
            "json: cannot unmarshal {what} into Go struct field continueToken.{field} of type {go_type}"
        )
    };
    for (key, value) in &members {
        match (key.to_ascii_lowercase().as_str(), value) {
            (_, serde_json::Value::Null) => {}
            ("v", serde_json::Value::String(v)) => token.v.clone_from(v),
            ("start", serde_json::Value::String(start)) => token.start.clone_from(start),
            ("rv", serde_json::Value::Number(number)) => {
                token.rv = number
                    .as_i64()
                    .ok_or_else(|| mismatch("rv", value, "int64"))?;
            }
            ("v" | "start", serde_json::Value::Number(_)) => {
                return Err(format!(
                    "json: cannot unmarshal number into Go struct field continueToken.{key} of type string"
                ));
            }
            (field @ ("v" | "start"), other) => return Err(mismatch(field, other, "string")),
            ("rv", other) => return Err(mismatch("rv", other, "int64")),
            _ => {}
        }
    }
    Ok(token)
}

/// k8s.io/apiserver/pkg/storage/continue.go `DecodeContinue`: raw URL-safe base64 of JSON; rv
/// 0 is invalid and a negative one reads the newest data; the start key must be clean (no
/// empty, `.` or `..` segment, no trailing `/`), so that a resumed list cannot leave the
/// listed prefix.
fn decode_continue(token: &str) -> Result<Resume, ApiError> {
    if token.len() > 4096 {
        return Err(invalid_continue(": longer than 4096 bytes"));
    }
    let bytes = raw_url_base64(token)
        .map_err(|at| invalid_continue(format_args!(": illegal base64 data at input byte {at}")))?;
    let token = read_continue_token(&bytes).map_err(|e| invalid_continue(format_args!(": {e}")))?;
    if token.v != "meta.k8s.io/v1" {
        return Err(invalid_continue(format_args!(
            ": server does not recognize this encoded version {}",
            token.v
        )));
    }
    let revision = match token.rv {
        0 => {
            return Err(invalid_continue(
                ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        rv if rv < 0 => None,
        rv => Some(Revision(rv.unsigned_abs())),
    };
    if token.start.is_empty() {
        return Err(invalid_continue(
            ": encoded start key empty (version meta.k8s.io/v1)",
        ));
    }
    let relative = token.start.strip_prefix('/').unwrap_or(&token.start);
    let clean = relative.is_empty()
        || relative
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if !clean {
        return Err(invalid_continue(format_args!(": {}", token.start)));
    }
    Ok(Resume {
        revision,
        start: relative.as_bytes().to_vec(),
    })
}

fn parse_number(name: &str, value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().map_err(|_| {
        ApiError::bad_request(format!(
            "{name}: Invalid value: {value:?}: must be a 64-bit integer"
        ))
    })
}

/// A resource version as the store's `ParseResourceVersion` reads it (Go's
/// `strconv.ParseUint`, which takes no sign), refused as `GetList` refuses it.
fn parse_revision(value: &str) -> Result<Revision, ApiError> {
    let parsed = if value.starts_with('+') {
        None
    } else {
        Some(value.parse::<u64>())
    };
    match parsed {
        Some(Ok(revision)) => Ok(Revision(revision)),
        other => {
            let why = match other {
                Some(Err(error)) if *error.kind() == std::num::IntErrorKind::PosOverflow => {
                    "value out of range"
                }
                _ => "invalid syntax",
            };
            let quoted = apfkit_runtime::field::go_quote(value);
            Err(ApiError::bad_request(format!(
                "invalid resource version: resourceVersion: Invalid value: {quoted}: \
                 strconv.ParseUint: parsing {quoted}: {why}"
            )))
        }
    }
}

impl Query {
    /// The `dryRun` values of a write whose options are `options` (`CreateOptions`,
    /// `UpdateOptions`, `PatchOptions`, `DeleteOptions`), checked as apimachinery's
    /// `ValidateDryRun` checks them: only `All`.
    ///
    /// # Errors
    ///
    /// 422 `Invalid`, about `options` of `meta.k8s.io`, naming the values.
    pub fn check_dry_run(&self, options: &str) -> Result<(), ApiError> {
        check_dry_run(&self.dry_run_values, options)
    }

    /// Parses a request's query string.
    ///
    /// # Errors
    ///
    /// 400 for a malformed value, selector or continue token, or a combination kube-apiserver
    /// refuses.
    pub fn parse(query: Option<&str>) -> Result<Query, ApiError> {
        let mut parsed = Query {
            watch: false,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
            limit: 0,
            resume: None,
            read_at: ReadAt::Newest,
            timeout_seconds: None,
            bookmarks: false,
            send_initial_events: None,
            resource_version_match: String::new(),
            dry_run: false,
            dry_run_values: Vec::new(),
            grace_period_seconds: None,
            propagation_policy: None,
            orphan_dependents: None,
            ignore_store_read_error: None,
            field_validation: UnknownFields::Warn,
            include_object: IncludeObject::Metadata,
            field_manager: None,
            force: None,
        };
        let mut resource_version: Option<String> = None;
        // apimachinery reads the first value of a parameter (every value of `dryRun`).
        let mut seen = std::collections::HashSet::new();
        let pairs = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .filter(|(name, _)| name == "dryRun" || seen.insert(name.clone()));
        for (name, value) in pairs {
            match name.as_ref() {
                "watch" => parsed.watch = query_bool(&value),
                "labelSelector" => {
                    parsed.labels = LabelSelector::parse(&value)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?;
                }
                "fieldSelector" => {
                    parsed.fields = FieldSelector::parse(&value).map_err(ApiError::bad_request)?;
                }
                "limit" => {
                    let limit = parse_number("limit", &value)?;
                    parsed.limit = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
                }
                "continue" if !value.is_empty() => parsed.resume = Some(decode_continue(&value)?),
                "resourceVersion" if !value.is_empty() => resource_version = Some(value.into()),
                "resourceVersionMatch" => parsed.resource_version_match = value.into_owned(),
                "sendInitialEvents" => {
                    parsed.send_initial_events = Some(query_bool(&value));
                }
                "timeoutSeconds" => {
                    let seconds = parse_number("timeoutSeconds", &value)?;
                    parsed.timeout_seconds = Some(u64::try_from(seconds.max(0)).unwrap_or(0));
                }
                "allowWatchBookmarks" => {
                    parsed.bookmarks = query_bool(&value);
                }
                "dryRun" => {
                    parsed.dry_run_values.push(value.into_owned());
                    parsed.dry_run = parsed.dry_run_values.iter().all(|v| v == "All");
                }
                "fieldValidation" => {
                    parsed.field_validation = match value.as_ref() {
                        "Strict" => UnknownFields::Strict,
                        "Warn" | "" => UnknownFields::Warn,
                        "Ignore" => UnknownFields::Ignore,
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "fieldValidation: Unsupported value: {other:?}: supported \
                                 values: \"Ignore\", \"Strict\", \"Warn\""
                            )));
                        }
                    }
                }
                "fieldManager" => parsed.field_manager = Some(value.into_owned()),
                "gracePeriodSeconds" => {
                    parsed.grace_period_seconds = Some(parse_number("gracePeriodSeconds", &value)?);
                }
                "propagationPolicy" => parsed.propagation_policy = Some(value.into_owned()),
                "orphanDependents" => parsed.orphan_dependents = Some(query_bool(&value)),
                "ignoreStoreReadErrorWithClusterBreakingPotential" => {
                    parsed.ignore_store_read_error = Some(query_bool(&value));
                }
                "force" => parsed.force = Some(query_bool(&value)),
                "includeObject" => {
                    parsed.include_object = match value.as_ref() {
                        "None" => IncludeObject::None,
                        "Object" => IncludeObject::Object,
                        _ => IncludeObject::Metadata,
                    }
                }
                _ => {}
            }
        }
        let exact = parsed.resource_version_match == "Exact";
        parsed.read_at = match resource_version.as_deref() {
            None => ReadAt::Newest,
            Some("0") => ReadAt::Any,
            Some(rv) if exact => ReadAt::Exact(parse_revision(rv)?),
            Some(rv) => ReadAt::NotOlderThan(parse_revision(rv)?),
        };
        // k8s.io/apiserver/pkg/storage/etcd3/store.go (GetList): a continue token takes no
        // resourceVersion but "0".
        if parsed.resume.is_some() && resource_version.as_deref().is_some_and(|rv| rv != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(parsed)
    }
}

impl Query {
    /// Whether the query has a label or field selector.
    pub fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || self.fields != FieldSelector::default()
    }

    /// Holds the list options to apimachinery's `ValidateListOptions`
    /// (k8s.io/apimachinery/pkg/apis/meta/internalversion/validation/validation.go) once the
    /// request is known to be a list or a watch, answering its errors as kube-apiserver does:
    /// 422 `Invalid` about `ListOptions.meta.k8s.io ""`. WatchList is on, as in
    /// kube-apiserver 1.34 and later.
    ///
    /// # Errors
    ///
    /// A combination of `resourceVersion`, `resourceVersionMatch`, `continue` and
    /// `sendInitialEvents` that kube-apiserver refuses.
    pub fn validate(&self) -> Result<(), ApiError> {
        use apfkit_runtime::field::{BadValue, FieldError};
        const MATCH: &str = "resourceVersionMatch";
        let matched = self.resource_version_match.as_str();
        let unsupported = |supported: &[&str]| {
            FieldError::not_supported(MATCH, BadValue::Str(matched.to_owned()), supported)
        };
        let mut errors = Vec::new();
        if self.watch {
            if self.send_initial_events.is_some() && matched != "NotOlderThan" {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !matched.is_empty() {
                if self.send_initial_events.is_none() {
                    errors.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents \
                         is provided",
                    ));
                }
                if matched != "NotOlderThan" {
                    errors.push(unsupported(&["NotOlderThan"]));
                }
                if self.resume.is_some() {
                    errors.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if !matched.is_empty() {
                // No resourceVersion is what reads the newest data.
                if self.read_at == ReadAt::Newest {
                    errors.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if self.resume.is_some() {
                    errors.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if matched != "Exact" && matched != "NotOlderThan" {
                    errors.push(unsupported(&["Exact", "NotOlderThan", ""]));
                }
                if matched == "Exact" && self.read_at == ReadAt::Any {
                    errors.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            if self.send_initial_events.is_some() {
                errors.push(FieldError::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        let subject = crate::error::Subject {
            group: "meta.k8s.io".into(),
            kind: "ListOptions".into(),
            name: String::new(),
        };
        Err(ApiError::invalid(
            &subject,
            errors.iter().map(crate::error::Cause::from).collect(),
        ))
    }
}

/// apimachinery's `ValidateDryRun` of the `dryRun` values of `options`.
fn check_dry_run(values: &[String], options: &str) -> Result<(), ApiError> {
    if values.iter().all(|v| v == "All") {
        return Ok(());
    }
    invalid_options(
        options,
        &[apfkit_runtime::field::FieldError::not_supported(
            "dryRun",
            apfkit_runtime::field::BadValue::Strings(values.to_vec()),
            &["All"],
        )],
    )
}

/// 422 about the options of kind `options` (`DeleteOptions.meta.k8s.io ""`) with `errors`,
/// or nothing when there are none.
pub(super) fn invalid_options(
    options: &str,
    errors: &[apfkit_runtime::field::FieldError],
) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let subject = crate::error::Subject {
        group: "meta.k8s.io".into(),
        kind: options.into(),
        name: String::new(),
    };
    Err(ApiError::invalid(
        &subject,
        errors.iter().map(crate::error::Cause::from).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    /// What kube-apiserver 1.37 answers for these tokens (Go's base64 and JSON decoders, as
    /// `DecodeContinue` runs them).
    #[test]
    fn bad_continue_tokens_are_refused_in_gos_words() {
        for (token, why) in [
            ("a", "illegal base64 data at input byte 0"),
            ("abcde", "illegal base64 data at input byte 4"),
            ("ab=c", "illegal base64 data at input byte 2"),
            ("a%20b", "illegal base64 data at input byte 1"),
            (
                "garbage",
                "invalid character '\\u0081' looking for beginning of value",
            ),
            (
                "ab%0Acd",
                "invalid character 'i' looking for beginning of value",
            ),
            (
                "W10",
                "json: cannot unmarshal array into Go value of type storage.continueToken",
            ),
            (
                "IngiCg",
                "json: cannot unmarshal string into Go value of type storage.continueToken",
            ),
            (
                "eyJydiI6IngifQ",
                "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
            ),
            (
                "eyJ2IjoxfQ",
                "json: cannot unmarshal number into Go struct field continueToken.v of type string",
            ),
            (
                "eyJydiI6MS41fQ",
                "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64",
            ),
            ("e30", "server does not recognize this encoded version "),
        ] {
            let error = Query::parse(Some(&format!("continue={token}"))).unwrap_err();
            assert_eq!(
                error.message,
                format!("invalid continue token: continue key is not valid: {why}"),
                "{token}"
            );
        }
    }

    #[test]
    fn continue_tokens_round_trip_and_refuse_tampering() {
        let token = continue_token(Some(Revision(42)), b"system-leader-election\0");
        let query = Query::parse(Some(&format!("continue={token}&limit=5"))).unwrap();
        assert_eq!(
            query.resume,
            Some(Resume {
                revision: Some(Revision(42)),
                start: b"system-leader-election\0".to_vec()
            })
        );
        assert_eq!(query.limit, 5);
        for bad in [
            "!!!".to_owned(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("{}"),
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"}"#),
            "a".repeat(10_000),
            // continue.go: padding is not raw base64; unclean start keys; an empty one.
            format!("{token}=="),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a//b"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a/./b"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a/"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v2","rv":3,"start":"a"}"#),
        ] {
            let error = Query::parse(Some(&format!("continue={bad}"))).unwrap_err();
            assert_eq!(error.code, 400, "{bad}");
            assert!(
                error
                    .message
                    .starts_with("invalid continue token: continue key is not valid"),
                "{error}"
            );
        }
        // A leading slash is upstream's own form of a relative key.
        let rooted = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"/a/b"}"#);
        let query = Query::parse(Some(&format!("continue={rooted}"))).unwrap();
        assert_eq!(
            query.resume,
            Some(Resume {
                revision: None,
                start: b"a/b".to_vec()
            })
        );
        let error = Query::parse(Some(&format!("continue={token}&resourceVersion=3"))).unwrap_err();
        assert_eq!(error.code, 400);
        // "0" goes with a continue token, as kube-apiserver's storage allows
        // (RunTestListInconsistentContinuation lists so).
        let query = Query::parse(Some(&format!("continue={token}&resourceVersion=0"))).unwrap();
        assert!(query.resume.is_some());
        // The inconsistent token of an expired one: revision -1, the newest.
        let inconsistent = continue_token(None, b"b");
        let query = Query::parse(Some(&format!("continue={inconsistent}"))).unwrap();
        assert_eq!(
            query.resume,
            Some(Resume {
                revision: None,
                start: b"b".to_vec()
            })
        );
    }

    #[test]
    fn resource_versions_and_limits_parse_as_kube_apiserver_reads_them() {
        assert_eq!(Query::parse(None).unwrap().read_at, ReadAt::Newest);
        assert_eq!(
            Query::parse(Some("resourceVersion=0")).unwrap().read_at,
            ReadAt::Any
        );
        assert_eq!(
            Query::parse(Some("resourceVersion=7&resourceVersionMatch=Exact"))
                .unwrap()
                .read_at,
            ReadAt::Exact(Revision(7))
        );
        assert_eq!(
            Query::parse(Some("resourceVersion=7")).unwrap().read_at,
            ReadAt::NotOlderThan(Revision(7))
        );
        for bad in [
            "resourceVersion=x",
            "limit=9223372036854775808",
            "limit=ten",
            "fieldValidation=Loose",
            "labelSelector=a%20in%20(",
            "fieldSelector=spec.x",
        ] {
            assert_eq!(Query::parse(Some(bad)).unwrap_err().code, 400, "{bad}");
        }
        // `dryRun` is a write's option, checked by the write (422 about its options).
        let query = Query::parse(Some("dryRun=All&dryRun=Some")).unwrap();
        assert!(!query.dry_run);
        let error = query.check_dry_run("PatchOptions").unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            r#"PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Some"]: supported values: "All""#
        );
        let query = Query::parse(Some("dryRun=All")).unwrap();
        assert!(query.dry_run && query.check_dry_run("CreateOptions").is_ok());
        // apimachinery's booleans: only `false` (in any case) and `0` are false.
        for (query, watch) in [
            ("watch=maybe", true),
            ("watch=", true),
            ("watch=FaLsE", false),
            ("watch=0", false),
            ("watch=1&watch=false", true),
        ] {
            assert_eq!(Query::parse(Some(query)).unwrap().watch, watch, "{query}");
        }
        let query =
            Query::parse(Some("allowWatchBookmarks=yes&force=&sendInitialEvents=f")).unwrap();
        assert_eq!(
            (query.bookmarks, query.force, query.send_initial_events),
            (true, Some(true), Some(true))
        );
        // The first value of a parameter is the one read.
        let query = Query::parse(Some("limit=3&limit=ten&fieldManager=a&fieldManager=b")).unwrap();
        assert_eq!(
            (query.limit, query.field_manager.as_deref()),
            (3, Some("a"))
        );
        assert_eq!(Query::parse(Some("limit=-3")).unwrap().limit, 0);
        assert_eq!(
            Query::parse(Some("limit=9223372036854775807"))
                .unwrap()
                .limit,
            9_223_372_036_854_775_807
        );
    }
}
