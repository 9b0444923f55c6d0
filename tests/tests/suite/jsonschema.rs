//! The JSON Schemas in `schemas/jsonschema` accept every fixture object and reject objects with
//! wrong types, unknown enum values, missing required fields and a wrong apiVersion.

use apfkit_tests::{apiservices, bootstrap, flowcontrol_versions, repo_root};
use serde_json::{Value, json};

fn validator(group: &str, version: &str, kind: &str) -> jsonschema::Validator {
    let path = repo_root()
        .join("schemas")
        .join("jsonschema")
        .join(group)
        .join(version)
        .join(format!("{kind}.json"));
    let schema: Value = serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn flowcontrol(version: &str, kind: &str) -> jsonschema::Validator {
    validator("flowcontrol.apiserver.k8s.io", version, kind)
}

/// Applies `edit` to a copy of `object` and asserts the validator rejects it at `expected_path`.
fn assert_rejected(
    validator: &jsonschema::Validator,
    object: &Value,
    edit: impl FnOnce(&mut Value),
    expected_path: &str,
) {
    let mut bad = object.clone();
    edit(&mut bad);
    let errors: Vec<String> = validator
        .iter_errors(&bad)
        .map(|e| e.instance_path().to_string())
        .collect();
    assert!(
        errors.iter().any(|p| p == expected_path),
        "expected an error at {expected_path}, got {errors:?} for {bad}"
    );
}

#[test]
fn fixtures_are_valid_in_every_version() {
    for version in flowcontrol_versions() {
        let (levels, schemas) = bootstrap(version);
        let plc = flowcontrol(version, "PriorityLevelConfiguration");
        let fs = flowcontrol(version, "FlowSchema");
        for level in &levels {
            let errors: Vec<String> = plc.iter_errors(level).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{version} {}: {errors:?}",
                level["metadata"]["name"]
            );
        }
        for schema in &schemas {
            let errors: Vec<String> = fs.iter_errors(schema).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{version} {}: {errors:?}",
                schema["metadata"]["name"]
            );
        }
        let list = flowcontrol(version, "FlowSchemaList");
        let as_list = json!({"apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"), "kind": "FlowSchemaList", "metadata": {}, "items": schemas});
        assert!(list.is_valid(&as_list), "{version} FlowSchemaList");
    }
    for version in ["v1beta1", "v1"] {
        let v = validator("apiregistration.k8s.io", version, "APIService");
        for service in apiservices(version) {
            assert!(
                v.is_valid(&service),
                "{version} {}",
                service["metadata"]["name"]
            );
        }
    }
}

#[test]
fn wrong_types_are_rejected() {
    let (levels, schemas) = bootstrap("v1");
    let plc = flowcontrol("v1", "PriorityLevelConfiguration");
    assert_rejected(
        &plc,
        &levels[2],
        |o| o["spec"]["limited"]["nominalConcurrencyShares"] = json!("thirty"),
        "/spec/limited/nominalConcurrencyShares",
    );
    assert_rejected(
        &plc,
        &levels[2],
        |o| o["spec"]["limited"]["limitResponse"]["queuing"]["queues"] = json!(1.5),
        "/spec/limited/limitResponse/queuing/queues",
    );
    let fs = flowcontrol("v1", "FlowSchema");
    assert_rejected(
        &fs,
        &schemas[0],
        |o| o["spec"]["matchingPrecedence"] = json!(true),
        "/spec/matchingPrecedence",
    );
    assert_rejected(
        &fs,
        &schemas[0],
        |o| o["spec"]["rules"][0]["resourceRules"][0]["verbs"] = json!("*"),
        "/spec/rules/0/resourceRules/0/verbs",
    );
    assert_rejected(
        &fs,
        &schemas[0],
        |o| o["metadata"]["annotations"] = json!({"a": 1}),
        "/metadata/annotations/a",
    );
}

#[test]
fn unknown_enum_values_are_rejected() {
    let (levels, schemas) = bootstrap("v1beta3");
    let plc = flowcontrol("v1beta3", "PriorityLevelConfiguration");
    assert_rejected(
        &plc,
        &levels[1],
        |o| o["spec"]["type"] = json!("Unlimited"),
        "/spec/type",
    );
    assert_rejected(
        &plc,
        &levels[1],
        |o| o["spec"]["limited"]["limitResponse"]["type"] = json!("Drop"),
        "/spec/limited/limitResponse/type",
    );
    let fs = flowcontrol("v1beta3", "FlowSchema");
    assert_rejected(
        &fs,
        &schemas[0],
        |o| o["spec"]["rules"][0]["subjects"][0]["kind"] = json!("FooKind"),
        "/spec/rules/0/subjects/0/kind",
    );
    assert_rejected(
        &fs,
        &schemas[2],
        |o| o["spec"]["distinguisherMethod"]["type"] = json!("ByGroup"),
        "/spec/distinguisherMethod/type",
    );
}

#[test]
fn missing_required_fields_are_rejected() {
    let (levels, schemas) = bootstrap("v1beta2");
    let fs = flowcontrol("v1beta2", "FlowSchema");
    assert_rejected(
        &fs,
        &schemas[0],
        |o| {
            drop(
                o["spec"]
                    .as_object_mut()
                    .unwrap()
                    .remove("priorityLevelConfiguration"),
            )
        },
        "/spec",
    );
    assert_rejected(
        &fs,
        &schemas[0],
        |o| {
            drop(
                o["spec"]["rules"][0]["subjects"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("kind"),
            )
        },
        "/spec/rules/0/subjects/0",
    );
    assert_rejected(
        &fs,
        &schemas[0],
        |o| {
            drop(
                o["spec"]["rules"][0]["resourceRules"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("verbs"),
            )
        },
        "/spec/rules/0/resourceRules/0",
    );
    let plc = flowcontrol("v1beta2", "PriorityLevelConfiguration");
    assert_rejected(
        &plc,
        &levels[1],
        |o| drop(o["spec"].as_object_mut().unwrap().remove("type")),
        "/spec",
    );
    let api = validator("apiregistration.k8s.io", "v1", "APIService");
    let service = &apiservices("v1")[0];
    assert_rejected(
        &api,
        service,
        |o| drop(o["spec"].as_object_mut().unwrap().remove("versionPriority")),
        "/spec",
    );
}

#[test]
fn another_version_is_rejected() {
    let (levels, _) = bootstrap("v1");
    let v1beta3 = flowcontrol("v1beta3", "PriorityLevelConfiguration");
    assert_rejected(&v1beta3, &levels[0], |_| {}, "/apiVersion");
}

/// A schema of `schemas/jsonschema/<layout>/`, by kubeconform's file name.
fn standalone(layout: &str, name: &str) -> jsonschema::Validator {
    let path = repo_root()
        .join("schemas/jsonschema")
        .join(layout)
        .join(name);
    let schema: Value = serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The strict schemas refuse unknown fields anywhere in an object; the plain ones accept them
/// (as kube-apiserver does, dropping them). Both are named as kubeconform looks them up
/// (`{{ .ResourceKind }}{{ .KindSuffix }}.json`) and accept every fixture.
#[test]
fn strict_standalone_schemas_refuse_unknown_fields() {
    for version in flowcontrol_versions() {
        let (levels, schemas) = bootstrap(version);
        for layout in ["standalone", "standalone-strict"] {
            let plc = standalone(
                layout,
                &format!("prioritylevelconfiguration-flowcontrol-{version}.json"),
            );
            let fs = standalone(layout, &format!("flowschema-flowcontrol-{version}.json"));
            assert!(levels.iter().all(|l| plc.is_valid(l)), "{layout} {version}");
            assert!(schemas.iter().all(|s| fs.is_valid(s)), "{layout} {version}");
            let mut bogus = schemas[0].clone();
            bogus["spec"]["bogus"] = json!(1);
            let mut deep = schemas[0].clone();
            deep["spec"]["priorityLevelConfiguration"]["bogus"] = json!("x");
            let mut meta = levels[0].clone();
            meta["metadata"]["bogus"] = json!(true);
            let strict = layout == "standalone-strict";
            assert_eq!(
                fs.is_valid(&bogus),
                !strict,
                "{layout} {version} spec.bogus"
            );
            assert_eq!(fs.is_valid(&deep), !strict, "{layout} {version} nested");
            assert_eq!(
                plc.is_valid(&meta),
                !strict,
                "{layout} {version} metadata.bogus"
            );
            // Maps and free-form fields stay open.
            let mut labels = levels[0].clone();
            labels["metadata"]["labels"] = json!({"any": "label"});
            labels["metadata"]["managedFields"] =
                json!([{"manager": "m", "fieldsV1": {"f:spec": {}}}]);
            assert!(plc.is_valid(&labels), "{layout} {version} labels");
        }
    }
    for version in ["v1beta1", "v1"] {
        let strict = standalone(
            "standalone-strict",
            &format!("apiservice-apiregistration-{version}.json"),
        );
        assert!(
            apiservices(version).iter().all(|s| strict.is_valid(s)),
            "{version}"
        );
    }
}
