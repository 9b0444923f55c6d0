//! What must differ between two servers that answer alike, replaced by placeholders
//! (`../shared/spec/reference.md`, "Comparing answers"): uids and times by `<uid>` and
//! `<time>`, resource versions by their order of first appearance in the transcript (`rv1`,
//! `rv2`, …, so that equal versions stay equal and a newer one stays a new one), and the
//! server's own names for things only it makes.

use std::collections::HashMap;

use serde_json::Value;

/// What a list's own resource version becomes.
const LIST: &str = "<list>";

/// Resource versions numbered in the order a transcript first shows them.
#[derive(Debug, Default, Clone)]
pub struct Versions {
    seen: HashMap<String, usize>,
}

impl Versions {
    /// The placeholder of `version`: `rv` and its order of first appearance; the empty
    /// string and `0` (which mean "any" and "the start" in a request) stay as they are.
    pub fn placeholder(&mut self, version: &str) -> String {
        if version.is_empty() || version == "0" || version == LIST {
            return version.to_owned();
        }
        let next = self.seen.len() + 1;
        let order = *self.seen.entry(version.to_owned()).or_insert(next);
        format!("rv{order}")
    }

    /// `text` (a path or a message) with each resource version already seen replaced by its
    /// placeholder.
    pub fn in_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        // Longest first, so that a version which is a prefix of another is not replaced
        // inside it.
        let mut known: Vec<(&String, &usize)> = self.seen.iter().collect();
        known.sort_by_key(|(version, _)| std::cmp::Reverse(version.len()));
        for (version, order) in known {
            out = replace_number(&out, version, &format!("rv{order}"));
        }
        out
    }
}

/// `text` with each occurrence of the number `from` that is not part of a longer number
/// replaced by `to`.
fn replace_number(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(|c| c.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_digit()) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// Keys whose values are times in every Kubernetes object.
const TIMES: [&str; 7] = [
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "lastUpdateTime",
    "lastHeartbeatTime",
    "renewTime",
];

/// `value` (an object, a list, a `Status`, a watch event) with its times, uids and resource
/// versions replaced by placeholders.
///
/// A list's own `metadata.resourceVersion` is the store's revision when it was read, which
/// writes of other cases running beside it and each server's own writers (kube-apiserver's
/// leases, which etcd's progress notifications carry into its watch cache) move: it becomes
/// `<list>`, compared by presence, without taking a place in the order.
pub fn value(value: &mut Value, versions: &mut Versions) {
    match value {
        Value::Object(map) => {
            if map.get("items").is_some_and(Value::is_array)
                && let Some(Value::Object(metadata)) = map.get_mut("metadata")
                && let Some(version) = metadata.get_mut("resourceVersion")
                && version.as_str().is_some_and(|v| !v.is_empty() && v != "0")
            {
                *version = Value::String(LIST.to_owned());
            }
            for (key, field) in map.iter_mut() {
                match (key.as_str(), &*field) {
                    (key, Value::String(_)) if TIMES.contains(&key) => {
                        *field = Value::String("<time>".to_owned());
                    }
                    ("uid", Value::String(_)) => *field = Value::String("<uid>".to_owned()),
                    // A message may quote a uid or a resource version (a failed
                    // precondition's).
                    ("message", Value::String(text)) => {
                        *field = Value::String(versions.in_text(&uids_in_text(text)));
                    }
                    ("resourceVersion", Value::String(version)) => {
                        *field = Value::String(versions.placeholder(version));
                    }
                    // kube orders managed fields by operation, then time (in seconds), then
                    // manager: two writes a second apart on one server and within one on the
                    // other order alike entries differently. With times replaced, they are
                    // ordered by operation, manager and subresource.
                    ("managedFields", Value::Array(_)) => {
                        self::value(field, versions);
                        if let Value::Array(entries) = field {
                            entries.sort_by_key(|entry| {
                                ["operation", "manager", "subresource"]
                                    .map(|key| entry[key].as_str().unwrap_or_default().to_owned())
                            });
                        }
                    }
                    // A list's continue token carries a resource version in the server's own
                    // encoding: compared by presence.
                    ("continue", Value::String(token)) if !token.is_empty() => {
                        *field = Value::String("<continue>".to_owned());
                    }
                    _ => self::value(field, versions),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                self::value(item, versions);
            }
        }
        _ => {}
    }
}

/// `text` with every uid in it (8-4-4-4-12 hexadecimal digits) replaced by `<uid>`.
pub fn uids_in_text(text: &str) -> String {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    const LENGTH: usize = 36;
    let is_uid = |candidate: &[u8]| {
        let mut at = 0;
        GROUPS.iter().enumerate().all(|(i, &length)| {
            let group = &candidate[at..at + length];
            at += length;
            let dash = i == GROUPS.len() - 1 || candidate[at] == b'-';
            at += 1;
            dash && group.iter().all(u8::is_ascii_hexdigit)
        })
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes.len() - at >= LENGTH
            && text.is_char_boundary(at)
            && is_uid(&bytes[at..at + LENGTH])
        {
            out.push_str("<uid>");
            at += LENGTH;
        } else {
            let c = text[at..].chars().next().expect("a char at a boundary");
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

/// Where `expected` and `answered` differ, one line per place (a path of keys and indexes):
/// a value only one has, or two values that differ (at most 40 lines).
pub fn differences(expected: &Value, answered: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk("", expected, answered, &mut found);
    found.truncate(40);
    found
}

fn walk(path: &str, expected: &Value, answered: &Value, found: &mut Vec<String>) {
    match (expected, answered) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in left {
                let inner = format!("{path}.{key}");
                match right.get(key) {
                    Some(other) => walk(&inner, value, other, found),
                    None => found.push(format!("{inner}: only the reference has {value}")),
                }
            }
            for (key, value) in right {
                if !left.contains_key(key) {
                    found.push(format!("{path}.{key}: only apfkit has {value}"));
                }
            }
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => {
            for (index, (value, other)) in left.iter().zip(right).enumerate() {
                walk(&format!("{path}[{index}]"), value, other, found);
            }
        }
        _ if expected != answered => {
            found.push(format!("{path}: reference {expected}, apfkit {answered}"));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_are_numbered_by_first_appearance_and_equal_ones_stay_equal() {
        let mut versions = Versions::default();
        let mut first = json!({"metadata": {"resourceVersion": "812", "uid": "a-b",
            "creationTimestamp": "2026-01-01T00:00:00Z"}});
        let mut second = json!({"items": [{"metadata": {"resourceVersion": "9000"}},
            {"metadata": {"resourceVersion": "812"}}], "metadata": {"resourceVersion": "0"}});
        value(&mut first, &mut versions);
        value(&mut second, &mut versions);
        assert_eq!(
            first,
            json!({"metadata": {"resourceVersion": "rv1", "uid": "<uid>",
                "creationTimestamp": "<time>"}})
        );
        assert_eq!(
            second,
            json!({"items": [{"metadata": {"resourceVersion": "rv2"}},
                {"metadata": {"resourceVersion": "rv1"}}], "metadata": {"resourceVersion": "0"}})
        );
    }

    #[test]
    fn differences_name_each_place() {
        let expected = json!({"code": 405, "body": {"a": [1, 2], "b": "x"}});
        let answered = json!({"code": 200, "body": {"a": [1, 3], "c": true}});
        assert_eq!(
            differences(&expected, &answered),
            [
                ".body.a[1]: reference 2, apfkit 3",
                ".body.b: only the reference has \"x\"",
                ".body.c: only apfkit has true",
                ".code: reference 405, apfkit 200",
            ]
        );
    }

    #[test]
    fn a_lists_own_version_is_compared_by_presence_and_takes_no_place() {
        let mut versions = Versions::default();
        let mut list = json!({"kind": "FlowSchemaList", "metadata": {"resourceVersion": "90"},
            "items": [{"metadata": {"resourceVersion": "42"}}]});
        value(&mut list, &mut versions);
        assert_eq!(list["metadata"]["resourceVersion"], "<list>");
        assert_eq!(list["items"][0]["metadata"]["resourceVersion"], "rv1");
        let mut object = json!({"metadata": {"resourceVersion": "90"}});
        value(&mut object, &mut versions);
        assert_eq!(object["metadata"]["resourceVersion"], "rv2");
    }

    #[test]
    fn managed_fields_are_ordered_without_their_times() {
        let mut versions = Versions::default();
        let mut object = json!({"metadata": {"managedFields": [
            {"manager": "second", "operation": "Apply", "time": "2026-01-01T00:00:01Z"},
            {"manager": "first", "operation": "Apply", "time": "2026-01-01T00:00:02Z"},
            {"manager": "a", "operation": "Update", "time": "2026-01-01T00:00:00Z"},
        ]}});
        value(&mut object, &mut versions);
        let managers: Vec<&str> = object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["first", "second", "a"]);
    }

    #[test]
    fn uids_in_messages_are_replaced() {
        assert_eq!(
            uids_in_text("record (4a477651-3677-43f0-a508-4fdfe80aeb61). é"),
            "record (<uid>). é"
        );
        assert_eq!(
            uids_in_text("4a477651-3677-43f0-a508"),
            "4a477651-3677-43f0-a508"
        );
        assert_eq!(
            uids_in_text("4a477651x3677-43f0-a508-4fdfe80aeb61"),
            "4a477651x3677-43f0-a508-4fdfe80aeb61"
        );
    }

    #[test]
    fn versions_in_text_are_replaced_only_as_whole_numbers() {
        let mut versions = Versions::default();
        versions.placeholder("81");
        versions.placeholder("812");
        assert_eq!(
            versions.in_text("/api?resourceVersion=812&x=81&y=8123"),
            "/api?resourceVersion=rv2&x=rv1&y=8123"
        );
    }
}
