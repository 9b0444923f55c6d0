//! The hub (internal) types, described as a document the generator reads. They are the v1
//! shapes of both groups, which are the superset of every version, as kube-apiserver's internal
//! types are, with these changes:
//! - no `apiVersion`, `kind` or group-version-kind: hub objects belong to no version;
//! - no defaults: defaulting happens in the external version before conversion;
//! - `ServiceReference.port` is a plain required integer, like the internal Go `Port int32`.
//!
//! The limited `nominalConcurrencyShares` stays optional, like the `*int32` of recent
//! kube-apiserver, so that converting an undefaulted v1 object loses nothing.

use serde_json::{Map, Value, json};

use super::{apiregistration, flowcontrol};

/// Definition prefix of the hub flowcontrol types.
pub const FLOWCONTROL: &str = "io.apfkit.hub.flowcontrol.";
/// Definition prefix of the hub apiregistration types.
pub const APIREGISTRATION: &str = "io.apfkit.hub.apiregistration.";

const FLOWCONTROL_V1: &str = "io.k8s.api.flowcontrol.v1.";
const APIREGISTRATION_V1: &str = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.";

/// The hub document: both groups' hub types and the meta schemas they refer to.
pub fn document() -> Value {
    let mut schemas = Map::new();
    for (name, schema) in flowcontrol::schemas("v1")
        .into_iter()
        .chain(apiregistration::schemas("v1"))
    {
        let is_group_type =
            name.starts_with(FLOWCONTROL_V1) || name.starts_with(APIREGISTRATION_V1);
        let mut schema = schema;
        if is_group_type {
            strip_versioning(&mut schema);
        }
        schemas.insert(rename(&name), schema);
    }
    if let Some(port) = schemas.get_mut(&format!("{APIREGISTRATION}ServiceReference")) {
        port["required"] = json!(["port"]);
    }
    let text = rename(&Value::Object(schemas).to_string());
    json!({
        "openapi": "3.0.0",
        "info": { "title": "apfkit hub types", "version": "internal" },
        "components": { "schemas": serde_json::from_str::<Value>(&text).expect("renamed JSON stays JSON") },
    })
}

fn rename(text: &str) -> String {
    text.replace(FLOWCONTROL_V1, FLOWCONTROL)
        .replace(APIREGISTRATION_V1, APIREGISTRATION)
}

/// Removes identity and defaults, keeping `default: {}`, which marks struct values.
fn strip_versioning(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.remove("x-kubernetes-group-version-kind").is_some()
        && let Some(Value::Object(properties)) = map.get_mut("properties")
    {
        properties.remove("apiVersion");
        properties.remove("kind");
    }
    map.remove("x-apfkit-default-on-zero");
    if map.get("default").is_some_and(|d| d != &json!({})) {
        map.remove("default");
    }
    for value in map.values_mut() {
        match value {
            Value::Object(_) => strip_versioning(value),
            Value::Array(items) => items.iter_mut().for_each(strip_versioning),
            _ => {}
        }
    }
}
