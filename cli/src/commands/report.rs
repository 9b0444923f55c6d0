//! What `apfkit simulate --report FILE`, `--plot DIR` and `apfkit status --report FILE`
//! write: charts of a recorded run as SVG (made with plotters), and one self-contained HTML
//! page (no script, no network) that opens with what matters (which flows queued or were
//! rejected, which levels were saturated or starved, what borrowing did), then real tables,
//! then each level's charts side by side on one time axis.

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

const WIDTH: u32 = 470;
const HEIGHT: u32 = 260;

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
        // Headroom above the highest value, more when the legend needs room there.
        let headroom = if series.len() > 1 { 1.6 } else { 1.1 };
        let top = series
            .iter()
            .flat_map(|(_, _, values)| values.iter().copied())
            .fold(1.0f64, f64::max)
            * headroom;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
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
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(200, 200, 200))
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
            .caption(title, ("sans-serif", 16))
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

/// The charts of a recorded run: per level that saw requests, its seats against its limits
/// over time, and its queues and rejections when it had any; per stream, its waits.
pub struct Charts {
    /// Per active level, by name, its charts (all on the same time axis).
    pub levels: Vec<(String, Vec<Chart>)>,
    /// Per stream, its waits.
    pub flows: Vec<Chart>,
}

impl Charts {
    /// Every chart, levels first.
    pub fn all(&self) -> impl Iterator<Item = &Chart> {
        self.levels
            .iter()
            .flat_map(|(_, charts)| charts)
            .chain(&self.flows)
    }
}

/// The charts of `timeline`.
pub fn charts(timeline: &Timeline) -> Result<Charts, Failure> {
    let mut levels = Vec::new();
    for level in &timeline.levels {
        let active = level.seats_in_use.iter().any(|s| *s > 0)
            || level.waiting.iter().any(|w| *w > 0)
            || level.rejected.last().is_some_and(|r| *r > 0);
        if active {
            levels.push((level.name.clone(), level_charts(&timeline.seconds, level)?));
        }
    }
    let mut flows = Vec::new();
    for (index, stream) in timeline.streams.iter().enumerate() {
        let StreamWaits { name, buckets } = stream;
        let title = format!("{}: wait times", safe(name));
        flows.push(Chart {
            file_name: format!("waits-{index}-{}.svg", file_part(name)),
            svg: waits(&title, buckets)?,
            title,
        });
    }
    Ok(Charts { levels, flows })
}

/// `text` for an HTML page.
fn html_text(text: &str) -> String {
    printable(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Requests were rejected.
    Bad,
    /// Requests waited, or a level ran out of seats.
    Warn,
    /// What borrowing did.
    Info,
    /// Nothing went wrong.
    Good,
}

impl Severity {
    fn class(self) -> &'static str {
        match self {
            Severity::Bad => "bad",
            Severity::Warn => "warn",
            Severity::Info => "info",
            Severity::Good => "good",
        }
    }
}

/// One line of a page's headline.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// How much it matters (the headline lists the worst first).
    pub severity: Severity,
    /// What was found, for a person.
    pub text: String,
}

/// A table of a page: a heading, a header row and rows of cells (numbers right-aligned).
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The heading above it.
    pub heading: String,
    /// The column names.
    pub header: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<String>>,
}

/// What a page shows: the simulation's (`apfkit simulate --report`) and a live cluster's
/// (`apfkit status --report`) are the same page with different sources.
pub struct Page<'a> {
    /// Its title.
    pub title: String,
    /// One line under the title: what was run or sampled.
    pub summary: String,
    /// What matters, worst first.
    pub findings: Vec<Finding>,
    /// The tables, in order.
    pub tables: Vec<Table>,
    /// The charts.
    pub charts: &'a Charts,
    /// A preformatted appendix, folded: its title and text.
    pub appendix: Option<(String, String)>,
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1500px;\
padding:1.5em 2em;color:#1f2328;background:#fff}\
h1{margin:0 0 .2em;font-size:1.7em}h2{margin:1.6em 0 .6em;font-size:1.25em;\
border-bottom:1px solid #d0d7de;padding-bottom:.3em}h3{margin:1em 0 .4em;font-size:1.05em}\
.summary{color:#57606a;margin:0}\
ul.findings{list-style:none;padding:0;margin:0}\
ul.findings li{margin:.35em 0;padding:.55em .9em;border-left:5px solid;border-radius:4px}\
li.bad{border-color:#cf222e;background:#ffebe9}li.warn{border-color:#bf8700;background:#fff8c5}\
li.info{border-color:#0969da;background:#ddf4ff}li.good{border-color:#1a7f37;background:#dafbe1}\
table{border-collapse:collapse;font-size:.92em;margin-bottom:1em}\
th,td{padding:.3em .7em;border-bottom:1px solid #d8dee4;text-align:left;white-space:nowrap}\
th{background:#f6f8fa;position:sticky;top:0}td.n,th.n{text-align:right;\
font-variant-numeric:tabular-nums}tbody tr:nth-child(even){background:#fafbfc}\
.charts{display:flex;flex-wrap:wrap;gap:.5em}figure{margin:0}\
figure svg{display:block;border:1px solid #eaeef2;border-radius:4px}\
details{margin-top:2em}pre{background:#f6f8fa;padding:1em;overflow-x:auto;font-size:.85em}";

/// Whether a cell reads as a number (right-aligned).
fn numeric(cell: &str) -> bool {
    let cell = cell.trim_end_matches('%').trim_end_matches(" ms");
    !cell.is_empty() && (cell == "-" || cell.parse::<f64>().is_ok())
}

fn table_html(table: &Table) -> String {
    let mut out = format!("<h2>{}</h2>\n<table><thead><tr>", html_text(&table.heading));
    let numeric_columns: Vec<bool> = (0..table.header.len())
        .map(|column| {
            table
                .rows
                .iter()
                .all(|row| row.get(column).is_some_and(|cell| numeric(cell)))
                && !table.rows.is_empty()
        })
        .collect();
    for (name, numeric) in table.header.iter().zip(&numeric_columns) {
        let class = if *numeric { " class=\"n\"" } else { "" };
        out.push_str(&format!("<th{class}>{}</th>", html_text(name)));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (column, cell) in row.iter().enumerate() {
            let class = if numeric_columns.get(column).copied().unwrap_or(false) {
                " class=\"n\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", html_text(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

fn figure(chart: &Chart) -> String {
    // plotters writes an SVG document; inline, it needs no XML declaration.
    let svg = chart
        .svg
        .trim_start_matches(|c| c != '<')
        .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    format!(
        "<figure title=\"{}\">{}</figure>\n",
        html_text(&chart.title),
        svg.trim()
    )
}

/// The page: its headline first, then the tables, every level's charts side by side on one
/// time axis, the flows' waits, and the appendix folded; one file, no script, nothing loaded.
pub fn page(page: &Page<'_>) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n\
         <header><h1>{title}</h1><p class=\"summary\">{summary}</p></header>\n\
         <h2>What matters</h2>\n<ul class=\"findings\">\n",
        title = html_text(&page.title),
        summary = html_text(&page.summary),
    );
    let mut findings = page.findings.clone();
    findings.sort_by_key(|f| f.severity as u8);
    for finding in &findings {
        out.push_str(&format!(
            "<li class=\"{}\">{}</li>\n",
            finding.severity.class(),
            html_text(&finding.text)
        ));
    }
    out.push_str("</ul>\n");
    for table in &page.tables {
        out.push_str(&table_html(table));
    }
    if !page.charts.levels.is_empty() {
        out.push_str("<h2>Priority levels over time</h2>\n");
        for (name, charts) in &page.charts.levels {
            out.push_str(&format!(
                "<section><h3>{}</h3><div class=\"charts\">\n",
                html_text(name)
            ));
            for chart in charts {
                out.push_str(&figure(chart));
            }
            out.push_str("</div></section>\n");
        }
    }
    if !page.charts.flows.is_empty() {
        out.push_str("<h2>Wait times per flow</h2>\n<div class=\"charts\">\n");
        for chart in &page.charts.flows {
            out.push_str(&figure(chart));
        }
        out.push_str("</div>\n");
    }
    if let Some((title, text)) = &page.appendix {
        out.push_str(&format!(
            "<details><summary>{}</summary><pre>{}</pre></details>\n",
            html_text(title),
            html_text(text)
        ));
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

/// What borrowing did and which levels starved, read off the samples of `timeline` (what the
/// charts draw): a level borrowed when its current limit rose above its nominal one, lent when
/// it fell below, and starved when its requests waited or were rejected while it had lent.
pub fn timeline_findings(timeline: &Timeline) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut lenders = Vec::new();
    for level in timeline.levels.iter().filter(|level| !level.exempt) {
        let nominal = level.nominal;
        let lowest = level.current_limit.iter().copied().min().unwrap_or(nominal);
        // Borrowing did something when the level used seats beyond its nominal limit.
        let used_beyond = level
            .seats_in_use
            .iter()
            .zip(&level.current_limit)
            .map(|(used, limit)| (*used).min(limit.unsigned_abs()))
            .max()
            .unwrap_or(0)
            .saturating_sub(nominal.unsigned_abs());
        if used_beyond > 0 {
            let highest = level.current_limit.iter().copied().max().unwrap_or(nominal);
            findings.push(Finding {
                severity: Severity::Info,
                text: format!(
                    "{} used up to {used_beyond} borrowed seats beyond its nominal {nominal} \
                     (its limit rose to {highest}).",
                    level.name
                ),
            });
        }
        if lowest < nominal {
            lenders.push(format!("{} up to {}", level.name, nominal - lowest));
        }
        let starved = (0..level.current_limit.len()).any(|i| {
            let rejected_now = i > 0 && level.rejected[i] > level.rejected[i - 1];
            (level.waiting[i] > 0 || rejected_now) && level.current_limit[i] < nominal
        });
        if starved {
            findings.push(Finding {
                severity: Severity::Bad,
                text: format!(
                    "{} was starved: its requests waited or were rejected while it had lent seats \
                     (its limit down to {lowest} of a nominal {nominal}).",
                    level.name
                ),
            });
        }
    }
    if !lenders.is_empty() {
        findings.push(Finding {
            severity: Severity::Info,
            text: format!("Seats lent: {}.", lenders.join(", ")),
        });
    }
    findings
}

fn milliseconds(ms: f64) -> String {
    format!("{ms:.1}")
}

fn rejected_text(rejected: &apfkit_dispatcher::sim::server::Rejections) -> String {
    [
        ("queue-full", rejected.queue_full),
        ("concurrency-limit", rejected.concurrency_limit),
        ("time-out", rejected.time_out),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(reason, n)| format!("{reason} {n}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// A level is saturated when it used this share of the seat-seconds its limit offered.
const SATURATED: f64 = 0.9;

/// The page of a recorded simulation.
pub fn simulation_page<'a>(report: &Report, timeline: &Timeline, charts: &'a Charts) -> Page<'a> {
    let mut findings = Vec::new();
    for stream in &report.streams {
        let figures = &stream.figures;
        let rejected = figures.rejected.total();
        let route = format!(
            "{} ({} → {})",
            stream.name, stream.flow_schema, stream.priority_level
        );
        if rejected > 0 {
            findings.push(Finding {
                severity: Severity::Bad,
                text: format!(
                    "{route}: {rejected} of {} requests rejected ({}).",
                    rejected + figures.executed,
                    rejected_text(&figures.rejected)
                ),
            });
        }
        if figures.wait_max_ms >= 1.0 {
            findings.push(Finding {
                severity: Severity::Warn,
                text: format!(
                    "{route} queued: waits p50 {} ms, p99 {} ms, longest {} ms.",
                    milliseconds(figures.wait_p50_ms),
                    milliseconds(figures.wait_p99_ms),
                    milliseconds(figures.wait_max_ms)
                ),
            });
        }
    }
    for level in &report.priority_levels {
        if let Some(utilization) = level.utilization.filter(|u| *u >= SATURATED) {
            findings.push(Finding {
                severity: Severity::Warn,
                text: format!(
                    "{} was saturated: it used {:.0}% of the seat-seconds its limit offered.",
                    level.name,
                    utilization * 100.0
                ),
            });
        }
    }
    if !findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Bad | Severity::Warn))
    {
        findings.push(Finding {
            severity: Severity::Good,
            text: "No flow queued or was rejected, and no level ran out of seats.".to_owned(),
        });
    }
    findings.extend(timeline_findings(timeline));
    let levels = Table {
        heading: "Priority levels".to_owned(),
        header: [
            "Level",
            "Nominal",
            "Current",
            "Average limit",
            "Utilization",
            "Executed",
            "Rejected",
            "Wait p50 ms",
            "Wait p99 ms",
            "Average seats",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: report
            .priority_levels
            .iter()
            .map(|level| {
                let f = &level.figures;
                vec![
                    level.name.clone(),
                    level.nominal_cl.to_string(),
                    level.current_cl.to_string(),
                    format!("{:.1}", level.average_limit),
                    level
                        .utilization
                        .map_or("-".to_owned(), |u| format!("{:.1}%", u * 100.0)),
                    f.executed.to_string(),
                    f.rejected.total().to_string(),
                    milliseconds(f.wait_p50_ms),
                    milliseconds(f.wait_p99_ms),
                    format!("{:.2}", f.average_seats),
                ]
            })
            .collect(),
    };
    let flows = Table {
        heading: "Flows".to_owned(),
        header: [
            "Stream",
            "FlowSchema",
            "Level",
            "Seats",
            "Executed",
            "Rejected",
            "Wait p50 ms",
            "Wait p90 ms",
            "Wait p99 ms",
            "Longest wait ms",
            "Average seats",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: report
            .streams
            .iter()
            .map(|stream| {
                let f = &stream.figures;
                vec![
                    stream.name.clone(),
                    stream.flow_schema.clone(),
                    stream.priority_level.clone(),
                    stream.seats.to_string(),
                    f.executed.to_string(),
                    f.rejected.total().to_string(),
                    milliseconds(f.wait_p50_ms),
                    milliseconds(f.wait_p90_ms),
                    milliseconds(f.wait_p99_ms),
                    milliseconds(f.wait_max_ms),
                    format!("{:.2}", f.average_seats),
                ]
            })
            .collect(),
    };
    Page {
        title: "apfkit simulate".to_owned(),
        summary: format!(
            "{:.1} simulated seconds, {} requests, seed {}. Utilization is seat-seconds used \
             over seat-seconds offered, integrated by the simulator over the arrival period.",
            report.simulated_seconds, report.requests, report.seed
        ),
        findings,
        tables: vec![levels, flows],
        charts,
        appendix: Some((
            "dump_priority_levels at the end of arrivals".to_owned(),
            report.dump_priority_levels.clone(),
        )),
    }
}
