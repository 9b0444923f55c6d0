//! The deterministic type space: every schema of the input documents turned into a Rust type
//! description, in ordered maps so that output never depends on hash order.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{Error, Result, pointer};
use crate::load::LoadedDocument;
use crate::names::{field_ident, split_definition, type_ident};
use crate::openapi::{AdditionalProperties, GoLayout, GroupVersionKind, Schema};
use crate::settings::{Enums, NestedNames, Settings};

const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";

/// Kubernetes' shared definitions that become `apfkit-runtime` types unless a replacement
/// (such as k8s-openapi's) applies.
const QUANTITY_DEFINITION: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
pub(crate) const INT_OR_STRING_DEFINITION: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
pub(crate) const TIME_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
pub(crate) const MICRO_TIME_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
const OBJECT_META_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The pattern controller-gen (kubebuilder) writes for a `resource.Quantity` field, which it
/// also marks `x-kubernetes-int-or-string`.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Name of the flattened map that keeps the fields a schema does not list.
const OTHER_FIELDS: &str = "other_fields";

/// All types to generate, keyed by definition name: what [`crate::Generator::type_space`]
/// returns and [`crate::emit_conversions`] pairs.
#[derive(Debug, Default)]
pub struct TypeSpace {
    /// The generated types.
    pub(crate) entries: BTreeMap<String, TypeEntry>,
    /// Definitions replaced by existing Rust types, with their paths.
    pub(crate) replaced: BTreeMap<String, String>,
    /// Replaced definitions with a Go layout, with the settings' wire codecs on: their fields,
    /// for the codec impls on the existing types.
    pub(crate) foreign: BTreeMap<String, StructDef>,
}

/// One generated type.
#[derive(Debug, Clone)]
pub struct TypeEntry {
    /// The OpenAPI definition name, or a synthetic one for inline objects.
    pub definition: String,
    /// Module path relative to the output root.
    pub module: Vec<String>,
    /// The Rust type name.
    pub name: String,
    /// Doc text from the description.
    pub doc: Option<String>,
    /// Struct, newtype or enum.
    pub body: TypeBody,
    /// The pieces the name is made of: the definition's name, then one per property, `Item`
    /// or `Value` on the way to a nested schema.
    pub(crate) name_parts: Vec<String>,
    /// Where the schema is, for errors.
    pub(crate) site: Site,
}

/// A place in an input document.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// The document's name.
    pub file: String,
    /// JSON pointer into it.
    pub pointer: String,
}

impl Site {
    fn unsupported(&self, message: String) -> Error {
        Error::Unsupported {
            file: self.file.clone(),
            pointer: self.pointer.clone(),
            message,
        }
    }
}

/// The shape of a generated type.
#[derive(Debug, Clone)]
pub enum TypeBody {
    /// A struct with named fields.
    Struct(Box<StructDef>),
    /// A transparent newtype around another type.
    Newtype(FieldType),
    /// A string enum.
    Enum(EnumDef),
}

/// A string schema's `enum`, as a Rust enum.
#[derive(Debug, Clone)]
pub struct EnumDef {
    /// One unit variant per listed value, in the schema's order.
    pub variants: Vec<EnumVariant>,
    /// With [`Enums::Open`]: the name of the last variant, which keeps any other string.
    pub other: Option<String>,
}

/// One listed value of an enum.
#[derive(Debug, Clone)]
pub struct EnumVariant {
    /// The string on the wire.
    pub wire: String,
    /// The Rust variant name.
    pub rust: String,
}

/// The map that keeps fields a struct's schema does not list (flattened into the struct).
#[derive(Debug, Clone)]
pub struct OtherFields {
    /// Rust name of the map field.
    pub rust: String,
    /// Type of its values.
    pub value: FieldType,
}

/// A struct with its fields and identity.
#[derive(Debug, Clone, Default)]
pub struct StructDef {
    /// Fields in wire-name order.
    pub fields: Vec<FieldDef>,
    /// Set when the schema serves exactly one kind: `apiVersion` and `kind` are then constants.
    pub kind: Option<GroupVersionKind>,
    /// Plural and scope, when the document has a read path for the kind.
    pub resource: Option<ResourceIdentity>,
    /// For list kinds: the definition of the item kind.
    pub list_item: Option<String>,
    /// Hand-written function called after the generated defaults.
    pub hook: Option<String>,
    /// Hand-written `fn(&T) -> bool`: whether the hook would leave the value as it is.
    pub hook_check: Option<String>,
    /// Fields the schema does not list, kept in a flattened map
    /// (`x-kubernetes-preserve-unknown-fields`, embedded resources, `additionalProperties`
    /// beside `properties`).
    pub other_fields: Option<OtherFields>,
    /// Subresources served for the kind (`status`, `scale`), sorted.
    pub subresources: Vec<String>,
    /// Replica paths of the `scale` subresource, from a CRD.
    pub scale: Option<apfkit_runtime::kind::ScaleSubresource>,
    /// kube-apiserver's Go layout of the struct (`x-apfkit-go`).
    pub go: Option<GoLayout>,
}

/// Plural name and scope of a resource, from the document's paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceIdentity {
    /// The URL segment, such as `flowschemas`.
    pub plural: String,
    /// Whether URLs carry a namespace.
    pub namespaced: bool,
}

/// Whether a field is an `Option` or always present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Listed in `required`, or a non-pointer Go struct (`default: {}`): a bare value,
    /// decoded leniently (absent or `null` gives the empty value) and always encoded.
    Always,
    /// Anything else: `Option<T>`, left out when `None`.
    Optional,
}

/// One struct field.
#[derive(Debug, Clone)]
pub struct FieldDef {
    /// JSON name.
    pub wire: String,
    /// Rust name.
    pub rust: String,
    /// Doc text.
    pub doc: Option<String>,
    /// The value type (without `Option`).
    pub ty: FieldType,
    /// `Option` or bare.
    pub presence: Presence,
    /// Default applied by `apply_defaults` when the field is `None`.
    pub default: Option<Value>,
    /// Also replace the zero value by the default.
    pub default_on_zero: bool,
    /// Allowed string values, for the JSON Schema.
    pub enum_values: Vec<String>,
    /// The Kubernetes extensions kept in the JSON Schema (`x-kubernetes-list-type`,
    /// `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, `x-kubernetes-patch-strategy`,
    /// `x-kubernetes-patch-merge-key`): what patches and server-side apply merge by.
    pub extensions: Vec<(String, Value)>,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// Whether the value must be boxed to break a cycle.
    pub boxed: bool,
    /// Where the property's schema is, for errors about its default.
    pub(crate) site: Site,
}

/// The type of a value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldType {
    /// `String`.
    String,
    /// `String` holding base64 text (`format: byte`, Go's `[]byte`): kept as written, and
    /// checked on decode as Go's `encoding/json` checks it.
    Bytes,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f64`.
    F64,
    /// `bool`.
    Bool,
    /// `serde_json::Value`, for untyped and free-form values.
    Json,
    /// `x-kubernetes-int-or-string`: a 32-bit integer or a string.
    IntOrString,
    /// `format: date-time`, checked and kept as written.
    DateTime,
    /// A Kubernetes quantity, checked and kept as written.
    Quantity,
    /// `Vec<T>`.
    Vec(Box<FieldType>),
    /// `BTreeMap<String, T>`.
    Map(Box<FieldType>),
    /// Another definition, generated or replaced.
    Named(String),
}

impl FieldType {
    /// The definition this type refers to directly (not through a Vec or Map).
    fn direct_reference(&self) -> Option<&str> {
        match self {
            FieldType::Named(d) => Some(d),
            _ => None,
        }
    }

    /// Every definition this type mentions.
    fn references(&self, out: &mut Vec<String>) {
        match self {
            FieldType::Named(d) => out.push(d.clone()),
            FieldType::Vec(inner) | FieldType::Map(inner) => inner.references(out),
            _ => {}
        }
    }
}

struct Builder<'a> {
    settings: &'a Settings,
    space: TypeSpace,
    /// Which document defined each definition, for conflict messages.
    origins: BTreeMap<String, (String, Value)>,
    resources: BTreeMap<GroupVersionKind, ResourceIdentity>,
    subresources: BTreeMap<GroupVersionKind, BTreeSet<String>>,
    /// With short names: nested schemas already generated, by module and shape, so that
    /// identical copies (CRDs repeat them) share one type.
    shared: BTreeMap<(Vec<String>, String), String>,
}

impl TypeSpace {
    /// Builds the type space of one or more documents.
    pub fn build(documents: &[LoadedDocument], settings: &Settings) -> Result<TypeSpace> {
        let mut builder = Builder {
            settings,
            space: TypeSpace::default(),
            origins: BTreeMap::new(),
            resources: BTreeMap::new(),
            subresources: BTreeMap::new(),
            shared: BTreeMap::new(),
        };
        for doc in documents {
            builder.collect_resources(doc);
        }
        for doc in documents {
            builder.add_document(doc)?;
        }
        builder.link_lists();
        builder.box_cycles();
        builder.check_defaults()?;
        builder.assign_names()?;
        Ok(builder.space)
    }

    /// Entries grouped by module path.
    pub fn modules(&self) -> BTreeMap<Vec<String>, Vec<&TypeEntry>> {
        let mut modules: BTreeMap<Vec<String>, Vec<&TypeEntry>> = BTreeMap::new();
        for entry in self.entries.values() {
            modules.entry(entry.module.clone()).or_default().push(entry);
        }
        for entries in modules.values_mut() {
            entries.sort_by(|a, b| a.name.cmp(&b.name));
        }
        modules
    }

    /// Whether `apply_defaults` of `definition` does anything, directly or through its fields.
    pub fn needs_defaulting(&self, definition: &str) -> bool {
        let mut seen = BTreeSet::new();
        self.needs_defaulting_inner(definition, &mut seen)
    }

    fn needs_defaulting_inner(&self, definition: &str, seen: &mut BTreeSet<String>) -> bool {
        if !seen.insert(definition.to_owned()) {
            return false;
        }
        let Some(TypeEntry {
            body: TypeBody::Struct(def),
            ..
        }) = self.entries.get(definition)
        else {
            return false;
        };
        let mut refs = Vec::new();
        if let Some(other) = &def.other_fields {
            other.value.references(&mut refs);
        }
        def.hook.is_some()
            || refs.iter().any(|r| self.needs_defaulting_inner(r, seen))
            || def.fields.iter().any(|f| {
                f.default.is_some() || {
                    let mut refs = Vec::new();
                    f.ty.references(&mut refs);
                    refs.iter().any(|r| self.needs_defaulting_inner(r, seen))
                }
            })
    }
}

/// An `x-apfkit-go` layout must list every property once, and give each a distinct protobuf
/// field number (all but `TypeMeta`'s `kind` and `apiVersion`).
fn check_go_layout(ctx: &Ctx<'_>, layout: &GoLayout, schema: &Schema) -> Result<()> {
    let malformed = |message: String| Error::Malformed {
        file: ctx.doc.origin.clone(),
        pointer: format!("{}/x-apfkit-go", ctx.pointer),
        message,
    };
    let mut names = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    for field in &layout.fields {
        if !names.insert(field.json.as_str()) {
            return Err(malformed(format!("{:?} is listed twice", field.json)));
        }
        if !schema.properties.contains_key(&field.json) {
            return Err(malformed(format!(
                "{:?} is not a property of the schema",
                field.json
            )));
        }
        match field.protobuf {
            Some(0) => return Err(malformed(format!("{:?} has field number 0", field.json))),
            Some(number) if !numbers.insert(number) => {
                return Err(malformed(format!("field number {number} is used twice")));
            }
            Some(_) => {}
            None if !matches!(field.json.as_str(), "kind" | "apiVersion") => {
                return Err(malformed(format!(
                    "{:?} has no protobuf field number",
                    field.json
                )));
            }
            None => {}
        }
    }
    if let Some(missing) = schema
        .properties
        .keys()
        .find(|name| !names.contains(name.as_str()))
    {
        return Err(malformed(format!("property {missing:?} is not listed")));
    }
    Ok(())
}

impl Builder<'_> {
    fn collect_resources(&mut self, doc: &LoadedDocument) {
        for (path, item) in &doc.document.paths {
            let Some(op) = &item.get else { continue };
            let (Some("get"), Some(gvk)) = (op.action.as_deref(), &op.group_version_kind) else {
                continue;
            };
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            match segments.as_slice() {
                [.., plural, "{name}"] if !plural.starts_with('{') => {
                    self.resources
                        .entry(gvk.clone())
                        .or_insert(ResourceIdentity {
                            plural: (*plural).to_owned(),
                            namespaced: segments.contains(&"{namespace}"),
                        });
                }
                [.., plural, "{name}", subresource]
                    if !plural.starts_with('{') && !subresource.starts_with('{') =>
                {
                    self.subresources
                        .entry(gvk.clone())
                        .or_default()
                        .insert((*subresource).to_owned());
                }
                _ => {}
            }
        }
    }

    fn add_document(&mut self, doc: &LoadedDocument) -> Result<()> {
        for (definition, schema) in &doc.document.components.schemas {
            let ptr = pointer(["components", "schemas", definition.as_str()]);
            let comparable = comparable_schema(schema);
            if let Some((other, previous)) = self.origins.get(definition) {
                if *previous != comparable {
                    return Err(Error::Conflict {
                        file: doc.origin.clone(),
                        pointer: ptr,
                        other: other.clone(),
                    });
                }
                continue;
            }
            self.origins
                .insert(definition.clone(), (doc.origin.clone(), comparable));
            if let Some(path) = self.settings.replacement_for(definition) {
                self.space.replaced.insert(definition.clone(), path);
                if self.settings.wire.is_some() && schema.go.is_some() && is_struct(schema) {
                    let ctx = Ctx { doc, pointer: ptr };
                    let (_, name) = split_definition(definition);
                    let def =
                        self.struct_def(&ctx, definition, &[], &[type_ident(name)], schema)?;
                    self.space.foreign.insert(definition.clone(), def);
                }
                continue;
            }
            if runtime_type(definition).is_some() {
                continue;
            }
            let ctx = Ctx { doc, pointer: ptr };
            self.add_definition(&ctx, definition, schema)?;
        }
        Ok(())
    }

    fn add_definition(&mut self, ctx: &Ctx<'_>, definition: &str, schema: &Schema) -> Result<()> {
        let (namespace, name) = split_definition(definition);
        let module = self.settings.module_for(namespace);
        self.add_type(ctx, definition, module, vec![type_ident(name)], schema)
    }

    fn add_type(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: Vec<String>,
        name_parts: Vec<String>,
        schema: &Schema,
    ) -> Result<()> {
        let mut doc = schema.description.clone().unwrap_or_default();
        append_notes(&mut doc, &schema_notes(schema));
        let body = if is_struct(schema) {
            TypeBody::Struct(Box::new(self.struct_def(
                ctx,
                definition,
                &module,
                &name_parts,
                schema,
            )?))
        } else if let Some(enum_def) = self.enum_def(schema) {
            TypeBody::Enum(enum_def)
        } else {
            TypeBody::Newtype(self.field_type(ctx, definition, &module, &name_parts, schema)?)
        };
        self.space.entries.insert(
            definition.to_owned(),
            TypeEntry {
                definition: definition.to_owned(),
                module,
                name: name_parts.concat(),
                doc: (!doc.is_empty()).then_some(doc),
                body,
                name_parts,
                site: ctx.site(),
            },
        );
        Ok(())
    }

    fn struct_def(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: &[String],
        name_parts: &[String],
        schema: &Schema,
    ) -> Result<StructDef> {
        let kind = match schema.group_version_kinds.as_slice() {
            [gvk]
                if schema.properties.contains_key("apiVersion")
                    && schema.properties.contains_key("kind") =>
            {
                Some(gvk.clone())
            }
            _ => None,
        };
        if let Some(layout) = &schema.go {
            check_go_layout(ctx, layout, schema)?;
        }
        let mut fields = Vec::new();
        let mut used_names = BTreeSet::new();
        for (wire, property) in &schema.properties {
            if kind.is_some() && (wire == "apiVersion" || wire == "kind") {
                continue;
            }
            let field_ctx = ctx.child(&["properties", wire]);
            let rust = unique_ident(&mut used_names, field_ident(wire));
            let mut parts = name_parts.to_vec();
            parts.push(type_ident(&heck::ToUpperCamelCase::to_upper_camel_case(
                wire.as_str(),
            )));
            let inline_definition = format!("{definition}.{wire}");
            let ty = self.field_type(&field_ctx, &inline_definition, module, &parts, property)?;
            let struct_value = matches!(ty, FieldType::Named(_))
                && matches!(&property.default, Some(Value::Object(map)) if map.is_empty());
            // k8s-openapi's times have no Rust default: a required one (an Event's
            // `eventTime`) is still an `Option`, `None` being Go's zero time, `null` in JSON,
            // and a default (`{}`, the zero struct) is that `None`.
            let time = matches!(&ty, FieldType::Named(d)
                if TIMES.contains(&d.as_str()) && self.settings.replacement_for(d).is_some());
            let presence = if (schema.required.contains(wire) || struct_value)
                && !property.nullable
                && !time
            {
                Presence::Always
            } else {
                Presence::Optional
            };
            let default = match (&property.default, presence) {
                (Some(value), Presence::Optional) if !time => Some(value.clone()),
                _ => None,
            };
            let enum_values = property
                .enum_values
                .iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            let mut doc = property.description.clone().unwrap_or_default();
            append_notes(&mut doc, &schema_notes(property));
            fields.push(FieldDef {
                wire: wire.clone(),
                rust,
                doc: (!doc.is_empty()).then_some(doc),
                ty,
                presence,
                default_on_zero: property.default_on_zero && default.is_some(),
                default,
                enum_values,
                extensions: merge_extensions(property),
                required: schema.required.contains(wire),
                boxed: false,
                site: field_ctx.site(),
            });
        }
        if schema.embedded_resource {
            self.add_embedded_identity(ctx, &mut fields, &mut used_names);
        }
        let other_fields = self
            .other_fields_type(ctx, definition, module, name_parts, schema)?
            .map(|value| OtherFields {
                rust: unique_ident(&mut used_names, OTHER_FIELDS.to_owned()),
                value,
            });
        let resource = kind
            .as_ref()
            .and_then(|gvk| self.resources.get(gvk).cloned());
        let subresources = kind
            .as_ref()
            .and_then(|gvk| self.subresources.get(gvk))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        Ok(StructDef {
            fields,
            kind,
            resource,
            list_item: None,
            hook: self.settings.hook_for(definition).map(str::to_owned),
            hook_check: self.settings.hook_check_for(definition).map(str::to_owned),
            other_fields,
            subresources,
            scale: schema.scale.clone(),
            go: schema.go.clone(),
        })
    }

    /// An embedded resource always has `apiVersion`, `kind` and `metadata`, listed or not.
    fn add_embedded_identity(
        &self,
        ctx: &Ctx<'_>,
        fields: &mut Vec<FieldDef>,
        used_names: &mut BTreeSet<String>,
    ) {
        let metadata = if ctx
            .doc
            .document
            .components
            .schemas
            .contains_key(OBJECT_META_DEFINITION)
        {
            FieldType::Named(OBJECT_META_DEFINITION.to_owned())
        } else {
            FieldType::Json
        };
        for (wire, ty) in [
            ("apiVersion", FieldType::String),
            ("kind", FieldType::String),
            ("metadata", metadata),
        ] {
            if fields.iter().any(|f| f.wire == wire) {
                continue;
            }
            fields.push(FieldDef {
                wire: wire.to_owned(),
                rust: unique_ident(used_names, field_ident(wire)),
                doc: None,
                ty,
                presence: Presence::Optional,
                default: None,
                default_on_zero: false,
                enum_values: Vec::new(),
                extensions: Vec::new(),
                required: false,
                boxed: false,
                site: ctx.site(),
            });
        }
        fields.sort_by(|a, b| a.wire.cmp(&b.wire));
    }

    /// The value type of the map that keeps unlisted fields, if the schema keeps them.
    fn other_fields_type(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: &[String],
        name_parts: &[String],
        schema: &Schema,
    ) -> Result<Option<FieldType>> {
        if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
            let site = (definition, module, name_parts);
            return self
                .nested_type(ctx, site, ("additionalProperties", "Value"), values)
                .map(Some);
        }
        let keeps_all = schema.preserve_unknown_fields
            || schema.embedded_resource
            || matches!(
                schema.additional_properties,
                Some(AdditionalProperties::Allowed(true))
            );
        Ok(keeps_all.then_some(FieldType::Json))
    }

    /// A string schema's `enum` as a Rust enum, unless the settings keep strings.
    fn enum_def(&self, schema: &Schema) -> Option<EnumDef> {
        if self.settings.enums == Enums::Strings || schema.type_.as_deref() != Some("string") {
            return None;
        }
        let listed = schema.enum_values.as_ref()?;
        let mut values: Vec<String> = Vec::new();
        for value in listed {
            match value {
                Value::String(s) if !values.contains(s) => values.push(s.clone()),
                Value::String(_) | Value::Null => {}
                _ => return None,
            }
        }
        if values.is_empty() {
            return None;
        }
        let mut used = BTreeSet::new();
        let variants = values
            .into_iter()
            .map(|wire| {
                let rust = unique_ident(&mut used, variant_ident(&wire));
                EnumVariant { wire, rust }
            })
            .collect();
        let other = (self.settings.enums == Enums::Open).then(|| {
            ["Other", "Unlisted", "OtherValue"]
                .into_iter()
                .find(|name| !used.contains(*name))
                .map_or_else(
                    || unique_ident(&mut used, "Other".to_owned()),
                    str::to_owned,
                )
        });
        Some(EnumDef { variants, other })
    }

    fn field_type(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: &[String],
        name_parts: &[String],
        schema: &Schema,
    ) -> Result<FieldType> {
        if let Some(reference) = &schema.reference {
            return self.resolve_reference(&ctx.child(&["$ref"]), reference);
        }
        if let [single] = schema.all_of.as_slice() {
            return self.field_type(
                &ctx.child(&["allOf", "0"]),
                definition,
                module,
                name_parts,
                single,
            );
        }
        if schema.int_or_string || schema.format.as_deref() == Some("int-or-string") {
            return Ok(if schema.pattern.as_deref() == Some(QUANTITY_PATTERN) {
                FieldType::Quantity
            } else {
                FieldType::IntOrString
            });
        }
        if has_junctors(schema) && !junctors_only_validate(schema) {
            return Ok(FieldType::Json);
        }
        if is_struct(schema) || self.enum_def(schema).is_some() {
            let shareable = self.settings.nested_names == NestedNames::Short
                && self.settings.hook_for(definition).is_none()
                && self.settings.type_name_for(definition).is_none();
            let key = shareable.then(|| (module.to_vec(), comparable_schema(schema).to_string()));
            if let Some(existing) = key.as_ref().and_then(|key| self.shared.get(key)) {
                return Ok(FieldType::Named(existing.clone()));
            }
            self.add_type(
                ctx,
                definition,
                module.to_vec(),
                name_parts.to_vec(),
                schema,
            )?;
            if let Some(key) = key {
                self.shared.insert(key, definition.to_owned());
            }
            return Ok(FieldType::Named(definition.to_owned()));
        }
        match schema.type_.as_deref() {
            Some("string") => Ok(match schema.format.as_deref() {
                Some("byte") => FieldType::Bytes,
                Some("date-time") => FieldType::DateTime,
                _ => FieldType::String,
            }),
            Some("integer") => match schema.format.as_deref() {
                Some("int32") => Ok(FieldType::I32),
                None | Some("int64") => Ok(FieldType::I64),
                Some(other) => Err(ctx
                    .child(&["format"])
                    .unsupported(format!("integer format {other:?}"))),
            },
            Some("number") => Ok(FieldType::F64),
            Some("boolean") => Ok(FieldType::Bool),
            Some("array") => match &schema.items {
                Some(items) => {
                    let site = (definition, module, name_parts);
                    let inner = self.nested_type(ctx, site, ("items", "Item"), items)?;
                    Ok(FieldType::Vec(Box::new(inner)))
                }
                None => Err(ctx.unsupported("array schema without `items`".to_owned())),
            },
            Some("object") | None => match &schema.additional_properties {
                Some(AdditionalProperties::Schema(values)) => {
                    let site = (definition, module, name_parts);
                    let inner =
                        self.nested_type(ctx, site, ("additionalProperties", "Value"), values)?;
                    Ok(FieldType::Map(Box::new(inner)))
                }
                _ => Ok(FieldType::Json),
            },
            Some(other) => Err(ctx
                .child(&["type"])
                .unsupported(format!("schema type {other:?}"))),
        }
    }

    /// The type of a schema nested under `key` (`items`, `additionalProperties`), named with
    /// `suffix` (`Item`, `Value`) after its parent.
    fn nested_type(
        &mut self,
        ctx: &Ctx<'_>,
        (definition, module, name_parts): (&str, &[String], &[String]),
        (key, suffix): (&str, &str),
        schema: &Schema,
    ) -> Result<FieldType> {
        let mut parts = name_parts.to_vec();
        parts.push(suffix.to_owned());
        self.field_type(
            &ctx.child(&[key]),
            &format!("{definition}.{key}"),
            module,
            &parts,
            schema,
        )
    }

    fn resolve_reference(&self, ctx: &Ctx<'_>, reference: &str) -> Result<FieldType> {
        let Some(target) = reference.strip_prefix(SCHEMA_REF_PREFIX) else {
            return Err(ctx.unsupported(format!(
                "reference {reference:?}; only references to {SCHEMA_REF_PREFIX}… of the same document are supported"
            )));
        };
        if !ctx.doc.document.components.schemas.contains_key(target) {
            return Err(Error::Malformed {
                file: ctx.doc.origin.clone(),
                pointer: ctx.pointer.clone(),
                message: format!("reference to {target:?}, which the document does not define"),
            });
        }
        if self.settings.replacement_for(target).is_none()
            && let Some(ty) = runtime_type(target)
        {
            return Ok(ty);
        }
        Ok(FieldType::Named(target.to_owned()))
    }

    /// Checks every default against its field's type, so that the emitter can write it as a
    /// Rust expression. kube-apiserver requires defaults to be valid and pruned, so a default
    /// with a field the schema does not list is an error here too.
    fn check_defaults(&self) -> Result<()> {
        for entry in self.space.entries.values() {
            let TypeBody::Struct(def) = &entry.body else {
                continue;
            };
            for field in &def.fields {
                if let Some(value) = &field.default {
                    let site = Site {
                        file: field.site.file.clone(),
                        pointer: format!("{}/default", field.site.pointer),
                    };
                    self.check_value(&site, &field.ty, value, "")?;
                }
            }
        }
        Ok(())
    }

    fn check_value(&self, site: &Site, ty: &FieldType, value: &Value, at: &str) -> Result<()> {
        let mismatch = || {
            site.unsupported(format!(
                "default {value} at {:?} does not fit a value of type {ty:?}",
                if at.is_empty() { "/" } else { at }
            ))
        };
        let fits = match (ty, value) {
            (FieldType::String | FieldType::Bytes, Value::String(_))
            | (FieldType::Bool, Value::Bool(_))
            | (FieldType::Json, _) => true,
            (FieldType::I32 | FieldType::IntOrString, Value::Number(n)) => {
                n.as_i64().is_some_and(|v| i32::try_from(v).is_ok())
            }
            (FieldType::IntOrString, Value::String(_)) => true,
            (FieldType::I64, Value::Number(n)) => n.as_i64().is_some(),
            (FieldType::F64, Value::Number(_)) => true,
            (FieldType::DateTime, Value::String(s)) => {
                s.parse::<apfkit_runtime::DateTime>().is_ok()
            }
            (FieldType::Quantity, Value::Number(n)) => n.as_i64().is_some(),
            (FieldType::Quantity, Value::String(s)) => {
                s.parse::<apfkit_runtime::Quantity>().is_ok()
            }
            (FieldType::Vec(inner), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    self.check_value(site, inner, item, &format!("{at}/{i}"))?;
                }
                true
            }
            (FieldType::Map(inner), Value::Object(map)) => {
                for (key, item) in map {
                    let at = format!("{at}/{}", crate::error::escape_pointer_token(key));
                    self.check_value(site, inner, item, &at)?;
                }
                true
            }
            (FieldType::Named(definition), _) => {
                return self.check_named(site, definition, value, at);
            }
            _ => false,
        };
        if fits { Ok(()) } else { Err(mismatch()) }
    }

    fn check_named(&self, site: &Site, definition: &str, value: &Value, at: &str) -> Result<()> {
        let Some(entry) = self.space.entries.get(definition) else {
            // A replaced type (k8s-openapi's): only its empty value can be written generically.
            return match value {
                Value::Object(map) if map.is_empty() => Ok(()),
                _ => Err(site.unsupported(format!(
                    "default {value} for {definition}, which is replaced by an existing Rust type; \
                     only {{}} can be written for it"
                ))),
            };
        };
        match (&entry.body, value) {
            (TypeBody::Newtype(inner), _) => self.check_value(site, inner, value, at),
            (TypeBody::Enum(def), Value::String(s)) => {
                if def.other.is_some() || def.variants.iter().any(|v| &v.wire == s) {
                    Ok(())
                } else {
                    Err(site.unsupported(format!(
                        "default {s:?} at {at:?} is not one of the enum's values"
                    )))
                }
            }
            (TypeBody::Struct(def), Value::Object(map)) => {
                for (key, item) in map {
                    let at = format!("{at}/{}", crate::error::escape_pointer_token(key));
                    if let Some(field) = def.fields.iter().find(|f| &f.wire == key) {
                        self.check_value(site, &field.ty, item, &at)?;
                    } else if let Some(other) = &def.other_fields {
                        self.check_value(site, &other.value, item, &at)?;
                    } else {
                        return Err(site.unsupported(format!(
                            "default has a field {at:?} that the schema does not list \
                             (kube-apiserver requires defaults to be pruned)"
                        )));
                    }
                }
                Ok(())
            }
            _ => Err(site.unsupported(format!(
                "default {value} at {:?} does not fit {definition}",
                if at.is_empty() { "/" } else { at }
            ))),
        }
    }

    /// Gives nested types their final names (user table, then the naming scheme), and checks
    /// that no two types of a module share a name.
    fn assign_names(&mut self) -> Result<()> {
        let nested = |e: &TypeEntry| e.name_parts.len() > 1;
        let mut chosen: BTreeMap<String, String> = BTreeMap::new();
        for entry in self.space.entries.values() {
            if let Some(name) = self.settings.type_name_for(&entry.definition) {
                chosen.insert(entry.definition.clone(), name.to_owned());
            }
        }
        if self.settings.nested_names == NestedNames::Short {
            let mut by_module: BTreeMap<&[String], Vec<&TypeEntry>> = BTreeMap::new();
            for entry in self.space.entries.values() {
                by_module.entry(&entry.module).or_default().push(entry);
            }
            for entries in by_module.values() {
                let fixed: BTreeSet<String> = entries
                    .iter()
                    .filter(|e| !nested(e) || chosen.contains_key(&e.definition))
                    .map(|e| {
                        chosen
                            .get(&e.definition)
                            .cloned()
                            .unwrap_or_else(|| e.name.clone())
                    })
                    .collect();
                let open: Vec<&&TypeEntry> = entries
                    .iter()
                    .filter(|e| nested(e) && !chosen.contains_key(&e.definition))
                    .collect();
                // Who proposes each candidate name, over every tail length.
                let mut proposers: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
                for entry in &open {
                    for candidate in name_tails(&entry.name_parts) {
                        proposers
                            .entry(candidate)
                            .or_default()
                            .insert(&entry.definition);
                    }
                }
                for entry in open {
                    let unique = name_tails(&entry.name_parts).find(|candidate| {
                        !fixed.contains(candidate) && proposers[candidate].len() == 1
                    });
                    if let Some(name) = unique {
                        chosen.insert(entry.definition.clone(), name);
                    }
                }
            }
        }
        for (definition, name) in chosen {
            if let Some(entry) = self.space.entries.get_mut(&definition) {
                entry.name = name;
            }
        }
        let mut seen: BTreeMap<(&[String], &str), &TypeEntry> = BTreeMap::new();
        for entry in self.space.entries.values() {
            if let Some(clash) = seen.insert((&entry.module, &entry.name), entry) {
                return Err(entry.site.unsupported(format!(
                    "Rust name {}::{} is already used by {}; name one of them with \
                     Settings::type_name",
                    entry.module.join("::"),
                    entry.name,
                    clash.definition
                )));
            }
        }
        Ok(())
    }

    /// A list kind is a kind without a read path whose `items` is an array of a resource kind.
    fn link_lists(&mut self) {
        let kinds: BTreeSet<String> = self
            .space
            .entries
            .values()
            .filter(|e| matches!(&e.body, TypeBody::Struct(s) if s.resource.is_some()))
            .map(|e| e.definition.clone())
            .collect();
        for entry in self.space.entries.values_mut() {
            let TypeBody::Struct(def) = &mut entry.body else {
                continue;
            };
            // A list kind has no read path of its own (a CRD may name it anything, not only
            // `<Kind>List`).
            if def.kind.is_none() || def.resource.is_some() {
                continue;
            }
            def.list_item =
                def.fields
                    .iter()
                    .find(|f| f.wire == "items")
                    .and_then(|f| match &f.ty {
                        FieldType::Vec(inner) => inner
                            .direct_reference()
                            .filter(|d| kinds.contains(*d))
                            .map(str::to_owned),
                        _ => None,
                    });
        }
    }

    /// Boxes every direct (non-Vec, non-Map) field reference that leads back to its own struct.
    fn box_cycles(&mut self) {
        let direct: BTreeMap<String, Vec<String>> = self
            .space
            .entries
            .iter()
            .map(|(d, e)| {
                let refs = match &e.body {
                    TypeBody::Struct(s) => s
                        .fields
                        .iter()
                        .filter_map(|f| f.ty.direct_reference().map(str::to_owned))
                        .collect(),
                    TypeBody::Newtype(t) => t
                        .direct_reference()
                        .map(str::to_owned)
                        .into_iter()
                        .collect(),
                    TypeBody::Enum(_) => Vec::new(),
                };
                (d.clone(), refs)
            })
            .collect();
        let reaches = |from: &str, to: &str| {
            let mut stack = vec![from.to_owned()];
            let mut seen = BTreeSet::new();
            while let Some(next) = stack.pop() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    stack.extend(direct.get(&next).into_iter().flatten().cloned());
                }
            }
            false
        };
        for (definition, entry) in self.space.entries.iter_mut() {
            let TypeBody::Struct(def) = &mut entry.body else {
                continue;
            };
            for field in &mut def.fields {
                if let Some(target) = field.ty.direct_reference() {
                    field.boxed = reaches(target, definition);
                }
            }
        }
    }
}

/// Where in which document a schema stands.
struct Ctx<'a> {
    doc: &'a LoadedDocument,
    pointer: String,
}

impl Ctx<'_> {
    fn site(&self) -> Site {
        Site {
            file: self.doc.origin.clone(),
            pointer: self.pointer.clone(),
        }
    }

    fn child(&self, tokens: &[&str]) -> Ctx<'_> {
        let mut pointer = self.pointer.clone();
        pointer.push_str(&crate::error::pointer(tokens.iter().copied()));
        Ctx {
            doc: self.doc,
            pointer,
        }
    }

    fn unsupported(&self, message: String) -> Error {
        self.site().unsupported(message)
    }
}

/// Whether a schema becomes a struct: it lists properties, or it is an embedded resource
/// (whose `apiVersion`, `kind` and `metadata` are always there to type).
fn is_struct(schema: &Schema) -> bool {
    !schema.properties.is_empty() || schema.embedded_resource
}

/// apimachinery's `Time` and `MicroTime`, whose k8s-openapi types (when they stand in for
/// them) have no `Default`.
const TIMES: [&str; 2] = [TIME_DEFINITION, MICRO_TIME_DEFINITION];

/// The `apfkit-runtime` type standing for one of Kubernetes' shared definitions.
fn runtime_type(definition: &str) -> Option<FieldType> {
    match definition {
        QUANTITY_DEFINITION => Some(FieldType::Quantity),
        INT_OR_STRING_DEFINITION => Some(FieldType::IntOrString),
        _ => None,
    }
}

/// `ident`, or `ident_`, `ident__`, … if taken; records the result as taken.
fn unique_ident(used: &mut BTreeSet<String>, mut ident: String) -> String {
    while !used.insert(ident.clone()) {
        ident.push('_');
    }
    ident
}

/// The Rust variant for an enum value: kept when it is already an upper-camel-case identifier
/// (`RSA`, `IfNotPresent`), else made one (`kebab-case` → `KebabCase`, `""` → `Empty`,
/// `1h` → `V1h`, `self` → `SelfValue`; other characters separate words).
fn variant_ident(value: &str) -> String {
    let plain = value.starts_with(|c: char| c.is_ascii_uppercase())
        && value.chars().all(|c| c.is_ascii_alphanumeric());
    let mut ident = if plain {
        value.to_owned()
    } else {
        let words: String = value
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        heck::ToUpperCamelCase::to_upper_camel_case(words.as_str())
    };
    if ident.is_empty() {
        return "Empty".to_owned();
    }
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, 'V');
    }
    if crate::names::is_keyword(&ident) {
        ident.push_str("Value");
    }
    ident
}

/// Candidate names from the shortest tail of `parts` to the whole; a tail is never only
/// `Item` or `Value`.
fn name_tails(parts: &[String]) -> impl Iterator<Item = String> + '_ {
    let min = match parts.last().map(String::as_str) {
        Some("Item" | "Value") if parts.len() > 1 => 2,
        _ => 1,
    };
    (min..=parts.len()).map(move |k| parts[parts.len() - k..].concat())
}

/// What the structural-schema extensions say about a value, as doc lines.
/// Whether the schema has `allOf`, `oneOf` or `anyOf`.
fn has_junctors(schema: &Schema) -> bool {
    !schema.all_of.is_empty() || !schema.one_of.is_empty() || !schema.any_of.is_empty()
}

/// Whether a typed schema's junctors only validate values, as structural schemas require
/// (CRDs): no branch brings a type, a reference, items, additionalProperties, or a property
/// the schema does not list. Then the schema's own shape is the type, and the junctors are a
/// note; otherwise the value stays untyped JSON.
fn junctors_only_validate(schema: &Schema) -> bool {
    fn branch_validates(branch: &Schema, outer: &Schema) -> bool {
        branch.reference.is_none()
            && branch.type_.is_none()
            && branch.items.is_none()
            && branch.additional_properties.is_none()
            && branch.properties.iter().all(|(name, property)| {
                outer
                    .properties
                    .get(name)
                    .is_some_and(|outer| branch_validates(property, outer))
            })
            && junctor_branches(branch).all(|nested| branch_validates(nested, outer))
    }
    schema.type_.is_some() && junctor_branches(schema).all(|b| branch_validates(b, schema))
}

fn junctor_branches(schema: &Schema) -> impl Iterator<Item = &Schema> {
    schema
        .all_of
        .iter()
        .chain(&schema.one_of)
        .chain(&schema.any_of)
}

fn schema_notes(schema: &Schema) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, branches) in [
        ("allOf", &schema.all_of),
        ("oneOf", &schema.one_of),
        ("anyOf", &schema.any_of),
    ] {
        if !branches.is_empty() && junctors_only_validate(schema) {
            notes.push(format!(
                "Also validated by `{name}` ({} schemas), which the type does not enforce.",
                branches.len()
            ));
        }
    }
    if schema.nullable {
        notes.push("May be `null` (`nullable`).".to_owned());
    }
    if schema.embedded_resource {
        notes.push(
            "A whole Kubernetes object (`x-kubernetes-embedded-resource`): `apiVersion`, `kind`, \
             `metadata` and every other field are kept."
                .to_owned(),
        );
    }
    if schema.preserve_unknown_fields {
        notes.push(
            "Fields the schema does not list are kept (`x-kubernetes-preserve-unknown-fields`)."
                .to_owned(),
        );
    }
    match &schema.additional_properties {
        Some(AdditionalProperties::Allowed(false)) => {
            notes.push("No other fields are allowed (`additionalProperties: false`).".to_owned())
        }
        Some(AdditionalProperties::Allowed(true)) => {
            notes.push("Any other field is allowed (`additionalProperties: true`).".to_owned())
        }
        Some(AdditionalProperties::Schema(_)) if !schema.properties.is_empty() => {
            notes.push("Fields other than those listed follow `additionalProperties`.".to_owned())
        }
        _ => {}
    }
    if let Some(map_type) = &schema.map_type {
        notes.push(format!("Map type: `{map_type}` (`x-kubernetes-map-type`)."));
    }
    if let Some(list_type) = &schema.list_type {
        let keys = schema
            .list_map_keys
            .iter()
            .flatten()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>();
        if keys.is_empty() {
            notes.push(format!(
                "List type: `{list_type}` (`x-kubernetes-list-type`)."
            ));
        } else {
            notes.push(format!(
                "List type: `{list_type}`, keyed by {} (`x-kubernetes-list-type`, \
                 `x-kubernetes-list-map-keys`).",
                keys.join(", ")
            ));
        }
    }
    if !schema.validations.is_empty() {
        notes.push("Validation rules (`x-kubernetes-validations`, CEL):".to_owned());
        notes.push("```text".to_owned());
        for rule in &schema.validations {
            let mut lines = rule.rule.lines();
            notes.push(format!("rule: {}", lines.next().unwrap_or_default()));
            notes.extend(lines.map(|line| format!("      {line}")));
            for (label, value) in [
                ("message", &rule.message),
                ("messageExpression", &rule.message_expression),
                ("reason", &rule.reason),
                ("fieldPath", &rule.field_path),
            ] {
                if let Some(value) = value {
                    notes.push(format!("  {label}: {}", value.replace('\n', " ")));
                }
            }
        }
        notes.push("```".to_owned());
    }
    notes
}

/// The extensions of a property that say how patches and server-side apply merge it, in the
/// order kube-openapi writes them.
fn merge_extensions(schema: &Schema) -> Vec<(String, Value)> {
    let text = |value: &Option<String>| value.clone().map(Value::String);
    [
        (
            "x-kubernetes-list-map-keys",
            schema
                .list_map_keys
                .clone()
                .map(|keys| Value::Array(keys.into_iter().map(Value::String).collect())),
        ),
        ("x-kubernetes-list-type", text(&schema.list_type)),
        ("x-kubernetes-map-type", text(&schema.map_type)),
        (
            "x-kubernetes-patch-merge-key",
            text(&schema.patch_merge_key),
        ),
        ("x-kubernetes-patch-strategy", text(&schema.patch_strategy)),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name.to_owned(), value?)))
    .collect()
}

/// Appends `notes` to a doc text, after a blank line.
fn append_notes(doc: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    if !doc.is_empty() {
        doc.push_str("\n\n");
    }
    doc.push_str(&notes.join("\n"));
}

/// A schema as compared across documents: without descriptions, since releases reword them.
fn comparable_schema(schema: &Schema) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("description");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = schema_to_value(schema);
    strip(&mut value);
    value
}

fn schema_to_value(schema: &Schema) -> Value {
    // The model keeps only what the generator reads, which is exactly what must agree.
    let mut map = serde_json::Map::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            map.insert(k.to_owned(), v);
        }
    };
    put("$ref", Value::from(schema.reference.clone()));
    put(
        "allOf",
        Value::Array(schema.all_of.iter().map(schema_to_value).collect()),
    );
    put("type", Value::from(schema.type_.clone()));
    put("format", Value::from(schema.format.clone()));
    put(
        "properties",
        Value::Object(
            schema
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), schema_to_value(v)))
                .collect(),
        ),
    );
    put("required", Value::from(schema.required.clone()));
    put(
        "items",
        schema
            .items
            .as_deref()
            .map(schema_to_value)
            .unwrap_or(Value::Null),
    );
    put(
        "additionalProperties",
        match &schema.additional_properties {
            Some(AdditionalProperties::Schema(s)) => schema_to_value(s),
            Some(AdditionalProperties::Allowed(b)) => Value::Bool(*b),
            None => Value::Null,
        },
    );
    put("default", schema.default.clone().unwrap_or(Value::Null));
    put("nullable", Value::Bool(schema.nullable));
    put("enum", Value::from(schema.enum_values.clone()));
    put(
        "x-kubernetes-int-or-string",
        Value::Bool(schema.int_or_string),
    );
    put(
        "x-kubernetes-preserve-unknown-fields",
        Value::Bool(schema.preserve_unknown_fields),
    );
    put(
        "x-kubernetes-embedded-resource",
        Value::Bool(schema.embedded_resource),
    );
    put("pattern", Value::from(schema.pattern.clone()));
    Value::Object(map)
}
