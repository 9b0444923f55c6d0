//! Generates, at build time, one module per fixture (with `OUT_DIR/<name>.rs` declaring each):
//! `widgets` from the fixture OpenAPI document, and from real CustomResourceDefinitions
//! (`codegen/tests/fixtures/crds`) `linkerd`, `embedded`, `gateway` (short names, open enums),
//! `prometheus`, `certmanager`, `crossplane`, and `edges` (plus `edges_omitted`, with empty structs left out) from hand-written edge
//! cases.

use std::path::PathBuf;

use apfkit_codegen::{EmptyStructs, Enums, NestedNames, Settings};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let mut gateway = Settings::default();
    gateway
        .with_nested_names(NestedNames::Short)
        .with_enums(Enums::Open);
    let mut edges = Settings::default();
    edges.with_enums(Enums::Open);
    let mut edges_omitted = edges.clone();
    edges_omitted.with_empty_structs(EmptyStructs::Omitted);
    for (input, module, settings) in [
        ("openapi/widgets.json", "widgets", Settings::default()),
        (
            "crds/servers.policy.linkerd.io.yaml",
            "linkerd",
            Settings::default(),
        ),
        (
            "crds/foos.tests.example.com.yaml",
            "embedded",
            Settings::default(),
        ),
        (
            "crds/httproutes.gateway.networking.k8s.io.yaml",
            "gateway",
            gateway,
        ),
        (
            "crds/podmonitors.monitoring.coreos.com.yaml",
            "prometheus",
            Settings::default(),
        ),
        (
            "crds/certificates.cert-manager.io.yaml",
            "certmanager",
            Settings::default(),
        ),
        (
            "crds/operations.ops.crossplane.io.yaml",
            "crossplane",
            Settings::default(),
        ),
        ("crds/edge-cases.yaml", "edges", edges),
        ("crds/edge-cases.yaml", "edges_omitted", edges_omitted),
    ] {
        let input = manifest.join("../fixtures").join(input);
        println!("cargo::rerun-if-changed={}", input.display());
        let mut generator = apfkit_codegen::Generator::new(settings);
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
