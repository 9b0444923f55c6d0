//! Local APIServices for the groups the server serves itself, created and kept as
//! kube-apiserver's autoregistration keeps them (kube-aggregator
//! `pkg/controllers/autoregister/autoregister_controller.go`, kube-apiserver's
//! `apiServicesToRegister` and `crdRegistrationController`): a built-in group-version of
//! kube's priority table gets `VERSION.GROUP` with its priorities, labelled
//! `kube-aggregator.kubernetes.io/automanaged: onstart` (synced once, then left to users); any
//! other group-version served here (a CRD's) gets priorities 1000 and 100, labelled `true`
//! (kept as desired, removed when no longer served).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::record_update;
use apfkit_apiserver::store::{Place, Preconditions, Propagation, UpdateKind};
use apfkit_runtime::Object;
use apfkit_runtime::identity::GroupVersion;
use apfkit_scheme::discovery::BUILTIN_PRIORITIES;
use serde_json::{Value, json};

use crate::routing::{ApiServiceFields, Routing, Sources};

/// The label that says how an APIService is kept (`AutoRegisterManagedLabel`).
pub(crate) const MANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";
/// Synced once when the controller starts (`manageOnStart`).
const ON_START: &str = "onstart";
/// Synced always (`manageContinuously`).
const CONTINUOUSLY: &str = "true";
/// How often everything is checked again without a change seen.
const RESYNC: Duration = Duration::from_secs(30);

/// The group priority kube-apiserver gives `group`, if its table has it.
pub(crate) fn builtin_priority(group: &str) -> Option<i64> {
    BUILTIN_PRIORITIES
        .iter()
        .filter(|(g, ..)| *g == group)
        .map(|(_, _, priority, _)| i64::from(*priority))
        .max()
}

/// The aggregator's own group: served by it, never registered (kube-apiserver registers its
/// delegates' group-versions only; discovery lists this group first).
const OWN_GROUP: &str = "apiregistration.k8s.io";

/// An APIService the server wants.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Desired {
    group_version: GroupVersion,
    group_priority: i64,
    version_priority: i64,
    managed: &'static str,
}

impl Desired {
    fn object(&self, name: &str) -> Value {
        json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": name, "labels": {MANAGED: self.managed}},
            "spec": self.spec(),
        })
    }

    fn spec(&self) -> Value {
        json!({
            "group": self.group_version.group,
            "version": self.group_version.version,
            "groupPriorityMinimum": self.group_priority,
            "versionPriority": self.version_priority,
        })
    }

    /// Whether `current`'s spec is this one (`reflect.DeepEqual(curr.Spec, desired.Spec)`).
    fn matches(&self, current: &ApiServiceFields) -> bool {
        current.group_version == self.group_version
            && current.group_priority == self.group_priority
            && current.version_priority == self.version_priority
            && current.service.is_none()
            && current.ca_bundle.is_empty()
            && !current.insecure
    }
}

/// The APIServices the group-versions served here want, by name (`VERSION.GROUP`).
pub(crate) fn desired(served: &[(String, Vec<String>)]) -> BTreeMap<String, Desired> {
    let mut desired = BTreeMap::new();
    for (group, versions) in served {
        if group == OWN_GROUP {
            continue;
        }
        for version in versions {
            // kube-apiserver's `DefaultGenericAPIServicePriorities`.
            let listed = BUILTIN_PRIORITIES
                .iter()
                .find(|(g, v, _, _)| g == group && v == version);
            let (group_priority, version_priority, managed) = match listed {
                Some((_, _, group_priority, version_priority)) => (
                    i64::from(*group_priority),
                    i64::from(*version_priority),
                    ON_START,
                ),
                // `crdRegistrationController`: CRDs rank low, versions sorted as kube's.
                None => (1000, 100, CONTINUOUSLY),
            };
            desired.insert(
                format!("{version}.{group}"),
                Desired {
                    group_version: GroupVersion::new(group.clone(), version.clone()),
                    group_priority,
                    version_priority,
                    managed,
                },
            );
        }
    }
    desired
}

/// What `checkAPIService` does about one name.
#[derive(Debug, PartialEq)]
pub(crate) enum Action {
    Nothing,
    Create(Value),
    /// The stored object with the desired spec.
    Update(Value),
    /// Delete the object of this uid.
    Delete(String),
}

/// What the controller remembers between checks.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    /// APIServices that existed when it started.
    pub(crate) at_start: HashSet<String>,
    /// Names checked once without error.
    pub(crate) synced: HashSet<String>,
}

impl Memory {
    /// The memory of a controller starting now: the APIServices stored, none synced.
    async fn at_start<H>(sources: &Sources<H>) -> Result<Self, ApiError>
    where
        H: Object + Clone + Send + Sync + 'static,
    {
        let at_start = sources
            .list(&sources.api_services)
            .await?
            .iter()
            .map(|object| ApiServiceFields::of(object).name)
            .collect();
        Ok(Memory {
            at_start,
            synced: HashSet::new(),
        })
    }
}

fn label(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(MANAGED))
        .and_then(Value::as_str)
}

/// `checkAPIService`: the action on `name`, its stored object `current` and what is
/// `desired` of it, in upstream's order of cases.
pub(crate) fn check(
    name: &str,
    current: Option<&Value>,
    desired: Option<&Desired>,
    memory: &Memory,
) -> Action {
    let synced = memory.synced.contains(name);
    let Some(current) = current else {
        return match desired {
            // 2A: none, none wanted.
            None => Action::Nothing,
            // 2B: an on-start one synced once stays deleted.
            Some(desired) if desired.managed == ON_START && synced => Action::Nothing,
            // 2B, 2C.
            Some(desired) => Action::Create(desired.object(name)),
        };
    };
    if desired.is_some_and(|d| d.managed == ON_START) && synced {
        return Action::Nothing;
    }
    let managed = label(current);
    match managed {
        // 3: not managed.
        Some(ON_START | CONTINUOUSLY) => {}
        _ => return Action::Nothing,
    }
    // 4: an on-start one added after the start; 5: one synced already.
    if managed == Some(ON_START) && (!memory.at_start.contains(name) || synced) {
        return Action::Nothing;
    }
    let Some(desired) = desired else {
        // 5A, 6A: managed, not wanted.
        let uid = current
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Action::Delete(uid.to_owned());
    };
    if desired.matches(&ApiServiceFields::of(current)) {
        return Action::Nothing;
    }
    let mut updated = current.clone();
    updated["spec"] = desired.spec();
    Action::Update(updated)
}

/// The autoregister controller's first pass, done now: the APIServices of every
/// group-version the server serves are made (or put right), as if it had just started.
pub(crate) async fn register_once<H>(sources: &Sources<H>) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut memory = Memory::at_start(sources).await?;
    sync_all(sources, &mut memory).await
}

/// Every name checked once: those wanted and the managed ones stored.
async fn sync_all<H>(sources: &Sources<H>, memory: &mut Memory) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let wanted = desired(&sources.server.group_versions());
    let stored: BTreeMap<String, Value> = sources
        .list(&sources.api_services)
        .await?
        .into_iter()
        .map(|object| (ApiServiceFields::of(&object).name, object))
        .collect();
    let mut names: Vec<&String> = wanted.keys().collect();
    names.extend(
        stored
            .iter()
            .filter(|(name, object)| label(object).is_some() && !wanted.contains_key(*name))
            .map(|(name, _)| name),
    );
    for name in names {
        let action = check(name, stored.get(name), wanted.get(name), memory);
        if apply(sources, name, action).await.is_ok() {
            memory.synced.insert(name.clone());
        }
    }
    Ok(())
}

/// Writes an action; a conflict or an object gone is no error (the next check sees why).
async fn apply<H>(sources: &Sources<H>, name: &str, action: Action) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let served = &sources.api_services;
    let objects = sources.server.objects();
    let place = Place {
        namespace: None,
        name,
    };
    const API_VERSION: &str = "apiregistration.k8s.io/v1";
    let codec = served.version("v1").unwrap_or(&*served.storage);
    // Written as kube-aggregator's client writes them, recorded in the managed fields.
    let record = |live: Option<&ServedObject<H>>, new: ServedObject<H>| {
        record_update(served, codec, None, live, new, crate::LOOPBACK_MANAGER)
    };
    let written = match action {
        Action::Nothing => return Ok(()),
        Action::Create(object) => objects
            .create(
                served,
                None,
                record(None, sources.api_service(&object)?)?,
                API_VERSION,
                false,
            )
            .await
            .map(|_| ()),
        Action::Update(object) => objects
            .update_with(
                served,
                place,
                sources.api_service(&object)?,
                API_VERSION,
                UpdateKind::Main,
                false,
                |live, new| record(Some(live), new),
            )
            .await
            .map(|_| ()),
        Action::Delete(uid) => {
            let preconditions = Preconditions {
                uid: Some(uid),
                ..Preconditions::default()
            };
            objects
                .delete(served, place, &preconditions, Propagation::default(), false)
                .await
                .map(|_| ())
        }
    };
    match written {
        Err(error) if matches!(error.code, 404 | 409) => Ok(()),
        written => written,
    }
}

/// Keeps the local APIServices registered until the server stops: after every change of
/// the resources served or of the APIServices, and every 30 s.
pub(crate) fn keep_registered<H>(sources: Arc<Sources<H>>, routing: Arc<Routing>)
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut resources = sources.server.resources_changed();
    let server = sources.server.clone();
    server.spawn_until_stopped(async move {
        let mut memory = loop {
            match Memory::at_start(&sources).await {
                Ok(memory) => break memory,
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        };
        loop {
            let _ = sync_all(&sources, &mut memory).await;
            tokio::select! {
                _ = resources.changed() => {}
                () = routing.registration_changed() => {}
                () = tokio::time::sleep(RESYNC) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests;
