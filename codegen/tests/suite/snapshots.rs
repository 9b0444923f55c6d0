//! The generated code for a small fixture document, as a reviewable snapshot. The same document
//! is compiled and exercised by the `apfkit-build-fixture` crate.

use std::collections::BTreeMap;
use std::path::PathBuf;

use apfkit_codegen::{Generator, Settings};

fn generate_widgets() -> BTreeMap<PathBuf, String> {
    let mut generator = Generator::new(Settings::default());
    generator
        .add_file(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/openapi/widgets.json"
            )
            .as_ref(),
        )
        .unwrap();
    generator.generate().unwrap()
}

#[test]
fn widgets_fixture_code() {
    let mut all = String::new();
    for (path, text) in &generate_widgets() {
        all.push_str(&format!("// ===== {} =====\n{text}\n", path.display()));
    }
    insta::assert_snapshot!(all);
}

/// Generated code implements apfkit-runtime's traits and defines none of its own, so that
/// every generated tree (and the code written against it) shares one vocabulary.
#[test]
fn generated_code_defines_no_traits() {
    for (path, text) in &generate_widgets() {
        assert!(
            !text.contains("pub trait ") && !text.contains("\ntrait "),
            "{} defines a trait",
            path.display()
        );
    }
    let all: String = generate_widgets().into_values().collect();
    assert!(all.contains("impl ::apfkit_runtime::ApplyDefaults for Widget"));
    assert!(all.contains("impl ::apfkit_runtime::k8s_openapi::Resource for Widget"));
    assert!(all.contains("impl ::apfkit_runtime::ListKind for WidgetList"));
}

#[test]
fn output_is_deterministic() {
    assert_eq!(generate_widgets(), generate_widgets());
}
