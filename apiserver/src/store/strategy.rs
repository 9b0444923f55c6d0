//! A kind's own rules, which the generic store applies around every write and the handlers
//! read for tables: kube-apiserver's REST strategies (`RESTCreateStrategy`,
//! `RESTUpdateStrategy` and the `TableConvertor` of a registry, as in
//! `k8s.io/apiserver/pkg/registry/rest/create.go` and `update.go`).
//!
//! What is not here: how a resource is served (names, scope, subresources, where and how it is
//! stored) is its [`ResourceConfig`](super::ResourceConfig); what one version's schema says
//! (decoding, defaults, the schema's own validation, its selectable fields) is that version's
//! [`VersionCodec`](super::VersionCodec).

use serde_json::Value;

use super::Propagation;
use crate::error::Cause;
use crate::table::Printer;

/// What kube-apiserver's strategy for a kind does beyond the generic store, which already sets
/// the metadata the server owns, clears the status on a create and keeps it on an update of
/// a resource with a `/status` subresource, and bumps `metadata.generation` when the spec
/// changes. Every method has the generic store's answer as its default.
pub trait Strategy<H>: Send + Sync {
    /// `PrepareForCreate`: changes to a new object about to be stored, given as JSON in the
    /// storage version (a custom resource's: the request's version, which apiextensions-apiserver's
    /// strategies see), its status already cleared when the resource has a status.
    fn prepare_for_create(&self, stored: &mut Value) {
        let _ = stored;
    }

    /// `PrepareForUpdate`: changes to an updated object about to be stored, given as JSON in
    /// the storage version (a custom resource's: the request's version), its status already
    /// kept from `old` on a write to the object, with the stored object.
    fn prepare_for_update(&self, stored: &mut Value, old: &Value) {
        let _ = (stored, old);
    }

    /// A kind whose REST storage turns the first delete of an object into an update (a CRD,
    /// whose storage adds the `customresourcecleanup.apiextensions.k8s.io` finalizer and the
    /// `Terminating` condition: apiextensions-apiserver's `REST.Delete`): the changes, made to
    /// the object as JSON in the storage version, before its `deletionTimestamp` is set.
    /// Answers whether it made any; then the object is kept, marked with `deletionTimestamp`
    /// alone (no grace period, no new generation), until its finalizers are gone. Such a
    /// first delete does not run the generic store's garbage-collection finalizers; a kind
    /// that has its own (a Namespace's) sets them here from `propagation`.
    fn prepare_for_first_delete(&self, stored: &mut Value, propagation: Propagation) -> bool {
        let _ = (stored, propagation);
        false
    }

    /// Whether the garbage collector looks after the kind's dependents
    /// (`DefaultGarbageCollectionPolicy` other than `Unsupported`). For a kind where it does
    /// not (Events), a delete sets none of its finalizers whatever its options ask, and takes
    /// away those the object has. True by default.
    fn collects_dependents(&self) -> bool {
        true
    }

    /// What keeps an object being deleted beside its `metadata.finalizers`, given as JSON in
    /// the storage version (a Namespace's `spec.finalizers`, which its controller empties
    /// through `/finalize`). While it answers true, a delete of the object changes nothing
    /// and an update that leaves no `metadata.finalizers` keeps it.
    fn finalizing(&self, stored: &Value) -> bool {
        let _ = stored;
        false
    }

    /// `AllowUnconditionalUpdate`: whether an update that names no
    /// `metadata.resourceVersion` writes over whatever is stored (kube's core kinds, RBAC,
    /// flowcontrol) or is refused as invalid, "must be specified for an update" (custom
    /// resources, CRDs and APIServices).
    fn allows_unconditional_update(&self) -> bool {
        true
    }

    /// `AllowCreateOnUpdate`: whether an update (PUT) of an object that does not exist
    /// creates it, answered 201 (RBAC's kinds, Services), or is 404 (the others).
    fn allows_create_on_update(&self) -> bool {
        false
    }

    /// Whether a write to `/status` keeps what it changes of the metadata (labels,
    /// annotations, finalizers), as the status strategies of kube's Services and Namespaces
    /// do (they reset only the spec); most kinds' reset it too (`ResetObjectMetaForStatus`).
    fn status_writes_metadata(&self) -> bool {
        false
    }

    /// Why the object named `name` may not be deleted, if it may not (kube-apiserver's
    /// immortal namespaces: "this namespace may not be deleted"), answered 403 once the
    /// object is found and the delete's preconditions hold.
    fn refuses_delete(&self, name: &str) -> Option<&str> {
        let _ = name;
        None
    }

    /// Why the resource takes no creates now, if it does not (a terminating CRD's custom
    /// resources: "create not allowed while custom resource definition is terminating"),
    /// answered 403 about the object named in the body, as kube-apiserver answers it.
    fn refuses_creates(&self) -> Option<&str> {
        None
    }

    /// `WarningsOnCreate` (no `old`) and `WarningsOnUpdate`: what the answer's `Warning`
    /// headers say of an object about to be stored, given as JSON in the storage version.
    fn warnings(&self, stored: &Value, old: Option<&Value>) -> Vec<String> {
        let _ = (stored, old);
        Vec::new()
    }

    /// `Validate` (no `old`) and `ValidateUpdate`: the field errors of an object about to be
    /// stored, as kube-apiserver words them; `api_version` is the request's, for field names
    /// that differ between versions. Empty when it is valid.
    fn validate(&self, object: &H, old: Option<&H>, api_version: &str) -> Vec<Cause> {
        let _ = (object, old, api_version);
        Vec::new()
    }

    /// The checks of a write that depend on who writes, after validation's (kube-apiserver's
    /// storage decorators, such as RBAC's escalation checks): `user` writes `object` in
    /// `namespace` (`None` for a cluster-scoped resource). Allowed by default.
    ///
    /// # Errors
    ///
    /// The error to answer, a 403 as a rule.
    fn admit(
        &self,
        user: &crate::auth::UserInfo,
        namespace: Option<&str>,
        object: &H,
    ) -> Result<(), crate::error::ApiError> {
        let _ = (user, namespace, object);
        Ok(())
    }

    /// The `TableConvertor`: the columns of `kubectl get`; `None` for kube-apiserver's
    /// default (name and creation time).
    fn printer(&self) -> Option<&Printer> {
        None
    }
}

/// The generic store's rules alone: no preparation, validation or columns of the kind's own.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericStrategy;

impl<H> Strategy<H> for GenericStrategy {}

/// A kind's columns and nothing else of its own (custom resources, whose schema validation
/// is their versions').
#[derive(Debug, Clone)]
pub struct PrinterStrategy(pub Printer);

impl<H> Strategy<H> for PrinterStrategy {
    fn printer(&self) -> Option<&Printer> {
        Some(&self.0)
    }
}
