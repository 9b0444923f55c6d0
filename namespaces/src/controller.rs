//! What keeps Namespaces in a server, as a cluster keeps them: kube-apiserver's system
//! namespaces (`default` from its bootstrap controller, `kube-system`, `kube-public` and
//! `kube-node-lease` from its system-namespaces controller), and kube-controller-manager's
//! namespace controller (`pkg/controller/namespace/deletion`): a deleted namespace's objects
//! deleted, its conditions written, and its `kubernetes` finalizer removed through
//! `/finalize` once nothing is left, which removes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use apfkit_apiextensions::{CustomObject, ServedObject};
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::record_update;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{ListRequest, Place, Propagation, Served, UpdateKind, now};
use apfkit_runtime::Object;
use apfkit_runtime::scheme::UnknownFields;
use serde_json::{Value, json};

use crate::kind::{FINALIZER, TERMINATING, finalizers};

/// The namespaces kube-apiserver makes when it starts.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
/// Who writes the system namespaces (kube-apiserver's own client).
const APISERVER: &str = apfkit_apiserver::fields::KUBE_APISERVER;
/// Who writes a deleted namespace's status and finalizers.
const CONTROLLER: &str = "kube-controller-manager";

/// The condition types the namespace controller writes, in its order, with the reason and
/// message of each when all is well (`okReasons`, `okMessages`).
const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// The Namespaces of a server: its system namespaces made ([`Namespaces::ensure_system`]) and
/// its deleted namespaces emptied and finalized ([`Namespaces::sync`], kept running by
/// [`Namespaces::keep_synced`]).
pub struct Namespaces<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    namespaces: Arc<Served<ServedObject<H>>>,
}

impl<H> Namespaces<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The Namespaces of `server`, which serves them ([`crate::resource`]).
    ///
    /// # Errors
    ///
    /// A server that does not serve `namespaces` in the core group.
    pub fn new(server: Arc<ApiServer<ServedObject<H>>>) -> Result<Self, ApiError> {
        let namespaces = server
            .resource("", "namespaces")
            .ok_or_else(|| ApiError::internal("the server serves no namespaces"))?;
        Ok(Namespaces { server, namespaces })
    }

    /// Creates the system namespaces that do not exist, as kube-apiserver does when it starts.
    ///
    /// # Errors
    ///
    /// A namespace that could not be read or created (storage errors).
    pub async fn ensure_system(&self) -> Result<(), ApiError> {
        let served = &self.namespaces;
        let codec = &*served.storage;
        for name in SYSTEM_NAMESPACES {
            let place = Place {
                namespace: None,
                name,
            };
            match self.server.objects().get_stored(served, place).await {
                Ok(_) => continue,
                Err(error) if error.code == 404 => {}
                Err(error) => return Err(error),
            }
            let given =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            let object = codec
                .decode(&given, UnknownFields::Ignore, &mut Vec::new())
                .map_err(ApiError::internal)?;
            let object = record_update(served, codec, None, None, object, APISERVER)?;
            let created = self
                .server
                .objects()
                .create(served, None, object, &codec.api_version(), false)
                .await;
            match created {
                // Made meanwhile by another server on the same store.
                Ok(_) => {}
                Err(error) if error.code == 409 => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Empties and finalizes every deleted namespace that still has the `kubernetes`
    /// finalizer.
    ///
    /// # Errors
    ///
    /// Namespaces that could not be listed, or a namespace with objects left (kept for their
    /// finalizers, or not deleted): the sync is then tried again.
    pub async fn sync(&self) -> Result<(), ApiError> {
        let listed = self
            .server
            .objects()
            .list(&self.namespaces, &ListRequest::default())
            .await?;
        let mut left = Vec::new();
        for object in listed.items {
            let ServedObject::Custom(namespace) = object else {
                continue;
            };
            let value = namespace.to_value();
            if value.pointer("/metadata/deletionTimestamp").is_none()
                || !finalizers(&value).contains(&FINALIZER)
            {
                continue;
            }
            if !self.finalize(*namespace).await {
                left.push(
                    value["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(ApiError::conflict(
                &apfkit_apiserver::error::Subject {
                    group: String::new(),
                    kind: "namespaces".to_owned(),
                    name: left.join(", "),
                },
                "content remains",
            ))
        }
    }

    /// Keeps deleted namespaces emptied and finalized until the server stops: a sync after
    /// every change of a namespace, and every second while one has objects left.
    pub fn keep_synced(self: Arc<Self>) {
        let resources = vec![self.namespaces.clone()];
        Informer::new(self.server.clone(), resources).run(move || {
            let controller = self.clone();
            async move { controller.sync().await }
        });
    }

    /// `namespacedResourcesDeleter.Delete` for one namespace: its objects deleted, its
    /// conditions written, then its `kubernetes` finalizer removed when none is left.
    /// Answers whether it was finalized.
    async fn finalize(&self, namespace: CustomObject) -> bool {
        let name = namespace.metadata.name.clone().unwrap_or_default();
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers_left: BTreeMap<String, usize> = BTreeMap::new();
        let mut failures = 0;
        for resource in self.server.resources() {
            if !resource.config.namespaced {
                continue;
            }
            match self
                .server
                .objects()
                .delete_all(&resource, Some(&name), Propagation::BACKGROUND)
                .await
            {
                Ok(left) if left.is_empty() => {}
                Ok(left) => {
                    let key = format!("{}.{}", resource.plural, resource.config.group);
                    remaining.insert(key, left.len());
                    for object in &left {
                        for finalizer in object.metadata().finalizers.iter().flatten() {
                            *finalizers_left.entry(finalizer.clone()).or_default() += 1;
                        }
                    }
                }
                Err(error) => {
                    tracing::debug!("namespace {name}: {}: {error}", resource.plural);
                    failures += 1;
                }
            }
        }
        let mut value = namespace.to_value();
        if set_conditions(&mut value, &remaining, &finalizers_left) {
            match self.write(value, UpdateKind::Status).await {
                Some(written) => value = written,
                None => return false,
            }
        }
        if failures > 0 || !remaining.is_empty() {
            return false;
        }
        // `finalizeNamespace`: the finalizers left but this one, sorted (a set's list).
        let mut kept: Vec<String> = finalizers(&value)
            .into_iter()
            .filter(|f| *f != FINALIZER)
            .map(str::to_owned)
            .collect();
        kept.sort();
        kept.dedup();
        value["spec"]["finalizers"] = json!(kept);
        self.write(value, UpdateKind::Finalize).await.is_some()
    }

    /// Writes a namespace's status or finalizers as the controller's client does (its
    /// managed fields recorded), answering it as stored; `None` when the write failed (a
    /// conflict with a newer write is one: the next sync tries again).
    async fn write(&self, namespace: Value, kind: UpdateKind) -> Option<Value> {
        let served = &self.namespaces;
        let codec = &*served.storage;
        let name = namespace["metadata"]["name"].as_str()?.to_owned();
        let object = codec
            .decode(&namespace, UnknownFields::Ignore, &mut Vec::new())
            .ok()?;
        let place = Place {
            namespace: None,
            name: &name,
        };
        let written = apfkit_apiserver::fields::update_as(
            self.server.objects(),
            served,
            codec,
            place,
            object,
            kind,
            CONTROLLER,
        )
        .await;
        match written {
            Ok(written) => match written.object {
                ServedObject::Custom(namespace) => Some(namespace.to_value()),
                ServedObject::Builtin(_) => None,
            },
            Err(error) => {
                tracing::debug!("namespace {name}: not written: {error}");
                None
            }
        }
    }
}

/// `namespaceConditionUpdater.Update` after `ProcessContentTotals`: each condition type set,
/// true with the objects or finalizers left, false with its reason when all is well, its
/// transition time new only when its status changes. Answers whether anything changed.
fn set_conditions(
    namespace: &mut Value,
    remaining: &BTreeMap<String, usize>,
    finalizers_left: &BTreeMap<String, usize>,
) -> bool {
    let remaining_message = (!remaining.is_empty()).then(|| {
        let each: Vec<String> = remaining
            .iter()
            .map(|(resource, count)| format!("{resource} has {count} resource instances"))
            .collect();
        format!("Some resources are remaining: {}", each.join(", "))
    });
    let finalizers_message = (!finalizers_left.is_empty()).then(|| {
        let each: Vec<String> = finalizers_left
            .iter()
            .map(|(finalizer, count)| format!("{finalizer} in {count} resource instances"))
            .collect();
        format!(
            "Some content in the namespace has finalizers remaining: {}",
            each.join(", ")
        )
    });
    if !namespace.get("status").is_some_and(Value::is_object) {
        namespace["status"] = json!({"phase": TERMINATING});
    }
    let status = &mut namespace["status"];
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return false;
    };
    let mut changed = false;
    for (kind, ok_reason, ok_message) in CONDITIONS {
        let (status, reason, message) = match *kind {
            "NamespaceContentRemaining" if remaining_message.is_some() => {
                ("True", "SomeResourcesRemain", remaining_message.clone())
            }
            "NamespaceFinalizersRemaining" if finalizers_message.is_some() => {
                ("True", "SomeFinalizersRemain", finalizers_message.clone())
            }
            _ => ("False", *ok_reason, Some((*ok_message).to_owned())),
        };
        let wanted = json!({
            "type": kind,
            "status": status,
            "lastTransitionTime": now(),
            "reason": reason,
            "message": message,
        });
        match conditions.iter_mut().find(|c| c["type"] == *kind) {
            None => {
                conditions.push(wanted);
                changed = true;
            }
            Some(old) => {
                let same = |field: &str| old[field] == wanted[field];
                if !(same("status") && same("reason") && same("message")) {
                    if !same("status") {
                        old["lastTransitionTime"] = wanted["lastTransitionTime"].clone();
                    }
                    for field in ["status", "reason", "message"] {
                        old[field] = wanted[field].clone();
                    }
                    changed = true;
                }
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_written_as_the_namespace_controller_writes_them() {
        let mut namespace =
            json!({"metadata": {"name": "team"}, "status": {"phase": "Terminating"}});
        let remaining = BTreeMap::from([
            ("services.".to_owned(), 2),
            ("widgets.example.com".to_owned(), 1),
        ]);
        let finalizers = BTreeMap::from([("example.com/keep".to_owned(), 3)]);
        assert!(set_conditions(&mut namespace, &remaining, &finalizers));
        let conditions = namespace["status"]["conditions"].as_array().unwrap();
        let types: Vec<&str> = conditions
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, CONDITIONS.iter().map(|c| c.0).collect::<Vec<_>>());
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[0]["reason"], "ResourcesDiscovered");
        assert_eq!(
            conditions[3]["message"],
            "Some resources are remaining: services. has 2 resource instances, \
             widgets.example.com has 1 resource instances"
        );
        assert_eq!(conditions[3]["reason"], "SomeResourcesRemain");
        assert_eq!(
            conditions[4]["message"],
            "Some content in the namespace has finalizers remaining: example.com/keep in 3 \
             resource instances"
        );
        // Nothing new: nothing written; all gone: the two turn false.
        assert!(!set_conditions(&mut namespace, &remaining, &finalizers));
        assert!(set_conditions(
            &mut namespace,
            &BTreeMap::new(),
            &BTreeMap::new()
        ));
        let conditions = namespace["status"]["conditions"].as_array().unwrap();
        assert!(conditions.iter().all(|c| c["status"] == "False"));
        assert_eq!(conditions[3]["reason"], "ContentRemoved");
    }
}
