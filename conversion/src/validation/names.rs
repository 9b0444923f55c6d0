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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1123_label("kube-system").is_empty());
        assert_eq!(dns1123_label("-foo").len(), 1);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert!(dns1123_subdomain("system-foo.example").is_empty());
        assert!(dns1123_subdomain("a..b").len() == 1);
        assert_eq!(
            dns1123_subdomain("system+++$$"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_label("-foo")[0],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert!(dns1035_label("v1beta1").is_empty());
        assert_eq!(dns1035_label("1v").len(), 1);
    }
}
