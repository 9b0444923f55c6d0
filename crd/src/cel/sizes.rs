//! What a schema declares about the sizes of the values rules read, as kube-apiserver's
//! `SchemaDeclType` (k8s.io/apiserver `pkg/cel/common/schemas.go`) records it: the smallest
//! JSON a value can be (`MinSerializedSize`), and the most elements a list, map, string or
//! bytes value can hold (`MaxElements`), from `maxItems`, `maxProperties` and `maxLength`, or
//! else from what fits in kube-apiserver's 3 MiB request limit.

use serde_json::Value;

use super::values::escape;
use crate::schema::{Schema, Type};

/// kube-apiserver's largest request body, which bounds what an unbounded value can hold.
pub(crate) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// The longest JSON a `duration` or `date-time` string is (`MaxDurationSizeJSON`,
/// `MaxDatetimeSizeJSON` in k8s.io/apiserver `pkg/cel/limits.go`).
const MAX_DURATION_OR_DATETIME_JSON: u64 = 32;
/// The JSON size of a `date` string, quotes included (`JSONDateSize`).
const JSON_DATE: u64 = 12;
/// The shortest JSON of a `duration` (`MinDurationSizeJSON`) and of a `date-time`
/// (`MinDatetimeSizeJSON`).
const MIN_DURATION_JSON: u64 = 3;
const MIN_DATETIME_JSON: u64 = 21;

/// The smallest JSON a value of the schema can be, as `SchemaDeclType` counts it: `""`
/// (or a format's shortest string), `0`, `true`, `[]`, and for an object `{}` plus each
/// required property that has no default.
pub(crate) fn min_json_size(schema: Option<&Schema>) -> u64 {
    let Some(schema) = schema else {
        return 1;
    };
    if schema.int_or_string {
        return 1;
    }
    match schema.kind {
        Some(Type::String) => match schema.format.as_deref() {
            Some("duration") => MIN_DURATION_JSON,
            Some("date") => JSON_DATE,
            Some("date-time") => MIN_DATETIME_JSON,
            _ => 2,
        },
        Some(Type::Boolean) => 4,
        Some(Type::Array) => 2,
        Some(Type::Object) if schema.additional_properties.is_some() => 2,
        Some(Type::Object) => {
            2 + schema
                .required
                .iter()
                .filter_map(|name| Some((name, schema.properties.get(name)?)))
                .filter(|(_, property)| property.default.is_none())
                .map(|(name, property)| name.len() as u64 + min_json_size(Some(property)) + 4)
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// The most elements a list (or map) of elements of `min_size` can have in one request
/// (`estimateMaxArrayItemsFromMinSize`, `estimateMaxAdditionalPropertiesFromMinSize`).
fn fitting(min_size: u64, map: bool) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (min_size + if map { 6 } else { 1 })
}

/// How many elements a value of `schema` can have at most (`MaxElements`): a list's items, a
/// map's entries, a string's bytes (`maxLength` characters of up to 4 bytes each, an enum's
/// longest value, or a format's longest string), a byte string's bytes; 0 for the rest.
pub(crate) fn max_elements(schema: &Schema) -> u64 {
    if schema.int_or_string {
        return max_children(schema.max_length)
            .map_or(MAX_REQUEST_BYTES - 2, |max| max.saturating_mul(4));
    }
    match schema.kind {
        Some(Type::Array) => max_children(schema.max_items)
            .unwrap_or_else(|| fitting(min_json_size(schema.items.as_deref()), false)),
        Some(Type::Object) => match &schema.additional_properties {
            Some(values) => max_children(schema.max_properties)
                .unwrap_or_else(|| fitting(min_json_size(Some(values)), true)),
            None => 0,
        },
        Some(Type::String) => match schema.format.as_deref() {
            Some("duration" | "date-time") => MAX_DURATION_OR_DATETIME_JSON,
            Some("date") => JSON_DATE,
            Some("byte") => max_children(schema.max_length).unwrap_or(MAX_REQUEST_BYTES - 2),
            _ => declared_length(schema, 4),
        },
        _ => 0,
    }
}

/// The longest a string of `schema` can be: its `maxLength` characters of `per_character`
/// each, else its enum's longest value, else what fits in a request.
pub(crate) fn declared_length(schema: &Schema, per_character: u64) -> u64 {
    match (schema.max_length, schema.enumeration.is_empty()) {
        (Some(max), _) => (max.max(0) as u64).saturating_mul(per_character),
        (None, false) => schema
            .enumeration
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.len() as u64)
            .max()
            .unwrap_or(0),
        (None, true) => MAX_REQUEST_BYTES - 2,
    }
}

/// Whether kube-apiserver declares a CEL type for `schema` at all (`SchemaDeclType` returns
/// nil for a list without items, a map whose values have none, and an untyped schema that is
/// not an int-or-string): rules cannot reach below such a node, nor size it.
pub(crate) fn declared(schema: &Schema) -> bool {
    if schema.int_or_string {
        return true;
    }
    match schema.kind {
        Some(Type::Array) => schema.items.as_deref().is_some_and(declared),
        Some(Type::Object) => schema.additional_properties.as_deref().is_none_or(declared),
        Some(Type::Any) | None => false,
        Some(_) => true,
    }
}

/// The declared property a rule names `name` (escaped as rules write it), if it has a type.
pub(crate) fn property<'a>(schema: &'a Schema, name: &str) -> Option<&'a Schema> {
    if schema.additional_properties.is_some() {
        return None;
    }
    schema
        .properties
        .iter()
        .find(|(key, _)| escape(key).as_deref() == Some(name))
        .map(|(_, property)| property)
        .filter(|property| declared(property))
}

/// The longest `metadata.name` a rule at a resource's root is sized by when the schema does
/// not say (apimachinery's `DNS1123SubdomainMaxLength`, kube-apiserver 1.37).
const NAME_MAX_LENGTH: u64 = 253;

/// What a rule at a resource's root (a custom resource's, or an embedded resource's) reads of
/// `apiVersion`, `kind` and `metadata`, which kube-apiserver declares there whatever the
/// schema says (apiextensions-apiserver's `WithTypeAndObjectMeta`): `None` when the schema
/// itself declares all four strings (`kind`, `apiVersion`, `metadata.name`,
/// `metadata.generateName`), which are then read as declared. Otherwise `kind` and
/// `apiVersion` are strings of no declared length, `metadata` holds only `name` and
/// `generateName`, capped at 253 and 252 characters (1.37) or the schema's own shorter
/// `maxLength`.
pub(crate) fn resource_root_envelope(schema: &Schema) -> Option<Envelope> {
    let is_string = |node: Option<&Schema>| node.is_some_and(|n| n.kind == Some(Type::String));
    let metadata = schema.properties.get("metadata");
    let declared = is_string(schema.properties.get("kind"))
        && is_string(schema.properties.get("apiVersion"))
        && metadata.is_some_and(|m| {
            m.kind == Some(Type::Object)
                && is_string(m.properties.get("name"))
                && is_string(m.properties.get("generateName"))
        });
    if declared {
        return None;
    }
    let capped = |field: &str, cap: u64| {
        let own = metadata
            .and_then(|m| m.properties.get(field))
            .and_then(|node| max_children(node.max_length));
        own.map_or(cap, |own| own.min(cap))
    };
    Some(Envelope {
        name: capped("name", NAME_MAX_LENGTH),
        // A generated name's suffix is at least one character.
        generate_name: capped("generateName", NAME_MAX_LENGTH - 1),
    })
}

/// The longest `metadata.name` and `metadata.generateName`, in characters, at a resource's
/// root whose schema does not declare them ([`resource_root_envelope`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub name: u64,
    pub generate_name: u64,
}

impl Envelope {
    /// The most elements (bytes, four per character) a value at `steps` below the root can
    /// hold, or `None` when kube declares nothing there; `steps` start with `apiVersion`,
    /// `kind` or `metadata`.
    pub(crate) fn max_elements(self, steps: &[String]) -> Option<u64> {
        match steps {
            [field] if field == "apiVersion" || field == "kind" => Some(MAX_REQUEST_BYTES - 2),
            [metadata] if metadata == "metadata" => Some(0),
            [metadata, field] if metadata == "metadata" && field == "name" => {
                Some(self.name.saturating_mul(4))
            }
            [metadata, field] if metadata == "metadata" && field == "generateName" => {
                Some(self.generate_name.saturating_mul(4))
            }
            _ => None,
        }
    }
}

/// The schema of a list's items or a map's values, if it has a type.
pub(crate) fn element(schema: &Schema) -> Option<&Schema> {
    if schema.int_or_string {
        return None;
    }
    match schema.kind {
        Some(Type::Array) => schema.items.as_deref(),
        Some(Type::Object) => schema.additional_properties.as_deref(),
        _ => None,
    }
    .filter(|element| declared(element))
}

/// How many times a rule on a node of `schema` can run when a list or map above it is
/// unbounded: as many values of its smallest size as fit in a request
/// (apiextensions-apiserver's `maxCardinality`, from the node's own type).
pub fn unbounded_cardinality(schema: &Schema) -> u64 {
    MAX_REQUEST_BYTES / (min_json_size(Some(schema)) + 1)
}

pub use crate::schema::max_children;
