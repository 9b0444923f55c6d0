//! Storage-version migration through the API, as kube-storage-version-migrator does it: the
//! only way on a cluster whose etcd is out of reach.
//!
//! Every object of a resource is listed, page by page, and written back unchanged with its
//! `resourceVersion` (a `PUT`). An update that changes nothing still makes the API server
//! encode the object again, and it stores the encoding only if it differs from what is
//! stored (`GuaranteedUpdate`): an object stored in an older version is rewritten in the
//! storage version, one already current is left as it is. A conflict (someone wrote
//! meanwhile) means the object was just written in the storage version by that writer; it is
//! read again and written once more all the same, as the upstream migrator does. An object
//! deleted meanwhile is skipped. A run that stops (the server gone, a network failure)
//! answers where it was ([`Interrupted`]), and a run given that place goes on from it; a
//! place the server no longer knows (`410 Gone`: the continue token expired) starts the list
//! again, which is harmless since writing back is idempotent.
//!
//! **Where to start**: [`resource`] finds what to migrate by discovery, [`migrate`] writes it
//! back, and [`trim_stored_versions`] then trims a CRD's `status.storedVersions`. Against a
//! server started in this process (`apfkit-server`):
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use kube::config::{KubeConfigOptions, Kubeconfig};
//!
//! let dir = tempfile::tempdir()?;
//! let server = apfkit_server::start(apfkit_server::Config::new(dir.path())).await?;
//! let kubeconfig = Kubeconfig::read_from(server.kubeconfig())?;
//! let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
//! let client = kube::Client::try_from(config)?;
//!
//! let (resource, namespaced) =
//!     apfkit_migrator::resource(&client, "flowschemas.flowcontrol.apiserver.k8s.io").await?;
//! let options = apfkit_migrator::Options::default();
//! let summary = apfkit_migrator::migrate(&client, &resource, namespaced, &options, &|_| {}).await?;
//! assert!(summary.listed >= 2, "the bootstrap FlowSchemas");
//! assert_eq!(summary.migrated, summary.listed);
//! assert!(summary.failed.is_empty());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod engine;
pub mod server_side;

use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt};

/// How to migrate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Objects per list page.
    pub page_size: u32,
    /// Conflicts on one object before it is reported as failed.
    pub max_conflicts: u32,
    /// Where an interrupted run stopped: the continue token of the next page.
    pub resume_from: Option<String>,
    /// Objects written back at the same time.
    pub parallel: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 500,
            max_conflicts: 10,
            resume_from: None,
            parallel: 1,
        }
    }
}

pub use engine::{Failed, Place, Summary};

/// A run that stopped before its end: what it did, where to go on from, and why it stopped.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Interrupted {
    /// What was done before it stopped.
    pub summary: Summary,
    /// The continue token of the page to go on from ([`Options::resume_from`]); `None` to
    /// start from the beginning.
    pub resume_from: Option<String>,
    /// Why it stopped.
    pub error: kube::Error,
}

/// The resource `plural` of `group` (not the core group) in `version`, of `kind`.
fn api_resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: format!("{group}/{version}"),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// The resource of CustomResourceDefinitions.
fn definitions() -> ApiResource {
    api_resource(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
}

/// The storage version of the CRD of `name` (`plural.group`); `None` when no CRD defines it
/// (a kind of the API server's own).
///
/// # Errors
///
/// A server that cannot be asked.
pub async fn storage_version(client: &Client, name: &str) -> Result<Option<String>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &definitions());
    let Some(crd) = api.get_opt(name).await? else {
        return Ok(None);
    };
    Ok(storage_version_of(&crd).map(str::to_owned))
}

/// The version a CRD marks `storage: true`.
fn storage_version_of(crd: &DynamicObject) -> Option<&str> {
    crd.data["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))?["name"]
        .as_str()
}

/// Why a CRD's stored versions were not trimmed.
#[derive(Debug, thiserror::Error)]
pub enum TrimError {
    /// The storage version changed while objects were written back: some may be stored in the
    /// old one. Running again migrates them.
    #[error(
        "the storage version of {name} changed during the run ({before} to {now}); run again to migrate every object to {now}"
    )]
    StorageVersionChanged {
        /// `plural.group`.
        name: String,
        /// The storage version when the run started.
        before: String,
        /// The storage version now.
        now: String,
    },
    /// The server could not be asked, or refused the write.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// After every object of the custom resource `name` was written back in `storage` (its CRD's
/// storage version when the run started): sets the CRD's `status.storedVersions` to that one
/// version, as kube-storage-version-migrator does, so that the old versions may be removed
/// from the CRD. Answers the versions removed; nothing for a resource no CRD defines.
///
/// # Errors
///
/// [`TrimError::StorageVersionChanged`] when the CRD's storage version is no longer
/// `storage` (nothing is written); a sixth conflict in a row, or another API error.
pub async fn trim_stored_versions(
    client: &Client,
    name: &str,
    storage: &str,
) -> Result<Vec<String>, TrimError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &definitions());
    // The CRD's own controller writes its status too (its conditions): a write that meets
    // one of those is read again and tried again, as client-go's `RetryOnConflict` does.
    let mut conflicts = 0;
    loop {
        let Some(mut crd) = api.get_opt(name).await? else {
            return Ok(Vec::new());
        };
        let now = storage_version_of(&crd).unwrap_or_default().to_owned();
        if now != storage {
            return Err(TrimError::StorageVersionChanged {
                name: name.to_owned(),
                before: storage.to_owned(),
                now,
            });
        }
        let stored: Vec<String> = crd.data["status"]["storedVersions"]
            .as_array()
            .map(|versions| {
                versions
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let removed: Vec<String> = stored.into_iter().filter(|v| v != storage).collect();
        if removed.is_empty() {
            return Ok(removed);
        }
        crd.data["status"]["storedVersions"] = serde_json::json!([storage]);
        match api.replace_status(name, &PostParams::default(), &crd).await {
            Ok(_) => return Ok(removed),
            Err(kube::Error::Api(status)) if status.code == 409 && conflicts < TRIM_CONFLICTS => {
                conflicts += 1;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Conflicts [`trim_stored_versions`] meets before it gives up: client-go's
/// `retry.DefaultRetry` steps.
const TRIM_CONFLICTS: u32 = 5;

/// Errors before a run starts.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// `plural.group` (or a plural of the core group) that the server does not serve.
    #[error("the server serves no resource {0}")]
    NoSuchResource(String),
    /// The server could not be asked.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// The resource `plural.group` (`flowschemas.flowcontrol.apiserver.k8s.io`, `widgets.example.com`,
/// `configmaps` for the core group) as the server serves it, in its preferred version.
///
/// # Errors
///
/// A resource the server does not serve, or a server that cannot be asked.
pub async fn resource(client: &Client, name: &str) -> Result<(ApiResource, bool), MigrateError> {
    let (plural, group) = name.split_once('.').unwrap_or((name, ""));
    let group_api = match discovery::group(client, group).await {
        Ok(found) => found,
        Err(kube::Error::Discovery(_)) => {
            return Err(MigrateError::NoSuchResource(name.to_owned()));
        }
        Err(other) => return Err(other.into()),
    };
    group_api
        .recommended_resources()
        .into_iter()
        .find(|(resource, _)| resource.plural == plural)
        .map(|(resource, capabilities)| (resource, capabilities.scope == Scope::Namespaced))
        .ok_or_else(|| MigrateError::NoSuchResource(name.to_owned()))
}

/// Writes back every object of `resource`; `progress` is told the count of objects done after
/// each one.
///
/// # Errors
///
/// [`Interrupted`] when the server stops answering: what was done, and where to go on from.
pub async fn migrate(
    client: &Client,
    resource: &ApiResource,
    namespaced: bool,
    options: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Summary, Box<Interrupted>> {
    let target = Target {
        client,
        all: Api::all_with(client.clone(), resource),
        resource,
        namespaced,
    };
    let summary = Summary {
        resource: if resource.group.is_empty() {
            resource.plural.clone()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        },
        ..Summary::default()
    };
    let plan = engine::Plan {
        page_size: options.page_size,
        parallel: options.parallel,
        on_conflict: engine::OnConflict::Retry {
            most: options.max_conflicts,
        },
        on_refusal: engine::OnRefusal::Record,
        written_by: None,
        resume_from: options.resume_from.clone(),
    };
    engine::run(&target, &plan, summary, progress)
        .await
        .map_err(|halted| {
            let error = match halted.why {
                engine::Halt::Error(error) => error,
                // `OnRefusal::Record` records refusals; none stops the run.
                engine::Halt::Refused(failed) => kube::Error::Service(failed.reason.into()),
            };
            Box::new(Interrupted {
                summary: halted.summary,
                resume_from: halted.resume_from,
                error,
            })
        })
}

/// A resource of a server reached through kube-rs.
struct Target<'a> {
    client: &'a Client,
    all: Api<DynamicObject>,
    resource: &'a ApiResource,
    namespaced: bool,
}

impl Target<'_> {
    fn api_of(&self, object: &DynamicObject) -> Api<DynamicObject> {
        if self.namespaced {
            let namespace = object.namespace().unwrap_or_default();
            Api::namespaced_with(self.client.clone(), &namespace, self.resource)
        } else {
            self.all.clone()
        }
    }
}

impl engine::Resource for Target<'_> {
    type Object = DynamicObject;
    type Cursor = String;
    type Error = kube::Error;

    async fn page(
        &self,
        from: Option<&String>,
        limit: u32,
    ) -> Result<engine::Page<DynamicObject, String>, kube::Error> {
        let mut params = ListParams::default().limit(limit);
        if let Some(token) = from {
            params = params.continue_token(token);
        }
        let page = self.all.list(&params).await?;
        Ok(engine::Page {
            objects: page.items,
            next: page.metadata.continue_.filter(|token| !token.is_empty()),
        })
    }

    async fn write_back(&self, object: &DynamicObject) -> Result<engine::WriteBack, kube::Error> {
        let api = self.api_of(object);
        match api
            .replace(&object.name_any(), &PostParams::default(), object)
            .await
        {
            Ok(_) => Ok(engine::WriteBack::Written),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(engine::WriteBack::Gone),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(engine::WriteBack::Conflict),
            // The server refuses the object as it is (it no longer validates, say): reported,
            // and the others go on.
            Err(kube::Error::Api(status)) if status.code == 422 || status.code == 400 => {
                Ok(engine::WriteBack::Refused(status.message.clone()))
            }
            Err(error) => Err(error),
        }
    }

    async fn read_again(
        &self,
        object: &DynamicObject,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        self.api_of(object).get_opt(&object.name_any()).await
    }

    fn place(&self, object: &DynamicObject) -> Place {
        Place {
            namespace: object.namespace(),
            name: object.name_any(),
        }
    }

    fn revision(&self, object: &DynamicObject) -> Option<u64> {
        object.resource_version()?.parse().ok()
    }

    fn expired(&self, error: &kube::Error) -> bool {
        matches!(error, kube::Error::Api(status) if status.code == 410)
    }
}
