//! The input of the codec benchmarks: the bootstrap FlowSchemas (the dispatcher's record, read
//! at start, not embedded), repeated with distinct names and uids, as one FlowSchemaList.

use serde_json::Value;

/// A FlowSchemaList of `objects` items; `stamp` sets more of each item's metadata.
pub fn flow_schema_list(objects: usize, stamp: impl Fn(usize, &mut Value)) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../dispatcher/data/flowschemas.yaml"
    );
    let text = std::fs::read_to_string(path).expect("dispatcher/data/flowschemas.yaml");
    let schemas: Vec<Value> = serde_saphyr::from_multiple(&text).expect("fixture parses");
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
