//! The ConversionReview handler over the Widget scheme: fixtures from kube-core and in the
//! shape of Kubernetes' documentation, and hostile bodies.

use apfkit_example_widgets::api::SCHEME;
use apfkit_runtime::review::{ReviewError, review};
use serde_json::{Value, json};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/reviews/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn answer(body: &[u8]) -> Value {
    serde_json::from_slice(&review(&SCHEME, body).unwrap()).unwrap()
}

#[test]
fn a_review_converts_every_object_in_order_and_echoes_uid_and_version() {
    for (name, review_version, uid) in [
        (
            "widgets-v1.json",
            "apiextensions.k8s.io/v1",
            "705ab4f5-6393-11e8-b7cc-42010a800002",
        ),
        (
            "widgets-v1beta1.json",
            "apiextensions.k8s.io/v1beta1",
            "0b3c5a90-7d1e-4c8e-9b1a-2f6d3e4c5b6a",
        ),
    ] {
        let answer = answer(&fixture(name));
        assert_eq!(answer["apiVersion"], review_version, "{name}");
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(answer["response"]["uid"], uid);
        assert_eq!(answer["response"]["result"], json!({"status": "Success"}));
        let converted = answer["response"]["convertedObjects"].as_array().unwrap();
        assert_eq!(converted.len(), 2);
        assert_eq!(
            converted[0],
            json!({
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {
                    "name": "local",
                    "namespace": "default",
                    "uid": "8d1ce0a8-1b2f-4c53-9d3e-1e5f1a7f0001",
                    "creationTimestamp": "2024-05-01T10:00:00Z"
                },
                "spec": {
                    "replicas": 3,
                    "image": {"repository": "registry.local:5000/widget", "tag": "2.1"},
                    "paused": true
                },
                "status": {"readyReplicas": 2}
            })
        );
        assert_eq!(converted[1]["metadata"]["name"], "remote");
        assert_eq!(
            converted[1]["spec"]["image"],
            json!({"repository": "widget"})
        );
    }
}

#[test]
fn one_failing_object_fails_the_review_and_converts_nothing() {
    let answer = answer(&fixture("widgets-one-bad.json"));
    let response = &answer["response"];
    assert_eq!(response["uid"], "c2a7d1e0-5f4b-4a3c-8e2d-9b1f0a6c7d8e");
    assert_eq!(response["convertedObjects"], json!([]));
    assert_eq!(response["result"]["status"], "Failure");
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("objects[1] (Widget ns/b): spec.replicas: invalid type: string \"two\""),
        "{message}"
    );
}

#[test]
fn kube_cores_captured_review_of_an_unserved_group_fails_with_its_uid() {
    let answer = answer(&fixture("kube-core-simple.json"));
    let response = &answer["response"];
    assert_eq!(response["uid"], "f263987e-4d58-465a-9195-bf72a1c83623");
    assert_eq!(response["result"]["status"], "Failure");
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.contains("objects[0] (ConfigMapGenerator default/kek): no kind \"ConfigMapGenerator\" in apiVersion \"nullable.se/v2\""),
        "{message}"
    );
}

#[test]
fn answers_decode_as_kube_cores_review_type() {
    for name in ["widgets-v1.json", "widgets-one-bad.json"] {
        let bytes = review(&SCHEME, &fixture(name)).unwrap();
        let parsed: kube_core::conversion::ConversionReview =
            serde_json::from_slice(&bytes).unwrap();
        let response = parsed.response.unwrap();
        assert!(!response.uid.is_empty());
        let expected = if name.contains("bad") {
            "Failure"
        } else {
            "Success"
        };
        assert_eq!(format!("{:?}", response.result.status.unwrap()), expected);
    }
}

#[test]
fn bodies_that_are_not_reviews_are_errors_never_panics() {
    let file = fixture("widgets-v1.json");
    let good = file.trim_ascii_end();
    for end in 0..good.len() {
        let result = review(&SCHEME, &good[..end]);
        assert!(
            matches!(result, Err(ReviewError::Malformed(_))),
            "prefix {end}: {result:?}"
        );
    }
    let deep = format!(
        r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[{}{}]}}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let cases: [(&[u8], &str); 9] = [
        (b"", "EOF"),
        (b"\xff\xfe garbage", "expected a JSON object"),
        (b"[]", "expected a JSON object"),
        (deep.as_bytes(), "recursion limit"),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"a","uid":"b","desiredAPIVersion":"v1","objects":[]}}"#,
            "duplicate field `uid`",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":["u","example.com/v1",[]]}"#,
            "request: expected a JSON object",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"v1","objects":[]}}"#,
            "missing field `uid`",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":7,"desiredAPIVersion":"v1"}}"#,
            "invalid type: integer",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"v1","objects":{}}}"#,
            "invalid type: map",
        ),
    ];
    for (body, expected) in cases {
        match review(&SCHEME, body) {
            Err(ReviewError::Malformed(message)) => {
                assert!(message.contains(expected), "{message}")
            }
            other => panic!(
                "{}: {other:?}",
                String::from_utf8_lossy(&body[..body.len().min(80)])
            ),
        }
    }
}

#[test]
fn other_reviews_and_empty_requests_are_refused() {
    for (body, expected) in [
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}),
            "unsupported review \"admission.k8s.io/v1\" \"AdmissionReview\"",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v2", "kind": "ConversionReview"}),
            "unsupported review",
        ),
        (
            json!({"kind": "ConversionReview"}),
            "unsupported review \"\"",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
            "has no request",
        ),
    ] {
        let err = review(&SCHEME, body.to_string().as_bytes()).unwrap_err();
        assert!(err.to_string().contains(expected), "{err}");
    }
    // Go writes an empty object list as null.
    let empty = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": null}});
    let answer = answer(empty.to_string().as_bytes());
    assert_eq!(answer["response"]["convertedObjects"], json!([]));
    assert_eq!(answer["response"]["result"]["status"], "Success");
}

#[test]
fn upstreams_agnhost_review_yaml_is_refused_and_its_json_answered_with_its_uid() {
    let yaml = fixture("agnhost-crontab-v1.yaml");
    assert!(matches!(
        review(&SCHEME, &yaml),
        Err(ReviewError::Malformed(_))
    ));
    let answer = answer(&fixture("agnhost-crontab-v1.json"));
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    let response = &answer["response"];
    assert_eq!(response["uid"], "0000-0000-0000-0000");
    assert_eq!(response["result"]["status"], "Failure");
    assert!(
        response["result"]["message"]
            .as_str()
            .unwrap()
            .starts_with("objects[0] (CronTab my-new-cron-object): no kind \"CronTab\" in apiVersion \"stable.example.com/v1\"")
    );
}
