//! What go-yaml v2 (`go.yaml.in/yaml/v2`, which kube-apiserver reads a YAML body with,
//! through `sigs.k8s.io/yaml`) says of YAML that does not parse: `yaml: line 3: mapping values
//! are not allowed in this context`.
//!
//! Both go-yaml v2 and serde_yaml_ng (unsafe-libyaml) are ports of libyaml, so the problem is
//! the same text; what differs is the line. go-yaml prints the problem mark's 0-based line,
//! plus one for a scanner's error (whose mark has not moved past the line), or, when that is
//! 0, the context mark's 0-based line, and no line when both are 0 (`decode.go`, `fail`).

use serde::Deserialize;

/// libyaml's parser problems; every other problem is its scanner's.
const PARSER_PROBLEMS: [&str; 11] = [
    "did not find expected ',' or ']'",
    "did not find expected ',' or '}'",
    "did not find expected '-' indicator",
    "did not find expected <document start>",
    "did not find expected <stream-start>",
    "did not find expected key",
    "did not find expected node content",
    "found duplicate %TAG directive",
    "found duplicate %YAML directive",
    "found incompatible YAML document",
    "found undefined tag handle",
];

/// go-yaml v2's error for the first document of `text`, when it does not parse; `None` when
/// it parses, or fails for a reason this port has no Go words for.
pub fn go_yaml_error(text: &str) -> Option<String> {
    let document = serde_yaml_ng::Deserializer::from_str(text).next()?;
    let error = match serde_yaml_ng::Value::deserialize(document) {
        // It parses: go-yaml still refuses a collection as a mapping key.
        Ok(value) => return invalid_key(&value).map(|key| format!("yaml: invalid map key: {key}")),
        Err(error) => error,
    };
    let message = error.to_string();
    if message.starts_with("unknown anchor") {
        let name = alias_at(text, error.location()?.index())?;
        return Some(format!("yaml: unknown anchor '{name}' referenced"));
    }
    // libyaml's own errors (serde_yaml_ng's debug form names their kind); serde_yaml_ng's
    // others (limits, merge keys) have no counterpart in go-yaml's words.
    if !format!("{error:?}").starts_with("Error { kind: ") {
        return None;
    }
    let problem = problem(&message);
    let problem_line = error.location().map_or(0, |l| l.line() - 1);
    let line = if problem_line != 0 {
        problem_line + usize::from(!PARSER_PROBLEMS.contains(&problem))
    } else {
        context_line(&message)
    };
    Some(match line {
        0 => format!("yaml: {problem}"),
        line => format!("yaml: line {line}: {problem}"),
    })
}

/// A libyaml error's problem: its text before the marks and the context
/// (`problem at line 2 column 1, while parsing … at line 1 column 4`).
fn problem(message: &str) -> &str {
    let end = [" at line ", " at position ", ", while "]
        .into_iter()
        .filter_map(|cut| message.find(cut))
        .min()
        .unwrap_or(message.len());
    &message[..end]
}

/// The context mark's 0-based line, when the error prints one after its context.
fn context_line(message: &str) -> usize {
    let Some(at) = message.find(", while ") else {
        return 0;
    };
    let context = &message[at..];
    context
        .find(" at line ")
        .and_then(|start| {
            let rest = &context[start + " at line ".len()..];
            rest.split(' ').next()?.parse::<usize>().ok()
        })
        .map_or(0, |line| line - 1)
}

/// The first mapping key of `value` that is a sequence or a mapping, in the order go-yaml
/// decodes (each key before its value), as Go's `%#v` prints it.
fn invalid_key(value: &serde_yaml_ng::Value) -> Option<String> {
    use serde_yaml_ng::Value;
    match value {
        Value::Mapping(members) => members.iter().find_map(|(key, member)| {
            if matches!(key, Value::Sequence(_) | Value::Mapping(_)) {
                Some(go_sharp_v(key))
            } else {
                invalid_key(member)
            }
        }),
        Value::Sequence(items) => items.iter().find_map(invalid_key),
        Value::Tagged(tagged) => invalid_key(&tagged.value),
        _ => None,
    }
}

/// A decoded YAML value as Go's `%#v` prints the `interface{}` go-yaml v2 decodes it into:
/// `[]interface {}{"a", 1}`, `map[interface {}]interface {}{"k":"v"}` (keys sorted as `fmt`
/// sorts them), `interface {}(nil)`.
fn go_sharp_v(value: &serde_yaml_ng::Value) -> String {
    use serde_yaml_ng::Value;
    match value {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => crate::field::go_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => crate::field::go_quote(text),
        Value::Sequence(items) => {
            let items: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Mapping(members) => {
            let mut members: Vec<(String, String)> = members
                .iter()
                .map(|(key, member)| (go_sharp_v(key), go_sharp_v(member)))
                .collect();
            members.sort();
            let members: Vec<String> = members
                .into_iter()
                .map(|(key, member)| format!("{key}:{member}"))
                .collect();
            format!(
                "map[interface {{}}]interface {{}}{{{}}}",
                members.join(", ")
            )
        }
        Value::Tagged(tagged) => go_sharp_v(&tagged.value),
    }
}

/// The name of the alias (`*name`) at byte `index` of `text`.
fn alias_at(text: &str, index: usize) -> Option<&str> {
    let rest = text.get(index..)?.strip_prefix('*')?;
    let end = rest
        .find(|c: char| c.is_whitespace() || ",[]{}".contains(c))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kube-apiserver 1.37 answered for each body (the differential suite's
    /// `yaml_that_does_not_parse_is_refused_in_go_yamls_words`).
    #[test]
    fn errors_are_go_yamls() {
        let head =
            "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n";
        for (body, expected) in [
            ("[1, 2", "yaml: line 1: did not find expected ',' or ']'"),
            ("{a: 1", "yaml: line 1: did not find expected ',' or '}'"),
            (
                "a: [1, 2\n",
                "yaml: line 1: did not find expected ',' or ']'",
            ),
            (
                "a: b: c",
                "yaml: mapping values are not allowed in this context",
            ),
            ("key: 'unclosed", "yaml: found unexpected end of stream"),
            (
                "- a\nb: c",
                "yaml: line 1: did not find expected '-' indicator",
            ),
            (
                "a:\n  - b\n c: d",
                "yaml: line 2: did not find expected key",
            ),
            ("@at", "yaml: found character that cannot start any token"),
            ("a: &x 1\nb: *y", "yaml: unknown anchor 'y' referenced"),
            (
                "%YAML 1.1\n%YAML 1.1\n---\na: 1",
                "yaml: line 1: found duplicate %YAML directive",
            ),
            (
                "a: |\n  text\n b",
                "yaml: line 2: did not find expected key",
            ),
            (
                "a:\n\tb: 1",
                "yaml: line 2: found character that cannot start any token",
            ),
        ] {
            assert_eq!(go_yaml_error(body).as_deref(), Some(expected), "{body:?}");
        }
        for (body, expected) in [
            ("[1, 2", "yaml: line 4: could not find expected ':'"),
            (
                "a: [1, 2\n",
                "yaml: line 3: did not find expected ',' or ']'",
            ),
            (
                "a: b: c",
                "yaml: line 3: mapping values are not allowed in this context",
            ),
            (
                "key: \"unclosed",
                "yaml: line 3: found unexpected end of stream",
            ),
            (
                "a:\n  - b\n c: d",
                "yaml: line 4: did not find expected key",
            ),
            (
                "\t- tab",
                "yaml: line 3: found a tab character that violates indentation",
            ),
        ] {
            let body = format!("{head}{body}");
            assert_eq!(go_yaml_error(&body).as_deref(), Some(expected), "{body:?}");
        }
        // A collection as a mapping key: go-yaml's own refusal.
        assert_eq!(
            go_yaml_error("[a, b]: c").as_deref(),
            Some(r#"yaml: invalid map key: []interface {}{"a", "b"}"#)
        );
        assert_eq!(
            go_yaml_error(&format!("{head}spec:\n  ? {{x: 1, a: [2]}}\n  : v")).as_deref(),
            Some(
                r#"yaml: invalid map key: map[interface {}]interface {}{"a":[]interface {}{2}, "x":1}"#
            )
        );
        // What parses, and the documents after the first: no error.
        for fine in ["a: 1", "{a: 1}", "---\na: 1\n--- x: [", ""] {
            assert_eq!(go_yaml_error(fine), None, "{fine:?}");
        }
    }
}
