//! kube-controller-manager's storage-version migrator (`pkg/controller/storageversionmigrator`)
//! on the server's own store: its three controllers, each one step of a migration, each
//! writing the StorageVersionMigration's status as it does:
//!
//! 1. the migration runner: one migration at a time per resource, the oldest first, marked
//!    `Running` (and the resource's CRD `StorageMigrating`); once it succeeded or failed,
//!    `Running` false and the CRD's condition and stored versions written;
//! 2. the resource-version controller: the newest `resourceVersion` when it starts, recorded
//!    in `status.resourceVersion` (objects written after it are in the storage version);
//! 3. the migrator: every object written at or before that one written back
//!    ([`crate::rewrite`]), then `Succeeded`; an object refused, or a resource that is not
//!    served a minute after the migration was made, `Failed`.
//!
//! A step is taken once the step before it is written, so a restart goes on from where the
//! status says: a migration that was running writes its objects back again, which is
//! harmless (an object already stored in the storage version is not written).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{ListRequest, Place, Served, SharedVersion, UpdateKind, now};
use apfkit_migrator::engine::{self, Halt, OnConflict, OnRefusal, Plan, Summary};
use apfkit_runtime::Object;
use apfkit_runtime::scheme::UnknownFields;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use crate::GROUP;
use crate::conditions::{
    self, FAILED, FAILED_REASON, RUNNING, RUNNING_REASON, SUCCEEDED, SUCCEEDED_REASON, Wanted,
};
use crate::crd::Definitions;
use crate::rewrite::StoreResource;

/// Who writes a migration's status (kube-controller-manager's client).
const CONTROLLER: &str = "kube-controller-manager";
/// How long a migration of a resource that is not served waits for it before it fails (a
/// CRD made just before the migration may not be served yet).
const WAIT_FOR_RESOURCE: Duration = Duration::from_secs(60);
/// Objects per page read.
const PAGE: u32 = 500;
/// Objects written back at the same time.
const PARALLEL: usize = 64;

/// The StorageVersionMigrations of a server, run as kube-controller-manager runs them
/// ([`Migrations::sync`], kept running by [`Migrations::keep_synced`]).
pub struct Migrations<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    migrations: Arc<Served<ServedObject<H>>>,
    codec: SharedVersion<ServedObject<H>>,
}

/// A migration as listed: its name, resource and status.
struct Migration {
    object: Value,
}

impl Migration {
    fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `spec.resource`: its group and resource.
    fn resource(&self) -> (String, String) {
        let resource = &self.object["spec"]["resource"];
        let text = |field: &str| resource[field].as_str().unwrap_or_default().to_owned();
        (text("group"), text("resource"))
    }

    fn status(&self) -> &Value {
        &self.object["status"]
    }

    fn running(&self) -> bool {
        conditions::is_true(self.status(), RUNNING)
    }

    /// Succeeded or failed (`isTerminal`).
    fn terminal(&self) -> bool {
        conditions::is_true(self.status(), SUCCEEDED) || conditions::is_true(self.status(), FAILED)
    }

    /// `status.resourceVersion`, once recorded.
    fn checkpoint(&self) -> Option<&str> {
        self.status()["resourceVersion"]
            .as_str()
            .filter(|rv| !rv.is_empty())
    }

    /// `metadata.creationTimestamp`.
    fn created(&self) -> Option<Time> {
        serde_json::from_value(self.object["metadata"]["creationTimestamp"].clone()).ok()
    }

    /// Whether it was made less than [`WAIT_FOR_RESOURCE`] ago.
    fn made_lately(&self) -> bool {
        let Some(created) = self.created() else {
            return false;
        };
        let waited = now().0.as_second() - created.0.as_second();
        waited < i64::try_from(WAIT_FOR_RESOURCE.as_secs()).unwrap_or(i64::MAX)
    }

    /// Its order among migrations of one resource (`compareSVM`): the oldest first, then by
    /// name.
    fn order(&self) -> (i64, &str) {
        let created = self.created().map_or(0, |t| t.0.as_second());
        (created, self.name())
    }
}

/// `getSVMsForResource`: of the migrations of one resource, those that ended while running
/// (to be marked no longer running), and the one to run next: the oldest that neither runs
/// nor ended, unless one runs.
fn choose(migrations: Vec<Migration>) -> (Vec<Migration>, Option<Migration>) {
    let mut ended = Vec::new();
    let mut next: Option<Migration> = None;
    let mut in_progress = false;
    for migration in migrations {
        let (running, terminal) = (migration.running(), migration.terminal());
        if running && terminal {
            ended.push(migration);
        } else if running {
            in_progress = true;
            next = None;
        } else if !terminal
            && !in_progress
            && next.as_ref().is_none_or(|n| migration.order() < n.order())
        {
            next = Some(migration);
        }
    }
    (ended, next)
}

impl<H> Migrations<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The migrations of `server`, which serves them ([`crate::resource`]).
    ///
    /// # Errors
    ///
    /// A server that does not serve `storageversionmigrations` in v1.
    pub fn new(server: Arc<ApiServer<ServedObject<H>>>) -> Result<Self, ApiError> {
        let migrations = server
            .resource(GROUP, "storageversionmigrations")
            .ok_or_else(|| ApiError::internal("the server serves no storageversionmigrations"))?;
        let codec = migrations
            .versions
            .iter()
            .find(|codec| codec.version() == "v1")
            .cloned()
            .ok_or_else(|| ApiError::internal("storageversionmigrations are not served in v1"))?;
        Ok(Migrations {
            server,
            migrations,
            codec,
        })
    }

    /// Runs the migrations until the server stops: a sync after every change of a migration,
    /// and again a second after a sync that failed.
    pub fn keep_synced(self: Arc<Self>) {
        let resources = vec![self.migrations.clone()];
        Informer::new(self.server.clone(), resources).run(move || {
            let controller = self.clone();
            async move { controller.sync().await }
        });
    }

    /// Takes the next step of every migration: the runner's for each resource, then the
    /// resource version's or the migrator's for each migration running.
    ///
    /// # Errors
    ///
    /// A step that must be tried again (a conflict, a resource not served yet, an error the
    /// migrator waits out); the other steps are taken all the same.
    pub async fn sync(&self) -> Result<(), ApiError> {
        let mut retry = None;
        let mut by_resource: BTreeMap<(String, String), Vec<Migration>> = BTreeMap::new();
        for migration in self.list().await? {
            by_resource
                .entry(migration.resource())
                .or_default()
                .push(migration);
        }
        for ((group, resource), migrations) in by_resource {
            if let Err(error) = self.run_next(&group, &resource, migrations).await {
                tracing::debug!("storage version migrations of {resource}.{group}: {error}");
                retry = Some(error);
            }
        }
        for migration in self.list().await? {
            if !migration.running() || migration.terminal() {
                continue;
            }
            let step = match migration.checkpoint() {
                None => self.record_checkpoint(migration).await,
                Some(_) => self.migrate(migration).await,
            };
            if let Err(error) = step {
                tracing::debug!("storage version migration: {error}");
                retry = Some(error);
            }
        }
        retry.map_or(Ok(()), Err)
    }

    /// Every migration, as stored.
    async fn list(&self) -> Result<Vec<Migration>, ApiError> {
        let listed = self
            .server
            .objects()
            .list(&self.migrations, &ListRequest::default())
            .await?;
        Ok(listed
            .items
            .into_iter()
            .filter_map(|object| match object {
                ServedObject::Custom(object) => Some(Migration {
                    object: object.to_value(),
                }),
                ServedObject::Builtin(_) => None,
            })
            .collect())
    }

    /// The migration runner's sync of one resource (`getSVMsForResource`, `cleanupAdmission`,
    /// `markAsActive`): those that ended no longer running, then the oldest waiting one
    /// running, unless one is.
    async fn run_next(
        &self,
        group: &str,
        resource: &str,
        migrations: Vec<Migration>,
    ) -> Result<(), ApiError> {
        let (ended, next) = choose(migrations);
        let definitions = Definitions::of(&self.server);
        for mut migration in ended {
            let stopped = Wanted {
                status: "False",
                reason: "MigrationCompleted",
                ..Wanted::true_(RUNNING, "", "Migration completed".to_owned())
            };
            conditions::set(&mut migration.object["status"], &stopped, &json!(now()));
            if let Some(definitions) = &definitions {
                let succeeded = conditions::is_true(migration.status(), SUCCEEDED);
                definitions
                    .finish_migrating(group, resource, succeeded)
                    .await?;
            }
            self.write_status(migration.object).await?;
        }
        if let Some(mut migration) = next {
            if let Some(definitions) = &definitions {
                definitions
                    .mark_migrating(group, resource, migration.name())
                    .await?;
            }
            let message = conditions::running_message(None, None);
            conditions::set_once(
                &mut migration.object["status"],
                RUNNING,
                RUNNING_REASON,
                &message,
                &json!(now()),
            );
            self.write_status(migration.object).await?;
        }
        Ok(())
    }

    /// The resource to migrate, if served; a migration of one that is not fails once it is a
    /// minute old (`Ok(None)`), and until then waits (`Err`).
    fn resource_of(
        &self,
        migration: &Migration,
    ) -> Result<Option<Arc<Served<ServedObject<H>>>>, ApiError> {
        let (group, resource) = migration.resource();
        match self.server.resource(&group, &resource) {
            Some(served) => Ok(Some(served)),
            None if migration.made_lately() => Err(ApiError::internal(format!(
                "{resource}.{group} is not served, waiting for it"
            ))),
            None => Ok(None),
        }
    }

    /// The resource-version controller's sync: the newest `resourceVersion` recorded.
    async fn record_checkpoint(&self, mut migration: Migration) -> Result<(), ApiError> {
        if self.resource_of(&migration)?.is_none() {
            conditions::set_once(
                &mut migration.object["status"],
                FAILED,
                FAILED_REASON,
                "resource does not exist in discovery",
                &json!(now()),
            );
            return self.write_status(migration.object).await;
        }
        let newest = self.server.objects().current_revision().await?;
        migration.object["status"]["resourceVersion"] = newest.0.to_string().into();
        self.write_status(migration.object).await
    }

    /// The migrator's sync: every object written at or before the checkpoint written back,
    /// then `Succeeded`; `Failed` at the first object refused.
    async fn migrate(&self, mut migration: Migration) -> Result<(), ApiError> {
        let Some(served) = self.resource_of(&migration)? else {
            self.fail(
                &mut migration,
                "migration encountered unhandled error: unable to obtain GVR from discovery",
            );
            return self.write_status(migration.object).await;
        };
        let checkpoint: u64 = match migration.checkpoint().map(str::parse) {
            Some(Ok(checkpoint)) => checkpoint,
            _ => return Ok(()),
        };
        let Some(codec) = served.versions.first().cloned() else {
            return Ok(());
        };
        let store = StoreResource {
            server: self.server.clone(),
            served,
            codec,
        };
        let plan = Plan {
            page_size: PAGE,
            parallel: PARALLEL,
            on_conflict: OnConflict::Skip,
            on_refusal: OnRefusal::Stop,
            written_by: Some(checkpoint),
            resume_from: None,
        };
        match engine::run(&store, &plan, Summary::default(), &|_| {}).await {
            Ok(summary) => {
                let running = Wanted::true_(
                    RUNNING,
                    RUNNING_REASON,
                    conditions::running_message(Some((0, summary.listed)), None),
                );
                let succeeded = Wanted::true_(
                    SUCCEEDED,
                    SUCCEEDED_REASON,
                    "Migration completed".to_owned(),
                );
                let at = json!(now());
                let status = &mut migration.object["status"];
                let changed = conditions::set(status, &running, &at);
                if conditions::set(status, &succeeded, &at) || changed {
                    self.write_status(migration.object).await?;
                }
                Ok(())
            }
            Err(halted) => {
                let (total, candidates) = store.count(checkpoint).await?;
                let left = candidates.saturating_sub(halted.summary.handled());
                match halted.why {
                    Halt::Error(error) => {
                        // `updateRunningCondition`, then tried again.
                        let running = Wanted::true_(
                            RUNNING,
                            RUNNING_REASON,
                            conditions::running_message(Some((left, total)), Some(&error.message)),
                        );
                        if conditions::set(&mut migration.object["status"], &running, &json!(now()))
                        {
                            let _ = self.write_status(migration.object).await;
                        }
                        Err(error)
                    }
                    Halt::Refused(refused) => {
                        // `failMigrationWithObjectsMigrated`.
                        let running = Wanted::true_(
                            RUNNING,
                            RUNNING_REASON,
                            conditions::running_message(Some((left, total)), None),
                        );
                        conditions::set(&mut migration.object["status"], &running, &json!(now()));
                        let message = format!(
                            "{left}/{total} not yet migrated. migration encountered unhandled \
                             error: {}",
                            refused.reason
                        );
                        self.fail(&mut migration, &message);
                        self.write_status(migration.object).await
                    }
                }
            }
        }
    }

    /// `Failed` set with `message` (`failMigration`).
    fn fail(&self, migration: &mut Migration, message: &str) {
        let failed = Wanted::true_(FAILED, FAILED_REASON, message.to_owned());
        conditions::set(&mut migration.object["status"], &failed, &json!(now()));
    }

    /// Writes a migration's status (`UpdateStatus`), with its `resourceVersion` as the
    /// precondition: a conflict is an error, and the sync is tried again.
    async fn write_status(&self, migration: Value) -> Result<(), ApiError> {
        let served = &*self.migrations;
        let codec = &*self.codec;
        let name = migration["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let object = codec
            .decode(&migration, UnknownFields::Ignore, &mut Vec::new())
            .map_err(ApiError::internal)?;
        let place = Place {
            namespace: None,
            name: &name,
        };
        fields::update_as(
            self.server.objects(),
            served,
            codec,
            place,
            object,
            UpdateKind::Status,
            CONTROLLER,
        )
        .await
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migration(name: &str, created: &str, conditions: &[(&str, &str)]) -> Migration {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(kind, status)| json!({"type": kind, "status": status}))
            .collect();
        Migration {
            object: json!({
                "metadata": {"name": name, "creationTimestamp": created},
                "spec": {"resource": {"group": "example.com", "resource": "widgets"}},
                "status": {"conditions": conditions},
            }),
        }
    }

    fn names(migrations: &[Migration]) -> Vec<&str> {
        migrations.iter().map(Migration::name).collect()
    }

    // migrationrunner_test.go, TestCustomResourceController_Sync.

    #[test]
    fn initial_sync() {
        let (ended, next) = choose(vec![migration("test-svm", "2026-11-30T10:00:00Z", &[])]);
        assert!(ended.is_empty());
        assert_eq!(next.as_ref().map(Migration::name), Some("test-svm"));
    }

    #[test]
    fn migration_running_no_op() {
        let (ended, next) = choose(vec![
            migration("waiting", "2026-11-30T09:00:00Z", &[]),
            migration("running", "2026-11-30T10:00:00Z", &[(RUNNING, "True")]),
        ]);
        assert!(ended.is_empty() && next.is_none());
    }

    #[test]
    fn cleanup_admission_updates_svm_condition() {
        let (ended, next) = choose(vec![migration(
            "test-svm",
            "2026-11-30T10:00:00Z",
            &[(RUNNING, "True"), (SUCCEEDED, "True")],
        )]);
        assert_eq!(names(&ended), ["test-svm"]);
        assert!(next.is_none());
    }

    #[test]
    fn promote_older_svm_first() {
        let (ended, next) = choose(vec![
            migration("test-svm-newer", "2026-11-30T11:00:00Z", &[]),
            migration("test-svm-older", "2026-11-30T09:00:00Z", &[]),
            // Ended already: neither run nor marked again.
            migration(
                "done",
                "2026-11-30T08:00:00Z",
                &[(RUNNING, "False"), (FAILED, "True")],
            ),
        ]);
        assert!(ended.is_empty());
        assert_eq!(next.as_ref().map(Migration::name), Some("test-svm-older"));
        // Within one second, by name.
        let (_, next) = choose(vec![
            migration("b", "2026-11-30T09:00:00Z", &[]),
            migration("a", "2026-11-30T09:00:00Z", &[]),
        ]);
        assert_eq!(next.as_ref().map(Migration::name), Some("a"));
    }
}
