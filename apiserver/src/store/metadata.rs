//! apimachinery's `ValidateObjectMeta` for what every kind's metadata holds beyond its name:
//! labels, annotations and finalizers (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
//! and `pkg/apis/meta/v1/validation`), with its messages. Every write of every kind is held to
//! it, as kube-apiserver's strategies hold theirs (a custom resource's before its schema).

use apfkit_runtime::field::{BadValue, FieldError, names};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::Cause;

/// `TotalAnnotationSizeLimitB`: 256 KiB of keys and values.
const ANNOTATIONS_LIMIT: usize = 256 << 10;
/// The two finalizers a delete's propagation sets, which exclude each other.
const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";

/// The causes of kube-apiserver's 422 for `meta`'s labels, annotations and finalizers, in
/// its order (a map's keys in sorted order, one of Go's random ones).
pub(crate) fn causes(meta: &ObjectMeta) -> Vec<Cause> {
    let mut errors = Vec::new();
    for (key, value) in meta.labels.iter().flatten() {
        for message in names::qualified_name(key) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                BadValue::Str(key.clone()),
                message,
            ));
        }
        for message in names::label_value(value) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                BadValue::Str(value.clone()),
                message,
            ));
        }
    }
    let annotations = meta.annotations.iter().flatten();
    for key in annotations.clone().map(|(key, _)| key) {
        // A qualified name, whatever its case.
        for message in names::qualified_name(&key.to_lowercase()) {
            errors.push(FieldError::invalid(
                "metadata.annotations",
                BadValue::Str(key.clone()),
                message,
            ));
        }
    }
    let size: usize = annotations
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if size > ANNOTATIONS_LIMIT {
        errors.push(FieldError::too_long(
            "metadata.annotations",
            i64::try_from(ANNOTATIONS_LIMIT).unwrap_or(i64::MAX),
        ));
    }
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    for finalizer in finalizers {
        for message in names::qualified_name(finalizer) {
            errors.push(FieldError::invalid(
                "metadata.finalizers",
                BadValue::Str(finalizer.clone()),
                message,
            ));
        }
    }
    if finalizers.iter().any(|f| f == ORPHAN) && finalizers.iter().any(|f| f == FOREGROUND) {
        errors.push(FieldError::invalid(
            "metadata.finalizers",
            BadValue::Strings(finalizers.to_vec()),
            format!("finalizer {ORPHAN} and {FOREGROUND} cannot be both set"),
        ));
    }
    errors.iter().map(Cause::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn messages(meta: &ObjectMeta) -> Vec<String> {
        causes(meta)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn labels_annotations_and_finalizers_are_checked_as_apimachinery_checks_them() {
        let fine = ObjectMeta {
            labels: Some(BTreeMap::from([
                ("app".to_owned(), "web".to_owned()),
                ("example.com/tier".to_owned(), String::new()),
            ])),
            annotations: Some(BTreeMap::from([(
                "Example.com/Note".to_owned(),
                "any text".to_owned(),
            )])),
            finalizers: Some(vec!["kubernetes".to_owned(), "example.com/keep".to_owned()]),
            ..ObjectMeta::default()
        };
        assert!(messages(&fine).is_empty());
        // What upstream's e2e test of validation ratcheting sends.
        let bad = ObjectMeta {
            labels: Some(BTreeMap::from([(
                "#inv/($%)/alid=".to_owned(),
                ">htt$://".to_owned(),
            )])),
            finalizers: Some(vec![
                ORPHAN.to_owned(),
                FOREGROUND.to_owned(),
                "a/b/c".to_owned(),
            ]),
            ..ObjectMeta::default()
        };
        let found = messages(&bad);
        assert!(
            found[0].starts_with(
                "metadata.labels: Invalid value: \"#inv/($%)/alid=\": a valid label key must"
            ),
            "{found:#?}"
        );
        assert!(found.iter().any(|m| {
            m.starts_with("metadata.labels: Invalid value: \">htt$://\": a valid label must be")
        }));
        assert!(found.iter().any(|m| {
            m.starts_with("metadata.finalizers: Invalid value: \"a/b/c\": a valid label key")
        }));
        assert_eq!(
            found.last().unwrap(),
            "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\",\"a/b/c\"]: \
             finalizer orphan and foregroundDeletion cannot be both set"
        );
        let big = ObjectMeta {
            annotations: Some(BTreeMap::from([(
                "a".to_owned(),
                "x".repeat(ANNOTATIONS_LIMIT),
            )])),
            ..ObjectMeta::default()
        };
        assert_eq!(
            messages(&big),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }
}
