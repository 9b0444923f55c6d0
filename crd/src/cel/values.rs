//! A custom resource's JSON as the CEL values its rules see, as apiserver's
//! `UnstructuredToVal` gives them: declared properties under their escaped names
//! (`k8s.io/apiserver/pkg/cel/escaping.go`), strings of `format: date-time` as timestamps and
//! of `format: duration` as durations, `format: byte` as bytes, and at the resource's root only
//! `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` of the object's envelope.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use cel::Value as Cel;
use cel::objects::{Key, Map, OptionalValue};
use serde_json::Value;

use crate::schema::Schema;

/// CEL's reserved words, which kube-apiserver escapes as `__word__`.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A declared property's name as rules read it, or `None` if rules cannot read it.
pub fn escape(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.-/".contains(c));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c)) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if !name.contains(['.', '-', '/']) && !name.contains("__") {
        return Some(name.to_owned());
    }
    Some(
        name.replace("__", "__underscores__")
            .replace('.', "__dot__")
            .replace('-', "__dash__")
            .replace('/', "__slash__"),
    )
}

/// `value` as a CEL value typed by `schema`; `root` for the resource's root.
pub fn to_cel(value: &Value, schema: &Schema, root: bool) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => string(s, schema),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|item| match &schema.items {
                    Some(item_schema) => to_cel(item, item_schema, false),
                    None => to_cel(item, &Schema::default(), false),
                })
                .collect();
            Cel::List(Arc::new(items))
        }
        Value::Object(map) => {
            let mut entries: HashMap<Key, Cel> = HashMap::with_capacity(map.len());
            for (key, item) in map {
                if root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(property) = schema.properties.get(key) {
                    if let Some(name) = escape(key) {
                        entries.insert(Key::String(Arc::new(name)), to_cel(item, property, false));
                    }
                } else if let Some(values) = &schema.additional_properties {
                    entries.insert(
                        Key::String(Arc::new(key.clone())),
                        to_cel(item, values, false),
                    );
                }
                // Fields kept by `x-kubernetes-preserve-unknown-fields` are not visible to rules.
            }
            if root || schema.embedded_resource {
                envelope(map, &mut entries);
            }
            Cel::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

/// The envelope a rule at a resource's root sees: `apiVersion`, `kind`, and of `metadata`
/// only `name` and `generateName`.
fn envelope(map: &serde_json::Map<String, Value>, entries: &mut HashMap<Key, Cel>) {
    for key in ["apiVersion", "kind"] {
        if let Some(Value::String(text)) = map.get(key) {
            entries.insert(
                Key::String(Arc::new(key.into())),
                Cel::String(Arc::new(text.clone())),
            );
        }
    }
    if let Some(Value::Object(metadata)) = map.get("metadata") {
        let mut meta = HashMap::new();
        for key in ["name", "generateName"] {
            if let Some(Value::String(text)) = metadata.get(key) {
                meta.insert(
                    Key::String(Arc::new(key.into())),
                    Cel::String(Arc::new(text.clone())),
                );
            }
        }
        entries.insert(
            Key::String(Arc::new("metadata".into())),
            Cel::Map(Map {
                map: Arc::new(meta),
            }),
        );
    }
}

fn string(text: &str, schema: &Schema) -> Cel {
    match schema.format.as_deref() {
        Some("date-time") | Some("datetime") => chrono::DateTime::parse_from_rfc3339(text)
            .map(Cel::Timestamp)
            .unwrap_or_else(|_| Cel::String(Arc::new(text.to_owned()))),
        Some("duration") => parse_go_duration(text)
            .map(Cel::Duration)
            .unwrap_or_else(|| Cel::String(Arc::new(text.to_owned()))),
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(|bytes| Cel::Bytes(Arc::new(bytes)))
            .unwrap_or_else(|_| Cel::String(Arc::new(text.to_owned()))),
        _ => Cel::String(Arc::new(text.to_owned())),
    }
}

/// `optionalOldSelf`: `oldSelf` as an optional, empty on a create.
pub fn optional(old: Option<Cel>) -> Cel {
    let optional = match old {
        Some(value) => OptionalValue::of(value),
        None => OptionalValue::none(),
    };
    Cel::Opaque(Arc::new(optional))
}

/// Go's `time.ParseDuration`: `1h30m`, `-1.5s`, `300ms`, `0`.
pub fn parse_go_duration(text: &str) -> Option<chrono::Duration> {
    apfkit_runtime::go_duration::parse_go_duration(text)
        .ok()
        .map(chrono::Duration::nanoseconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_kube_apiserver_escapes_them() {
        assert_eq!(escape("replicas").as_deref(), Some("replicas"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1st"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(
            parse_go_duration("1h30m"),
            Some(chrono::Duration::minutes(90))
        );
        assert_eq!(
            parse_go_duration("-1.5s"),
            Some(chrono::Duration::milliseconds(-1500))
        );
        assert_eq!(parse_go_duration("0"), Some(chrono::Duration::zero()));
        assert_eq!(parse_go_duration("3d"), None);
        assert_eq!(parse_go_duration(""), None);
    }
}
