//! Generates, at build time, `OUT_DIR/widgets` from the fixture OpenAPI document and
//! `OUT_DIR/linkerd` from the fixture CustomResourceDefinition (with `OUT_DIR/<name>.rs`
//! declaring each).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    for (input, module) in [
        ("../fixtures/openapi/widgets.json", "widgets"),
        ("../fixtures/crds/servers.policy.linkerd.io.yaml", "linkerd"),
    ] {
        let input = manifest.join(input);
        println!("cargo::rerun-if-changed={}", input.display());
        let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
        let result = generator
            .add_file(&input)
            .and_then(|generator| generator.write_module(&out_dir, module));
        if let Err(err) = result {
            // A build script reports through a non-zero exit; the message names file and pointer.
            eprintln!("{err}");
            std::process::exit(1);
        }
    }
}
