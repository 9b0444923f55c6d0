//! Discovery documents: `/api` and `/api/v1` (the core group, `""`, when a resource of it is
//! served), `/apis` (plain and aggregated), `/apis/<group>` and `/apis/<group>/<version>`,
//! as kube-apiserver writes them
//! (`k8s.io/apiserver/pkg/endpoints/discovery`).

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;

use super::reviews::Review;
use crate::store::Served;
use apfkit_runtime::identity::{GroupVersion, GroupVersionKind};

/// The verbs of a resource's collection and objects.
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The verbs of a resource without `deletecollection` (Namespaces).
const VERBS_BUT_DELETECOLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// The verbs of a `/status` or `/scale` subresource.
const STATUS_VERBS: &[&str] = &["get", "patch", "update"];
/// The verbs of a `/finalize` subresource (Namespaces': a PUT alone).
const FINALIZE_VERBS: &[&str] = &["update"];

/// The verbs of a resource's collection and objects.
fn verbs(config: &crate::store::ResourceConfig) -> &'static [&'static str] {
    if config.delete_collection {
        VERBS
    } else {
        VERBS_BUT_DELETECOLLECTION
    }
}

/// A group with its versions, preferred first.
#[derive(Debug, Clone)]
pub struct Group {
    /// The group name.
    pub name: String,
    /// Versions, preferred first.
    pub versions: Vec<String>,
}

/// The groups of the served resources in order of first appearance, each with the versions any
/// of its resources serves, in kube-apiserver's version priority order.
/// The groups of the reviews follow, in v1.
pub fn groups<H>(resources: &[std::sync::Arc<Served<H>>], reviews: &[&Review]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for served in resources {
        let group = match groups.iter_mut().find(|g| g.name == served.config.group) {
            Some(group) => group,
            None => {
                groups.push(Group {
                    name: served.config.group.clone(),
                    versions: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        for codec in &served.versions {
            if !group.versions.iter().any(|v| v == codec.version()) {
                group.versions.push(codec.version().to_owned());
            }
        }
        group
            .versions
            .sort_by(|a, b| apfkit_runtime::version::compare_kube_aware_version_strings(b, a));
    }
    for review in reviews {
        if !groups.iter().any(|g| g.name == review.group)
            && !resources.iter().any(|s| s.config.group == review.group)
        {
            groups.push(Group {
                name: review.group.to_owned(),
                versions: vec!["v1".to_owned()],
            });
        }
    }
    groups
}

/// apiserver's `StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/version/kind`, base64 (`k8s.io/apiserver/pkg/endpoints/discovery/
/// storageversionhash.go`).
pub fn storage_version_hash(kind: &GroupVersionKind) -> String {
    let GroupVersionKind {
        group,
        version,
        kind,
    } = kind;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn group_version(group: &str, version: &str) -> Value {
    let api_version = GroupVersion::new(group.to_owned(), version.to_owned()).api_version();
    json!({"groupVersion": api_version, "version": version})
}

fn api_group(group: &Group) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| group_version(&group.name, v))
        .collect();
    json!({
        "name": group.name,
        "versions": versions,
        "preferredVersion": group_version(&group.name, &group.versions[0]),
    })
}

/// `/apis` as an `APIGroupList` (the core group is `/api`'s).
pub fn group_list(groups: &[Group]) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .filter(|group| !group.name.is_empty())
        .map(api_group)
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>` as an `APIGroup`.
pub fn group_document(group: &Group) -> Value {
    let mut document = api_group(group);
    let map = document.as_object_mut().expect("an object");
    let mut with_kind = serde_json::Map::new();
    with_kind.insert("kind".into(), "APIGroup".into());
    with_kind.insert("apiVersion".into(), "v1".into());
    with_kind.append(map);
    Value::Object(with_kind)
}

/// `/api`: the versions of the legacy core group (`""`) served, none when no resource of it
/// is.
pub fn core_versions(groups: &[Group]) -> Value {
    let versions: Vec<&String> = groups
        .iter()
        .filter(|group| group.name.is_empty())
        .flat_map(|group| &group.versions)
        .collect();
    json!({"kind": "APIVersions", "versions": versions, "serverAddressByClientCIDRs": []})
}

/// `/apis/<group>/<version>` as an `APIResourceList`.
pub fn resource_list<H>(
    resources: &[std::sync::Arc<Served<H>>],
    reviews: &[&Review],
    group: &str,
    version: &str,
) -> Value {
    let mut listed: Vec<Value> = reviews
        .iter()
        .filter(|review| review.group == group && version == "v1")
        .map(|review| {
            json!({
                "name": review.plural,
                "singularName": review.kind.to_lowercase(),
                "namespaced": review.namespaced,
                "kind": review.kind,
                "verbs": ["create"],
            })
        })
        .collect();
    for served in resources.iter().filter(|s| s.config.group == group) {
        if served.version(version).is_none() {
            continue;
        }
        let config = &served.config;
        let mut resource = json!({
            "name": served.plural,
            "singularName": served.singular(),
            "namespaced": config.namespaced,
            "kind": config.kind,
            "verbs": verbs(config),
            "storageVersionHash": storage_version_hash(served.storage.gvk()),
        });
        if !config.short_names.is_empty() {
            resource["shortNames"] = json!(config.short_names);
        }
        if !config.categories.is_empty() {
            resource["categories"] = json!(config.categories);
        }
        listed.push(resource);
        let subresources = [
            (config.finalize, "finalize", FINALIZE_VERBS),
            (config.status, "status", STATUS_VERBS),
        ];
        for (_, name, verbs) in subresources.into_iter().filter(|(has, ..)| *has) {
            listed.push(json!({
                "name": format!("{}/{name}", served.plural),
                "singularName": "",
                "namespaced": config.namespaced,
                "kind": config.kind,
                "verbs": verbs,
            }));
        }
        for (name, kind) in &config.created_subresources {
            listed.push(json!({
                "name": format!("{}/{name}", served.plural),
                "singularName": "",
                "namespaced": config.namespaced,
                "group": kind.group,
                "version": kind.version,
                "kind": kind.kind,
                "verbs": ["create"],
            }));
        }
        if config.scale.is_some() {
            listed.push(json!({
                "name": format!("{}/scale", served.plural),
                "singularName": "",
                "namespaced": config.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": STATUS_VERBS,
            }));
        }
    }
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GroupVersion::new(group.to_owned(), version.to_owned()).api_version(),
        "resources": listed,
    })
}

/// `/apis` (`core` false) or `/api` (`core` true, the core group only) as aggregated
/// discovery (`APIGroupDiscoveryList` of `apidiscovery.k8s.io/<version>`).
pub fn aggregated<H>(
    resources: &[std::sync::Arc<Served<H>>],
    reviews: &[&Review],
    groups: &[Group],
    core: bool,
    api_version: &str,
) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .filter(|group| group.name.is_empty() == core)
        .map(|group| {
            let versions: Vec<Value> = group
                .versions
                .iter()
                .map(|version| {
                    let listed: Vec<Value> = reviews
                        .iter()
                        .filter(|review| review.group == group.name && version == "v1")
                        .map(|review| aggregated_review(review))
                        .chain(
                            resources
                                .iter()
                                .filter(|s| {
                                    s.config.group == group.name && s.version(version).is_some()
                                })
                                .map(|served| aggregated_resource(served, version)),
                        )
                        .collect();
                    json!({"version": version, "resources": listed, "freshness": "Current"})
                })
                .collect();
            // The core group's item has no name (`omitempty`).
            let metadata = if group.name.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": group.name, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

/// A review in aggregated discovery: create only.
fn aggregated_review(review: &Review) -> Value {
    json!({
        "resource": review.plural,
        "responseKind": {"group": review.group, "version": "v1", "kind": review.kind},
        "scope": if review.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": review.kind.to_lowercase(),
        "verbs": ["create"],
    })
}

fn aggregated_resource<H>(served: &Served<H>, version: &str) -> Value {
    let config = &served.config;
    // kube-apiserver's aggregated discovery of the core group leaves the version out of its
    // resources' kinds.
    let kind_version = if config.group.is_empty() { "" } else { version };
    let kind = json!({"group": config.group, "version": kind_version, "kind": config.kind});
    let mut resource = json!({
        "resource": served.plural,
        "responseKind": kind,
        "scope": if config.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": served.singular(),
        "verbs": verbs(config),
    });
    if !config.short_names.is_empty() {
        resource["shortNames"] = json!(config.short_names);
    }
    if !config.categories.is_empty() {
        resource["categories"] = json!(config.categories);
    }
    let mut subresources = Vec::new();
    let own = [
        (config.finalize, "finalize", FINALIZE_VERBS),
        (config.status, "status", STATUS_VERBS),
    ];
    for (_, name, verbs) in own.into_iter().filter(|(has, ..)| *has) {
        subresources.push(json!({
            "subresource": name,
            "responseKind": kind,
            "verbs": verbs,
        }));
    }
    for (name, kind) in &config.created_subresources {
        subresources.push(json!({
            "subresource": name,
            "responseKind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "verbs": ["create"],
        }));
    }
    if config.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": STATUS_VERBS,
        }));
    }
    if !subresources.is_empty() {
        resource["subresources"] = Value::Array(subresources);
    }
    resource
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hashes_are_kube_apiservers() {
        // kubernetes/kubernetes `api/discovery/apis__flowcontrol.apiserver.k8s.io__v1.json`
        // (commit 6f137b77), from a release that stored flowcontrol objects in v1beta3.
        let group = "flowcontrol.apiserver.k8s.io";
        let hash =
            |kind| storage_version_hash(&GroupVersionKind::from_static(group, "v1beta3", kind));
        assert_eq!(hash("FlowSchema"), "9NnFrw7ZEmA=");
        assert_eq!(hash("PriorityLevelConfiguration"), "+CwSrEWTDhc=");
    }
}
