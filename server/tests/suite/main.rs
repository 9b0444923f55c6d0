//! The integration tests of apfkit-server, in one binary.

mod in_process;
mod migrations;
mod routing;
