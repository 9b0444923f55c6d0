//! A CRD version's `openAPIV3Schema`, compiled once for validating, pruning and defaulting
//! many objects: patterns compiled, CEL rules compiled, types checked.
//!
//! The checks kube-apiserver makes of the schema itself (apiextensions-apiserver's
//! `ValidateCustomResourceDefinition`) are partly made here: an unknown `type`, a pattern
//! that does not compile, a CEL rule that does not compile or whose estimated cost is over
//! the limit are refused with kube-apiserver's field path and message.

use std::collections::BTreeMap;

use apfkit_runtime::field::{BadValue, FieldError, Path};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};
use serde_json::Value;

use crate::cel::rule::CompiledRule;

/// The JSON types a schema names (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// No `type` (allowed with `x-kubernetes-int-or-string` or
    /// `x-kubernetes-preserve-unknown-fields`).
    Any,
    /// `object`.
    Object,
    /// `array`.
    Array,
    /// `string`.
    String,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `boolean`.
    Boolean,
}

impl Type {
    /// The types kube-apiserver accepts, in its message's order.
    pub const NAMES: [&'static str; 6] =
        ["array", "boolean", "integer", "number", "object", "string"];

    fn parse(name: &str) -> Option<Type> {
        Some(match name {
            "" => Type::Any,
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            _ => return None,
        })
    }

    /// The name as written in a schema.
    pub fn name(self) -> &'static str {
        match self {
            Type::Any => "",
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
        }
    }
}

/// One node of a compiled schema.
#[derive(Debug, Default)]
pub struct Schema {
    /// `type`.
    pub kind: Option<Type>,
    /// `nullable`.
    pub nullable: bool,
    /// `x-kubernetes-int-or-string`: an integer or a string.
    pub int_or_string: bool,
    /// `format`, when set.
    pub format: Option<String>,
    /// `properties`.
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` as a schema (a map's values).
    pub additional_properties: Option<Box<Schema>>,
    /// `additionalProperties: false`.
    pub no_additional_properties: bool,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enumeration: Vec<Value>,
    /// `maximum`, and whether it is exclusive.
    pub maximum: Option<(f64, bool)>,
    /// `minimum`, and whether it is exclusive.
    pub minimum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength`, in characters.
    pub max_length: Option<i64>,
    /// `minLength`, in characters.
    pub min_length: Option<i64>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, regex::Regex)>,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`.
    pub map_type: Option<String>,
    /// `allOf`, `anyOf`, `oneOf` (value validations only, in a structural schema).
    pub all_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<CompiledRule>,
    /// Whether this node or any below it has rules (so that walks skip what has none).
    rules_below: bool,
}

/// Where a schema sits, for the paths of the errors found in it.
pub(crate) struct SchemaPath<'a> {
    pub path: Path,
    pub errors: &'a mut Vec<FieldError>,
    /// The errors of CEL rules, kept apart: kube-apiserver reports them after the schema's,
    /// and only when the schema has none.
    pub rule_errors: &'a mut Vec<FieldError>,
    pub depth: usize,
    /// What compiles each node's rules.
    pub rules: &'a dyn RuleCompiler,
    /// The estimated costs of the rules compiled so far.
    pub costs: &'a mut crate::cel::total::TotalCost,
    /// Whether the schema is one a CRD being written declares ([`Schema::compile_parts`]).
    pub written: bool,
    /// The highest place above where old and new values cannot be correlated, if any.
    pub uncorrelatable: Option<Path>,
    /// How many times a rule here can run for one object: the product of the declared element
    /// counts of the lists and maps above, `None` once one of them is unbounded.
    pub cardinality: Option<u64>,
}

/// What compiles the `x-kubernetes-validations` of each node of a schema as it is built: the
/// node's field errors go to `errors` (with the schema's own), its rules' to `rule_errors`.
pub(crate) trait RuleCompiler {
    fn compile(
        &self,
        rules: &[ValidationRule],
        node: &Schema,
        path: &Path,
        errors: &mut Vec<FieldError>,
        rule_errors: &mut Vec<FieldError>,
        site: RuleSite<'_>,
    ) -> Vec<CompiledRule>;
}

/// What a node's rules are compiled with besides the node: whether the node or a node
/// below it has a schema error (kube-apiserver then compiles none of its rules), and the
/// estimated costs of the schema's rules so far.
pub(crate) struct RuleSite<'a> {
    /// How many times a rule of the node can run for one object (`None`: under an
    /// unbounded list or map).
    pub cardinality: Option<u64>,
    /// A schema error at or below the node.
    pub blocked: bool,
    /// The highest place above the node where old and new values cannot be correlated.
    pub uncorrelatable: Option<&'a Path>,
    /// The costs of every rule and `messageExpression` compiled so far.
    pub costs: &'a mut crate::cel::total::TotalCost,
    /// Whether the node is the custom resource's root.
    pub resource_root: bool,
}

/// How many elements a list, map or string can hold by its declared limit (`maxItems`,
/// `maxProperties`, `maxLength`), negative limits read as 0; `None` when it declares none
/// (unbounded).
pub fn max_children(declared: Option<i64>) -> Option<u64> {
    declared.map(|max| max.max(0) as u64)
}

/// Deeper than this a schema is refused (kube-apiserver's CRDs are far shallower; the limit
/// keeps recursion bounded on hostile input).
pub const MAX_SCHEMA_DEPTH: usize = 64;

impl Schema {
    /// Compiles a version's `openAPIV3Schema`, each node's `x-kubernetes-validations` by
    /// `rules` ([`Schema::compile`] compiles them as CEL).
    pub(crate) fn compile_with(
        props: &JSONSchemaProps,
        path: Path,
        rules: &dyn RuleCompiler,
    ) -> Result<Schema, Vec<FieldError>> {
        let (schema, mut errors, rule_errors) = Schema::compile_parts(props, path, rules, false);
        errors.extend(rule_errors);
        if errors.is_empty() {
            Ok(schema)
        } else {
            Err(errors)
        }
    }

    /// [`Schema::compile_with`]'s schema and its two lists of errors, in kube-apiserver's
    /// order: the schema's own, and its rules' (a node's rules compiled only when neither it
    /// nor a node below it has an error of the schema's, then the schema's total cost). With
    /// `written`, the schema is one a CRD being written declares, and the checks kube makes
    /// only then are made too (properties closed by `additionalProperties`, list and map
    /// extensions).
    pub(crate) fn compile_parts(
        props: &JSONSchemaProps,
        path: Path,
        rules: &dyn RuleCompiler,
        written: bool,
    ) -> (Schema, Vec<FieldError>, Vec<FieldError>) {
        let mut errors = Vec::new();
        let mut rule_errors = Vec::new();
        let mut costs = crate::cel::total::TotalCost::default();
        let root = path.clone();
        let schema = {
            let mut at = SchemaPath {
                path,
                errors: &mut errors,
                rule_errors: &mut rule_errors,
                depth: 0,
                rules,
                cardinality: Some(1),
                costs: &mut costs,
                written,
                uncorrelatable: None,
            };
            Schema::compile_node(props, &mut at)
        };
        rule_errors.extend(costs.errors(&root));
        (schema, errors, rule_errors)
    }

    fn compile_node(props: &JSONSchemaProps, at: &mut SchemaPath<'_>) -> Schema {
        let errors_before = at.errors.len();
        if at.depth > MAX_SCHEMA_DEPTH {
            at.errors.push(FieldError::forbidden(
                &at.path,
                format!("must not be nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            ));
            return Schema::default();
        }
        let type_name = props.type_.as_deref().unwrap_or("");
        let kind = match Type::parse(type_name) {
            Some(kind) => Some(kind),
            None => {
                at.errors.push(FieldError::not_supported(
                    at.path.child("type"),
                    BadValue::Str(type_name.to_owned()),
                    &Type::NAMES,
                ));
                None
            }
        };
        if props.unique_items == Some(true) {
            at.errors.push(FieldError::forbidden(
                at.path.child("uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ));
        }
        // `additionalProperties: true` beside properties says nothing more, and is allowed.
        let closes_properties = match &props.additional_properties {
            Some(JSONSchemaPropsOrBool::Bool(allows)) => !allows,
            Some(JSONSchemaPropsOrBool::Schema(_)) => true,
            None => false,
        };
        if at.written
            && closes_properties
            && props.properties.as_ref().is_some_and(|p| !p.is_empty())
        {
            at.errors.push(FieldError::forbidden(
                at.path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let pattern = props
            .pattern
            .as_ref()
            .and_then(|pattern| match regex::Regex::new(pattern) {
                Ok(compiled) => Some((pattern.clone(), compiled)),
                Err(err) => {
                    at.errors.push(FieldError::invalid(
                        at.path.child("pattern"),
                        BadValue::Str(pattern.clone()),
                        format!("must be a valid regular expression, but isn't: {err}"),
                    ));
                    None
                }
            });
        let child =
            |name: String, props: &JSONSchemaProps, at: &mut SchemaPath<'_>, times: Option<u64>| {
                let saved = at.path.clone();
                let saved_cardinality = at.cardinality;
                at.path = Path::new(&format!("{saved}{name}"));
                at.depth += 1;
                at.cardinality = at
                    .cardinality
                    .zip(times)
                    .map(|(above, here)| above.saturating_mul(here));
                let schema = Schema::compile_node(props, at);
                at.depth -= 1;
                at.cardinality = saved_cardinality;
                at.path = saved;
                schema
            };
        // Where old and new values cannot be told apart, rules may not use `oldSelf`: the
        // properties of a map of a type that is not correlatable, the items of a list that
        // is not a map list (the highest such place is kept).
        let saved_uncorrelatable = at.uncorrelatable.clone();
        let map_correlatable = props
            .x_kubernetes_map_type
            .as_deref()
            .is_none_or(|t| matches!(t, "granular" | "atomic"));
        if !map_correlatable && at.uncorrelatable.is_none() {
            at.uncorrelatable = Some(at.path.clone());
        }
        let properties = props
            .properties
            .iter()
            .flatten()
            .map(|(name, sub)| {
                let schema = child(format!(".properties[{name}]"), sub, at, Some(1));
                (name.clone(), schema)
            })
            .collect();
        at.uncorrelatable.clone_from(&saved_uncorrelatable);
        let (additional_properties, no_additional_properties) = match &props.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(sub)) => {
                let times = max_children(props.max_properties);
                let schema = child(".additionalProperties".into(), sub, at, times);
                (Some(Box::new(schema)), false)
            }
            Some(JSONSchemaPropsOrBool::Bool(allows)) => (None, !allows),
            None => (None, false),
        };
        let items = match &props.items {
            Some(JSONSchemaPropsOrArray::Schema(sub)) => {
                let times = max_children(props.max_items);
                if props.x_kubernetes_list_type.as_deref() != Some("map")
                    && at.uncorrelatable.is_none()
                {
                    at.uncorrelatable = Some(at.path.clone());
                }
                let items = child(".items".into(), sub, at, times);
                at.uncorrelatable.clone_from(&saved_uncorrelatable);
                Some(Box::new(items))
            }
            Some(JSONSchemaPropsOrArray::Schemas(_)) => {
                at.errors.push(FieldError::forbidden(
                    at.path.child("items"),
                    "items must be a schema object and not an array",
                ));
                None
            }
            None => None,
        };
        let list = |list: &Option<Vec<JSONSchemaProps>>, name: &str, at: &mut SchemaPath<'_>| {
            list.iter()
                .flatten()
                .enumerate()
                .map(|(i, sub)| child(format!(".{name}[{i}]"), sub, at, Some(1)))
                .collect::<Vec<_>>()
        };
        let all_of = list(&props.all_of, "allOf", at);
        let any_of = list(&props.any_of, "anyOf", at);
        let one_of = list(&props.one_of, "oneOf", at);
        let not = props
            .not
            .as_ref()
            .map(|sub| Box::new(child(".not".into(), sub, at, Some(1))));
        let mut schema = Schema {
            kind,
            nullable: props.nullable.unwrap_or(false),
            int_or_string: props.x_kubernetes_int_or_string.unwrap_or(false),
            format: props.format.clone().filter(|f| !f.is_empty()),
            properties,
            additional_properties,
            no_additional_properties,
            items,
            required: props.required.clone().unwrap_or_default(),
            enumeration: props
                .enum_
                .iter()
                .flatten()
                .map(|value| value.0.clone())
                .collect(),
            maximum: props
                .maximum
                .map(|max| (max, props.exclusive_maximum.unwrap_or(false))),
            minimum: props
                .minimum
                .map(|min| (min, props.exclusive_minimum.unwrap_or(false))),
            multiple_of: props.multiple_of,
            max_length: props.max_length,
            min_length: props.min_length,
            max_items: props.max_items,
            min_items: props.min_items,
            max_properties: props.max_properties,
            min_properties: props.min_properties,
            pattern,
            default: props.default.as_ref().map(|value| value.0.clone()),
            preserve_unknown_fields: props.x_kubernetes_preserve_unknown_fields.unwrap_or(false),
            embedded_resource: props.x_kubernetes_embedded_resource.unwrap_or(false),
            list_type: props.x_kubernetes_list_type.clone(),
            list_map_keys: props.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
            map_type: props.x_kubernetes_map_type.clone(),
            all_of,
            any_of,
            one_of,
            not,
            rules: Vec::new(),
            rules_below: false,
        };
        if at.written {
            crate::extensions::list_and_map_types(props, &at.path, at.errors);
        }
        if let Some(rules) = &props.x_kubernetes_validations {
            let path = at.path.child("x-kubernetes-validations");
            let site = RuleSite {
                cardinality: at.cardinality,
                uncorrelatable: at.uncorrelatable.as_ref(),
                blocked: at.errors.len() > errors_before,
                costs: at.costs,
                resource_root: at.depth == 0,
            };
            schema.rules = at
                .rules
                .compile(rules, &schema, &path, at.errors, at.rule_errors, site);
        }
        schema.rules_below = !schema.rules.is_empty()
            || schema.properties.values().any(|s| s.rules_below)
            || schema
                .additional_properties
                .as_deref()
                .is_some_and(|s| s.rules_below)
            || schema.items.as_deref().is_some_and(|s| s.rules_below)
            || schema.all_of.iter().any(|s| s.rules_below);
        schema
    }

    /// The schema of a field of this object: a declared property, or the map's values.
    pub fn field(&self, name: &str) -> Option<&Schema> {
        self.properties
            .get(name)
            .or(self.additional_properties.as_deref())
    }

    /// Whether this node or any below it has CEL rules.
    pub fn has_rules(&self) -> bool {
        self.rules_below
    }
}
