//! The object metadata rules of cluster-scoped objects, with apimachinery's messages (the name
//! checks themselves are `apfkit_runtime::field::names`).

use super::field::{FieldError, Path};

pub use apfkit_runtime::field::names::{dns1035_label, dns1123_label, dns1123_subdomain};

/// The object-metadata rules of a cluster-scoped object: a name (or generateName) is required, a
/// namespace is forbidden, and the name must pass `name_check`.
pub fn cluster_scoped_meta(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    name_check: impl Fn(&str) -> Vec<String>,
) -> Vec<FieldError> {
    let path = Path::new("metadata");
    let mut errors = apfkit_runtime::field::names::object_name(
        meta.name.as_deref().unwrap_or_default(),
        meta.generate_name.as_deref().unwrap_or_default(),
        name_check,
    );
    if meta.namespace.as_deref().is_some_and(|ns| !ns.is_empty()) {
        errors.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    errors
}
