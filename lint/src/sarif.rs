//! A report as SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), for the
//! code-scanning tools of CI services: one run, every rule described in the tool's driver,
//! one result per finding with the file (a relative URI) and, as a logical location,
//! `Kind/name/field.path`. Documents have no line numbers here; a result's
//! `properties.document` says which document of the file (from 1).

use serde_json::{Value, json};

use crate::{Finding, RULES, Report};

/// The `$schema` of a SARIF 2.1.0 log.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// `path` as a relative URI reference: unreserved characters and `/` kept, the rest
/// percent-encoded byte by byte.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char);
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn result(finding: &Finding) -> Value {
    let rule_index = RULES.iter().position(|r| r.id == finding.rule.id);
    let logical = json!({
        "fullyQualifiedName": format!("{}/{}/{}", finding.kind, finding.name, finding.path),
        "kind": "member",
    });
    let mut location = json!({"logicalLocations": [logical]});
    let mut properties = json!({"kind": finding.kind, "name": finding.name, "path": finding.path});
    if let Some(source) = finding.source.as_ref().filter(|s| s.file != "-") {
        location["physicalLocation"] = json!({"artifactLocation": {"uri": uri(&source.file)}});
        if let Some(document) = source.document {
            properties["document"] = json!(document + 1);
        }
    }
    json!({
        "ruleId": finding.rule.id,
        "ruleIndex": rule_index,
        "level": finding.rule.severity.as_str(),
        "message": {"text": finding.message},
        "locations": [location],
        "properties": properties,
    })
}

/// The report as a SARIF log.
pub fn to_sarif(report: &Report, version: &str) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.explanation},
                "help": {"text": rule.explanation},
                "defaultConfiguration": {"level": rule.severity.as_str()},
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "apfkit lint",
                "version": version,
                "rules": rules,
            }},
            "results": report.findings.iter().map(result).collect::<Vec<_>>(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn paths_become_relative_uri_references() {
        assert_eq!(uri("apf/flow schemas.yaml"), "apf/flow%20schemas.yaml");
        assert_eq!(uri("a#b?c%"), "a%23b%3Fc%25");
        assert_eq!(uri("é"), "%C3%A9");
    }
}
