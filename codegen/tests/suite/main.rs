//! apfkit-codegen's integration tests, one binary for all: the multi-version builder, the
//! command, robustness against hostile documents, the generated code's snapshot, and
//! structural schemas.

mod builder;
mod cli;
mod robustness;
mod snapshots;
mod structural;
