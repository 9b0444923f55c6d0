//! Discovery order of API groups and versions from APIServices, as kube-aggregator computes it
//! (`CompareKubeAwareVersionStrings` in apimachinery's `pkg/version/helpers.go`, and
//! `DefaultGenericAPIServicePriorities` in `pkg/controlplane/apiserver/aggregator.go`):
//! Kubernetes-aware version comparison, the sort by group and version
//! priority, the preferred version of each group, and the built-in priority table.
//!
//! ```
//! use apfkit_scheme::discovery::{builtin_apiservices, sorted_by_group_and_version};
//!
//! let services = builtin_apiservices();
//! let groups = sorted_by_group_and_version(&services);
//! let flowcontrol = groups.iter().find(|g| g.group == "flowcontrol.apiserver.k8s.io").unwrap();
//! assert_eq!(flowcontrol.versions, ["v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha1"]);
//! assert_eq!(flowcontrol.preferred(), Some("v1"));
//! ```

pub use apfkit_runtime::version::compare_kube_aware_version_strings;
use apfkit_types::hub::apiregistration::{APIService, APIServiceSpec};

/// One API group in discovery order, with its versions, preferred first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupVersions {
    /// The group; empty for the legacy core group.
    pub group: String,
    /// Versions in order, the preferred one first.
    pub versions: Vec<String>,
}

impl GroupVersions {
    /// The version clients should use.
    pub fn preferred(&self) -> Option<&str> {
        self.versions.first().map(String::as_str)
    }
}

/// kube-aggregator's `SortedByGroupAndVersion`: APIServices by group priority (highest first,
/// ties by object name), bucketed by group in order of first appearance, each bucket by version
/// priority (highest first, ties by Kubernetes version order).
pub fn sorted_by_group_and_version(services: &[APIService]) -> Vec<GroupVersions> {
    let mut by_group_priority: Vec<&APIService> = services.iter().collect();
    by_group_priority.sort_by(|a, b| {
        b.spec
            .group_priority_minimum
            .cmp(&a.spec.group_priority_minimum)
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let mut buckets: Vec<(String, Vec<&APIServiceSpec>)> = Vec::new();
    for service in by_group_priority {
        let group = service.spec.group.clone().unwrap_or_default();
        match buckets.iter_mut().find(|(g, _)| *g == group) {
            Some((_, specs)) => specs.push(&service.spec),
            None => buckets.push((group, vec![&service.spec])),
        }
    }
    buckets
        .into_iter()
        .map(|(group, mut specs)| {
            specs.sort_by(|a, b| {
                b.version_priority.cmp(&a.version_priority).then_with(|| {
                    compare_kube_aware_version_strings(
                        b.version.as_deref().unwrap_or_default(),
                        a.version.as_deref().unwrap_or_default(),
                    )
                })
            });
            let versions = specs
                .iter()
                .map(|s| s.version.clone().unwrap_or_default())
                .collect();
            GroupVersions { group, versions }
        })
        .collect()
}

/// The generic control plane's default APIService priorities (`DefaultGenericAPIServicePriorities`
/// in Kubernetes 1.37's `pkg/controlplane/apiserver/aggregator.go`), which kube-apiserver registers
/// for the group-versions it serves itself, as (group, version, groupPriorityMinimum,
/// versionPriority). A served group-version that is not
/// listed gets no APIService.
pub const BUILTIN_PRIORITIES: &[(&str, &str, i32, i32)] = &[
    ("", "v1", 18000, 1),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("coordination.k8s.io", "v1beta1", 16500, 13),
    ("coordination.k8s.io", "v1alpha2", 16500, 12),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("resource.k8s.io", "v1alpha3", 15900, 9),
    ("storagemigration.k8s.io", "v1", 15800, 15),
    ("storagemigration.k8s.io", "v1beta1", 15800, 9),
];

/// The local APIServices kube-apiserver registers from [`BUILTIN_PRIORITIES`], named
/// `<version>.<group>` (`v1.` for the core group).
pub fn builtin_apiservices() -> Vec<APIService> {
    BUILTIN_PRIORITIES
        .iter()
        .map(|(group, version, group_priority, version_priority)| {
            let mut service = APIService::default();
            service.metadata.name = Some(format!("{version}.{group}"));
            service.spec.group = Some((*group).to_owned());
            service.spec.version = Some((*version).to_owned());
            service.spec.group_priority_minimum = *group_priority;
            service.spec.version_priority = *version_priority;
            service
        })
        .collect()
}
