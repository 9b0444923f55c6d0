//! `apfkit status --report FILE`: the sampled run drawn as the simulation's page is drawn
//! (`super::super::report`), from the readings themselves: each level's seats in use against
//! its limits, its queues and its rejections over the interval, on one time axis.

use apfkit_dispatcher::sim::server::{LevelTimeline, Timeline};

use super::sample::Reading;
use super::summary::LevelStatus;
use crate::commands::report::{Charts, Finding, Page, Severity, Table, timeline_findings};

/// The readings, taken at `seconds` since the first, as a timeline of every level of the last
/// reading. A level whose upper limit is 0 is taken for exempt (an exempt level neither lends
/// nor borrows; every Limited level may borrow).
pub fn timeline(readings: &[(f64, Reading)]) -> Timeline {
    let names: Vec<String> = readings
        .last()
        .map(|(_, last)| last.keys().cloned().collect())
        .unwrap_or_default();
    let levels = names
        .into_iter()
        .map(|name| {
            let series: Vec<_> = readings
                .iter()
                .map(|(_, reading)| reading.get(&name).cloned().unwrap_or_default())
                .collect();
            let end = series.last().cloned().unwrap_or_default();
            let rejected_total = |r: &super::sample::LevelReading| r.rejected.values().sum::<f64>();
            let first_rejected = series.first().map(rejected_total).unwrap_or(0.0);
            LevelTimeline {
                exempt: end.upper_limit == 0.0,
                nominal: end.nominal_limit.round() as i64,
                lower: end.lower_limit.round() as i64,
                upper: end.upper_limit.round() as i64,
                seats_in_use: series
                    .iter()
                    .map(|r| r.executing_seats.max(0.0).round() as u64)
                    .collect(),
                current_limit: series
                    .iter()
                    .map(|r| r.current_limit.round() as i64)
                    .collect(),
                waiting: series
                    .iter()
                    .map(|r| r.waiting_requests.max(0.0).round() as u64)
                    .collect(),
                // Counted from the first reading (a counter that went back, a restart,
                // counts from its new value).
                rejected: series
                    .iter()
                    .scan((first_rejected, 0.0), |(before, total), r| {
                        let now = rejected_total(r);
                        *total += if now >= *before { now - *before } else { now };
                        *before = now;
                        Some(total.round() as u64)
                    })
                    .collect(),
                name,
            }
        })
        .collect();
    Timeline {
        seconds: readings.iter().map(|(seconds, _)| *seconds).collect(),
        levels,
        streams: Vec::new(),
    }
}

/// The page of a sampled run of `seconds`.
pub fn page<'a>(
    levels: &[LevelStatus],
    timeline: &Timeline,
    charts: &'a Charts,
    seconds: f64,
) -> Page<'a> {
    let mut findings = Vec::new();
    for level in levels {
        let rejected: f64 = level.rejected.values().sum();
        if rejected > 0.0 {
            let reasons: Vec<String> = level
                .rejected
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            findings.push(Finding {
                severity: Severity::Bad,
                text: format!(
                    "{}: {rejected} requests rejected during the run ({}).",
                    level.name,
                    reasons.join(", ")
                ),
            });
        }
        if level.waiting_requests.max > 0.0 {
            findings.push(Finding {
                severity: Severity::Warn,
                text: format!(
                    "{}: up to {} requests waited in its queues; wait p99 {}.",
                    level.name,
                    level.waiting_requests.max,
                    level
                        .wait_p99_seconds
                        .map_or("unknown".to_owned(), |s| format!("{:.3} s", s))
                ),
            });
        }
        if level.saturated {
            findings.push(Finding {
                severity: Severity::Warn,
                text: format!(
                    "{} was saturated: seats in use reached its current limit.",
                    level.name
                ),
            });
        }
    }
    if findings.is_empty() {
        findings.push(Finding {
            severity: Severity::Good,
            text: "No request waited or was rejected, and no level ran out of seats.".to_owned(),
        });
    }
    findings.extend(timeline_findings(timeline));
    let table = Table {
        heading: "Priority levels".to_owned(),
        header: [
            "Level",
            "Seats mean",
            "Seats max",
            "Current limit mean",
            "Nominal",
            "Lower",
            "Upper",
            "Waiting max",
            "Dispatched",
            "Rejected",
            "Wait p99 s",
            "Lending",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: levels
            .iter()
            .map(|level| {
                vec![
                    level.name.clone(),
                    format!("{:.1}", level.executing_seats.mean),
                    level.executing_seats.max.to_string(),
                    format!("{:.1}", level.current_limit.mean),
                    level.nominal_limit.to_string(),
                    level.lower_limit.to_string(),
                    level.upper_limit.to_string(),
                    level.waiting_requests.max.to_string(),
                    level.dispatched.to_string(),
                    level.rejected.values().sum::<f64>().to_string(),
                    level
                        .wait_p99_seconds
                        .map_or("-".to_owned(), |s| format!("{s:.3}")),
                    level.lending.to_owned(),
                ]
            })
            .collect(),
    };
    Page {
        title: "apfkit status".to_owned(),
        summary: format!(
            "{} samples over {seconds:.1} s of a live server's /metrics and \
             dump_priority_levels. Counters count what happened during the run.",
            timeline.seconds.len()
        ),
        findings,
        tables: vec![table],
        charts,
        appendix: None,
    }
}
