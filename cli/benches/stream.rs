//! `apfkit convert --to v1` on large streams, beside a plain round trip of the same file in
//! the same run:
//!
//! - compact JSON and indented JSON, written with `-o json`, against serde_json reading the
//!   stream into `serde_json::Value`s one at a time and writing each indented;
//! - multi-document YAML, written as YAML, against serde-saphyr reading the stream into
//!   `serde_json::Value`s one at a time and writing each back as YAML.
//!
//! The input is the bootstrap configuration, half in v1beta2 and half in v1beta3, copied with
//! renamed objects until the file reaches the size asked for.
//!
//! `cargo bench -p apfkit --bench stream` (`APFKIT_STREAM_MB` sets the large size, 100 by
//! default; `APFKIT_STREAM_FORMATS=yaml,compact,pretty` picks the inputs).
//!
//! Each side runs `APFKIT_STREAM_RUNS` times (3 by default), alternating, and its fastest run
//! counts: on a shared machine the fastest run is the one least disturbed by others.
//!
//! `APFKIT_STREAM_OTHER=PATH` also runs another `apfkit` binary (an older build, say) in the
//! same turns, and adds its throughput and its time over this build's: above 1.0, this build
//! is the faster. That tells a regression from the machine's noise.
//!
//! A ratio is the baseline's time over apfkit's: above 1.0, apfkit is the faster. Peak memory
//! is the child's `VmHWM` from `/proc`, sampled until it exits (Linux only; elsewhere "n/a").
//! Bounded memory shows as a peak that does not grow with the input.

use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The forms of input measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Yaml,
    CompactJson,
    PrettyJson,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Yaml => "yaml",
            Form::CompactJson => "compact",
            Form::PrettyJson => "pretty",
        }
    }

    fn output_flag(self) -> &'static str {
        match self {
            Form::Yaml => "yaml",
            Form::CompactJson | Form::PrettyJson => "json",
        }
    }
}

/// The bootstrap objects in `version`, as JSON values.
fn bootstrap(version: &str) -> Vec<Value> {
    let json = Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(["bootstrap", "--to", version, "-o", "json"])
        .output()
        .expect("apfkit runs")
        .stdout;
    serde_json::Deserializer::from_slice(&json)
        .into_iter::<Value>()
        .map(|v| v.expect("bootstrap JSON"))
        .collect()
}

/// Writes renamed copies of the bootstrap objects until `megabytes` are written; returns the
/// bytes and documents written.
fn write_input(path: &Path, form: Form, megabytes: usize) -> (usize, usize) {
    let versions = [bootstrap("v1beta2"), bootstrap("v1beta3")];
    let mut file = BufWriter::new(std::fs::File::create(path).expect("temporary file"));
    let (mut written, mut documents, mut copy) = (0, 0, 0);
    while written < megabytes << 20 {
        for object in &versions[copy % 2] {
            let mut object = object.clone();
            let name = object["metadata"]["name"]
                .as_str()
                .expect("a name")
                .to_owned();
            object["metadata"]["name"] = Value::from(format!("c{copy}-{name}"));
            let text = match form {
                Form::Yaml => {
                    let text = serde_saphyr::to_string(&object).expect("YAML");
                    format!("---\n{text}")
                }
                Form::CompactJson => serde_json::to_string(&object).expect("JSON") + "\n",
                Form::PrettyJson => serde_json::to_string_pretty(&object).expect("JSON") + "\n",
            };
            file.write_all(text.as_bytes()).expect("write");
            written += text.len();
            documents += 1;
        }
        copy += 1;
    }
    file.flush().expect("flush");
    (written, documents)
}

/// Peak resident memory of a running process, in KiB, if `/proc` tells.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn convert(binary: &Path, input: &Path, form: Form, output: &Path) -> (Duration, Option<u64>) {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["convert", "-f"])
        .arg(input)
        .args(["--to", "v1", "-o", form.output_flag(), "--output-file"])
        .arg(output)
        .spawn()
        .expect("apfkit runs");
    let mut peak = None;
    loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = Some(peak.unwrap_or(0).max(kib));
        }
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "apfkit convert failed");
            return (started.elapsed(), peak);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The baseline: read the stream into values one at a time and write each back out.
fn round_trip(input: &Path, form: Form, output: &Path) -> (Duration, usize) {
    let started = Instant::now();
    let reader = BufReader::new(std::fs::File::open(input).expect("input"));
    let mut writer = BufWriter::new(std::fs::File::create(output).expect("output"));
    let mut documents = 0;
    match form {
        Form::Yaml => {
            let mut reader = reader;
            for document in serde_saphyr::read::<_, Value>(&mut reader) {
                let text = serde_saphyr::to_string(&document.expect("valid YAML")).expect("YAML");
                writer.write_all(b"---\n").expect("write");
                writer.write_all(text.as_bytes()).expect("write");
                documents += 1;
            }
        }
        Form::CompactJson | Form::PrettyJson => {
            for document in serde_json::Deserializer::from_reader(reader).into_iter::<Value>() {
                serde_json::to_writer_pretty(&mut writer, &document.expect("valid JSON"))
                    .expect("write");
                writer.write_all(b"\n").expect("write");
                documents += 1;
            }
        }
    }
    writer.flush().expect("flush");
    (started.elapsed(), documents)
}

/// A peak in KiB as MiB, or "n/a".
fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".to_owned(), |kib| {
        format!("{:.1} MiB", kib as f64 / 1024.0)
    })
}

fn count_objects(output: &Path, form: Form) -> usize {
    let text = std::fs::read_to_string(output).expect("output");
    match form {
        Form::Yaml => text.matches("\nkind: ").count(),
        Form::CompactJson | Form::PrettyJson => text.matches("\n  \"kind\": ").count(),
    }
}

fn main() {
    let large: usize = std::env::var("APFKIT_STREAM_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let runs: usize = std::env::var("APFKIT_STREAM_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let forms: Vec<Form> = match std::env::var("APFKIT_STREAM_FORMATS") {
        Ok(list) => [Form::Yaml, Form::CompactJson, Form::PrettyJson]
            .into_iter()
            .filter(|f| list.split(',').any(|n| n == f.name()))
            .collect(),
        Err(_) => vec![Form::CompactJson, Form::PrettyJson, Form::Yaml],
    };
    let other = std::env::var_os("APFKIT_STREAM_OTHER").map(std::path::PathBuf::from);
    let this = Path::new(env!("CARGO_BIN_EXE_apfkit"));
    let dir = tempfile::tempdir().expect("temporary directory");
    print!(
        "| input | size | documents | round trip (baseline) | apfkit convert --to v1 | ratio | peak RSS |"
    );
    match &other {
        Some(_) => println!(
            " other build | its time / this build's | its peak RSS |\n|---|---|---|---|---|---|---|---|---|---|"
        ),
        None => println!("\n|---|---|---|---|---|---|---|"),
    }
    for form in forms {
        for megabytes in [10, large] {
            let input = dir.path().join(format!("in-{megabytes}.{}", form.name()));
            let output = dir.path().join(format!("out-{megabytes}.{}", form.name()));
            let (bytes, documents) = write_input(&input, form, megabytes);
            let mb = bytes as f64 / (1 << 20) as f64;
            let (mut baseline, mut elapsed, mut peak) = (Duration::MAX, Duration::MAX, None);
            let (mut other_elapsed, mut other_peak) = (Duration::MAX, None);
            let timed = |binary: &Path, fastest: &mut Duration, peak: &mut Option<u64>| {
                let (time, kib) = convert(binary, &input, form, &output);
                assert_eq!(
                    count_objects(&output, form),
                    documents,
                    "every document converted by {}",
                    binary.display()
                );
                *fastest = (*fastest).min(time);
                *peak = (*peak).max(kib);
            };
            for _ in 0..runs {
                let (time, read) = round_trip(&input, form, &output);
                assert_eq!(read, documents, "the baseline read every document");
                baseline = baseline.min(time);
                timed(this, &mut elapsed, &mut peak);
                if let Some(other) = &other {
                    timed(other, &mut other_elapsed, &mut other_peak);
                }
            }
            print!(
                "| {} | {mb:.0} MB | {documents} | {:.1} MB/s | {:.1} MB/s | {:.2} | {} |",
                form.name(),
                mb / baseline.as_secs_f64(),
                mb / elapsed.as_secs_f64(),
                baseline.as_secs_f64() / elapsed.as_secs_f64(),
                mib(peak),
            );
            match &other {
                Some(_) => println!(
                    " {:.1} MB/s | {:.2} | {} |",
                    mb / other_elapsed.as_secs_f64(),
                    other_elapsed.as_secs_f64() / elapsed.as_secs_f64(),
                    mib(other_peak),
                ),
                None => println!(),
            }
            let _ = std::fs::remove_file(&input);
        }
    }
}
