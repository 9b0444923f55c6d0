//! A kube-rs controller of Greetings, the example the harness is shown with: each Greeting
//! (a two-version CRD, `example.com` v1 and v2) gets a ConfigMap holding its message, owned
//! by it so that the garbage collector removes it with the Greeting; a finalizer
//! (`kube::runtime::finalizer`) records the Greeting's end; each step is an Event
//! (`kube::runtime::events::Recorder`); a Lease elects the one instance that runs.
//!
//! [`Context::fault`] puts a fault in on purpose: the tests run the controller with each one
//! and show that they catch it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{Event as Finalizing, finalizer};
use kube::runtime::watcher;
use kube::{Client, CustomResourceExt as _, Resource as _, ResourceExt as _};

/// The version the controller works in, and the one stored.
pub mod v1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// What to say.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Greeting",
        namespaced,
        status = "GreetingStatus"
    )]
    pub struct GreetingSpec {
        /// The message.
        pub message: String,
    }

    /// What the controller made.
    #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct GreetingStatus {
        /// The ConfigMap holding the message.
        pub config_map: Option<String>,
    }
}

/// The newer version: the same message, which may be shouted.
pub mod v2 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// What to say, and how.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v2",
        kind = "Greeting",
        namespaced,
        status = "super::v1::GreetingStatus"
    )]
    pub struct GreetingSpec {
        /// The message.
        pub message: String,
        /// Whether to shout it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub shout: Option<bool>,
    }
}

/// The Greetings CRD, both versions served, v1 stored (kube-rs's `merge_crds`).
pub fn crd() -> serde_json::Value {
    let merged = kube::core::crd::merge_crds(vec![v1::Greeting::crd(), v2::Greeting::crd()], "v1")
        .expect("two versions of one kind");
    serde_json::to_value(merged).expect("a CRD serializes")
}

/// The finalizer the controller keeps on each Greeting until it has recorded its end.
pub const FINALIZER: &str = "example.com/greeting-cleanup";

/// The field manager of the controller's server-side applies.
const MANAGER: &str = "greetings-controller";

/// A fault put in on purpose, to show that the tests catch a broken controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The ConfigMap is made without its owner reference (it outlives its Greeting).
    NoOwnerReference,
    /// The cleanup never succeeds (the finalizer stays, and so does the Greeting).
    KeepsFinalizer,
    /// No Event is recorded.
    NoEvent,
    /// A ConfigMap once made is never brought up to date.
    StaleConfigMap,
}

/// What each reconciliation needs.
pub struct Context {
    /// The client of the API server.
    pub client: Client,
    /// Records the Events.
    pub recorder: Recorder,
    /// A fault put in on purpose; `None` for the controller as written.
    pub fault: Option<Fault>,
}

/// Why a reconciliation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a request, or could not be reached.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The finalizer's bookkeeping failed.
    #[error("{0}")]
    Finalizer(String),
    /// A step refused on purpose ([`Fault::KeepsFinalizer`]).
    #[error("{0}")]
    Refused(&'static str),
}

/// The name of a Greeting's ConfigMap.
pub fn config_map_name(greeting: &str) -> String {
    format!("{greeting}-greeting")
}

/// Brings the world in line with one Greeting, through its finalizer.
///
/// # Errors
///
/// As [`Error`] says; the controller then tries again.
pub async fn reconcile(greeting: Arc<v1::Greeting>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = greeting.namespace().unwrap_or_default();
    let greetings: Api<v1::Greeting> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&greetings, FINALIZER, greeting, |event| async {
        match event {
            Finalizing::Apply(greeting) => apply(&greeting, &ctx).await,
            Finalizing::Cleanup(greeting) => cleanup(&greeting, &ctx).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(error.to_string()))
}

/// The Greeting's ConfigMap applied, its status written, the step recorded.
async fn apply(greeting: &v1::Greeting, ctx: &Context) -> Result<Action, Error> {
    let namespace = greeting.namespace().unwrap_or_default();
    let name = config_map_name(&greeting.name_any());
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let owned = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: (ctx.fault != Some(Fault::NoOwnerReference))
                .then(|| greeting.controller_owner_ref(&()).into_iter().collect()),
            ..ObjectMeta::default()
        },
        data: Some([("message".to_owned(), greeting.spec.message.clone())].into()),
        ..ConfigMap::default()
    };
    let stale =
        ctx.fault == Some(Fault::StaleConfigMap) && config_maps.get_opt(&name).await?.is_some();
    if !stale {
        config_maps
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&owned),
            )
            .await?;
    }
    let greetings: Api<v1::Greeting> = Api::namespaced(ctx.client.clone(), &namespace);
    let status = serde_json::json!({"status": {"configMap": name}});
    greetings
        .patch_status(
            &greeting.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    record(ctx, greeting, "Greeted", &greeting.spec.message).await;
    Ok(Action::await_change())
}

/// The Greeting's end recorded; its ConfigMap is the garbage collector's.
async fn cleanup(greeting: &v1::Greeting, ctx: &Context) -> Result<Action, Error> {
    if ctx.fault == Some(Fault::KeepsFinalizer) {
        return Err(Error::Refused("the cleanup fails on purpose"));
    }
    record(ctx, greeting, "Parted", "goodbye").await;
    Ok(Action::await_change())
}

/// An Event about the Greeting (events.k8s.io/v1, as kube-rs records them), on a best-effort
/// basis: an Event refused must not stop the work. (The harness's tests found why: in a
/// namespace being deleted, kube-apiserver's `NamespaceLifecycle` admission refuses every
/// create, Events included, so a cleanup that needed its Event would keep its finalizer,
/// and the namespace, forever.)
async fn record(ctx: &Context, greeting: &v1::Greeting, reason: &str, note: &str) {
    if ctx.fault == Some(Fault::NoEvent) {
        return;
    }
    let event = Event {
        type_: EventType::Normal,
        reason: reason.to_owned(),
        note: Some(note.to_owned()),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    let _refused = ctx
        .recorder
        .publish(&event, &greeting.object_ref(&()))
        .await;
}

/// Tried again soon after a failure.
pub fn error_policy(_: Arc<v1::Greeting>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

/// Runs the controller until the task is dropped: Greetings of every namespace, and the
/// ConfigMaps they own.
pub async fn run(ctx: Arc<Context>) {
    let greetings: Api<v1::Greeting> = Api::all(ctx.client.clone());
    let config_maps: Api<ConfigMap> = Api::all(ctx.client.clone());
    Controller::new(greetings, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// Leader election in small, on the Lease `name` of `namespace`: `identity` leads if it
/// makes the Lease, holds it already, or takes it over once its holder has not renewed it
/// for `duration`; every write names the `resourceVersion` it read, so two candidates never
/// both win. Answers whether `identity` leads.
///
/// # Errors
///
/// The API server's refusals other than a lost race.
pub async fn try_lead(
    client: Client,
    namespace: &str,
    name: &str,
    identity: &str,
    duration: Duration,
) -> Result<bool, kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client, namespace);
    let now = Timestamp::now();
    let seconds = i32::try_from(duration.as_secs()).unwrap_or(i32::MAX);
    let lease = |transitions: i32, acquired: Option<MicroTime>| Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(identity.to_owned()),
            lease_duration_seconds: Some(seconds),
            acquire_time: acquired.or(Some(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    };
    let lost_race =
        |error: &kube::Error| matches!(error, kube::Error::Api(status) if status.code == 409);
    let Some(held) = leases.get_opt(name).await? else {
        return match leases.create(&PostParams::default(), &lease(0, None)).await {
            Ok(_) => Ok(true),
            Err(error) if lost_race(&error) => Ok(false),
            Err(error) => Err(error),
        };
    };
    let spec = held.spec.clone().unwrap_or_default();
    let ours = spec.holder_identity.as_deref() == Some(identity);
    let expired = spec.renew_time.is_none_or(|renewed| {
        let lasts = SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into());
        renewed.0 + lasts < now
    });
    if !ours && !expired {
        return Ok(false);
    }
    let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
    let mut renewed = lease(transitions, if ours { spec.acquire_time } else { None });
    renewed.metadata.resource_version = held.metadata.resource_version;
    match leases.replace(name, &PostParams::default(), &renewed).await {
        Ok(_) => Ok(true),
        Err(error) if lost_race(&error) => Ok(false),
        Err(error) => Err(error),
    }
}
