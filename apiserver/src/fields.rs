//! Field management of a served resource: `metadata.managedFields` kept on every write and
//! server-side apply, with `apfkit-fieldmanager` doing what kube-apiserver's field manager
//! does. Objects are compared in the request's version; managers of other versions are
//! compared in theirs, converted through the hub without defaulting (as kube-apiserver's
//! `versionConverter` converts).

use std::collections::BTreeMap;
use std::sync::Arc;

use apfkit_fieldmanager::managed::{FieldManager, FieldManagerError};
use apfkit_fieldmanager::path::PathElement;
use apfkit_fieldmanager::schema::Schema;
use apfkit_fieldmanager::set::FieldSet;
use apfkit_fieldmanager::updater::{OneVersion, Versions};
use apfkit_runtime::Object;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::Encoding;
use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::store::{Objects, Place, Served, SharedVersion, UpdateKind, VersionCodec, Written};

/// kube-apiserver's limit on a field manager's name (`FieldManagerMaxLength`).
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// One kind's versions, as the field manager sees them: the codec and merge rules of each,
/// converted through the hub without defaulting (as kube-apiserver's `versionConverter`).
pub struct KindVersions<'a, H: 'static> {
    /// The codec of every version.
    pub codecs: &'a [SharedVersion<H>],
    /// The merge rules of every version, by `group/version`.
    pub schemas: &'a BTreeMap<String, Schema>,
    /// Whether the kind has a status subresource (its main resource then resets `status`).
    pub has_status: bool,
    /// Whether a write to its status keeps its metadata changes (Services: their status
    /// resets only `spec`; [`Strategy::status_writes_metadata`](crate::store::Strategy)).
    pub status_writes_metadata: bool,
}

impl<'a, H> KindVersions<'a, H> {
    /// The versions of a served resource.
    pub fn of(served: &'a Served<H>) -> Self {
        KindVersions {
            codecs: &served.versions,
            schemas: served.field_schemas(),
            has_status: served.config.status,
            status_writes_metadata: served.strategy().status_writes_metadata(),
        }
    }
}

impl<H: Object + Clone + 'static> Versions for KindVersions<'_, H> {
    fn schema(&self, api_version: &str) -> Option<&Schema> {
        self.schemas.get(api_version)
    }

    fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if from == api_version {
            return Ok(object.clone());
        }
        let codec_of = |api_version: &str| {
            self.codecs
                .iter()
                .find(|c| c.api_version() == api_version)
                .ok_or_else(|| format!("{api_version} is not served"))
        };
        let hub = codec_of(from)?
            .decode_as_is(object)
            .map_err(|e| e.to_string())?;
        codec_of(api_version)?
            .encode(hub, &mut Vec::new())
            .map_err(|e| e.to_string())
    }
}

/// The fields the strategy resets, by version: `status` on the main resource of a kind with
/// a status subresource (and on Namespaces' `/finalize`), `metadata` and `spec` on `/status`
/// (kube-apiserver's `GetResetFields`, for example
/// `pkg/registry/flowcontrol/flowschema/strategy.go`).
fn reset_fields<H>(
    kind: &KindVersions<'_, H>,
    subresource: Option<&str>,
) -> BTreeMap<String, FieldSet> {
    let names: &[&str] = match (kind.has_status, subresource) {
        (true, Some("status")) if kind.status_writes_metadata => &["spec"],
        (true, Some("status")) => &["metadata", "spec"],
        (true, _) => &["status"],
        (false, _) => &[],
    };
    if names.is_empty() {
        return BTreeMap::new();
    }
    let mut set = FieldSet::new();
    for name in names {
        set.insert(&[PathElement::Field((*name).to_owned())]);
    }
    kind.codecs
        .iter()
        .map(|codec| (codec.api_version(), set.clone()))
        .collect()
}

/// The `managedFields` kube-apiserver's create handler gives an object it hands to a
/// registry that stores nothing (a review, a TokenRequest): `UpdateNoErrors` of the decoded
/// object over the kind's zero value (`zero`, with `metadata`), so the fields the request set
/// for `manager`, on `subresource` if it is one; `None` when it set none. The kind's schema is
/// kube's (its OpenAPI documents), compiled once.
pub(crate) fn created_managed_fields(
    kind: &GroupVersionKind,
    zero: &Value,
    object: &Value,
    manager: &str,
    subresource: Option<&str>,
) -> Option<Value> {
    type Compiled = std::sync::Mutex<BTreeMap<String, Arc<OneVersion>>>;
    static VERSIONS: std::sync::OnceLock<Compiled> = std::sync::OnceLock::new();
    let api_version = kind.api_version();
    let versions = {
        let mut compiled = VERSIONS.get_or_init(Compiled::default).lock().ok()?;
        compiled
            .entry(format!("{api_version}/{}", kind.kind))
            .or_insert_with(|| {
                let schema = crate::kube_openapi::schema(kind)
                    .map_or_else(Schema::deduced, |json| Schema::compile(&json));
                Arc::new(OneVersion {
                    api_version: api_version.clone(),
                    schema,
                })
            })
            .clone()
    };
    let field_manager = FieldManager::new(
        &*versions,
        &api_version,
        &kind.kind,
        subresource,
        BTreeMap::new(),
    );
    let typed = |value: &Value| {
        let mut value = value.clone();
        value["apiVersion"] = api_version.clone().into();
        value["kind"] = kind.kind.to_string().into();
        value
    };
    let zero = typed(zero);
    let mut new = typed(object);
    if let Some(metadata) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    // The field manager names a manager that is not given `unknown`.
    let written = field_manager.update(&zero, new, manager, &now());
    written.pointer("/metadata/managedFields").cloned()
}

/// The manager kube-apiserver's own writers record (its loopback client's user agent): the
/// objects it makes as it starts, and its controllers' writes (a CRD's status, the
/// bootstrap RBAC policy, the system namespaces).
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// The manager a request names: `fieldManager`, or else the user agent up to its first `/`,
/// without unprintable characters, at most 128 bytes (`managerOrUserAgent` in
/// `k8s.io/apiserver/pkg/endpoints/handlers/rest.go`).
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    let prefix = user_agent
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The causes of a `fieldManager` that kube-apiserver refuses (`ValidateFieldManager`): too
/// long, or with unprintable characters.
pub fn field_manager_causes(field_manager: &str) -> Vec<Cause> {
    use apfkit_runtime::field::{BadValue, FieldError, go_printable};
    let mut errors = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long(
            "fieldManager",
            FIELD_MANAGER_MAX_LENGTH as i64,
        ));
    }
    // apimachinery's `ValidateFieldManager` (pkg/apis/meta/v1/validation/validation.go);
    for (at, c) in field_manager.char_indices() {
        if !go_printable(c) {
            errors.push(FieldError::invalid(
                "fieldManager",
                BadValue::Str(field_manager.to_owned()),
                format!(
                    "invalid character U+{:04X} (at position {at})",
                    u32::from(c)
                ),
            ));
        }
    }
    errors.iter().map(Cause::from).collect()
}

/// The time a manager's entry records: now, in RFC 3339 seconds, as the server stamps
/// objects.
pub(crate) fn now() -> String {
    serde_json::to_value(crate::store::now())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An object in the request's version as the field manager reads it: as Go writes it, with
/// the `null` of each struct-typed time Go's zero value has (a condition's
/// `lastTransitionTime`), which kube's field manager sees as a field set.
fn value_of<H: Object + Clone>(codec: &dyn VersionCodec<H>, object: &H) -> Result<Value, ApiError> {
    let mut written = Vec::new();
    codec
        .encode_into(
            object.clone(),
            Encoding::Json,
            &mut written,
            &mut Vec::new(),
        )
        .map_err(ApiError::internal)?;
    let mut value: Value = serde_json::from_slice(&written).map_err(ApiError::internal)?;
    // An empty list of managed fields, which Go leaves out, is a request to reset them.
    if let Some(entries) = &object.metadata().managed_fields
        && let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.insert(
            "managedFields".to_owned(),
            serde_json::to_value(entries).map_err(ApiError::internal)?,
        );
    }
    Ok(value)
}

fn set_managed_fields<H: Object>(object: &mut H, value: &Value) -> Result<(), ApiError> {
    let entries = value
        .pointer("/metadata/managedFields")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(ApiError::internal)?;
    object.metadata_mut().managed_fields = entries;
    Ok(())
}

/// Records the writer of `new` over `live` (`None` for a create) in `new`'s
/// `metadata.managedFields`, as kube-apiserver's `UpdateNoErrors` does for creates, updates
/// and non-apply patches, of the object or of its `subresource`.
///
/// # Errors
///
/// An object that does not encode in the request's version (500).
pub fn record_update<H>(
    served: &Served<H>,
    codec: &dyn VersionCodec<H>,
    subresource: Option<&str>,
    live: Option<&H>,
    mut new: H,
    manager: &str,
) -> Result<H, ApiError>
where
    H: Object + Clone + 'static,
{
    let versions = KindVersions::of(served);
    let field_manager = FieldManager::new(
        &versions,
        &codec.api_version(),
        codec.kind(),
        subresource,
        reset_fields(&versions, subresource),
    );
    // A create is compared with the kind's zero value, as kube-apiserver's `New()`.
    let live = match live {
        Some(live) => value_of(codec, live)?,
        None => codec.zero(),
    };
    let written = field_manager.update(&live, value_of(codec, &new)?, manager, &now());
    set_managed_fields(&mut new, &written)?;
    Ok(new)
}

/// Writes `object` as a controller in the server writes it through kube-apiserver's loopback
/// client: [`Objects::update_with`] in `codec`'s version, its `resourceVersion` the
/// precondition when it has one, with `manager` recorded over what is stored on every try
/// ([`record_update`]).
///
/// # Errors
///
/// As [`Objects::update`].
pub async fn update_as<H>(
    objects: &Objects<H>,
    served: &Served<H>,
    codec: &dyn VersionCodec<H>,
    place: Place<'_>,
    object: H,
    kind: UpdateKind,
    manager: &str,
) -> Result<Written<H>, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    objects
        .update_with(
            served,
            place,
            object,
            &codec.api_version(),
            kind,
            false,
            |live, new| record_update(served, codec, kind.subresource(), Some(live), new, manager),
        )
        .await
}

/// Applies `config` for `manager` to `live` (`None` when the object does not exist): the
/// object to store, in the request's version, with its `managedFields`.
///
/// # Errors
///
/// As [`apply_values`].
pub fn apply<H>(
    served: &Served<H>,
    codec: &dyn VersionCodec<H>,
    status: bool,
    live: Option<&H>,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError>
where
    H: Object + Clone + 'static,
{
    let live = match live {
        Some(live) => value_of(codec, live)?,
        None => serde_json::json!({}),
    };
    let request = ApplyRequest {
        codec,
        status,
        manager,
        force,
    };
    apply_values(&KindVersions::of(served), &request, &live, config)
}

/// A server-side apply: in which version and kind (the codec), through `/status` or not, by
/// whom, forced or not.
pub struct ApplyRequest<'a, H: 'static> {
    /// The codec of the request's version.
    pub codec: &'a dyn VersionCodec<H>,
    /// Whether the apply is to `/status`.
    pub status: bool,
    /// The field manager.
    pub manager: &'a str,
    /// Whether conflicts are overridden.
    pub force: bool,
}

/// Applies `config` to `live` (`{}` when there is none; both in the request's version) for
/// the request's manager: what `apfkit serve` stores, and what `apfkit apply --server-side
/// --dry-run` prints.
///
/// # Errors
///
/// kube-apiserver's answers: 409 for conflicts, 400 for an object of another kind or
/// version or one that sets `managedFields`, 500 for a configuration its schema cannot
/// merge (undeclared fields, duplicate keys).
pub fn apply_values<H>(
    versions: &KindVersions<'_, H>,
    request: &ApplyRequest<'_, H>,
    live: &Value,
    config: &Value,
) -> Result<Value, ApiError>
where
    H: Object + Clone + 'static,
{
    let codec = request.codec;
    let api_version = codec.api_version();
    let field_manager = FieldManager::new(
        versions,
        &api_version,
        codec.kind(),
        request.status.then_some("status"),
        reset_fields(versions, request.status.then_some("status")),
    );
    if let Some(schema) = versions.schema(&api_version)
        && let Err(error) = apfkit_fieldmanager::typed::Typed::new(schema).check_declared(config)
    {
        let meta = |name: &str| {
            config
                .pointer(&format!("/metadata/{name}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        // A plain error in kube-apiserver's field manager, answered as such.
        return Err(ApiError::unknown(format!(
            "failed to create typed patch object ({}/{}; {api_version}, Kind={}): {error}",
            meta("namespace"),
            meta("name"),
            codec.kind()
        )));
    }
    field_manager
        .apply(live, config, request.manager, request.force, &now())
        .map_err(|error| match error {
            FieldManagerError::BadRequest(message) => ApiError::bad_request(message),
            FieldManagerError::Conflict { message, causes } => {
                ApiError::apply_conflict(message, causes)
            }
            FieldManagerError::Internal(message) => ApiError::unknown(message),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_managers_are_checked_as_apimachinery_checks_them() {
        assert!(field_manager_causes("kubectl-client-side-apply").is_empty());
        let messages = |name: &str| -> Vec<String> {
            field_manager_causes(name)
                .into_iter()
                .map(|c| c.message)
                .collect()
        };
        assert_eq!(
            messages("a\u{1}b"),
            [r#"Invalid value: "a\x01b": invalid character U+0001 (at position 1)"#]
        );
        // A space other than ASCII's is not printable in Go either.
        assert_eq!(
            messages("a\u{a0}"),
            [r#"Invalid value: "a\u00a0": invalid character U+00A0 (at position 1)"#]
        );
        assert_eq!(
            messages(&"m".repeat(129)),
            ["Too long: may not be more than 128 bytes"]
        );
    }
}
