//! The check on the widgets example's three-version CRD: its Rust conversions (run as the
//! webhook, in this process) lose nothing; the same conversions behind a webhook over HTTPS
//! that drops a field on the way to one version are caught, the field named by its path and
//! the object shrunk to the smallest that shows it.

use std::sync::Arc;

use apfkit_apiextensions::webhook::ReviewHandler;
use apfkit_crd::CustomResourceDefinition;
use apfkit_roundtrip::{Check, Problem, Webhook};
use serde_json::{Value, json};

fn widgets_crd(url_and_ca: Option<(&str, &str)>) -> CustomResourceDefinition {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/widgets.crd.yaml"
    ))
    .unwrap();
    let mut crd: Value = serde_saphyr::from_str(&text).unwrap();
    if let Some((url, ca)) = url_and_ca {
        use base64::Engine;
        let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
        crd["spec"]["conversion"]["webhook"]["clientConfig"] =
            json!({"url": url, "caBundle": bundle});
    }
    CustomResourceDefinition::from_value(&crd).unwrap()
}

/// The example's Rust conversions, answering reviews as its webhook does.
fn widgets_review(body: &[u8]) -> Result<Vec<u8>, String> {
    apfkit_runtime::review::review(&apfkit_example_widgets::api::SCHEME, body)
        .map_err(|e| e.to_string())
}

#[test]
fn the_widgets_examples_conversions_lose_nothing() {
    let webhook = Webhook::in_process(ReviewHandler(Arc::new(widgets_review)));
    let report = Check::new(widgets_crd(None))
        .seed(7)
        .cases(48)
        .run(&webhook);
    assert!(report.clean(), "{}", report.text());
    // Every version sent to both others and back, three versions' paths compared.
    assert!(report.generated >= 3 * 40, "{}", report.text());
    assert!(report.reviews > 0 && report.objects_sent >= 4 * report.generated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_drops_a_field_one_way_is_caught_and_shrunk() {
    let (url, ca) = apfkit_test_support::extension::json_webhook(
        apfkit_example_widgets::lossy::forgetting_the_image,
    )
    .await;
    let crd = widgets_crd(Some((&url, &ca)));
    let conversion = crd.source.spec.conversion.clone().unwrap().webhook.unwrap();
    let webhook = Webhook::new(&conversion).unwrap();
    let report =
        tokio::task::spawn_blocking(move || Check::new(crd).seed(3).cases(32).run(&webhook))
            .await
            .unwrap();
    assert!(!report.clean());
    let losses: Vec<(String, String, String)> = report
        .findings
        .iter()
        .filter(|f| f.problem == Problem::Loss)
        .map(|f| {
            let path = f.difference.as_ref().unwrap().path.clone();
            (f.from.clone(), f.via.clone(), path)
        })
        .collect();
    // Lost on every round trip that ends in v1alpha1 or goes through it.
    for (from, via) in [
        ("v1beta1", "v1alpha1"),
        ("v1", "v1alpha1"),
        ("v1alpha1", "v1beta1"),
    ] {
        assert!(
            losses
                .iter()
                .any(|(f, v, path)| f == from && v == via && path.starts_with(".spec.image")),
            "{from} → {via}: {}",
            report.text()
        );
    }
    // And nowhere else.
    assert!(
        losses
            .iter()
            .all(|(from, via, _)| from == "v1alpha1" || via == "v1alpha1"),
        "{}",
        report.text()
    );
    // Shrunk: the v1beta1 object that shows it holds the image and what defaulting adds.
    let shown = report
        .findings
        .iter()
        .find(|f| f.problem == Problem::Loss && f.from == "v1beta1")
        .unwrap();
    assert_eq!(
        shown.object["spec"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["image", "replicas"],
        "{}",
        report.text()
    );
    assert_eq!(shown.object["spec"]["replicas"], 1, "{}", report.text());
    // The text names the route and the path.
    let text = report.text();
    assert!(
        text.contains("v1beta1 → v1alpha1 → v1beta1 lost .spec.image"),
        "{text}"
    );
}
