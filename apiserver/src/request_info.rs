//! What a request asks for, as kube-apiserver's `RequestInfoFactory` reads it from the method
//! and URL (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`): resource requests under
//! `/api` and `/apis` (verb, group, version, namespace, resource, name, subresource), and
//! every other path a non-resource request. API Priority and Fairness classifies requests by
//! it.

/// kube-apiserver's reading of a request (the server's authentication layer puts it in the
/// request's extensions, as an `Arc`), or, for a request that did not pass that layer, made
/// now.
pub fn of<B>(request: &http::Request<B>) -> std::sync::Arc<RequestInfo> {
    match request.extensions().get::<std::sync::Arc<RequestInfo>>() {
        Some(info) => info.clone(),
        None => {
            let uri = request.uri();
            std::sync::Arc::new(RequestInfo::new(
                request.method().as_str(),
                uri.path(),
                uri.query(),
            ))
        }
    }
}

/// The request's information.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether it is for a resource (or a non-resource path).
    pub is_resource_request: bool,
    /// `api` or `apis`; empty for non-resource requests.
    pub api_prefix: String,
    /// The API group; empty for the core group.
    pub api_group: String,
    /// The version.
    pub api_version: String,
    /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`; the lower-case method for non-resource requests.
    pub verb: String,
    /// The namespace; empty for cluster-scoped or all-namespace requests.
    pub namespace: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The object's name (also from a `metadata.name=` field selector of a list or watch).
    pub name: String,
    /// The path's parts from the resource on (`RESOURCE[/NAME[/SUBRESOURCE[/...]]]`), after
    /// the namespace and a verb given in the path; empty for non-resource requests.
    pub parts: Vec<String>,
    /// The URL path.
    pub path: String,
}

/// Verbs given as the first path segment after the version.
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Subresources of a namespace (`/namespaces/NAME/status`), not resources within it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Reads the information of a request with `method`, `path` and `query`.
    pub fn new(method: &str, path: &str, query: Option<&str>) -> RequestInfo {
        let mut info = RequestInfo {
            path: path.to_owned(),
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() == 1 && parts[0].is_empty() {
            parts.clear();
        }
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return info;
        }
        info.api_prefix = parts[0].to_owned();
        let mut rest = &parts[1..];
        if info.api_prefix != "api" {
            if rest.len() < 3 {
                return info;
            }
            info.api_group = rest[0].to_owned();
            rest = &rest[1..];
        }
        info.is_resource_request = true;
        info.api_version = rest[0].to_owned();
        rest = &rest[1..];
        if let Some(first) = rest.first()
            && SPECIAL_VERBS.contains(first)
        {
            if rest.len() < 2 {
                // kube-apiserver refuses it ("unable to determine kind and namespace"); it
                // stays a resource request without a resource.
                info.verb = (*first).to_owned();
                return info;
            }
            info.verb = (*first).to_owned();
            rest = &rest[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }
        if rest.first() == Some(&"namespaces")
            && let Some(namespace) = rest.get(1)
        {
            info.namespace = (*namespace).to_owned();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        info.parts = rest.iter().map(|part| (*part).to_owned()).collect();
        if rest.len() >= 3 && info.verb != "proxy" {
            info.subresource = rest[2].to_owned();
        }
        if rest.len() >= 2 {
            info.name = rest[1].to_owned();
        }
        if let Some(resource) = rest.first() {
            info.resource = (*resource).to_owned();
        }
        if info.name.is_empty() && info.verb == "get" {
            let (watch, name) = list_options(query);
            info.verb = if watch { "watch" } else { "list" }.to_owned();
            if let Some(name) = name {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        info
    }

    /// Why kube-apiserver's `RequestInfoFactory` cannot read the request, which it answers
    /// with a 500 before anything else: a special verb (`watch`, `proxy`) with nothing after
    /// it.
    pub fn unreadable(&self) -> Option<&'static str> {
        (self.is_resource_request
            && self.parts.is_empty()
            && SPECIAL_VERBS.contains(&self.verb.as_str()))
        .then_some("unable to determine kind and namespace from url")
    }

    /// Whether the request is long-running as kube-apiserver's default check says: a watch,
    /// or a proxy (`genericapifilters.BasicLongRunningRequestCheck` with kube-apiserver's
    /// verbs and subresources).
    pub fn is_long_running(&self) -> bool {
        self.is_resource_request
            && (matches!(self.verb.as_str(), "watch" | "proxy")
                || matches!(
                    self.subresource.as_str(),
                    "attach" | "exec" | "proxy" | "log" | "portforward"
                ))
    }
}

/// Whether a list is a watch, and the name a `metadata.name` field selector requires, from
/// the first value of each parameter, as apimachinery decodes query parameters.
fn list_options(query: Option<&str>) -> (bool, Option<String>) {
    let mut watch = None;
    let mut selector = None;
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "watch" if watch.is_none() => watch = Some(query_bool(&value)),
            "fieldSelector" if selector.is_none() => selector = Some(value.into_owned()),
            _ => {}
        }
    }
    let name = selector.and_then(|selector| {
        selector
            .split(',')
            .filter_map(|term| {
                term.strip_prefix("metadata.name==")
                    .or_else(|| term.strip_prefix("metadata.name="))
            })
            .map(str::trim)
            .find(|n| valid_path_segment(n))
            .map(str::to_owned)
    });
    (watch.unwrap_or(false), name)
}

/// A boolean query parameter's value as apimachinery reads it
/// (`runtime.Convert_Slice_string_To_bool`): `false` in any case and `0` are false, anything
/// else, the empty value included, is true.
pub(crate) fn query_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
fn valid_path_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `expectedParts` of `TestGetAPIRequestInfo` (upstream's `requestinfo_test.go`): the
    /// path from the resource on, after the namespace and a verb in the path.
    #[test]
    fn parts_are_the_path_from_the_resource_on() {
        let cases: [(&str, &str, &[&str]); 12] = [
            ("GET", "/api/v1/namespaces", &["namespaces"]),
            ("GET", "/api/v1/namespaces/other", &["namespaces", "other"]),
            ("GET", "/api/v1/namespaces/other/pods", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods/foo", &["pods", "foo"]),
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
                &["pods", "foo", "subpath", "not", "a", "subresource"],
            ),
            ("GET", "/api/v1/watch/namespaces/other/pods", &["pods"]),
            ("GET", "/api/v1/pods?watch=true", &["pods"]),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/status",
                &["pods", "foo", "status"],
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/proxy/subpath",
                &["pods", "foo", "proxy", "subpath"],
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                &["namespaces", "other", "finalize"],
            ),
            (
                "DELETE",
                "/apis/extensions/v1/namespaces/other/pods",
                &["pods"],
            ),
            (
                "POST",
                "/apis/extensions/v1beta3/namespaces/other/pods",
                &["pods"],
            ),
        ];
        for (method, url, parts) in cases {
            let (path, query) = url
                .split_once('?')
                .map_or((url, None), |(p, q)| (p, Some(q)));
            let info = RequestInfo::new(method, path, query);
            assert_eq!(info.parts, parts, "{method} {url}");
        }
        // Not a resource request: no parts.
        assert!(
            RequestInfo::new("GET", "/apis/extensions", None)
                .parts
                .is_empty()
        );
    }

    /// (method, URL, verb, prefix, group, version, namespace, resource, subresource, name):
    /// the cases of `TestGetAPIRequestInfo` in upstream's `requestinfo_test.go`, written out.
    #[test]
    fn resource_requests_are_read_as_kube_apiserver_reads_them() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces",
                "list",
                "api",
                "",
                "v1",
                "",
                "namespaces",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other",
                "get",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "",
                "other",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                "list",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "HEAD",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "GET",
                "/api/v1/pods",
                "list",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "HEAD",
                "/api/v1/pods",
                "list",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo",
                "proxy",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
                "proxy",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "GET",
                "/api/v1/watch/pods",
                "watch",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/pods?watch=true",
                "watch",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/pods?watch=false",
                "list",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/other/pods",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=1",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=0",
                "list",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=yes",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=FALSE&watch=true",
                "list",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/status",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "status",
                "foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/proxy/subpath",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "proxy",
                "foo",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                "update",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "finalize",
                "other",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/status",
                "update",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "status",
                "other",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/other/pods/foo",
                "patch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods/foo",
                "delete",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "POST",
                "/api/v1/namespaces/other/pods",
                "create",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "DELETE",
                "/api/v1/nodes",
                "deletecollection",
                "api",
                "",
                "v1",
                "",
                "nodes",
                "",
                "",
            ),
            (
                "DELETE",
                "/api/v1/namespaces",
                "deletecollection",
                "api",
                "",
                "v1",
                "",
                "namespaces",
                "",
                "",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods",
                "deletecollection",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "DELETE",
                "/apis/extensions/v1/namespaces/other/pods",
                "deletecollection",
                "apis",
                "extensions",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "POST",
                "/apis/extensions/v1/namespaces/other/pods",
                "create",
                "apis",
                "extensions",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "POST",
                "/apis/extensions/v1beta3/namespaces/other/pods",
                "create",
                "apis",
                "extensions",
                "v1beta3",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?fieldSelector=metadata.name%3Dexempt&watch=true",
                "watch",
                "apis",
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "",
                "flowschemas",
                "",
                "exempt",
            ),
            (
                "GET",
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?fieldSelector=metadata.name%3D..",
                "list",
                "apis",
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "",
                "flowschemas",
                "",
                "",
            ),
            (
                "PATCH",
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/a/status",
                "patch",
                "apis",
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "",
                "flowschemas",
                "status",
                "a",
            ),
        ];
        for (method, url, verb, prefix, group, version, namespace, resource, subresource, name) in
            cases
        {
            let (path, query) = url
                .split_once('?')
                .map_or((url, None), |(p, q)| (p, Some(q)));
            let info = RequestInfo::new(method, path, query);
            assert!(info.is_resource_request, "{method} {url}");
            assert_eq!(
                (
                    info.verb.as_str(),
                    info.api_prefix.as_str(),
                    info.api_group.as_str(),
                    info.api_version.as_str(),
                    info.namespace.as_str(),
                    info.resource.as_str(),
                    info.subresource.as_str(),
                    info.name.as_str()
                ),
                (
                    verb,
                    prefix,
                    group,
                    version,
                    namespace,
                    resource,
                    subresource,
                    name
                ),
                "{method} {url}"
            );
        }
    }

    #[test]
    fn other_paths_are_non_resource_requests() {
        for (method, path) in [
            ("GET", "/"),
            ("GET", "/healthz"),
            ("GET", "/version"),
            ("GET", "/api"),
            ("GET", "/api/v1"),
            ("GET", "/apis"),
            ("GET", "/apis/flowcontrol.apiserver.k8s.io"),
            ("GET", "/apis/flowcontrol.apiserver.k8s.io/v1"),
            ("POST", "/openapi/v3"),
            ("GET", "/other/a/b/c"),
        ] {
            let info = RequestInfo::new(method, path, None);
            assert!(!info.is_resource_request, "{path}");
            assert_eq!(info.verb, method.to_ascii_lowercase());
            assert_eq!(info.path, path);
        }
    }

    #[test]
    fn watches_and_proxies_are_long_running() {
        let watch = RequestInfo::new("GET", "/api/v1/pods", Some("watch=true"));
        assert!(watch.is_long_running());
        let list = RequestInfo::new("GET", "/api/v1/pods", None);
        assert!(!list.is_long_running());
        let exec = RequestInfo::new("POST", "/api/v1/namespaces/a/pods/p/exec", None);
        assert!(exec.is_long_running());
        assert!(!RequestInfo::new("GET", "/healthz", None).is_long_running());
    }
}
