//! The columns `kubectl get` shows for a custom resource, as kube-apiserver prints them
//! (`k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor`): the name,
//! then each of the version's `additionalPrinterColumns` (an `Age` column of
//! `.metadata.creationTimestamp` when it has none), each cell the value its JSONPath finds,
//! typed as the column says.

use std::borrow::Cow;
use std::sync::Arc;

use apfkit_apiserver::table::{
    Column, OBJECT_META, Printer, field_doc, human_duration, name_column, now_seconds,
};
use jsonpath_rust::JsonPath as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use serde_json::Value;

/// apiextensions-apiserver's table of CustomResourceDefinitions (its `tableconvertor`): the
/// name, scope, served versions (the storage one marked), creation time, and with `-o wide`
/// the group, kind, short names and whether it is established.
pub(crate) fn definitions_printer() -> Printer {
    use apfkit_apiserver::table::{column, creation_column};
    let described = |name, type_name, priority, text: &'static str| {
        column(name, type_name, priority, Cow::Borrowed(text))
    };
    let columns = vec![
        name_column(),
        described("Scope", "string", 0, "Cluster/Namespaced"),
        described("Versions", "string", 0, "Served versions"),
        creation_column("Created At", "date"),
        described("Group", "string", 1, "API group"),
        described("Kind", "string", 1, "CustomResource kind"),
        described("ShortNames", "string", 1, "Short names"),
        described("Established", "boolean", 1, "Established status"),
    ];
    Printer::of("v1", columns, |crd| {
        let text = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let listed = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        let mut versions: Vec<String> = listed("/spec/versions")
            .filter(|v| v.get("served") == Some(&Value::Bool(true)))
            .map(|v| {
                let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
                if v.get("storage") == Some(&Value::Bool(true)) {
                    format!("{name}(storage)")
                } else {
                    name.to_owned()
                }
            })
            .collect();
        versions.sort();
        let short_names: Vec<&str> = listed("/spec/names/shortNames")
            .filter_map(Value::as_str)
            .collect();
        let established = listed("/status/conditions").any(|c| {
            c.get("type") == Some(&"Established".into()) && c.get("status") == Some(&"True".into())
        });
        vec![
            text("/metadata/name").into(),
            text("/spec/scope").into(),
            versions.join(",").into(),
            text("/metadata/creationTimestamp").into(),
            text("/spec/group").into(),
            text("/spec/names/kind").into(),
            short_names.join(",").into(),
            established.into(),
        ]
    })
}

/// The printer of `version`, reading objects in it.
pub fn printer(version: &api::CustomResourceDefinitionVersion) -> Printer {
    let defined = version
        .additional_printer_columns
        .clone()
        .unwrap_or_default();
    let columns = if defined.is_empty() {
        vec![api::CustomResourceColumnDefinition {
            name: "Age".to_owned(),
            type_: "date".to_owned(),
            description: Some(field_doc(OBJECT_META, "creationTimestamp").into_owned()),
            json_path: ".metadata.creationTimestamp".to_owned(),
            ..Default::default()
        }]
    } else {
        defined
    };
    let mut headers = vec![name_column()];
    headers.extend(columns.iter().map(|column| {
        Column {
            name: Cow::Owned(column.name.clone()),
            type_name: Cow::Owned(column.type_.clone()),
            format: Cow::Owned(column.format.clone().unwrap_or_default()),
            description: Cow::Owned(
                column
                    .description
                    .clone()
                    .filter(|d| !d.is_empty())
                    .unwrap_or_else(|| {
                        format!(
                            "Custom resource definition column (in JSONPath format): {}",
                            column.json_path
                        )
                    }),
            ),
            priority: column.priority.unwrap_or_default(),
        }
    }));
    let paths: Vec<(Option<String>, String)> = columns
        .iter()
        .map(|column| (query_of(&column.json_path), column.type_.clone()))
        .collect();
    Printer {
        version: Cow::Owned(version.name.clone()),
        columns: Cow::Owned(headers),
        cells: Arc::new(move |object: &Value| {
            let mut cells = vec![
                object
                    .pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
            ];
            cells.extend(paths.iter().map(|(query, type_name)| {
                let found = query
                    .as_deref()
                    .and_then(|query| object.query(query).ok())
                    .and_then(|found| found.first().map(|value| (*value).clone()));
                found.map_or(Value::Null, |value| cell(type_name, value))
            }));
            cells
        }),
        order: None,
    }
}

/// A kube JSONPath of a column (`.spec.items[0].name`, `\.` for a dot inside a name) as a
/// JSONPath query in brackets (`$['spec']['items'][0]['name']`); `None` when it is not one
/// (the column's cells are then empty, as kube-apiserver leaves a column it cannot parse).
fn query_of(path: &str) -> Option<String> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut query = String::from("$");
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut name = String::new();
                while let Some(&next) = chars.peek() {
                    match next {
                        '.' | '[' => break,
                        '\\' => {
                            chars.next();
                            name.push(chars.next()?);
                        }
                        _ => {
                            name.push(next);
                            chars.next();
                        }
                    }
                }
                if name.is_empty() {
                    return None;
                }
                query.push_str("['");
                query.push_str(&name.replace('\\', "\\\\").replace('\'', "\\'"));
                query.push_str("']");
            }
            '[' => {
                let mut index = String::new();
                for next in chars.by_ref() {
                    if next == ']' {
                        break;
                    }
                    index.push(next);
                }
                index.parse::<i64>().ok()?;
                query.push('[');
                query.push_str(&index);
                query.push(']');
            }
            _ => return None,
        }
    }
    (query.len() > 1).then_some(query)
}

/// A cell of a column of `type_name` (kube-apiserver's `cellForJSONValue`; a `string` column
/// prints any value as kube's JSONPath prints it).
fn cell(type_name: &str, value: Value) -> Value {
    match (type_name, &value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(_)) => value,
        ("string", Value::Object(_) | Value::Array(_)) => Value::String(value.to_string()),
        ("string", Value::Number(n)) => Value::String(go_number(n)),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(_)) => value,
        ("date", Value::String(text)) => match text.parse::<k8s_openapi::jiff::Timestamp>() {
            Ok(time) => Value::String(human_duration(now_seconds() - time.as_second())),
            Err(_) => Value::String("<invalid>".to_owned()),
        },
        _ => Value::Null,
    }
}

/// A JSON number as Go's `fmt` prints the float64 it decodes to (`3`, not `3.0`).
fn go_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kube_paths_become_bracketed_queries() {
        assert_eq!(
            query_of(".spec.replicas").as_deref(),
            Some("$['spec']['replicas']")
        );
        assert_eq!(
            query_of(".spec.items[0].name").as_deref(),
            Some("$['spec']['items'][0]['name']")
        );
        assert_eq!(
            query_of(r".metadata.labels.app\.kubernetes\.io/name").as_deref(),
            Some("$['metadata']['labels']['app.kubernetes.io/name']")
        );
        for bad in ["", ".", "spec", ".a[x]", ".a..b", r".a\"] {
            assert_eq!(query_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cells_are_typed_as_their_columns_say() {
        let version = api::CustomResourceDefinitionVersion {
            name: "v1".to_owned(),
            additional_printer_columns: Some(vec![
                column("Replicas", "integer", ".spec.replicas"),
                column("Image", "string", ".spec.image"),
                column("Ready", "boolean", ".status.ready"),
                column("Missing", "string", ".spec.nothing"),
                column("Size", "string", ".spec.replicas"),
            ]),
            ..Default::default()
        };
        let printer = printer(&version);
        let names: Vec<&str> = printer.columns.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(
            names,
            ["Name", "Replicas", "Image", "Ready", "Missing", "Size"]
        );
        let object = json!({
            "metadata": {"name": "w"},
            "spec": {"replicas": 3.0, "image": {"repository": "r"}},
            "status": {"ready": "yes"},
        });
        assert_eq!(
            (printer.cells)(&object),
            [
                json!("w"),
                json!(3),
                json!(r#"{"repository":"r"}"#),
                Value::Null,
                Value::Null,
                json!("3")
            ]
        );
    }

    #[test]
    fn without_columns_the_age_is_shown() {
        let printer = printer(&api::CustomResourceDefinitionVersion {
            name: "v1".to_owned(),
            ..Default::default()
        });
        let names: Vec<&str> = printer.columns.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(names, ["Name", "Age"]);
        let cells =
            (printer.cells)(&json!({"metadata": {"name": "w", "creationTimestamp": "bad"}}));
        assert_eq!(cells, [json!("w"), json!("<invalid>")]);
    }

    fn column(name: &str, type_name: &str, path: &str) -> api::CustomResourceColumnDefinition {
        api::CustomResourceColumnDefinition {
            name: name.to_owned(),
            type_: type_name.to_owned(),
            json_path: path.to_owned(),
            ..Default::default()
        }
    }
}
