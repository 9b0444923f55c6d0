//! Configurations: duplicate names, and limits computed in 64 bits as kube-apiserver does.

use super::{apfkit, success};

fn level(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: {name}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 30
{extra}    limitResponse:
      type: Reject
---
"
    )
}

#[test]
fn duplicate_names_are_errors_in_every_configuration_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boot.yaml");
    std::fs::write(&file, success(&["bootstrap"], b"")).unwrap();
    let file = file.to_str().unwrap();
    for command in [
        vec!["limits"],
        vec![
            "explain",
            "--user",
            "u",
            "--verb",
            "get",
            "--resource",
            "pods",
        ],
        vec!["simulate"],
    ] {
        let mut args = command.clone();
        args.extend(["-f", file, "-f", file]);
        let output = apfkit(&args, b"");
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("PriorityLevelConfiguration/exempt: metadata.name: Duplicate value: \"exempt\": first defined at"),
            "{command:?}: {stderr}"
        );
    }
    let output = apfkit(&["validate", "-f", file, "-f", file], b"");
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Every object of the second copy is a duplicate.
    let objects = String::from_utf8_lossy(&success(&["bootstrap"], b""))
        .matches("\nkind: ")
        .count();
    assert_eq!(
        stdout.matches("Duplicate value").count(),
        objects,
        "{stdout}"
    );
    // One object in two versions is still one object.
    let twice = format!(
        "{}{}",
        level("p", ""),
        level("p", "").replace("/v1\n", "/v1beta3\n")
    );
    let output = apfkit(&["validate"], twice.as_bytes());
    assert!(String::from_utf8_lossy(&output.stdout).contains("Duplicate value: \"p\""));
}

/// kube-apiserver computes the limits in Go's 64-bit `int` and `float64`: the extremes of
/// valid objects overflow 32 bits.
#[test]
fn limits_at_the_extremes_match_64_bit_arithmetic() {
    let input = level(
        "wide",
        "    borrowingLimitPercent: 2147483647\n    lendablePercent: 100\n",
    );
    let out = success(
        &[
            "limits",
            "-f",
            "-",
            "--server-concurrency",
            "1000000",
            "-o",
            "json",
        ],
        input.as_bytes(),
    );
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let levels = report["priorityLevels"].as_array().unwrap();
    let wide = levels.iter().find(|l| l["name"] == "wide").unwrap();
    // shareSum = 30 + catch-all's 5 (exempt has 0): ceil(1e6 × 30 / 35) = 857143;
    // round(857143 × 2147483647 / 100) = 18407005756405 (checked with Python's floats).
    assert_eq!(wide["nominalCL"], 857143);
    assert_eq!(wide["borrowingCL"], 18_407_005_756_405_i64);
    assert_eq!(wide["maxCL"], 18_407_006_613_548_i64);
    assert_eq!(wide["lendableCL"], 857143);
    assert_eq!(wide["minCL"], 0);
}
