//! `go_yaml` against what Go writes: `tests/data/go-yaml-cases.jsonl` holds, a line each,
//! `[value, yaml]` as gnostic-models v0.7.0 (on go.yaml.in/yaml/v3 v3.0.4, the versions
//! kube-apiserver 1.37 builds with) writes the value's `Any.yaml`. The values are strings
//! every rule of the emitter's style choice meets (quoting, resolution to other types,
//! timestamps, line breaks, indicators, escapes), nested collections, and every default, enum
//! value, example and vendor extension of kube-apiserver 1.37's `/openapi/v2`. Made from
//! `go-yaml-values.jsonl` (add a value there) in `reference/` with
//! `go run ./golden yaml < ../wire/tests/data/go-yaml-values.jsonl > ../wire/tests/data/go-yaml-cases.jsonl`.

use proptest::prelude::*;
use serde_json::Value;

#[test]
fn every_value_is_written_as_go_writes_it() {
    let cases = include_str!("../data/go-yaml-cases.jsonl");
    let values: Vec<Value> = include_str!("../data/go-yaml-values.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect(line))
        .collect();
    let mut wrong = Vec::new();
    let mut count = 0;
    for line in cases.lines() {
        let (value, yaml): (Value, String) = serde_json::from_str(line).expect(line);
        assert_eq!(
            values.get(count),
            Some(&value),
            "the cases are of the values, in order"
        );
        count += 1;
        let written = apfkit_wire::go_yaml::to_string(&value);
        if written != yaml {
            wrong.push(format!("{value}\n  Go:   {yaml:?}\n  ours: {written:?}"));
        }
    }
    assert!(
        count > 750 && count == values.len(),
        "{count} cases of {} values",
        values.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {count} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// JSON values of strings drawn from what makes the emitter choose: indicators, spaces,
/// breaks, quotes, digits, signs, dots, letters of YAML's keywords and a non-ASCII letter.
/// Not U+2028 or NEL: yaml.v3 writes them as line breaks (YAML 1.1's), which a YAML 1.2
/// parser reads as text; the golden cases hold them to Go's output.
fn values() -> impl Strategy<Value = Value> {
    let text = "[-:#?,'\"!|>%@`&*{}\\[\\] \t\n.0-9+eExoyYnNtTfFlLu_~é]{0,8}";
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text.prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text, inner, 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A literal block with an indentation hint: a string with a line feed that starts with a
/// space or a break. yaml.v3 writes the hint as 4 wherever the block is, which misplaces it
/// under a sequence item (`- |4-` with the text two columns in); the golden cases hold
/// such strings to Go's output, which YAML parsers may refuse.
fn has_hinted_block(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\n') && text.starts_with([' ', '\n']),
        Value::Array(items) => items.iter().any(has_hinted_block),
        Value::Object(members) => members.iter().any(|(key, value)| {
            has_hinted_block(&Value::from(key.as_str())) || has_hinted_block(value)
        }),
        _ => false,
    }
}

proptest! {
    /// What `go_yaml` writes reads back as the value it was written from.
    #[test]
    fn what_is_written_reads_back_as_the_value(value in values()) {
        prop_assume!(!has_hinted_block(&value));
        let written = apfkit_wire::go_yaml::to_string(&value);
        // YAML 1.2's booleans only, as yaml.v3 reads them (not `y`, `yes`, `on`).
        let options = serde_saphyr::options! { strict_booleans: true };
        let read: Value = serde_saphyr::from_str_with_options(&written, options)
            .map_err(|e| TestCaseError::fail(format!("{written:?}: {e}")))?;
        prop_assert_eq!(read, value, "{:?}", written);
    }
}
