//! core/v1 ConfigMaps as kube-apiserver serves them (`pkg/registry/core/configmap`): read as
//! k8s-openapi's `ConfigMap` reads them, checked as `ValidateConfigMap` and
//! `ValidateConfigMapUpdate` check them, printed with `kubectl get configmaps`' columns.

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use apfkit_types::builtin::core::v1::ConfigMap;
use serde_json::Value;

use crate::{Kind, count, decoded_len, entries, immutable_errors, metadata_errors};

/// The most bytes a ConfigMap's or a Secret's data may hold together (`MaxSecretSize`).
pub(crate) const MAX_SIZE: usize = 1024 * 1024;

pub(crate) const KIND: Kind = Kind {
    group: "",
    kind: "ConfigMap",
    plural: "configmaps",
    short_names: &["cm"],
    normalize,
    zero: crate::empty_object,
    field_labels: None,
    check,
    prepare: crate::prepare_nothing,
    warn: crate::warn_of_nothing,
    printer,
    create_on_update: false,
    unconditional_updates: true,
};

fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = apfkit_apiextensions::json_kind::typed::<ConfigMap>(object, unknown, warnings)?;
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// `ValidateConfigMap`, and on an update `ValidateConfigMapUpdate`'s rules of an immutable
/// ConfigMap first. Keys are checked in their sorted order (Go's map order is random).
fn check(config_map: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = immutable_errors(config_map, old, &["data", "binaryData"]);
    errors.extend(metadata_errors(config_map, names::dns1123_subdomain));
    let binary = config_map.get("binaryData").and_then(Value::as_object);
    let mut size = 0;
    let data = Path::new("data");
    for (key, value) in entries(config_map, "/data") {
        let invalid = |message: String| {
            FieldError::invalid(data.key(key), BadValue::Str(key.clone()), message)
        };
        errors.extend(names::config_map_key(key).into_iter().map(invalid));
        if binary.is_some_and(|binary| binary.contains_key(key)) {
            errors.push(invalid("duplicate of key present in binaryData".to_owned()));
        }
        size += value.as_str().map_or(0, str::len);
    }
    let binary_data = Path::new("binaryData");
    for (key, value) in entries(config_map, "/binaryData") {
        errors.extend(names::config_map_key(key).into_iter().map(|message| {
            FieldError::invalid(binary_data.key(key), BadValue::Str(key.clone()), message)
        }));
        size += decoded_len(value);
    }
    if size > MAX_SIZE {
        // The whole object's: `field.NewPath("")`, which apimachinery prints `[]`.
        errors.push(FieldError::too_long("[]", MAX_SIZE as i64));
    }
    errors
}

/// `configMapColumnDefinitions`.
fn columns() -> Vec<Column> {
    vec![
        name_column(),
        column(
            "Data",
            "string",
            0,
            field_doc("io.k8s.api.core.v1.ConfigMap", "data"),
        ),
        creation_column("Age", "string"),
    ]
}

/// `printConfigMap`'s cells: the entries of `data` and `binaryData` together.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        (count(object, "/data") + count(object, "/binaryData")).into(),
        age(object, now_seconds()),
    ]
}

fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(config_map: &Value, old: Option<&Value>) -> Vec<String> {
        check(config_map, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// `binaryData` is read as Go reads a `map[string][]byte`: each value base64, refused in
    /// Go's words (the byte it fails at); null and absent alike.
    #[test]
    fn binary_data_is_read_as_go_reads_it() {
        let read = |binary: Value| {
            normalize(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"},
                    "binaryData": binary}),
                apfkit_runtime::scheme::UnknownFields::Strict,
                &mut Vec::new(),
            )
        };
        let kept = read(json!({"a": "AAH/", "b": ""})).unwrap();
        assert_eq!(kept["binaryData"], json!({"a": "AAH/", "b": ""}));
        for (garbage, at) in [("not base64", 3), ("AAH", 0), ("A===", 1)] {
            let error = read(json!({"ok": "AAH/", "bad": garbage})).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("illegal base64 data at input byte {at}")),
                "{garbage}: {error}"
            );
        }
        assert!(read(json!(null)).unwrap().get("binaryData").is_none());
        assert!(read(json!({"n": 1})).is_err());
    }

    /// Cases of upstream's `TestValidateConfigMap` and `TestValidateConfigMapUpdate`
    /// (`pkg/apis/core/validation/validation_test.go`), with kube's messages.
    #[test]
    fn config_maps_are_checked_as_kube_apiserver_checks_them() {
        let meta = json!({"name": "valid", "namespace": "validns"});
        for data in [
            json!({"key": "value"}),
            json!({"key-name": "value", "KEY_NAME": "v", "key.name": "v"}),
            json!({}),
        ] {
            assert!(
                messages(&json!({"metadata": meta, "data": data}), None).is_empty(),
                "{data}"
            );
        }
        assert_eq!(
            messages(
                &json!({"metadata": {"name": "invalid-\\", "namespace": "validns"},
                        "data": {"..bad": "v", "key": "v"}, "binaryData": {"key": "dg=="}}),
                None
            ),
            [
                "metadata.name: Invalid value: \"invalid-\\\\\": a lowercase RFC 1123 \
                 subdomain must consist of lower case alphanumeric characters, '-' or '.', and \
                 must start and end with an alphanumeric character (e.g. 'example.com', regex \
                 used for validation is \
                 '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "data[..bad]: Invalid value: \"..bad\": must not start with '..'",
                "data[key]: Invalid value: \"key\": duplicate of key present in binaryData",
            ]
        );
        assert_eq!(
            messages(&json!({"metadata": {"name": "ok"}}), None),
            ["metadata.namespace: Required value"]
        );
        let big = "x".repeat(MAX_SIZE);
        assert_eq!(
            messages(
                &json!({"metadata": meta, "data": {"a": big, "b": "y"}}),
                None
            ),
            ["[]: Too long: may not be more than 1048576 bytes"]
        );
        // An immutable ConfigMap keeps its flag and its data.
        let old = json!({"metadata": meta, "immutable": true, "data": {"a": "b"}});
        assert!(messages(&old, Some(&old)).is_empty());
        assert_eq!(
            messages(
                &json!({"metadata": meta, "data": {"a": "c"}, "binaryData": {"x": "eQ=="}}),
                Some(&old)
            ),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
                "binaryData: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        // A mutable one may become immutable, with new data.
        let mutable = json!({"metadata": meta, "data": {"a": "b"}});
        assert!(messages(&old, Some(&mutable)).is_empty());
    }

    #[test]
    fn kubectl_get_configmaps_columns() {
        let cells = cells(&json!({"metadata": {"name": "settings"},
            "data": {"a": "1", "b": "2"}, "binaryData": {"c": "eQ=="}}));
        assert_eq!(cells[..2], [json!("settings"), json!(3)]);
        assert_eq!(printer().columns.len(), 3);
    }
}
