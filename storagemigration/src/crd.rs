//! What kube-controller-manager's migration runner (`migrationrunner.go`) writes on the
//! CustomResourceDefinition of a custom resource being migrated: its `StorageMigrating`
//! condition, true while a migration runs and false after, with the CRD's generation as the
//! condition's observed generation; and, when the migration succeeded and the generation is
//! still the one recorded when it started, `status.storedVersions` trimmed to the storage
//! version. Both by a forced server-side apply of the status as `migration-runner-controller`,
//! with the CRD's `resourceVersion` as a precondition, tried again on a conflict.

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::{Place, Served, SharedVersion, UpdateKind, now};
use apfkit_runtime::Object;
use apfkit_runtime::scheme::UnknownFields;
use serde_json::{Value, json};

/// Who writes the CRD's condition (`MigrationRunnerControllerName`).
const RUNNER: &str = "migration-runner-controller";
/// The CRD condition (`apiextensionsv1.StorageMigrating`).
const STORAGE_MIGRATING: &str = "StorageMigrating";
/// Tries of a write that meets conflicts: client-go's `retry.DefaultRetry` steps.
const TRIES: usize = 5;

/// The CustomResourceDefinitions of a server.
pub(crate) struct Definitions<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    served: Arc<Served<ServedObject<H>>>,
    codec: SharedVersion<ServedObject<H>>,
}

impl<H> Definitions<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The CRDs of `server`; `None` when it serves none.
    pub(crate) fn of(server: &Arc<ApiServer<ServedObject<H>>>) -> Option<Self> {
        let served = server.resource("apiextensions.k8s.io", "customresourcedefinitions")?;
        let codec = served
            .versions
            .iter()
            .find(|codec| codec.version() == "v1")?
            .clone();
        Some(Definitions {
            server: server.clone(),
            served,
            codec,
        })
    }

    /// The CRD that defines `resource` of `group` (`crdForGroupResource`), as stored.
    async fn get(&self, group: &str, resource: &str) -> Result<Option<Value>, ApiError> {
        let name = format!("{resource}.{group}");
        let place = Place {
            namespace: None,
            name: &name,
        };
        match self.server.objects().get(&self.served, place).await {
            Ok(ServedObject::Custom(crd)) => Ok(Some(crd.to_value())),
            Ok(ServedObject::Builtin(_)) => Ok(None),
            Err(error) if error.code == 404 => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// `markAsActive`: the CRD of the resource, if there is one, marked as migrating by
    /// `migration`.
    pub(crate) async fn mark_migrating(
        &self,
        group: &str,
        resource: &str,
        migration: &str,
    ) -> Result<(), ApiError> {
        self.apply_status(group, resource, |_crd, generation| {
            json!({
                "conditions": [condition(
                    "True",
                    "MigrationRunning",
                    &format!("Migration {migration} is running"),
                    generation,
                )],
            })
        })
        .await
    }

    /// `finishCRDMigration`: the CRD of the resource, if there is one, no longer migrating;
    /// after a success its stored versions trimmed to the storage version, unless its
    /// generation changed since the migration started.
    pub(crate) async fn finish_migrating(
        &self,
        group: &str,
        resource: &str,
        succeeded: bool,
    ) -> Result<(), ApiError> {
        self.apply_status(group, resource, |crd, generation| {
            finished(crd, generation, succeeded)
        })
        .await
    }

    /// Applies the status `status_of(crd, generation)` makes to the CRD of the resource, if
    /// there is one, read again and applied again after a conflict.
    async fn apply_status(
        &self,
        group: &str,
        resource: &str,
        status_of: impl Fn(&Value, i64) -> Value,
    ) -> Result<(), ApiError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let Some(crd) = self.get(group, resource).await? else {
                return Ok(());
            };
            let generation = crd["metadata"]["generation"].as_i64().unwrap_or(0);
            let config = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {
                    "name": crd["metadata"]["name"],
                    "resourceVersion": crd["metadata"]["resourceVersion"],
                },
                "status": status_of(&crd, generation),
            });
            match self.apply(&crd, &config).await {
                Err(error) if error.code == 409 && error.causes.is_empty() && tries < TRIES => {}
                done => return done,
            }
        }
    }

    /// One forced apply of `config` to the status of `crd`, as stored at the configuration's
    /// `resourceVersion`.
    async fn apply(&self, crd: &Value, config: &Value) -> Result<(), ApiError> {
        let served = &*self.served;
        let codec = &*self.codec;
        let decode = |value: &Value| {
            codec
                .decode(value, UnknownFields::Ignore, &mut Vec::new())
                .map_err(ApiError::internal)
        };
        let live = decode(crd)?;
        let applied = fields::apply(served, codec, true, Some(&live), config, RUNNER, true)?;
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        self.server
            .objects()
            .update(
                served,
                Place {
                    namespace: None,
                    name,
                },
                decode(&applied)?,
                &codec.api_version(),
                UpdateKind::Status,
                false,
            )
            .await
            .map(drop)
    }
}

/// The status a finished migration applies to its CRD (`finishCRDMigration`): the
/// `StorageMigrating` condition false, and after a success whose CRD `generation` is still the
/// one the condition observed, the stored versions trimmed to the storage version.
fn finished(crd: &Value, generation: i64, succeeded: bool) -> Value {
    let migrating = crd["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == STORAGE_MIGRATING));
    let trim =
        migrating.is_some_and(|c| c["observedGeneration"].as_i64().unwrap_or(0) == generation);
    let (reason, message) = match (succeeded, trim) {
        (true, true) => (
            "MigrationSucceeded",
            "The migration has succeeded and the stored versions have been updated",
        ),
        (true, false) => (
            "MigrationSucceeded",
            "The migration has succeeded but the stored versions have not been updated due to \
             a generation mismatch",
        ),
        (false, _) => ("MigrationFailed", "The migration has failed"),
    };
    let mut status = json!({"conditions": [condition("False", reason, message, generation)]});
    let storage = crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["storage"] == true))
        .map(|version| version["name"].clone());
    if succeeded
        && trim
        && let Some(storage) = storage
    {
        status["storedVersions"] = json!([storage]);
    }
    status
}

/// The `StorageMigrating` condition.
fn condition(status: &str, reason: &str, message: &str, generation: i64) -> Value {
    let mut condition = json!({
        "type": STORAGE_MIGRATING,
        "status": status,
        "lastTransitionTime": now(),
        "reason": reason,
        "message": message,
    });
    if generation != 0 {
        condition["observedGeneration"] = generation.into();
    }
    condition
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CRD of `example.com` with v1 and v2 (the storage version), both stored, whose
    /// `StorageMigrating` condition observed `observed`, at `generation`.
    fn crd(observed: i64, generation: i64) -> Value {
        json!({
            "metadata": {"name": "widgets.example.com", "generation": generation},
            "spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]},
            "status": {"storedVersions": ["v1", "v2"], "conditions": [{
                "type": "StorageMigrating", "status": "True", "reason": "MigrationRunning",
                "observedGeneration": observed}]},
        })
    }

    // migrationrunner_test.go, TestCustomResourceController_Sync.

    #[test]
    fn migration_succeeded_update_crd_stored_versions() {
        let status = finished(&crd(1, 1), 1, true);
        assert_eq!(status["storedVersions"], json!(["v2"]));
        let condition = &status["conditions"][0];
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "MigrationSucceeded");
        assert_eq!(
            condition["message"],
            "The migration has succeeded and the stored versions have been updated"
        );
        assert_eq!(condition["observedGeneration"], 1);
    }

    #[test]
    fn migration_succeeded_crd_generation_mismatch_no_update() {
        let status = finished(&crd(1, 2), 2, true);
        assert!(status.get("storedVersions").is_none());
        assert_eq!(
            status["conditions"][0]["message"],
            "The migration has succeeded but the stored versions have not been updated due to a \
             generation mismatch"
        );
        assert_eq!(status["conditions"][0]["observedGeneration"], 2);
    }

    #[test]
    fn migration_failed_crd_condition_updated() {
        let status = finished(&crd(1, 1), 1, false);
        assert!(status.get("storedVersions").is_none());
        assert_eq!(status["conditions"][0]["reason"], "MigrationFailed");
        assert_eq!(
            status["conditions"][0]["message"],
            "The migration has failed"
        );
    }
}
