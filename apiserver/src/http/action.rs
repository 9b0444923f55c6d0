//! What a resource request does: the verb its [`RequestInfo`] reads, held to the methods
//! kube-apiserver's routes take at its path.

use axum::http::Method;

use super::request::Target;
use crate::error::ApiError;
use crate::request_info::RequestInfo;

/// The handler a resource request runs: the verb its [`RequestInfo`] reads, the one it was
/// authorized, flow-controlled and audited as, held to the methods kube-apiserver's routes
/// take at its path (`k8s.io/apiserver/pkg/endpoints/installer.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    /// An object, or its subresource (`get`).
    Get,
    /// A collection (`list`), streamed when it is large.
    List,
    /// A watch of a collection, or of one object through the deprecated `/watch/` path.
    Watch,
    /// `create` (POST to a collection).
    Create,
    /// `update` (PUT of an object or its subresource).
    Update,
    /// `patch` (PATCH of an object or its subresource).
    Patch,
    /// `delete` (DELETE of an object).
    Delete,
    /// `deletecollection` (DELETE of a namespace's or a cluster's collection).
    DeleteCollection,
    /// `create` of a subresource that takes only a POST (a ServiceAccount's `token`).
    CreateSubresource,
}

impl Action {
    /// The options kind a write's query is read into (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions`), whose `dryRun` values are checked; `None` for reads and deletes
    /// (a delete's options may come from its body).
    pub(super) fn write_options(self) -> Option<&'static str> {
        match self {
            Action::Create | Action::CreateSubresource => Some("CreateOptions"),
            Action::Update => Some("UpdateOptions"),
            Action::Patch => Some("PatchOptions"),
            _ => None,
        }
    }

    /// The action of a request with `info` and `method` at `target`: 404 where kube-apiserver
    /// has no route for the path (a `/proxy/` path, a watch of a subresource), 405 where the
    /// path's routes do not take the method (a `/watch/` path takes GET only, a subresource
    /// GET, PUT and PATCH, the all-namespaces path of a namespaced resource GET only).
    pub(super) fn of<H>(
        info: &RequestInfo,
        method: &Method,
        target: &Target<H>,
    ) -> Result<Action, ApiError> {
        let subresource = target.subresource().is_some();
        let named = target.name.is_some();
        let all_namespaces = target.served.config.namespaced && target.namespace.is_none();
        // A subresource answered by a creator has no route but its POST.
        if target.created.is_some() {
            return if info.verb == "create" {
                Ok(Action::CreateSubresource)
            } else if info.verb == "watch" {
                Err(ApiError::no_route())
            } else {
                Err(ApiError::method_not_allowed())
            };
        }
        let (action, allowed) = match info.verb.as_str() {
            "proxy" => return Err(ApiError::no_route()),
            "watch" if subresource => return Err(ApiError::no_route()),
            "watch" => (Action::Watch, method == Method::GET),
            // `/finalize` takes a PUT alone (Namespaces' `FinalizeREST` is an updater).
            "get" => (Action::Get, method == Method::GET && !target.finalize),
            "list" => (Action::List, method == Method::GET),
            "create" => (Action::Create, !named && !all_namespaces),
            "update" => (Action::Update, named),
            "patch" => (Action::Patch, named && !target.finalize),
            "delete" => (Action::Delete, named && !subresource),
            "deletecollection" => (
                Action::DeleteCollection,
                !all_namespaces && target.served.config.delete_collection,
            ),
            _ => return Err(ApiError::method_not_allowed()),
        };
        if allowed {
            Ok(action)
        } else {
            Err(ApiError::method_not_allowed())
        }
    }

    /// Whether it reads (GET).
    pub(super) fn reads(self) -> bool {
        matches!(self, Action::Get | Action::List | Action::Watch)
    }
}
