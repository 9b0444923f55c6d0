//! `apfkit convert` on large multi-document YAML: throughput (MB/s) and peak memory, for
//! 10 MB and 100 MB of input, beside a baseline that only parses the same YAML stream
//! in-process (serde-saphyr, one document at a time, into JSON values).
//!
//! `cargo bench -p apfkit --bench stream` (set `APFKIT_STREAM_MB` to change the large size).
//!
//! Peak memory is the child's `VmHWM` from `/proc`, sampled until it exits (Linux only;
//! elsewhere it prints "n/a"). Bounded memory shows as a peak that does not grow with the input.

use std::io::{BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Bootstrap objects in v1beta2, renamed per copy, until `megabytes` of YAML are written.
fn write_input(path: &Path, megabytes: usize) -> usize {
    let template = Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(["bootstrap", "--to", "v1beta2"])
        .output()
        .expect("apfkit runs")
        .stdout;
    let template = String::from_utf8(template).expect("UTF-8");
    let documents: Vec<&str> = template.split("\n---\n").collect();
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("temporary file"));
    let (mut written, mut copy) = (0, 0);
    while written < megabytes << 20 {
        for document in &documents {
            let renamed = document.replacen("\n  name: ", &format!("\n  name: c{copy}-"), 1);
            let text = format!("{}\n---\n", renamed.trim_end());
            file.write_all(text.as_bytes()).expect("write");
            written += text.len();
        }
        copy += 1;
    }
    file.flush().expect("flush");
    written
}

/// Peak resident memory of a running process, in KiB, if `/proc` tells.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn convert(input: &Path, output: &Path) -> (Duration, Option<u64>) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(["convert", "-f"])
        .arg(input)
        .args(["--to", "v1", "--output-file"])
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

fn parse_only(input: &Path) -> (Duration, usize) {
    let started = Instant::now();
    let mut reader = BufReader::new(std::fs::File::open(input).expect("input"));
    let mut documents = 0;
    for document in serde_saphyr::read::<_, serde_json::Value>(&mut reader) {
        std::hint::black_box(document.expect("valid YAML"));
        documents += 1;
    }
    (started.elapsed(), documents)
}

fn main() {
    let large: usize = std::env::var("APFKIT_STREAM_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().expect("temporary directory");
    println!(
        "| input | documents | parse only (baseline) | apfkit convert --to v1 | ratio | peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    for megabytes in [10, large] {
        let input = dir.path().join(format!("in-{megabytes}.yaml"));
        let output = dir.path().join(format!("out-{megabytes}.yaml"));
        let bytes = write_input(&input, megabytes);
        let mb = bytes as f64 / (1 << 20) as f64;
        let (baseline, documents) = parse_only(&input);
        let (elapsed, peak) = convert(&input, &output);
        let converted = std::fs::read_to_string(&output)
            .expect("output")
            .matches("\nkind: ")
            .count();
        assert_eq!(converted, documents, "every document converted");
        println!(
            "| {mb:.0} MB | {documents} | {:.1} MB/s | {:.1} MB/s | {:.2} | {} |",
            mb / baseline.as_secs_f64(),
            mb / elapsed.as_secs_f64(),
            elapsed.as_secs_f64() / baseline.as_secs_f64(),
            peak.map_or("n/a".to_owned(), |kib| format!(
                "{:.1} MiB",
                kib as f64 / 1024.0
            )),
        );
    }
}
