//! A reference implementation of kube-apiserver's API Priority and Fairness dispatcher, on the
//! hub types of `apfkit-scheme`: the same inputs give the same FlowSchema, priority level,
//! flow hash, hand of queues, dispatch order, concurrency limits and Retry-After.
//!
//! # Where to start
//!
//! | you want to | use |
//! |---|---|
//! | know which FlowSchema and level a request gets | [`Classifier`] |
//! | the Kubernetes default configuration | [`Configuration::kubernetes_default`] |
//! | compute limits for a server | [`Configuration`] (static) and [`borrowing::adjust`] |
//! | see what a configuration does under load | [`sim::server::simulate`] with a [`sim::workload::Workload`] |
//! | replay upstream's fairness scenarios | [`sim::uniform::UniformScenario`] |
//! | guard an async handler (feature `tokio`) | `Guard` |
//! | drive the state machine yourself | [`Dispatcher`], or one [`QueueSet`] |
//!
//! Everything but the async adapter is sans-IO: calls take the current time as a `Duration`
//! on any monotonic clock and return what happened (requests dispatched, a release time for
//! lingering seats). Nothing inside sleeps, spawns or reads a clock, so simulations are exact
//! and deterministic.
//!
//! # Classify a request
//!
//! ```
//! use apfkit_dispatcher::{Classifier, Configuration, Request};
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
//! # Run a simulation
//!
//! A workload names request streams (who, what, how often); the report gives, per level and
//! per stream, seats in use, waits and rejections, and kube-apiserver's
//! `dump_priority_levels` table. The format of workload files is in `docs/workload.md`.
//!
//! ```
//! use apfkit_dispatcher::sim::server::simulate;
//! use apfkit_dispatcher::{Configuration, Workload};
//!
//! let workload: Workload = serde_saphyr::from_str(
//!     "duration: 10s
//! streams:
//!   - name: readers
//!     user: alice
//!     groups: [system:authenticated]
//!     verb: get
//!     resource: pods
//!     namespace: default
//!     service: 50ms
//!     clients: 4
//!     think: 10ms
//! ",
//! )
//! .unwrap();
//! let config = Configuration::kubernetes_default(600).unwrap();
//! let report = simulate(config, &workload, 42, |_| {}).unwrap();
//! let readers = &report.streams[0];
//! assert_eq!(readers.priority_level, "global-default");
//! assert!(readers.figures.executed > 600); // 4 clients, one call every 60 ms, for 10 s
//! assert_eq!(readers.figures.rejected.total(), 0);
//! println!("{}", report.to_text());
//! ```
//!
//! # Guard an async handler
//!
//! With the `tokio` feature, `Guard::acquire` classifies a request and waits in its
//! queue; it returns a permit, or a rejection carrying the Retry-After value for an HTTP 429.
//! Dropping the permit finishes the request; dropping the pending future leaves the queue.
//!
//! The module's documentation has a complete example.

#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod borrowing;
pub mod classify;
pub mod config;
pub mod dispatch;
pub mod dump;
pub mod estimate;
pub mod flow;
#[cfg(feature = "tokio")]
pub mod guard;
#[cfg(feature = "tower")]
pub mod layer;
#[cfg(feature = "tokio")]
pub mod metrics;
pub mod queueset;
pub mod rejection;
pub mod release;
mod seat_seconds;
pub mod shuffle;
pub mod sim;
pub mod timing;
pub mod watches;

pub use classify::{Classification, Classifier, Request};
pub use config::{Configuration, PriorityLevel};
pub use dispatch::{Decision, Dispatcher};
#[cfg(feature = "tokio")]
pub use guard::{Guard, Permit, Rejection};
pub use queueset::{QueueSet, QueueSetConfig, RejectReason, WorkEstimate};
pub use seat_seconds::SeatSeconds;
pub use sim::workload::Workload;
