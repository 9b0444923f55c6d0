//! Storage-version migration done by the cluster: a `storagemigration.k8s.io/v1`
//! StorageVersionMigration made for a resource and followed to its end, which
//! kube-controller-manager 1.37 (or `apfkit serve`) brings it to.

use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, PostParams, WatchParams};
use kube::core::WatchEvent;
use kube::{Client, ResourceExt};
use serde::Serialize;

/// The StorageVersionMigrations resource.
fn migrations() -> ApiResource {
    crate::api_resource(
        "storagemigration.k8s.io",
        "v1",
        "StorageVersionMigration",
        "storageversionmigrations",
    )
}

/// Where a migration is, as its status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Step {
    /// Made; another migration of the resource may be running.
    Waiting,
    /// Running: the resource's newest version being recorded.
    Running,
    /// Running: objects written back since the recorded version.
    Migrating,
    /// Every object was written back.
    Succeeded,
    /// It gave up.
    Failed,
}

/// How a migration ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    /// The resource, `plural.group`.
    pub resource: String,
    /// The StorageVersionMigration's name.
    pub migration: String,
    /// [`Step::Succeeded`] or [`Step::Failed`].
    pub step: Step,
    /// What the controller said: the `Running` condition's message after a success (it
    /// counts the objects), the `Failed` condition's after a failure.
    pub message: String,
}

/// Why a migration could not be followed to its end.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The server serves no StorageVersionMigrations.
    #[error(
        "the server serves no storagemigration.k8s.io/v1 StorageVersionMigrations (kube-apiserver 1.37 does)"
    )]
    NotServed,
    /// It did not end in time: the migration stays, and the controller may end it later.
    #[error(
        "the StorageVersionMigration {migration} did not end within {within:?} (it was {step:?}); it is left to the controller: kubectl get storageversionmigration {migration}"
    )]
    TimedOut {
        /// Its name.
        migration: String,
        /// How long it was followed.
        within: Duration,
        /// Where it was.
        step: Step,
    },
    /// The migration was deleted before it ended.
    #[error("the StorageVersionMigration {0} was deleted before it ended")]
    Deleted(String),
    /// The server could not be asked.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// The step a migration's status shows.
fn step_of(migration: &DynamicObject) -> Step {
    let holds = |kind: &str| {
        migration.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == kind && c["status"] == "True")
    };
    if holds("Failed") {
        Step::Failed
    } else if holds("Succeeded") {
        Step::Succeeded
    } else if !holds("Running") {
        Step::Waiting
    } else if migration.data["status"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty())
    {
        Step::Migrating
    } else {
        Step::Running
    }
}

/// The message of a migration's condition `kind`.
fn message_of(migration: &DynamicObject, kind: &str) -> String {
    migration.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Makes a StorageVersionMigration of `resource` (as [`crate::resource`] found it, with the
/// name `plural.group` it was asked by) and follows it until it succeeds or fails, for
/// `within` at most; `step` is told each step it reaches.
///
/// # Errors
///
/// [`FollowError`]: not served, not ended in time, deleted, or a server that cannot be asked.
pub async fn migrate(
    client: &Client,
    resource: &ApiResource,
    within: Duration,
    step: &(dyn Fn(Step) + Sync),
) -> Result<Ended, FollowError> {
    let name = if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &migrations());
    // A generated name within a name's 253 characters, five of which the server adds.
    let prefix: String = format!("{name}-").chars().take(240).collect();
    let migration: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "storagemigration.k8s.io/v1",
        "kind": "StorageVersionMigration",
        "metadata": {"generateName": prefix},
        "spec": {"resource": {"group": resource.group, "resource": resource.plural}},
    }))
    .map_err(|e| FollowError::Api(kube::Error::SerdeError(e)))?;
    let created = match api.create(&PostParams::default(), &migration).await {
        Ok(created) => created,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(FollowError::NotServed);
        }
        Err(error) => return Err(error.into()),
    };
    let migration_name = created.name_any();
    let mut last = step_of(&created);
    step(last);
    // Each state seen: the step told when it changes; the end, once there.
    let mut seen = |object: &DynamicObject| {
        let now = step_of(object);
        if now != last {
            last = now;
            step(now);
        }
        match now {
            Step::Succeeded => Some((now, message_of(object, "Running"))),
            Step::Failed => Some((now, message_of(object, "Failed"))),
            _ => None,
        }
    };
    let follow = async {
        let params = WatchParams::default().fields(&format!("metadata.name={migration_name}"));
        let mut from = created.resource_version().unwrap_or_default();
        loop {
            // Watched from the version last read: every change after it is seen.
            let mut events = api.watch(&params, &from).await?.boxed();
            while let Some(event) = events.next().await {
                let object = match event? {
                    WatchEvent::Added(object) | WatchEvent::Modified(object) => object,
                    WatchEvent::Deleted(_) => {
                        return Err(FollowError::Deleted(migration_name.clone()));
                    }
                    // An expired version (410) or another error: read again, then watched.
                    WatchEvent::Error(_) => break,
                    WatchEvent::Bookmark(_) => continue,
                };
                if let Some(end) = seen(&object) {
                    return Ok(end);
                }
            }
            // The watch ended (the server's timeout, an error): read it again, then watch on.
            let Some(current) = api.get_opt(&migration_name).await? else {
                return Err(FollowError::Deleted(migration_name.clone()));
            };
            from = current.resource_version().unwrap_or_default();
            if let Some(end) = seen(&current) {
                return Ok(end);
            }
        }
    };
    match tokio::time::timeout(within, follow).await {
        Ok(Ok((step, message))) => Ok(Ended {
            resource: name,
            migration: migration_name,
            step,
            message,
        }),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(FollowError::TimedOut {
            migration: migration_name,
            within,
            step: last,
        }),
    }
}
