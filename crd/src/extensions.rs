//! The checks of the list and map extensions of a CRD's schema that apiextensions-apiserver
//! makes as it walks the schema (`ValidateCustomResourceDefinitionOpenAPISchema` in
//! `pkg/apis/apiextensions/validation/validation.go`), node by node ([`crate::schema`]).

use apfkit_runtime::field::{BadValue, FieldError, Path};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray,
};

/// A node's `type`, empty when it has none.
pub(crate) fn type_of(props: &JSONSchemaProps) -> &str {
    props.type_.as_deref().unwrap_or("")
}

/// A node's `items` when they are one schema.
pub(crate) fn items_of(props: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &props.items {
        Some(JSONSchemaPropsOrArray::Schema(items)) => Some(items),
        _ => None,
    }
}

/// The checks of a node's list and map extensions that kube-apiserver makes as it walks a
/// schema (`ValidateCustomResourceDefinitionOpenAPISchema`, after the node's children), in its
/// order: `x-kubernetes-preserve-unknown-fields: false`, `x-kubernetes-map-type` on objects,
/// `x-kubernetes-list-type` on arrays and atomic items in a set, map keys for a map list
/// (`validateMapListKeysMapSet` last).
pub(crate) fn list_and_map_types(
    props: &JSONSchemaProps,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let kind = type_of(props);
    if props.x_kubernetes_preserve_unknown_fields == Some(false) {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            BadValue::Go("false".into()),
            "must be true or undefined",
        ));
    }
    let must_be = |errors: &mut Vec<FieldError>, wanted: &str, extension: &str| {
        let detail = format!("must be {wanted} if {extension} is specified");
        if kind.is_empty() {
            errors.push(FieldError::required(path.child("type"), detail));
        } else {
            errors.push(FieldError::invalid(
                path.child("type"),
                BadValue::Str(kind.to_owned()),
                detail,
            ));
        }
    };
    if let Some(map_type) = &props.x_kubernetes_map_type {
        if kind != "object" {
            must_be(errors, "object", "x-kubernetes-map-type");
        }
        if map_type != "atomic" && map_type != "granular" {
            errors.push(FieldError::not_supported(
                path.child("x-kubernetes-map-type"),
                BadValue::Str(map_type.clone()),
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = props.x_kubernetes_list_type.as_deref();
    if list_type.is_some() && kind != "array" {
        must_be(errors, "array", "x-kubernetes-list-type");
    } else if list_type == Some("set")
        && let Some(items) = items_of(props)
    {
        // Items that are lists must be atomic ones, objects atomic maps (granular is
        // their default).
        let item_list_type =
            || BadValue::Str(items.x_kubernetes_list_type.clone().unwrap_or_default());
        match type_of(items) {
            "array"
                if items
                    .x_kubernetes_list_type
                    .as_deref()
                    .is_some_and(|t| t != "atomic") =>
            {
                errors.push(FieldError::invalid(
                    path.child("items").child("x-kubernetes-list-type"),
                    item_list_type(),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            "object" if items.x_kubernetes_map_type.as_deref() != Some("atomic") => {
                errors.push(FieldError::invalid(
                    path.child("items").child("x-kubernetes-map-type"),
                    item_list_type(),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            _ => {}
        }
    }
    if let Some(list_type) = list_type
        && !matches!(list_type, "atomic" | "set" | "map")
    {
        errors.push(FieldError::not_supported(
            path.child("x-kubernetes-list-type"),
            BadValue::Str(list_type.to_owned()),
            &["atomic", "set", "map"],
        ));
    }
    let keys = props
        .x_kubernetes_list_map_keys
        .as_deref()
        .unwrap_or_default();
    if !keys.is_empty() {
        match list_type {
            None => errors.push(FieldError::required(
                path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errors.push(FieldError::invalid(
                path.child("x-kubernetes-list-type"),
                BadValue::Str(other.to_owned()),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errors.push(FieldError::required(
                path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &props.items {
            None => errors.push(FieldError::required(
                path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(JSONSchemaPropsOrArray::Schemas(_)) => errors.push(FieldError::invalid(
                path.child("items"),
                BadValue::Go("[...]".into()),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(JSONSchemaPropsOrArray::Schema(items)) if type_of(items) != "object" => {
                errors.push(FieldError::invalid(
                    path.child("items").child("type"),
                    BadValue::Str(type_of(items).to_owned()),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(JSONSchemaPropsOrArray::Schema(items)) => {
                let keys_value = || BadValue::Strings(keys.to_vec());
                for (i, key) in keys.iter().enumerate() {
                    match items.properties.as_ref().and_then(|p| p.get(key)) {
                        Some(property) if matches!(type_of(property), "array" | "object") => {
                            errors.push(FieldError::invalid(
                                path.child("items").child("properties").key(key).child("type"),
                                BadValue::Str(type_of(items).to_owned()),
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            ));
                        }
                        Some(_) => {}
                        None => errors.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys"),
                            keys_value(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if keys[..i].contains(key) {
                        errors.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys"),
                            keys_value(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    map_list_keys_map_set(props, list_type, keys, path, errors);
}

/// `validateMapListKeysMapSet`: a set's or map list's items not nullable, a map list's keys
/// required or defaulted and not nullable.
fn map_list_keys_map_set(
    props: &JSONSchemaProps,
    list_type: Option<&str>,
    keys: &[String],
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let (Some(list_type @ ("set" | "map")), Some(items)) = (list_type, items_of(props)) else {
        return;
    };
    if items.nullable == Some(true) {
        errors.push(FieldError::forbidden(
            path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type != "map" {
        return;
    }
    for key in keys {
        let Some(property) = items.properties.as_ref().and_then(|p| p.get(key)) else {
            continue;
        };
        let at = path.child("items").child("properties").key(key);
        let required = items.required.iter().flatten().any(|r| r == key);
        if !required && property.default.is_none() {
            errors.push(FieldError::required(
                at.child("default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if property.nullable == Some(true) {
            errors.push(FieldError::forbidden(
                at.child("nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}
