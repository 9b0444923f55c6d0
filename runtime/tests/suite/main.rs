//! The integration tests of apfkit-runtime, in one binary.

mod structure;
