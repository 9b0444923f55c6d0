//! The integration tests of apfkit-apiserver, in one binary.

mod storage;
