//! The generated dynamic scheme: lookup by apiVersion and kind, defaulting, and errors that
//! say what is wrong and where.

use apfkit_example_widgets::api::{HubObject, SCHEME};
use apfkit_runtime::scheme::{ErrorKind, UnknownFields};
use serde_json::json;

#[test]
fn the_registry_lists_every_version_oldest_first() {
    let served: Vec<String> = SCHEME
        .codecs()
        .iter()
        .map(|c| format!("{} {} {}", c.api_version(), c.kind, c.plural))
        .collect();
    assert_eq!(
        served,
        [
            "example.com/v1alpha1 Widget widgets",
            "example.com/v1beta1 Widget widgets",
            "example.com/v1 Widget widgets"
        ]
    );
}

#[test]
fn convert_renames_splits_and_annotates() {
    let old = json!({
        "apiVersion": "example.com/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 2, "image": "app:1"},
    });
    let new = SCHEME
        .convert_object(old.clone(), "example.com/v1")
        .unwrap();
    assert_eq!(
        new,
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"replicas": 2, "image": {"repository": "app", "tag": "1"}},
        })
    );
    let hub = SCHEME.object_to_hub(old).unwrap();
    let HubObject::Widget(widget) = &hub;
    assert_eq!(widget.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(
        SCHEME.object_from_hub(hub, "example.com/v1beta1").unwrap()["spec"],
        json!({"replicas": 2, "image": "app:1"})
    );
}

#[test]
fn an_object_already_in_the_version_is_returned_untouched() {
    // Even what the type would not keep: kube-apiserver does not convert to the same version.
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "extra": [1]});
    assert_eq!(
        SCHEME
            .convert_object(object.clone(), "example.com/v1")
            .unwrap(),
        object
    );
}

#[test]
fn default_applies_the_versions_own_defaults() {
    let object = json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    let defaulted = SCHEME
        .default_value(&object, UnknownFields::Strict)
        .unwrap();
    assert_eq!(defaulted.object["spec"], json!({"size": 1}));
}

#[test]
fn errors_name_the_kind_of_failure_and_the_field() {
    let cases = [
        (
            json!([1]),
            ErrorKind::InvalidValue,
            "",
            "expected an object",
        ),
        (
            json!({"kind": "Widget"}),
            ErrorKind::InvalidValue,
            "apiVersion",
            "Required value",
        ),
        (
            json!({"apiVersion": "example.com/v1", "kind": 7}),
            ErrorKind::InvalidValue,
            "kind",
            "expected a string",
        ),
        (
            json!({"apiVersion": "example.com/v2", "kind": "Widget"}),
            ErrorKind::UnsupportedKind,
            "",
            "serves example.com/v1alpha1 Widget",
        ),
        (
            json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "spec": {"size": "two"}}),
            ErrorKind::InvalidValue,
            "spec.size",
            "invalid type: string \"two\"",
        ),
        (
            json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "spec": {"size": 4294967296u64}}),
            ErrorKind::InvalidValue,
            "spec.size",
            "invalid value",
        ),
    ];
    for (object, kind, path, message) in cases {
        let err = SCHEME
            .convert_object(object.clone(), "example.com/v1")
            .unwrap_err();
        assert_eq!(
            (err.kind, err.path.as_str()),
            (kind, path),
            "{object}: {err}"
        );
        assert!(err.message.contains(message), "{object}: {err}");
    }
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
    for (target, kind, message) in [
        (
            "example.com/v2",
            ErrorKind::UnknownVersion,
            "it serves v1alpha1, v1beta1, v1",
        ),
        (
            "other.io/v1",
            ErrorKind::WrongGroup,
            "a Widget of group example.com",
        ),
        ("v1", ErrorKind::WrongGroup, "a Widget of group example.com"),
    ] {
        let err = SCHEME.convert_object(widget.clone(), target).unwrap_err();
        assert_eq!(err.kind, kind, "{target}");
        assert!(err.to_string().contains(message), "{target}: {err}");
    }
}
