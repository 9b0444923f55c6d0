//! apfkit-crd against a validator nobody here wrote: every document of kubectl-validate's test
//! corpus (tests/fixtures/kubectl-validate, with the `Status` kubectl-validate expects in each
//! document's leading comment) is run through apfkit-crd, and the comparison is the table in
//! docs/crd-validation.md, which this test keeps true.

use std::path::{Path, PathBuf};

use apfkit_crd::CustomResourceDefinition;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubectl-validate")
}

fn read_documents(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    serde_saphyr::from_slice_multiple::<Value>(&bytes)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

fn definitions() -> Vec<CustomResourceDefinition> {
    let mut found = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(fixtures().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        for document in read_documents(&file) {
            if document.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                continue;
            }
            let crd = CustomResourceDefinition::from_value(&document)
                .unwrap_or_else(|err| panic!("{}: {err}", file.display()));
            found.push(crd);
        }
    }
    found
}

/// The `Status` a document's leading comment holds, if it holds one.
fn expected_status(document: &str) -> Option<Value> {
    let comment: Vec<&str> = document
        .lines()
        .take_while(|line| line.starts_with('#') || line.trim().is_empty())
        .map(|line| line.strip_prefix('#').unwrap_or(line))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let start = comment.iter().position(|line| line.starts_with('{'))?;
    let mut text = String::new();
    for line in &comment[start..] {
        text.push_str(line);
        text.push('\n');
        if let Ok(status) = serde_json::from_str::<Value>(&text) {
            return Some(status);
        }
    }
    None
}

/// One document of the corpus, judged.
struct Case {
    file: String,
    index: usize,
    expected: Verdict,
    actual: Option<Verdict>,
    why_not: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Success,
    Failure(String),
}

impl Verdict {
    fn short(&self) -> &'static str {
        match self {
            Verdict::Success => "Success",
            Verdict::Failure(_) => "Failure",
        }
    }
}

fn judge(
    definitions: &[CustomResourceDefinition],
    document: &Value,
) -> Result<Verdict, &'static str> {
    let api_version = document
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "CustomResourceDefinition" && api_version == "apiextensions.k8s.io/v1" {
        return Ok(match CustomResourceDefinition::from_value(document) {
            Ok(_) => Verdict::Success,
            Err(err) => Verdict::Failure(err.to_string()),
        });
    }
    let Some((crd, version)) = definitions.iter().find_map(|crd| {
        Some((
            crd,
            crd.version_of(api_version).filter(|_| crd.kind == kind)?,
        ))
    }) else {
        return Err("a built-in kind: needs the core schemas, which apfkit does not carry");
    };
    let mut object = document.clone();
    let admission = version.admit(&mut object, None);
    if admission.errors.is_empty() {
        Ok(Verdict::Success)
    } else {
        let name = document
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        Ok(Verdict::Failure(
            crd.invalid_message(name, &admission.errors),
        ))
    }
}

fn cases() -> Vec<Case> {
    let definitions = definitions();
    let mut files: Vec<_> = std::fs::read_dir(fixtures().join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (index, document) in text.split("\n---").enumerate() {
            let Some(status) = expected_status(document) else {
                continue;
            };
            let expected = match status["status"].as_str() {
                Some("Success") => Verdict::Success,
                _ => Verdict::Failure(status["message"].as_str().unwrap_or("").to_owned()),
            };
            let parsed: Result<Value, _> = serde_saphyr::from_str(document);
            let (actual, why_not) = match parsed {
                Ok(Value::Null) => (None, "no object in the document"),
                Ok(value) => match judge(&definitions, &value) {
                    Ok(verdict) => (Some(verdict), ""),
                    Err(why) => (None, why),
                },
                Err(_) => (None, "not YAML (kubectl-validate's own reader's message)"),
            };
            cases.push(Case {
                file: name.clone(),
                index,
                expected,
                actual,
                why_not,
            });
        }
    }
    cases
}

fn table(cases: &[Case]) -> String {
    let applicable: Vec<&Case> = cases.iter().filter(|c| c.actual.is_some()).collect();
    let same_verdict = applicable
        .iter()
        .filter(|c| c.actual.as_ref().map(Verdict::short) == Some(c.expected.short()))
        .count();
    let same_message = applicable
        .iter()
        .filter(|c| c.actual.as_ref() == Some(&c.expected))
        .count();
    let mut out = String::new();
    out.push_str(&format!(
        "{} documents; {} about CRDs and their objects, the rest about built-in kinds; of those {}: \
         {} with kubectl-validate's verdict, {} with its message word for word.\n\n",
        cases.len(),
        applicable.len(),
        applicable.len(),
        same_verdict,
        same_message
    ));
    out.push_str("| manifest | document | kubectl-validate | apfkit | same message |\n|---|---|---|---|---|\n");
    for case in cases {
        let (ours, same) = match &case.actual {
            Some(verdict) => (
                verdict.short().to_owned(),
                if verdict == &case.expected {
                    "yes"
                } else {
                    "no"
                }
                .to_owned(),
            ),
            None => (format!("not run: {}", case.why_not), "–".to_owned()),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            case.file,
            case.index + 1,
            case.expected.short(),
            ours,
            same
        ));
    }
    out
}

#[test]
fn every_crd_of_the_corpus_compiles() {
    let names: Vec<String> = definitions().into_iter().map(|d| d.name).collect();
    assert!(
        names.contains(&"celbasics.stable.example.com".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"jobsets.batch.x-k8s.io".to_owned()),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.ends_with("cert-manager.io")),
        "{names:?}"
    );
    assert!(
        names.contains(&"dnsendpoints.externaldns.k8s.io".to_owned()),
        "{names:?}"
    );
}

#[test]
fn the_crd_cases_get_kubectl_validates_verdicts_and_messages() {
    let cases = cases();
    for case in cases.iter().filter(|c| c.actual.is_some()) {
        assert_eq!(
            case.actual.as_ref(),
            Some(&case.expected),
            "{} document {}",
            case.file,
            case.index + 1
        );
    }
    for file in [
        "error_cel_basic.yaml",
        "error_cel_basic_multiple.yaml",
        "error_x_list_map_default.yaml",
        "error_crd_typo.yaml",
        "jobset.yaml",
    ] {
        assert!(
            cases.iter().any(|c| c.file == file && c.actual.is_some()),
            "{file} is judged"
        );
    }
}

#[test]
fn docs_hold_the_comparison_table() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/crd-validation.md");
    let text = std::fs::read_to_string(&docs).unwrap_or_default();
    let table = table(&cases());
    assert!(
        text.contains(&table),
        "docs/crd-validation.md should hold this table:\n\n{table}"
    );
}
