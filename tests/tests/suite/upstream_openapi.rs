//! Our OpenAPI documents describe the same wire format as the documents Kubernetes serves: each
//! is compared with the newest upstream document of its group-version (schemas, property names,
//! types, formats, references, required lists, list and map semantics, unions, kinds).
//! Descriptions, defaults and enums may differ. The only other differences allowed are the
//! fields of the 1.28+ superset that older releases did not serve yet and 1.37's `required`
//! markers (decision 272), listed exactly below.
//! The meta/v1 schemas are compared with the newest release, since every release shares them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use apfkit_tests::{repo_root, upstream_openapi};
use serde_json::{Map, Value, json};

const META_PREFIX: &str = "io.k8s.apimachinery.";

/// (release, path) of the newest upstream document of `group/version`.
fn newest_upstream(group: &str, version: &str) -> Option<(String, PathBuf)> {
    let mut releases: Vec<(u32, bool, String)> = std::fs::read_dir(upstream_openapi())
        .expect("upstream-openapi is readable")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let minor = name.strip_prefix("1.")?.split('-').next()?.parse().ok()?;
            Some((minor, !name.contains('-'), name))
        })
        .collect();
    releases.sort();
    releases.into_iter().rev().find_map(|(_, _, release)| {
        let path = upstream_openapi()
            .join(&release)
            .join(group)
            .join(format!("{version}.json"));
        path.is_file().then_some((release, path))
    })
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The wire-relevant shape of a schema: what a client or server must agree on.
fn shape(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if let Some(Value::Array(all_of)) = map.get("allOf")
        && let [single] = all_of.as_slice()
    {
        return shape(single);
    }
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "description" | "default" | "enum" | "example" => {}
            k if k.starts_with("x-apfkit-") => {}
            "properties" => {
                let props = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), shape(v)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(key.clone(), shape(value));
            }
            "required" => {
                let set: BTreeSet<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                out.insert(key.clone(), json!(set));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// Differences between two shapes, as `pointer: ours X, upstream Y` lines.
fn diff(pointer: &str, ours: &Value, upstream: &Value, out: &mut Vec<String>) {
    match (ours, upstream) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let p = format!("{pointer}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (Some(_), None) => out.push(format!("{p}: only in ours")),
                    (None, Some(_)) => out.push(format!("{p}: only upstream")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{pointer}/{index}"), x, y, out);
            }
        }
        _ if ours == upstream => {}
        _ => out.push(format!("{pointer}: ours {ours}, upstream {upstream}")),
    }
}

fn schemas(doc: &Value) -> BTreeMap<String, Value> {
    doc["components"]["schemas"]
        .as_object()
        .expect("components.schemas")
        .iter()
        .map(|(k, v)| (k.clone(), shape(v)))
        .collect()
}

fn compare(
    ours: &BTreeMap<String, Value>,
    upstream: &BTreeMap<String, Value>,
    filter: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = ours
        .keys()
        .chain(upstream.keys())
        .filter(|n| filter(n))
        .collect();
    for name in names {
        let p = format!("/components/schemas/{name}");
        match (ours.get(name), upstream.get(name)) {
            (Some(a), Some(b)) => diff(&p, a, b, &mut out),
            (Some(_), None) => out.push(format!("{p}: only in ours")),
            (None, Some(_)) => out.push(format!("{p}: only upstream")),
            (None, None) => {}
        }
    }
    out
}

/// Fields of the 1.28+ superset that releases serving an older version lacked.
fn expected_superset(version: &str) -> Vec<String> {
    let d = |rest: &str| format!("/components/schemas/io.k8s.api.flowcontrol.{version}.{rest}");
    let exempt = vec![
        format!("{}: only in ours", d("ExemptPriorityLevelConfiguration")),
        format!(
            "{}: only in ours",
            d("PriorityLevelConfigurationSpec/properties/exempt")
        ),
        format!(
            "{}: only in ours",
            d(
                "PriorityLevelConfigurationSpec/x-kubernetes-unions/0/fields-to-discriminateBy/exempt"
            )
        ),
    ];
    let borrowing = vec![
        format!(
            "{}: only in ours",
            d("LimitedPriorityLevelConfiguration/properties/borrowingLimitPercent")
        ),
        format!(
            "{}: only in ours",
            d("LimitedPriorityLevelConfiguration/properties/lendablePercent")
        ),
    ];
    let mut expected = match version {
        // 1.27-dev: lending already, exempt not yet.
        "v1alpha1" => exempt,
        // Last served in 1.25: neither.
        "v1beta1" => [exempt, borrowing].concat(),
        // 1.37's `+required` markers (decision 272): ours keep the fields optional, as Go's
        // unchanged types decode and write them.
        "v1" => [
            "FlowSchema",
            "FlowSchemaCondition",
            "LimitedPriorityLevelConfiguration",
            "PriorityLevelConfiguration",
            "PriorityLevelConfigurationCondition",
        ]
        .iter()
        .map(|kind| format!("{}: only upstream", d(&format!("{kind}/required"))))
        .collect(),
        _ => Vec::new(),
    };
    expected.sort();
    expected
}

fn our_documents() -> Vec<(String, String, PathBuf)> {
    let root = repo_root().join("schemas").join("openapi");
    let mut docs = Vec::new();
    for group in ["flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io"] {
        for entry in std::fs::read_dir(root.join(group)).expect("schemas/openapi/<group>") {
            let path = entry.expect("entry").path();
            let version = path.file_stem().unwrap().to_string_lossy().into_owned();
            docs.push((group.to_owned(), version, path));
        }
    }
    docs.sort();
    docs
}

#[test]
fn every_served_version_has_a_document() {
    let found: Vec<String> = our_documents()
        .into_iter()
        .map(|(g, v, _)| format!("{g}/{v}"))
        .collect();
    assert_eq!(
        found,
        [
            "apiregistration.k8s.io/v1",
            "apiregistration.k8s.io/v1beta1",
            "flowcontrol.apiserver.k8s.io/v1",
            "flowcontrol.apiserver.k8s.io/v1alpha1",
            "flowcontrol.apiserver.k8s.io/v1beta1",
            "flowcontrol.apiserver.k8s.io/v1beta2",
            "flowcontrol.apiserver.k8s.io/v1beta3",
        ]
    );
}

#[test]
fn group_schemas_match_the_newest_upstream_document() {
    let mut compared = 0;
    for (group, version, path) in our_documents() {
        let ours = schemas(&read_json(&path));
        // apiregistration v1beta1 was last served in 1.21, before the oldest document we have;
        // its types are identical to v1 (kube-aggregator's `v1beta1/types.go`), so it is compared
        // with v1 renamed.
        let (release, upstream) = match newest_upstream(&group, &version) {
            Some((release, upstream_path)) => (release, schemas(&read_json(&upstream_path))),
            None => {
                assert_eq!(
                    (group.as_str(), version.as_str()),
                    ("apiregistration.k8s.io", "v1beta1"),
                    "no upstream document"
                );
                let (release, v1) =
                    newest_upstream(&group, "v1").expect("apiregistration v1 upstream");
                let renamed = read_json(&v1)
                    .to_string()
                    .replace(".apiregistration.v1.", ".apiregistration.v1beta1.")
                    .replace(r#""version":"v1""#, r#""version":"v1beta1""#);
                (
                    format!("{release} (v1 renamed)"),
                    schemas(&serde_json::from_str(&renamed).unwrap()),
                )
            }
        };
        let mut differences = compare(&ours, &upstream, |name| !name.starts_with(META_PREFIX));
        differences.sort();
        let expected = if group.starts_with("flowcontrol") {
            expected_superset(&version)
        } else {
            Vec::new()
        };
        assert_eq!(
            differences,
            expected,
            "{} against upstream {release}",
            path.display()
        );
        compared += 1;
    }
    assert_eq!(compared, 7);
}

#[test]
fn meta_schemas_match_the_newest_release() {
    let (release, newest) =
        newest_upstream("flowcontrol.apiserver.k8s.io", "v1").expect("flowcontrol v1 upstream");
    let mut upstream = schemas(&read_json(&newest));
    for (_, _, path) in our_documents() {
        let mut ours = schemas(&read_json(&path));
        // DeleteOptions and WatchEvent list every group-version of the serving cluster.
        for name in ["DeleteOptions", "WatchEvent"] {
            for map in [&mut ours, &mut upstream] {
                if let Some(Value::Object(s)) =
                    map.get_mut(&format!("io.k8s.apimachinery.pkg.apis.meta.v1.{name}"))
                {
                    s.remove("x-kubernetes-group-version-kind");
                }
            }
        }
        // 1.36's `ListMeta.shardInfo` (alpha `ShardedListAndWatch`): ours describe
        // k8s-openapi's `ListMeta`, which has it only from its `v1_36` feature (decision 272).
        upstream.remove("io.k8s.apimachinery.pkg.apis.meta.v1.ShardInfo");
        if let Some(Value::Object(properties)) = upstream
            .get_mut("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")
            .and_then(|list_meta| list_meta.get_mut("properties"))
        {
            properties.remove("shardInfo");
        }
        let differences = compare(&ours, &upstream, |name| name.starts_with(META_PREFIX));
        assert!(
            differences.is_empty(),
            "{} against upstream {release}:\n{}",
            path.display(),
            differences.join("\n")
        );
    }
}

#[test]
fn the_comparison_sees_a_changed_type() {
    // A guard on the comparison itself: a changed format is reported.
    let ours = BTreeMap::from([(
        "a.B".to_owned(),
        shape(&json!({"type": "integer", "format": "int32"})),
    )]);
    let upstream = BTreeMap::from([(
        "a.B".to_owned(),
        shape(&json!({"type": "integer", "format": "int64", "description": "x"})),
    )]);
    assert_eq!(
        compare(&ours, &upstream, |_| true),
        vec![r#"/components/schemas/a.B/format: ours "int32", upstream "int64""#]
    );
}
