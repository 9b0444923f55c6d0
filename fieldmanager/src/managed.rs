//! `metadata.managedFields` as kube-apiserver keeps it, around the [`Updater`]: the chain of
//! field managers of `k8s.io/apimachinery/pkg/util/managedfields/internal`
//! (`fieldmanager.go`), each step named after the file it follows:
//! - the applied object must be of the URL's version and kind (`versioncheck.go`);
//! - `kubectl`'s first server-side apply over a client-side apply may take the fields of its
//!   `last-applied-configuration`, which is then kept up to date (`lastappliedmanager.go`,
//!   `lastappliedupdater.go`);
//! - an object that nobody manages yet gets a `before-first-apply` manager for what it holds
//!   before its first apply, and updates of such objects are not tracked
//!   (`skipnonapplied.go`);
//! - at most ten update managers are kept, the oldest merged into `ancient-changes`
//!   (`capmanagers.go`);
//! - managers are identified by name, operation, version (updates only) and subresource
//!   (`buildmanagerinfo.go`, `managedfields.go`), and timed (`managedfieldsupdater.go`);
//! - the fields of `apiVersion`, `kind` and server-owned metadata are never managed
//!   (`stripmeta.go`);
//! - conflicts are answered with kube-apiserver's message and causes (`conflict.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::path::{PathElement, write_go_json};
use crate::set::FieldSet;
use crate::typed::Typed;
use crate::updater::{ApplyError, Conflicts, Managers, Updater, VersionedSet, Versions};

/// The annotation `kubectl apply` (client-side) keeps.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kube-apiserver's limit on update managers kept (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// kube-apiserver's limit on the total size of an object's annotations
/// (`apimachinery/pkg/api/validation`, `TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// One entry of `metadata.managedFields`, as the API writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    /// The manager's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// `Apply` or `Update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The version the fields are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// When the manager last changed the object (RFC 3339, seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `FieldsV1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_type: Option<String>,
    /// The fields.
    #[serde(default, rename = "fieldsV1", skip_serializing_if = "Option::is_none")]
    pub fields_v1: Option<Value>,
    /// The subresource written through (`status`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

impl ManagedFieldsEntry {
    /// The entry's manager identifier: the JSON of its name, operation, version (updates
    /// only) and subresource, as `BuildManagerIdentifier` writes it.
    pub fn identifier(&self) -> String {
        let mut out = String::from("{");
        let mut field = |name: &str, value: &Option<String>| {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                if out.len() > 1 {
                    out.push(',');
                }
                out.push('"');
                out.push_str(name);
                out.push_str("\":");
                write_go_json(&mut out, &Value::String(value.to_owned()));
            }
        };
        field("manager", &self.manager);
        field("operation", &self.operation);
        if self.operation.as_deref() != Some(APPLY) {
            field("apiVersion", &self.api_version);
        }
        field("subresource", &self.subresource);
        out.push('}');
        out
    }
}

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";

/// Managers with the times of their last changes, by identifier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managed {
    /// The fields of each manager.
    pub fields: Managers,
    /// When each manager last changed the object.
    pub times: BTreeMap<String, String>,
}

impl Managed {
    /// Reads `metadata.managedFields` (`DecodeManagedFields`).
    ///
    /// # Errors
    ///
    /// An entry that is not an object, has another operation than `Apply` or `Update`, no
    /// `apiVersion`, another `fieldsType` than `FieldsV1`, or fields that do not read.
    pub fn decode(entries: Option<&Value>) -> Result<Managed, String> {
        let mut managed = Managed::default();
        let entries = match entries {
            None | Some(Value::Null) => return Ok(managed),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err("managedFields is not a list".to_owned()),
        };
        for (i, entry) in entries.iter().enumerate() {
            let entry: ManagedFieldsEntry = serde_json::from_value(entry.clone())
                .map_err(|e| format!("managed fields entry {i}: {e}"))?;
            match entry.operation.as_deref() {
                Some(APPLY | UPDATE) => {}
                _ => return Err("operation must be `Apply` or `Update`".to_owned()),
            }
            if entry.api_version.as_deref().unwrap_or_default().is_empty() {
                return Err("apiVersion must not be empty".to_owned());
            }
            match entry.fields_type.as_deref() {
                Some("FieldsV1") => {}
                None | Some("") => {
                    return Err(format!("missing fieldsType in managed fields entry {i}"));
                }
                Some(other) => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ));
                }
            }
            let set = match &entry.fields_v1 {
                None => FieldSet::new(),
                Some(fields) => FieldSet::from_fields_v1(fields)
                    .map_err(|e| format!("error decoding set: {e}"))?,
            };
            let identifier = entry.identifier();
            managed.fields.insert(
                identifier.clone(),
                VersionedSet {
                    set,
                    api_version: entry.api_version.clone().unwrap_or_default(),
                    applied: entry.operation.as_deref() == Some(APPLY),
                },
            );
            if let Some(time) = entry.time {
                managed.times.insert(identifier, time);
            } else {
                managed.times.remove(&identifier);
            }
        }
        Ok(managed)
    }

    /// The entries of `metadata.managedFields`, sorted as kube-apiserver sorts them
    /// (operation, time, manager, version, subresource); `None` when there are none.
    pub fn encode(&self) -> Option<Value> {
        if self.fields.is_empty() {
            return None;
        }
        let mut entries: Vec<ManagedFieldsEntry> = self
            .fields
            .iter()
            .map(|(identifier, set)| {
                let mut entry: ManagedFieldsEntry =
                    serde_json::from_str(identifier).unwrap_or_default();
                entry.api_version = Some(set.api_version.clone());
                if set.applied {
                    entry.operation = Some(APPLY.to_owned());
                }
                entry.fields_type = Some("FieldsV1".to_owned());
                entry.fields_v1 = serde_json::from_str(&set.set.to_fields_v1()).ok();
                entry.time = self.times.get(identifier).cloned();
                entry
            })
            .collect();
        entries.sort_by(|p, q| {
            p.operation
                .cmp(&q.operation)
                .then_with(|| p.time.cmp(&q.time))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        serde_json::to_value(entries).ok()
    }
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldManagerError {
    /// 400: the applied object is not of the URL's kind and version, or sets managedFields.
    #[error("{0}")]
    BadRequest(String),
    /// 409: other managers set fields the apply changes.
    #[error("{message}")]
    Conflict {
        /// kube-apiserver's message (`Apply failed with 1 conflict: ...`).
        message: String,
        /// Each conflict: its message (`conflict with "manager" using version`) and field.
        causes: Vec<(String, String)>,
    },
    /// 500: the object or its managed fields could not be read (a plain error in
    /// kube-apiserver's field manager, which its handler answers without a reason).
    #[error("{0}")]
    Internal(String),
}

/// The field manager of one kind in one request version (and subresource).
pub struct FieldManager<'v> {
    updater: Updater<'v>,
    api_version: String,
    kind: String,
    subresource: Option<String>,
}

/// The paths no manager ever owns (`stripmeta.go`).
fn strip_set() -> FieldSet {
    let mut set = FieldSet::new();
    let field = |name: &str| PathElement::Field(name.to_owned());
    set.insert(&[field("apiVersion")]);
    set.insert(&[field("kind")]);
    set.insert(&[field("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[field("metadata"), field(name)]);
    }
    set
}

fn metadata_field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get("metadata")?.get(name)
}

fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    object
}

fn set_managed_fields(object: &mut Value, managed: &Managed) {
    let Some(fields) = object.as_object_mut() else {
        return;
    };
    let meta = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        match managed.encode() {
            Some(entries) => {
                meta.insert("managedFields".to_owned(), entries);
            }
            None => {
                meta.remove("managedFields");
            }
        }
    }
}

/// Whether a request's managedFields ask for a reset: an empty list, or one empty entry.
fn is_reset(entries: Option<&Value>) -> bool {
    match entries {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [only] => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

impl<'v> FieldManager<'v> {
    /// The field manager of `kind` for requests in `api_version` (through `subresource`),
    /// with the fields each version resets (`status` for the main resource of a kind with
    /// a status subresource; `spec` and `metadata` for `/status`).
    pub fn new(
        versions: &'v dyn Versions,
        api_version: &str,
        kind: &str,
        subresource: Option<&str>,
        reset: BTreeMap<String, FieldSet>,
    ) -> Self {
        let mut updater = Updater::new(versions);
        for (version, fields) in reset {
            updater = updater.ignoring(&version, fields);
        }
        FieldManager {
            updater,
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            subresource: subresource.map(str::to_owned),
        }
    }

    /// `object` naming the request's version and kind when it names none (the empty live
    /// object of a create), as kube-apiserver's empty object of the kind does.
    fn of_this_version(&self, mut object: Value) -> Value {
        if let Some(fields) = object.as_object_mut() {
            for (name, value) in [("apiVersion", &self.api_version), ("kind", &self.kind)] {
                fields
                    .entry(name)
                    .or_insert_with(|| Value::String(value.clone()));
            }
        }
        object
    }

    fn identifier(&self, manager: &str, operation: &str) -> String {
        ManagedFieldsEntry {
            manager: Some(
                if manager.is_empty() {
                    "unknown"
                } else {
                    manager
                }
                .to_owned(),
            ),
            operation: Some(operation.to_owned()),
            api_version: Some(self.api_version.clone()),
            subresource: self.subresource.clone(),
            ..ManagedFieldsEntry::default()
        }
        .identifier()
    }

    /// `new` as written by `manager` over `live` (an object of the URL's version; for a
    /// create, `{}`), with its `managedFields` computed (`FieldManager.UpdateNoErrors`): what
    /// `manager` changed is now its own. When they cannot be computed, `live`'s are kept.
    pub fn update(&self, live: &Value, mut new: Value, manager: &str, now: &str) -> Value {
        let subresource = self.subresource.is_some();
        let managed = self.live_or_new(live, &new, subresource);
        let live_fields = metadata_field(live, "managedFields").cloned();
        let live = self.of_this_version(without_managed_fields(live));
        new = without_managed_fields(&new);
        // Objects that nobody manages are not tracked by updates once they exist.
        let exists = metadata_field(&live, "uid")
            .and_then(Value::as_str)
            .is_some_and(|uid| !uid.is_empty());
        if managed.fields.is_empty() && exists {
            return new;
        }
        match self.update_managed(&live, &new, managed, manager, now) {
            Ok(managed) => set_managed_fields(&mut new, &managed),
            Err(_) => {
                if let (Some(meta), Some(fields)) = (
                    new.get_mut("metadata").and_then(Value::as_object_mut),
                    live_fields,
                ) {
                    meta.insert("managedFields".to_owned(), fields);
                }
            }
        }
        new
    }

    fn live_or_new(&self, live: &Value, new: &Value, ignore_new: bool) -> Managed {
        let from_live =
            || Managed::decode(metadata_field(live, "managedFields")).unwrap_or_default();
        if ignore_new {
            return from_live();
        }
        let requested = metadata_field(new, "managedFields");
        if is_reset(requested) {
            return Managed::default();
        }
        match Managed::decode(requested) {
            Ok(managed) if !managed.fields.is_empty() => managed,
            _ => from_live(),
        }
    }

    /// The update steps below `skipnonapplied.go`: cap, identify, time, strip, merge.
    fn update_managed(
        &self,
        live: &Value,
        new: &Value,
        mut managed: Managed,
        manager: &str,
        now: &str,
    ) -> Result<Managed, ApplyError> {
        let identifier = self.identifier(manager, UPDATE);
        const CURRENT: &str = "current-operation";
        managed.fields = self.updater.update(
            live,
            new,
            &self.api_version,
            std::mem::take(&mut managed.fields),
            CURRENT,
        )?;
        strip(&mut managed.fields, CURRENT);
        if let Some(current) = managed.fields.remove(CURRENT) {
            let set = match managed.fields.get(&identifier) {
                Some(previous) => current.set.union(&previous.set),
                None => current.set,
            };
            managed.fields.insert(
                identifier.clone(),
                VersionedSet {
                    set,
                    api_version: current.api_version,
                    applied: current.applied,
                },
            );
            managed.times.insert(identifier, now.to_owned());
        }
        cap_update_managers(&mut managed);
        Ok(managed)
    }

    /// `applied` (a whole object of the URL's version and kind, as `kubectl apply
    /// --server-side` sends it) applied by `manager` to `live` (`{}` when the object does not
    /// exist yet): the object to store, with its `managedFields`.
    ///
    /// # Errors
    ///
    /// [`FieldManagerError::Conflict`] unless `force`; a bad request for an object of another
    /// kind or version, or one that sets `managedFields`; an internal error for an object
    /// whose fields do not fit its schema.
    pub fn apply(
        &self,
        live: &Value,
        applied: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, FieldManagerError> {
        let api_version = applied
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = applied
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if api_version != self.api_version || kind != self.kind {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(FieldManagerError::BadRequest(format!(
                "invalid object type: {group}/{version}, Kind={kind}"
            )));
        }
        if metadata_field(applied, "managedFields").is_some_and(|f| !f.is_null()) {
            return Err(FieldManagerError::BadRequest(
                "metadata.managedFields must be nil".to_owned(),
            ));
        }
        let managed = Managed::decode(metadata_field(live, "managedFields")).map_err(|e| {
            FieldManagerError::Internal(format!("failed to decode managed fields: {e}"))
        })?;
        let live = self.of_this_version(without_managed_fields(live));
        let mut result = self.apply_managed(&live, applied, managed.clone(), manager, force, now);
        if manager == "kubectl"
            && let Err(ApplyError::Conflicts(conflicts)) = &result
            && let Some(allowed) = self.allowed_from_last_applied(&live)
        {
            let remaining: Vec<_> = conflicts
                .0
                .iter()
                .filter(|c| !allowed.has(&c.path.0))
                .cloned()
                .collect();
            result = if remaining.is_empty() {
                self.apply_managed(&live, applied, managed, manager, true, now)
            } else {
                Err(ApplyError::Conflicts(Conflicts(remaining)))
            };
        }
        let (mut object, managed) = result.map_err(|error| match error {
            ApplyError::Conflicts(conflicts) => conflict_error(&conflicts),
            other => {
                let meta = |name: &str| {
                    metadata_field(applied, name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                FieldManagerError::Internal(format!(
                    "failed to create typed patch object ({}/{}; {}, Kind={}): {other}",
                    meta("namespace"),
                    meta("name"),
                    self.api_version,
                    self.kind
                ))
            }
        })?;
        if manager == "kubectl" {
            keep_last_applied(&mut object, applied);
        }
        set_managed_fields(&mut object, &managed);
        Ok(object)
    }

    /// The apply steps below `lastappliedmanager.go`.
    fn apply_managed(
        &self,
        live: &Value,
        applied: &Value,
        mut managed: Managed,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<(Value, Managed), ApplyError> {
        let mut live = live.clone();
        if managed.fields.is_empty() {
            // What the object holds before its first apply belongs to `before-first-apply`.
            let empty = serde_json::json!({"apiVersion": self.api_version, "kind": self.kind});
            managed = self.update_managed(&empty, &live, managed, "before-first-apply", now)?;
            live = without_managed_fields(&live);
        }
        let identifier = self.identifier(manager, APPLY);
        let (new, fields) = self.updater.apply(
            &live,
            applied,
            &self.api_version,
            std::mem::take(&mut managed.fields),
            &identifier,
            force,
        )?;
        managed.fields = fields;
        strip(&mut managed.fields, &identifier);
        let object = match new {
            Some(new) => {
                managed.times.insert(identifier, now.to_owned());
                new
            }
            None => live,
        };
        managed
            .times
            .retain(|id, _| managed.fields.contains_key(id));
        Ok((object, managed))
    }

    /// The fields of the live object's `last-applied-configuration` that still hold their
    /// values: conflicts on them do not stop `kubectl`'s first server-side apply.
    fn allowed_from_last_applied(&self, live: &Value) -> Option<FieldSet> {
        let text = metadata_field(live, "annotations")?
            .get(LAST_APPLIED_ANNOTATION)?
            .as_str()
            .filter(|t| !t.is_empty())?;
        let last: Value = serde_json::from_str(text).ok()?;
        if last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version.as_str()) {
            return None;
        }
        let schema = self.updater_schema()?;
        let typed = Typed::new(schema);
        let set = typed.to_field_set(&last).ok()?;
        let comparison = typed.compare(&last, live).ok()?;
        Some(
            set.difference(&comparison.modified)
                .difference(&comparison.added)
                .difference(&comparison.removed),
        )
    }

    fn updater_schema(&self) -> Option<&crate::schema::Schema> {
        self.updater.versions().schema(&self.api_version)
    }
}

/// Takes the stripped fields out of `manager`'s set, and the manager with nothing left.
fn strip(managers: &mut Managers, manager: &str) {
    if let Some(entry) = managers.get_mut(manager) {
        entry.set = entry.set.difference(&strip_set());
        if entry.set.is_empty() {
            managers.remove(manager);
        }
    }
}

/// Merges the oldest update managers into `ancient-changes` (one per version) while there
/// are more than [`MAX_UPDATE_MANAGERS`].
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, set)| !set.applied)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| {
        let time = |id: &String| managed.times.get(id).cloned().unwrap_or_default();
        time(a).cmp(&time(b)).then_with(|| a.cmp(b))
    });
    let mut first_by_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(set) = managed.fields.get(&manager).cloned() else {
            continue;
        };
        let time = managed.times.get(&manager).cloned();
        let bucket = ManagedFieldsEntry {
            manager: Some("ancient-changes".to_owned()),
            operation: Some(UPDATE.to_owned()),
            api_version: Some(set.api_version.clone()),
            ..ManagedFieldsEntry::default()
        }
        .identifier();
        match first_by_version.get(&set.api_version) {
            Some(first) => {
                if !managed.fields.contains_key(&bucket)
                    && let Some(first_set) = managed.fields.remove(first)
                {
                    managed.times.remove(first);
                    managed.fields.insert(bucket.clone(), first_set);
                }
                let merged = managed
                    .fields
                    .get(&bucket)
                    .map_or_else(|| set.set.clone(), |b| set.set.union(&b.set));
                managed.fields.insert(
                    bucket.clone(),
                    VersionedSet {
                        set: merged,
                        api_version: set.api_version.clone(),
                        applied: set.applied,
                    },
                );
                managed.fields.remove(&manager);
                managed.times.remove(&manager);
                length -= 1;
                match time {
                    Some(time) => managed.times.insert(bucket, time),
                    None => managed.times.remove(&bucket),
                };
            }
            None => {
                first_by_version.insert(set.api_version.clone(), manager);
            }
        }
    }
}

/// How a manager is named in a conflict (`printManager`).
fn print_manager(identifier: &str) -> String {
    let Ok(entry) = serde_json::from_str::<ManagedFieldsEntry>(identifier) else {
        return format!("{identifier:?}");
    };
    let mut text = format!("{:?}", entry.manager.unwrap_or_default());
    if let Some(subresource) = entry.subresource.filter(|s| !s.is_empty()) {
        text = format!("{text} with subresource {subresource:?}");
    }
    if entry.operation.as_deref() == Some(UPDATE) {
        text = format!("{text} using {}", entry.api_version.unwrap_or_default());
    }
    text
}

/// kube-apiserver's 409 for conflicts (`NewConflictError`).
fn conflict_error(conflicts: &Conflicts) -> FieldManagerError {
    let causes = conflicts
        .0
        .iter()
        .map(|c| {
            (
                format!("conflict with {}", print_manager(&c.manager)),
                c.path.to_string(),
            )
        })
        .collect();
    let message = if let [only] = conflicts.0.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&only.manager),
            only.path
        )
    } else {
        let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for conflict in &conflicts.0 {
            by_manager
                .entry(&conflict.manager)
                .or_default()
                .push(conflict.path.to_string());
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {}:", print_manager(manager)));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.0.len(),
            lines.join("\n")
        )
    };
    FieldManagerError::Conflict { message, causes }
}

/// Keeps `kubectl`'s `last-applied-configuration` (when the object has one) equal to what it
/// applied, as `lastappliedupdater.go` does: the applied object without the annotation,
/// written as Go writes an unstructured object (keys sorted, a final newline); dropped when
/// the annotations would outgrow kube-apiserver's limit.
fn keep_last_applied(object: &mut Value, applied: &Value) {
    let has = metadata_field(object, "annotations")
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if !has {
        return;
    }
    let mut last = applied.clone();
    if let Some(annotations) = last
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = String::new();
    write_go_json(&mut text, &last);
    text.push('\n');
    if let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.insert(LAST_APPLIED_ANNOTATION.to_owned(), Value::String(text));
        let size: usize = annotations
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum();
        if size > TOTAL_ANNOTATION_SIZE_LIMIT {
            annotations.remove(LAST_APPLIED_ANNOTATION);
        }
    }
}
