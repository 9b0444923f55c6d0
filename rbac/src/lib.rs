//! Kubernetes RBAC for a server built on `apfkit-apiserver`, as kube-apiserver does it.
//!
//! - [`mod@resources`]: the four resources of `rbac.authorization.k8s.io/v1` (Role,
//!   RoleBinding, ClusterRole, ClusterRoleBinding) for a server of
//!   `apfkit_apiextensions::ServedObject`s, with kube-apiserver's defaults, checks
//!   ([`validation`]) and `kubectl get` columns.
//! - [`rules`]: what a rule allows, and whether rules cover others.
//! - [`policy`]: the rule resolver and [`RbacAuthorizer`], an
//!   `apfkit_apiserver::authz::Authorizer` with kube-apiserver's reasons.
//! - [`bootstrap`]: kube-apiserver's bootstrap roles and bindings (those that concern a
//!   server of these resources) and how they are reconciled; [`aggregation`]: ClusterRole
//!   aggregation.
//! - [`Rbac`]: all of it in a running server: the bootstrap ensured, aggregation done and
//!   the authorizer's policy kept in step with the stored objects.
//!
//! **Where to start**: serve [`resources()`] beside the server's own, give the server
//! `apfkit_apiserver::authz::Union` of `PrivilegedGroups::masters()` and an
//! [`RbacAuthorizer`], then [`Rbac::new`], [`Rbac::ensure_bootstrap`], [`Rbac::sync`] and
//! [`Rbac::keep_synced`]. `apfkit-server` does this for `--authorization-mode=RBAC`.
//!
//! The authorizer on its own, deciding with kube-apiserver's bootstrap policy:
//!
//! ```
//! use apfkit_apiserver::auth::UserInfo;
//! use apfkit_apiserver::authz::Attributes;
//! use apfkit_rbac::{Policy, RbacAuthorizer, bootstrap};
//!
//! let rbac = RbacAuthorizer::new(Policy::new(
//!     [], [], bootstrap::cluster_roles(), bootstrap::cluster_role_bindings(),
//! ));
//! let bob = UserInfo { name: "bob".into(), groups: vec!["system:authenticated".into()],
//!     ..UserInfo::default() };
//! let read = |path: &str| Attributes { user: bob.clone(), verb: "get".into(),
//!     path: path.into(), ..Attributes::default() };
//! // system:discovery lets every authenticated user read /apis...
//! let verdict = rbac.decide(&read("/apis"));
//! assert!(verdict.allowed());
//! assert_eq!(verdict.reason, "RBAC: allowed by ClusterRoleBinding \"system:discovery\" \
//!     of ClusterRole \"system:discovery\" to Group \"system:authenticated\"");
//! // ...and nothing grants bob the flow schemas.
//! let list = Attributes { user: bob.clone(), verb: "list".into(), resource_request: true,
//!     api_group: "flowcontrol.apiserver.k8s.io".into(), resource: "flowschemas".into(),
//!     ..Attributes::default() };
//! assert!(!rbac.decide(&list).allowed());
//! assert_eq!(list.forbidden("").message, "flowschemas.flowcontrol.apiserver.k8s.io is \
//!     forbidden: User \"bob\" cannot list resource \"flowschemas\" in API group \
//!     \"flowcontrol.apiserver.k8s.io\" at the cluster scope");
//! ```

#![forbid(unsafe_code)]

pub mod aggregation;
pub mod bootstrap;
mod controller;
pub mod escalation;
pub mod policy;
pub mod protobuf;
pub mod resources;
pub mod rules;
pub mod validation;

pub use controller::Rbac;
pub use policy::{Policy, RbacAuthorizer};
pub use resources::resources;
