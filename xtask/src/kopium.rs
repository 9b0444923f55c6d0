//! `cargo xtask compare-kopium`: generates Rust for every CRD of a corpus (kopium's own test
//! CRDs) with both kopium and apfkit-codegen, compiles each output as its own crate, round-trips
//! the corpus's sample objects through both, and writes a Markdown table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use apfkit_codegen::{Generator, NestedNames, Settings};
use serde_json::Value;

/// What to compare and where.
#[derive(Debug)]
pub struct Options {
    /// Directory with CRDs and sample objects (YAML), searched one level deep and in
    /// `cmd/generate/crds`.
    pub corpus: PathBuf,
    /// Scratch directory for the generated crates (a Cargo workspace).
    pub work: PathBuf,
    /// The kopium binary.
    pub kopium: PathBuf,
    /// Path of apfkit-runtime, for the generated crates.
    pub runtime: PathBuf,
}

/// One CRD and, if the corpus has one, a sample object of it.
#[derive(Debug)]
struct Case {
    file: String,
    kind: String,
    group: String,
    version: String,
    crd: Value,
    sample: Option<Value>,
    defaults: usize,
}

/// What one tool produced for one case.
#[derive(Debug)]
struct Outcome {
    generated: Result<String, String>,
    compiles: bool,
    round_trip: String,
    longest_name: usize,
    lines: usize,
    typed: Vec<&'static str>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            generated: Err("not run".to_owned()),
            compiles: false,
            round_trip: String::new(),
            longest_name: 0,
            lines: 0,
            typed: Vec::new(),
        }
    }
}

fn read_documents(path: &Path) -> Result<Vec<Value>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let documents: Vec<Value> = serde_saphyr::from_slice_multiple(&bytes)
        .with_context(|| format!("parsing {}", path.display()))?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Every CRD of the corpus with its sample object, if any.
fn cases(corpus: &Path) -> Result<Vec<Case>> {
    let mut crds = Vec::new();
    let mut samples: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut files = yaml_files(corpus);
    files.extend(yaml_files(&corpus.join("cmd/generate/crds")));
    for file in files {
        for document in read_documents(&file)? {
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            let api_version = document["apiVersion"].as_str().unwrap_or_default();
            if kind == "CustomResourceDefinition" {
                let name = file
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                crds.push((name, document));
            } else if !kind.is_empty() {
                samples.insert((api_version.to_owned(), kind), document);
            }
        }
    }
    let mut out = Vec::new();
    for (file, crd) in crds {
        let group = crd["spec"]["group"].as_str().unwrap_or_default().to_owned();
        let kind = crd["spec"]["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let versions: Vec<&str> = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .collect();
        let sample = versions.iter().find_map(|v| {
            samples
                .get(&(format!("{group}/{v}"), kind.clone()))
                .map(|s| ((*v).to_owned(), s.clone()))
        });
        let storage = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["storage"] == Value::Bool(true))
            .and_then(|v| v["name"].as_str())
            .unwrap_or_default()
            .to_owned();
        let (version, sample) = match sample {
            Some((version, sample)) => (version, Some(sample)),
            None => (storage, None),
        };
        let defaults = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == version.as_str())
            .map(|v| count_defaults(&v["schema"]["openAPIV3Schema"]))
            .unwrap_or_default();
        out.push(Case {
            file,
            kind,
            group,
            version,
            crd,
            sample,
            defaults,
        });
    }
    Ok(out)
}

/// Schema nodes with a `default` (inside `properties`, `items`, `additionalProperties`).
fn count_defaults(schema: &Value) -> usize {
    let Some(object) = schema.as_object() else {
        return 0;
    };
    let own = usize::from(object.contains_key("default"));
    let properties: usize = object
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .map(count_defaults)
        .sum();
    let nested: usize = ["items", "additionalProperties"]
        .iter()
        .filter_map(|k| object.get(*k))
        .map(count_defaults)
        .sum();
    own + properties + nested
}

/// `cert-manager.io` → `io.cert-manager`.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// The settings apfkit is compared with: k8s-openapi's meta types (as kopium uses), short
/// nested names.
fn apfkit_settings() -> Settings {
    let mut settings = Settings::default();
    settings
        .use_k8s_openapi()
        .with_nested_names(NestedNames::Short);
    settings
}

fn apfkit_generate(case: &Case) -> Result<(BTreeMap<PathBuf, String>, String), String> {
    let mut single = case.crd.clone();
    if let Some(versions) = single["spec"]["versions"].as_array_mut() {
        versions.retain(|v| v["name"] == case.version.as_str());
    }
    let mut generator = Generator::new(apfkit_settings());
    generator
        .add_bytes(&case.file, single.to_string().as_bytes())
        .map_err(|e| e.to_string())?;
    let files = generator.generate().map_err(|e| e.to_string())?;
    let module = apfkit_settings()
        .module_for(&format!("{}.{}", reversed(&case.group), case.version))
        .join("::");
    let all: String = files.values().map(String::as_str).collect();
    let name = apfkit_kind_type(&all, &case.kind).unwrap_or_else(|| case.kind.clone());
    Ok((files, format!("api::{module}::{name}")))
}

fn kopium_generate(kopium: &Path, case: &Case, scratch: &Path) -> Result<String, String> {
    let input = scratch.join(format!("{}.crd.json", case.file));
    std::fs::write(&input, case.crd.to_string()).map_err(|e| e.to_string())?;
    let output = Command::new(kopium)
        .args(["--docs", "--api-version", &case.version, "-f"])
        .arg(&input)
        .output()
        .map_err(|e| format!("running kopium: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The root type kopium's `#[kube(...)]` derives: its `root = "..."`, else the kind.
fn kopium_root(code: &str) -> Option<String> {
    let attribute = code.lines().find(|l| l.contains("#[kube(group"))?;
    let (_, rest) = attribute.split_once("root = \"")?;
    Some(rest.split('"').next()?.to_owned())
}

/// The Rust name apfkit gave a kind: the type whose `Kind` impl says `KIND = "<kind>"`.
fn apfkit_kind_type(code: &str, kind: &str) -> Option<String> {
    let lines: Vec<&str> = code.lines().collect();
    let wanted = format!("const KIND: &'static str = {kind:?};");
    lines.iter().enumerate().find_map(|(at, line)| {
        let name = line
            .split("k8s_openapi::Resource for ")
            .nth(1)?
            .strip_suffix(" {")?;
        // The impl's own lines: up to its closing brace.
        lines[at + 1..]
            .iter()
            .take_while(|l| l.trim() != "}")
            .any(|l| l.trim() == wanted)
            .then(|| name.to_owned())
    })
}

const ROUND_TRIP_MAIN: &str = r#"
fn first_difference(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let (p, q) = (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
                if x.contains_key(key) != y.contains_key(key) {
                    return Some(format!("{path}/{key}: {} → {}", if x.contains_key(key) { p.to_string() } else { "absent".into() }, if y.contains_key(key) { q.to_string() } else { "absent".into() }));
                }
                if let Some(d) = first_difference(&format!("{path}/{key}"), p, q) { return Some(d); }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(&format!("{path}/{i}"), p, q))
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {a} → {b}")),
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("sample path");
    let sample: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    match serde_json::from_value::<TYPE>(sample.clone()) {
        Err(err) => println!("decode error: {err}"),
        Ok(typed) => {
            let back = serde_json::to_value(&typed).unwrap();
            match first_difference("", &sample, &back) {
                None => println!("exact"),
                Some(d) => println!("differs: {d}"),
            }
        }
    }
}
"#;

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Metrics of generated code: lines, the longest type name, the typed formats it uses.
fn measure(outcome: &mut Outcome, text: &str) {
    outcome.lines += text.lines().count();
    for line in text.lines() {
        let line = line.trim_start();
        for prefix in ["pub struct ", "pub enum "] {
            if let Some(rest) = line.strip_prefix(prefix) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                outcome.longest_name = outcome.longest_name.max(name.len());
            }
        }
    }
    // Type paths, not words: descriptions mention quantities and times too.
    for (needle, label) in [
        ("::IntOrString", "int-or-string"),
        ("::Quantity", "quantity"),
        ("::DateTime", "date-time"),
        ("pub enum ", "enums"),
    ] {
        if text.contains(needle) && !outcome.typed.contains(&label) {
            outcome.typed.push(label);
        }
    }
}

/// Runs the comparison and returns the Markdown report.
pub fn run(options: &Options) -> Result<String> {
    let cases = cases(&options.corpus)?;
    if cases.is_empty() {
        bail!(
            "no CustomResourceDefinition in {}",
            options.corpus.display()
        );
    }
    let work = &options.work;
    std::fs::create_dir_all(work)?;
    let mut members = Vec::new();
    let mut outcomes: Vec<[Outcome; 2]> = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let mut pair = [Outcome::default(), Outcome::default()];
        // kopium
        let crate_name = format!("k{index}");
        pair[0].generated = kopium_generate(&options.kopium, case, work);
        if let Ok(code) = pair[0].generated.clone() {
            measure(&mut pair[0], &code);
            let dir = work.join(&crate_name);
            write(
                &dir.join("src/lib.rs"),
                &format!("#![allow(warnings)]\n{code}"),
            )?;
            let root = kopium_root(&code).unwrap_or_else(|| case.kind.clone());
            write(
                &dir.join("src/main.rs"),
                &ROUND_TRIP_MAIN.replace("TYPE", &format!("{crate_name}::{root}")),
            )?;
            write(&dir.join("Cargo.toml"), &manifest(&crate_name, options))?;
            members.push(crate_name);
        }
        // apfkit
        let crate_name = format!("a{index}");
        match apfkit_generate(case) {
            Ok((files, type_path)) => {
                let dir = work.join(&crate_name);
                let _ = std::fs::remove_dir_all(dir.join("src/api"));
                let mut all = String::new();
                for (path, text) in &files {
                    write(&dir.join("src/api").join(path), text)?;
                    all.push_str(text);
                }
                measure(&mut pair[1], &all);
                write(
                    &dir.join("src/lib.rs"),
                    "#![allow(warnings)]\npub mod api;\n",
                )?;
                write(
                    &dir.join("src/main.rs"),
                    &ROUND_TRIP_MAIN.replace("TYPE", &format!("{crate_name}::{type_path}")),
                )?;
                write(&dir.join("Cargo.toml"), &manifest(&crate_name, options))?;
                pair[1].generated = Ok(all);
                members.push(crate_name);
            }
            Err(err) => pair[1].generated = Err(err),
        }
        outcomes.push(pair);
    }
    let member_list: Vec<String> = members.iter().map(|m| format!("{m:?}")).collect();
    write(
        &work.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n",
            member_list.join(", ")
        ),
    )?;
    write(
        &work.join(".cargo/config.toml"),
        "[env]\nK8S_OPENAPI_ENABLED_VERSION = \"1.37\"\n",
    )?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // Each crate builds or not on its own; the status says only whether all did. The
    // libraries (the generated code) first, then the round-trip programs.
    for target in ["--lib", "--bins"] {
        let _ = Command::new(&cargo)
            .current_dir(work)
            .args(["build", "--workspace", "--keep-going", "--quiet", target])
            .status()
            .context("running cargo build in the scratch workspace")?;
    }
    for (index, (case, pair)) in cases.iter().zip(&mut outcomes).enumerate() {
        let sample = case.sample.as_ref().map(|s| {
            let path = work.join(format!("sample{index}.json"));
            std::fs::write(&path, s.to_string()).map(|()| path)
        });
        for (tool, outcome) in ["k", "a"].iter().zip(pair.iter_mut()) {
            let binary = work.join("target/debug").join(format!("{tool}{index}"));
            let library = work
                .join("target/debug")
                .join(format!("lib{tool}{index}.rlib"));
            outcome.compiles = outcome.generated.is_ok() && library.exists();
            outcome.round_trip = match (&sample, outcome.compiles) {
                (None, _) => "no sample".to_owned(),
                (Some(_), false) => "–".to_owned(),
                (Some(Err(err)), true) => format!("sample not written: {err}"),
                (Some(Ok(_)), true) if !binary.exists() => {
                    "round-trip program does not build".to_owned()
                }
                (Some(Ok(path)), true) => {
                    let output = Command::new(&binary).arg(path).output()?;
                    String::from_utf8_lossy(&output.stdout).trim().to_owned()
                }
            };
        }
    }
    Ok(report(&cases, &outcomes))
}

fn manifest(name: &str, options: &Options) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
apfkit-runtime = {{ path = {runtime:?} }}
k8s-openapi = {{ version = "0.29", features = ["schemars"] }}
kube = {{ version = "5", default-features = false, features = ["derive"] }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
"#,
        runtime = options.runtime.display().to_string()
    )
}

fn report(cases: &[Case], outcomes: &[[Outcome; 2]]) -> String {
    let mut out = String::from(
        "| CRD (version) | tool | generates | compiles | sample round trip | typed formats | defaults applied | longest type name | lines |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (case, pair) in cases.iter().zip(outcomes) {
        for (tool, outcome) in ["kopium", "apfkit"].iter().zip(pair) {
            let generates = match &outcome.generated {
                Ok(_) => "yes".to_owned(),
                Err(err) => format!("no: {}", err.lines().next().unwrap_or_default()),
            };
            let defaults = match (*tool, case.defaults) {
                (_, 0) => "–".to_owned(),
                ("apfkit", n) => format!("all {n} (`ApplyDefaults`)"),
                (_, n) => format!("none of {n}"),
            };
            let typed = if outcome.typed.is_empty() {
                "–".to_owned()
            } else {
                outcome.typed.join(", ")
            };
            let _ = writeln!(
                out,
                "| {} ({}) | {tool} | {generates} | {} | {} | {typed} | {defaults} | {} | {} |",
                case.file,
                case.version,
                if outcome.compiles { "yes" } else { "no" },
                outcome.round_trip.replace('|', "\\|"),
                outcome.longest_name,
                outcome.lines,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_counted_wherever_the_schema_nests_them() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "integer", "default": 1},
            "b": {"type": "array", "items": {"type": "object", "default": {}, "properties": {"c": {"default": "x"}}}},
            "d": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        }});
        assert_eq!(count_defaults(&schema), 4);
    }

    #[test]
    fn root_types_are_found_by_their_kind() {
        let kopium = "#[kube(group = \"acid.zalan.do\", version = \"v1\", kind = \"postgresql\", root = \"Postgresql\", plural = \"postgresqls\")]";
        assert_eq!(kopium_root(kopium).as_deref(), Some("Postgresql"));
        assert_eq!(kopium_root("pub struct A;"), None);
        let apfkit = "impl ::apfkit_runtime::k8s_openapi::Resource for PostgresqlList {\n    const KIND: &'static str = \"postgresqlList\";\n}\nimpl ::apfkit_runtime::k8s_openapi::Resource for Postgresql {\n    const GROUP: &'static str = \"acid.zalan.do\";\n    const KIND: &'static str = \"postgresql\";\n}";
        assert_eq!(
            apfkit_kind_type(apfkit, "postgresql").as_deref(),
            Some("Postgresql")
        );
        assert_eq!(reversed("cert-manager.io"), "io.cert-manager");
    }
}
