//! Deterministic discrete-event simulation over the sans-IO core.
//!
//! [`uniform`] replays upstream's fairness scenarios against one queue set.

pub mod events;
pub mod uniform;
