//! The integration tests of apfkit-apiserver, in one binary.

mod replicas;
mod storage;
