//! The columns `kubectl get` shows for each kind, as kube-apiserver prints them
//! (kubernetes `pkg/printers/internalversion/printers.go` for FlowSchema and
//! PriorityLevelConfiguration; kube-aggregator `pkg/registry/apiservice/etcd/etcd.go` for
//! APIService). The cells read the object in v1.

use std::borrow::Cow;
use std::cmp::Ordering;

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_column, now_seconds,
};
use serde_json::Value;

/// kube's OpenAPI definitions of flowcontrol v1, whose fields' documentation describes the
/// columns showing them.
const FLOWCONTROL: &str = "io.k8s.api.flowcontrol.v1";

/// A string column described by the documentation of `property` of `definition` (a
/// flowcontrol v1 type).
fn documented(name: &'static str, definition: &str, property: &str) -> Column {
    column(
        name,
        "string",
        0,
        field_doc(&format!("{FLOWCONTROL}.{definition}"), property),
    )
}

/// `flowSchemaColumnDefinitions`.
fn flow_schema_columns() -> Vec<Column> {
    vec![
        name_column(),
        documented(
            "PriorityLevel",
            "PriorityLevelConfigurationReference",
            "name",
        ),
        documented("MatchingPrecedence", "FlowSchemaSpec", "matchingPrecedence"),
        documented(
            "DistinguisherMethod",
            "FlowSchemaSpec",
            "distinguisherMethod",
        ),
        creation_column("Age", "string"),
        column(
            "MissingPL",
            "string",
            0,
            Cow::Borrowed("references a broken or non-existent PriorityLevelConfiguration"),
        ),
    ]
}

/// `priorityLevelColumnDefinitions`.
fn priority_level_columns() -> Vec<Column> {
    vec![
        name_column(),
        documented("Type", "PriorityLevelConfigurationSpec", "type"),
        documented(
            "NominalConcurrencyShares",
            "LimitedPriorityLevelConfiguration",
            "nominalConcurrencyShares",
        ),
        documented("Queues", "QueuingConfiguration", "queues"),
        documented("HandSize", "QueuingConfiguration", "handSize"),
        documented(
            "QueueLengthLimit",
            "QueuingConfiguration",
            "queueLengthLimit",
        ),
        creation_column("Age", "string"),
    ]
}

/// kube-aggregator's APIService columns (`registry/apiservice/etcd`), described in its words.
fn api_service_columns() -> Vec<Column> {
    vec![
        name_column(),
        column(
            "Service",
            "string",
            0,
            Cow::Borrowed("The reference to the service that hosts this API endpoint."),
        ),
        column(
            "Available",
            "string",
            0,
            Cow::Borrowed("Whether this service is available."),
        ),
        creation_column("Age", "string"),
    ]
}

/// The printer of a kind, if kube-apiserver has one.
pub fn printer(kind: &str) -> Option<Printer> {
    match kind {
        "FlowSchema" => Some(Printer {
            order: Some(flow_schema_order),
            ..Printer::of("v1", flow_schema_columns(), flow_schema_cells)
        }),
        "PriorityLevelConfiguration" => Some(Printer::of(
            "v1",
            priority_level_columns(),
            priority_level_cells,
        )),
        "APIService" => Some(Printer::of("v1", api_service_columns(), api_service_cells)),
        _ => None,
    }
}

fn text(object: &Value, pointer: &str) -> Value {
    object
        .pointer(pointer)
        .cloned()
        .unwrap_or(Value::String(String::new()))
}

fn or_none(object: &Value, pointer: &str) -> Value {
    object
        .pointer(pointer)
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| Value::String("<none>".to_owned()))
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn flow_schema_cells(object: &Value) -> Vec<Value> {
    let missing = condition(object, "Dangling")
        .and_then(|c| c.get("status").cloned())
        .unwrap_or_else(|| Value::String("?".to_owned()));
    vec![
        text(object, "/metadata/name"),
        text(object, "/spec/priorityLevelConfiguration/name"),
        object
            .pointer("/spec/matchingPrecedence")
            .cloned()
            .unwrap_or(Value::from(0)),
        or_none(object, "/spec/distinguisherMethod/type"),
        age(object, now_seconds()),
        missing,
    ]
}

/// apihelpers' `FlowSchemaSequence`: by matching precedence, then name.
fn flow_schema_order(a: &Value, b: &Value) -> Ordering {
    let key = |o: &Value| {
        (
            o.pointer("/spec/matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    };
    key(a).cmp(&key(b))
}

fn priority_level_cells(object: &Value) -> Vec<Value> {
    let limited = object.pointer("/spec/limited").filter(|l| !l.is_null());
    let queuing = |field: &str| match limited {
        Some(_) => or_none(
            object,
            &format!("/spec/limited/limitResponse/queuing/{field}"),
        ),
        None => Value::String("<none>".to_owned()),
    };
    vec![
        text(object, "/metadata/name"),
        text(object, "/spec/type"),
        match limited {
            Some(_) => or_none(object, "/spec/limited/nominalConcurrencyShares"),
            None => Value::String("<none>".to_owned()),
        },
        queuing("queues"),
        queuing("handSize"),
        queuing("queueLengthLimit"),
        age(object, now_seconds()),
    ]
}

fn api_service_cells(object: &Value) -> Vec<Value> {
    let service = match object.pointer("/spec/service").filter(|s| !s.is_null()) {
        Some(service) => Value::String(format!(
            "{}/{}",
            service
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            service
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )),
        None => Value::String("Local".to_owned()),
    };
    let available = match condition(object, "Available") {
        None => "Unknown".to_owned(),
        Some(c) => {
            let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
            let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
            if status == "True" || reason.is_empty() {
                status.to_owned()
            } else {
                format!("{status} ({reason})")
            }
        }
    };
    vec![
        text(object, "/metadata/name"),
        service,
        Value::String(available),
        age(object, now_seconds()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_are_kube_apiservers() {
        let exempt_level = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        let cells = priority_level_cells(&exempt_level);
        assert_eq!(
            cells[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let schema = json!({
            "metadata": {"name": "a"},
            "spec": {"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 10},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]},
        });
        let cells = flow_schema_cells(&schema);
        assert_eq!(
            cells[..4],
            [json!("a"), json!("p"), json!(10), json!("<none>")]
        );
        assert_eq!(cells[5], json!("False"));
        let local = json!({"metadata": {"name": "v1.x"}, "spec": {}, "status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "ServiceNotFound"}
        ]}});
        assert_eq!(
            api_service_cells(&local)[1..3],
            [json!("Local"), json!("False (ServiceNotFound)")]
        );
    }
}
