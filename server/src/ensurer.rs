//! kube-apiserver's APF configuration producer in `apfkit serve`: at start and then every
//! minute, the bootstrap objects are created when missing, kept as
//! `apfkit_dispatcher::bootstrap::ensure` decides (mandatory ones always, suggested ones
//! as their `apf.kubernetes.io/autoupdate-spec` annotation says), and auto-updated objects
//! the bootstrap configuration no longer has are deleted.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::fields::record_update;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::{Place, Preconditions, Propagation, UpdateKind};
use apfkit_dispatcher::bootstrap::{Change, ensure};
use apfkit_runtime::Object as _;

use crate::flow_control::stored_objects;
use apfkit_dispatcher::dispatch::printable;

use crate::Error;

/// The field manager kube-apiserver's configuration producer writes as
/// (`apf_bootstrap.go`'s `fieldManager`), recorded in the objects' `managedFields`.
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";

/// How often the producer runs after start, as kube-apiserver's post-start hook does.
const PERIOD: Duration = Duration::from_secs(60);

/// One round: reads the stored objects and makes the writes the producer decides. Writes
/// that meet a concurrent change (409) or a deleted object (404) are left to the next round.
///
/// # Errors
///
/// The stored objects cannot be read, or a write fails otherwise.
pub async fn ensure_once(
    server: &ApiServer<crate::ServeObject>,
    suggested: bool,
) -> Result<(), Error> {
    let (levels, schemas, _) = stored_objects(server).await?;
    for change in ensure(&levels, &schemas, suggested) {
        let (kind, name) = match &change {
            Change::Create(object) | Change::Update(object) => (
                object.kind().to_owned(),
                object.metadata().name.clone().unwrap_or_default(),
            ),
            Change::Delete { kind, name } => ((*kind).to_owned(), name.clone()),
        };
        let Some(served) = server.resource_of_kind("flowcontrol.apiserver.k8s.io", &kind) else {
            continue;
        };
        // The producer writes v1 objects, through a client whose field manager it names.
        let codec = served.version("v1").unwrap_or(&*served.storage);
        let api_version = codec.api_version();
        let place = Place {
            namespace: None,
            name: &name,
        };
        let written = match change {
            Change::Create(object) => {
                async {
                    let object = ServedObject::Builtin(object);
                    let object = record_update(&served, codec, None, None, object, PRODUCER)?;
                    server
                        .objects()
                        .create(&served, None, object, &api_version, false)
                        .await
                        .map(drop)
                }
                .await
            }
            Change::Update(object) => server
                .objects()
                .update_with(
                    &served,
                    place,
                    ServedObject::Builtin(object),
                    &api_version,
                    UpdateKind::Main,
                    false,
                    |old, new| record_update(&served, codec, None, Some(old), new, PRODUCER),
                )
                .await
                .map(drop),
            Change::Delete { .. } => server
                .objects()
                .delete(
                    &served,
                    place,
                    &Preconditions::default(),
                    Propagation::default(),
                    false,
                )
                .await
                .map(drop),
        };
        match written {
            Ok(()) => {}
            Err(error) if matches!(error.code, 404 | 409) => {}
            Err(error) => {
                return Err(Error::Start(format!(
                    "the bootstrap {kind} {}: {error}",
                    printable(&name)
                )));
            }
        }
    }
    Ok(())
}

/// Runs [`ensure_once`] every minute from now on, reporting failures on standard error.
pub fn keep_ensured(server: Arc<ApiServer<crate::ServeObject>>, suggested: bool) {
    let ensured = server.clone();
    server.spawn_until_stopped(async move {
        loop {
            tokio::time::sleep(PERIOD).await;
            if let Err(error) = ensure_once(&ensured, suggested).await {
                eprintln!("apfkit serve: warning: {error}");
            }
        }
    });
}
