//! What kube-apiserver's apiextensions controllers do for the CRDs a server stores: each
//! valid CRD's resource served in every served version, its status written (accepted names,
//! `NamesAccepted` and `Established`, stored versions), a deleted CRD's custom resources
//! deleted as its `customresourcecleanup` finalizer says (creates refused meanwhile) before
//! the finalizer is removed and the CRD goes, and the resources of CRDs gone withdrawn.
//! Kept in step by a watch on the CRDs.

use std::collections::BTreeMap;
use std::sync::Arc;

use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::KUBE_APISERVER;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{
    CustomOpenApi, ListRequest, Place, Propagation, ResourceConfig, Revision, SchemaFn, Served,
    SharedVersion, Strategy, UpdateKind,
};
use apfkit_runtime::Object;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::kind::ScaleSubresource;
use apfkit_runtime::scheme::UnknownFields;
use apfkit_runtime::version::compare_kube_aware_version_strings;
use serde_json::{Value, json};

use crate::custom::{CustomVersion, Definition};
use crate::definitions;
use crate::object::{CustomObject, ServedObject};
use crate::openapi::PublishedVersion;

/// What a served resource was made from: the CRD's spec, and whether it was terminating.
type Made = (Value, bool);

/// A served resource of a server of [`ServedObject`]s over the hub `H`.
pub type Resource<H> = Arc<Served<ServedObject<H>>>;

/// The custom resources of a server: the server's own resources, the CRD resource, and a
/// resource for each established CRD.
pub struct CustomResources<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    builtins: Vec<Resource<H>>,
    definitions: Resource<H>,
    /// The CRDs served now, by name, with the spec each resource was made from and whether
    /// the CRD was terminating (to make it again only when either changes, and to delete its
    /// objects when the CRD goes).
    served: tokio::sync::Mutex<BTreeMap<String, (Made, Resource<H>)>>,
    /// The conversion webhooks answered in this process, by CRD name.
    in_process: BTreeMap<String, crate::webhook::ReviewHandler>,
}

impl<H> CustomResources<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The custom resources of `server`, whose own resources are `builtins`; the server
    /// serves `builtins` and the CRD resource from now on.
    pub fn new(
        server: Arc<ApiServer<ServedObject<H>>>,
        builtins: Vec<Resource<H>>,
    ) -> Result<Self, ApiError> {
        let definitions = Arc::new(definitions::resource().map_err(ApiError::internal)?);
        let mut resources = builtins.clone();
        resources.push(definitions.clone());
        server.set_resources(resources);
        Ok(CustomResources {
            server,
            builtins,
            definitions,
            served: tokio::sync::Mutex::new(BTreeMap::new()),
            in_process: BTreeMap::new(),
        })
    }

    /// These custom resources with the conversion webhook of the CRD named `crd` answered
    /// by `handler` in this process (a test's Rust conversions), whatever URL or Service the
    /// CRD names; only for a CRD whose `spec.conversion.strategy` is `Webhook`.
    #[must_use]
    pub fn with_in_process_conversion(
        mut self,
        crd: impl Into<String>,
        handler: crate::webhook::ReviewHandler,
    ) -> Self {
        self.in_process.insert(crd.into(), handler);
        self
    }

    /// Creates, or updates when one of its name is stored, the CRD of a manifest (what
    /// `kubectl apply` would leave, without managed fields), as kube-apiserver checks it.
    ///
    /// # Errors
    ///
    /// A manifest that is not a valid v1 CRD (422 with kube-apiserver's causes); storage
    /// errors.
    pub async fn apply(&self, manifest: &Value) -> Result<(), ApiError> {
        let version = self
            .definitions
            .version(definitions::VERSION)
            .ok_or_else(|| ApiError::internal("no v1 CustomResourceDefinitions"))?;
        let mut object = version
            .decode(manifest, UnknownFields::Ignore, &mut Vec::new())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let api_version = definitions::GROUP_VERSION.api_version();
        let name = object.name().to_owned();
        let place = Place {
            namespace: None,
            name: &name,
        };
        let objects = self.server.objects();
        match objects.get(&self.definitions, place).await {
            Ok(stored) => {
                object.metadata_mut().resource_version = stored.metadata().resource_version.clone();
                objects
                    .update(
                        &self.definitions,
                        place,
                        object,
                        &api_version,
                        UpdateKind::Main,
                        false,
                    )
                    .await?;
            }
            Err(error) if error.code == 404 => {
                objects
                    .create(&self.definitions, None, object, &api_version, false)
                    .await?;
            }
            Err(error) => return Err(error),
        }
        Ok(())
    }

    /// Reads every stored CRD and serves the valid ones, writing their status; withdraws the
    /// resources of CRDs gone and deletes their objects. Answers the revision read at.
    ///
    /// # Errors
    ///
    /// Storage errors (the resources served stay as they were).
    pub async fn sync(&self) -> Result<Revision, ApiError> {
        let objects = self.server.objects();
        let listed = objects
            .list(&self.definitions, &ListRequest::default())
            .await?;
        let mut served = self.served.lock().await;
        let mut now: BTreeMap<String, (Made, Resource<H>)> = BTreeMap::new();
        let mut kinds: Vec<(String, String)> = Vec::new();
        let mut terminating: Vec<(CustomObject, Option<Resource<H>>)> = Vec::new();
        for stored in listed.items {
            let ServedObject::Custom(crd) = stored else {
                continue;
            };
            let name = crd.metadata.name.clone().unwrap_or_default();
            let made = (
                crd.fields.get("spec").cloned().unwrap_or_default(),
                is_terminating(&crd),
            );
            let resource = match served.get(&name) {
                // Unchanged since it was made: served as it is.
                Some((made_from, resource)) if *made_from == made => Ok(resource.clone()),
                _ => self.resource_of(&crd, made.1),
            };
            let serving = match resource {
                Err(why) => {
                    tracing::warn!("CustomResourceDefinition {name}: not served: {why}");
                    None
                }
                Ok(resource) => {
                    let kind = (resource.config.group.clone(), resource.config.kind.clone());
                    let conflict = self.builtins.iter().any(|b| {
                        b.config.group == resource.config.group
                            && (b.plural == resource.plural
                                || b.config.kind == resource.config.kind)
                    }) || kinds.contains(&kind);
                    self.write_status(&crd, !conflict).await;
                    (!conflict).then(|| {
                        kinds.push(kind);
                        resource
                    })
                }
            };
            if let Some(resource) = &serving {
                now.insert(name, (made, resource.clone()));
            }
            if has_cleanup_finalizer(&crd) {
                terminating.push((*crd, serving));
            }
        }
        let gone: Vec<Resource<H>> = served
            .iter()
            .filter(|(name, _)| !now.contains_key(*name))
            .map(|(_, (_, resource))| resource.clone())
            .collect();
        let mut resources = self.builtins.clone();
        resources.push(self.definitions.clone());
        resources.extend(now.values().map(|(_, resource)| resource.clone()));
        self.server.set_resources(resources);
        *served = now;
        drop(served);
        for resource in gone {
            self.delete_all(&resource).await;
        }
        let mut pending = false;
        for (crd, resource) in terminating {
            pending |= !self.finalize(crd, resource.as_ref()).await;
        }
        if pending {
            // Tried again (the informer's retry) until their custom resources are gone.
            return Err(ApiError::unknown("custom resources still being deleted"));
        }
        Ok(listed.revision)
    }

    /// apiextensions-apiserver's `CRDFinalizer` for a deleted CRD: the `Terminating`
    /// condition says the deletion is in progress, every custom resource is deleted (those
    /// with finalizers are marked and stay), and once none is left the condition says so
    /// and the cleanup finalizer goes, with it the CRD (a CRD never established goes at
    /// once). Answers whether it is done.
    async fn finalize(&self, crd: CustomObject, resource: Option<&Resource<H>>) -> bool {
        let mut crd = crd;
        let Some(resource) = resource else {
            return self
                .finish(crd, ("NeverEstablished", "resource was never established"))
                .await;
        };
        let status = crd.fields.entry("status").or_insert_with(|| json!({}));
        definitions::set_condition(
            status,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        let Some(crd) = self.update_definition(crd, UpdateKind::Status).await else {
            return false;
        };
        if self.delete_all(resource).await > 0 {
            return false;
        }
        self.finish(crd, ("InstanceDeletionCompleted", "removed all instances"))
            .await
    }

    /// The last step of a CRD's cleanup: `Terminating` false with `why`, then the cleanup
    /// finalizer removed (the store deletes the CRD when no finalizer is left).
    async fn finish(&self, mut crd: CustomObject, (reason, message): (&str, &str)) -> bool {
        let status = crd.fields.entry("status").or_insert_with(|| json!({}));
        definitions::set_condition(status, "Terminating", "False", reason, message);
        let Some(mut crd) = self.update_definition(crd, UpdateKind::Status).await else {
            return false;
        };
        if let Some(finalizers) = crd.metadata.finalizers.as_mut() {
            finalizers.retain(|f| f != definitions::CLEANUP_FINALIZER);
        }
        self.update_definition(crd, UpdateKind::Main)
            .await
            .is_some()
    }

    /// Writes a CRD (its status, or the object), answering it as stored; `None` when the
    /// write failed (a conflict with a newer write is one: the next sync tries again).
    async fn update_definition(&self, crd: CustomObject, kind: UpdateKind) -> Option<CustomObject> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let served = &self.definitions;
        let codec = served.version(definitions::VERSION)?;
        // kube-apiserver's naming, establishing and finalizing controllers write through its
        // loopback client, recorded as its manager.
        let place = Place {
            namespace: None,
            name: &name,
        };
        let written = apfkit_apiserver::fields::update_as(
            self.server.objects(),
            served,
            codec,
            place,
            ServedObject::custom(crd),
            kind,
            KUBE_APISERVER,
        )
        .await;
        match written {
            Ok(written) => match written.object {
                ServedObject::Custom(crd) => Some(*crd),
                ServedObject::Builtin(_) => None,
            },
            Err(error) => {
                tracing::debug!("CustomResourceDefinition {name}: not written: {error}");
                None
            }
        }
    }

    /// The resource of a stored CRD.
    fn resource_of(&self, crd: &CustomObject, terminating: bool) -> Result<Resource<H>, String> {
        let compiled = definitions::compile(crd).map_err(|e| e.to_string())?;
        let source = &compiled.source.spec;
        let storage = compiled
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .ok_or("no storage version")?;
        let status = source
            .versions
            .iter()
            .any(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some()));
        let scale = source
            .versions
            .iter()
            .find_map(|v| v.subresources.as_ref()?.scale.as_ref())
            .map(|scale| ScaleSubresource {
                spec_replicas_path: scale.spec_replicas_path.clone().into(),
                status_replicas_path: scale.status_replicas_path.clone().into(),
                label_selector_path: scale.label_selector_path.clone().map(Into::into),
            });
        let printer = source
            .versions
            .iter()
            .filter(|v| v.served)
            .max_by(|a, b| compare_kube_aware_version_strings(&a.name, &b.name))
            .map(crate::printer::printer);
        // Each version's schemas as kube-apiserver publishes them: server-side apply's
        // (`schemas`), and the OpenAPI documents' (`custom_openapi`).
        let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
        let mut custom_openapi: BTreeMap<String, CustomOpenApi> = BTreeMap::new();
        for v in &source.versions {
            let schema = v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| serde_json::to_value(s).ok());
            let kind = GroupVersionKind::new(
                compiled.group.clone(),
                v.name.clone(),
                compiled.kind.clone(),
            );
            if let Some(schema) = &schema {
                schemas.insert(v.name.clone(), crate::published::published(schema, &kind));
            }
            let selectable: Vec<String> = v
                .selectable_fields
                .iter()
                .flatten()
                .map(|f| f.json_path.clone())
                .collect();
            let published = crate::openapi::custom_openapi(&PublishedVersion {
                kind: &kind,
                list_kind: source.names.list_kind.as_deref().unwrap_or_default(),
                plural: &compiled.plural,
                schema: schema.as_ref(),
                preserve_unknown_fields: source.preserve_unknown_fields == Some(true),
                status: v.subresources.as_ref().is_some_and(|s| s.status.is_some()),
                scale: v.subresources.as_ref().is_some_and(|s| s.scale.is_some()),
                selectable_fields: &selectable,
            });
            custom_openapi.insert(v.name.clone(), published);
        }
        let kind = compiled.kind.clone();
        let schema: SchemaFn = Arc::new(move |of: &GroupVersionKind| {
            (of.kind == kind)
                .then(|| schemas.get(of.version.as_ref()).cloned())
                .flatten()
        });
        let kind = GroupVersionKind::new(compiled.group.clone(), storage, compiled.kind.clone());
        let mut config = ResourceConfig::custom(kind, &compiled.plural, compiled.namespaced)
            .with_short_names(source.names.short_names.clone().unwrap_or_default())
            .with_categories(source.names.categories.clone().unwrap_or_default())
            .with_status(status)
            .with_schema(schema);
        config.scale = scale;
        config.custom_openapi = Some(Arc::new(custom_openapi));
        let plural = compiled.plural.clone();
        let served: Vec<usize> = compiled
            .versions
            .iter()
            .enumerate()
            .filter(|(_, v)| v.served)
            .map(|(index, _)| index)
            .collect();
        let name = crd.metadata.name.clone().unwrap_or_default();
        let definition = Arc::new(match self.in_process.get(&name) {
            Some(handler) => Definition::converted_in_process(compiled, handler.clone()),
            None => Definition::new(compiled),
        });
        let versions = served
            .into_iter()
            .map(|index| {
                Arc::new(CustomVersion::new(definition.clone(), index))
                    as SharedVersion<ServedObject<H>>
            })
            .collect();
        let mut resource =
            Served::with_versions(config, plural, versions).map_err(|e| e.to_string())?;
        if printer.is_some() || terminating {
            resource = resource.with_strategy(CustomStrategy {
                printer,
                terminating,
            });
        }
        Ok(Arc::new(resource))
    }

    /// Writes the status kube-apiserver's controllers give a CRD whose names were accepted
    /// (`accepted`) or conflict, if it differs from the stored one.
    async fn write_status(&self, crd: &CustomObject, accepted: bool) {
        let current = crd.fields.get("status").cloned().unwrap_or(Value::Null);
        let wanted = status_of(crd, accepted, &current);
        if wanted == current {
            return;
        }
        let mut updated = crd.clone();
        updated.fields.insert("status".into(), wanted);
        // Written again on the next change (a conflict is one) when this fails.
        self.update_definition(updated, UpdateKind::Status).await;
    }

    /// Deletes every object of a resource, as kube-apiserver's `customresourcecleanup`
    /// finalizer does; answers how many are left (kept for their finalizers, or not deleted;
    /// at least one when something failed).
    async fn delete_all(&self, resource: &Resource<H>) -> usize {
        match self
            .server
            .objects()
            .delete_all(resource, None, Propagation::default())
            .await
        {
            Ok(kept) => kept.len(),
            Err(_) => 1,
        }
    }

    /// Keeps the resources in step with the stored CRDs until the server stops: an informer
    /// of CustomResourceDefinitions that syncs after every change.
    pub fn keep_synced(self: Arc<Self>) {
        let resources = vec![self.definitions.clone()];
        Informer::new(self.server.clone(), resources).run(move || {
            let controller = self.clone();
            async move { controller.sync().await }
        });
    }
}

/// A custom resource's own rules: its CRD's printer columns, and no creates while the CRD is
/// terminating.
struct CustomStrategy {
    printer: Option<apfkit_apiserver::table::Printer>,
    terminating: bool,
}

impl<H> Strategy<H> for CustomStrategy {
    fn refuses_creates(&self) -> Option<&str> {
        self.terminating
            .then_some("create not allowed while custom resource definition is terminating")
    }

    fn allows_unconditional_update(&self) -> bool {
        false
    }

    fn printer(&self) -> Option<&apfkit_apiserver::table::Printer> {
        self.printer.as_ref()
    }
}

/// Whether a CRD's `Terminating` condition is true.
fn is_terminating(crd: &CustomObject) -> bool {
    crd.fields
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Terminating")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Whether a CRD is deleted and waits for its custom resources to go.
fn has_cleanup_finalizer(crd: &CustomObject) -> bool {
    crd.metadata.deletion_timestamp.is_some()
        && crd
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == definitions::CLEANUP_FINALIZER))
}

/// The status of a CRD: its accepted names, its conditions (kept with their transition times
/// when unchanged) and its stored versions (the storage version added).
fn status_of(crd: &CustomObject, accepted: bool, current: &Value) -> Value {
    let spec = crd.fields.get("spec").cloned().unwrap_or(Value::Null);
    let names = spec.get("names").cloned().unwrap_or_else(|| json!({}));
    let storage = crate::definitions::storage_version(&spec).cloned();
    let mut stored: Vec<Value> = current
        .get("storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(storage) = storage
        && !stored.contains(&storage)
    {
        stored.push(storage);
    }
    let (names_status, names_reason, names_message) = if accepted {
        ("True", "NoConflicts", "no conflicts found")
    } else {
        (
            "False",
            "NameConflict",
            "the kind or resource name is served already",
        )
    };
    let established = if accepted {
        (
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else {
        ("False", "NotAccepted", "not all names are accepted")
    };
    let conditions = [
        ("NamesAccepted", names_status, names_reason, names_message),
        ("Established", established.0, established.1, established.2),
    ]
    .into_iter()
    .map(|(kind, status, reason, message)| condition(current, kind, status, reason, message))
    .chain(
        // Conditions other controllers set (`Terminating`) stay, after these.
        current
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| {
                !matches!(
                    c.get("type").and_then(Value::as_str),
                    Some("NamesAccepted" | "Established")
                )
            })
            .cloned(),
    )
    .collect::<Vec<_>>();
    json!({
        "acceptedNames": if accepted { names } else { json!({"plural": "", "kind": ""}) },
        "conditions": conditions,
        "storedVersions": stored,
    })
}

/// A condition, with the transition time of the current one of its type when its status is
/// the same.
fn condition(current: &Value, kind: &str, status: &str, reason: &str, message: &str) -> Value {
    let previous = current
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        });
    let time = match previous {
        Some(previous) if previous.get("status").and_then(Value::as_str) == Some(status) => {
            previous
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or(Value::Null)
        }
        _ => serde_json::to_value(apfkit_apiserver::store::now()).unwrap_or(Value::Null),
    };
    json!({
        "type": kind,
        "status": status,
        "lastTransitionTime": time,
        "reason": reason,
        "message": message,
    })
}
