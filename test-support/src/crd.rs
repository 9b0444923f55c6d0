//! CustomResourceDefinitions for tests, as kube-apiserver's own tests write them: the
//! skeleton once, the schema and versions each test's own.

use serde_json::{Value, json};

/// A namespaced CustomResourceDefinition named `name` (`PLURAL.GROUP`) for `kind`, with
/// `versions` as its `spec.versions`.
///
/// # Panics
///
/// A name without a dot.
pub fn definition(name: &str, kind: &str, versions: Value) -> Value {
    let (plural, group) = name.split_once('.').expect("PLURAL.GROUP");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": versions,
        },
    })
}

/// A served version `name` whose `openAPIV3Schema` is `root`, the storage version when
/// `storage` says so.
pub fn version(name: &str, storage: bool, root: Value) -> Value {
    json!({"name": name, "served": true, "storage": storage,
           "schema": {"openAPIV3Schema": root}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_gives_the_group_and_the_plural() {
        let crd = definition(
            "widgets.example.com",
            "Widget",
            json!([version("v1", true, json!({"type": "object"}))]),
        );
        assert_eq!(crd["spec"]["group"], "example.com");
        assert_eq!(crd["spec"]["names"]["plural"], "widgets");
        assert_eq!(crd["spec"]["versions"][0]["storage"], true);
        assert_eq!(
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"],
            "object"
        );
    }
}
