//! The maintained YAML crates on this toolkit's workload, side by side in one run: a
//! multi-document stream of FlowSchemas and PriorityLevelConfigurations (the bootstrap objects
//! repeated with distinct names) read into `serde_json::Value`s and written back, beside a
//! serde_json round trip of the same documents as JSON.
//!
//! `cargo bench -p apfkit-scheme --bench yaml`
//!
//! Before timing, each parser meets three hostile inputs in a child process of its own (an
//! alias bomb, 100,000 levels of nesting, a 64 MiB scalar), and the table of what each did is
//! printed: refused with an error, accepted, or crashed.
//!
//! `refuse_flow_nesting` times apfkit's own reader refusing a body of deep flow nesting
//! (`spec: [[[…]]]`) at 6,000 and 60,000 levels: the cost grows with the size (about 10×
//! between the two), where libyaml alone grows with its square (issue 39: 60,000 levels took
//! 5.5 s before the reader checked the nesting first).

use std::sync::LazyLock;

use serde_json::Value;

/// Copies of the 19 bootstrap objects: about 9 MB of YAML.
const COPIES: usize = 600;

static VALUES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let mut shapes = Vec::new();
    for text in [
        apfkit_types::bootstrap::PRIORITY_LEVELS_YAML,
        apfkit_types::bootstrap::FLOW_SCHEMAS_YAML,
    ] {
        let documents: Vec<Value> = serde_saphyr::from_multiple(text).expect("parses");
        shapes.extend(documents);
    }
    (0..COPIES)
        .flat_map(|copy| {
            shapes.iter().map(move |shape| {
                let mut object = shape.clone();
                let name = format!("{}-{copy}", object["metadata"]["name"].as_str().unwrap());
                object["metadata"]["name"] = Value::from(name);
                object
            })
        })
        .collect()
});

static YAML: LazyLock<String> = LazyLock::new(|| {
    VALUES
        .iter()
        .map(|v| serde_saphyr::to_string(v).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
});

static JSON: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    for value in VALUES.iter() {
        serde_json::to_writer(&mut out, value).unwrap();
        out.push(b'\n');
    }
    out
});

/// serde-saphyr's options for a whole stream in one string: no budget, which counts documents
/// and nodes over the whole string (its streaming reader counts per document).
fn many_documents() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.budget = None;
    options
}

/// A yaml-rust2 document as a JSON value (what the toolkit needs of a parser).
fn from_yaml_rust2(yaml: yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(text) => text.parse::<f64>().map(Value::from).unwrap_or(Value::Null),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(items) => Value::Array(items.into_iter().map(from_yaml_rust2).collect()),
        Yaml::Hash(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    (
                        k.as_str().unwrap_or_default().to_owned(),
                        from_yaml_rust2(v),
                    )
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// What one parser does with hostile input, run in this process (called in a child).
fn probe(parser: &str, case: &str) -> String {
    let input = match case {
        "alias-bomb" => {
            let mut text = String::from(
                "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
            );
            for (i, name) in ["b", "c", "d", "e", "f", "g", "h", "i"].iter().enumerate() {
                let previous = ["a", "b", "c", "d", "e", "f", "g", "h"][i];
                text.push_str(&format!(
                    "{name}: &{name} [{}]\n",
                    vec![format!("*{previous}"); 9].join(",")
                ));
            }
            text
        }
        "deep" => format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        _ => format!("a: \"{}\"\n", "x".repeat(64 << 20)),
    };
    let result: Result<usize, String> = match parser {
        "serde-saphyr" => serde_saphyr::from_multiple::<Value>(&input)
            .map(|d| d.len())
            .map_err(|e| e.to_string()),
        "serde_yaml_ng" => serde_yaml_ng::from_str::<Value>(&input)
            .map(|_| 1)
            .map_err(|e| e.to_string()),
        "yaml-rust2" => yaml_rust2::YamlLoader::load_from_str(&input)
            .map(|d| d.len())
            .map_err(|e| e.to_string()),
        _ => saphyr_parser::Parser::new_from_str(&input)
            .try_fold(0usize, |n, event| event.map(|_| n + 1))
            .map_err(|e| e.to_string()),
    };
    match result {
        Ok(n) => format!("accepted ({n})"),
        Err(e) => format!(
            "refused: {}",
            e.lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect::<String>()
        ),
    }
}

fn main() {
    // A child process runs one probe and prints its outcome.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--probe") {
        println!("{}", probe(&args[at + 1], &args[at + 2]));
        return;
    }
    println!(
        "{} documents: {:.1} MB of YAML, {:.1} MB of JSON",
        VALUES.len(),
        YAML.len() as f64 / 1e6,
        JSON.len() as f64 / 1e6
    );
    println!("hostile input (each in a child process, 20 s and 4 GiB at most):");
    for parser in [
        "serde-saphyr",
        "serde_yaml_ng",
        "yaml-rust2",
        "saphyr-parser",
    ] {
        for case in ["alias-bomb", "deep", "64MiB-scalar"] {
            let child = std::process::Command::new("timeout")
                .args(["20", "prlimit", "--as=4294967296", "--"])
                .arg(&args[0])
                .args(["--probe", parser, case])
                .output()
                .expect("runs");
            let outcome = match child.status.code() {
                Some(0) => String::from_utf8_lossy(&child.stdout).trim().to_owned(),
                Some(124) => "did not finish in 20 s".to_owned(),
                other => format!(
                    "crashed ({other:?}): {}",
                    String::from_utf8_lossy(&child.stderr)
                        .lines()
                        .last()
                        .unwrap_or_default()
                ),
            };
            println!("  {parser:14} {case:13} {outcome}");
        }
    }
    // Every reader sees the same documents.
    assert_eq!(
        serde_saphyr::from_multiple_with_options::<Value>(&YAML, many_documents()).unwrap(),
        *VALUES
    );
    let ng: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&YAML)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(ng, *VALUES);
    divan::main();
}

#[divan::bench]
fn baseline_serde_json_value_round_trip() -> usize {
    let mut out = Vec::with_capacity(JSON.len());
    for value in serde_json::Deserializer::from_slice(&JSON).into_iter::<Value>() {
        serde_json::to_writer(&mut out, &value.unwrap()).unwrap();
        out.push(b'\n');
    }
    out.len()
}

#[divan::bench]
fn read_serde_saphyr_streaming() -> usize {
    serde_saphyr::read::<_, Value>(&mut YAML.as_bytes())
        .map(|d| d.unwrap())
        .filter(Value::is_object)
        .count()
}

#[divan::bench]
fn read_serde_saphyr_str() -> usize {
    serde_saphyr::from_multiple_with_options::<Value>(&YAML, many_documents())
        .unwrap()
        .len()
}

#[divan::bench]
fn read_serde_yaml_ng() -> usize {
    serde_yaml_ng::Deserializer::from_str(&YAML)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .filter(Value::is_object)
        .count()
}

#[divan::bench]
fn read_yaml_rust2() -> usize {
    yaml_rust2::YamlLoader::load_from_str(&YAML)
        .unwrap()
        .into_iter()
        .map(from_yaml_rust2)
        .filter(Value::is_object)
        .count()
}

#[divan::bench]
fn read_saphyr_parser_events_only() -> usize {
    saphyr_parser::Parser::new_from_str(&YAML)
        .map(|e| e.unwrap())
        .filter(|(event, _)| matches!(event, saphyr_parser::Event::MappingStart(..)))
        .count()
}

#[divan::bench(consts = [6_000, 60_000])]
fn refuse_flow_nesting<const LEVELS: usize>(bencher: divan::Bencher) {
    let text = format!("spec: {}{}\n", "[".repeat(LEVELS), "]".repeat(LEVELS));
    bencher.bench(|| {
        apfkit_scheme::scheme::SCHEME
            .read_documents(text.as_bytes())
            .expect_err("too deep")
    });
}

#[divan::bench]
fn write_serde_saphyr() -> usize {
    VALUES
        .iter()
        .map(|v| serde_saphyr::to_string(v).unwrap().len())
        .sum()
}

#[divan::bench]
fn write_serde_yaml_ng() -> usize {
    VALUES
        .iter()
        .map(|v| serde_yaml_ng::to_string(v).unwrap().len())
        .sum()
}
