//! apimachinery's `ValidateObjectMeta` for what every kind's metadata holds beyond its name:
//! labels, annotations, owner references, finalizers and managed fields
//! (`apfkit_runtime::object_meta::validate_common`), as the causes of a 422. Every write of
//! every kind is held to it, as kube-apiserver's strategies hold theirs (a custom resource's
//! before its schema).

use apfkit_runtime::object_meta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::Cause;

/// The causes of kube-apiserver's 422 for `meta`'s labels, annotations, owner references,
/// finalizers and managed fields, in its order.
pub(crate) fn causes(meta: &ObjectMeta) -> Vec<Cause> {
    object_meta::validate_common(meta, "metadata")
        .iter()
        .map(Cause::from)
        .collect()
}
