//! Prints the JSON Schema of every kind as one JSON object keyed by
//! `<group>/<version>/<Kind>.json`. `cargo xtask codegen` writes them to `schemas/jsonschema`.

use apfkit_types::{Kind, apiregistration, flowcontrol};
use schemars::JsonSchema;
use serde_json::{Map, Value};

fn add<T: JsonSchema + Kind>(out: &mut Map<String, Value>) {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    out.insert(
        format!("{}/{}/{}.json", T::GROUP, T::VERSION, T::KIND),
        schema.to_value(),
    );
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
