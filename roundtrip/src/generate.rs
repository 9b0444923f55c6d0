//! Objects generated from a compiled structural schema: every property absent or present,
//! null where the schema allows it, the edges of each type (empty, zero, extreme, long,
//! non-ASCII), enums, int-or-string, maps, lists with their list types, unknown fields
//! where they are preserved, and embedded resources. proptest's strategies, so that an
//! object that shows a loss shrinks to the smallest that still does.

use apfkit_crd::schema::{Schema, Type};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Deeper than this a schema's objects are left empty: recursion stays bounded whatever the
/// schema (a schema is a tree, but it may be deep).
const MAX_DEPTH: usize = 12;
/// The most elements a generated list or map holds (within its schema's bounds).
const MAX_ELEMENTS: usize = 3;

/// The strategy of a value of `schema`.
pub(crate) fn value(schema: &Schema) -> BoxedStrategy<Value> {
    at_depth(schema, 0)
}

fn at_depth(schema: &Schema, depth: usize) -> BoxedStrategy<Value> {
    let value = typed(schema, depth);
    if schema.nullable {
        prop_oneof![9 => value, 1 => Just(Value::Null)].boxed()
    } else {
        value
    }
}

fn typed(schema: &Schema, depth: usize) -> BoxedStrategy<Value> {
    if !schema.enumeration.is_empty() {
        return proptest::sample::select(schema.enumeration.clone()).boxed();
    }
    if schema.int_or_string {
        return prop_oneof![integer(schema), string(schema)].boxed();
    }
    match schema.kind.unwrap_or(Type::Any) {
        Type::Object => object(schema, depth),
        Type::Array => array(schema, depth),
        Type::String => string(schema),
        Type::Integer => integer(schema),
        Type::Number => number(schema),
        Type::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        Type::Any if schema.preserve_unknown_fields => unknown(depth),
        Type::Any => Just(Value::Null).boxed(),
    }
}

/// An object of `schema`: each property present or not (the required ones always), the map
/// of `additionalProperties`, and unknown fields where they are preserved.
fn object(schema: &Schema, depth: usize) -> BoxedStrategy<Value> {
    if depth >= MAX_DEPTH {
        return Just(json!({})).boxed();
    }
    if let Some(values) = &schema.additional_properties {
        let bounds = bounds(schema.min_properties, schema.max_properties);
        let keys = prop_oneof![
            "[a-z]{1,8}",
            Just("with.dots".to_owned()),
            Just("ünïcödé".to_owned())
        ];
        return proptest::collection::btree_map(keys, at_depth(values, depth + 1), bounds)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
            .boxed();
    }
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, property) in &schema.properties {
        let name = name.clone();
        let present = at_depth(property, depth + 1).prop_map({
            let name = name.clone();
            move |value| Some((name.clone(), value))
        });
        if schema.required.contains(&name) {
            fields.push(present.boxed());
        } else {
            fields.push(prop_oneof![1 => Just(None), 3 => present].boxed());
        }
    }
    if schema.embedded_resource {
        fields.push(Just(Some(("apiVersion".to_owned(), json!("example.com/v1")))).boxed());
        fields.push(Just(Some(("kind".to_owned(), json!("Embedded")))).boxed());
        fields.push(Just(Some(("metadata".to_owned(), json!({"name": "embedded"})))).boxed());
    }
    let preserved = if schema.preserve_unknown_fields {
        proptest::collection::btree_map("x-[a-z]{1,6}", unknown(depth + 1), 0..=2).boxed()
    } else {
        Just(Default::default()).boxed()
    };
    (fields, preserved)
        .prop_map(|(fields, preserved)| {
            let mut map: Map<String, Value> = preserved.into_iter().collect();
            map.extend(fields.into_iter().flatten());
            Value::Object(map)
        })
        .boxed()
}

/// A list of `schema`'s items; a `set` without duplicates, a `map` without two items of the
/// same keys.
fn array(schema: &Schema, depth: usize) -> BoxedStrategy<Value> {
    let Some(items) = schema.items.as_deref().filter(|_| depth < MAX_DEPTH) else {
        return Just(json!([])).boxed();
    };
    let bounds = bounds(schema.min_items, schema.max_items);
    let list_type = schema.list_type.clone();
    let keys = schema.list_map_keys.clone();
    proptest::collection::vec(at_depth(items, depth + 1), bounds)
        .prop_map(move |items| {
            let mut kept: Vec<Value> = Vec::with_capacity(items.len());
            for item in items {
                let duplicate = match list_type.as_deref() {
                    Some("set") => kept.contains(&item),
                    Some("map") => kept
                        .iter()
                        .any(|k| keys.iter().all(|key| k.get(key) == item.get(key))),
                    _ => false,
                };
                if !duplicate {
                    kept.push(item);
                }
            }
            Value::Array(kept)
        })
        .boxed()
}

/// A string: from the schema's pattern when it has one, else the edges (empty, a space,
/// non-ASCII, long) and short words; a `date-time` or `date` a valid one as often.
fn string(schema: &Schema) -> BoxedStrategy<Value> {
    let words = prop_oneof![
        3 => "[a-z0-9]{1,10}",
        1 => Just(String::new()),
        1 => Just(" ".to_owned()),
        1 => Just("héllo wörld ✓ 漢字".to_owned()),
        1 => Just("x".repeat(300)),
    ];
    let formatted = match schema.format.as_deref() {
        Some("date-time") => Some(Just("2026-12-02T13:39:25Z".to_owned()).boxed()),
        Some("date") => Some(Just("2026-12-02".to_owned()).boxed()),
        Some("int-or-string") => Some(Just("50%".to_owned()).boxed()),
        _ => None,
    };
    let patterned = schema
        .pattern
        .as_ref()
        .and_then(|(pattern, _)| proptest::string::string_regex(pattern).ok())
        .map(|strategy| strategy.boxed());
    let text = match (patterned, formatted) {
        (Some(pattern), _) => prop_oneof![4 => pattern, 1 => words].boxed(),
        (None, Some(format)) => prop_oneof![4 => format, 1 => words].boxed(),
        (None, None) => words.boxed(),
    };
    text.prop_map(Value::String).boxed()
}

/// An integer: zero, one, minus one, the schema's bounds, the extremes of its format (int32
/// or int64), or any within the bounds.
fn integer(schema: &Schema) -> BoxedStrategy<Value> {
    let (least, most) = match schema.format.as_deref() {
        Some("int32") => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    };
    let low = schema.minimum.map_or(least, |(min, exclusive)| {
        let min = min.ceil() as i64;
        if exclusive {
            min.saturating_add(1)
        } else {
            min
        }
    });
    let high = schema.maximum.map_or(most, |(max, exclusive)| {
        let max = max.floor() as i64;
        if exclusive {
            max.saturating_sub(1)
        } else {
            max
        }
    });
    if low > high {
        return Just(json!(0)).boxed();
    }
    let (low, high) = (low.max(least), high.min(most));
    let edges: Vec<i64> = [0, 1, -1, low, high]
        .into_iter()
        .filter(|n| (low..=high).contains(n))
        .collect();
    let edges = if edges.is_empty() { vec![low] } else { edges };
    prop_oneof![
        2 => proptest::sample::select(edges),
        3 => low..=high,
    ]
    .prop_map(|n| json!(n))
    .boxed()
}

/// A number: whole and fractional, within the schema's bounds when it has them.
fn number(schema: &Schema) -> BoxedStrategy<Value> {
    let low = schema.minimum.map_or(-1e12, |(min, _)| min);
    let high = schema.maximum.map_or(1e12, |(max, _)| max);
    // Bounds the other way round, or not numbers at all (NaN).
    if low.partial_cmp(&high).is_none_or(|order| order.is_gt()) {
        return Just(json!(0)).boxed();
    }
    prop_oneof![
        Just(low),
        Just(high),
        Just(0.5_f64.clamp(low, high)),
        low..=high
    ]
    .prop_map(|n| json!(n))
    .boxed()
}

/// A value no schema describes (under `x-kubernetes-preserve-unknown-fields`): a scalar, or a
/// small object or list of them.
fn unknown(depth: usize) -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    if depth >= MAX_DEPTH {
        return scalar.boxed();
    }
    scalar
        .prop_recursive(2, 8, MAX_ELEMENTS as u32, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..=MAX_ELEMENTS).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z]{1,6}", inner, 0..=MAX_ELEMENTS)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
        .boxed()
}

/// How many elements a list or map of these declared bounds holds: within them, and at most
/// a few more than the least.
fn bounds(min: Option<i64>, max: Option<i64>) -> std::ops::RangeInclusive<usize> {
    let min = usize::try_from(min.unwrap_or(0).max(0))
        .unwrap_or(0)
        .min(64);
    let max = usize::try_from(max.unwrap_or(i64::MAX).max(0))
        .unwrap_or(usize::MAX)
        .min(min + MAX_ELEMENTS);
    min..=max.max(min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn schema(yaml: &str) -> Schema {
        schema_of(serde_saphyr::from_str(yaml).unwrap())
    }

    fn schema_of(open_api_v3_schema: Value) -> Schema {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Thing", "plural": "things"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": open_api_v3_schema}}]},
        });
        let crd = apfkit_crd::CustomResourceDefinition::from_value(&crd).unwrap();
        std::sync::Arc::try_unwrap(crd.versions.into_iter().next().unwrap().schema)
            .unwrap_or_else(|_| panic!("one schema"))
    }

    fn samples(schema: &Schema, count: usize) -> Vec<Value> {
        let mut runner = TestRunner::deterministic();
        let strategy = value(schema);
        (0..count)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect()
    }

    /// Required properties are always there, optional ones sometimes, enums from the list,
    /// integers within their bounds, sets without duplicates.
    #[test]
    fn values_keep_to_their_schema() {
        let schema = schema(
            "{type: object, required: [name], properties: {
               name: {type: string, enum: [a, b]},
               size: {type: integer, minimum: 1, maximum: 5},
               tags: {type: array, x-kubernetes-list-type: set, items: {type: string, enum: [x, y]}},
               labels: {type: object, additionalProperties: {type: string}}}}",
        );
        let values = samples(&schema, 200);
        let mut saw_size = false;
        for value in &values {
            assert!(matches!(value["name"].as_str(), Some("a" | "b")), "{value}");
            if let Some(size) = value.get("size") {
                saw_size = true;
                assert!((1..=5).contains(&size.as_i64().unwrap()), "{value}");
            }
            if let Some(tags) = value.get("tags").and_then(Value::as_array) {
                let mut sorted = tags.clone();
                sorted.sort_by_key(ToString::to_string);
                sorted.dedup();
                assert_eq!(sorted.len(), tags.len(), "{value}");
            }
        }
        assert!(saw_size);
        assert!(values.iter().any(|v| v.get("size").is_none()));
        assert!(
            values
                .iter()
                .any(|v| v["labels"].as_object().is_some_and(|m| !m.is_empty()))
        );
    }

    /// A schema nested deeper than the generator goes still gives a value, in bounded time.
    #[test]
    fn a_deep_schema_is_cut_short() {
        let mut schema = json!({"type": "string"});
        for _ in 0..40 {
            schema = json!({"type": "object", "required": ["a"], "properties": {"a": schema}});
        }
        let values = samples(&schema_of(schema), 5);
        let mut depth = 0;
        let mut node = &values[0];
        while let Some(next) = node.get("a") {
            node = next;
            depth += 1;
        }
        assert!(depth <= MAX_DEPTH, "{depth}");
    }
}
