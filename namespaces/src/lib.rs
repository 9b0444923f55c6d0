//! core/v1 Namespaces for a server of [`ServedObject`]s (`apfkit-apiextensions`), as
//! kube-apiserver serves them: defaulted, prepared, checked and printed as there, kept in its
//! protobuf ([`protobuf`]), with the `/status` and `/finalize` subresources and no
//! `deletecollection`; a deleted namespace stays `Terminating` until its objects are gone.
//! `apfkit-apiserver` then admits no create in a namespace that does not exist or is
//! terminating (kube-apiserver's `NamespaceLifecycle`), and refuses to delete `default`,
//! `kube-system` and `kube-public`.
//!
//! **Where to start**: serve [`resource()`] beside the server's own resources, then make the
//! system namespaces and keep deleted ones emptied with [`Namespaces`] (`apfkit-server` does
//! both):
//!
//! ```
//! let served = apfkit_namespaces::resource::<()>().unwrap();
//! assert_eq!(served.plural, "namespaces");
//! assert!(!served.config.namespaced && served.config.finalize);
//! ```

#![forbid(unsafe_code)]

mod controller;
mod kind;
pub mod protobuf;

pub use controller::{Namespaces, SYSTEM_NAMESPACES};

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::JsonVersion;
use apfkit_apiserver::store::{Generation, ResourceConfig, ResourceError, Served, SharedVersion};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::StorageEncoding;

/// The Namespaces resource (`/api/v1/namespaces`, kept under `namespaces` in protobuf as
/// kube-apiserver keeps them), short name `ns`.
///
/// # Errors
///
/// None in practice: its one version is its storage version.
pub fn resource<H: Send + Sync + 'static>() -> Result<Served<ServedObject<H>>, ResourceError> {
    let config = ResourceConfig::builtin(
        GroupVersionKind::from_static("", "v1", "Namespace"),
        "namespaces",
        false,
    )
    .with_short_names(["ns"])
    .with_status(true)
    .with_generation(Generation::Untracked)
    .stored_at("namespaces", StorageEncoding::Protobuf)
    .returning_deleted_objects()
    .as_namespaces()
    .with_kube_openapi();
    // core/v1's `AddFieldLabelConversionsForNamespace`.
    let version = JsonVersion::new("", "v1", "Namespace", "namespaces", kind::normalize)
        .with_zero(kind::zero)
        .stored_as_kube_stores_it()
        .with_field_labels(&["status.phase", "metadata.name"])
        .with_protobuf(
            |object| protobuf::write(object).unwrap_or_else(|| Err("not a Namespace".to_owned())),
            protobuf::read_stored,
        );
    let versions = vec![Arc::new(version) as SharedVersion<ServedObject<H>>];
    Ok(
        Served::with_versions(config, "namespaces".to_owned(), versions)?.with_strategy(
            kind::NamespaceStrategy {
                printer: kind::printer(),
            },
        ),
    )
}
