//! `apfkit simulate --audit-log`: an audit log replayed through the configuration in force and
//! a proposed one (on `apfkit_dispatcher::sim::replay`).

use std::io::{BufRead, BufReader, Read};

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::audit_log::{AuditLog, Line, Passed};
use apfkit_dispatcher::sim::replay::{Replay, ReplayOptions, ReplayReport};
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::{Failure, Location, printable};

/// The longest line read (an event at level `RequestResponse` carries the request's and the
/// response's bodies); a longer one is passed over as unusable, and memory stays bounded.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How many unusable lines are named one by one.
const NAMED_LINES: usize = 10;

/// What was read from the log, beside what the replay found.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct LogFigures {
    /// The log's file name (`-` for standard input).
    file: String,
    /// Lines read.
    lines: u64,
    /// Lines passed over on purpose, by reason.
    passed: PassedLines,
    /// Lines that could not be used.
    unusable: u64,
    /// The first of those, with the reason.
    unusable_lines: Vec<UnusableLine>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct PassedLines {
    /// Empty lines.
    blank: u64,
    /// Other stages of requests taken from another line.
    other_stage: u64,
    /// Requests that failed authentication (flow control never saw them).
    unauthenticated: u64,
    /// Long-running requests other than watches (flow control does not track them).
    long_running: u64,
}

#[derive(Debug, Serialize)]
struct UnusableLine {
    line: u64,
    reason: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    log: &'a LogFigures,
    #[serde(flatten)]
    replay: &'a ReplayReport,
}

/// Replays the log at `path` (`-`: standard input) through `in_force` and `proposed`,
/// reporting progress by the fraction of the file read.
pub fn run(
    path: &str,
    in_force: Configuration,
    proposed: Configuration,
    output: ReportFormat,
    mut progress: impl FnMut(f64),
) -> Result<(), Failure> {
    let location = Location {
        file: path.to_owned(),
        document: None,
    };
    let (reader, size): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let file = std::fs::File::open(path).map_err(|e| Failure::at(&location, e))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let mut replay = Replay::new(in_force, proposed, ReplayOptions::default());
    let mut log = AuditLog::default();
    let mut figures = LogFigures {
        file: path.to_owned(),
        ..LogFigures::default()
    };
    let mut line = Vec::new();
    let mut read_bytes = 0u64;
    loop {
        let taken = read_line(&mut reader, &mut line).map_err(|e| Failure::at(&location, e))?;
        let Some(length) = taken else { break };
        read_bytes += length;
        figures.lines += 1;
        if let Some(size) = size.filter(|size| *size > 0) {
            progress(read_bytes as f64 / size as f64);
        }
        let outcome = if line.len() > MAX_LINE_BYTES {
            Line::Unusable(format!("longer than {MAX_LINE_BYTES} bytes"))
        } else {
            log.read(&line)
        };
        let unusable = match outcome {
            Line::Request(request) => replay.push(&request).err().map(|e| e.to_string()),
            Line::Passed(passed) => {
                let count = match passed {
                    Passed::Blank => &mut figures.passed.blank,
                    Passed::OtherStage => &mut figures.passed.other_stage,
                    Passed::Unauthenticated => &mut figures.passed.unauthenticated,
                    Passed::LongRunning => &mut figures.passed.long_running,
                };
                *count += 1;
                None
            }
            Line::Unusable(reason) => Some(reason),
        };
        if let Some(reason) = unusable {
            figures.unusable += 1;
            if figures.unusable_lines.len() < NAMED_LINES {
                figures.unusable_lines.push(UnusableLine {
                    line: figures.lines,
                    reason,
                });
            }
        }
    }
    progress(1.0);
    for unusable in &figures.unusable_lines {
        eprintln!(
            "warning: {}:{}: {}",
            printable(path),
            unusable.line,
            printable(&unusable.reason)
        );
    }
    if figures.unusable > figures.unusable_lines.len() as u64 {
        eprintln!(
            "warning: {}: {} more lines could not be used",
            printable(path),
            figures.unusable - figures.unusable_lines.len() as u64
        );
    }
    let report = replay.finish();
    if report.requests == 0 {
        return Err(Failure::at(
            &location,
            format!(
                "no request to replay in {} lines ({} unusable)",
                figures.lines, figures.unusable
            ),
        ));
    }
    match output {
        ReportFormat::Json => print_json(&Output {
            log: &figures,
            replay: &report,
        }),
        ReportFormat::Text => emit(&format!("{}{}", figures.to_text(), report.to_text())),
    }
}

impl LogFigures {
    fn to_text(&self) -> String {
        let passed = &self.passed;
        format!(
            "Read {} lines of {}: {} unusable; passed over: {} other stages, {} failed \
             authentications, {} long-running requests, {} blank.\n",
            self.lines,
            printable(&self.file),
            self.unusable,
            passed.other_stage,
            passed.unauthenticated,
            passed.long_running,
            passed.blank
        )
    }
}

/// Reads the next line into `line` (without its line ending), keeping at most
/// [`MAX_LINE_BYTES`] + 1 bytes of it; the rest of a longer line is read and dropped. Returns
/// the bytes consumed, or `None` at the end.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<u64>> {
    line.clear();
    let mut consumed = 0u64;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok((consumed > 0).then_some(consumed));
        }
        let (chunk, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = ended.unwrap_or(available.len());
        reader.consume(used);
        consumed += used as u64;
        if ended.is_some() {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(consumed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<(Vec<u8>, u64)> {
        let mut reader = BufReader::with_capacity(7, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        while let Some(consumed) = read_line(&mut reader, &mut line).unwrap() {
            out.push((line.clone(), consumed));
        }
        out
    }

    #[test]
    fn lines_are_split_on_newlines_with_or_without_a_last_one() {
        assert_eq!(
            lines(b"one\r\ntwo\n\nthree"),
            [
                (b"one".to_vec(), 5),
                (b"two".to_vec(), 4),
                (Vec::new(), 1),
                (b"three".to_vec(), 5)
            ]
        );
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn a_line_past_the_limit_is_cut_and_the_next_one_read_whole() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 100];
        input.extend_from_slice(b"\nnext\n");
        let read = lines(&input);
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].0.len(), MAX_LINE_BYTES + 1);
        assert_eq!(read[0].1, MAX_LINE_BYTES as u64 + 101);
        assert_eq!(read[1], (b"next".to_vec(), 5));
    }
}
