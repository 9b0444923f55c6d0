//! OpenAPI v3 merged with the extension servers', as kube-aggregator's v3 spec proxier
//! merges it (`pkg/controllers/openapiv3/aggregator/aggregator.go`): each remote
//! APIService's server's `/openapi/v3` index is read as `system:aggregator` (with discovery,
//! after every change and every minute; a read that fails keeps the index read before);
//! `/openapi/v3` lists the server's own documents and the extensions' paths; a document of
//! an extension's path (`/openapi/v3/apis/GROUP/VERSION?hash=...`) is proxied to its server
//! as the user who asks.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use apfkit_apiserver::auth::UserInfo;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::routing::{Remote, Route, Routing, Table};

/// The biggest local index the proxy merges into.
const MAX_LOCAL_INDEX: usize = 16 << 20;

/// Each remote APIService's server's index paths (`OpenAPIV3Discovery.paths`), by
/// APIService name.
#[derive(Debug, Default)]
pub(crate) struct OpenApi {
    indexes: RwLock<BTreeMap<String, BTreeMap<String, Value>>>,
}

impl OpenApi {
    fn indexes(&self) -> BTreeMap<String, BTreeMap<String, Value>> {
        self.indexes.read().map(|i| i.clone()).unwrap_or_default()
    }

    /// The remote APIService whose server lists `document` (a path such as
    /// `apis/example.com/v1`, its query left out): `handleGroupVersion`.
    pub(crate) fn remote_of(&self, document: &str, table: &Table) -> Option<Arc<Remote>> {
        let indexes = self.indexes.read().ok()?;
        let (name, _) = indexes
            .iter()
            .find(|(_, paths)| paths.contains_key(document))?;
        table.routes.values().find_map(|route| match route {
            Route::Remote(remote) if &remote.name == name => Some(remote.clone()),
            _ => None,
        })
    }
}

/// The identity the index is read as (`aggregatorUser`).
fn aggregator() -> UserInfo {
    UserInfo {
        name: "system:aggregator".to_owned(),
        ..UserInfo::default()
    }
}

/// `updateAPIServiceSpecLocked` for every remote APIService (one read per Service): its
/// server's index kept when read, the one read before kept when not; APIServices gone are
/// forgotten.
pub(crate) async fn refresh(routing: &Routing, openapi: &OpenApi) {
    let table = routing.table();
    let before = openapi.indexes();
    let mut read: BTreeMap<(String, String, i32), Option<BTreeMap<String, Value>>> =
        BTreeMap::new();
    let mut indexes = BTreeMap::new();
    for route in table.routes.values() {
        let Route::Remote(remote) = route else {
            continue;
        };
        let service = (
            remote.namespace.clone(),
            remote.service.clone(),
            remote.port,
        );
        if !read.contains_key(&service) {
            read.insert(service.clone(), index_of(routing, remote).await);
        }
        let index = read[&service]
            .clone()
            .or_else(|| before.get(&remote.name).cloned());
        if let Some(index) = index {
            indexes.insert(remote.name.clone(), index);
        }
    }
    if let Ok(mut current) = openapi.indexes.write() {
        *current = indexes;
    }
}

/// `OpenAPIV3Root`: the paths of the index of `remote`'s server, or `None` when it could not
/// be read (an error, not 200, not an index).
async fn index_of(routing: &Routing, remote: &Remote) -> Option<BTreeMap<String, Value>> {
    let fetched = crate::discovery::fetch(
        routing,
        remote,
        "/openapi/v3",
        "application/json",
        &aggregator(),
    )
    .await;
    let (status, _, body) = fetched.ok()?;
    if status != 200 {
        return None;
    }
    paths_of(&body)
}

/// The paths of an index (`OpenAPIV3Discovery`), those with a `serverRelativeURL`; `None`
/// for what is not an index.
fn paths_of(body: &[u8]) -> Option<BTreeMap<String, Value>> {
    let index: Value = serde_json::from_slice(body).ok()?;
    let paths = index.get("paths")?.as_object()?;
    Some(
        paths
            .iter()
            .filter(|(_, item)| item["serverRelativeURL"].is_string())
            .map(|(path, item)| (path.clone(), item.clone()))
            .collect(),
    )
}

/// The server's own `/openapi/v3` index with the extensions' paths added (its own paths
/// kept where an extension lists the same).
pub(crate) async fn merged_index(response: Response, openapi: &OpenApi) -> Response {
    let indexes = openapi.indexes();
    if response.status() != StatusCode::OK || indexes.is_empty() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_LOCAL_INDEX).await else {
        return apfkit_apiserver::http::plain_text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "OpenAPI index too large",
        );
    };
    let Ok(mut index) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
        for remote in indexes.into_values() {
            for (path, item) in remote {
                paths.entry(path).or_insert(item);
            }
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::ETAG);
    Response::from_parts(parts, Body::from(index.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an extension's index may hold, hostile or not.
    #[test]
    fn only_paths_with_a_url_are_taken_from_an_index() {
        let index = br#"{"paths": {
            "apis/example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/example.com/v1?hash=A"},
            "apis/example.com/v2": {"serverRelativeURL": 7},
            "apis/example.com/v3": "nothing"}}"#;
        let paths = paths_of(index).unwrap();
        assert_eq!(paths.keys().collect::<Vec<_>>(), ["apis/example.com/v1"]);
        for garbage in [
            &b"garbage"[..],
            b"",
            br#"{"paths": ["apis/example.com/v1"]}"#,
            br#"{"paths": {"apis/example.com/v1": {"serverRelativeURL": "/x"}"#,
            br#"{"other": {}}"#,
        ] {
            assert_eq!(
                paths_of(garbage),
                None,
                "{}",
                String::from_utf8_lossy(garbage)
            );
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(paths_of(deep.as_bytes()), None);
    }

    /// The server's index keeps its own paths and gains the extensions' others
    /// (`getOpenAPIV3Root`); a local index that is not one is passed on as it is.
    #[tokio::test]
    async fn the_index_lists_the_extensions_paths_after_the_servers_own() {
        let openapi = OpenApi::default();
        let extension = paths_of(
            br#"{"paths": {
                "apis/example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/example.com/v1?hash=E"},
                "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=HIJACKED"}}}"#,
        )
        .unwrap();
        openapi
            .indexes
            .write()
            .unwrap()
            .insert("v1.example.com".into(), extension);
        let local = r#"{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=L"}}}"#;
        let response = merged_index(Response::new(Body::from(local)), &openapi).await;
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let merged: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            merged,
            serde_json::json!({"paths": {
                "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=L"},
                "apis/example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/example.com/v1?hash=E"},
            }})
        );
        let odd = merged_index(Response::new(Body::from("not json")), &openapi).await;
        let bytes = axum::body::to_bytes(odd.into_body(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"not json");
    }
}
