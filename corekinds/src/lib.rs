//! The kinds every controller touches, for a server of [`ServedObject`]s
//! (`apfkit-apiextensions`), as kube-apiserver serves them: core/v1 ConfigMaps, Secrets and
//! ServiceAccounts, coordination.k8s.io/v1 Leases, and Events (core/v1 and events.k8s.io/v1,
//! one storage read through both), each read as k8s-openapi's type reads
//! it, defaulted, prepared and checked as kube-apiserver's strategy does (upstream's messages),
//! printed with `kubectl get`'s columns and kept in kube's protobuf ([`protobuf`]).
//!
//! What sets them apart, as in kube-apiserver: a Secret's `stringData` is written into its
//! `data` and never answered, its `type` defaults to `Opaque` and never changes; a ConfigMap
//! or Secret marked `immutable` keeps its data for good; a Lease may be created by a PUT, and
//! is never updated without a `resourceVersion`.
//!
//! Beside them, two of kube-controller-manager's controllers: [`ServiceAccounts`] makes the
//! `default` ServiceAccount of every active namespace, [`RootCaPublisher`] its
//! `kube-root-ca.crt` ConfigMap.
//!
//! **Where to start**: serve [`resources()`] beside the server's own resources, and run the
//! controllers on the server (`apfkit-server` does both):
//!
//! ```
//! let served = apfkit_corekinds::resources::<()>().unwrap();
//! let plurals: Vec<&str> = served.iter().map(|s| s.plural.as_str()).collect();
//! assert_eq!(
//!     plurals,
//!     ["configmaps", "secrets", "serviceaccounts", "leases", "events", "events"]
//! );
//! assert!(served.iter().all(|s| s.config.namespaced));
//! ```

#![forbid(unsafe_code)]

mod config_maps;
mod controllers;
mod events;
mod leases;
pub mod protobuf;
mod secrets;
mod service_accounts;
mod tokens;

pub use tokens::{DEFAULT_ISSUER, ServiceAccountTokens, token_request_kind};

pub use controllers::{
    DEFAULT_SERVICE_ACCOUNT, ROOT_CA_CONFIG_MAP, RootCaPublisher, ServiceAccounts,
};

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::{JsonVersion, Normalize};
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{
    Generation, ResourceConfig, ResourceError, Served, SharedVersion, Strategy,
};
use apfkit_apiserver::table::Printer;
use apfkit_runtime::field::{FieldError, names};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::{ErrorKind, SchemeError, StorageEncoding};
use serde_json::Value;

/// ConfigMaps, Secrets, ServiceAccounts (`/api/v1/namespaces/NS/…`), Leases
/// (`/apis/coordination.k8s.io/v1/namespaces/NS/leases`) and Events (`/api/v1/…/events` and
/// `/apis/events.k8s.io/v1/…/events`, both kept under `events`), each kept in protobuf where
/// kube-apiserver keeps it.
///
/// # Errors
///
/// None in practice: each has its one version as its storage version.
pub fn resources<H: Send + Sync + 'static>() -> Result<Vec<Served<ServedObject<H>>>, ResourceError>
{
    let mut served = [
        config_maps::KIND,
        secrets::KIND,
        service_accounts::KIND,
        leases::KIND,
    ]
    .iter()
    .map(resource)
    .collect::<Result<Vec<_>, _>>()?;
    served.extend(events::resources()?);
    Ok(served)
}

/// What sets a kind here apart.
struct Kind {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    normalize: Normalize,
    /// A new object as Go writes it ([`JsonVersion::with_zero`]): what server-side apply
    /// compares a created object with.
    zero: fn() -> Value,
    /// The field labels of the kind's own conversion, if it registers one
    /// ([`JsonVersion::with_field_labels`]).
    field_labels: Option<&'static [&'static str]>,
    /// `Validate` and `ValidateUpdate`: the object and, on an update, the stored one.
    check: fn(&Value, Option<&Value>) -> Vec<FieldError>,
    /// `PrepareForCreate` and `PrepareForUpdate` (given the stored object).
    prepare: fn(&mut Value, Option<&Value>),
    /// `WarningsOnCreate` and `WarningsOnUpdate` (given the stored object).
    warn: fn(&Value, Option<&Value>) -> Vec<String>,
    printer: fn() -> Printer,
    /// `AllowCreateOnUpdate`.
    create_on_update: bool,
    /// `AllowUnconditionalUpdate`.
    unconditional_updates: bool,
}

fn resource<H: Send + Sync + 'static>(
    kind: &Kind,
) -> Result<Served<ServedObject<H>>, ResourceError> {
    let config = ResourceConfig::builtin(
        GroupVersionKind::from_static(kind.group, "v1", kind.kind),
        kind.plural,
        true,
    )
    .with_short_names(kind.short_names.iter().copied())
    .with_generation(Generation::Untracked)
    .stored_at(kind.plural, StorageEncoding::Protobuf)
    .with_kube_openapi();
    let version = JsonVersion::new(kind.group, "v1", kind.kind, kind.plural, kind.normalize)
        .with_zero(kind.zero)
        .stored_as_kube_stores_it();
    let version = match kind.field_labels {
        Some(labels) => version.with_field_labels(labels),
        None => version,
    }
    .with_protobuf(
        |object| protobuf::write(object).unwrap_or_else(|| Err("not a kind of here".to_owned())),
        protobuf::read_stored,
    );
    let versions = vec![Arc::new(version) as SharedVersion<ServedObject<H>>];
    Ok(
        Served::with_versions(config, kind.plural.to_owned(), versions)?.with_strategy(
            KindStrategy {
                check: kind.check,
                prepare: kind.prepare,
                warn: kind.warn,
                printer: (kind.printer)(),
                create_on_update: kind.create_on_update,
                unconditional_updates: kind.unconditional_updates,
            },
        ),
    )
}

/// A kind's strategy, from its [`Kind`].
struct KindStrategy {
    check: fn(&Value, Option<&Value>) -> Vec<FieldError>,
    prepare: fn(&mut Value, Option<&Value>),
    warn: fn(&Value, Option<&Value>) -> Vec<String>,
    printer: Printer,
    create_on_update: bool,
    unconditional_updates: bool,
}

impl<H> Strategy<ServedObject<H>> for KindStrategy {
    fn prepare_for_create(&self, stored: &mut Value) {
        (self.prepare)(stored, None);
    }
    fn prepare_for_update(&self, stored: &mut Value, old: &Value) {
        (self.prepare)(stored, Some(old));
    }
    fn warnings(&self, stored: &Value, old: Option<&Value>) -> Vec<String> {
        (self.warn)(stored, old)
    }
    fn allows_create_on_update(&self) -> bool {
        self.create_on_update
    }
    fn allows_unconditional_update(&self) -> bool {
        self.unconditional_updates
    }
    fn validate(
        &self,
        object: &ServedObject<H>,
        old: Option<&ServedObject<H>>,
        _api_version: &str,
    ) -> Vec<Cause> {
        apfkit_apiextensions::json_kind::json_causes(object, old, self.check)
    }
    fn printer(&self) -> Option<&Printer> {
        Some(&self.printer)
    }
}

/// `ValidateObjectMeta`'s checks of the name (by `name_check`) and the namespace (required)
/// of an object of a namespaced kind here.
fn metadata_errors(object: &Value, name_check: fn(&str) -> Vec<String>) -> Vec<FieldError> {
    let mut errors = names::object_name_of(object, name_check);
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    if namespace.is_none_or(str::is_empty) {
        errors.push(FieldError::required("metadata.namespace", ""));
    }
    errors
}

/// A request's `MicroTime` fields (paths such as `spec.renewTime`) read as Go reads them:
/// six digits of a second, which k8s-openapi's types do not ask for; the first that is not
/// one is refused in Go's decoder's words.
fn micro_time_errors(object: &Value, fields: &[&str]) -> Result<(), SchemeError> {
    for field in fields {
        let text = object
            .pointer(&format!("/{}", field.replace('.', "/")))
            .and_then(Value::as_str);
        if let Some(problem) = text.and_then(apfkit_apiserver::micro_time_error) {
            return Err(SchemeError::new(ErrorKind::InvalidValue, *field, problem));
        }
    }
    Ok(())
}

/// The zero of a kind whose every field Go leaves out when empty.
fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A kind that prepares nothing.
fn prepare_nothing(_: &mut Value, _: Option<&Value>) {}

/// A kind that warns of nothing.
fn warn_of_nothing(_: &Value, _: Option<&Value>) -> Vec<String> {
    Vec::new()
}

/// The entries of the map at `pointer` (none when it is absent or not a map).
fn entries<'a>(object: &'a Value, pointer: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The number of entries of the map at `pointer`.
fn count(object: &Value, pointer: &str) -> usize {
    entries(object, pointer).count()
}

/// The length in bytes of a value kept as base64 text (`[]byte`); text that is not base64
/// counts as its own length (it was refused on the way in).
fn decoded_len(value: &Value) -> usize {
    use base64::Engine as _;
    let text = value.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |bytes| bytes.len())
}

/// `ValidateConfigMapUpdate`'s and `ValidateSecretUpdate`'s rule for an object that was
/// `immutable`: it stays so, and the maps named keep their content.
fn immutable_errors(object: &Value, old: Option<&Value>, maps: &[&str]) -> Vec<FieldError> {
    let Some(old) = old else {
        return Vec::new();
    };
    let flag = |object: &Value| object.get("immutable").and_then(Value::as_bool) == Some(true);
    if !flag(old) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    let forbidden = |path: &str| {
        FieldError::forbidden(
            path,
            "field is immutable when `immutable` is set".to_owned(),
        )
    };
    if !flag(object) {
        errors.push(forbidden("immutable"));
    }
    // `reflect.DeepEqual` of Go maps: a nil map differs from an empty one.
    let map = |object: &Value, name: &str| object.get(name).filter(|v| !v.is_null()).cloned();
    for name in maps {
        if map(object, name) != map(old, name) {
            errors.push(forbidden(name));
        }
    }
    errors
}
