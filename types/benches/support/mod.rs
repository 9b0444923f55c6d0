//! The input of the codec benchmarks: the bootstrap FlowSchemas (`apfkit_types::bootstrap`),
//! repeated with distinct names and uids, as one FlowSchemaList.

use serde_json::Value;

/// A FlowSchemaList of `objects` items; `stamp` sets more of each item's metadata.
pub fn flow_schema_list(objects: usize, stamp: impl Fn(usize, &mut Value)) -> Value {
    let schemas: Vec<Value> =
        serde_saphyr::from_multiple(apfkit_types::bootstrap::FLOW_SCHEMAS_YAML)
            .expect("the bootstrap flow schemas parse");
    let items: Vec<Value> = (0..objects)
        .map(|i| {
            let mut object = schemas[i % schemas.len()].clone();
            object["metadata"]["name"] = Value::from(format!("schema-{i}"));
            object["metadata"]["uid"] = Value::from(format!("00000000-0000-0000-0000-{i:012}"));
            stamp(i, &mut object["metadata"]);
            object
        })
        .collect();
    serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchemaList",
        "metadata": {"resourceVersion": "12345"},
        "items": items,
    })
}
