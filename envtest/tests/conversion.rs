//! A multi-version CRD converted by its Rust conversions in the test's process: the widgets
//! example's three versions (`examples/widgets.crd.yaml`, whose webhook names a Service no
//! test deploys) through `apfkit-example-widgets`' generated scheme.

use apfkit_envtest::{Error, TestEnv};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::json;

fn widgets_file() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/widgets.crd.yaml")
}

fn widgets(env: &TestEnv, version: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource {
            group: "example.com".into(),
            version: version.into(),
            api_version: format!("example.com/{version}"),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crds_versions_are_converted_by_its_rust_conversions() {
    let env = TestEnv::builder()
        .crds_from_dir(widgets_file())
        .conversion("widgets.example.com", &apfkit_example_widgets::api::SCHEME)
        .start()
        .await
        .unwrap();
    let old: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "w", "annotations": {"widgets.example.com/paused": "true"}},
        "spec": {"size": 3, "image": "registry:5000/app:1.2"}}))
    .unwrap();
    widgets(&env, "v1alpha1")
        .create(&PostParams::default(), &old)
        .await
        .unwrap();
    // Stored in v1, the hub: the size is `replicas`, the image split, the annotation a field.
    let hub = widgets(&env, "v1").get("w").await.unwrap();
    assert_eq!(hub.data["spec"]["replicas"], 3);
    assert_eq!(
        hub.data["spec"]["image"],
        json!({"repository": "registry:5000/app", "tag": "1.2"})
    );
    assert_eq!(hub.data["spec"]["paused"], true);
    // And back, nothing lost.
    let again = widgets(&env, "v1alpha1").get("w").await.unwrap();
    assert_eq!(again.data["spec"], old.data["spec"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_that_fails_or_answers_wrongly_is_refused_in_kubes_words() {
    let failing = TestEnv::builder()
        .crds_from_dir(widgets_file())
        .conversion_handler("widgets.example.com", |_: &[u8]| Err("broken".to_owned()))
        .start()
        .await
        .unwrap();
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"replicas": 1, "image": "app:1"}}))
    .unwrap();
    let refused = widgets(&failing, "v1beta1")
        .create(&PostParams::default(), &widget)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains(
            "conversion webhook for example.com/v1beta1, Kind=Widget failed: in process: broken"
        ),
        "{refused}"
    );
    // An answer for another request (its uid not echoed) is refused as kube refuses it.
    let wrong_uid = TestEnv::builder()
        .crds_from_dir(widgets_file())
        .conversion_handler("widgets.example.com", |review: &[u8]| {
            let mut answer =
                apfkit_runtime::review::review(&apfkit_example_widgets::api::SCHEME, review)
                    .map_err(|e| e.to_string())?;
            let mut value: serde_json::Value = serde_json::from_slice(&answer).unwrap();
            value["response"]["uid"] = "another".into();
            answer = serde_json::to_vec(&value).unwrap();
            Ok(answer)
        })
        .start()
        .await
        .unwrap();
    let refused = widgets(&wrong_uid, "v1beta1")
        .create(&PostParams::default(), &widget)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("failed: expected response.uid=\"")
            && refused.to_string().contains("got \"another\""),
        "{refused}"
    );
    // A conversion for a CRD nobody gave.
    match TestEnv::builder()
        .conversion("gadgets.example.com", &apfkit_example_widgets::api::SCHEME)
        .start()
        .await
    {
        Err(Error::Conversion(message)) => assert_eq!(
            message,
            "gadgets.example.com: no CRD of this name was given to convert"
        ),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("started"),
    }
}
