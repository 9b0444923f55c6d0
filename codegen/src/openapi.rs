//! The subset of the OpenAPI v3 document model that Kubernetes serves.
//!
//! Kubernetes publishes one document per group-version at `/openapi/v3/apis/<group>/<version>`.
//! Only the parts the generator reads are modelled; every other key is accepted and ignored, so
//! documents from newer releases still load.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A whole OpenAPI v3 document.
#[derive(Debug, Clone, Deserialize)]
pub struct Document {
    /// The OpenAPI version, `3.0.0` for every Kubernetes release.
    pub openapi: String,
    /// Reusable definitions; Kubernetes puts every type under `schemas`.
    #[serde(default)]
    pub components: Components,
    /// The REST paths; used to find the plural name and scope of each kind.
    #[serde(default)]
    pub paths: BTreeMap<String, PathItem>,
}

/// The `components` object of a document.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Components {
    /// Named schemas, keyed by their definition name (`io.k8s.api.flowcontrol.v1.FlowSchema`).
    #[serde(default)]
    pub schemas: BTreeMap<String, Schema>,
}

/// The operations on one path. Only the fields needed for resource identity are read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PathItem {
    /// The GET operation, which Kubernetes marks with `x-kubernetes-action: get` for reads.
    pub get: Option<Operation>,
}

/// One HTTP operation.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Operation {
    /// What the operation does to the resource: `get`, `list`, `watch`, ….
    #[serde(rename = "x-kubernetes-action")]
    pub action: Option<String>,
    /// The kind the operation serves.
    #[serde(rename = "x-kubernetes-group-version-kind")]
    pub group_version_kind: Option<GroupVersionKind>,
}

/// A group, version and kind, as in `x-kubernetes-group-version-kind`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct GroupVersionKind {
    /// The API group; empty for the legacy core group.
    #[serde(default)]
    pub group: String,
    /// The API version inside the group.
    pub version: String,
    /// The kind.
    pub kind: String,
}

/// `additionalProperties`: either a boolean or a schema for the values.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AdditionalProperties {
    /// `true` allows any value, `false` none.
    Allowed(bool),
    /// Every value follows this schema.
    Schema(Box<Schema>),
}

/// One `x-kubernetes-validations` entry: a CEL rule and how its failure is reported.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationRule {
    /// The CEL expression; `self` is the value.
    pub rule: String,
    /// Message when the rule fails.
    pub message: Option<String>,
    /// CEL expression computing the message.
    pub message_expression: Option<String>,
    /// Reason reported with the failure (`FieldValueInvalid`, …).
    pub reason: Option<String>,
    /// Path of the field the failure is reported on, relative to the value.
    pub field_path: Option<String>,
}

/// One schema object, with the Kubernetes vendor extensions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schema {
    /// `$ref` to another schema of the same document.
    #[serde(rename = "$ref")]
    pub reference: Option<String>,
    /// Kubernetes wraps references as `allOf: [{$ref}]` so they can carry a description.
    #[serde(default)]
    pub all_of: Vec<Schema>,
    /// Alternatives; generated as untyped JSON.
    #[serde(default)]
    pub one_of: Vec<Schema>,
    /// Alternatives; generated as untyped JSON.
    #[serde(default)]
    pub any_of: Vec<Schema>,
    /// Human description, turned into doc comments.
    pub description: Option<String>,
    /// `string`, `integer`, `number`, `boolean`, `array` or `object`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// `int32`, `int64`, `date-time`, `byte`, `int-or-string`, ….
    pub format: Option<String>,
    /// Object properties.
    #[serde(default)]
    pub properties: BTreeMap<String, Schema>,
    /// Names of required properties.
    #[serde(default)]
    pub required: Vec<String>,
    /// Schema of array items.
    pub items: Option<Box<Schema>>,
    /// Schema of map values.
    pub additional_properties: Option<AdditionalProperties>,
    /// Default value.
    pub default: Option<Value>,
    /// Allowed values.
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<Value>>,
    /// Whether `null` is an allowed value.
    #[serde(default)]
    pub nullable: bool,
    /// Kinds this schema serves.
    #[serde(rename = "x-kubernetes-group-version-kind", default)]
    pub group_version_kinds: Vec<GroupVersionKind>,
    /// `atomic`, `set` or `map`.
    #[serde(rename = "x-kubernetes-list-type")]
    pub list_type: Option<String>,
    /// Keys of a `map` list.
    #[serde(rename = "x-kubernetes-list-map-keys")]
    pub list_map_keys: Option<Vec<String>>,
    /// `atomic` or `granular`, for maps and structs.
    #[serde(rename = "x-kubernetes-map-type")]
    pub map_type: Option<String>,
    /// How a strategic merge patch merges the value (`merge`, `replace`, `retainKeys`, or
    /// several joined by `,`), from the Go field's `patchStrategy` tag.
    #[serde(rename = "x-kubernetes-patch-strategy")]
    pub patch_strategy: Option<String>,
    /// The key of a list's items that a strategic merge patch merges by.
    #[serde(rename = "x-kubernetes-patch-merge-key")]
    pub patch_merge_key: Option<String>,
    /// Accepts an integer or a string.
    #[serde(rename = "x-kubernetes-int-or-string", default)]
    pub int_or_string: bool,
    /// Fields the schema does not list are kept (not pruned).
    #[serde(rename = "x-kubernetes-preserve-unknown-fields", default)]
    pub preserve_unknown_fields: bool,
    /// The object is a whole Kubernetes object: `apiVersion`, `kind` and `metadata` included.
    #[serde(rename = "x-kubernetes-embedded-resource", default)]
    pub embedded_resource: bool,
    /// CEL rules kube-apiserver checks on the value.
    #[serde(rename = "x-kubernetes-validations", default)]
    pub validations: Vec<ValidationRule>,
    /// Regular expression a string must match.
    pub pattern: Option<String>,
    /// apfkit extension, written for CRDs: the `scale` subresource's replica paths.
    #[serde(rename = "x-apfkit-scale")]
    pub scale: Option<apfkit_runtime::kind::ScaleSubresource>,
    /// apfkit extension: the server also replaces the zero value (0, "", false) by `default`,
    /// as kube-apiserver's hand-written defaulters do for non-pointer Go fields.
    #[serde(rename = "x-apfkit-default-on-zero", default)]
    pub default_on_zero: bool,
    /// apfkit extension: how kube-apiserver's Go struct lays the object out (field order,
    /// protobuf field numbers, pointers, `omitempty`), for the protobuf and Go-order JSON codecs.
    #[serde(rename = "x-apfkit-go")]
    pub go: Option<GoLayout>,
}

/// The `x-apfkit-go` extension of an object schema: its Go struct's fields in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GoLayout {
    /// Every property, in Go's order; `kind` and `apiVersion` of an inlined `TypeMeta` first.
    pub fields: Vec<GoField>,
}

/// One field of a Go struct.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GoField {
    /// The property (JSON) name.
    pub json: String,
    /// The protobuf field number; `None` for `TypeMeta`'s fields, which the message lacks.
    pub protobuf: Option<u32>,
    /// The Go field is a pointer (protobuf writes it only when set).
    #[serde(default)]
    pub pointer: bool,
    /// The JSON tag has `omitempty`.
    #[serde(default)]
    pub omitempty: bool,
    /// The JSON tag has `omitzero`.
    #[serde(default)]
    pub omitzero: bool,
}
