//! apimachinery's `ValidateObjectMeta` (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
//! and `pkg/apis/meta/v1/validation`) with its messages: an object's metadata on create, at
//! any path (`metadata`, or `spec.template.metadata` for a resource embedded in a custom
//! resource).
//!
//! ```
//! use apfkit_runtime::object_meta;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! let meta = ObjectMeta {
//!     name: Some("web".into()),
//!     generation: Some(-1),
//!     ..ObjectMeta::default()
//! };
//! let errors = object_meta::validate(&meta, "metadata", false, object_meta::path_segment);
//! assert_eq!(
//!     errors[0].to_string(),
//!     "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
//! );
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use crate::field::{BadValue, FieldError, names};
use crate::identity::split_api_version;

/// `TotalAnnotationSizeLimitB`: 256 KiB of keys and values.
const ANNOTATIONS_LIMIT: usize = 256 << 10;
/// The two finalizers a delete's propagation sets, which exclude each other.
const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";
/// `FieldManagerMaxLength`.
const FIELD_MANAGER_LIMIT: usize = 128;
/// `MaxSubresourceNameLength`.
const SUBRESOURCE_LIMIT: usize = 256;

/// The checks of `ValidateObjectMetaAccessor` for `meta` at `path`: `generateName` and
/// `name` through `name_check` (its second argument says whether the value is a prefix), the
/// namespace (required when `requires_namespace`, else refused), then what
/// [`validate_common`] checks.
pub fn validate(
    meta: &ObjectMeta,
    path: &str,
    requires_namespace: bool,
    name_check: fn(&str, bool) -> Vec<String>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let (name, generate_name) = (text(&meta.name), text(&meta.generate_name));
    if !generate_name.is_empty() {
        for message in name_check(&generate_name, true) {
            errors.push(FieldError::invalid(
                format!("{path}.generateName"),
                BadValue::Str(generate_name.clone()),
                message,
            ));
        }
    }
    if name.is_empty() {
        errors.push(FieldError::required(
            format!("{path}.name"),
            "name or generateName is required",
        ));
    } else {
        for message in name_check(&name, false) {
            errors.push(FieldError::invalid(
                format!("{path}.name"),
                BadValue::Str(name.clone()),
                message,
            ));
        }
    }
    let namespace = text(&meta.namespace);
    if requires_namespace && namespace.is_empty() {
        errors.push(FieldError::required(format!("{path}.namespace"), ""));
    } else if requires_namespace {
        for message in names::dns1123_label(&namespace) {
            errors.push(FieldError::invalid(
                format!("{path}.namespace"),
                BadValue::Str(namespace.clone()),
                message,
            ));
        }
    } else if !namespace.is_empty() {
        errors.push(FieldError::forbidden(
            format!("{path}.namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(generation) = meta.generation.filter(|g| *g < 0) {
        errors.push(FieldError::invalid(
            format!("{path}.generation"),
            BadValue::Int(generation),
            "must be greater than or equal to 0",
        ));
    }
    errors.extend(validate_common(meta, path));
    errors
}

/// What every kind's metadata is held to beyond its name, namespace and generation, in
/// apimachinery's order: labels, annotations, owner references, finalizers and managed
/// fields (a map's keys in sorted order, one of Go's random ones).
pub fn validate_common(meta: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let labels = format!("{path}.labels");
    for (key, value) in meta.labels.iter().flatten() {
        for message in names::qualified_name(key) {
            errors.push(FieldError::invalid(
                &labels,
                BadValue::Str(key.clone()),
                message,
            ));
        }
        for message in names::label_value(value) {
            errors.push(FieldError::invalid(
                &labels,
                BadValue::Str(value.clone()),
                message,
            ));
        }
    }
    let annotations_path = format!("{path}.annotations");
    let annotations = meta.annotations.iter().flatten();
    for key in annotations.clone().map(|(key, _)| key) {
        // A qualified name, whatever its case.
        for message in names::qualified_name(&key.to_lowercase()) {
            errors.push(FieldError::invalid(
                &annotations_path,
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
            annotations_path,
            i64::try_from(ANNOTATIONS_LIMIT).unwrap_or(i64::MAX),
        ));
    }
    owner_references(
        meta.owner_references.as_deref().unwrap_or_default(),
        &format!("{path}.ownerReferences"),
        &mut errors,
    );
    let finalizers_path = format!("{path}.finalizers");
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    for finalizer in finalizers {
        for message in names::qualified_name(finalizer) {
            errors.push(FieldError::invalid(
                &finalizers_path,
                BadValue::Str(finalizer.clone()),
                message,
            ));
        }
    }
    if finalizers.iter().any(|f| f == ORPHAN) && finalizers.iter().any(|f| f == FOREGROUND) {
        errors.push(FieldError::invalid(
            finalizers_path,
            BadValue::Strings(finalizers.to_vec()),
            format!("finalizer {ORPHAN} and {FOREGROUND} cannot be both set"),
        ));
    }
    managed_fields(meta, &format!("{path}.managedFields"), &mut errors);
    errors
}

/// `IsPathSegmentName` (and `IsPathSegmentPrefix` for a prefix): what apiextensions-apiserver
/// asks of the name of a resource embedded in a custom resource.
pub fn path_segment(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && let Some(whole) = [".", ".."].into_iter().find(|n| *n == name) {
        return vec![format!("may not be '{whole}'")];
    }
    ["/", "%"]
        .into_iter()
        .filter(|part| name.contains(part))
        .map(|part| format!("may not contain '{part}'"))
        .collect()
}

/// `ValidateOwnerReferences`.
fn owner_references(references: &[OwnerReference], path: &str, errors: &mut Vec<FieldError>) {
    let mut first_controller: Option<String> = None;
    for (i, reference) in references.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let (group, version) = split_api_version(&reference.api_version);
        if reference.api_version.is_empty() {
            errors.push(FieldError::required(
                format!("{at}.apiVersion"),
                "must not be empty",
            ));
        } else if version.is_empty() || reference.api_version.matches('/').count() > 1 {
            errors.push(FieldError::invalid(
                format!("{at}.apiVersion"),
                BadValue::Str(reference.api_version.clone()),
                "must be <group>/<version> or <version>",
            ));
        }
        for (field, value) in [
            ("kind", &reference.kind),
            ("name", &reference.name),
            ("uid", &reference.uid),
        ] {
            if value.is_empty() {
                errors.push(FieldError::required(
                    format!("{at}.{field}"),
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && reference.kind == "Event" {
            errors.push(FieldError::invalid(
                at,
                owner_value(reference),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if reference.controller == Some(true) {
            let name = format!("{}/{}", reference.kind, reference.name);
            match &first_controller {
                Some(first) => errors.push(FieldError::invalid(
                    path,
                    BadValue::Go(format!(
                        "[{}]",
                        references
                            .iter()
                            .map(|r| owner_value(r).to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    )),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in \
                         references for {first} and {name}"
                    ),
                )),
                None => first_controller = Some(name),
            }
        }
    }
}

/// An owner reference as Go's `json.Marshal` writes the struct.
fn owner_value(reference: &OwnerReference) -> BadValue {
    let mut fields = vec![
        ("apiVersion", json!(reference.api_version)),
        ("kind", json!(reference.kind)),
        ("name", json!(reference.name)),
        ("uid", json!(reference.uid)),
    ];
    if let Some(controller) = reference.controller {
        fields.push(("controller", Value::Bool(controller)));
    }
    if let Some(block) = reference.block_owner_deletion {
        fields.push(("blockOwnerDeletion", Value::Bool(block)));
    }
    BadValue::go_struct(&fields)
}

/// `ValidateManagedFields`.
fn managed_fields(meta: &ObjectMeta, path: &str, errors: &mut Vec<FieldError>) {
    for (i, entry) in meta.managed_fields.iter().flatten().enumerate() {
        let at = format!("{path}[{i}]");
        match entry.operation.as_deref().unwrap_or_default() {
            "" => errors.push(FieldError::required(
                format!("{at}.operation"),
                "must not be empty",
            )),
            "Apply" | "Update" => {}
            other => errors.push(FieldError::not_supported(
                format!("{at}.operation"),
                BadValue::Str(other.to_owned()),
                &["Apply", "Update"],
            )),
        }
        let fields_type = entry.fields_type.as_deref().unwrap_or_default();
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errors.push(FieldError::invalid(
                format!("{at}.fieldsType"),
                BadValue::Str(fields_type.to_owned()),
                "must be `FieldsV1`",
            ));
        }
        let manager = entry.manager.as_deref().unwrap_or_default();
        if manager.len() > FIELD_MANAGER_LIMIT {
            errors.push(FieldError::too_long(
                format!("{at}.manager"),
                FIELD_MANAGER_LIMIT as i64,
            ));
        }
        for (position, c) in manager.char_indices() {
            if !crate::field::go_printable(c) {
                errors.push(FieldError::invalid(
                    format!("{at}.manager"),
                    BadValue::Str(manager.to_owned()),
                    // Go's `%#U` of a rune it cannot print: the code point alone.
                    format!(
                        "invalid character U+{:04X} (at position {position})",
                        u32::from(c)
                    ),
                ));
            }
        }
        if entry.subresource.as_deref().unwrap_or_default().len() > SUBRESOURCE_LIMIT {
            errors.push(FieldError::too_long(
                format!("{at}.subresource"),
                SUBRESOURCE_LIMIT as i64,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use std::collections::BTreeMap;

    fn messages(meta: &ObjectMeta) -> Vec<String> {
        validate_common(meta, "metadata")
            .iter()
            .map(ToString::to_string)
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

    #[test]
    fn owner_references_and_managed_fields_are_checked_as_apimachinery_checks_them() {
        let reference = |api_version: &str, name: &str, controller: bool| OwnerReference {
            api_version: api_version.to_owned(),
            kind: "K".to_owned(),
            name: name.to_owned(),
            uid: "u".to_owned(),
            controller: controller.then_some(true),
            block_owner_deletion: None,
        };
        let meta = ObjectMeta {
            owner_references: Some(vec![
                OwnerReference::default(),
                reference("a/b/c", "n", true),
                reference("v1", "m", true),
            ]),
            managed_fields: Some(vec![ManagedFieldsEntry {
                operation: Some("Delete".to_owned()),
                fields_type: Some("FieldsV2".to_owned()),
                manager: Some("m".repeat(129)),
                ..ManagedFieldsEntry::default()
            }]),
            ..ObjectMeta::default()
        };
        assert_eq!(
            messages(&meta),
            [
                "metadata.ownerReferences[0].apiVersion: Required value: must not be empty",
                "metadata.ownerReferences[0].kind: Required value: must not be empty",
                "metadata.ownerReferences[0].name: Required value: must not be empty",
                "metadata.ownerReferences[0].uid: Required value: must not be empty",
                "metadata.ownerReferences[1].apiVersion: Invalid value: \"a/b/c\": must be <group>/<version> or <version>",
                "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"\",\"kind\":\"\",\"name\":\"\",\"uid\":\"\"},{\"apiVersion\":\"a/b/c\",\"kind\":\"K\",\"name\":\"n\",\"uid\":\"u\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"m\",\"uid\":\"u\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for K/n and K/m",
                "metadata.managedFields[0].operation: Unsupported value: \"Delete\": supported values: \"Apply\", \"Update\"",
                "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[0].manager: Too long: may not be more than 128 bytes",
            ]
        );
    }

    #[test]
    fn names_and_namespaces_are_checked_as_apimachinery_checks_them() {
        let meta = |name: &str, generate: &str, namespace: &str| ObjectMeta {
            name: (!name.is_empty()).then(|| name.to_owned()),
            generate_name: (!generate.is_empty()).then(|| generate.to_owned()),
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            ..ObjectMeta::default()
        };
        let check = |meta: &ObjectMeta, requires_namespace: bool| -> Vec<String> {
            validate(meta, "spec.t.metadata", requires_namespace, path_segment)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            check(&meta("..", "a%/", ""), false),
            [
                "spec.t.metadata.generateName: Invalid value: \"a%/\": may not contain '/'",
                "spec.t.metadata.generateName: Invalid value: \"a%/\": may not contain '%'",
                "spec.t.metadata.name: Invalid value: \"..\": may not be '..'",
            ]
        );
        assert_eq!(
            check(&meta("", "", "ns"), false),
            [
                "spec.t.metadata.name: Required value: name or generateName is required",
                "spec.t.metadata.namespace: Forbidden: not allowed on this type",
            ]
        );
        assert_eq!(
            check(&meta("UPPER_ok", "", ""), true),
            ["spec.t.metadata.namespace: Required value"]
        );
        assert!(check(&meta("x", "", "Bad_NS"), true)[0].starts_with(
            "spec.t.metadata.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label"
        ));
    }
}
