//! The integration tests of apfkit-dispatcher, in one binary.

mod async_guard;
mod borrowing;
mod classify;
mod dumps;
mod ensurer;
mod estimate;
mod fairness;
mod hash_and_dealer;
mod layer;
mod metrics;
mod properties;
mod reconfigure;
mod rejection;
mod simulation;
mod support;
