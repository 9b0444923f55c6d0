//! The generated types, used as a user of the generator uses them.

// The generated modules, at this crate's root for the tests' paths.
use apfkit_build_fixture::*;

mod structural_defaults;
mod structural_tests;

/// Compiles only for a namespaced kind.
fn namespaced<
    K: apfkit_runtime::k8s_openapi::Resource<
            Scope = apfkit_runtime::k8s_openapi::NamespaceResourceScope,
        >,
>() {
}

mod tests {
    use super::namespaced;
    use super::widgets::com::example::v1::*;
    use apfkit_runtime::k8s_openapi::Resource;
    use apfkit_runtime::{ApplyDefaults, ListKind};
    use serde_json::json;

    #[test]
    fn identity_comes_from_the_document() {
        assert_eq!(Widget::API_VERSION, "example.com/v1");
        assert_eq!(Widget::URL_PATH_SEGMENT, "widgets");
        namespaced::<Widget>();
        namespaced::<WidgetList>();
        assert_eq!(<WidgetList as ListKind>::Item::KIND, "Widget");
    }

    #[test]
    fn decodes_defaults_and_encodes() {
        let mut widget: Widget = serde_json::from_value(json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"type": "Round", "size": 0, "parts": [{"inner": {"name": "core"}}], "inline": {}, "port": 8080}
        }))
        .unwrap();
        widget.apply_defaults();
        let spec = &widget.spec;
        assert_eq!(
            spec.size,
            Some(10),
            "0 is replaced: x-apfkit-default-on-zero"
        );
        assert_eq!(spec.weight, Some(3));
        assert_eq!(spec.enabled, Some(true));
        assert_eq!(spec.color.as_deref(), Some("blue"));
        let part = &spec.parts.as_ref().unwrap()[0];
        assert_eq!(part.size, Some(1));
        assert_eq!(
            part.inner.as_ref().unwrap().size,
            Some(1),
            "defaults reach boxed, recursive values"
        );
        assert_eq!(spec.inline.as_ref().unwrap().depth, Some(2));
        assert_eq!(spec.port, Some(apfkit_runtime::IntOrString::Int(8080)));
        let encoded = serde_json::to_value(&widget).unwrap();
        assert_eq!(encoded["kind"], "Widget");
        assert_eq!(encoded["spec"]["size"], 10);
        assert!(encoded.get("status").is_none());
    }

    #[test]
    fn a_wrong_kind_is_an_error() {
        let err = serde_json::from_value::<Widget>(json!({"kind": "Gadget"})).unwrap_err();
        assert!(err.to_string().contains("Widget"), "{err}");
    }
}

mod crd_tests {
    use super::linkerd::KINDS;
    use super::linkerd::io::linkerd::policy::{v1alpha1, v1beta1};
    use super::namespaced;
    use apfkit_runtime::k8s_openapi::Resource;
    use apfkit_runtime::{ApplyDefaults, ListKind};

    #[test]
    fn identity_comes_from_the_crd() {
        assert_eq!(v1beta1::Server::API_VERSION, "policy.linkerd.io/v1beta1");
        assert_eq!(v1alpha1::Server::API_VERSION, "policy.linkerd.io/v1alpha1");
        assert_eq!(v1beta1::Server::URL_PATH_SEGMENT, "servers");
        namespaced::<v1beta1::Server>();
        assert_eq!(<v1beta1::ServerList as ListKind>::Item::KIND, "Server");
        let kinds: Vec<(&str, &str)> = KINDS.iter().map(|k| (k.version, k.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("v1alpha1", "Server"),
                ("v1alpha1", "ServerList"),
                ("v1beta1", "Server"),
                ("v1beta1", "ServerList"),
            ]
        );
    }

    #[test]
    fn the_sample_object_round_trips_and_defaults() {
        let text = include_str!("../../../fixtures/crds/server.yaml");
        let sample: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        let server: v1beta1::Server = serde_json::from_value(sample.clone()).unwrap();
        assert_eq!(serde_json::to_value(&server).unwrap(), sample);
        // Without `proxyProtocol`, the CRD's default applies.
        let mut bare = sample.clone();
        bare["spec"]
            .as_object_mut()
            .unwrap()
            .remove("proxyProtocol");
        let mut server: v1beta1::Server = serde_json::from_value(bare).unwrap();
        server.apply_defaults();
        assert_eq!(
            serde_json::to_value(&server).unwrap()["spec"]["proxyProtocol"],
            "unknown"
        );
    }
}
