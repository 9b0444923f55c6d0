//! Field paths: the steps from an object's root to one of its fields or list items, as
//! structured-merge-diff names them (`sigs.k8s.io/structured-merge-diff/fieldpath/element.go`)
//! and as `FieldsV1` writes them (`f:name`, `k:{"key":value}`, `v:value`, `i:index`).

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// One step of a field path.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or an entry of a map.
    Field(String),
    /// The item of an associative list whose key fields have these values (sorted by name).
    Key(Vec<(String, Value)>),
    /// The item of a set (an associative list of scalars) with this value.
    Value(Value),
    /// An item of a list by position (lists the schema does not describe).
    Index(usize),
}

impl PathElement {
    /// A key element; the fields are sorted by name, as structured-merge-diff keeps them.
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The element as a `FieldsV1` key: `f:name`, `k:{...}`, `v:...` or `i:N`, with values
    /// written as Go's `encoding/json` writes them.
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_go_json(&mut out, &Value::String(name.clone()));
                    out.push(':');
                    write_go_json(&mut out, value);
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => {
                let mut out = String::from("v:");
                write_go_json(&mut out, value);
                out
            }
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Reads a `FieldsV1` key.
    ///
    /// # Errors
    ///
    /// A key without a known `x:` prefix, or whose JSON does not parse.
    pub fn deserialize(text: &str) -> Result<Self, PathError> {
        let malformed = |why: &str| PathError(format!("{text:?}: {why}"));
        let (kind, rest) = match (text.get(..1), text.get(1..2), text.get(2..)) {
            (Some(kind), Some(":"), Some(rest)) => (kind, rest),
            _ => return Err(malformed("not a path element")),
        };
        match kind {
            "f" => Ok(PathElement::Field(rest.to_owned())),
            "v" => serde_json::from_str(rest)
                .map(PathElement::Value)
                .map_err(|e| malformed(&e.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(fields)) => Ok(PathElement::key(fields.into_iter().collect())),
                Ok(_) => Err(malformed("a key is a JSON object")),
                Err(e) => Err(malformed(&e.to_string())),
            },
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|e: std::num::ParseIntError| malformed(&e.to_string())),
            _ => Err(malformed("unknown path element type")),
        }
    }
}

/// A field path or `FieldsV1` document that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PathError(pub String);

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    /// Fields, then keys, then values, then indices, as structured-merge-diff orders them.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let order = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if order != Ordering::Equal {
                        return order;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    /// `.name`, `[key="value",...]`, `[=value]` or `[N]`, as structured-merge-diff prints
    /// paths in conflict messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| {
                        let mut text = String::new();
                        write_go_json(&mut text, value);
                        format!("{name}={text}")
                    })
                    .collect();
                write!(f, "[{}]", fields.join(","))
            }
            PathElement::Value(value) => {
                let mut text = String::new();
                write_go_json(&mut text, value);
                write!(f, "[={text}]")
            }
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A whole path, printed as structured-merge-diff prints it (`.spec.rules[0]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

/// Orders JSON values as structured-merge-diff's `value.Compare` does: numbers (floats and
/// integers compared as numbers), strings, booleans, lists, maps, then null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => {
                let (a, b) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                a.partial_cmp(&b).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        (Value::Array(a), Value::Array(b)) => {
            for (a, b) in a.iter().zip(b) {
                let order = compare_values(a, b);
                if order != Ordering::Equal {
                    return order;
                }
            }
            a.len().cmp(&b.len())
        }
        (Value::Object(a), Value::Object(b)) => {
            let mut a: Vec<_> = a.iter().collect();
            let mut b: Vec<_> = b.iter().collect();
            a.sort_by(|x, y| x.0.cmp(y.0));
            b.sort_by(|x, y| x.0.cmp(y.0));
            for ((an, av), (bn, bv)) in a.iter().zip(&b) {
                let order = an.cmp(bn).then_with(|| compare_values(av, bv));
                if order != Ordering::Equal {
                    return order;
                }
            }
            a.len().cmp(&b.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Writes `value` as JSON the way Go's `encoding/json` (and the json-iterator configuration
/// compatible with it, which structured-merge-diff uses) does: `<`, `>`, `&`, U+2028 and
/// U+2029 escaped, map keys sorted.
pub fn write_go_json(out: &mut String, value: &Value) {
    match value {
        Value::String(text) => {
            out.push('"');
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                        out.push_str(&format!("\\u{:04x}", u32::from(c)));
                    }
                    c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let mut fields: Vec<_> = fields.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, item)) in fields.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, &Value::String(name.clone()));
                out.push(':');
                write_go_json(out, item);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elements_round_trip_through_their_fields_v1_keys() {
        let elements = [
            PathElement::Field("spec".into()),
            PathElement::key(vec![
                ("type".into(), json!("Ready")),
                ("name".into(), json!("a<b")),
            ]),
            PathElement::Value(json!("system:masters")),
            PathElement::Value(json!(3)),
            PathElement::Index(7),
        ];
        let keys: Vec<String> = elements.iter().map(PathElement::serialize).collect();
        assert_eq!(
            keys,
            [
                "f:spec",
                r#"k:{"name":"a\u003cb","type":"Ready"}"#,
                r#"v:"system:masters""#,
                "v:3",
                "i:7"
            ]
        );
        for (element, key) in elements.iter().zip(&keys) {
            assert_eq!(&PathElement::deserialize(key).unwrap(), element);
        }
    }

    #[test]
    fn malformed_keys_are_errors_not_panics() {
        for key in ["", "f", "x:1", "k:[1]", "k:{", "v:", "i:-1", "i:x", "é:1"] {
            assert!(PathElement::deserialize(key).is_err(), "{key:?}");
        }
    }

    #[test]
    fn elements_order_as_structured_merge_diff_orders_them() {
        // fieldpath/element.go, PathElement.Compare: field < key < value < index; values:
        // numbers < strings < booleans.
        let mut elements = vec![
            PathElement::Index(0),
            PathElement::Value(json!(true)),
            PathElement::Value(json!("a")),
            PathElement::Value(json!(2.5)),
            PathElement::Value(json!(2)),
            PathElement::key(vec![("name".into(), json!("b"))]),
            PathElement::key(vec![("name".into(), json!("a"))]),
            PathElement::Field("b".into()),
            PathElement::Field("a".into()),
        ];
        elements.sort();
        let printed: Vec<String> = elements.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            [
                ".a",
                ".b",
                r#"[name="a"]"#,
                r#"[name="b"]"#,
                "[=2]",
                "[=2.5]",
                r#"[="a"]"#,
                "[=true]",
                "[0]"
            ]
        );
    }
}
