//! Generates `OUT_DIR/widgets` (and `OUT_DIR/widgets.rs`, which declares it) from the fixture document at build time.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let document = manifest.join("../fixtures/openapi/widgets.json");
    println!("cargo::rerun-if-changed={}", document.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
    let result = generator
        .add_file(&document)
        .and_then(|generator| generator.write_module(&out_dir, "widgets"));
    if let Err(err) = result {
        // A build script reports through a non-zero exit; the message names file and pointer.
        eprintln!("{err}");
        std::process::exit(1);
    }
}
