//! The mandatory bootstrap objects whose specs validation fixes (`MandatoryPriorityLevel*`
//! and `MandatoryFlowSchema*` in upstream's `pkg/apis/flowcontrol/bootstrap/default.go`).

use std::sync::LazyLock;

use serde_json::{Value, json};

use apfkit_types::hub::flowcontrol as hub;

fn everything(subjects: Value) -> Value {
    json!([{
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }])
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> T {
    // The literals below are fixed and match the hub types; a failure is a bug caught by tests.
    serde_json::from_value(value)
        .unwrap_or_else(|e| unreachable!("built-in object does not decode: {e}"))
}

/// Spec of the FlowSchema `exempt`.
pub static EXEMPT_FLOW_SCHEMA: LazyLock<hub::FlowSchemaSpec> = LazyLock::new(|| {
    parse(json!({
        "priorityLevelConfiguration": {"name": "exempt"},
        "matchingPrecedence": 1,
        "rules": everything(json!([{"kind": "Group", "group": {"name": "system:masters"}}])),
    }))
});

/// Spec of the FlowSchema `catch-all`.
pub static CATCH_ALL_FLOW_SCHEMA: LazyLock<hub::FlowSchemaSpec> = LazyLock::new(|| {
    parse(json!({
        "priorityLevelConfiguration": {"name": "catch-all"},
        "matchingPrecedence": 10000,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": everything(json!([
            {"kind": "Group", "group": {"name": "system:unauthenticated"}},
            {"kind": "Group", "group": {"name": "system:authenticated"}},
        ])),
    }))
});

/// Spec of the PriorityLevelConfiguration `exempt`.
pub static EXEMPT_PRIORITY_LEVEL: LazyLock<hub::PriorityLevelConfigurationSpec> = LazyLock::new(
    || {
        parse(
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        )
    },
);

/// Spec of the PriorityLevelConfiguration `catch-all`.
pub static CATCH_ALL_PRIORITY_LEVEL: LazyLock<hub::PriorityLevelConfigurationSpec> = LazyLock::new(
    || {
        parse(
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
        )
    },
);

/// Go's semantic equality for these specs: a nil and an empty list are equal, and so are an
/// unset and a false boolean (`clusterScope` is a plain bool in Go).
pub fn semantically_equal<T: serde::Serialize>(a: &T, b: &T) -> bool {
    fn normalize(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| {
                    !matches!(v, Value::Null | Value::Bool(false))
                        && v.as_array().is_none_or(|a| !a.is_empty())
                });
                map.values_mut().for_each(normalize);
            }
            Value::Array(items) => items.iter_mut().for_each(normalize),
            _ => {}
        }
    }
    let (Ok(mut a), Ok(mut b)) = (serde_json::to_value(a), serde_json::to_value(b)) else {
        return false;
    };
    normalize(&mut a);
    normalize(&mut b);
    a == b
}
