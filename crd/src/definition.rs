//! A CustomResourceDefinition read and compiled: its names, scope and versions, each version's
//! schema ready to prune, default and validate objects as kube-apiserver does on a create or
//! an update.

use std::sync::Arc;

use apfkit_runtime::field::{BadValue, FieldError, Path};
use apfkit_runtime::identity::split_api_version;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use serde_json::Value;

use crate::objectmeta::Malformed;
use crate::schema::Schema;
use crate::{cel, checks, listtype, prune, validate};

/// A compiled CustomResourceDefinition.
#[derive(Debug)]
pub struct CustomResourceDefinition {
    /// `metadata.name` (`<plural>.<group>`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.names.plural`.
    pub plural: String,
    /// `spec.scope` is `Namespaced`.
    pub namespaced: bool,
    /// The versions, in the definition's order.
    pub versions: Vec<Version>,
    /// The definition as it was read, for what the fields above do not say (conversion,
    /// subresources, printer columns, short names).
    pub source: api::CustomResourceDefinition,
}

/// One version of a CustomResourceDefinition.
#[derive(Debug)]
pub struct Version {
    /// `name` (`v1`).
    pub name: String,
    /// `served`.
    pub served: bool,
    /// `storage`.
    pub storage: bool,
    /// The compiled `schema.openAPIV3Schema` (one for every version that shares it).
    pub schema: Arc<Schema>,
}

/// Why a CustomResourceDefinition cannot be used, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// Not a CustomResourceDefinition of `apiextensions.k8s.io/v1`.
    #[error("{0}")]
    Malformed(String),
    /// The definition's fields are invalid; the errors are kube-apiserver's.
    #[error("CustomResourceDefinition.apiextensions.k8s.io {name:?} is invalid: {}", apfkit_runtime::field::to_aggregate(.errors))]
    Invalid {
        /// `metadata.name`.
        name: String,
        /// What is wrong, field by field.
        errors: Vec<FieldError>,
    },
}

/// Which checks reading a definition makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checks {
    /// kube-apiserver's, all of them.
    All,
    /// Its schemas' own only.
    SchemasOnly,
}

/// An object checked against a version, with what kube-apiserver would have done to it.
#[derive(Debug, Default)]
pub struct Admission {
    /// The paths of the unknown fields pruned (`spec.foo`), in the order found.
    pub pruned: Vec<String>,
    /// The errors, in kube-apiserver's order: metadata, schema, list types, CEL.
    pub errors: Vec<FieldError>,
}

impl CustomResourceDefinition {
    /// Reads and compiles a definition from its JSON (or YAML read as JSON), checking it as
    /// kube-apiserver checks a CRD when it is written.
    pub fn from_value(value: &Value) -> Result<Self, DefinitionError> {
        Self::read(value, Checks::All)
    }

    /// Reads and compiles only the definition's schemas: their types, patterns and CEL rules
    /// (parsed, within kube-apiserver's cost limits), without the checks of the rest of the
    /// definition or of structural schemas. What a code generator needs before it trusts the
    /// rules: it takes any schema it can read.
    pub fn compile_schemas(value: &Value) -> Result<Self, DefinitionError> {
        Self::read(value, Checks::SchemasOnly)
    }

    fn read(value: &Value, checks: Checks) -> Result<Self, DefinitionError> {
        let all = checks == Checks::All;
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != "CustomResourceDefinition" || api_version != "apiextensions.k8s.io/v1" {
            return Err(DefinitionError::Malformed(format!(
                "not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion {api_version:?}, kind {kind:?})"
            )));
        }
        let crd: api::CustomResourceDefinition =
            serde_json::from_value(value.clone()).map_err(|err| {
                DefinitionError::Malformed(format!("not a CustomResourceDefinition: {err}"))
            })?;
        let name = crd.metadata.name.clone().unwrap_or_default();
        let spec = &crd.spec;
        // kube-apiserver reports a schema shared by every version at `spec.validation`, as
        // its internal version holds it; different schemas at each version's place.
        let schemas: Vec<Option<&api::JSONSchemaProps>> = spec
            .versions
            .iter()
            .map(|v| {
                v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
            })
            .collect();
        let shared = schemas.windows(2).all(|w| w[0] == w[1]);
        // kube-apiserver's order: metadata, group, scope, each version (its name, then its
        // own schema), the versions together, the names, a shared schema, the conversion.
        let mut errors = if all { checks::head(&crd) } else { Vec::new() };
        let mut shared_errors = Vec::new();
        let mut versions: Vec<Version> = Vec::new();
        for (i, version) in spec.versions.iter().enumerate() {
            if all {
                errors.extend(checks::version_name(i, &version.name));
            }
            let own_path = Path::new("spec")
                .child("versions")
                .index(i)
                .child("schema")
                .child("openAPIV3Schema");
            let schema = match (schemas[i], versions.first()) {
                // A schema every version shares is compiled (and checked) once.
                (Some(_), Some(first)) if shared => Arc::clone(&first.schema),
                (Some(props), _) => {
                    let path = if shared {
                        Path::new("spec")
                            .child("validation")
                            .child("openAPIV3Schema")
                    } else {
                        own_path
                    };
                    match compile_checked(props, &path, all) {
                        Ok(schema) => Arc::new(schema),
                        Err(found) => {
                            if shared {
                                shared_errors.extend(found);
                            } else {
                                errors.extend(found);
                            }
                            Arc::default()
                        }
                    }
                }
                (None, _) => {
                    errors.push(FieldError::required(own_path, ""));
                    Arc::default()
                }
            };
            versions.push(Version {
                name: version.name.clone(),
                served: version.served,
                storage: version.storage,
                schema,
            });
        }
        if all {
            errors.extend(checks::versions_and_names(&crd));
        }
        errors.extend(shared_errors);
        if all {
            errors.extend(checks::tail(&crd));
        }
        if !errors.is_empty() {
            return Err(DefinitionError::Invalid { name, errors });
        }
        Ok(CustomResourceDefinition {
            name,
            group: spec.group.clone(),
            kind: spec.names.kind.clone(),
            plural: spec.names.plural.clone(),
            namespaced: spec.scope == "Namespaced",
            versions,
            source: crd,
        })
    }

    /// Reads and compiles a definition from JSON text, such as one of the
    /// `CUSTOM_RESOURCE_DEFINITIONS` that `apfkit-codegen` writes beside the types it
    /// generates from CRDs.
    pub fn from_json(text: &str) -> Result<Self, DefinitionError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|err| DefinitionError::Malformed(format!("not JSON: {err}")))?;
        Self::from_value(&value)
    }

    /// The version an object's `apiVersion` names, if it is this definition's group.
    pub fn version_of(&self, api_version: &str) -> Option<&Version> {
        let (group, version) = split_api_version(api_version);
        (group == self.group)
            .then(|| self.versions.iter().find(|v| v.name == version))
            .flatten()
    }

    /// The message kube-apiserver answers an invalid object with:
    /// `CELBasic.stable.example.com "my-basic" is invalid: value: ...`.
    pub fn invalid_message(&self, name: &str, errors: &[FieldError]) -> String {
        format!(
            "{}.{} {} is invalid: {}",
            self.kind,
            self.group,
            apfkit_runtime::field::go_quote(name),
            apfkit_runtime::field::to_aggregate(errors)
        )
    }
}

impl Version {
    /// Does to `object` what kube-apiserver does to a custom resource on a create (`old` is
    /// `None`) or an update: drops nulls that may not be null, prunes unknown fields,
    /// applies defaults, then validates the metadata, the schema, the list types and, when
    /// nothing blocks them, the CEL rules.
    pub fn admit(&self, object: &mut Value, old: Option<&Value>) -> Admission {
        let pruned = self.prune_and_default(object);
        Admission {
            pruned,
            errors: self.validate(object, old),
        }
    }

    /// Does to `object` what kube-apiserver does to a custom resource it decodes, from a
    /// request or from storage: coerces its `metadata` to an `ObjectMeta`, drops nulls that
    /// may not be null, prunes unknown fields, coerces the `metadata` of embedded resources,
    /// and applies defaults. Returns the paths of the unknown fields dropped (`spec.foo`), in
    /// kube's order: the metadata's, those pruned, those of embedded metadata.
    pub fn prune_and_default(&self, object: &mut Value) -> Vec<String> {
        // Metadata that does not decode is kept, never refused.
        self.decode(object, Malformed::Keep).unwrap_or_default()
    }

    /// What [`Version::prune_and_default`] does to an object a request sends, refusing what
    /// kube-apiserver's request decoder refuses: metadata (the root's or an embedded
    /// resource's) that does not decode as an `ObjectMeta`, in the words `go_error` gives of
    /// it (what Go's decoder says, `None` when it decodes), and an embedded resource's
    /// `apiVersion` or `kind` that is not a string. The error is the text kube puts after
    /// `… cannot be handled as a …: `.
    pub fn decode_request(
        &self,
        object: &mut Value,
        go_error: &dyn Fn(&Value) -> Option<String>,
    ) -> Result<Vec<String>, String> {
        self.decode(object, Malformed::Refuse(go_error))
    }

    fn decode(&self, object: &mut Value, malformed: Malformed<'_>) -> Result<Vec<String>, String> {
        let mut unknown = crate::objectmeta::coerce_root(object, malformed)?;
        prune::prune_nulls(&self.schema, object);
        unknown.extend(prune::prune(&self.schema, object));
        unknown.extend(crate::objectmeta::coerce_embedded(
            &self.schema,
            object,
            malformed,
        )?);
        prune::apply_defaults(&self.schema, object);
        Ok(unknown)
    }

    /// Validates a typed object (a generated type, or anything that serializes to the
    /// object's JSON), with `old` for an update: what [`Version::validate`] does with its JSON.
    pub fn validate_typed<T: serde::Serialize>(
        &self,
        object: &T,
        old: Option<&T>,
    ) -> Result<Vec<FieldError>, serde_json::Error> {
        let object = serde_json::to_value(object)?;
        let old = old.map(serde_json::to_value).transpose()?;
        Ok(self.validate(&object, old.as_ref()))
    }

    /// Validates an object already pruned and defaulted, in kube-apiserver's order: its
    /// errors ([`Version::check`] also gives the warnings of an update).
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.check(object, old).errors
    }

    /// Validates an object already pruned and defaulted, in kube-apiserver's order, as an
    /// update of `old` when there is one, with validation ratcheting: what an unchanged value
    /// breaks of the schema is dropped, and of its rules (but transition rules) answered as
    /// warnings.
    pub fn check(&self, object: &Value, old: Option<&Value>) -> Checked {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        crate::metadata::validate(object, &mut errors);
        match old {
            Some(old) => validate::validate_update(&self.schema, object, old, &mut errors),
            None => validate::validate(&self.schema, object, &mut errors),
        }
        // Embedded resources: an update checks them as a create does.
        crate::objectmeta::validate_embedded(&self.schema, object, &mut errors);
        match old {
            // An update checks list types only if the old object passed them (ratcheting).
            Some(old) => {
                let mut old_errors = Vec::new();
                listtype::validate(&self.schema, old, &mut old_errors);
                if old_errors.is_empty() {
                    listtype::validate(&self.schema, object, &mut errors);
                }
            }
            None => listtype::validate(&self.schema, object, &mut errors),
        }
        if self.schema.has_rules() {
            if errors.iter().any(blocks_rules) {
                errors.push(FieldError::invalid(
                    "",
                    BadValue::Go("null".to_owned()),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                match old {
                    Some(old) => {
                        cel::validate_update(&self.schema, object, old, &mut errors, &mut warnings)
                    }
                    None => cel::validate(&self.schema, object, None, &mut errors),
                };
            }
        }
        Checked { errors, warnings }
    }
}

/// What [`Version::check`] finds: errors that refuse the write, and warnings to answer with
/// it (each as kube-apiserver words a `field.Error` in a `Warning` header).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// The errors, in kube-apiserver's order.
    pub errors: Vec<FieldError>,
    /// The errors of rules on unchanged values, which an update only warns about.
    pub warnings: Vec<FieldError>,
}

/// A version's schema compiled at `path`; with `all`, also checked as kube-apiserver checks a
/// CRD's schema when it is written (`validateCustomResourceDefinitionValidation`), in its
/// order: structural (those errors first, and then no rule is compiled), valid defaults
/// (likewise), the schema's own errors, its rules'.
fn compile_checked(
    props: &api::JSONSchemaProps,
    path: &Path,
    all: bool,
) -> Result<Schema, Vec<FieldError>> {
    if !all {
        return Schema::compile(props, path.clone());
    }
    let (schema, schema_errors, rule_errors) = Schema::compile_in_parts(props, path.clone());
    let mut found = crate::structural::check(props, path);
    if found.is_empty() && schema_errors.is_empty() {
        crate::defaults::check(&schema, path, &mut found);
    }
    let blocked = !found.is_empty();
    found.extend(schema_errors);
    if !blocked {
        found.extend(rule_errors);
    }
    if found.is_empty() {
        Ok(schema)
    } else {
        Err(found)
    }
}

/// The errors after which kube-apiserver does not run CEL rules (`hasBlockingErr`): the
/// object is not the shape the rules were compiled for.
fn blocks_rules(error: &FieldError) -> bool {
    use apfkit_runtime::field::ErrorType;
    matches!(
        error.error_type,
        ErrorType::NotSupported
            | ErrorType::Required
            | ErrorType::TooLong
            | ErrorType::TooMany
            | ErrorType::TypeInvalid
    )
}
