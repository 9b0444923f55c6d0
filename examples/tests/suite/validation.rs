//! The generated module carries the CRD it was generated from
//! (`api::CUSTOM_RESOURCE_DEFINITIONS`), so typed widgets are validated with its schema and
//! `x-kubernetes-validations` rules as kube-apiserver would validate them.

use apfkit_crd::CustomResourceDefinition;
use apfkit_example_widgets::api::{self, types::v1};

fn definition() -> CustomResourceDefinition {
    assert_eq!(api::CUSTOM_RESOURCE_DEFINITIONS.len(), 1);
    CustomResourceDefinition::from_json(api::CUSTOM_RESOURCE_DEFINITIONS[0]).unwrap()
}

fn widget(repository: &str, tag: &str) -> v1::Widget {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 2, "image": {"repository": repository, "tag": tag}}
    }))
    .unwrap()
}

fn errors(new: &v1::Widget, old: Option<&v1::Widget>) -> Vec<String> {
    let crd = definition();
    let version = crd.version_of("example.com/v1").unwrap();
    version
        .validate_typed(new, old)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn typed_widgets_are_checked_against_the_crds_rules() {
    assert!(errors(&widget("registry/app", "1.2"), None).is_empty());
    assert_eq!(
        errors(&widget("registry/app", "latest"), None),
        ["spec.image.tag: Invalid value: pin a tag other than latest"]
    );
}

#[test]
fn transition_rules_see_the_old_widget_on_an_update() {
    let old = widget("registry/app", "1.2");
    assert!(errors(&widget("registry/app", "1.3"), Some(&old)).is_empty());
    assert_eq!(
        errors(&widget("registry/other", "1.3"), Some(&old)),
        [r#"spec.image.repository: Invalid value: "registry/other": the repository cannot change"#]
    );
}
