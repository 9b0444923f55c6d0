//! Discovery order, as kube-aggregator computes it (apimachinery's
//! `CompareKubeAwareVersionStrings` and the control plane's `DefaultGenericAPIServicePriorities`).

use std::cmp::Ordering;

use apfkit_scheme::discovery::{
    BUILTIN_PRIORITIES, builtin_apiservices, compare_kube_aware_version_strings,
    sorted_by_group_and_version,
};
use apfkit_types::hub::apiregistration::APIService;

#[test]
fn the_documented_version_order() {
    let expected = [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ];
    let mut shuffled = expected.to_vec();
    shuffled.reverse();
    shuffled.swap(0, 5);
    shuffled.sort_by(|a, b| compare_kube_aware_version_strings(b, a));
    assert_eq!(shuffled, expected);
}

#[test]
fn comparison_rules() {
    use Ordering::*;
    let cases = [
        ("v1", "v1", Equal),
        ("v01", "v1", Equal),
        ("v1", "foo", Greater),
        ("foo", "v1", Less),
        ("foo1", "foo10", Greater),
        ("v1", "v2", Less),
        ("v2beta1", "v1", Less),
        ("v1alpha9", "v1beta1", Less),
        ("v1beta2", "v1beta10", Less),
        ("v1beta", "v1", Less),
        ("v1gamma1", "v1", Less),
        ("V1", "v1", Less),
    ];
    for (a, b, expected) in cases {
        assert_eq!(
            compare_kube_aware_version_strings(a, b),
            expected,
            "{a} vs {b}"
        );
    }
}

fn service(
    name: &str,
    group: &str,
    version: &str,
    group_priority: i32,
    version_priority: i32,
) -> APIService {
    let mut s = APIService::default();
    s.metadata.name = Some(name.to_owned());
    s.spec.group = Some(group.to_owned());
    s.spec.version = Some(version.to_owned());
    s.spec.group_priority_minimum = group_priority;
    s.spec.version_priority = version_priority;
    s
}

#[test]
fn groups_by_highest_priority_versions_by_version_priority_then_kube_order() {
    let services = [
        service("v1.zeta", "zeta", "v1", 100, 10),
        service("v2.alpha", "alpha", "v2", 100, 10),
        service("v1beta1.alpha", "alpha", "v1beta1", 50, 20),
        service("v1.alpha", "alpha", "v1", 50, 10),
        service("v3.alpha", "alpha", "v3", 10, 10),
        service("v1.top", "top", "v1", 200, 1),
    ];
    let groups = sorted_by_group_and_version(&services);
    let order: Vec<(&str, Vec<&str>)> = groups
        .iter()
        .map(|g| {
            (
                g.group.as_str(),
                g.versions.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // At equal group priority, names decide: "v1.zeta" < "v2.alpha", so zeta's bucket comes first.
    assert_eq!(
        order,
        [
            ("top", vec!["v1"]),
            ("zeta", vec!["v1"]),
            ("alpha", vec!["v1beta1", "v3", "v2", "v1"]),
        ]
    );
    assert_eq!(groups[2].preferred(), Some("v1beta1"));
}

#[test]
fn builtin_table() {
    let services = builtin_apiservices();
    assert_eq!(services.len(), BUILTIN_PRIORITIES.len());
    assert!(
        services
            .iter()
            .any(|s| s.metadata.name.as_deref() == Some("v1."))
    );
    let groups = sorted_by_group_and_version(&services);
    assert_eq!(groups[0].group, "");
    assert_eq!(groups[1].group, "events.k8s.io");
    let flowcontrol = groups
        .iter()
        .find(|g| g.group == "flowcontrol.apiserver.k8s.io")
        .unwrap();
    assert_eq!(
        flowcontrol.versions,
        ["v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha1"]
    );
    // Built-in APIServices are valid ones.
    for service in &services {
        let errors = apfkit_scheme::validation::validate(
            &apfkit_scheme::scheme::HubObject::APIService(service.clone()),
            &apfkit_scheme::validation::Options::default(),
        );
        assert!(errors.is_empty(), "{:?}: {errors:?}", service.metadata.name);
    }
}
