//! What the tests of apfkit-crd share: a `Widget` CRD around a schema.

use apfkit_crd::{CustomResourceDefinition, DefinitionError};
use serde_json::{Value, json};

/// A namespaced `Widget` CRD of `example.com`, served and stored in v1, whose
/// `openAPIV3Schema` is `root`.
pub fn definition(root: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": root}}]
        }
    })
}

/// That CRD compiled, its root `{type: object, properties: {spec: <spec>}}`.
pub fn widget_crd(spec: Value) -> Result<CustomResourceDefinition, DefinitionError> {
    CustomResourceDefinition::from_value(&definition(json!({
        "type": "object", "properties": {"spec": spec}
    })))
}
