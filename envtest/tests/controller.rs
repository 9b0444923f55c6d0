//! The Greetings controller of `examples/greetings`, tested with the harness as its author
//! would test it: its ConfigMap made and kept up to date, its status, its Events, its
//! finalizer, the garbage collector taking the ConfigMap with the Greeting, a namespace
//! deleted at the end, and leader election on a Lease. Then the same tests against the
//! controller with each of its faults put in: each fault is caught.

#[path = "../examples/greetings/controller.rs"]
#[allow(dead_code)]
mod controller;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use apfkit_envtest::TestEnv;
use controller::{Context, Fault, config_map_name, v1, v2};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Recorder, Reporter};

const NAMESPACE: &str = "greetings";

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

/// What a test waits for: long enough for a working controller many times over.
const WITHIN: Duration = Duration::from_secs(10);

fn greeting(name: &str, message: &str) -> v2::Greeting {
    serde_json::from_value(serde_json::json!({"apiVersion": "example.com/v2",
        "kind": "Greeting", "metadata": {"name": name}, "spec": {"message": message}}))
    .expect("a Greeting")
}

/// The controller's whole story on a server of its own, with `fault` put in; `Err` names
/// the first thing that did not happen as it should.
async fn story(fault: Option<Fault>) -> Result<(), String> {
    let env = TestEnv::builder()
        .crd_manifest("greetings", controller::crd())
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let client = env.client();
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
    let result = check_story(&client).await;
    running.abort();
    result
}

async fn check_story(client: &kube::Client) -> Result<(), String> {
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
    eventually(WITHIN, "no ConfigMap was made", || {
        let (config_maps, name) = (config_maps.clone(), name.clone());
        async move { message(config_maps, name).await.filter(|m| m == "Hello") }
    })
    .await?;
    // Read through v1, the controller's version: its finalizer and its status.
    let in_v1: Api<v1::Greeting> = Api::namespaced(client.clone(), NAMESPACE);
    eventually(WITHIN, "no finalizer or status", || {
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
    eventually(WITHIN, "no Event was recorded", || {
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
    eventually(WITHIN, "the ConfigMap kept the old message", || {
        let (config_maps, name) = (config_maps.clone(), name.clone());
        async move { message(config_maps, name).await.filter(|m| m == "Hi") }
    })
    .await?;
    greetings
        .delete("hello", &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    eventually(WITHIN, "the Greeting was never let go", || {
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
    eventually(WITHIN, "the ConfigMap outlived its Greeting", || {
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
    eventually(WITHIN, "no ConfigMap for the last Greeting", || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("last-greeting").await.ok()?.map(|_| ()) }
    })
    .await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(NAMESPACE, &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    eventually(WITHIN, "the namespace stayed", || {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_does_what_it_says() {
    story(None).await.unwrap();
}

/// The mutation test: each fault makes the story fail where it should.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_of_the_controller_is_caught() {
    let faults = [
        (
            Fault::NoOwnerReference,
            "the ConfigMap outlived its Greeting",
        ),
        (Fault::KeepsFinalizer, "the Greeting was never let go"),
        (Fault::NoEvent, "no Event was recorded"),
        (Fault::StaleConfigMap, "the ConfigMap kept the old message"),
    ];
    let found =
        futures::future::join_all(faults.iter().map(|(fault, _)| story(Some(*fault)))).await;
    for ((fault, expected), found) in faults.iter().zip(found) {
        assert_eq!(found, Err((*expected).to_owned()), "{fault:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_candidate_leads_until_its_lease_expires() {
    let env = TestEnv::builder().start().await.unwrap();
    let client = env.client();
    let lead = |identity: &'static str, seconds: u64| {
        controller::try_lead(
            client.clone(),
            "kube-system",
            "greetings-controller",
            identity,
            Duration::from_secs(seconds),
        )
    };
    assert!(lead("a", 15).await.unwrap());
    assert!(!lead("b", 15).await.unwrap());
    assert!(lead("a", 15).await.unwrap(), "the holder renews");
    // Both at once: exactly one wins.
    let both = futures::future::join(lead("a", 15), lead("b", 15)).await;
    assert_eq!((both.0.unwrap(), both.1.unwrap()), (true, false));
    // A lease of one second, not renewed, is taken over.
    assert!(lead("a", 1).await.unwrap());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(lead("b", 15).await.unwrap());
    let lease = Api::<Lease>::namespaced(client, "kube-system")
        .get("greetings-controller")
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
}
