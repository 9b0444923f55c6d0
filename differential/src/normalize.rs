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

    /// `line` (a request's method and path) with its `resourceVersion` parameter as a
    /// placeholder (a version not seen yet takes the next place) and its `continue` token,
    /// which carries a resource version in the server's own encoding, as `<continue>`, and an
    /// OpenAPI document's `hash` as `<hash>`.
    pub fn in_path(&mut self, line: &str) -> String {
        let Some((before, query)) = line.split_once('?') else {
            return line.to_owned();
        };
        let parameters: Vec<String> = query
            .split('&')
            .map(|parameter| match parameter.split_once('=') {
                Some(("continue", token)) if !token.is_empty() => "continue=<continue>".to_owned(),
                // An OpenAPI v3 document's hash, each server's own (its index's URLs).
                Some(("hash", hash))
                    if hash.len() == 128 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    "hash=<hash>".to_owned()
                }
                Some(("resourceVersion", version)) => {
                    format!("resourceVersion={}", self.placeholder(version))
                }
                _ => parameter.to_owned(),
            })
            .collect();
        format!("{before}?{}", parameters.join("&"))
    }

    /// `text` (a message) with each resource version already seen replaced by its
    /// placeholder. Only versions of three digits or more: the objects a server makes as it
    /// starts have small ones, which would otherwise be found in any number of a message
    /// (a regular expression's `[0-9]`, a length limit).
    pub fn in_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        // Longest first, so that a version which is a prefix of another is not replaced
        // inside it.
        let mut known: Vec<(&String, &usize)> = self
            .seen
            .iter()
            .filter(|(version, _)| version.len() >= 3)
            .collect();
        known.sort_by_key(|(version, _)| std::cmp::Reverse(version.len()));
        for (version, order) in known {
            out = replace_number(&out, version, &format!("rv{order}"));
        }
        out
    }
}

/// `text` with each occurrence of the number `from` that is not part of a longer word
/// replaced by `to`: not beside a letter or digit, nor a `:` or `.` that would make it part
/// of an address (`2001:db8::ffff`, `10.0.0.123`); a `:` that ends a clause
/// (`revision=812: why`) is no address.
fn replace_number(text: &str, from: &str, to: &str) -> String {
    let joined = |c: char| c.is_ascii_alphanumeric() || c == ':' || c == '.';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let mut following = rest[at + from.len()..].chars();
        let after = following.next();
        let clause_ends = after == Some(':') && following.next().is_none_or(|c| c == ' ');
        out.push_str(&rest[..at]);
        if before.is_some_and(joined) || (after.is_some_and(joined) && !clause_ends) {
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
                    // precondition's), or print an object with its times.
                    ("message", Value::String(text)) => {
                        *field =
                            Value::String(versions.in_text(&times_in_text(&uids_in_text(text))));
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
                    // An apply's conflicts: structured-merge-diff lists each manager's fields
                    // in its order, but the managers in Go's map order, random from one
                    // request to the next (`ConflictsFromManagers`); sorted by manager, each
                    // one's fields kept in order.
                    ("causes", Value::Array(causes))
                        if !causes.is_empty()
                            && causes.iter().all(|c| c["reason"] == "FieldManagerConflict") =>
                    {
                        self::value(field, versions);
                        if let Value::Array(causes) = field {
                            causes.sort_by_key(|cause| {
                                cause["message"].as_str().unwrap_or_default().to_owned()
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
    replace_matches(text, "<uid>", |rest| {
        shape_length(rest, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
    })
}

/// `text` with every time in it as Kubernetes writes times (RFC 3339 in UTC, with or without
/// a fraction of a second: a `Time` or a `MicroTime`) replaced by `<time>`. A message may
/// print an object whole, its managed fields' times included.
pub fn times_in_text(text: &str) -> String {
    replace_matches(text, "<time>", |rest| {
        let seconds = shape_length(rest, "9999-99-99T99:99:99")?;
        let mut length = seconds;
        if rest[length..].starts_with('.') {
            let digits = rest[length + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits > 0 {
                length += 1 + digits;
            }
        }
        rest[length..].starts_with('Z').then_some(length + 1)
    })
}

/// The length of the start of `text` that has `shape`, where `x` stands for a hexadecimal
/// digit, `9` for a decimal one and any other character for itself.
fn shape_length(text: &str, shape: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (bytes.len() >= shape.len()
        && shape
            .bytes()
            .zip(bytes)
            .all(|(expected, &got)| match expected {
                b'x' => got.is_ascii_hexdigit(),
                b'9' => got.is_ascii_digit(),
                _ => got == expected,
            }))
    .then_some(shape.len())
}

/// `text` with each stretch that `matches` (the length of the match at the start of what it
/// is given) replaced by `placeholder`, scanning from left to right.
fn replace_matches(
    text: &str,
    placeholder: &str,
    matches: impl Fn(&str) -> Option<usize>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match matches(rest) {
            Some(length) => {
                out.push_str(placeholder);
                rest = &rest[length..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
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
    fn an_applys_conflicts_are_ordered_by_manager_each_ones_fields_kept_in_order() {
        let conflict = |manager: &str, field: &str| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{manager}\""),
                "field": field})
        };
        let mut status = json!({"kind": "Status", "details": {"causes": [
            conflict("unknown", ".spec.b"), conflict("two", ".spec.z"),
            conflict("unknown", ".spec.a"), conflict("two", ".spec.y")]}});
        value(&mut status, &mut Versions::default());
        assert_eq!(
            status["details"]["causes"],
            json!([
                conflict("two", ".spec.z"),
                conflict("two", ".spec.y"),
                conflict("unknown", ".spec.b"),
                conflict("unknown", ".spec.a")
            ])
        );
        // Causes of other kinds keep their order.
        let mut invalid = json!({"details": {"causes": [{"reason": "FieldValueInvalid",
            "message": "b"}, {"reason": "FieldValueInvalid", "message": "a"}]}});
        let before = invalid.clone();
        value(&mut invalid, &mut Versions::default());
        assert_eq!(invalid, before);
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
    fn a_version_that_ends_a_clause_is_replaced_and_an_address_is_not() {
        let mut versions = Versions::default();
        let mut seen = json!({"metadata": {"resourceVersion": "812"}});
        value(&mut seen, &mut versions);
        assert_eq!(
            versions.in_text("object not decodable revision=812: why; at 10.0.0.812 or ::812:1"),
            "object not decodable revision=rv1: why; at 10.0.0.812 or ::812:1"
        );
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
    fn request_lines_number_their_versions_and_hide_continue_tokens() {
        let mut versions = Versions::default();
        versions.placeholder("812");
        assert_eq!(
            versions.in_path("GET /api/v1/namespaces?limit=1&continue=eyJ2Ijo&resourceVersion=812"),
            "GET /api/v1/namespaces?limit=1&continue=<continue>&resourceVersion=rv1"
        );
        assert_eq!(
            versions.in_path("GET /a?resourceVersion=7&continue="),
            "GET /a?resourceVersion=rv2&continue="
        );
        assert_eq!(
            versions.in_path("GET /a?resourceVersion=0"),
            "GET /a?resourceVersion=0"
        );
        assert_eq!(versions.in_path("GET /k8s.io"), "GET /k8s.io");
    }

    #[test]
    fn times_in_messages_are_replaced() {
        assert_eq!(
            times_in_text(r#"{"time":"2026-11-30T03:45:13Z","t":"2026-11-30T03:45:13.123456Z"}"#),
            r#"{"time":"<time>","t":"<time>"}"#
        );
        assert_eq!(times_in_text("2026-11-30T03:45:13"), "2026-11-30T03:45:13");
        assert_eq!(
            times_in_text("2026-11-30T03:45:13.Z é"),
            "2026-11-30T03:45:13.Z é"
        );
    }

    #[test]
    fn versions_in_text_are_replaced_only_as_whole_numbers() {
        let mut versions = Versions::default();
        versions.placeholder("810");
        versions.placeholder("8100");
        versions.placeholder("9");
        assert_eq!(
            versions.in_text("ResourceVersion in precondition: 8100, in object meta: 810 (81000)"),
            "ResourceVersion in precondition: rv2, in object meta: rv1 (81000)"
        );
        assert_eq!(versions.in_text("regex '[a-z0-9]'"), "regex '[a-z0-9]'");
        // Parts of addresses stay.
        versions.placeholder("2001");
        versions.placeholder("123");
        assert_eq!(
            versions.in_text("(e.g. 10.9.8.123 or 2001:db8::ffff), version 2001."),
            "(e.g. 10.9.8.123 or 2001:db8::ffff), version 2001."
        );
        assert_eq!(versions.in_text("versions 2001, 123"), "versions rv4, rv5");
    }
}
