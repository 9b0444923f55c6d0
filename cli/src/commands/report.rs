//! What `apfkit simulate --report FILE` and `--plot DIR` write: charts of a recorded
//! simulation as SVG (made with plotters), and one self-contained HTML page holding them
//! inline with the text report's tables (no script, no network).

use std::path::Path;

use apfkit_dispatcher::sim::server::{LevelTimeline, Report, StreamWaits, Timeline};
use plotters::prelude::*;

use crate::failure::{Failure, printable};

/// One chart.
pub struct Chart {
    /// A file name for it (`seats-global-default.svg`).
    pub file_name: String,
    /// Its title, also drawn as its caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 300;

/// `text` fit for a file name: letters, digits, `.` and `-` kept, the rest `_`.
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `text` with its control characters escaped and the characters XML gives meaning to
/// replaced, for captions and the page.
fn safe(text: &str) -> String {
    printable(text)
        .chars()
        .map(|c| match c {
            '<' => '‹',
            '>' => '›',
            '&' => '+',
            '"' => '\'',
            c => c,
        })
        .collect()
}

fn failure(title: &str, error: impl std::fmt::Display) -> Failure {
    Failure::Invalid(format!("drawing the chart {title}: {error}"))
}

/// A line chart of `series` (label, colour, values at `seconds`).
fn lines(
    title: &str,
    y_label: &str,
    seconds: &[f64],
    series: &[(&str, RGBColor, Vec<f64>)],
) -> Result<String, Failure> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| failure(title, e))?;
        let end = seconds
            .last()
            .copied()
            .unwrap_or(1.0)
            .max(f64::MIN_POSITIVE);
        let top = series
            .iter()
            .flat_map(|(_, _, values)| values.iter().copied())
            .fold(1.0f64, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..end, 0f64..top)
            .map_err(|e| failure(title, e))?;
        chart
            .configure_mesh()
            .x_desc("simulated seconds")
            .y_desc(y_label)
            .draw()
            .map_err(|e| failure(title, e))?;
        for (label, colour, values) in series {
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(
                    seconds.iter().copied().zip(values.iter().copied()),
                    colour.stroke_width(2),
                ))
                .map_err(|e| failure(title, e))?
                .label(*label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 15, y)], colour));
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| failure(title, e))?;
        }
        root.present().map_err(|e| failure(title, e))?;
    }
    Ok(svg)
}

/// A bar chart of a stream's waits, one bar per doubling bucket.
fn waits(title: &str, buckets: &[(f64, u64)]) -> Result<String, Failure> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| failure(title, e))?;
        let top = buckets.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1) as f64 * 1.1;
        let count = buckets.len().max(1);
        let labels: Vec<String> = buckets
            .iter()
            .map(|(upper, _)| format!("≤{upper} ms"))
            .collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..count as f64, 0f64..top)
            .map_err(|e| failure(title, e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(count.min(12))
            .x_label_formatter(&|x| labels.get(x.floor() as usize).cloned().unwrap_or_default())
            .x_desc("wait")
            .y_desc("requests")
            .draw()
            .map_err(|e| failure(title, e))?;
        chart
            .draw_series(buckets.iter().enumerate().map(|(i, (_, n))| {
                Rectangle::new(
                    [(i as f64 + 0.1, 0.0), (i as f64 + 0.9, *n as f64)],
                    BLUE.mix(0.7).filled(),
                )
            }))
            .map_err(|e| failure(title, e))?;
        root.present().map_err(|e| failure(title, e))?;
    }
    Ok(svg)
}

fn level_charts(seconds: &[f64], level: &LevelTimeline) -> Result<Vec<Chart>, Failure> {
    let name = safe(&level.name);
    let constant = |value: i64| vec![value as f64; seconds.len()];
    let floats = |values: &[u64]| values.iter().map(|v| *v as f64).collect::<Vec<_>>();
    let seats_title = format!("{name}: seats in use and limits");
    let queue_title = format!("{name}: requests waiting");
    let rejected_title = format!("{name}: requests rejected (total so far)");
    let file = file_part(&level.name);
    let mut charts = vec![Chart {
        file_name: format!("seats-{file}.svg"),
        svg: lines(
            &seats_title,
            "seats",
            seconds,
            &[
                ("seats in use", BLUE, floats(&level.seats_in_use)),
                (
                    "current limit",
                    RED,
                    level.current_limit.iter().map(|v| *v as f64).collect(),
                ),
                ("nominal", GREEN, constant(level.nominal)),
                ("lower", RGBColor(150, 150, 150), constant(level.lower)),
            ],
        )?,
        title: seats_title,
    }];
    if level.waiting.iter().any(|w| *w > 0) {
        charts.push(Chart {
            file_name: format!("queue-{file}.svg"),
            svg: lines(
                &queue_title,
                "requests",
                seconds,
                &[("waiting", MAGENTA, floats(&level.waiting))],
            )?,
            title: queue_title,
        });
    }
    if level.rejected.last().is_some_and(|r| *r > 0) {
        charts.push(Chart {
            file_name: format!("rejected-{file}.svg"),
            svg: lines(
                &rejected_title,
                "requests",
                seconds,
                &[("rejected", RED, floats(&level.rejected))],
            )?,
            title: rejected_title,
        });
    }
    Ok(charts)
}

/// The charts of a recorded report: per level that saw requests, its seats against its
/// limits over time, and its queues and rejections when it had any; per stream, its waits.
pub fn charts(timeline: &Timeline) -> Result<Vec<Chart>, Failure> {
    let mut out = Vec::new();
    for level in &timeline.levels {
        let active = level.seats_in_use.iter().any(|s| *s > 0)
            || level.waiting.iter().any(|w| *w > 0)
            || level.rejected.last().is_some_and(|r| *r > 0);
        if active {
            out.extend(level_charts(&timeline.seconds, level)?);
        }
    }
    for (index, stream) in timeline.streams.iter().enumerate() {
        let StreamWaits { name, buckets } = stream;
        let title = format!("{}: wait times", safe(name));
        out.push(Chart {
            file_name: format!("waits-{index}-{}.svg", file_part(name)),
            svg: waits(&title, buckets)?,
            title,
        });
    }
    Ok(out)
}

/// `text` for an HTML page.
fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The page: a title, the text report's tables and every chart, inline.
pub fn page(report: &Report, charts: &[Chart]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>apfkit simulate</title><style>\
         body{font-family:sans-serif;margin:2em;color:#222}\
         pre{background:#f6f6f6;padding:1em;overflow-x:auto}\
         figure{display:inline-block;margin:0.5em}</style></head><body>\n",
    );
    out.push_str(&format!(
        "<h1>apfkit simulate</h1>\n<p>Seed {}, {:.1} simulated seconds, {} requests.</p>\n\
         <h2>Summary</h2>\n<pre>{}</pre>\n<h2>Charts</h2>\n",
        report.seed,
        report.simulated_seconds,
        report.requests,
        html_text(&report.to_text())
    ));
    for chart in charts {
        out.push_str(&format!("<figure title=\"{}\">", html_text(&chart.title)));
        // plotters writes an SVG document; inline, it needs no XML declaration.
        let svg = chart
            .svg
            .trim_start_matches(|c| c != '<')
            .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
        out.push_str(svg.trim());
        out.push_str("</figure>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// Writes `bytes` to `path` whole or not at all: through a temporary file beside it.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let name = path.display().to_string();
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| Failure::output(&name, e))?;
    temporary
        .write_all(bytes)
        .and_then(|()| temporary.flush())
        .map_err(|e| Failure::output(&name, e))?;
    // A new file gets the usual mode, not the temporary file's 0600; a replaced one keeps
    // its own.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| Failure::output(&name, e))?;
    }
    temporary
        .persist(path)
        .map_err(|e| Failure::output(&name, e.error))?;
    Ok(())
}
