//! `storagemigration.k8s.io/v1` StorageVersionMigrations for a server of [`ServedObject`]s
//! (`apfkit-apiextensions`), as kube-apiserver 1.37 serves them: read as its Go types read
//! them, the status cleared on create and kept on update, the spec immutable, written by
//! `/status` alone with its conditions checked as apimachinery checks them, and printed with
//! `kubectl get storageversionmigrations`' columns.
//!
//! [`Migrations`] runs them as kube-controller-manager's storage-version migrator does: every
//! object of the resource named written back in the storage version, the progress in the
//! migration's status, and a CRD's stored versions trimmed after.
//!
//! **Where to start**: serve [`resource()`] beside the server's own resources, and run the
//! migrations with [`Migrations::keep_synced`] (`apfkit-server` does both):
//!
//! ```
//! let served = apfkit_storagemigration::resource::<()>().unwrap();
//! assert_eq!(served.plural, "storageversionmigrations");
//! assert!(!served.config.namespaced);
//! ```

#![forbid(unsafe_code)]

mod conditions;
mod controller;
mod crd;
mod kind;
pub mod protobuf;
mod rewrite;

pub use controller::Migrations;

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::JsonVersion;
use apfkit_apiserver::store::{Generation, ResourceConfig, ResourceError, Served, SharedVersion};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::StorageEncoding;

/// The group the kind is in.
pub const GROUP: &str = "storagemigration.k8s.io";

/// The StorageVersionMigrations resource (`/apis/storagemigration.k8s.io/v1/
/// storageversionmigrations`, cluster-scoped, with `/status`), kept under
/// `storageversionmigrations` in `v1beta1`, which kube-apiserver 1.37 stores them in (so
/// that a downgrade to 1.36 still reads them) without serving it.
///
/// # Errors
///
/// None in practice: the storage version is one of its versions.
pub fn resource<H: Send + Sync + 'static>() -> Result<Served<ServedObject<H>>, ResourceError> {
    let config = ResourceConfig::builtin(
        GroupVersionKind::from_static(GROUP, "v1beta1", "StorageVersionMigration"),
        "storageversionmigrations",
        false,
    )
    .with_status(true)
    .with_generation(Generation::Untracked)
    .stored_at("storageversionmigrations", StorageEncoding::Protobuf)
    .with_kube_openapi();
    let version = |version: &'static str| {
        Arc::new(
            JsonVersion::new(
                GROUP,
                version,
                "StorageVersionMigration",
                "storageversionmigrations",
                kind::normalize,
            )
            .with_zero(kind::zero)
            .stored_as_kube_stores_it()
            .with_protobuf(
                |object| {
                    protobuf::write(object)
                        .unwrap_or_else(|| Err("not a StorageVersionMigration".to_owned()))
                },
                protobuf::read_stored,
            ),
        ) as SharedVersion<ServedObject<H>>
    };
    let mut served = Served::with_versions(
        config,
        "storageversionmigrations".to_owned(),
        vec![version("v1"), version("v1beta1")],
    )?
    .with_strategy(kind::MigrationStrategy {
        printer: kind::printer(),
    });
    // v1beta1 is off by default, as kube's beta APIs are: stored in, never served.
    served.versions.retain(|codec| codec.version() == "v1");
    Ok(served)
}

#[cfg(test)]
mod tests {
    #[test]
    fn v1_is_served_and_v1beta1_is_what_is_stored() {
        let served = super::resource::<()>().unwrap();
        let versions: Vec<&str> = served.versions.iter().map(|c| c.version()).collect();
        assert_eq!(versions, ["v1"]);
        assert_eq!(served.storage.version(), "v1beta1");
        // kube-apiserver 1.37's discovery hash of the resource (its storage version's).
        assert_eq!(
            apfkit_apiserver::http::storage_version_hash(served.storage.gvk()),
            "pCjmmKOkLy4="
        );
    }

    #[test]
    fn a_migration_is_stored_in_v1beta1_protobuf_and_read_back_in_v1() {
        use apfkit_runtime::scheme::{Encoding, UnknownFields};
        let served = super::resource::<()>().unwrap();
        let given = serde_json::json!({
            "apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
            "metadata": {"name": "svm"},
            "spec": {"resource": {"group": "example.com", "resource": "gadgets"}},
        });
        let object = served.versions[0]
            .decode(&given, UnknownFields::Strict, &mut Vec::new())
            .unwrap();
        let mut stored = Vec::new();
        served
            .storage
            .encode_into(object, Encoding::Protobuf, &mut stored, &mut Vec::new())
            .unwrap();
        let read = crate::protobuf::read(&stored, &Default::default())
            .unwrap()
            .unwrap()
            .0;
        assert_eq!(read["apiVersion"], "storagemigration.k8s.io/v1beta1");
        let back = served
            .storage
            .decode_stored(&stored, &Default::default())
            .unwrap();
        let answered = served.versions[0].encode(back, &mut Vec::new()).unwrap();
        assert_eq!(answered["apiVersion"], "storagemigration.k8s.io/v1");
        assert_eq!(answered["spec"], given["spec"]);
    }
}
