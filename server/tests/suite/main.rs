//! The integration tests of apfkit-server, in one binary.

mod garbage_collection;
mod in_process;
mod migrations;
mod routing;
mod service_account_tokens;
