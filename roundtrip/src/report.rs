//! What a check found, for a person (grouped by versions and path), as JSON, and as SARIF
//! 2.1.0 for CI.

use std::fmt::Write as _;

use apfkit_apiextensions::webhook::Exchange;
use apfkit_crd::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::diff::Difference;

/// What a check found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The CRD's name.
    pub crd: String,
    /// The served versions, in the CRD's order.
    pub versions: Vec<String>,
    /// The seed the objects came from.
    pub seed: u64,
    /// Objects generated and admitted by their version, all versions together.
    pub generated: usize,
    /// Objects generated that their version's schema refused (never sent).
    pub refused_by_schema: usize,
    /// Conversions asked for (reviews, for a webhook).
    pub reviews: usize,
    /// Objects sent to be converted.
    pub objects_sent: usize,
    /// Whether the time limit stopped the check before it was done.
    pub timed_out: bool,
    /// What it found, in the order found.
    pub findings: Vec<Finding>,
}

/// One thing found.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The version the object was generated in.
    pub from: String,
    /// The version it went through.
    pub via: String,
    /// The version it was compared in.
    pub to: String,
    /// What kind of thing.
    pub problem: Problem,
    /// The field, for a loss or a path that differs.
    pub difference: Option<Difference>,
    /// In words.
    pub message: String,
    /// The object that shows it, as sent (the smallest found, for a loss).
    pub object: Value,
    /// The review sent and the answer got, through a webhook: of the refused conversion, or
    /// of the last conversion of the smallest object that shows a loss.
    pub exchange: Option<Exchange>,
}

/// What kind of thing a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A field lost, changed or added by a round trip `from` → `via` → `from`.
    Loss,
    /// `from` → `via` → `to` differs from `from` → `to`.
    Path,
    /// The object converted to `via` is invalid there: a client of `via` could not write it
    /// back.
    Invalid,
    /// The conversion failed, or its answer is one kube-apiserver refuses.
    Refused,
}

impl Problem {
    /// Its rule's name in JSON and SARIF.
    pub fn rule(self) -> &'static str {
        match self {
            Problem::Loss => "round-trip-loss",
            Problem::Path => "path-dependent-conversion",
            Problem::Invalid => "converted-object-invalid",
            Problem::Refused => "conversion-refused",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Problem::Loss => {
                "A field does not survive a conversion to another version and back: a client of the other version that writes the object back loses it."
            }
            Problem::Path => {
                "Converting through an intermediate version gives another object than converting directly."
            }
            Problem::Invalid => {
                "The converted object breaks the target version's schema: a client of that version cannot write it back."
            }
            Problem::Refused => {
                "The conversion failed, or answered what kube-apiserver refuses: reads of the object in that version fail."
            }
        }
    }
}

impl Report {
    pub(crate) fn new(crd: &CustomResourceDefinition, seed: u64) -> Self {
        Report {
            crd: crd.name.clone(),
            versions: crd
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| v.name.clone())
                .collect(),
            seed,
            generated: 0,
            refused_by_schema: 0,
            reviews: 0,
            objects_sent: 0,
            timed_out: false,
            findings: Vec::new(),
        }
    }

    /// Whether nothing was found (and the check ran to its end).
    pub fn clean(&self) -> bool {
        self.findings.is_empty() && !self.timed_out
    }

    /// The report for a person: each finding under its versions, with its object.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: versions {}, seed {}: {} objects checked ({} refused by their own schema), {} conversions of {} objects",
            self.crd,
            self.versions.join(", "),
            self.seed,
            self.generated,
            self.refused_by_schema,
            self.reviews,
            self.objects_sent
        );
        let mut groups: Vec<(String, Vec<&Finding>)> = Vec::new();
        for finding in &self.findings {
            let route = route(finding);
            match groups.iter_mut().find(|(r, _)| *r == route) {
                Some((_, findings)) => findings.push(finding),
                None => groups.push((route, vec![finding])),
            }
        }
        for (route, findings) in &groups {
            let _ = writeln!(out, "\n{route}:");
            for finding in findings {
                let _ = writeln!(out, "  {}: {}", finding.problem.rule(), finding.message);
                if let Some(d) = &finding.difference {
                    let show = |v: &Option<Value>| {
                        v.as_ref().map_or("(absent)".to_owned(), Value::to_string)
                    };
                    let _ = writeln!(out, "    sent {}, got {}", show(&d.before), show(&d.after));
                }
                let _ = writeln!(out, "    object: {}", finding.object);
            }
        }
        if self.timed_out {
            let _ = writeln!(
                out,
                "\nstopped at the time limit: not every version was checked"
            );
        }
        let _ = writeln!(
            out,
            "\n{}",
            if self.findings.is_empty() {
                "nothing lost".to_owned()
            } else {
                format!("{} found", self.findings.len())
            }
        );
        out
    }

    /// The report as JSON: the counts and each finding with its object and exchange.
    pub fn json(&self) -> Value {
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                let mut value = json!({
                    "rule": f.problem.rule(), "from": f.from, "via": f.via, "to": f.to,
                    "message": f.message, "object": f.object,
                });
                if let Some(d) = &f.difference {
                    value["path"] = json!(d.path);
                    value["change"] = json!(d.change.word());
                    value["sent"] = d.before.clone().unwrap_or(Value::Null);
                    value["got"] = d.after.clone().unwrap_or(Value::Null);
                }
                if let Some(exchange) = &f.exchange {
                    value["review"] = exchange.review.clone();
                    value["answer"] = json!(String::from_utf8_lossy(&exchange.answer));
                }
                value
            })
            .collect();
        json!({
            "crd": self.crd, "versions": self.versions, "seed": self.seed,
            "generated": self.generated, "refusedBySchema": self.refused_by_schema,
            "reviews": self.reviews, "objectsSent": self.objects_sent,
            "timedOut": self.timed_out, "clean": self.clean(), "findings": findings,
        })
    }

    /// The report as SARIF 2.1.0, each finding a result located in `file` (the CRD's).
    pub fn sarif(&self, file: &str) -> Value {
        let problems = [
            Problem::Loss,
            Problem::Path,
            Problem::Invalid,
            Problem::Refused,
        ];
        let rules: Vec<Value> = problems
            .iter()
            .map(|p| json!({"id": p.rule(), "shortDescription": {"text": p.description()}}))
            .collect();
        let results: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                let place = f.difference.as_ref().map_or("", |d| d.path.as_str());
                json!({
                    "ruleId": f.problem.rule(), "level": "error",
                    "message": {"text": format!("{}: {}", self.crd, f.message)},
                    "locations": [{
                        "physicalLocation": {"artifactLocation": {"uri": file}},
                        "logicalLocations": [{"fullyQualifiedName": format!("{}{place}", route(f)), "kind": "member"}],
                    }],
                    "properties": {"object": f.object},
                })
            })
            .collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "apfkit crd check-conversion",
                "informationUri": "https://docs.rs/apfkit-roundtrip", "rules": rules}},
                "results": results}],
        })
    }
}

/// `v1 → v2 → v1`, or `v1 → v2` for what happened on the way there.
fn route(finding: &Finding) -> String {
    if finding.via == finding.to {
        format!("{} → {}", finding.from, finding.via)
    } else {
        format!("{} → {} → {}", finding.from, finding.via, finding.to)
    }
}
