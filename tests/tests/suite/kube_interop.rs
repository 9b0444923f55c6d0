//! The kinds work with kube: kube-core's blanket `Resource` impl applies, and its request
//! builder produces the right URLs for every kind and version. Our flowcontrol v1 kinds convert
//! to and from k8s-openapi's without loss.

use apfkit_tests::bootstrap;
use apfkit_types::{apiregistration, flowcontrol};
use kube_core::params::{GetParams, ListParams, PostParams};
use kube_core::{Request, Resource};

/// List, get and create URLs of kind `K` checked against the expected collection path.
fn assert_urls<K: Resource<DynamicType = ()> + Default + serde::Serialize>(collection: &str) {
    let request = Request::new(K::url_path(&(), None));
    let list = request.list(&ListParams::default()).unwrap();
    assert_eq!(list.method(), "GET");
    assert_eq!(list.uri().path(), collection);
    let get = request.get("exempt", &GetParams::default()).unwrap();
    assert_eq!(get.uri().path(), format!("{collection}/exempt"));
    let body = serde_json::to_vec(&K::default()).unwrap();
    let create = request
        .create(&PostParams::default(), body.clone())
        .unwrap();
    assert_eq!(create.method(), "POST");
    assert_eq!(create.uri().path(), collection);
    let sent: serde_json::Value = serde_json::from_slice(create.body()).unwrap();
    assert_eq!(sent["apiVersion"], K::api_version(&()).as_ref());
    assert_eq!(sent["kind"], K::kind(&()).as_ref());
}

#[test]
fn request_urls_for_every_kind_and_version() {
    macro_rules! flowcontrol {
        ($($version:ident),*) => {$(
            assert_urls::<flowcontrol::$version::FlowSchema>(
                concat!("/apis/flowcontrol.apiserver.k8s.io/", stringify!($version), "/flowschemas"));
            assert_urls::<flowcontrol::$version::PriorityLevelConfiguration>(
                concat!("/apis/flowcontrol.apiserver.k8s.io/", stringify!($version), "/prioritylevelconfigurations"));
        )*};
    }
    flowcontrol!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);
    assert_urls::<apiregistration::v1beta1::APIService>(
        "/apis/apiregistration.k8s.io/v1beta1/apiservices",
    );
    assert_urls::<apiregistration::v1::APIService>("/apis/apiregistration.k8s.io/v1/apiservices");
}

#[test]
fn kinds_are_cluster_scoped_and_listable() {
    use k8s_openapi::{ClusterResourceScope, ListableResource};
    fn cluster_scoped<K: k8s_openapi::Resource<Scope = ClusterResourceScope>>() {}
    cluster_scoped::<flowcontrol::v1beta3::FlowSchema>();
    cluster_scoped::<apiregistration::v1::APIService>();
    assert_eq!(
        flowcontrol::v1beta2::PriorityLevelConfiguration::LIST_KIND,
        "PriorityLevelConfigurationList"
    );
}

/// With apfkit's traits and k8s-openapi's in scope, as a kube user has them, a kind's identity
/// is one trait: `FlowSchema::API_VERSION` was ambiguous (E0034) while apfkit-runtime declared
/// its own `Kind` beside k8s-openapi's `Resource`. Lists carry it as k8s-openapi's `List<T>`.
#[test]
fn a_kinds_identity_is_k8s_openapis_resource() {
    #[allow(unused_imports)]
    use apfkit_types::*;
    use k8s_openapi::{ClusterResourceScope, Resource};
    use std::any::TypeId;

    assert_eq!(
        flowcontrol::v1::FlowSchema::API_VERSION,
        "flowcontrol.apiserver.k8s.io/v1"
    );
    assert_eq!(flowcontrol::v1::FlowSchema::URL_PATH_SEGMENT, "flowschemas");
    assert_eq!(apiregistration::v1beta1::APIService::VERSION, "v1beta1");
    type List = flowcontrol::v1beta3::PriorityLevelConfigurationList;
    assert_eq!(List::KIND, "PriorityLevelConfigurationList");
    assert_eq!(List::URL_PATH_SEGMENT, "");
    assert_eq!(
        <List as ListKind>::Item::URL_PATH_SEGMENT,
        "prioritylevelconfigurations"
    );
    assert_eq!(
        TypeId::of::<<List as Resource>::Scope>(),
        TypeId::of::<ClusterResourceScope>()
    );
}

#[test]
fn bootstrap_objects_convert_to_k8s_openapi_and_back() {
    use k8s_openapi::api::flowcontrol::v1 as theirs;
    let (levels, schemas) = bootstrap("v1");
    for level in levels {
        let ours: flowcontrol::v1::PriorityLevelConfiguration =
            serde_json::from_value(level.clone()).unwrap();
        let converted: theirs::PriorityLevelConfiguration = ours.clone().into();
        // The same object, as k8s-openapi encodes it.
        assert_eq!(serde_json::to_value(&converted).unwrap(), level);
        let back: flowcontrol::v1::PriorityLevelConfiguration = converted.into();
        assert_eq!(back, ours);
    }
    for schema in schemas {
        let theirs: theirs::FlowSchema = serde_json::from_value(schema.clone()).unwrap();
        let ours: flowcontrol::v1::FlowSchema = theirs.clone().into();
        assert_eq!(serde_json::to_value(&ours).unwrap(), schema);
        let back: theirs::FlowSchema = ours.into();
        assert_eq!(back, theirs);
    }
}
