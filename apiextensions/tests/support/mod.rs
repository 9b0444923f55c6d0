//! What the tests of apfkit-apiextensions share.

use serde_json::{Value, json};

/// A CRD of namespaced Gadgets of `example.com`, served in `versions` (the first one stored),
/// each with `spec_properties` as the properties of its spec, an integer `status.replicas`,
/// and `subresources`.
pub fn gadgets(versions: &[&str], spec_properties: Value, subresources: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": spec_properties},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        },
    }});
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({
                "name": name,
                "served": true,
                "storage": i == 0,
                "schema": schema,
                "subresources": subresources,
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "scope": "Namespaced",
            "versions": versions,
        },
    })
}
