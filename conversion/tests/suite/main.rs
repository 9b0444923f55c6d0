//! The integration tests of apfkit-conversion, in one binary.

mod input;
