//! Structural-schema features seen from the generator: defaults that cannot be written are
//! errors naming the file and the pointer, nested names follow the settings, and the command's
//! flags reach the settings. (The generated code is compiled and exercised by
//! `tests/build-fixture`.)

use std::path::Path;

use apfkit_codegen::{Generator, NestedNames, Settings};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/crds")
            .join(name),
    )
    .unwrap()
}

fn generate(
    settings: Settings,
    text: &str,
) -> Result<std::collections::BTreeMap<std::path::PathBuf, String>, apfkit_codegen::Error> {
    let mut generator = Generator::new(settings);
    generator.add_bytes("crd.yaml", text.as_bytes())?;
    generator.generate()
}

/// A one-version CRD whose `spec` has the given properties (YAML flow syntax).
fn crd(spec_properties: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: things.example.com}}
spec:
  group: example.com
  names: {{kind: Thing, plural: things}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {spec_properties}
"
    )
}

#[test]
fn defaults_that_do_not_fit_are_errors_at_their_pointer() {
    for (properties, expected) in [
        (
            "{a: {type: object, properties: {x: {type: string}}, default: {x: s, y: 1}}}",
            "field \"/y\" that the schema does not list",
        ),
        (
            "{a: {type: string, enum: [x, w], default: z}}",
            "\"z\" at \"\" is not one of the enum's values",
        ),
        (
            "{a: {type: string, format: date-time, default: yesterday}}",
            "does not fit a value of type DateTime",
        ),
        (
            "{a: {type: array, items: {type: integer, format: int32}, default: [1, 3000000000]}}",
            "at \"/1\" does not fit a value of type I32",
        ),
        (
            "{a: {x-kubernetes-int-or-string: true, pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$', default: 1.1.1}}",
            "does not fit a value of type Quantity",
        ),
    ] {
        let error = generate(Settings::default(), &crd(properties))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("crd.yaml (document 1), version v1"),
            "{error}"
        );
        assert!(
            error.contains(
                "/components/schemas/com.example.v1.Thing/properties/spec/properties/a/default"
            ),
            "{error}"
        );
        assert!(error.contains(expected), "{properties}: {error}");
    }
}

#[test]
fn the_name_table_wins_and_clashes_are_errors() {
    let text = crd("{inner: {type: object, properties: {x: {type: string}}}}");
    let mut settings = Settings::default();
    settings.type_name("com.example.v1.Thing.spec.inner", "Inner");
    let files = generate(settings, &text).unwrap();
    let code = &files[Path::new("com/example/v1.rs")];
    assert!(code.contains("pub struct Inner {"), "{code}");
    assert!(
        code.contains("Schema path: `com.example.v1.Thing.spec.inner`."),
        "{code}"
    );

    let mut settings = Settings::default();
    settings.type_name("com.example.v1.Thing.spec.inner", "ThingList");
    let error = generate(settings, &text).unwrap_err().to_string();
    assert!(
        error.contains("Rust name com::example::v1::ThingList is already used"),
        "{error}"
    );
    assert!(error.contains("Settings::type_name"), "{error}");
}

/// Longest type name generated from `text`.
fn longest_name(files: &std::collections::BTreeMap<std::path::PathBuf, String>) -> usize {
    files
        .values()
        .flat_map(|code| code.lines())
        .filter_map(|line| {
            line.strip_prefix("pub struct ")
                .or_else(|| line.strip_prefix("pub enum "))
        })
        .map(|rest| rest.split([' ', '(', '{']).next().unwrap_or_default().len())
        .max()
        .unwrap_or_default()
}

/// Gateway API's HTTPRoute: the full path gives names of 76 characters; the short scheme keeps
/// them readable and shares one type between the CRD's identical copies of a schema.
#[test]
fn short_names_stay_short_on_gateway_api() {
    let text = fixture("httproutes.gateway.networking.k8s.io.yaml");
    let full = generate(Settings::default(), &text).unwrap();
    let mut settings = Settings::default();
    settings.with_nested_names(NestedNames::Short);
    let short = generate(settings, &text).unwrap();
    assert_eq!(longest_name(&full), 76);
    assert!(longest_name(&short) <= 30, "{}", longest_name(&short));
    let lines = |files: &std::collections::BTreeMap<_, String>| {
        files.values().map(|c| c.lines().count()).sum::<usize>()
    };
    assert!(
        lines(&short) * 4 < lines(&full) * 3,
        "{} vs {}",
        lines(&short),
        lines(&full)
    );
    let v1beta1 = &short[Path::new("networking/gateway/v1beta1.rs")];
    assert!(
        v1beta1.contains("pub struct RequestRedirect {"),
        "{v1beta1}"
    );
    assert_eq!(
        v1beta1
            .matches("pub struct RequestHeaderModifier {")
            .count(),
        1
    );
}

#[test]
fn the_command_takes_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("crd.yaml");
    std::fs::write(&input, crd("{mode: {type: string, enum: [a, b]}}")).unwrap();
    let run = |extra: &[&str]| {
        let out = dir.path().join("out");
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_apfkit-codegen"))
            .args(extra)
            .arg("--out")
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        let code = std::fs::read_to_string(out.join("com/example/v1.rs")).unwrap_or_default();
        (output, code)
    };
    let (output, code) = run(&["--enums", "strings"]);
    assert!(output.status.success(), "{output:?}");
    assert!(
        code.contains("pub mode: ::std::option::Option<::std::string::String>"),
        "{code}"
    );
    let (output, code) = run(&[
        "--enums",
        "open",
        "--type-name",
        "com.example.v1.Thing.spec.mode=Mode",
    ]);
    assert!(output.status.success(), "{output:?}");
    assert!(code.contains("pub enum Mode {"), "{code}");
    assert!(code.contains("Other(::std::string::String)"), "{code}");
    let (output, _) = run(&["--type-name", "no-equals-sign"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("expected SCHEMA_PATH=NAME"),
        "{output:?}"
    );
}

#[test]
fn inputs_over_the_size_limit_are_refused_without_reading_them_whole() {
    let text = crd("{a: {type: string}}");
    let mut generator = Generator::new(Settings::default());
    generator.with_max_input_size(100);
    let error = generator
        .add_bytes("big.yaml", text.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(error.contains("big.yaml: "), "{error}");
    assert!(error.contains("more than the 100-byte limit"), "{error}");
    // An endless input stops at the limit.
    let error = generator
        .add_file(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/dev/zero: 101 bytes is more than the 100-byte limit"),
        "{error}"
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_apfkit-codegen"))
        .args([
            "--max-input-size",
            "10",
            "--out",
            "/nonexistent/never-written",
            "/dev/zero",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("10-byte limit"),
        "{output:?}"
    );
}

/// A CRD may name its list kind anything; the list is found by what its items are.
#[test]
fn a_custom_list_kind_is_the_list_of_its_kind() {
    let text = crd("{a: {type: string}}").replace(
        "names: {kind: Thing, plural: things}",
        "names: {kind: Thing, plural: things, listKind: ThingCollection}",
    );
    let mut settings = Settings::default();
    settings.use_k8s_openapi();
    let files = generate(settings, &text).unwrap();
    let code = &files[Path::new("com/example/v1.rs")];
    assert!(code.contains("ListKind for ThingCollection {"), "{code}");
    assert!(
        code.contains("const LIST_KIND: &'static str = \"ThingCollection\";"),
        "{code}"
    );
    let root = &files[Path::new("mod.rs")];
    assert!(
        root.contains("list_kind: ::std::option::Option::Some(\"ThingCollection\")"),
        "{root}"
    );
}

#[test]
fn junctors_that_only_validate_keep_the_type_and_others_make_json() {
    // Linkerd's ServerAuthorization: `oneOf` says which of two listed fields is required.
    let validating = crd(
        "{server: {type: object, oneOf: [{required: [name]}, {required: [selector]}], \
         properties: {name: {type: string}, selector: {type: object, properties: {app: {type: string}}}}}}",
    );
    let files = generate(Settings::default(), &validating).unwrap();
    let v1 = &files[Path::new("com/example/v1.rs")];
    assert!(
        v1.contains("pub server: ::std::option::Option<ThingSpecServer>,"),
        "{v1}"
    );
    assert!(v1.contains("pub name: ::std::option::Option<::std::string::String>,"));
    assert!(v1.contains("Also validated by `oneOf` (2 schemas), which the type does not enforce."));

    // A branch that brings its own type (not structural) leaves the value untyped.
    for shaping in [
        "{server: {type: object, oneOf: [{type: string}], properties: {name: {type: string}}}}",
        "{server: {type: object, anyOf: [{properties: {other: {type: string}}}], properties: {name: {type: string}}}}",
        "{server: {oneOf: [{required: [name]}], properties: {name: {type: string}}}}",
    ] {
        let files = generate(Settings::default(), &crd(shaping)).unwrap();
        let v1 = &files[Path::new("com/example/v1.rs")];
        assert!(
            v1.contains("pub server: ::std::option::Option<::serde_json::Value>,"),
            "{shaping}\n{v1}"
        );
    }
}
