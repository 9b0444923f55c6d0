//! Validating one custom resource, with and without its CEL rules, in one run: the same
//! schema and object, once with the schema's `x-kubernetes-validations` and once with them
//! removed, so the ratio is the price of CEL per object.
//!
//! `cargo bench -p apfkit-crd --bench validate`

#![recursion_limit = "256"]

use std::sync::LazyLock;

use apfkit_crd::{CustomResourceDefinition, Version};
use serde_json::{Value, json};

/// A widget-like CRD: a spec with a bounded list of ports (a list-type map), a replicas
/// range and a selector, with five rules (scalar, list, transition-free cross-field).
fn definition(with_rules: bool) -> Value {
    let rules = |rules: Value| if with_rules { rules } else { json!([]) };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["selector"],
                            "x-kubernetes-validations": rules(json!([
                                {"rule": "self.minReplicas <= self.replicas", "message": "replicas below the minimum"},
                                {"rule": "self.ports.all(p, p.port > 1024 || p.privileged)"},
                            ])),
                            "properties": {
                                "selector": {"type": "string", "maxLength": 63, "pattern": "^[a-z]+$",
                                    "x-kubernetes-validations": rules(json!([{"rule": "self.startsWith('app')"}]))},
                                "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
                                "minReplicas": {"type": "integer", "minimum": 0},
                                "ports": {
                                    "type": "array", "maxItems": 16,
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "x-kubernetes-validations": rules(json!([{"rule": "self.map(p, p.port).isSorted()"}])),
                                    "items": {
                                        "type": "object",
                                        "required": ["name", "port"],
                                        "properties": {
                                            "name": {"type": "string", "maxLength": 15},
                                            "port": {"type": "integer", "minimum": 1, "maximum": 65535,
                                                "x-kubernetes-validations": rules(json!([{"rule": "self != 22"}]))},
                                            "privileged": {"type": "boolean", "default": false}
                                        }
                                    }
                                }
                            }
                        }
                    }
                }}
            }]
        }
    })
}

fn object() -> Value {
    let ports: Vec<Value> = (0..8)
        .map(|i| json!({"name": format!("p{i}"), "port": 2000 + i}))
        .collect();
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"selector": "apps", "replicas": 5, "minReplicas": 2, "ports": ports}
    })
}

fn compiled(with_rules: bool) -> CustomResourceDefinition {
    CustomResourceDefinition::from_value(&definition(with_rules)).unwrap()
}

static WITH_CEL: LazyLock<CustomResourceDefinition> = LazyLock::new(|| compiled(true));
static WITHOUT_CEL: LazyLock<CustomResourceDefinition> = LazyLock::new(|| compiled(false));

fn admit(version: &Version) -> usize {
    let mut object = object();
    let admission = version.admit(&mut object, None);
    assert!(admission.errors.is_empty(), "{:?}", admission.errors);
    admission.pruned.len()
}

/// Prune, default, schema and list types, without rules (the baseline).
#[divan::bench]
fn schema_only() -> usize {
    admit(&WITHOUT_CEL.versions[0])
}

/// The same, with the five CEL rules evaluated (one of them on each of eight ports).
#[divan::bench]
fn schema_and_cel() -> usize {
    admit(&WITH_CEL.versions[0])
}

fn main() {
    divan::main();
}
