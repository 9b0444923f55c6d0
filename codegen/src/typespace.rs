//! The deterministic type space: every schema of the input documents turned into a Rust type
//! description, in ordered maps so that output never depends on hash order.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{Error, Result, pointer};
use crate::load::LoadedDocument;
use crate::names::{field_ident, split_definition, type_ident};
use crate::openapi::{AdditionalProperties, GroupVersionKind, Schema};
use crate::settings::Settings;

const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";

/// All types to generate, keyed by definition name: what [`crate::Generator::type_space`]
/// returns and [`crate::emit_conversions`] pairs.
#[derive(Debug, Default)]
pub struct TypeSpace {
    /// The generated types.
    pub(crate) entries: BTreeMap<String, TypeEntry>,
    /// Definitions replaced by existing Rust types, with their paths.
    pub(crate) replaced: BTreeMap<String, String>,
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
    /// Struct or newtype.
    pub body: TypeBody,
}

/// The shape of a generated type.
#[derive(Debug, Clone)]
pub enum TypeBody {
    /// A struct with named fields.
    Struct(StructDef),
    /// A transparent newtype around another type.
    Newtype(FieldType),
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
    /// Listed in the schema's `required`.
    pub required: bool,
    /// Whether the value must be boxed to break a cycle.
    pub boxed: bool,
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
}

impl TypeSpace {
    /// Builds the type space of one or more documents.
    pub fn build(documents: &[LoadedDocument], settings: &Settings) -> Result<TypeSpace> {
        let mut builder = Builder {
            settings,
            space: TypeSpace::default(),
            origins: BTreeMap::new(),
            resources: BTreeMap::new(),
        };
        for doc in documents {
            builder.collect_resources(doc);
        }
        for doc in documents {
            builder.add_document(doc)?;
        }
        builder.link_lists();
        builder.box_cycles();
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
        def.hook.is_some()
            || def.fields.iter().any(|f| {
                f.default.is_some() || {
                    let mut refs = Vec::new();
                    f.ty.references(&mut refs);
                    refs.iter().any(|r| self.needs_defaulting_inner(r, seen))
                }
            })
    }
}

impl Builder<'_> {
    fn collect_resources(&mut self, doc: &LoadedDocument) {
        for (path, item) in &doc.document.paths {
            let Some(op) = &item.get else { continue };
            let (Some("get"), Some(gvk)) = (op.action.as_deref(), &op.group_version_kind) else {
                continue;
            };
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            let [.., plural, "{name}"] = segments.as_slice() else {
                continue;
            };
            if plural.starts_with('{') {
                continue;
            }
            self.resources
                .entry(gvk.clone())
                .or_insert(ResourceIdentity {
                    plural: (*plural).to_owned(),
                    namespaced: segments.contains(&"{namespace}"),
                });
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
        let name = type_ident(name);
        self.add_type(ctx, definition, module, name, schema)
    }

    fn add_type(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: Vec<String>,
        name: String,
        schema: &Schema,
    ) -> Result<()> {
        if let Some(clash) = self
            .space
            .entries
            .values()
            .find(|e| e.module == module && e.name == name && e.definition != definition)
        {
            return Err(ctx.unsupported(format!(
                "Rust name {}::{name} is already used by {}",
                module.join("::"),
                clash.definition
            )));
        }
        let body = if !schema.properties.is_empty() {
            TypeBody::Struct(self.struct_def(ctx, definition, &module, &name, schema)?)
        } else {
            TypeBody::Newtype(self.field_type(ctx, definition, &module, &name, schema)?)
        };
        self.space.entries.insert(
            definition.to_owned(),
            TypeEntry {
                definition: definition.to_owned(),
                module,
                name,
                doc: schema.description.clone(),
                body,
            },
        );
        Ok(())
    }

    fn struct_def(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: &[String],
        name: &str,
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
        let mut fields = Vec::new();
        let mut used_names = BTreeSet::new();
        for (wire, property) in &schema.properties {
            if kind.is_some() && (wire == "apiVersion" || wire == "kind") {
                continue;
            }
            let field_ctx = ctx.child(&["properties", wire]);
            let mut rust = field_ident(wire);
            while !used_names.insert(rust.clone()) {
                rust.push('_');
            }
            let inline_name = format!(
                "{name}{}",
                type_ident(&heck::ToUpperCamelCase::to_upper_camel_case(wire.as_str()))
            );
            let inline_definition = format!("{definition}.{wire}");
            let ty = self.field_type(
                &field_ctx,
                &inline_definition,
                module,
                &inline_name,
                property,
            )?;
            let struct_value = matches!(ty, FieldType::Named(_))
                && matches!(&property.default, Some(Value::Object(map)) if map.is_empty());
            let presence = if (schema.required.contains(wire) || struct_value) && !property.nullable
            {
                Presence::Always
            } else {
                Presence::Optional
            };
            let default = match (&property.default, presence) {
                (Some(value), Presence::Optional) => {
                    check_default(&field_ctx, &ty, value)?;
                    Some(value.clone())
                }
                _ => None,
            };
            let enum_values = property
                .enum_values
                .iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            fields.push(FieldDef {
                wire: wire.clone(),
                rust,
                doc: property.description.clone(),
                ty,
                presence,
                default_on_zero: property.default_on_zero && default.is_some(),
                default,
                enum_values,
                required: schema.required.contains(wire),
                boxed: false,
            });
        }
        let resource = kind
            .as_ref()
            .and_then(|gvk| self.resources.get(gvk).cloned());
        Ok(StructDef {
            fields,
            kind,
            resource,
            list_item: None,
            hook: self.settings.hook_for(definition).map(str::to_owned),
        })
    }

    fn field_type(
        &mut self,
        ctx: &Ctx<'_>,
        definition: &str,
        module: &[String],
        name: &str,
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
                name,
                single,
            );
        }
        if !schema.all_of.is_empty()
            || !schema.one_of.is_empty()
            || !schema.any_of.is_empty()
            || schema.int_or_string
        {
            return Ok(FieldType::Json);
        }
        match schema.type_.as_deref() {
            Some("string") => Ok(match schema.format.as_deref() {
                Some("int-or-string") => FieldType::Json,
                Some("byte") => FieldType::Bytes,
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
                    let item_name = format!("{name}Item");
                    let item_definition = format!("{definition}.items");
                    let inner = self.field_type(
                        &ctx.child(&["items"]),
                        &item_definition,
                        module,
                        &item_name,
                        items,
                    )?;
                    Ok(FieldType::Vec(Box::new(inner)))
                }
                None => Err(ctx.unsupported("array schema without `items`".to_owned())),
            },
            Some("object") | None => {
                if !schema.properties.is_empty() {
                    self.add_type(ctx, definition, module.to_vec(), name.to_owned(), schema)?;
                    return Ok(FieldType::Named(definition.to_owned()));
                }
                match &schema.additional_properties {
                    Some(AdditionalProperties::Schema(values)) => {
                        let value_name = format!("{name}Value");
                        let value_definition = format!("{definition}.additionalProperties");
                        let inner = self.field_type(
                            &ctx.child(&["additionalProperties"]),
                            &value_definition,
                            module,
                            &value_name,
                            values,
                        )?;
                        Ok(FieldType::Map(Box::new(inner)))
                    }
                    _ => Ok(FieldType::Json),
                }
            }
            Some(other) => Err(ctx
                .child(&["type"])
                .unsupported(format!("schema type {other:?}"))),
        }
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
        Ok(FieldType::Named(target.to_owned()))
    }

    /// A list kind is a kind `XList` whose `items` is an array of the kind `X`.
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
            if def.kind.as_ref().is_none_or(|k| !k.kind.ends_with("List")) {
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
    fn child(&self, tokens: &[&str]) -> Ctx<'_> {
        let mut pointer = self.pointer.clone();
        pointer.push_str(&crate::error::pointer(tokens.iter().copied()));
        Ctx {
            doc: self.doc,
            pointer,
        }
    }

    fn unsupported(&self, message: String) -> Error {
        Error::Unsupported {
            file: self.doc.origin.clone(),
            pointer: self.pointer.clone(),
            message,
        }
    }
}

/// Checks that a default value fits its type and can be written as a Rust expression.
fn check_default(ctx: &Ctx<'_>, ty: &FieldType, value: &Value) -> Result<()> {
    let fits = match (ty, value) {
        (FieldType::String | FieldType::Bytes, Value::String(_))
        | (FieldType::Bool, Value::Bool(_)) => true,
        (FieldType::I32, Value::Number(n)) => n.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
        (FieldType::I64, Value::Number(n)) => n.as_i64().is_some(),
        (FieldType::F64, Value::Number(_)) => true,
        (FieldType::Json, _) => true,
        (FieldType::Vec(_), Value::Array(items)) => items.is_empty(),
        (FieldType::Map(_) | FieldType::Named(_), Value::Object(map)) => map.is_empty(),
        _ => false,
    };
    if fits {
        Ok(())
    } else {
        Err(ctx.child(&["default"]).unsupported(format!(
            "default {value} for a value of type {ty:?}; supported are scalars of the field's type, [] and {{}}"
        )))
    }
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
    put(
        "$ref",
        schema
            .reference
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
    );
    put(
        "allOf",
        Value::Array(schema.all_of.iter().map(schema_to_value).collect()),
    );
    put(
        "type",
        schema
            .type_
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
    );
    put(
        "format",
        schema
            .format
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
    );
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
    Value::Object(map)
}
