//! The integration tests of apfkit-server, in one binary.

mod aggregation;
mod in_process;
mod routing;
mod support;
