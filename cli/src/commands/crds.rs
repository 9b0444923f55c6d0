//! CustomResourceDefinitions given with `--crd`, and the custom resources they define checked
//! as kube-apiserver checks them (apfkit-crd).

use apfkit_crd::CustomResourceDefinition;
use apfkit_scheme::scheme::{Input, SCHEME};
use serde_json::Value;

use crate::failure::{Failure, Location};
use crate::input;

/// Reads and compiles every CustomResourceDefinition under `paths` (files or directories);
/// other kinds there are skipped with a warning.
pub fn load(paths: &[String]) -> Result<Vec<CustomResourceDefinition>, Failure> {
    manifests(paths)?
        .into_iter()
        .map(|(location, manifest)| {
            CustomResourceDefinition::from_value(&manifest)
                .map_err(|err| Failure::at(&location, err.to_string()))
        })
        .collect()
}

/// Every CustomResourceDefinition document under `paths` (files or directories), as read,
/// with where it was read; other kinds there are skipped with a warning. Nothing found is an
/// error.
pub fn manifests(paths: &[String]) -> Result<Vec<(Location, Value)>, Failure> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut manifests = Vec::new();
    for source in input::sources(paths)? {
        input::for_each_document(&source, |location, read| {
            let document = input::built(&location, read)?;
            if document.value.get("kind").and_then(Value::as_str)
                != Some("CustomResourceDefinition")
            {
                crate::failure::warn(&location, "not a CustomResourceDefinition: skipped");
                return Ok(());
            }
            manifests.push((location, document.value));
            Ok(())
        })?;
    }
    if manifests.is_empty() {
        return Err(Failure::Invalid(format!(
            "--crd {}: no CustomResourceDefinition found",
            paths.join(", ")
        )));
    }
    Ok(manifests)
}

/// A custom resource checked: its label (`Widget/name`) and error lines.
pub struct Checked {
    /// `Kind/name`.
    pub label: String,
    /// kube-apiserver's errors, one line each.
    pub errors: Vec<String>,
}

/// Checks `read` if it is a CustomResourceDefinition, as kube-apiserver checks one when it is
/// written (its names, versions, conversion, columns and schemas), or an object of a kind
/// `definitions` define, as kube-apiserver checks a custom resource on a create (the unknown
/// fields pruned are warnings). `None` for other objects: those the flowcontrol scheme serves
/// are not even built into JSON values here.
pub fn check(
    definitions: &[CustomResourceDefinition],
    location: &Location,
    read: &Input<'_>,
) -> Result<Option<Checked>, Failure> {
    if SCHEME.is_served(read) {
        return Ok(None);
    }
    let document = input::built_text(location, read)?;
    let object = &document.value;
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (api_version, kind) = (text("/apiVersion"), text("/kind"));
    let label = format!(
        "{kind}/{}",
        crate::failure::printable(text("/metadata/name"))
    );
    if kind == "CustomResourceDefinition" && api_version == "apiextensions.k8s.io/v1" {
        let errors = match CustomResourceDefinition::from_value(object) {
            Ok(_) => Vec::new(),
            Err(apfkit_crd::DefinitionError::Invalid { errors, .. }) => {
                errors.iter().map(ToString::to_string).collect()
            }
            Err(other) => vec![other.to_string()],
        };
        return Ok(Some(Checked { label, errors }));
    }
    let version = definitions
        .iter()
        .filter(|d| d.kind == kind)
        .find_map(|d| d.version_of(api_version));
    let Some(version) = version else {
        return Ok(None);
    };
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
