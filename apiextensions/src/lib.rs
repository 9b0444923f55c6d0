//! Users' CustomResourceDefinitions served beside a server's own kinds, as kube-apiserver's
//! apiextensions-apiserver serves them (issue 29).
//!
//! - [`object`]: the server's hub object [`ServedObject`], which holds an object of the
//!   scheme's kinds or a [`CustomObject`] (a custom resource or a CRD, held as JSON with typed
//!   metadata), and [`object::builtin`], which serves a scheme's resource among them.
//! - [`definitions`]: the `apiextensions.k8s.io/v1` CustomResourceDefinition resource, its
//!   defaults and its checks (apfkit-crd's, kube-apiserver's on a CRD write).
//! - [`custom`]: a served version of a custom resource: pruning and defaulting by its schema,
//!   conversion (`None`, or the CRD's [`webhook`]), validation (schema and CEL rules).
//! - [`printer`]: the columns of `kubectl get` from a version's `additionalPrinterColumns`.
//! - [`controller`]: [`CustomResources`], which serves each valid stored CRD, writes its
//!   status and keeps in step with a watch.

#![forbid(unsafe_code)]

pub mod controller;
pub mod custom;
pub mod definitions;
pub mod object;
pub mod printer;
mod published;
pub mod webhook;

pub use controller::CustomResources;
pub use object::{CustomObject, NoKind, ServedObject};
