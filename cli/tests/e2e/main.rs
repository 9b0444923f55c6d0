//! End-to-end behaviour of the `apfkit` binary, in one test binary: migrations through every
//! version, validation of the bootstrap configuration, all-or-nothing output, and no panic on
//! any input; the modules test the snapshot cases of every command (`commands`), files and
//! special files, hostile input, protobuf, etcd, configurations and simulations.

mod apply;
mod check_conversion;
mod commands;
mod configuration;
mod files;
mod go_json;
mod hostile;
#[path = "../load/mod.rs"]
mod load;
mod migrate_api;
mod protobuf;
mod replay;
mod serve;
mod serve_apply;
mod serve_audit;
mod serve_auth;
mod serve_clients;
mod serve_crd_openapi;
mod serve_crds;
mod serve_fairness;
mod serve_flow_control;
mod serve_http;
mod serve_rbac;
mod serve_replicas;
mod serve_services;
mod serve_upstream_e2e;
mod simulate;
mod storage;
mod validate_crd;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use apfkit_tests::flowcontrol_versions;
use proptest::prelude::*;

/// Runs the binary with `args`, feeding `stdin`.
pub fn apfkit(args: &[&str], stdin: &[u8]) -> Output {
    apfkit_within(args, stdin, Duration::from_secs(300))
}

/// Runs the binary with `args`, feeding `stdin`; kills it and fails the test if it has not
/// finished after `limit`.
pub fn apfkit_within(args: &[&str], stdin: &[u8], limit: Duration) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
    command.args(args);
    run_within(command, stdin, limit, |_| {})
}

/// Runs the binary with `args` under an address-space limit of `limit_mib` MiB (util-linux's
/// `prlimit`, so that a regression fails instead of taking the machine's memory), and returns
/// its output and its peak resident memory in MiB (`VmHWM`, sampled until it exits).
pub fn apfkit_peak(args: &[&str], limit_mib: u64) -> (Output, u64) {
    let mut command = Command::new("prlimit");
    command
        .arg(format!("--as={}", limit_mib << 20))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_apfkit"))
        .args(args);
    let mut peak_kib = 0;
    let output = run_within(command, b"", Duration::from_secs(300), |pid| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
        peak_kib = peak_kib.max(kib.unwrap_or(0));
    });
    (output, peak_kib >> 10)
}

pub use apfkit_test_support::process::run_within;

/// Runs the binary and returns its standard output, failing the test if it failed.
pub fn success(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let output = apfkit(args, stdin);
    assert!(
        output.status.success(),
        "apfkit {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn bootstrap_in_any_version_converts_to_the_v1_bootstrap() {
    let v1 = success(&["bootstrap", "--to", "v1"], b"");
    for version in flowcontrol_versions() {
        let old = success(&["bootstrap", "--to", version], b"");
        let converted = success(&["convert", "--to", "v1"], &old);
        assert_eq!(
            String::from_utf8_lossy(&converted),
            String::from_utf8_lossy(&v1),
            "bootstrap --to {version} | convert --to v1"
        );
    }
}

/// Issue 41, item 3: `--kubernetes-version` picks a release's bootstrap configuration
/// (kubernetes-1.33.0's `SuggestedFlowSchemas` has `endpoint-controller` and
/// `workload-leader-election`; kubernetes-1.34.0's does not), for `bootstrap` and for the
/// default configuration of `explain` and `lint --with-bootstrap`.
#[test]
fn each_release_has_its_bootstrap_configuration() {
    let names = |release: &str| -> Vec<String> {
        let json = success(
            &["bootstrap", "--kubernetes-version", release, "-o", "json"],
            b"",
        );
        serde_json::Deserializer::from_slice(&json)
            .into_iter::<serde_json::Value>()
            .map(|o| o.unwrap())
            .filter(|o| o["kind"] == "FlowSchema")
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let old = names("1.33");
    let new = names("1.34");
    assert_eq!(names("v1.36.1"), new);
    assert_eq!(old.len(), new.len() + 2);
    let at = |name: &str| old.iter().position(|n| n == name).unwrap();
    assert!(at("system-leader-election") < at("endpoint-controller"));
    assert!(at("endpoint-controller") < at("workload-leader-election"));
    assert!(at("workload-leader-election") < at("system-node-high"));
    // The old ones validate as any object does.
    let objects = success(&["bootstrap", "--kubernetes-version", "1.33"], b"");
    assert!(apfkit(&["validate"], &objects).status.success());

    // A kube-system service account updating a ConfigMap: leader election in 1.33 only.
    let explain = |release: &str| {
        String::from_utf8(success(
            &[
                "explain",
                "--kubernetes-version",
                release,
                "--user",
                "system:serviceaccount:kube-system:foo",
                "--group",
                "system:serviceaccounts",
                "--group",
                "system:serviceaccounts:kube-system",
                "--group",
                "system:authenticated",
                "--verb",
                "update",
                "--resource",
                "configmaps",
                "--namespace",
                "kube-system",
            ],
            b"",
        ))
        .unwrap()
    };
    assert!(explain("1.33").starts_with("FlowSchema:     workload-leader-election\n"));
    assert!(explain("1.34").starts_with("FlowSchema:     kube-system-service-accounts\n"));

    // lint --with-bootstrap adds the release's objects: a schema of precedence 180 for
    // kube-system's service accounts' endpoints is shadowed by 1.33's endpoint-controller only.
    let shadowed = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: mine}\nspec:\n  priorityLevelConfiguration: {name: workload-high}\n  matchingPrecedence: 180\n  rules:\n  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: kube-system, name: endpoint-controller}}]\n    resourceRules: [{verbs: [get], apiGroups: [\"\"], resources: [endpoints], namespaces: [\"*\"]}]\n";
    let lint = |release: &str| {
        let output = apfkit(
            &["lint", "--with-bootstrap", "--kubernetes-version", release],
            shadowed.as_bytes(),
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert!(
        lint("1.33").contains("endpoint-controller"),
        "{}",
        lint("1.33")
    );
    assert!(
        !lint("1.34").contains("endpoint-controller"),
        "{}",
        lint("1.34")
    );

    let refused = apfkit(&["bootstrap", "--kubernetes-version", "1.31"], b"");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("apfkit models 1.33–1.37"));
}

#[test]
fn the_bootstrap_configuration_validates_in_every_version() {
    for version in flowcontrol_versions() {
        let objects = success(&["bootstrap", "--to", version], b"");
        let output = apfkit(&["validate"], &objects);
        assert!(
            output.status.success(),
            "{version}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(
            output.stdout.is_empty() && output.stderr.is_empty(),
            "{version}"
        );
    }
}

/// A valid PriorityLevelConfiguration in YAML.
pub const GOOD: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata:
  name: ok
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse:
      type: Reject
";

const BAD_SECOND_DOCUMENT: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata:
  name: ok
spec:
  type: Limited
---
apiVersion: flowcontrol.apiserver.k8s.io/v9
kind: PriorityLevelConfiguration
";

#[test]
fn output_files_are_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.yaml");
    std::fs::write(&input, BAD_SECOND_DOCUMENT).unwrap();
    let out = dir.path().join("out.yaml");
    let args = [
        "convert",
        "-f",
        input.to_str().unwrap(),
        "--to",
        "v1",
        "--output-file",
        out.to_str().unwrap(),
    ];
    let output = apfkit(&args, b"");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("in.yaml: document 2: "), "{stderr}");
    assert!(!out.exists(), "nothing is written when a document fails");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file is left"
    );
    // The same with a good input writes the file.
    std::fs::write(&input, GOOD).unwrap();
    success(&args, b"");
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("flowcontrol.apiserver.k8s.io/v1\n")
    );
}

#[test]
fn in_place_conversion_changes_no_file_when_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.yaml");
    let second = dir.path().join("b.yaml");
    std::fs::write(&first, GOOD).unwrap();
    std::fs::write(&second, BAD_SECOND_DOCUMENT).unwrap();
    let args = [
        "convert",
        "-f",
        dir.path().to_str().unwrap(),
        "--to",
        "v1",
        "--in-place",
    ];
    let output = apfkit(&args, b"");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&first).unwrap(),
        GOOD,
        "a.yaml is untouched"
    );
    assert_eq!(
        std::fs::read_to_string(&second).unwrap(),
        BAD_SECOND_DOCUMENT
    );
    // Once b.yaml is fixed, both are rewritten.
    std::fs::write(&second, GOOD).unwrap();
    success(&args, b"");
    for file in [&first, &second] {
        assert!(
            std::fs::read_to_string(file)
                .unwrap()
                .starts_with("apiVersion: flowcontrol.apiserver.k8s.io/v1\n")
        );
    }
}

/// Runs a command on `input` given as a file and checks it ends without a panic, with exit
/// code 0 or 1.
fn no_panic(args: &[&str], input: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let file = dir.join("input.yaml");
    std::fs::write(&file, input).unwrap();
    let file = file.to_str().unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "FILE" { file } else { a })
        .collect();
    let output = apfkit(&args, input);
    let stderr = String::from_utf8_lossy(&output.stderr);
    prop_assert!(
        !stderr.contains("panicked"),
        "apfkit {:?} panicked: {}",
        args,
        stderr
    );
    prop_assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "apfkit {:?}: {:?} {}",
        args,
        output.status,
        stderr
    );
    Ok(())
}

const COMMANDS: [&[&str]; 8] = [
    &["convert", "--to", "v1"],
    &["convert", "-f", "FILE", "--to", "v1beta1", "-o", "json"],
    &["default"],
    &["validate", "-f", "FILE"],
    &[
        "explain",
        "-f",
        "FILE",
        "--user",
        "u",
        "--verb",
        "get",
        "--resource",
        "pods",
    ],
    &["limits", "-f", "FILE"],
    &["versions", "-f", "FILE"],
    &["simulate", "--workload", "FILE"],
];

fn inputs() -> impl Strategy<Value = Vec<u8>> {
    let valid = [
        GOOD.to_owned(),
        BAD_SECOND_DOCUMENT.to_owned(),
        String::from_utf8(success(
            &["bootstrap", "--mandatory-only", "-o", "json"],
            b"",
        ))
        .unwrap(),
        apfkit_dispatcher::sim::workload::DEFAULT_WORKLOAD.to_owned(),
    ];
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        (
            proptest::sample::select(valid.to_vec()),
            any::<prop::sample::Index>()
        )
            .prop_map(|(text, cut)| text.as_bytes()[..cut.index(text.len() + 1)].to_vec()),
        (
            proptest::sample::select(valid.to_vec()),
            any::<prop::sample::Index>(),
            any::<u8>()
        )
            .prop_map(|(text, at, byte)| {
                let mut bytes = text.into_bytes();
                let i = at.index(bytes.len());
                bytes[i] = byte;
                bytes
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_command_panics_on_random_or_truncated_input(input in inputs(), command in 0..COMMANDS.len()) {
        let dir = tempfile::tempdir().unwrap();
        no_panic(COMMANDS[command], &input, dir.path())?;
    }
}

/// Help examples are whole commands at any terminal width: no example line is wrapped.
#[test]
fn help_examples_are_never_wrapped() {
    let commands = [
        "convert",
        "default",
        "validate",
        "bootstrap",
        "explain",
        "limits",
        "simulate",
        "schema",
        "versions",
    ];
    for command in commands {
        for columns in ["40", "80", "200"] {
            let output = Command::new(env!("CARGO_BIN_EXE_apfkit"))
                .args([command, "--help"])
                .env("COLUMNS", columns)
                .output()
                .unwrap();
            let help = String::from_utf8(output.stdout).unwrap();
            let lines: Vec<&str> = help.lines().collect();
            let start = lines
                .iter()
                .position(|l| *l == "Examples:")
                .expect("examples");
            let examples: Vec<&str> = lines[start + 1..]
                .iter()
                .take_while(|l| !l.is_empty())
                .copied()
                .collect();
            assert!(!examples.is_empty(), "{command}");
            for line in examples {
                // Each example is one command line (a pipeline may start with another tool).
                let whole = line.starts_with("  ")
                    && line.contains("apfkit ")
                    && !line.ends_with(['|', '\\']);
                assert!(whole, "{command} at {columns} columns: {line:?}");
            }
        }
    }
}
