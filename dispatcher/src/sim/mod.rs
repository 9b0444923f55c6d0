//! Deterministic discrete-event simulation over the sans-IO core.
//!
//! - [`uniform`] replays upstream's fairness scenarios (spec §9.1) against one queue set.
//! - [`mix`] runs a [`workload::Workload`] of request streams against a whole configuration.

pub mod events;
pub mod mix;
pub mod uniform;
pub mod workload;
