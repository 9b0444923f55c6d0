//! Prints the JSON Schema of every kind as one JSON object keyed by
//! `<group>/<version>/<Kind>.json`. `cargo xtask codegen` writes them to `schemas/jsonschema`.

use apfkit_types::{Kind, apiregistration, flowcontrol};
use schemars::JsonSchema;
use serde_json::{Map, Value};

fn add<T: JsonSchema + Kind>(out: &mut Map<String, Value>) {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    without_null(&mut value);
    out.insert(
        format!("{}/{}/{}.json", T::GROUP, T::VERSION, T::KIND),
        value,
    );
}

/// Like Kubernetes' own schemas, optional fields are left out rather than set to `null`: schemars
/// allows `null` for every `Option`, which is removed here (`anyOf: [X, null]` becomes `X`, and
/// `type: [T, "null"]` becomes `T`).
fn without_null(value: &mut Value) {
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t.as_str() != Some("null"));
                if let [single] = types.as_slice() {
                    let single = single.clone();
                    map.insert("type".to_owned(), single);
                }
            }
            if let Some(Value::Array(any_of)) = map.get("anyOf")
                && any_of.len() == 2
                && any_of.iter().any(is_null)
            {
                let kept = any_of.iter().find(|v| !is_null(v)).cloned();
                map.remove("anyOf");
                if let Some(Value::Object(kept)) = kept {
                    map.extend(kept);
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

macro_rules! kinds {
    ($out:ident, $module:ident :: $version:ident : $($kind:ident),*) => {
        $( add::<$module::$version::$kind>($out); )*
    };
}

fn main() {
    let mut out = Map::new();
    for_each_version(&mut out);
    println!("{}", Value::Object(out));
}

fn for_each_version(out: &mut Map<String, Value>) {
    macro_rules! flowcontrol {
        ($($version:ident),*) => {
            $( kinds!(out, flowcontrol::$version: FlowSchema, FlowSchemaList, PriorityLevelConfiguration, PriorityLevelConfigurationList); )*
        };
    }
    flowcontrol!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);
    kinds!(out, apiregistration::v1beta1: APIService, APIServiceList);
    kinds!(out, apiregistration::v1: APIService, APIServiceList);
}
