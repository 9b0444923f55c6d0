//! A test oracle: kube-apiserver's structural defaulting, applied to plain JSON with the CRD's
//! schema, written after `structuraldefaulting.Default`
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm.go`): in an
//! object, every listed property that is missing (or `null` where the schema does not allow
//! `null`) gets a copy of its default, then every property is defaulted in turn; array items
//! and `additionalProperties` values are defaulted with their schema. The generated
//! `ApplyDefaults` must give the same result.

use serde_json::Value;

/// Defaults `value` in place as kube-apiserver does with `schema` (an `openAPIV3Schema`).
pub fn apply(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, property) in properties.into_iter().flatten() {
                let Some(default) = property.get("default") else {
                    continue;
                };
                let missing = map
                    .get(name)
                    .is_none_or(|v| v.is_null() && !nullable(property));
                if missing {
                    map.insert(name.clone(), default.clone());
                }
            }
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            for (name, item) in map.iter_mut() {
                if let Some(property) = properties.and_then(|p| p.get(name)) {
                    apply(item, property);
                } else if let Some(values) = additional {
                    if item.is_null() && !nullable(values) {
                        *item = values.get("default").cloned().unwrap_or(Value::Null);
                    }
                    apply(item, values);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items") else {
                return;
            };
            for item in items {
                if item.is_null() && !nullable(item_schema) {
                    *item = item_schema.get("default").cloned().unwrap_or(Value::Null);
                }
                apply(item, item_schema);
            }
        }
        _ => {}
    }
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// The `openAPIV3Schema` of `version` in a CRD manifest (the last YAML document that is one).
pub fn schema_of(crd_yaml: &str, version: &str) -> Value {
    let documents: Vec<Value> = serde_saphyr::from_multiple(crd_yaml).expect("the fixture parses");
    documents
        .iter()
        .filter_map(|d| d.pointer("/spec/versions")?.as_array())
        .flatten()
        .find(|v| v["name"] == version)
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .cloned()
        .unwrap_or_else(|| panic!("the fixture has version {version}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_oracle_follows_upstream_order() {
        let schema = json!({
            "properties": {
                "a": {"type": "object", "default": {}, "properties": {"x": {"type": "integer", "default": 1}}},
                "b": {"type": "string", "default": "b", "nullable": true},
                "c": {"type": "string", "default": "c"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"y": {"type": "string", "default": "y"}}}}
            }
        });
        let mut value = json!({"b": null, "c": null, "list": [{}, {"y": "kept"}]});
        super::apply(&mut value, &schema);
        assert_eq!(
            value,
            json!({"a": {"x": 1}, "b": null, "c": "c", "list": [{"y": "y"}, {"y": "kept"}]})
        );
    }
}
