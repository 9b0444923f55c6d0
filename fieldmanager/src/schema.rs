//! The structure server-side apply needs of a schema: which nodes are scalars, structs, maps
//! and lists, and how each map and list merges, compiled from a JSON Schema (the project's
//! generated schemas, `$ref`s into `$defs`) or a CRD's OpenAPI v3 schema, with the
//! Kubernetes extensions as kube-openapi reads them (`pkg/schemaconv`): a list is atomic
//! unless `x-kubernetes-list-type` says `set` or `map` (with `x-kubernetes-list-map-keys`), or,
//! without a list type, its patch strategy is `merge` (by its merge key, or a set without
//! one); a map or struct is granular unless `x-kubernetes-map-type: atomic`. A node the schema
//! does not describe is deduced from its value, as structured-merge-diff's
//! `__untyped_deduced_` type: scalars, atomic lists, granular maps.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// A node of a compiled schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(usize);

/// How the items of a list are told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The list is one value.
    Atomic,
    /// Items are scalars, each its own key.
    Set,
    /// Items are objects keyed by these fields.
    Map(Vec<String>),
}

/// What a node is.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    /// A string, number or boolean (or an int-or-string).
    Scalar,
    /// A struct (named fields) or a map (`elements` for other keys), granular unless atomic.
    Map {
        /// The struct's fields.
        fields: BTreeMap<String, NodeId>,
        /// The type of entries that are not fields.
        elements: Option<NodeId>,
        /// Replaced as one value.
        atomic: bool,
        /// The fields' `default`s (the keys of an associative list's items may have one).
        defaults: BTreeMap<String, Value>,
    },
    /// A list.
    List {
        /// The items' type.
        element: NodeId,
        /// How items are told apart.
        list_type: ListType,
    },
    /// Nothing known: deduced from the value.
    Deduced,
}

/// A compiled schema.
#[derive(Debug, Clone)]
pub struct Schema {
    atoms: Vec<Atom>,
    root: NodeId,
}

/// The node every schema has for values it does not describe.
const DEDUCED: NodeId = NodeId(0);

/// A schema node nested past this is taken as deduced (the generated schemas are far
/// shallower; a `$ref` cycle is compiled once per definition).
const MAX_DEPTH: usize = 64;

impl Schema {
    /// Compiles a JSON Schema document (its `$defs`, `definitions` or OpenAPI
    /// `components/schemas` are where `$ref`s point).
    pub fn compile(root: &Value) -> Schema {
        let mut compiler = Compiler {
            root,
            atoms: vec![Atom::Deduced],
            by_reference: HashMap::new(),
            embedded: Vec::new(),
        };
        let root = compiler.node(root, 0);
        let embedded = compiler.embedded;
        let mut schema = Schema {
            atoms: compiler.atoms,
            root,
        };
        for object in std::iter::once(root).chain(embedded) {
            schema.with_object_meta(object);
        }
        schema
    }

    /// Gives an object (the root, or one marked `x-kubernetes-embedded-resource`) its
    /// `apiVersion` and `kind`, and its `metadata` ObjectMeta's merge rules, as upstream's
    /// OpenAPI declares them (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`): `finalizers` a
    /// set, `ownerReferences` a map keyed by `uid`, `managedFields` atomic, `labels` and
    /// `annotations` granular maps. The schemas here take ObjectMeta from k8s-openapi, and a
    /// CRD's schema says nothing of it; kube-apiserver merges it by these rules for every kind,
    /// and for every embedded resource (apiextensions-apiserver's OpenAPI builder,
    /// `addEmbeddedProperties`).
    fn with_object_meta(&mut self, object: NodeId) {
        let Atom::Map { fields, .. } = self.atom(object) else {
            return;
        };
        let existing = fields.get("metadata").copied();
        let mut meta_fields = match existing.map(|id| self.atom(id)) {
            Some(Atom::Map { fields, .. }) => fields.clone(),
            _ => BTreeMap::new(),
        };
        let scalar = self.push_atom(Atom::Scalar);
        let string_map = self.push_atom(Atom::Map {
            fields: BTreeMap::new(),
            elements: Some(scalar),
            atomic: false,
            defaults: BTreeMap::new(),
        });
        let owner = meta_fields
            .get("ownerReferences")
            .map(|&id| self.element(id))
            .unwrap_or(DEDUCED);
        let managed = meta_fields
            .get("managedFields")
            .map(|&id| self.element(id))
            .unwrap_or(DEDUCED);
        let lists = [
            ("finalizers", scalar, ListType::Set),
            (
                "ownerReferences",
                owner,
                ListType::Map(vec!["uid".to_owned()]),
            ),
            ("managedFields", managed, ListType::Atomic),
        ];
        for (name, element, list_type) in lists {
            let id = self.push_atom(Atom::List { element, list_type });
            meta_fields.insert(name.to_owned(), id);
        }
        for name in ["labels", "annotations"] {
            meta_fields.insert(name.to_owned(), string_map);
        }
        for name in [
            "name",
            "namespace",
            "generateName",
            "uid",
            "resourceVersion",
            "selfLink",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            meta_fields.entry(name.to_owned()).or_insert(scalar);
        }
        let meta = self.push_atom(Atom::Map {
            fields: meta_fields,
            elements: None,
            atomic: false,
            defaults: BTreeMap::new(),
        });
        if let Atom::Map { fields, .. } = &mut self.atoms[object.0] {
            fields.insert("metadata".to_owned(), meta);
            // A CRD's schema leaves out `apiVersion` and `kind` too; every object has them.
            for name in ["apiVersion", "kind"] {
                fields.entry(name.to_owned()).or_insert(scalar);
            }
        }
    }

    fn push_atom(&mut self, atom: Atom) -> NodeId {
        self.atoms.push(atom);
        NodeId(self.atoms.len() - 1)
    }

    /// A schema that knows nothing: every value deduced.
    pub fn deduced() -> Schema {
        Schema {
            atoms: vec![Atom::Deduced],
            root: DEDUCED,
        }
    }

    /// The root node.
    pub fn root(&self) -> NodeId {
        self.root
    }

    /// The node's atom.
    pub fn atom(&self, node: NodeId) -> &Atom {
        &self.atoms[node.0]
    }

    /// The node of a map's or struct's entry `name`.
    pub fn field(&self, node: NodeId, name: &str) -> NodeId {
        match self.atom(node) {
            Atom::Map {
                fields, elements, ..
            } => fields.get(name).copied().or(*elements).unwrap_or(DEDUCED),
            _ => DEDUCED,
        }
    }

    /// Whether `name` is a declared field of a struct node.
    pub fn is_declared_field(&self, node: NodeId, name: &str) -> bool {
        matches!(self.atom(node), Atom::Map { fields, .. } if fields.contains_key(name))
    }

    /// The node of a list's items.
    pub fn element(&self, node: NodeId) -> NodeId {
        match self.atom(node) {
            Atom::List { element, .. } => *element,
            _ => DEDUCED,
        }
    }
}

struct Compiler<'a> {
    root: &'a Value,
    atoms: Vec<Atom>,
    by_reference: HashMap<String, NodeId>,
    /// The objects marked `x-kubernetes-embedded-resource`.
    embedded: Vec<NodeId>,
}

impl<'a> Compiler<'a> {
    fn push(&mut self, atom: Atom) -> NodeId {
        self.atoms.push(atom);
        NodeId(self.atoms.len() - 1)
    }

    fn target(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    /// The node of a definition, compiled once: its node is reserved first, so that a
    /// definition that refers to itself ends there.
    fn definition(&mut self, reference: &str, depth: usize) -> NodeId {
        if let Some(&known) = self.by_reference.get(reference) {
            return known;
        }
        let Some(target) = self.target(reference) else {
            return DEDUCED;
        };
        let id = self.push(Atom::Deduced);
        self.by_reference.insert(reference.to_owned(), id);
        let inner = self.node(target, depth + 1);
        self.atoms[id.0] = self.atoms[inner.0].clone();
        id
    }

    fn node(&mut self, schema: &'a Value, depth: usize) -> NodeId {
        if depth > MAX_DEPTH {
            return DEDUCED;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let definition = self.definition(reference, depth);
            return if has_extensions(schema) {
                // Extensions beside the `$ref` say how this use of the type merges.
                let mut atom = self.atoms[definition.0].clone();
                apply_extensions(&mut atom, schema);
                self.push(atom)
            } else {
                definition
            };
        }
        // `allOf: [{$ref}]` (how some generators attach a description to a reference).
        if let Some([only]) = schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            let inner = self.node(only, depth + 1);
            let mut atom = self.atoms[inner.0].clone();
            apply_extensions(&mut atom, schema);
            return self.push(atom);
        }
        // A nullable type (`anyOf: [T, {type: null}]`, what schemars writes for an `Option`)
        // merges as `T`.
        if let Some([only]) = nullable_of(schema).as_deref() {
            let inner = self.node(only, depth + 1);
            let mut atom = self.atoms[inner.0].clone();
            apply_extensions(&mut atom, schema);
            return self.push(atom);
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            || schema.get("anyOf").is_some()
            || schema.get("oneOf").is_some()
        {
            return DEDUCED;
        }
        let object = schema.get("properties").is_some()
            || schema
                .get("additionalProperties")
                .is_some_and(Value::is_object);
        match type_of(schema) {
            Some("array") => {
                let element = match schema.get("items") {
                    Some(items) => self.node(items, depth + 1),
                    None => DEDUCED,
                };
                let mut atom = Atom::List {
                    element,
                    list_type: ListType::Atomic,
                };
                apply_extensions(&mut atom, schema);
                self.push(atom)
            }
            Some("object") | None if object => {
                let id = self.push(Atom::Deduced);
                let mut fields = BTreeMap::new();
                let mut defaults = BTreeMap::new();
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    for (name, property) in properties {
                        fields.insert(name.clone(), self.node(property, depth + 1));
                        if let Some(default) = property.get("default") {
                            defaults.insert(name.clone(), default.clone());
                        }
                    }
                }
                // Fields past those declared are deduced where the schema preserves them
                // (kube-openapi's schemaconv gives such a map a deduced element type).
                let preserves =
                    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
                let elements = match schema.get("additionalProperties") {
                    Some(extra @ Value::Object(_)) => Some(self.node(extra, depth + 1)),
                    _ if preserves => Some(DEDUCED),
                    Some(Value::Bool(false)) => None,
                    _ if fields.is_empty() => Some(DEDUCED),
                    _ => None,
                };
                let mut atom = Atom::Map {
                    fields,
                    elements,
                    atomic: false,
                    defaults,
                };
                apply_extensions(&mut atom, schema);
                self.atoms[id.0] = atom;
                if schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
                    self.embedded.push(id);
                }
                id
            }
            Some("object") => {
                // An object with nothing declared (x-kubernetes-preserve-unknown-fields, or a
                // free-form map): a granular map of deduced values.
                let mut atom = Atom::Map {
                    fields: BTreeMap::new(),
                    elements: Some(DEDUCED),
                    atomic: false,
                    defaults: BTreeMap::new(),
                };
                apply_extensions(&mut atom, schema);
                self.push(atom)
            }
            Some(_) => self.push(Atom::Scalar),
            None => DEDUCED,
        }
    }
}

/// The alternatives of an `anyOf` or `oneOf` other than `{"type": "null"}`.
fn nullable_of(schema: &Value) -> Option<Vec<&Value>> {
    let options = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)?;
    Some(
        options
            .iter()
            .filter(|option| option.get("type").and_then(Value::as_str) != Some("null"))
            .collect(),
    )
}

/// The schema's `type`, the first that is not `null` when it lists several.
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(name) => Some(name),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|name| *name != "null"),
        _ => None,
    }
}

fn has_extensions(schema: &Value) -> bool {
    [
        "x-kubernetes-list-type",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-map-type",
    ]
    .iter()
    .any(|name| schema.get(name).is_some())
}

/// Applies the list and map extensions of `schema` to `atom`.
fn apply_extensions(atom: &mut Atom, schema: &Value) {
    let text = |name: &str| schema.get(name).and_then(Value::as_str);
    match atom {
        Atom::List { list_type, .. } => {
            if let Some(kind) = text("x-kubernetes-list-type") {
                *list_type = match kind {
                    "set" => ListType::Set,
                    "map" => ListType::Map(
                        schema
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|keys| {
                                keys.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    _ => ListType::Atomic,
                };
            } else if let Some(strategy) = text("x-kubernetes-patch-strategy")
                && strategy.split(',').any(|s| s.trim() == "merge")
            {
                *list_type = match text("x-kubernetes-patch-merge-key") {
                    Some(key) => ListType::Map(vec![key.to_owned()]),
                    None => ListType::Set,
                };
            }
        }
        Atom::Map { atomic, .. } => match text("x-kubernetes-map-type") {
            Some("atomic") => *atomic = true,
            Some("granular") => *atomic = false,
            _ => {}
        },
        Atom::Scalar | Atom::Deduced => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_and_maps_merge_as_their_extensions_say() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "metadata": {"$ref": "#/$defs/Meta"},
                "rules": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "atomic"},
                "plain": {"type": "array", "items": {"type": "string"}},
                "conditions": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"type": {"type": "string"}}},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                },
                "byStrategy": {"type": "array", "items": {"type": "object"},
                               "x-kubernetes-patch-strategy": "merge",
                               "x-kubernetes-patch-merge-key": "name"},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                             "properties": {"a": {"type": "string"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "kept": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"a": {"type": "string"}}},
                "port": {"x-kubernetes-int-or-string": true},
                // What schemars writes for an `Option` of a type with a list-map inside.
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]},
            },
            "$defs": {"Status": {"type": "object", "properties": {"conditions": {
                "type": "array",
                "items": {"type": "object", "properties": {"type": {"type": "string"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            }}}, "Meta": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "owner": {"$ref": "#/$defs/Meta"},
            }}},
        }));
        let root = schema.root();
        let list_type = |name: &str| match schema.atom(schema.field(root, name)) {
            Atom::List { list_type, .. } => list_type.clone(),
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(list_type("rules"), ListType::Atomic);
        assert_eq!(list_type("plain"), ListType::Atomic);
        assert_eq!(list_type("conditions"), ListType::Map(vec!["type".into()]));
        assert_eq!(list_type("byStrategy"), ListType::Map(vec!["name".into()]));
        let status = schema.field(root, "status");
        assert!(
            matches!(
                schema.atom(schema.field(status, "conditions")),
                Atom::List { list_type: ListType::Map(keys), .. } if keys == &["type"]
            ),
            "a nullable type merges as the type"
        );
        assert!(matches!(
            schema.atom(schema.field(root, "selector")),
            Atom::Map { atomic: true, .. }
        ));
        assert!(matches!(
            schema.atom(schema.field(root, "free")),
            Atom::Map {
                atomic: false,
                elements: Some(_),
                ..
            }
        ));
        assert_eq!(schema.atom(schema.field(root, "port")), &Atom::Deduced);
        // Declared fields and preserved unknown ones: the others are deduced, not refused.
        let kept = schema.field(root, "kept");
        assert_eq!(schema.atom(schema.field(kept, "a")), &Atom::Scalar);
        assert!(matches!(
            schema.atom(kept),
            Atom::Map {
                elements: Some(_),
                ..
            }
        ));
        let metadata = schema.field(root, "metadata");
        assert!(matches!(
            schema.atom(schema.field(metadata, "finalizers")),
            Atom::List {
                list_type: ListType::Set,
                ..
            }
        ));
        // ObjectMeta's own rules, whatever the schema says of `metadata`.
        assert!(matches!(
            schema.atom(schema.field(metadata, "ownerReferences")),
            Atom::List { list_type: ListType::Map(keys), .. } if keys == &["uid"]
        ));
        // A definition that refers to itself compiles (once).
        let meta_definition = schema.field(metadata, "owner");
        assert_eq!(schema.field(meta_definition, "owner"), meta_definition);
        // Entries of a map are its element type; unknown fields of a struct are deduced.
        let labels = schema.field(metadata, "labels");
        assert_eq!(schema.atom(schema.field(labels, "team")), &Atom::Scalar);
        assert_eq!(schema.atom(schema.field(root, "unknown")), &Atom::Deduced);
    }

    /// An object marked `x-kubernetes-embedded-resource` gets `apiVersion`, `kind` and
    /// ObjectMeta's fields, as apiextensions-apiserver's OpenAPI builder gives it
    /// (`addEmbeddedProperties`); field_validation.go's embedded `metadata.namespace` is
    /// declared, its `metadata.unknownSubMeta` is not.
    #[test]
    fn embedded_resources_get_type_meta_and_object_meta() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "spec": {"type": "object"},
                }},
                "plain": {"type": "object", "properties": {"a": {"type": "string"}}},
            }}},
        }));
        let spec = schema.field(schema.root(), "spec");
        let template = schema.field(spec, "template");
        for name in ["apiVersion", "kind"] {
            assert_eq!(
                schema.atom(schema.field(template, name)),
                &Atom::Scalar,
                "{name}"
            );
        }
        let metadata = schema.field(template, "metadata");
        assert_eq!(
            schema.atom(schema.field(metadata, "namespace")),
            &Atom::Scalar
        );
        assert_eq!(schema.atom(schema.field(metadata, "name")), &Atom::Scalar);
        assert!(matches!(
            schema.atom(schema.field(metadata, "finalizers")),
            Atom::List {
                list_type: ListType::Set,
                ..
            }
        ));
        // Not a declared field: unknown, refused under strict field validation.
        let Atom::Map {
            fields, elements, ..
        } = schema.atom(metadata)
        else {
            panic!("metadata is a map");
        };
        assert!(!fields.contains_key("unknownSubMeta") && elements.is_none());
        // An object not marked embedded gets none of it.
        let plain = schema.field(spec, "plain");
        let Atom::Map { fields, .. } = schema.atom(plain) else {
            panic!("a map");
        };
        assert!(!fields.contains_key("kind") && !fields.contains_key("metadata"));
    }
}
