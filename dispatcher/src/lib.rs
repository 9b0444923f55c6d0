//! A reference implementation of kube-apiserver's API Priority and Fairness dispatcher, on the
//! hub types of `apfkit-conversion`.
//!
//! Classifying a request against the Kubernetes default configuration:
//!
//! ```
//! use apfkit_dispatcher::classify::{Classifier, Request};
//! use apfkit_dispatcher::config::Configuration;
//!
//! let classifier = Classifier::new(Configuration::kubernetes_default(600).unwrap());
//! let request = Request {
//!     user: "alice",
//!     groups: &["system:authenticated"],
//!     verb: "list",
//!     is_resource_request: true,
//!     resource: "pods",
//!     namespace: "default",
//!     ..Request::default()
//! };
//! let result = classifier.classify(&request).unwrap();
//! assert_eq!(result.flow_schema, "global-default");
//! assert_eq!(result.priority_level, "global-default");
//! assert_eq!(result.distinguisher, "alice");
//! assert_eq!(result.hand.len(), 6);
//! ```
//!
//! Still to come (see the project's issues): queue sets with fair queuing, borrowing, rejection
//! and Retry-After, the simulator and the async adapter.

#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod borrowing;
pub mod classify;
pub mod config;
pub mod dispatch;
pub mod estimate;
pub mod flow;
#[cfg(feature = "tokio")]
pub mod guard;
pub mod queueset;
pub mod rejection;
pub mod seat_seconds;
pub mod shuffle;
pub mod sim;
