//! The integration tests of apfkit-types, in one binary.

mod defaulting;
mod json_schema;
