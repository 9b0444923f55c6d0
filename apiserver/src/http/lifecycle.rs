//! kube-apiserver's `NamespaceLifecycle` admission for the creates of a server that serves
//! Namespaces (`core/v1 namespaces`) itself: no new object in a namespace that does not exist
//! (404 about the namespace) or is being terminated (403 about the object, with a
//! `NamespaceTerminating` cause), as `k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`
//! answers. Updates and deletes of objects in a namespace are always let through, as there.
//! The namespace is read from the store, as the plugin's live lookup reads it, so a namespace
//! made a moment ago is found.

use apfkit_runtime::Object;

use super::request::Target;
use super::server::ApiServer;
use crate::error::{ApiError, Cause, Subject};
use crate::store::Place;

/// The phase of a namespace whose content is being deleted.
const TERMINATING: &str = "Terminating";

/// Admits the create of `object` at `target`: `Ok` unless the resource is namespaced, the
/// server serves Namespaces, and the target's namespace is missing or terminating.
///
/// # Errors
///
/// 404 `namespaces "NS" not found`; 403 `RESOURCE "NAME" is forbidden: unable to create new
/// content in namespace NS because it is being terminated`.
pub(super) async fn admit_create<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    object: &H,
) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let Some(namespace) = target
        .namespace
        .as_deref()
        .filter(|_| target.served.config.namespaced)
    else {
        return Ok(());
    };
    let Some(namespaces) = server.resource("", "namespaces") else {
        return Ok(());
    };
    let found = server
        .objects
        .get(
            &namespaces,
            Place {
                namespace: None,
                name: namespace,
            },
        )
        .await?;
    let stored = namespaces
        .storage
        .encode(found, &mut Vec::new())
        .map_err(ApiError::internal)?;
    if stored.pointer("/status/phase").and_then(|p| p.as_str()) != Some(TERMINATING) {
        return Ok(());
    }
    // `admission.NewForbidden`: the object's name, else its generateName, else "Unknown".
    let meta = object.metadata();
    let name = [meta.name.as_deref(), meta.generate_name.as_deref()]
        .into_iter()
        .flatten()
        .find(|name| !name.is_empty())
        .unwrap_or("Unknown");
    let subject = Subject {
        group: target.served.config.group.clone(),
        kind: target.served.plural.clone(),
        name: name.to_owned(),
    };
    let mut error = ApiError::forbidden(
        &subject,
        &format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ),
    );
    error.causes.push(Cause {
        reason: "NamespaceTerminating".to_owned(),
        message: format!("namespace {namespace} is being terminated"),
        field: "metadata.namespace".to_owned(),
    });
    Err(error)
}
