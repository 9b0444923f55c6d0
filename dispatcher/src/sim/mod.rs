//! Deterministic discrete-event simulation over the sans-IO core.
//!
//! - [`uniform`] replays upstream's fairness scenarios (`queueset_test.go`'s `uniformScenario`)
//!   against one queue set.
//! - [`server`] runs a [`workload::Workload`] of request streams against a whole configuration,
//!   as one API server would.
//! - [`replay`] replays recorded requests (an [`audit_log`]'s) through the configuration in
//!   force and a proposed one side by side.

pub mod audit_log;
mod engine;
pub mod events;
pub mod replay;
mod report;
pub mod server;
pub mod uniform;
pub mod workload;
