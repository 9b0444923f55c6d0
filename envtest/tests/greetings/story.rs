//! The Greetings controller's story, told against any server: the client's, the CRD
//! already served. Shared by the controller's tests and the bench that times them beside
//! Go's envtest.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::controller::{self, Context, Fault, config_map_name, v1, v2};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Recorder, Reporter};

pub const NAMESPACE: &str = "greetings";

/// Waits up to `within` for `check` to find what it looks for; `Err(failure)` if it never
/// does.
async fn eventually<F, T>(
    within: Duration,
    failure: &str,
    mut check: impl FnMut() -> F,
) -> Result<T, String>
where
    F: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(found) = check().await {
            return Ok(found);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(failure.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub fn greeting(name: &str, message: &str) -> v2::Greeting {
    serde_json::from_value(serde_json::json!({"apiVersion": "example.com/v2",
        "kind": "Greeting", "metadata": {"name": name}, "spec": {"message": message}}))
    .expect("a Greeting")
}

/// The controller's whole story through `client` (the Greetings CRD served), with `fault`
/// put in, each step given `within`; `Err` names the first thing that did not happen as it
/// should.
pub async fn story(
    client: kube::Client,
    fault: Option<Fault>,
    within: Duration,
) -> Result<(), String> {
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(NAMESPACE.to_owned());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(|e| e.to_string())?;
    let reporter = Reporter {
        controller: "greetings-controller".to_owned(),
        instance: Some("greetings-0".to_owned()),
    };
    let ctx = Arc::new(Context {
        client: client.clone(),
        recorder: Recorder::new(client.clone(), reporter),
        fault,
    });
    let running = tokio::spawn(controller::run(ctx));
    let result = check_story(&client, within).await;
    running.abort();
    result
}

async fn check_story(client: &kube::Client, within: Duration) -> Result<(), String> {
    let greetings: Api<v2::Greeting> = Api::namespaced(client.clone(), NAMESPACE);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    greetings
        .create(&PostParams::default(), &greeting("hello", "Hello"))
        .await
        .map_err(|e| e.to_string())?;
    let name = config_map_name("hello");
    let message = |config_maps: Api<ConfigMap>, name: String| async move {
        config_maps
            .get_opt(&name)
            .await
            .ok()
            .flatten()
            .and_then(|made| made.data)
            .and_then(|data| data.get("message").cloned())
    };
    eventually(within, "no ConfigMap was made", || {
        let (config_maps, name) = (config_maps.clone(), name.clone());
        async move { message(config_maps, name).await.filter(|m| m == "Hello") }
    })
    .await?;
    // Read through v1, the controller's version: its finalizer and its status.
    let in_v1: Api<v1::Greeting> = Api::namespaced(client.clone(), NAMESPACE);
    eventually(within, "no finalizer or status", || {
        let in_v1 = in_v1.clone();
        async move {
            let read = in_v1.get("hello").await.ok()?;
            let finalized = read
                .metadata
                .finalizers?
                .iter()
                .any(|f| f == controller::FINALIZER);
            (finalized && read.status?.config_map.as_deref() == Some("hello-greeting"))
                .then_some(())
        }
    })
    .await?;
    eventually(within, "no Event was recorded", || {
        let events = events.clone();
        async move {
            let listed = events
                .list(&ListParams::default().fields("involvedObject.name=hello"))
                .await
                .ok()?;
            listed
                .items
                .iter()
                .any(|event| event.reason.as_deref() == Some("Greeted"))
                .then_some(())
        }
    })
    .await?;
    let changed = serde_json::json!({"spec": {"message": "Hi"}});
    greetings
        .patch("hello", &PatchParams::default(), &Patch::Merge(&changed))
        .await
        .map_err(|e| e.to_string())?;
    eventually(within, "the ConfigMap kept the old message", || {
        let (config_maps, name) = (config_maps.clone(), name.clone());
        async move { message(config_maps, name).await.filter(|m| m == "Hi") }
    })
    .await?;
    greetings
        .delete("hello", &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    eventually(within, "the Greeting was never let go", || {
        let greetings = greetings.clone();
        async move {
            greetings
                .get_opt("hello")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await?;
    eventually(within, "the ConfigMap outlived its Greeting", || {
        let config_maps = config_maps.clone();
        let name = name.clone();
        async move {
            config_maps
                .get_opt(&name)
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await?;
    // The namespace goes with a Greeting still in it: the controller lets it go.
    greetings
        .create(&PostParams::default(), &greeting("last", "Bye"))
        .await
        .map_err(|e| e.to_string())?;
    eventually(within, "no ConfigMap for the last Greeting", || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("last-greeting").await.ok()?.map(|_| ()) }
    })
    .await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(NAMESPACE, &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    eventually(within, "the namespace stayed", || {
        let namespaces = namespaces.clone();
        async move {
            namespaces
                .get_opt(NAMESPACE)
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await
}
