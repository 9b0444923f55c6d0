//! The Greetings controller run against a test server: `cargo run -p apfkit-envtest
//! --example greetings`. It makes a Greeting through the CRD's v2 and prints what the
//! controller made of it: the ConfigMap, and the Events it recorded.

mod controller;

use std::sync::Arc;
use std::time::Duration;

use apfkit_envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, PostParams};
use kube::runtime::events::{Recorder, Reporter};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = TestEnv::builder()
        .crd_manifest("greetings", controller::crd())
        .start()
        .await?;
    let client = env.client();
    let leads = controller::try_lead(
        client.clone(),
        "kube-system",
        "greetings-controller",
        "example-0",
        Duration::from_secs(15),
    )
    .await?;
    println!("leader: {leads}");
    let reporter = Reporter {
        controller: "greetings-controller".to_owned(),
        instance: Some("example-0".to_owned()),
    };
    let ctx = Arc::new(controller::Context {
        client: client.clone(),
        recorder: Recorder::new(client.clone(), reporter),
        fault: None,
    });
    let running = tokio::spawn(controller::run(ctx));
    let greeting: controller::v2::Greeting = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v2", "kind": "Greeting",
        "metadata": {"name": "hello"}, "spec": {"message": "Hello, world"}}))?;
    Api::<controller::v2::Greeting>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &greeting)
        .await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let name = controller::config_map_name("hello");
    for _ in 0..100 {
        if let Some(made) = config_maps.get_opt(&name).await? {
            println!("ConfigMap {name}: {:?}", made.data.unwrap_or_default());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for event in Api::<Event>::namespaced(client, "default")
        .list(&Default::default())
        .await?
    {
        println!(
            "Event: {} {}",
            event.reason.unwrap_or_default(),
            event.message.unwrap_or_default()
        );
    }
    running.abort();
    Ok(())
}
