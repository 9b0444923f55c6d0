//! Whether a CRD's schema is structural, as apiextensions-apiserver requires of every v1 CRD
//! (`pkg/apiserver/schema/validation.go`, `ValidateStructural`): a type everywhere but under
//! `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`, items for arrays,
//! no `additionalProperties` at the root, an object at the root whose `kind` and `apiVersion`
//! are strings and whose `metadata` says nothing but `name` and `generateName`, and inside
//! `allOf`, `anyOf`, `oneOf` and `not` value validations only. Upstream sorts these errors by
//! their text; so does this.

use apfkit_runtime::field::{BadValue, FieldError, Path};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrBool,
};

use crate::extensions::{items_of, type_of};
use crate::schema::MAX_SCHEMA_DEPTH;

/// Where a schema node is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural-schema errors of a version's `openAPIV3Schema` at `path`, sorted.
pub fn check(props: &JSONSchemaProps, path: &Path) -> Vec<FieldError> {
    let mut errors = Vec::new();
    invariants(props, Level::Root, path, 0, &mut errors);
    errors.sort_by_key(ToString::to_string);
    errors
}

fn invariants(
    props: &JSONSchemaProps,
    level: Level,
    path: &Path,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let kind = type_of(props);
    let int_or_string = props.x_kubernetes_int_or_string == Some(true);
    let preserve = props.x_kubernetes_preserve_unknown_fields == Some(true);
    let embedded = props.x_kubernetes_embedded_resource == Some(true);
    if kind == "array" && props.items.is_none() {
        errors.push(FieldError::required(
            path.child("items"),
            "must be specified",
        ));
    }
    if let Some(items) = items_of(props) {
        invariants(items, Level::Item, &path.child("items"), depth + 1, errors);
    }
    for (name, property) in props.properties.iter().flatten() {
        let at = path.child("properties").key(name);
        invariants(property, Level::Field, &at, depth + 1, errors);
    }
    if let Some(additional) = &props.additional_properties {
        if level == Level::Root {
            errors.push(FieldError::forbidden(
                path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let JSONSchemaPropsOrBool::Schema(values) = additional {
            let at = path.child("additionalProperties");
            invariants(values, Level::Field, &at, depth + 1, errors);
        }
    }
    if int_or_string && preserve {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            BadValue::Go("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-embedded-resource"),
            BadValue::Go("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    for (name, list) in [
        ("allOf", &props.all_of),
        ("anyOf", &props.any_of),
        ("oneOf", &props.one_of),
    ] {
        // `x-kubernetes-int-or-string` with `anyOf: [{type: integer}, {type: string}]` (or
        // that inside the first `allOf`) is the one pattern with types allowed there.
        let int_or_string_pattern = int_or_string && is_int_or_string_pair(list.as_deref());
        for (i, sub) in list.iter().flatten().enumerate() {
            if int_or_string_pattern {
                continue;
            }
            let skip_any_of = int_or_string
                && name == "allOf"
                && i == 0
                && is_int_or_string_pair(sub.any_of.as_deref());
            value_validation(
                sub,
                &path.child(name).index(i),
                skip_any_of,
                depth + 1,
                errors,
            );
        }
    }
    if let Some(not) = &props.not {
        value_validation(not, &path.child("not"), false, depth + 1, errors);
    }
    let check_metadata = level == Level::Root || embedded;
    if embedded && kind != "object" {
        if kind.is_empty() {
            errors.push(FieldError::required(
                path.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errors.push(FieldError::invalid(
                path.child("type"),
                BadValue::Str(kind.to_owned()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if kind.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(path.child("type"), detail));
    }
    if embedded && props.additional_properties.is_some() {
        errors.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !kind.is_empty() && kind != "object" {
        errors.push(FieldError::invalid(
            path.child("type"),
            BadValue::Str(kind.to_owned()),
            "must be object at the root",
        ));
    }
    let properties = props.properties.as_ref();
    for field in ["kind", "apiVersion"] {
        if let Some(property) = properties.and_then(|p| p.get(field))
            && check_metadata
            && type_of(property) != "string"
        {
            errors.push(FieldError::invalid(
                path.child("properties").key(field).child("type"),
                BadValue::Str(type_of(property).to_owned()),
                "must be string",
            ));
        }
    }
    if let Some(metadata) = properties.and_then(|p| p.get("metadata")) {
        let at = path.child("properties").key("metadata");
        if check_metadata && type_of(metadata) != "object" {
            errors.push(FieldError::invalid(
                at.child("type"),
                BadValue::Str(type_of(metadata).to_owned()),
                "must be object",
            ));
        }
        if level == Level::Root && !only_names(metadata) {
            errors.push(FieldError::forbidden(
                at,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && properties.is_none_or(|p| p.is_empty()) {
        errors.push(FieldError::required(
            path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Whether a root `metadata` schema says nothing but its type and `name`/`generateName`.
fn only_names(metadata: &JSONSchemaProps) -> bool {
    let mut bare = metadata.clone();
    bare.type_ = None;
    bare.default = None;
    bare.description = None;
    if let Some(properties) = &bare.properties
        && properties
            .keys()
            .all(|k| k == "name" || k == "generateName")
    {
        bare.properties = None;
    }
    bare == JSONSchemaProps::default()
}

fn is_int_or_string_pair(list: Option<&[JSONSchemaProps]>) -> bool {
    let Some([first, second]) = list else {
        return false;
    };
    let only_type = |s: &JSONSchemaProps, t: &str| {
        let mut bare = s.clone();
        bare.type_ = None;
        type_of(s) == t && bare == JSONSchemaProps::default()
    };
    only_type(first, "integer") && only_type(second, "string")
}

/// Inside `allOf`/`anyOf`/`oneOf`/`not`: value validations only (upstream's
/// `validateNestedValueValidation`).
fn value_validation(
    props: &JSONSchemaProps,
    path: &Path,
    skip_any_of: bool,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    const EMPTY: &str = "must be empty to be structural";
    const UNDEFINED: &str = "must be undefined to be structural";
    const FALSE: &str = "must be false to be structural";
    let text = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.is_empty());
    let forbidden = [
        ("type", text(&props.type_), EMPTY),
        (
            "additionalProperties",
            props.additional_properties.is_some(),
            UNDEFINED,
        ),
        ("default", props.default.is_some(), UNDEFINED),
        ("title", text(&props.title), EMPTY),
        ("description", text(&props.description), EMPTY),
        ("nullable", props.nullable == Some(true), FALSE),
        (
            "x-kubernetes-preserve-unknown-fields",
            props.x_kubernetes_preserve_unknown_fields.is_some(),
            FALSE,
        ),
        (
            "x-kubernetes-embedded-resource",
            props.x_kubernetes_embedded_resource == Some(true),
            FALSE,
        ),
        (
            "x-kubernetes-int-or-string",
            props.x_kubernetes_int_or_string == Some(true),
            FALSE,
        ),
        (
            "x-kubernetes-list-map-keys",
            props
                .x_kubernetes_list_map_keys
                .as_ref()
                .is_some_and(|k| !k.is_empty()),
            EMPTY,
        ),
        (
            "x-kubernetes-list-type",
            props.x_kubernetes_list_type.is_some(),
            UNDEFINED,
        ),
        (
            "x-kubernetes-map-type",
            props.x_kubernetes_map_type.is_some(),
            UNDEFINED,
        ),
        (
            "x-kubernetes-validations",
            props
                .x_kubernetes_validations
                .as_ref()
                .is_some_and(|v| !v.is_empty()),
            EMPTY,
        ),
    ];
    for (field, set, detail) in forbidden {
        if set {
            errors.push(FieldError::forbidden(path.child(field), detail));
        }
    }
    if props
        .properties
        .as_ref()
        .is_some_and(|p| p.contains_key("metadata"))
    {
        errors.push(FieldError::forbidden(
            path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
    if let Some(items) = items_of(props) {
        value_validation(items, &path.child("items"), false, depth + 1, errors);
    }
    for (name, property) in props.properties.iter().flatten() {
        let at = path.child("properties").key(name);
        value_validation(property, &at, false, depth + 1, errors);
    }
    for (name, list) in [
        ("allOf", &props.all_of),
        ("anyOf", &props.any_of),
        ("oneOf", &props.one_of),
    ] {
        if name == "anyOf" && skip_any_of {
            continue;
        }
        for (i, sub) in list.iter().flatten().enumerate() {
            value_validation(sub, &path.child(name).index(i), false, depth + 1, errors);
        }
    }
    if let Some(not) = &props.not {
        value_validation(not, &path.child("not"), false, depth + 1, errors);
    }
}
