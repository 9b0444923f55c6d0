//! Who manages which fields of an object, and how an update or an apply changes that, as
//! structured-merge-diff's `merge.Updater` computes it (`merge/update.go`): an update takes
//! what it changed from the other managers; an apply merges the configuration into the
//! object, fails on fields another manager set to other values (unless forced), removes
//! what the applier stopped applying and no one else manages, and records exactly what it
//! applied.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::path::Path;
use crate::schema::Schema;
use crate::set::FieldSet;
use crate::typed::{Comparison, Typed, TypedError};

/// The fields one manager manages, in the API version it wrote them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedSet {
    /// The fields.
    pub set: FieldSet,
    /// The `apiVersion` the paths are in.
    pub api_version: String,
    /// Whether the manager applied (rather than updated) them.
    pub applied: bool,
}

/// Managers by name, each with its fields.
pub type Managers = BTreeMap<String, VersionedSet>;

/// The versions of one kind: their schemas and the conversion between them.
pub trait Versions {
    /// The schema of `api_version`, or `None` when the kind is not served in it (its
    /// managers are then dropped, as kube-apiserver drops managers of removed versions).
    fn schema(&self, api_version: &str) -> Option<&Schema>;

    /// `object` (which names its `apiVersion`) in `api_version`.
    ///
    /// # Errors
    ///
    /// A conversion that fails.
    fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String>;
}

/// One version, with no conversion: what a kind served in one version needs.
pub struct OneVersion {
    /// The version.
    pub api_version: String,
    /// Its schema.
    pub schema: Schema,
}

impl Versions for OneVersion {
    fn schema(&self, api_version: &str) -> Option<&Schema> {
        (api_version == self.api_version).then_some(&self.schema)
    }

    fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String> {
        if api_version == self.api_version {
            Ok(object.clone())
        } else {
            Err(format!("{api_version} is not served"))
        }
    }
}

/// A field another manager set to another value, which an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager.
    pub manager: String,
    /// The field, in the other manager's version.
    pub path: Path,
    /// That version.
    pub api_version: String,
}

/// The conflicts of an apply, printed as structured-merge-diff prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.0.as_slice() {
            return write!(f, "conflict with {:?}: {}", only.manager, only.path);
        }
        let mut by_manager: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for conflict in &self.0 {
            by_manager
                .entry(&conflict.manager)
                .or_default()
                .push(&conflict.path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager:?}:"));
            lines.extend(paths.into_iter().map(|path| format!("- {path}")));
        }
        f.write_str(&lines.join("\n"))
    }
}

/// Why an update or apply could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Other managers own fields the apply changes.
    #[error("{0}")]
    Conflicts(Conflicts),
    /// A value does not fit its schema's merge rules.
    #[error(transparent)]
    Invalid(#[from] TypedError),
    /// The object's version is not served, or a conversion failed.
    #[error("{0}")]
    Conversion(String),
}

/// Computes managed fields for updates and applies of one kind.
pub struct Updater<'v> {
    versions: &'v dyn Versions,
    /// Fields no manager owns, by version (kube-apiserver's reset fields: `status` for the
    /// main resource, the rest for `/status`).
    ignored: BTreeMap<String, FieldSet>,
}

/// An object in one version, with that version's schema.
struct At<'s> {
    value: Value,
    schema: &'s Schema,
}

impl<'s> At<'s> {
    fn typed(&self) -> Typed<'s> {
        Typed::new(self.schema)
    }
}

impl<'v> Updater<'v> {
    /// An updater for the kind whose versions are `versions`.
    pub fn new(versions: &'v dyn Versions) -> Self {
        Updater {
            versions,
            ignored: BTreeMap::new(),
        }
    }

    /// The versions of the kind.
    pub fn versions(&self) -> &'v dyn Versions {
        self.versions
    }

    /// Fields of `api_version` that no manager owns.
    pub fn ignoring(mut self, api_version: &str, fields: FieldSet) -> Self {
        self.ignored.insert(api_version.to_owned(), fields);
        self
    }

    /// `object` in `api_version`; `None` when that version is not served.
    fn at(&self, object: &Value, api_version: &str) -> Result<Option<At<'v>>, ApplyError> {
        let Some(schema) = self.versions.schema(api_version) else {
            return Ok(None);
        };
        let value = self
            .versions
            .convert(object, api_version)
            .map_err(ApplyError::Conversion)?;
        Ok(Some(At { value, schema }))
    }

    fn served(&self, object: &Value, api_version: &str) -> Result<At<'v>, ApplyError> {
        self.at(object, api_version)?
            .ok_or_else(|| ApplyError::Conversion(format!("{api_version} is not served")))
    }

    /// What changed from `old` to `new` for every manager but `manager`: conflicts (fields
    /// others manage that were added or modified), taken from them unless `force` is false,
    /// and fields removed (`update` in `merge/update.go`).
    fn update_managers(
        &self,
        old: &Value,
        new: &Value,
        api_version: &str,
        managers: &mut Managers,
        manager: &str,
        force: bool,
    ) -> Result<Comparison, ApplyError> {
        let here = self.served(old, api_version)?;
        let comparison = here
            .typed()
            .compare(old, new)?
            .excluding(self.ignored.get(api_version));
        let mut by_version: BTreeMap<String, Comparison> = BTreeMap::new();
        by_version.insert(api_version.to_owned(), comparison.clone());
        let mut conflicts: BTreeMap<String, FieldSet> = BTreeMap::new();
        let mut removed: BTreeMap<String, FieldSet> = BTreeMap::new();
        let names: Vec<String> = managers.keys().cloned().collect();
        for name in names {
            if name == manager {
                continue;
            }
            let version = managers[&name].api_version.clone();
            if !by_version.contains_key(&version) {
                let (Some(old_there), Some(new_there)) =
                    (self.at(old, &version)?, self.at(new, &version)?)
                else {
                    managers.remove(&name);
                    continue;
                };
                let there = old_there
                    .typed()
                    .compare(&old_there.value, &new_there.value)?
                    .excluding(self.ignored.get(&version));
                by_version.insert(version.clone(), there);
            }
            let there = &by_version[&version];
            let owned = &managers[&name].set;
            let conflict = owned.intersection(&there.modified.union(&there.added));
            if !conflict.is_empty() {
                conflicts.insert(name.clone(), conflict);
            }
            if !there.removed.is_empty() {
                removed.insert(name.clone(), there.removed.clone());
            }
        }
        if !force && !conflicts.is_empty() {
            let list = conflicts
                .iter()
                .flat_map(|(name, set)| {
                    let api_version = managers[name].api_version.clone();
                    set.paths().into_iter().map(move |path| Conflict {
                        manager: name.clone(),
                        path,
                        api_version: api_version.clone(),
                    })
                })
                .collect();
            return Err(ApplyError::Conflicts(Conflicts(list)));
        }
        for (name, taken) in conflicts.iter().chain(&removed) {
            if let Some(entry) = managers.get_mut(name) {
                entry.set = entry.set.difference(taken);
            }
        }
        managers.retain(|_, entry| !entry.set.is_empty());
        Ok(comparison)
    }

    /// The managers after `manager` wrote `new` over `live` with a create, update or patch
    /// (`Updater.Update`): it manages what it added or changed, and stops managing what it
    /// removed; others lose what it changed.
    ///
    /// # Errors
    ///
    /// A value that does not fit its schema's merge rules, or a failed conversion.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        api_version: &str,
        mut managers: Managers,
        manager: &str,
    ) -> Result<Managers, ApplyError> {
        let comparison =
            self.update_managers(live, new, api_version, &mut managers, manager, true)?;
        let previous = managers
            .remove(manager)
            .map(|entry| entry.set)
            .unwrap_or_default();
        let mut set = previous
            .difference(&comparison.removed)
            .union(&comparison.modified)
            .union(&comparison.added);
        if let Some(ignored) = self.ignored.get(api_version) {
            set = set.recursive_difference(ignored);
        }
        if !set.is_empty() {
            managers.insert(
                manager.to_owned(),
                VersionedSet {
                    set,
                    api_version: api_version.to_owned(),
                    applied: false,
                },
            );
        }
        Ok(managers)
    }

    /// Applies `config` for `manager` to `live` (`Updater.Apply`): the merged object (`None`
    /// when nothing changed) and the managers after it.
    ///
    /// # Errors
    ///
    /// [`ApplyError::Conflicts`] when other managers set fields the configuration changes
    /// and `force` is false; a value that does not fit its schema; a failed conversion.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        api_version: &str,
        mut managers: Managers,
        manager: &str,
        force: bool,
    ) -> Result<(Option<Value>, Managers), ApplyError> {
        let here = self.served(live, api_version)?;
        let typed = here.typed();
        let merged = typed.merge(live, config)?;
        let last = managers.get(manager).cloned();
        let mut set = typed.to_field_set(config)?;
        if let Some(ignored) = self.ignored.get(api_version) {
            set = set.recursive_difference(ignored);
        }
        managers.insert(
            manager.to_owned(),
            VersionedSet {
                set,
                api_version: api_version.to_owned(),
                applied: true,
            },
        );
        let new = self.prune(merged, &managers, last.as_ref(), api_version)?;
        self.update_managers(live, &new, api_version, &mut managers, manager, force)?;
        let changed = !crate::typed::values_equal(live, &new);
        Ok((changed.then_some(new), managers))
    }

    /// Removes what `manager` applied last time and not this time, unless another manager
    /// manages it (`prune`, `addBackOwnedItems`, `addBackDanglingItems`).
    fn prune(
        &self,
        merged: Value,
        managers: &Managers,
        last: Option<&VersionedSet>,
        api_version: &str,
    ) -> Result<Value, ApplyError> {
        let Some(last) = last.filter(|last| !last.set.is_empty()) else {
            return Ok(merged);
        };
        let Some(merged_there) = self.at(&merged, &last.api_version)? else {
            return Ok(merged);
        };
        let typed = merged_there.typed();
        let pruned = typed.remove_items(
            &merged_there.value,
            &typed.ensure_named_fields_are_members(&last.set),
        );
        let pruned =
            self.add_back_owned(&merged_there.value, pruned, &last.api_version, managers)?;
        let pruned = self.add_back_dangling(&merged_there, &pruned, last)?;
        Ok(self.served(&pruned, api_version)?.value)
    }

    fn add_back_owned(
        &self,
        merged: &Value,
        mut pruned: Value,
        pruned_version: &str,
        managers: &Managers,
    ) -> Result<Value, ApplyError> {
        let mut by_version: BTreeMap<&str, FieldSet> = BTreeMap::new();
        for entry in managers.values() {
            let set = by_version.entry(&entry.api_version).or_default();
            *set = set.union(&entry.set);
        }
        // The pruned version first, so that conversion never sees what was pruned.
        let mut order: Vec<(&str, FieldSet)> = Vec::new();
        if let Some(set) = by_version.remove(pruned_version) {
            order.push((pruned_version, set));
        }
        order.extend(by_version);
        let mut merged = merged.clone();
        for (version, managed) in order {
            let (Some(merged_there), Some(pruned_there)) =
                (self.at(&merged, version)?, self.at(&pruned, version)?)
            else {
                continue;
            };
            let typed = merged_there.typed();
            let merged_set = typed.to_field_set(&merged_there.value)?;
            let pruned_set = typed.to_field_set(&pruned_there.value)?;
            let keep = typed
                .ensure_named_fields_are_members(&pruned_set)
                .union(&typed.ensure_named_fields_are_members(&managed));
            let drop = typed
                .ensure_named_fields_are_members(&merged_set)
                .difference(&keep);
            pruned = typed.remove_items(&merged_there.value, &drop);
            merged = merged_there.value;
        }
        Ok(pruned)
    }

    fn add_back_dangling(
        &self,
        merged: &At<'_>,
        pruned: &Value,
        last: &VersionedSet,
    ) -> Result<Value, ApplyError> {
        let Some(pruned_there) = self.at(pruned, &last.api_version)? else {
            return Ok(merged.value.clone());
        };
        let typed = merged.typed();
        let pruned_set =
            typed.ensure_named_fields_are_members(&typed.to_field_set(&pruned_there.value)?);
        let merged_set = typed.ensure_named_fields_are_members(&typed.to_field_set(&merged.value)?);
        let last_set = typed.ensure_named_fields_are_members(&last.set);
        Ok(typed.remove_items(
            &merged.value,
            &merged_set.difference(&pruned_set).intersection(&last_set),
        ))
    }
}
