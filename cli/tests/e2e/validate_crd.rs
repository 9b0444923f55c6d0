//! `apfkit validate --crd`: custom resources checked as kube-apiserver checks them, beside
//! flowcontrol objects, and definitions that cannot be used refused with the file and field.

use std::path::Path;

use super::apfkit;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
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
            properties:
              size: {type: integer, x-kubernetes-validations: [{rule: "self < 5", message: too big}]}
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_guides_custom_resource_commands_work_as_written() {
    let (stdout, _) =
        super::serve::run_guide_section("custom-resources.md", "Validating custom resources");
    let page = apfkit_test_support::guide::text("custom-resources.md");
    // The guide shows exactly what the commands print.
    assert!(page.contains(&format!("```text\n{stdout}```")), "{stdout}");
    assert!(stdout.contains("exit code 1"));
}

#[test]
fn custom_resources_and_flowcontrol_objects_validate_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let crd = write(dir.path(), "crd.yaml", CRD);
    let objects = write(
        dir.path(),
        "objects.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: ok}\nspec: {size: 1}\n---\n\
         apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: big}\nspec: {size: 9}\n---\n\
         apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: fs}\n\
         spec: {matchingPrecedence: 20000, priorityLevelConfiguration: {name: x}}\n",
    );
    let output = apfkit(&["validate", "--crd", &crd, "-f", &objects], b"");
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            format!("{objects}: document 2: Gadget/big: spec.size: Invalid value: 9: too big"),
            format!(
                "{objects}: document 3: FlowSchema/fs: spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000"
            ),
        ]
    );
    let good = write(
        dir.path(),
        "good.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: ok}\nspec: {size: 1}\n",
    );
    assert_eq!(
        apfkit(&["validate", "--crd", &crd, "-f", &good], b"")
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn definitions_that_cannot_be_used_are_refused_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let objects = write(
        dir.path(),
        "o.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: a}\n",
    );
    let typo = write(
        dir.path(),
        "typo.yaml",
        &CRD.replace("type: integer", "type: integr"),
    );
    let output = apfkit(&["validate", "--crd", &typo, "-f", &objects], b"");
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{typo}: document 1: CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Unsupported value: \"integr\"")),
        "{stderr}"
    );
    let rule = write(dir.path(), "rule.yaml", &CRD.replace("self < 5", "self <"));
    let stderr =
        String::from_utf8_lossy(&apfkit(&["validate", "--crd", &rule, "-f", &objects], b"").stderr)
            .into_owned();
    assert!(
        stderr.contains(
            "x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self \\u003c\",\"Message\":\"too big\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed"
        ),
        "{stderr}"
    );

    let none = write(
        dir.path(),
        "none.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    let output = apfkit(&["validate", "--crd", &none, "-f", &objects], b"");
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no CustomResourceDefinition found"),
        "{stderr}"
    );
    for garbage in [
        "{",
        "\u{0}\u{1}",
        "- - - [",
        "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec: 3\n",
    ] {
        let file = write(dir.path(), "garbage.yaml", garbage);
        let output = apfkit(&["validate", "--crd", &file, "-f", &objects], b"");
        assert_ne!(output.status.code(), Some(0), "{garbage:?}");
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("panicked"),
            "{garbage:?}"
        );
    }
    let missing = dir.path().join("missing.yaml").display().to_string();
    let output = apfkit(&["validate", "--crd", &missing, "-f", &objects], b"");
    assert_ne!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains(&missing));
}

#[test]
fn definitions_themselves_are_checked_as_kube_apiserver_checks_them_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.yaml", CRD);
    assert_eq!(
        apfkit(&["validate", "-f", &good], b"").status.code(),
        Some(0)
    );
    let bad = write(
        dir.path(),
        "bad.yaml",
        &CRD.replace("name: gadgets.example.com", "name: gizmos.example.com")
            .replace("scope: Namespaced", "scope: Galaxy"),
    );
    let output = apfkit(&["validate", "-f", &bad], b"");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .collect::<Vec<_>>(),
        [
            format!(
                r#"{bad}: document 1: CustomResourceDefinition/gizmos.example.com: metadata.name: Invalid value: "gizmos.example.com": must be spec.names.plural+"."+spec.group"#
            ),
            format!(
                r#"{bad}: document 1: CustomResourceDefinition/gizmos.example.com: spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced""#
            ),
        ]
    );
}

/// CRD files are read by the same bounded readers as every input: a repeated key, nesting
/// deeper than the limit and a document over the size limit are refused naming the file,
/// with a non-zero exit code, never a panic.
#[test]
fn hostile_crd_files_are_refused_by_the_readers() {
    let dir = tempfile::tempdir().unwrap();
    let objects = write(
        dir.path(),
        "o.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: a}\n",
    );
    let repeated = write(
        dir.path(),
        "repeated.yaml",
        &CRD.replace(
            "  group: example.com\n",
            "  group: example.com\n  group: other.com\n",
        ),
    );
    let deep = write(
        dir.path(),
        "deep.yaml",
        &format!("{CRD}  deep: {}{}\n", "[".repeat(300), "]".repeat(300)),
    );
    let large = write(
        dir.path(),
        "large.yaml",
        &format!("{CRD}  note: {}\n", "a".repeat(4096)),
    );
    for (file, expected) in [
        (&repeated, "duplicate key"),
        (&deep, "nested deeper than 64 levels"),
        (&large, "larger than 2048 bytes"),
    ] {
        let output = apfkit(
            &[
                "validate",
                "--max-document-size",
                "2K",
                "--crd",
                file,
                "-f",
                &objects,
            ],
            b"",
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{file}");
        assert!(
            stderr.contains(file.as_str()) && stderr.contains(expected),
            "{file}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
