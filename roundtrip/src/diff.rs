//! What differs between an object and what came back of it, field by field: each value
//! lost, changed or added, at its JSON path.

use serde_json::Value;

/// How a field differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// In the original, not in what came back.
    Lost,
    /// In both, with another value.
    Changed,
    /// Only in what came back.
    Added,
}

impl Change {
    /// The word used in reports: `lost`, `changed`, `added`.
    pub fn word(self) -> &'static str {
        match self {
            Change::Lost => "lost",
            Change::Changed => "changed",
            Change::Added => "added",
        }
    }
}

/// One field that differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Where, as a JSON path from the object's root: `.spec.ports[0].name`, a key that is
    /// not a plain name quoted (`.metadata.labels["app.kubernetes.io/name"]`).
    pub path: String,
    /// How it differs.
    pub change: Change,
    /// The original's value there, if any.
    pub before: Option<Value>,
    /// What came back there, if anything.
    pub after: Option<Value>,
}

/// The fields in which `after` differs from `before`, in the order of a walk of both: the
/// deepest place at which each differs (an object's member by member, a list's item by
/// item when both are lists of the same length, else the whole list).
pub fn differences(before: &Value, after: &Value) -> Vec<Difference> {
    let mut found = Vec::new();
    walk(String::new(), before, after, &mut found);
    found
}

fn walk(path: String, before: &Value, after: &Value, found: &mut Vec<Difference>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, value) in b {
                let here = format!("{path}{}", member(key));
                match a.get(key) {
                    Some(other) => walk(here, value, other, found),
                    None => found.push(Difference {
                        path: here,
                        change: Change::Lost,
                        before: Some(value.clone()),
                        after: None,
                    }),
                }
            }
            for (key, value) in a.iter().filter(|(key, _)| !b.contains_key(*key)) {
                found.push(Difference {
                    path: format!("{path}{}", member(key)),
                    change: Change::Added,
                    before: None,
                    after: Some(value.clone()),
                });
            }
        }
        (Value::Array(b), Value::Array(a)) if b.len() == a.len() => {
            for (i, (b, a)) in b.iter().zip(a).enumerate() {
                walk(format!("{path}[{i}]"), b, a, found);
            }
        }
        (b, a) if !same(b, a) => found.push(Difference {
            path: if path.is_empty() {
                ".".to_owned()
            } else {
                path
            },
            change: Change::Changed,
            before: Some(b.clone()),
            after: Some(a.clone()),
        }),
        _ => {}
    }
}

/// Equal as JSON, numbers by value (`1` and `1.0` are the same number to a JSON reader).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        _ => a == b,
    }
}

/// `.name`, or `["a.b"]` for a key that is not a plain name.
fn member(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!(".{key}")
    } else {
        format!("[{}]", Value::String(key.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_difference_is_named_by_its_path() {
        let before = json!({"spec": {"a": 1, "b": [1, 2], "c": {"x.y": "z"}, "d": [1]}, "n": 1});
        let after =
            json!({"spec": {"b": [1, 3], "c": {"x.y": "w"}, "d": [1, 2], "e": true}, "n": 1.0});
        let found: Vec<(String, Change)> = differences(&before, &after)
            .into_iter()
            .map(|d| (d.path, d.change))
            .collect();
        assert_eq!(
            found,
            vec![
                (".spec.a".to_owned(), Change::Lost),
                (".spec.b[1]".to_owned(), Change::Changed),
                (".spec.c[\"x.y\"]".to_owned(), Change::Changed),
                (".spec.d".to_owned(), Change::Changed),
                (".spec.e".to_owned(), Change::Added),
            ]
        );
        assert!(differences(&before, &before).is_empty());
        assert_eq!(differences(&json!(1), &json!("1"))[0].path, ".");
    }
}
