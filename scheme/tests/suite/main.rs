//! The integration tests of apfkit-scheme, in one binary.

mod base64;
mod discovery;
mod input;
mod scheme;
mod validation_rules;
