//! `apfkit crd check-conversion` against conversion webhooks over HTTPS on loopback: the
//! widgets example's conversions (clean), the same with a bug that drops `spec.image` on the
//! way to v1alpha1 (found, shrunk, shown in docs/conversion-check.md exactly as printed),
//! and hostile webhooks (refused in kube-apiserver's words, never a hang).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::apfkit_within;

const WIDGETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/widgets.crd.yaml");

/// A webhook that echoes every object back unconverted, with the review's uid.
fn unconverted(review: &Value) -> (u16, Vec<u8>) {
    let request = &review["request"];
    let answer = serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"},
            "convertedObjects": request["objects"]}});
    (200, serde_json::to_vec(&answer).unwrap_or_default())
}

/// A webhook that answers garbage.
fn garbage(_: &Value) -> (u16, Vec<u8>) {
    (200, b"\x00\xff not a review".to_vec())
}

/// Runs the command against `answer` served over HTTPS, with `extra` flags: its exit code
/// and standard output.
fn check(answer: fn(&Value) -> (u16, Vec<u8>), extra: &[&str]) -> (Option<i32>, String) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, ca) = runtime.block_on(apfkit_test_support::extension::json_webhook(answer));
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca).unwrap();
    let ca_file = ca_file.display().to_string();
    let mut args = vec![
        "crd",
        "check-conversion",
        "-f",
        WIDGETS,
        "--webhook",
        &url,
        "--ca",
        &ca_file,
    ];
    args.extend_from_slice(extra);
    let output = apfkit_within(&args, b"", Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (
        output.status.code(),
        stdout.replace(&url, "https://127.0.0.1:9443/convert"),
    )
}

#[test]
fn the_widgets_webhook_loses_nothing() {
    let (code, stdout) = check(
        apfkit_example_widgets::lossy::correct,
        &["--cases", "32", "--seed", "1"],
    );
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.ends_with("nothing lost\n"), "{stdout}");
}

#[test]
fn a_lossy_webhook_is_caught_as_the_guide_shows() {
    let (code, stdout) = check(
        apfkit_example_widgets::lossy::forgetting_the_image,
        &["--cases", "16", "--seed", "3"],
    );
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("v1 → v1alpha1 → v1 lost .spec.image"),
        "{stdout}"
    );
    let page = apfkit_test_support::guide::text("conversion-check.md");
    assert!(page.contains(&format!("```text\n{stdout}```")), "{stdout}");
    // The same as JSON and SARIF, for scripts and code scanning.
    let (_, json) = check(
        apfkit_example_widgets::lossy::forgetting_the_image,
        &["--cases", "16", "--seed", "3", "-o", "json"],
    );
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json[0]["clean"], false);
    let loss = json[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["rule"] == "round-trip-loss" && f["path"] == ".spec.image" && f["via"] == "v1alpha1"
        })
        .unwrap();
    // With the last review of the smallest object, and the answer that lacks the image.
    assert_eq!(loss["review"]["kind"], "ConversionReview", "{loss}");
    assert_eq!(
        loss["review"]["request"]["objects"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        loss["answer"]
            .as_str()
            .unwrap()
            .contains("convertedObjects"),
        "{loss}"
    );
    let (_, sarif) = check(
        apfkit_example_widgets::lossy::forgetting_the_image,
        &["--cases", "16", "--seed", "3", "-o", "sarif"],
    );
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == WIDGETS
        })
    );
}

/// A webhook that answers what kube-apiserver refuses is reported in its words, with the
/// review sent and the answer got; garbage too. Neither hangs.
#[test]
fn hostile_webhooks_are_reported_in_words() {
    let (code, stdout) = check(unconverted, &["--cases", "4", "-o", "json"]);
    assert_eq!(code, Some(1), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let refused = &report[0]["findings"][0];
    assert_eq!(refused["rule"], "conversion-refused", "{stdout}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("returned invalid converted object at index 1: invalid groupVersion (expected example.com/"),
        "{stdout}"
    );
    assert_eq!(refused["review"]["kind"], "ConversionReview");
    let (code, stdout) = check(garbage, &["--cases", "4"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("the answer is not JSON"), "{stdout}");
}

/// Flags that cannot work are refused before anything is sent.
#[test]
fn a_service_reference_needs_a_webhook_address() {
    let output = apfkit_within(
        &["crd", "check-conversion", "-f", WIDGETS],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("document 1: spec.conversion.webhook.clientConfig.service: give the webhook's address with --webhook URL"),
        "{stderr}"
    );
    let missing = Path::new("/nonexistent/ca.crt").display().to_string();
    let output = apfkit_within(
        &[
            "crd",
            "check-conversion",
            "-f",
            WIDGETS,
            "--webhook",
            "https://127.0.0.1:1/x",
            "--ca",
            &missing,
        ],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--ca /nonexistent/ca.crt"));
}
