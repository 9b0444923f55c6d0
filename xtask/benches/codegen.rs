//! `cargo xtask codegen` over all our documents. The full run includes starting the
//! `jsonschemas` example through cargo; the in-process part alone is measured beside it.
//!
//! `cargo bench -p xtask --bench codegen`

use apfkit_codegen::Generator;
use xtask::codegen::{Mode, run, types_settings};
use xtask::{openapi, project_root};

fn main() {
    divan::main();
}

/// The documents built and the types generated, in memory (no I/O, no cargo).
#[divan::bench(sample_count = 20)]
fn generate_in_memory() -> usize {
    let mut generator = Generator::new(types_settings());
    for doc in openapi::documents() {
        let text = serde_json::to_string_pretty(&doc.document).unwrap();
        generator.add_bytes("doc", text.as_bytes()).unwrap();
    }
    generator.generate().unwrap().len()
}

/// What `cargo xtask codegen --check` does once built: everything, compared with the tree.
#[divan::bench(sample_count = 10)]
fn full_check() -> usize {
    let report = run(&project_root(), Mode::Check).unwrap();
    assert!(report.stale.is_empty());
    report.stale.len()
}
