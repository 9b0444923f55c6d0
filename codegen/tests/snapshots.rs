//! The generated code for a small fixture document, as a reviewable snapshot. The same document
//! is compiled and exercised by the `apfkit-build-fixture` crate.

use apfkit_codegen::{Generator, Settings};

#[test]
fn widgets_fixture_code() {
    let mut generator = Generator::new(Settings::default());
    generator
        .add_file(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/fixtures/openapi/widgets.json"
            )
            .as_ref(),
        )
        .unwrap();
    let files = generator.generate().unwrap();
    let mut all = String::new();
    for (path, text) in &files {
        all.push_str(&format!("// ===== {} =====\n{text}\n", path.display()));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn output_is_deterministic() {
    let generate = || {
        let mut generator = Generator::new(Settings::default());
        generator
            .add_file(
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../tests/fixtures/openapi/widgets.json"
                )
                .as_ref(),
            )
            .unwrap();
        generator.generate().unwrap()
    };
    assert_eq!(generate(), generate());
}
