//! The integration tests of apfkit-apiserver, in one binary.

mod clients;
mod replicas;
mod storage;
