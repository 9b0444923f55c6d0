//! core/v1 ServiceAccounts as kube-apiserver serves them (`pkg/registry/core/serviceaccount`):
//! read as k8s-openapi's `ServiceAccount` reads them, prepared as its strategy prepares them
//! (each of `secrets` reduced to its name), checked as `ValidateServiceAccount` checks them,
//! warned about as `warnIfHasEnforceMountableSecretsAnnotation` warns, printed with
//! `kubectl get serviceaccounts`' columns.

use apfkit_apiserver::table::{
    Column, Printer, age, creation_column, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{FieldError, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use apfkit_types::builtin::core::v1::ServiceAccount;
use serde_json::{Value, json};

use crate::{Kind, metadata_errors};

pub(crate) const KIND: Kind = Kind {
    group: "",
    kind: "ServiceAccount",
    plural: "serviceaccounts",
    short_names: &["sa"],
    normalize,
    zero: crate::empty_object,
    field_labels: None,
    check,
    prepare,
    warn: warnings,
    printer,
    create_on_update: false,
    unconditional_updates: true,
};

/// The annotation whose use kube-apiserver warns of since 1.32.
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";

fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept =
        apfkit_apiextensions::json_kind::typed::<ServiceAccount>(object, unknown, warnings)?;
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// `cleanSecretReferences`: each reference of `secrets` keeps only its name.
fn prepare(account: &mut Value, _old: Option<&Value>) {
    let Some(secrets) = account.get_mut("secrets").and_then(Value::as_array_mut) else {
        return;
    };
    for secret in secrets {
        *secret = match secret.get("name").filter(|name| name.is_string()) {
            Some(name) => json!({"name": name}),
            None => json!({}),
        };
    }
}

/// `ValidateServiceAccount`: the name and namespace alone.
fn check(account: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    metadata_errors(account, names::dns1123_subdomain)
}

/// The annotation `kubernetes.io/enforce-mountable-secrets`, when it is new.
fn warnings(account: &Value, old: Option<&Value>) -> Vec<String> {
    let annotated = |account: &Value| {
        account
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ENFORCE_MOUNTABLE_SECRETS))
            .is_some()
    };
    if old.is_some_and(annotated) || !annotated(account) {
        return Vec::new();
    }
    vec![format!(
        "metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; prefer \
         separate namespaces to isolate access to mounted secrets"
    )]
}

/// `serviceAccountColumnDefinitions`.
fn columns() -> Vec<Column> {
    vec![name_column(), creation_column("Age", "string")]
}

/// `printServiceAccount`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    vec![name_cell(object), age(object, now_seconds())]
}

fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_references_keep_their_names_alone() {
        let mut account = json!({"secrets": [
            {"name": "token", "namespace": "elsewhere", "uid": "u"}, {"kind": "Secret"}]});
        prepare(&mut account, None);
        assert_eq!(account["secrets"], json!([{"name": "token"}, {}]));
    }

    #[test]
    fn the_mountable_secrets_annotation_is_warned_of_when_new() {
        let annotated = json!({"metadata": {"annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}}});
        assert_eq!(warnings(&annotated, None).len(), 1);
        assert!(warnings(&annotated, Some(&annotated)).is_empty());
        assert!(warnings(&json!({}), None).is_empty());
        assert_eq!(
            check(&json!({"metadata": {"name": "Bad"}}), None).len(),
            2,
            "the name and the namespace"
        );
        assert_eq!(
            cells(&json!({"metadata": {"name": "default"}}))[0],
            "default"
        );
    }
}
