//! Deterministic discrete-event simulation over the sans-IO core.
//!
//! - [`uniform`] replays upstream's fairness scenarios (`queueset_test.go`'s `uniformScenario`)
//!   against one queue set.
//! - [`server`] runs a [`workload::Workload`] of request streams against a whole configuration,
//!   as one API server would.

pub mod events;
pub mod server;
pub mod uniform;
pub mod workload;
