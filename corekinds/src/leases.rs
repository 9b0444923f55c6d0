//! coordination.k8s.io/v1 Leases as kube-apiserver serves them
//! (`pkg/registry/coordination/lease`): read as k8s-openapi's `Lease` reads them, prepared as
//! `leaseStrategy` prepares them with the `CoordinatedLeaderElection` gate off (its default in
//! 1.37: `spec.strategy` and `spec.preferredHolder` dropped unless the stored Lease has
//! them), checked as `ValidateLease` checks them, printed with `kubectl get leases`' columns.
//! A PUT may create one; none is updated without a `resourceVersion`.

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use apfkit_types::builtin::coordination::v1::Lease;
use serde_json::Value;

use crate::{Kind, metadata_errors};

pub(crate) const KIND: Kind = Kind {
    group: "coordination.k8s.io",
    kind: "Lease",
    plural: "leases",
    short_names: &[],
    normalize,
    zero,
    field_labels: None,
    check,
    prepare,
    warn: crate::warn_of_nothing,
    printer,
    create_on_update: true,
    unconditional_updates: false,
};

/// A new Lease as Go writes it: `spec` is a struct.
fn zero() -> Value {
    serde_json::json!({"spec": {}})
}

/// The `MicroTime` fields of a Lease.
const TIMES: [&str; 2] = ["spec.acquireTime", "spec.renewTime"];

/// A Lease read as kube-apiserver reads it: its times as `MicroTime` reads them (six digits
/// of a second, which k8s-openapi's type does not ask for; the server then answers with Go's
/// decoder's words).
fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    crate::micro_time_errors(&object, &TIMES)?;
    let mut kept = apfkit_apiextensions::json_kind::typed::<Lease>(object, unknown, warnings)?;
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// The fields of the `CoordinatedLeaderElection` gate, off by default.
const GATED: [&str; 2] = ["strategy", "preferredHolder"];

/// `PrepareForCreate` and `PrepareForUpdate` with the gate off: each gated field dropped,
/// unless the stored Lease has it.
fn prepare(lease: &mut Value, old: Option<&Value>) {
    let Some(spec) = lease.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in GATED {
        let kept = old
            .and_then(|old| old.pointer(&format!("/spec/{field}")))
            .is_some_and(|value| !value.is_null());
        if !kept {
            spec.remove(field);
        }
    }
}

/// `ValidateLease` and `ValidateLeaseUpdate` (`pkg/apis/coordination/validation`).
fn check(lease: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = metadata_errors(lease, names::dns1123_subdomain);
    let spec = Path::new("spec");
    let number = |field: &str| {
        lease
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_i64)
    };
    if let Some(duration) = number("leaseDurationSeconds").filter(|&d| d <= 0) {
        errors.push(FieldError::invalid(
            spec.child("leaseDurationSeconds"),
            BadValue::Int(duration),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = number("leaseTransitions").filter(|&t| t < 0) {
        errors.push(FieldError::invalid(
            spec.child("leaseTransitions"),
            BadValue::Int(transitions),
            "must be greater than or equal to 0",
        ));
    }
    let text = |field: &str| {
        lease
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_str)
    };
    if let Some(strategy) = text("strategy") {
        errors.extend(strategy_errors(strategy, &spec.child("strategy")));
    }
    if text("preferredHolder").is_some_and(|holder| !holder.is_empty())
        && text("strategy").is_none_or(str::is_empty)
    {
        errors.push(FieldError::forbidden(
            spec.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errors
}

/// `ValidateCoordinatedLeaseStrategy`, which names the field twice in its path
/// (`spec.strategy.strategy`), as upstream does.
fn strategy_errors(strategy: &str, path: &Path) -> Vec<FieldError> {
    let path = path.child("strategy");
    if strategy.contains('/') {
        return names::qualified_name(strategy)
            .into_iter()
            .map(|message| {
                FieldError::invalid(path.clone(), BadValue::Str(strategy.to_owned()), message)
            })
            .collect();
    }
    if strategy == "OldestEmulationVersion" {
        return Vec::new();
    }
    vec![FieldError::not_supported(
        path,
        BadValue::Str(strategy.to_owned()),
        &["OldestEmulationVersion"],
    )]
}

/// `leaseColumnDefinitions`.
fn columns() -> Vec<Column> {
    vec![
        name_column(),
        column(
            "Holder",
            "string",
            0,
            field_doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
        ),
        creation_column("Age", "string"),
    ]
}

/// `printLease`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        object
            .pointer("/spec/holderIdentity")
            .filter(|v| v.is_string())
            .cloned()
            .unwrap_or_else(|| "".into()),
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

    fn messages(lease: &Value) -> Vec<String> {
        check(lease, None).iter().map(ToString::to_string).collect()
    }

    /// Cases of upstream's `TestValidateLeaseSpec` (`pkg/apis/coordination/validation`),
    /// with kube's messages.
    #[test]
    fn leases_are_checked_as_kube_apiserver_checks_them() {
        let meta = json!({"name": "holder", "namespace": "kube-system"});
        let lease = |spec: Value| json!({"metadata": meta, "spec": spec});
        assert!(
            messages(&lease(
                json!({"holderIdentity": "me", "leaseDurationSeconds": 15,
                "leaseTransitions": 0, "renewTime": "2026-12-01T10:00:00.000000Z"})
            ))
            .is_empty()
        );
        assert_eq!(
            messages(&lease(
                json!({"leaseDurationSeconds": 0, "leaseTransitions": -1})
            )),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            messages(&lease(
                json!({"strategy": "Newest", "preferredHolder": "me"})
            )),
            [
                "spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \
              \"OldestEmulationVersion\""
            ]
        );
        assert!(messages(&lease(json!({"strategy": "example.com/mine"}))).is_empty());
        assert_eq!(
            messages(&lease(json!({"preferredHolder": "me"}))),
            ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]
        );
    }

    #[test]
    fn times_are_read_as_micro_times() {
        let read = |time: &str| {
            normalize(
                json!({"metadata": {"name": "l"}, "spec": {"renewTime": time}}),
                UnknownFields::Strict,
                &mut Vec::new(),
            )
        };
        assert_eq!(
            read("2026-12-01T10:00:00.000001Z").unwrap()["spec"]["renewTime"],
            "2026-12-01T10:00:00.000001Z"
        );
        let refused = read("2026-12-01T10:00:00Z").unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("cannot parse \"Z\" as \".000000\"")
        );
    }

    #[test]
    fn the_gated_fields_are_dropped_unless_stored() {
        let mut lease = json!({"spec": {"holderIdentity": "me",
            "strategy": "OldestEmulationVersion", "preferredHolder": "me"}});
        prepare(&mut lease, None);
        assert_eq!(lease["spec"], json!({"holderIdentity": "me"}));
        let old = json!({"spec": {"strategy": "OldestEmulationVersion"}});
        let mut lease = json!({"spec": {"strategy": "OldestEmulationVersion",
            "preferredHolder": "me"}});
        prepare(&mut lease, Some(&old));
        assert_eq!(lease["spec"], json!({"strategy": "OldestEmulationVersion"}));
    }

    #[test]
    fn kubectl_get_leases_columns() {
        let held = cells(&json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}));
        assert_eq!(held[..2], [json!("l"), json!("me")]);
        assert_eq!(cells(&json!({"metadata": {"name": "l"}}))[1], json!(""));
    }
}
