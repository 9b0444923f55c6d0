//! The Greetings controller of `examples/greetings`, tested with the harness as its author
//! would test it: its ConfigMap made and kept up to date, its status, its Events, its
//! finalizer, the garbage collector taking the ConfigMap with the Greeting, a namespace
//! deleted at the end, and leader election on a Lease. Then the same tests against the
//! controller with each of its faults put in: each fault is caught.

#[path = "../examples/greetings/controller.rs"]
#[allow(dead_code)]
mod controller;
#[path = "greetings/story.rs"]
mod story;

use std::time::Duration;

use apfkit_envtest::TestEnv;
use controller::Fault;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;

/// What a test waits for: long enough for a working controller many times over.
const WITHIN: Duration = Duration::from_secs(10);

/// The story on a server of its own, with `fault` put in.
async fn story(fault: Option<Fault>) -> Result<(), String> {
    let env = TestEnv::builder()
        .crd_manifest("greetings", controller::crd())
        .start()
        .await
        .map_err(|e| e.to_string())?;
    story::story(env.client(), fault, WITHIN).await
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
