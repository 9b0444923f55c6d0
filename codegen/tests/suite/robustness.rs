//! No input makes the generator panic: truncated and corrupted documents give errors.

use apfkit_codegen::{Generator, Settings};

fn generate(bytes: &[u8]) -> Result<(), apfkit_codegen::Error> {
    let mut generator = Generator::new(Settings::default());
    generator.add_bytes("input.json", bytes)?;
    generator.generate().map(|_| ())
}

fn fixture() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openapi/widgets.json"
    ))
    .unwrap()
}

#[test]
fn the_fixture_generates() {
    generate(&fixture()).unwrap();
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let bytes = fixture();
    for end in 0..bytes.len() - 1 {
        assert!(generate(&bytes[..end]).is_err(), "truncated at {end}");
    }
}

/// Calls `check` on `count` copies of `bytes`, each with one byte replaced: a deterministic walk
/// over positions and replacement bytes (no randomness in tests).
fn for_each_corruption(bytes: &[u8], replacements: &[u8], count: usize, check: impl Fn(&[u8])) {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..count {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut corrupted = bytes.to_vec();
        let position = (seed % corrupted.len() as u64) as usize;
        corrupted[position] = replacements[(seed >> 32) as usize % replacements.len()];
        check(&corrupted);
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let replacements = [
        b'"', b'{', b'}', b'[', b']', b':', b',', b'0', b'x', b' ', 0xff,
    ];
    for_each_corruption(&fixture(), &replacements, 1000, |corrupted| {
        let _ = generate(corrupted);
    });
}

#[test]
fn deep_nesting_is_an_error() {
    let depth = 100_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(generate(text.as_bytes()).is_err());
}

/// A mistake in the settings is reported as one, naming the setting, not as a generator bug.
#[test]
fn settings_mistakes_are_settings_errors() {
    let generate_with = |settings: &mut Settings| {
        let mut generator = Generator::new(settings.clone());
        generator.add_bytes("widgets.json", &fixture()).unwrap();
        generator.generate().map(|_| ()).unwrap_err()
    };
    let error =
        generate_with(Settings::default().replace_namespace("com.example.meta.", "not a path!"));
    assert!(
        matches!(error, apfkit_codegen::Error::Settings { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("settings: replacement for com.example.meta."),
        "{error}"
    );
    let error =
        generate_with(Settings::default().defaulting_hook("com.example.v1.WidgetSpec", "1 + 1"));
    assert!(
        matches!(error, apfkit_codegen::Error::Settings { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("is not a Rust path"), "{error}");
}

/// The conversion emitter's kind registry: one `HubObject` variant (with the conversions) and
/// one codec (apart, for a custom scheme) per served kind, and a settings error when two hub
/// kinds share a name.
#[test]
fn the_scheme_registry_names_every_kind_once() {
    use apfkit_codegen::{ConversionSettings, DynamicScheme, Side, emit_conversions, emit_scheme};
    let other = String::from_utf8(fixture())
        .unwrap()
        .replace("com.example.", "com.other.");
    let mut generator = Generator::new(Settings::default());
    generator.add_bytes("widgets.json", &fixture()).unwrap();
    generator
        .add_bytes("others.json", other.as_bytes())
        .unwrap();
    let space = generator.type_space().unwrap();
    let side = |root| Side {
        space: &space,
        root,
    };
    let mut settings = ConversionSettings {
        to_hub_trait: "crate::ToHub".to_owned(),
        from_hub_trait: "crate::FromHub".to_owned(),
        scheme: Some(DynamicScheme::Custom("crate::scheme".to_owned())),
        ..ConversionSettings::default()
    };
    settings.pairs.push((
        "com.example.".to_owned(),
        "com.example.".to_owned(),
        vec!["a".to_owned()],
    ));
    let conversions = emit_conversions(&side("::types"), &side("crate::hub"), &settings).unwrap();
    let root = &conversions[std::path::Path::new("mod.rs")];
    assert!(root.contains("pub enum HubObject"), "{root}");
    assert!(
        root.contains("Widget(crate::hub::com::example::v1::Widget)"),
        "{root}"
    );
    assert_eq!(
        root.matches("impl ::apfkit_runtime::HubKind for").count(),
        1,
        "{root}"
    );
    assert!(
        !root.contains("Codec::of"),
        "a custom scheme's codecs are emitted apart: {root}"
    );
    let files = emit_scheme(&side("::types"), &side("crate::hub"), &settings).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let codecs = &files[std::path::Path::new("mod.rs")];
    assert_eq!(
        codecs.matches("crate::scheme::Codec::of::<").count(),
        1,
        "{codecs}"
    );

    settings.pairs.push((
        "com.other.".to_owned(),
        "com.other.".to_owned(),
        vec!["b".to_owned()],
    ));
    let error = emit_scheme(&side("::types"), &side("crate::hub"), &settings).unwrap_err();
    assert!(
        matches!(error, apfkit_codegen::Error::Settings { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("share the name Widget"),
        "{error}"
    );
}

fn crd_fixture() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/crds/servers.policy.linkerd.io.yaml"
    ))
    .unwrap()
}

fn generate_crd(
    text: &str,
) -> Result<std::collections::BTreeMap<std::path::PathBuf, String>, apfkit_codegen::Error> {
    let mut generator = Generator::new(Settings::default());
    generator.add_bytes("crd.yaml", text.as_bytes())?;
    generator.generate()
}

#[test]
fn a_real_crd_generates_both_versions() {
    let files = generate_crd(&crd_fixture()).unwrap();
    for version in ["v1alpha1", "v1beta1"] {
        let code = &files[std::path::Path::new(&format!("io/linkerd/policy/{version}.rs"))];
        assert!(code.contains("pub struct Server {"), "{code}");
        assert!(code.contains("pub struct ServerList {"), "{code}");
    }
    // The same CRD as JSON, and inside a `v1 List`, give the same code.
    let value: serde_json::Value = serde_saphyr::from_str(&crd_fixture()).unwrap();
    assert_eq!(generate_crd(&value.to_string()).unwrap(), files);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [value]});
    assert_eq!(generate_crd(&list.to_string()).unwrap(), files);
}

#[test]
fn broken_crds_are_errors_that_name_the_document() {
    let text = crd_fixture();
    // Every truncation at a line boundary either generates (a shorter but valid CRD) or fails
    // with an error naming the input; none panics.
    // Before the versions are listed, there is nothing to generate: those must all fail.
    let versions_at = text.find("  versions:").unwrap();
    for (end, _) in text.match_indices('\n') {
        match generate_crd(&text[..end]) {
            Err(error) => assert!(error.to_string().contains("crd.yaml"), "{error}"),
            Ok(_) => assert!(end > versions_at, "truncated at {end}, it generated"),
        }
    }

    let second = format!("{text}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n");
    let error = generate_crd(&second).unwrap_err().to_string();
    assert!(error.contains("crd.yaml (document 2)"), "{error}");
    assert!(
        error.contains("neither an OpenAPI v3 document nor a CustomResourceDefinition"),
        "{error}"
    );

    let no_scope = text.replace("  scope: Namespaced\n", "");
    let error = generate_crd(&no_scope).unwrap_err().to_string();
    assert!(
        error.contains("/spec/scope: must be Namespaced or Cluster"),
        "{error}"
    );

    let duplicated = text.replace(
        "  group: policy.linkerd.io\n",
        "  group: policy.linkerd.io\n  group: other.io\n",
    );
    assert!(
        generate_crd(&duplicated).is_err(),
        "a duplicated key is refused"
    );

    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(generate_crd(&deep).is_err());

    let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
                g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
    assert!(
        generate_crd(bomb).is_err(),
        "an alias bomb stops at the budget"
    );

    assert!(generate_crd("").is_err());
    assert!(generate_crd("\u{0}\u{1}garbage: [").is_err());
}

/// The edge-case CRD carries every structural extension (enums, defaults of every shape,
/// embedded and preserved fields, validations, a scale subresource): truncated, corrupted or
/// with those extensions replaced by garbage, it gives errors naming the input, never a panic.
#[test]
fn structural_crd_input_never_panics() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/crds/edge-cases.yaml"
    ))
    .unwrap();
    generate_crd(&text).unwrap();
    for (end, _) in text.match_indices('\n') {
        if let Err(error) = generate_crd(&text[..end]) {
            assert!(error.to_string().contains("crd.yaml"), "{error}");
        }
    }
    let replacements = [
        b':', b'-', b' ', b'\n', b'[', b'{', b'\'', b'"', b'&', b'*', b'1', 0xff,
    ];
    for_each_corruption(text.as_bytes(), &replacements, 300, |corrupted| {
        let corrupted = String::from_utf8_lossy(corrupted);
        if let Err(error) = generate_crd(&corrupted) {
            assert!(error.to_string().contains("crd.yaml"), "{error}");
        }
    });
    for (from, to) in [
        ("specReplicasPath: .spec.replicas", "specReplicasPath: [1]"),
        ("        scale:\n", "        scale: 7\n        unused:\n"),
        (
            "x-kubernetes-validations:\n            - rule: \"self.metadata.name.size() < 20\"\n              message: short names only\n",
            "x-kubernetes-validations: 3\n",
        ),
        ("default: kebab-case", "default: {a: [1]}"),
        ("default: 500m", "default: [500m]"),
        ("default: {tier: web}", "default: {tier: [web]}"),
        (
            "x-kubernetes-list-map-keys: [name, protocol]",
            "x-kubernetes-list-map-keys: name",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let error = generate_crd(&text.replacen(from, to, 1))
            .expect_err(to)
            .to_string();
        assert!(error.contains("crd.yaml (document 1)"), "{to}: {error}");
    }
    // Nesting near the YAML reader's depth limit is read and checked without overflowing a
    // 2 MiB test-thread stack (the limit was 200 and the parser overflowed at about 110, in a
    // debug build); deeper nesting, of flow lists or of block mappings, is an error.
    let deep = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let error = generate_crd(&text.replacen("default: 500m", &format!("default: {}", deep(50)), 1))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("does not fit a value of type Quantity"),
        "{error}"
    );
    let error =
        generate_crd(&text.replacen("default: 500m", &format!("default: {}", deep(5000)), 1))
            .unwrap_err()
            .to_string();
    assert!(error.contains("crd.yaml: /: not YAML or JSON"), "{error}");
    let mut block = String::new();
    for level in 0..200 {
        block.push_str(&" ".repeat(level));
        block.push_str("a:\n");
    }
    let error = generate_crd(&block).unwrap_err().to_string();
    assert!(error.contains("budget breached"), "{error}");
}
