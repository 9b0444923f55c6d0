//! The typed path (`SCHEME.convert`, `default`, `to_hub` of a JSON input: bytes decoded
//! straight into their version's type) against the value path it stands in for (build the
//! JSON value, report repeated keys as field validation does, `convert_value` /
//! `default_value` / `to_hub_value`, encode the value): the same bytes, warnings and errors for every fixture object,
//! every target version, every encoding and every unknown-field mode, and for documents the
//! typed path hands back to the value path (unknown and repeated fields, lists, errors).

use apfkit_scheme::scheme::{
    self, Encoded, Encoding, Input, Limits, SCHEME, SchemeError, Target, UnknownFields, Warning,
};
use apfkit_tests::{apiservices, bootstrap, flowcontrol_versions, upstream_wire_fixtures};
use serde_json::{Value, json};

const MODES: [UnknownFields; 3] = [
    UnknownFields::Ignore,
    UnknownFields::Warn,
    UnknownFields::Strict,
];

const ENCODINGS: [Encoding; 4] = [
    Encoding::Yaml,
    Encoding::Json,
    Encoding::JsonPretty,
    Encoding::Protobuf,
];

/// The document's value, with its repeated keys reported as the CLI's field validation
/// reported them before the value path.
fn value_and_repeats(
    bytes: &[u8],
    unknown: UnknownFields,
) -> Result<(Value, Vec<Warning>), SchemeError> {
    let document = SCHEME.read_documents(bytes).expect("reads").remove(0);
    let repeated: Vec<Warning> = document
        .duplicate_fields
        .into_iter()
        .map(|path| Warning::DuplicateField { path })
        .collect();
    match unknown {
        UnknownFields::Ignore => Ok((document.value, Vec::new())),
        UnknownFields::Warn => Ok((document.value, repeated)),
        UnknownFields::Strict if repeated.is_empty() => Ok((document.value, Vec::new())),
        UnknownFields::Strict => {
            let listed: Vec<String> = repeated.iter().map(Warning::to_string).collect();
            Err(SchemeError {
                kind: scheme::ErrorKind::UnknownFields,
                path: String::new(),
                message: format!("strict decoding error: {}", listed.join(", ")),
            })
        }
    }
}

/// The value path: repeated keys, then `handle` on the value, then the encoding.
fn through_value(
    bytes: &[u8],
    unknown: UnknownFields,
    encoding: Encoding,
    handle: impl FnOnce(&Value) -> Result<scheme::Converted, SchemeError>,
) -> Result<Encoded, SchemeError> {
    let (value, mut warnings) = value_and_repeats(bytes, unknown)?;
    let converted = handle(&value)?;
    warnings.extend(converted.warnings);
    let bytes = SCHEME.encode_value(&converted.object, encoding)?;
    Ok(Encoded { bytes, warnings })
}

fn targets_of(value: &Value) -> Vec<Target> {
    let group = value["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(g, _)| g);
    let versions = if group == "apiregistration.k8s.io" {
        vec!["v1beta1", "v1"]
    } else {
        flowcontrol_versions()
    };
    versions.iter().map(|v| v.parse().unwrap()).collect()
}

/// Checks every path on `bytes`; returns how many comparisons were made.
fn same_either_way(bytes: &[u8], targets: &[Target]) -> usize {
    let document = SCHEME.parse_json(bytes, &Limits::default()).expect("scans");
    let shown = String::from_utf8_lossy(bytes);
    let mut compared = 0;
    for unknown in MODES {
        for encoding in ENCODINGS {
            for target in targets {
                let typed =
                    SCHEME.convert(Input::Json(document.clone()), target, unknown, encoding);
                let oracle = through_value(bytes, unknown, encoding, |v| {
                    SCHEME.convert_value(v, target, unknown)
                });
                assert_eq!(
                    typed, oracle,
                    "convert to {target}, {unknown:?}, {encoding:?}: {shown}"
                );
                compared += 1;
            }
            let typed = SCHEME.default(Input::Json(document.clone()), unknown, encoding);
            let oracle = through_value(bytes, unknown, encoding, |v| {
                SCHEME.default_value(v, unknown)
            });
            assert_eq!(typed, oracle, "default, {unknown:?}, {encoding:?}: {shown}");
            compared += 1;
        }
        let typed = SCHEME.to_hub(Input::Json(document.clone()), unknown);
        let oracle = value_and_repeats(bytes, unknown).and_then(|(value, mut warnings)| {
            let (objects, more) = SCHEME.to_hub_value(&value, unknown)?;
            warnings.extend(more);
            Ok((objects, warnings))
        });
        assert_eq!(typed, oracle, "to_hub, {unknown:?}: {shown}");
        compared += 1;
    }
    compared
}

/// Every fixture object: the bootstrap configuration in every flowcontrol version, the
/// APIServices, and upstream's own wire fixtures.
fn fixture_objects() -> Vec<Value> {
    let mut objects = Vec::new();
    for version in flowcontrol_versions() {
        let (levels, schemas) = bootstrap(version);
        objects.extend(levels);
        objects.extend(schemas);
    }
    for version in ["v1beta1", "v1"] {
        objects.extend(apiservices(version));
    }
    for entry in std::fs::read_dir(upstream_wire_fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            objects.push(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
        }
    }
    objects
}

#[test]
fn fixture_objects_convert_the_same_either_way() {
    let mut compared = 0;
    for object in fixture_objects() {
        let targets = targets_of(&object);
        compared += same_either_way(&serde_json::to_vec(&object).unwrap(), &targets);
        compared += same_either_way(&serde_json::to_vec_pretty(&object).unwrap(), &targets);
    }
    assert!(compared > 10_000, "only {compared} comparisons");
}

/// Documents the typed path gives back to the value path, and documents it keeps that have
/// something to report (lossy values).
#[test]
fn documents_with_something_to_report_convert_the_same_either_way() {
    let flowcontrol = |version: &str| format!("flowcontrol.apiserver.k8s.io/{version}");
    let level = |version: &str, spec: Value| {
        json!({"apiVersion": flowcontrol(version), "kind": "PriorityLevelConfiguration",
               "metadata": {"name": "p"}, "spec": spec})
    };
    let borrowing = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
        "lendablePercent": 50, "borrowingLimitPercent": 20, "limitResponse": {"type": "Reject"}}});
    let mut cases: Vec<String> = vec![
        // Lossy in the older versions: zero shares.
        level("v1", json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "limitResponse": {"type": "Reject"}}}))
        .to_string(),
        level("v1", borrowing.clone()).to_string(),
        level("v1beta3", json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "limitResponse": {"type": "Reject"}}}))
        .to_string(),
        // Unknown fields, at the top and deep down.
        level("v1", json!({"type": "Exempt", "exempt": {}, "bogus": 1})).to_string(),
        json!({"apiVersion": flowcontrol("v1beta2"), "kind": "FlowSchema", "extra": [1],
               "metadata": {"name": "f", "labelz": {}},
               "spec": {"priorityLevelConfiguration": {"name": "p"},
                        "rules": [{"subjects": [{"kind": "User", "user": {"name": "u", "x": 1}}]}]}})
        .to_string(),
        // A typed list and a v1 List.
        json!({"apiVersion": flowcontrol("v1beta3"), "kind": "PriorityLevelConfigurationList",
               "metadata": {"resourceVersion": "7"}, "items": [level("v1beta3", borrowing.clone())]})
        .to_string(),
        json!({"apiVersion": "v1", "kind": "List",
               "items": [level("v1", borrowing.clone()), level("v1beta2", json!({"type": "Exempt"}))]})
        .to_string(),
        // Errors: a wrong type, a missing kind, an empty apiVersion, a kind not served, not an
        // object at all.
        level("v1", json!({"type": "Limited", "limited": {"nominalConcurrencyShares": "five"}}))
            .to_string(),
        json!({"apiVersion": flowcontrol("v1"), "metadata": {"name": "x"}}).to_string(),
        json!({"apiVersion": "", "kind": "FlowSchema"}).to_string(),
        json!({"apiVersion": "apps/v1", "kind": "Deployment"}).to_string(),
        "[1, 2]".to_owned(),
        // Escaped identity.
        r#"{"apiVersion": "flowcontrol.apiserver.k8s.io\/v1", "kind": "Flow\u0053chema", "metadata": {"name": "e"}}"#.to_owned(),
    ];
    // Repeated keys: at the top, in metadata, in a map of labels.
    for repeated in [
        r#""kind": "FlowSchema", "kind": "FlowSchema""#,
        r#""kind": "FlowSchema", "metadata": {"name": "a", "name": "b"}"#,
        r#""kind": "FlowSchema", "metadata": {"name": "a", "labels": {"k": "1", "k": "2"}}"#,
    ] {
        cases.push(format!(
            r#"{{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", {repeated}, "spec": {{"priorityLevelConfiguration": {{"name": "p"}}}}}}"#
        ));
    }
    for case in &cases {
        let targets: Vec<Target> = [
            "v1",
            "v1beta1",
            "flowcontrol.apiserver.k8s.io/v1beta3",
            "apiregistration.k8s.io/v1",
        ]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
        same_either_way(case.as_bytes(), &targets);
    }
}

/// A lossy conversion found on the typed path is reported with its field path: v1's zero
/// shares read back as 30 in v1beta2.
#[test]
fn the_typed_path_reports_lossy_values() {
    let bytes = br#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
        "limitResponse": {"type": "Reject"}}}}"#;
    let document = SCHEME.parse_json(bytes, &Limits::default()).unwrap();
    let converted = SCHEME
        .convert(
            Input::Json(document),
            &"v1beta2".parse().unwrap(),
            UnknownFields::Strict,
            Encoding::Json,
        )
        .unwrap();
    assert_eq!(
        converted.warnings,
        [Warning::Lossy {
            path: "spec.limited.nominalConcurrencyShares".to_owned(),
            message:
                "0 cannot be kept in flowcontrol.apiserver.k8s.io/v1beta2: it reads back as 30"
                    .to_owned(),
        }]
    );
}
