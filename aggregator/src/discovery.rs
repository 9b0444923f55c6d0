//! Discovery merged with the extension servers', as kube-aggregator's discovery manager
//! merges it (`pkg/apiserver/handler_discovery.go`, `apis.go`): each remote APIService's
//! group-version is fetched from its server's aggregated `/apis` (its legacy
//! `/apis/GROUP/VERSION` when it has none), as `system:kube-aggregator` in `system:masters`,
//! within 5 s, after every change and every minute; a fetch that fails keeps what was read
//! before, marked `Stale` (an APIService never read is listed with no resources). `/apis`
//! then lists the server's own groups and, after them, the extensions' by
//! `groupPriorityMinimum` and `versionPriority`; `/apis/GROUP` of an extension's group is
//! answered from its APIServices.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;
use std::time::Duration;

use apfkit_apiserver::auth::UserInfo;
use apfkit_runtime::identity::GroupVersion;
use axum::body::Body;
use axum::http::{Request, Uri, header};
use serde_json::{Value, json};

use crate::routing::{Remote, Route, Routing};

/// How long a fetch may take (`http.TimeoutHandler` of 5 s).
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The biggest discovery document read from an extension server.
const MAX_DOCUMENT: usize = 8 << 20;
/// What is asked of an extension's `/apis` (`discovery.AcceptV2 + "," + AcceptV2Beta1`).
const ACCEPT_AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// One remote APIService's group-version as discovery lists it.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    group: String,
    version: String,
    group_priority: i64,
    version_priority: i64,
    /// The `APIVersionDiscovery`, with its `freshness`.
    document: Value,
}

/// The remote group-versions, by APIService name.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    merged: RwLock<BTreeMap<String, Merged>>,
}

impl Discovery {
    fn merged(&self) -> Vec<Merged> {
        self.merged
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The remote groups in kube-aggregator's order (`SortedByGroupAndVersion`): by the
    /// highest `groupPriorityMinimum` of their APIServices, then by name; each group's
    /// versions by `versionPriority`, then kube's version order.
    fn groups(&self) -> Vec<(String, Vec<Merged>)> {
        let mut groups: HashMap<String, Vec<Merged>> = HashMap::new();
        for entry in self.merged() {
            groups.entry(entry.group.clone()).or_default().push(entry);
        }
        let mut groups: Vec<(String, Vec<Merged>)> = groups.into_iter().collect();
        for (_, versions) in &mut groups {
            versions.sort_by(|a, b| {
                b.version_priority.cmp(&a.version_priority).then_with(|| {
                    apfkit_runtime::version::compare_kube_aware_version_strings(
                        &b.version, &a.version,
                    )
                })
            });
        }
        let priority =
            |versions: &[Merged]| versions.iter().map(|v| v.group_priority).max().unwrap_or(0);
        groups.sort_by(|(a, av), (b, bv)| priority(bv).cmp(&priority(av)).then_with(|| a.cmp(b)));
        groups
    }

    /// An aggregated `/apis` (`APIGroupDiscoveryList`) with the remote groups the local one
    /// lacks, every group in order of `priorities` ([`sort_groups`]).
    pub(crate) fn merge_aggregated(&self, local: &mut Value, priorities: &HashMap<String, i64>) {
        let Some(items) = local.get_mut("items").and_then(Value::as_array_mut) else {
            return;
        };
        let local_groups: Vec<String> = items
            .iter()
            .filter_map(|item| item.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        for (group, versions) in self.groups() {
            if local_groups.contains(&group) {
                continue;
            }
            let versions: Vec<Value> = versions.into_iter().map(|v| v.document).collect();
            items.push(json!({
                "metadata": {"name": group, "creationTimestamp": null},
                "versions": versions,
            }));
        }
        sort_groups(items, "/metadata/name", &self.with_remote(priorities));
    }

    /// A legacy `/apis` (`APIGroupList`) with the remote groups the local one lacks, every
    /// group in order of `priorities`.
    pub(crate) fn merge_group_list(&self, local: &mut Value, priorities: &HashMap<String, i64>) {
        let Some(groups) = local.get_mut("groups").and_then(Value::as_array_mut) else {
            return;
        };
        let local_groups: Vec<String> = groups
            .iter()
            .filter_map(|g| g.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        for (group, versions) in self.groups() {
            if !local_groups.contains(&group) {
                groups.push(api_group(&group, &versions));
            }
        }
        sort_groups(groups, "/name", &self.with_remote(priorities));
    }

    /// `priorities` with the remote groups' own where it lacks them.
    fn with_remote(&self, priorities: &HashMap<String, i64>) -> HashMap<String, i64> {
        let mut all = priorities.clone();
        for entry in self.merged() {
            let priority = all.entry(entry.group).or_insert(entry.group_priority);
            *priority = (*priority).max(entry.group_priority);
        }
        all
    }

    /// `/apis/GROUP` (`APIGroup`) of a remote group, if it is one.
    pub(crate) fn group_document(&self, name: &str) -> Option<Value> {
        let (group, versions) = self.groups().into_iter().find(|(g, _)| g == name)?;
        let mut document = api_group(&group, &versions);
        let map = document.as_object_mut()?;
        let mut with_kind = serde_json::Map::new();
        with_kind.insert("kind".into(), "APIGroup".into());
        with_kind.insert("apiVersion".into(), "v1".into());
        with_kind.append(map);
        Some(Value::Object(with_kind))
    }
}

/// kube-aggregator's priority of its own group (`APIRegistrationGroupPriority`): above any
/// an APIService may have, so that it is listed first.
const OWN_GROUP_PRIORITY: i64 = 20001;

/// The groups of `/apis` in kube-aggregator's order: by group priority, highest first, then
/// by name. A group's priority is its APIServices' highest `groupPriorityMinimum`
/// (`priorities`); `apiregistration.k8s.io`'s is 20001; a group without an APIService yet
/// has kube-apiserver's for it, else none (last).
fn sort_groups(groups: &mut [Value], name_at: &str, priorities: &HashMap<String, i64>) {
    let priority = |name: &str| {
        if name == "apiregistration.k8s.io" {
            return OWN_GROUP_PRIORITY;
        }
        priorities
            .get(name)
            .copied()
            .or_else(|| crate::autoregister::builtin_priority(name))
            .unwrap_or(0)
    };
    let name_of = |group: &Value| {
        group
            .pointer(name_at)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    groups.sort_by_cached_key(|group| {
        let name = name_of(group);
        (std::cmp::Reverse(priority(&name)), name)
    });
}

/// A group of `APIGroupList`, its first version preferred.
fn api_group(group: &str, versions: &[Merged]) -> Value {
    let listed: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{}", v.version), "version": v.version}))
        .collect();
    json!({
        "name": group,
        "versions": listed,
        "preferredVersion": listed.first().cloned().unwrap_or_default(),
    })
}

/// `endpoints.ConvertGroupVersionIntoToDiscovery`: a legacy `APIResourceList`'s resources as
/// aggregated discovery's, subresources under their resource.
fn resources_of(list: &Value, listed: &GroupVersion) -> Vec<Value> {
    let (group, version) = (listed.group.as_ref(), listed.version.as_ref());
    let empty = Vec::new();
    let resources = list
        .get("resources")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let kind_of = |resource: &Value| {
        json!({
            "group": resource.get("group").and_then(Value::as_str).unwrap_or(group),
            "version": resource.get("version").and_then(Value::as_str).unwrap_or(version),
            "kind": resource.get("kind").cloned().unwrap_or_default(),
        })
    };
    let mut out: Vec<Value> = Vec::new();
    for resource in resources {
        let name = resource
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name.contains('/') {
            continue;
        }
        let mut converted = json!({
            "resource": name,
            "responseKind": kind_of(resource),
            "scope": if resource["namespaced"] == true { "Namespaced" } else { "Cluster" },
            "singularResource": resource.get("singularName").cloned().unwrap_or_default(),
            "verbs": resource.get("verbs").cloned().unwrap_or_else(|| json!([])),
        });
        for field in ["shortNames", "categories"] {
            if let Some(value) = resource.get(field).filter(|v| !v.is_null()) {
                converted[field] = value.clone();
            }
        }
        out.push(converted);
    }
    for resource in resources {
        let name = resource
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some((parent, subresource)) = name.split_once('/') else {
            continue;
        };
        if let Some(parent) = out.iter_mut().find(|r| r["resource"] == parent) {
            let entry = json!({
                "subresource": subresource,
                "responseKind": kind_of(resource),
                "verbs": resource.get("verbs").cloned().unwrap_or_else(|| json!([])),
            });
            match parent.get_mut("subresources").and_then(Value::as_array_mut) {
                Some(list) => list.push(entry),
                None => parent["subresources"] = json!([entry]),
            }
        }
    }
    out
}

/// The aggregator's identity when it reads an extension's discovery.
fn kube_aggregator() -> UserInfo {
    UserInfo {
        name: "system:kube-aggregator".to_owned(),
        groups: vec!["system:masters".to_owned()],
        ..UserInfo::default()
    }
}

/// GETs `path` of `remote`'s server with `accept` as `user` (within 5 s, at most 8 MiB):
/// the status, content type and body.
pub(crate) async fn fetch(
    routing: &Routing,
    remote: &Remote,
    path: &str,
    accept: &str,
    user: &UserInfo,
) -> Result<(u16, String, Vec<u8>), String> {
    let (address, port) = routing
        .table()
        .resolve(remote)
        .map_err(|why| format!("{why:?}"))?;
    let (client, _in_flight) = remote.backend.client()?;
    let host = if address.contains(':') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    };
    let uri: Uri = format!("https://{host}{path}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut request = Request::get(uri)
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    crate::front_proxy::forward_headers(request.headers_mut(), user);
    let response = tokio::time::timeout(FETCH_TIMEOUT, client.request(request))
        .await
        .map_err(|_| "request timed out".to_owned())?
        .map_err(|e| crate::client::reach_error(&e, &host))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = tokio::time::timeout(
        FETCH_TIMEOUT,
        axum::body::to_bytes(Body::new(response.into_body()), MAX_DOCUMENT),
    )
    .await
    .map_err(|_| "request timed out".to_owned())?
    .map_err(|e| e.to_string())?;
    Ok((status, content_type, body.to_vec()))
}

/// `fetchFreshDiscoveryForService`: the group-versions `remote`'s server lists; for a server
/// without aggregated discovery, its legacy document of `wanted` alone.
async fn fetch_service(routing: &Routing, remote: &Remote, wanted: &GroupVersion) -> Fetched {
    let (status, content_type, body) = fetch(
        routing,
        remote,
        "/apis",
        ACCEPT_AGGREGATED,
        &kube_aggregator(),
    )
    .await?;
    if status == 503 {
        return Err(format!(
            "service returned non-success response code: {status}"
        ));
    }
    let aggregated = content_type.starts_with("application/json;g=apidiscovery.k8s.io");
    if status == 200 && aggregated {
        let list: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let mut found = HashMap::new();
        for item in list["items"].as_array().into_iter().flatten() {
            let name = item
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for listed in item["versions"].as_array().into_iter().flatten() {
                let listed_version = listed["version"].as_str().unwrap_or_default();
                found.insert(
                    GroupVersion::new(name.to_owned(), listed_version.to_owned()),
                    listed.clone(),
                );
            }
        }
        return Ok(found);
    }
    let path = format!("/{}", wanted.api_root());
    let (status, _, body) = fetch(
        routing,
        remote,
        &path,
        "application/json",
        &kube_aggregator(),
    )
    .await?;
    if status != 200 {
        return Err(format!(
            "failed to download legacy discovery for {path}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    let list: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let document = json!({"version": wanted.version, "resources": resources_of(&list, wanted)});
    Ok(HashMap::from([(wanted.clone(), document)]))
}

/// What one Service's server listed, by group-version, or why it could not be read.
type Fetched = Result<HashMap<GroupVersion, Value>, String>;

/// `syncAPIService` for every remote APIService: its group-version read again (one fetch per
/// Service), fresh or stale.
pub(crate) async fn refresh(routing: &Routing, discovery: &Discovery) {
    let table = routing.table();
    let before: BTreeMap<String, Merged> = discovery
        .merged
        .read()
        .map(|m| m.clone())
        .unwrap_or_default();
    let mut fetched: HashMap<(String, String, i32), Fetched> = HashMap::new();
    let mut merged = BTreeMap::new();
    for (key, route) in &table.routes {
        let Route::Remote(remote) = route else {
            continue;
        };
        let (group, version) = (key.group.as_ref(), key.version.as_ref());
        let service = (
            remote.namespace.clone(),
            remote.service.clone(),
            remote.port,
        );
        if !fetched.contains_key(&service) {
            let result = fetch_service(routing, remote, key).await;
            fetched.insert(service.clone(), result);
        }
        let document = match &fetched[&service] {
            Ok(found) => {
                let mut document = found
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| json!({"version": version}));
                document["freshness"] = "Current".into();
                document
            }
            Err(_) => {
                let mut document = before
                    .get(&remote.name)
                    .map(|m| m.document.clone())
                    .unwrap_or_else(|| json!({"version": version}));
                document["freshness"] = "Stale".into();
                document
            }
        };
        merged.insert(
            remote.name.clone(),
            Merged {
                group: group.to_owned(),
                version: version.to_owned(),
                group_priority: remote.group_priority,
                version_priority: remote.version_priority,
                document,
            },
        );
    }
    if let Ok(mut current) = discovery.merged.write() {
        *current = merged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(group: &str, version: &str, group_priority: i64, version_priority: i64) -> Merged {
        Merged {
            group: group.into(),
            version: version.into(),
            group_priority,
            version_priority,
            document: json!({"version": version, "resources": [], "freshness": "Current"}),
        }
    }

    /// kube-aggregator's order (`apiservice_sort_test.go`'s points): groups by their highest
    /// priority, then name; versions by priority, then kube's version order.
    #[test]
    fn remote_groups_are_ordered_by_priority_then_name() {
        let discovery = Discovery::default();
        {
            let mut entries = discovery.merged.write().unwrap();
            for (name, entry) in [
                ("v1.b.io", merged("b.io", "v1", 100, 15)),
                ("v1beta1.b.io", merged("b.io", "v1beta1", 100, 15)),
                ("v2alpha1.b.io", merged("b.io", "v2alpha1", 100, 20)),
                ("v1.a.io", merged("a.io", "v1", 100, 15)),
                ("v1.z.io", merged("z.io", "v1", 2000, 15)),
            ] {
                entries.insert(name.into(), entry);
            }
        }
        let order: Vec<(String, Vec<String>)> = discovery
            .groups()
            .into_iter()
            .map(|(g, v)| (g, v.into_iter().map(|m| m.version).collect()))
            .collect();
        assert_eq!(
            order,
            [
                ("z.io".to_owned(), vec!["v1".to_owned()]),
                ("a.io".to_owned(), vec!["v1".to_owned()]),
                (
                    "b.io".to_owned(),
                    vec!["v2alpha1".to_owned(), "v1".to_owned(), "v1beta1".to_owned()]
                ),
            ]
        );
        let mut local = json!({"kind": "APIGroupList", "groups": [{"name": "a.io"}]});
        discovery.merge_group_list(&mut local, &HashMap::new());
        let names: Vec<&str> = local["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        // The local group among them, at its APIServices' priority.
        assert_eq!(names, ["z.io", "a.io", "b.io"]);
        let group = discovery.group_document("b.io").unwrap();
        assert_eq!(group["preferredVersion"]["groupVersion"], "b.io/v2alpha1");
        assert_eq!(group["kind"], "APIGroup");
        assert!(discovery.group_document("c.io").is_none());
    }

    /// `ConvertGroupVersionIntoToDiscovery`'s points: scope, kinds, subresources under
    /// their resource.
    /// The server's own groups and the extensions' in one order (`handler_discovery.go`'s,
    /// `apis.go`'s): by group priority, then name; `apiregistration.k8s.io` first; a group
    /// without an APIService yet at kube-apiserver's priority for it.
    #[test]
    fn the_servers_own_groups_are_sorted_among_the_extensions() {
        let discovery = Discovery::default();
        discovery.merged.write().unwrap().extend([
            (
                "v1.metrics.k8s.io".to_owned(),
                merged("metrics.k8s.io", "v1", 100, 100),
            ),
            (
                "v1.zz.example".to_owned(),
                merged("zz.example", "v1", 17500, 10),
            ),
        ]);
        let priorities = HashMap::from([
            ("rbac.authorization.k8s.io".to_owned(), 17000),
            ("example.com".to_owned(), 1000),
        ]);
        let mut local = json!({"kind": "APIGroupList", "groups": [
            {"name": "apiregistration.k8s.io"},
            {"name": "flowcontrol.apiserver.k8s.io"},
            {"name": "example.com"},
            {"name": "rbac.authorization.k8s.io"},
            {"name": "unknown.example"},
        ]});
        discovery.merge_group_list(&mut local, &priorities);
        let names: Vec<&str> = local["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "apiregistration.k8s.io",
                "zz.example",
                "rbac.authorization.k8s.io",
                "flowcontrol.apiserver.k8s.io",
                "example.com",
                "metrics.k8s.io",
                "unknown.example",
            ]
        );
        let mut aggregated =
            json!({"items": [{"metadata": {"name": "rbac.authorization.k8s.io"}}]});
        discovery.merge_aggregated(&mut aggregated, &priorities);
        let names: Vec<&str> = aggregated["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["zz.example", "rbac.authorization.k8s.io", "metrics.k8s.io"]
        );
    }

    #[test]
    fn a_legacy_resource_list_becomes_aggregated_discovery() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "g/v1", "resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "patch"]},
            {"name": "widgets/scale", "namespaced": true, "group": "autoscaling", "version": "v1",
             "kind": "Scale", "verbs": ["get"]},
        ]});
        assert_eq!(
            resources_of(&list, &GroupVersion::from_static("g", "v1")),
            [json!({
                "resource": "widgets", "scope": "Namespaced", "singularResource": "widget",
                "responseKind": {"group": "g", "version": "v1", "kind": "Widget"},
                "verbs": ["get", "list"], "shortNames": ["wd"],
                "subresources": [
                    {"subresource": "status", "verbs": ["get", "patch"],
                     "responseKind": {"group": "g", "version": "v1", "kind": "Widget"}},
                    {"subresource": "scale", "verbs": ["get"],
                     "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}},
                ],
            })]
        );
    }
}
