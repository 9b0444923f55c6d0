//! The integration tests of apfkit-apiserver, in one binary.

mod audit;
mod clients;
mod conformance;
mod deadline;
mod health;
mod informer;
mod objects;
mod replicas;
mod request_header;
mod storage;
#[path = "../support/mod.rs"]
mod support;
