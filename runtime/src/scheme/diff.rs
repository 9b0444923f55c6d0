//! Differences between two JSON values, by field path.

use serde_json::{Map, Value};

/// One changed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Field path, such as `spec.limited.nominalConcurrencyShares`.
    pub path: String,
    /// The value before, as JSON, or `absent`.
    pub before: String,
    /// The value after, as JSON, or `absent`.
    pub after: String,
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "absent".to_owned(), Value::to_string)
}

/// Every leaf where `before` and `after` differ, in field order. An empty object and an absent
/// value are the same.
pub fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk("", Some(before), Some(after), &mut out);
    out
}

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Change>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => objects(path, Some(a), Some(b), out),
        // An object present on one side only: report each of its leaves, not the whole object.
        // An empty one is no difference: Go omits empty maps, so `{}` and absent read the same.
        (Some(Value::Object(a)), None) => objects(path, Some(a), None, out),
        (None, Some(Value::Object(b))) => objects(path, None, Some(b), out),
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{index}]"), Some(x), Some(y), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Change {
            path: path.to_owned(),
            before: show(a),
            after: show(b),
        }),
    }
}

fn objects(
    path: &str,
    before: Option<&Map<String, Value>>,
    after: Option<&Map<String, Value>>,
    out: &mut Vec<Change>,
) {
    let mut keys: Vec<&String> = before
        .into_iter()
        .chain(after)
        .flat_map(Map::keys)
        .collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let child = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        walk(
            &child,
            before.and_then(|m| m.get(key)),
            after.and_then(|m| m.get(key)),
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_leaves_with_paths() {
        let before = json!({
            "spec": {"limited": {"shares": 0, "x": [1, 2]}},
            "metadata": {"annotations": {"k": ""}},
            "gone": {"a": {"b": 1}},
        });
        let after = json!({
            "spec": {"limited": {"shares": 30, "x": [1, 3]}},
            "metadata": {"annotations": {}},
            "empty": {},
        });
        let lines: Vec<String> = changes(&before, &after)
            .iter()
            .map(|c| format!("{}: {} -> {}", c.path, c.before, c.after))
            .collect();
        assert_eq!(
            lines,
            [
                "gone.a.b: 1 -> absent",
                r#"metadata.annotations.k: "" -> absent"#,
                "spec.limited.shares: 0 -> 30",
                "spec.limited.x[1]: 2 -> 3",
            ]
        );
    }
}
