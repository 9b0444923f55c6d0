//! CustomResourceDefinitions given with `--crd`, and the custom resources they define checked
//! as kube-apiserver checks them (apfkit-crd).

use apfkit_conversion::scheme::Input;
use apfkit_crd::CustomResourceDefinition;
use serde_json::Value;

use crate::failure::{Failure, Location};
use crate::input;

/// Reads and compiles every CustomResourceDefinition under `paths` (files or directories);
/// other kinds there are skipped with a warning.
pub fn load(paths: &[String]) -> Result<Vec<CustomResourceDefinition>, Failure> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut definitions = Vec::new();
    for source in input::sources(paths)? {
        input::for_each_document(&source, |location, read| {
            let document = input::built(&location, read)?;
            if document.value.get("kind").and_then(Value::as_str)
                != Some("CustomResourceDefinition")
            {
                crate::failure::warn(&location, "not a CustomResourceDefinition: skipped");
                return Ok(());
            }
            let definition = CustomResourceDefinition::from_value(&document.value)
                .map_err(|err| Failure::at(&location, err.to_string()))?;
            definitions.push(definition);
            Ok(())
        })?;
    }
    if definitions.is_empty() {
        return Err(Failure::Invalid(format!(
            "--crd {}: no CustomResourceDefinition found",
            paths.join(", ")
        )));
    }
    Ok(definitions)
}

/// A custom resource checked: its label (`Widget/name`) and error lines.
pub struct Checked {
    /// `Kind/name`.
    pub label: String,
    /// kube-apiserver's errors, one line each.
    pub errors: Vec<String>,
}

/// Checks `read` if it is an object of a kind the definitions define (create semantics); the
/// unknown fields pruned are warnings. `None` for other objects.
pub fn validate(
    definitions: &[CustomResourceDefinition],
    location: &Location,
    read: &Input<'_>,
) -> Result<Option<Checked>, Failure> {
    let document = input::built_text(location, read)?;
    let object = &document.value;
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let found = definitions
        .iter()
        .find(|d| d.kind == kind && d.version_of(api_version).is_some());
    let Some(definition) = found else {
        return Ok(None);
    };
    let version = definition
        .version_of(api_version)
        .expect("the definition was found by this version");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let label = format!("{kind}/{}", crate::failure::printable(name));
    let mut object = object.clone();
    let admission = version.admit(&mut object, None);
    for field in &admission.pruned {
        crate::failure::warn(
            location,
            &format!(
                "{label}: unknown field {}",
                apfkit_runtime::field::go_quote(field)
            ),
        );
    }
    Ok(Some(Checked {
        label,
        errors: admission.errors.iter().map(ToString::to_string).collect(),
    }))
}

/// Checks `read` if it is a CustomResourceDefinition, as kube-apiserver checks one when it is
/// written (its names, versions, conversion, columns and schemas). `None` for other objects.
pub fn validate_definition(
    location: &Location,
    read: &Input<'_>,
) -> Result<Option<Checked>, Failure> {
    let document = input::built_text(location, read)?;
    let object = &document.value;
    if object.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
        || object.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1")
    {
        return Ok(None);
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let label = format!(
        "CustomResourceDefinition/{}",
        crate::failure::printable(name)
    );
    let errors = match CustomResourceDefinition::from_value(object) {
        Ok(_) => Vec::new(),
        Err(apfkit_crd::DefinitionError::Invalid { errors, .. }) => {
            errors.iter().map(ToString::to_string).collect()
        }
        Err(other) => vec![other.to_string()],
    };
    Ok(Some(Checked { label, errors }))
}
