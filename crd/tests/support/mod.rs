//! What the tests of apfkit-crd share: a `Widget` CRD around a schema.

use apfkit_crd::{CustomResourceDefinition, DefinitionError};
use apfkit_test_support::crd;
use serde_json::{Value, json};

/// A namespaced `Widget` CRD of `example.com`, served and stored in v1, whose
/// `openAPIV3Schema` is `root`.
pub fn definition(root: Value) -> Value {
    crd::definition(
        "widgets.example.com",
        "Widget",
        json!([crd::version("v1", true, root)]),
    )
}

/// That CRD compiled, its root `{type: object, properties: {spec: <spec>}}`.
pub fn widget_crd(spec: Value) -> Result<CustomResourceDefinition, DefinitionError> {
    CustomResourceDefinition::from_value(&definition(json!({
        "type": "object", "properties": {"spec": spec}
    })))
}
