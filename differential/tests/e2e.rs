//! Upstream's e2e tests (issue 55, part 3): `e2e.test` (built by `reference/build` from
//! `reference/e2e`, upstream's main with the sig-api-machinery suites) runs a selection of
//! `[sig-api-machinery]` first against the reference kube-apiserver with
//! kube-controller-manager (the control run: each test of the selection passes there), then
//! against apfkit's server, where each must end as `SELECTION` records: pass, or fail with
//! the message recorded. docs/conformance.md lists the whole selection.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use apfkit_server::Config;
use apfkit_test_support::process::run_within;
use apfkit_test_support::reference::{KubeApiserver, binary};
use serde_json::Value;

/// The tests run (fast on the reference, about the kinds apfkit serves), by the end of their
/// names, each with how it ends on apfkit's server: `None` when it passes there, else the
/// start of its failure's message. Each passes on the reference.
const SELECTION: &[(&str, Option<&str>)] = &[
    (
        "API priority and fairness should support FlowSchema API operations [Conformance]",
        None,
    ),
    (
        "API priority and fairness should support PriorityLevelConfiguration API operations \
         [Conformance]",
        None,
    ),
    (
        "API priority and fairness should ensure that requests can be classified by adding \
         FlowSchema and PriorityLevelConfiguration",
        None,
    ),
    (
        "server version should find the server version [Conformance]",
        None,
    ),
    (
        "Discovery should validate PreferredVersion for each APIGroup [Conformance]",
        None,
    ),
    (
        "Discovery Custom resource should have storage version hash",
        None,
    ),
    (
        "Server request timeout should return HTTP status code 400 if the user specifies an \
         invalid timeout in the request URL",
        None,
    ),
    (
        "CustomResourceValidationRules [Privileged:ClusterAdmin] MUST NOT fail validation for \
         create of a custom resource that satisfies the x-kubernetes-validations rules",
        None,
    ),
    (
        "CustomResourceValidationRules [Privileged:ClusterAdmin] MUST fail create of a custom \
         resource definition that contains a x-kubernetes-validations rule that refers to a \
         property that do not exist",
        None,
    ),
    // Its updates of the CRD wait for a custom resource with an invalid label to be refused
    // with the new schema's error (decision 246).
    (
        "MUST fail to update a resource due to JSONSchema errors on changed fields",
        None,
    ),
    // Validation ratcheting (decision 250).
    (
        "MUST NOT fail to update a resource due to JSONSchema errors on unchanged correlatable \
         fields",
        None,
    ),
    // apfkit's `/healthz?verbose` has kube-apiserver's checks for the work apfkit does, not
    // the post-start hooks of the work it does not (decision 251).
    (
        "health handlers should contain necessary checks",
        Some("missing required /healthz?verbose=1 checks"),
    ),
    // Reads the CRD's definitions in `/openapi/v2`, as versions are served, renamed and
    // unserved.
    (
        "CustomResourcePublishOpenAPI [Privileged:ClusterAdmin] removes definition from spec \
         when one version gets changed to not be served [Conformance]",
        None,
    ),
    // The CRD's OpenAPI v3 document, read back through spec3.
    (
        "OpenAPIV3 should publish OpenAPI V3 for CustomResourceDefinition",
        None,
    ),
    // The e2e framework's apiextensions client sends CRDs in protobuf.
    (
        "Simple CustomResourceDefinition creating/deleting custom resource definition objects \
         works [Conformance]",
        None,
    ),
    (
        "StorageVersionMigration CRUD Tests storagemigration.k8s.io/v1 StorageVersionMigration \
         [Conformance]",
        None,
    ),
    // Owner references of custom resources followed by the server's garbage collector
    // (decision 278).
    (
        "Garbage collector should support cascading deletion of custom resources",
        None,
    ),
    (
        "Garbage collector should support orphan deletion of custom resources",
        None,
    ),
    // WatchList with Secrets: metadata clients and informers read PartialObjectMetadata in
    // protobuf; a table watch has its column definitions in its first event alone and its
    // bookmark as a table (decision 286).
    (
        "should be requested by informers when WatchListClient is enabled [Beta]",
        None,
    ),
    (
        "should be requested by metadatainformer when WatchListClient is enabled [Beta]",
        None,
    ),
    (
        "should NOT be requested by client-go's List method when WatchListClient is enabled \
         [Beta]",
        None,
    ),
    (
        "should NOT be requested by dynamic client's List method when WatchListClient is \
         enabled [Beta]",
        None,
    ),
    (
        "should NOT be requested by metadata client's List method when WatchListClient is \
         enabled [Beta]",
        None,
    ),
    (
        "server supports sending resources in Table format [Beta]",
        None,
    ),
    (
        "reflector doesn't support receiving resources as Tables [Beta]",
        None,
    ),
    (
        "reflector using standard List doesn't support receiving resources as Tables [Beta]",
        None,
    ),
    // Watches of ConfigMaps, in each media type.
    (
        "Watchers should be able to restart watching from the last resource version observed \
         by the previous watch [Conformance]",
        None,
    ),
    (
        "Watchers should be able to start watching from a specific resource version \
         [Conformance]",
        None,
    ),
    (
        "Watchers should receive events on concurrent watches in same order [Conformance]",
        None,
    ),
    (
        "client-go should negotiate watch and report errors with accept \"application/json\"",
        None,
    ),
    (
        "client-go should negotiate watch and report errors with accept \
         \"application/vnd.kubernetes.protobuf\"",
        None,
    ),
];

/// One test's end: its full name, whether it passed, and the first line of its failure.
#[derive(Debug)]
struct Ended {
    name: String,
    passed: bool,
    message: String,
}

/// Runs the selection against the server of `kubeconfig` and answers how each test ended.
fn run(kubeconfig: &Path, report: &Path) -> Vec<Ended> {
    let focus: Vec<String> = SELECTION
        .iter()
        .map(|(name, _)| regex_escape(name))
        .collect();
    let mut command = Command::new(binary("e2e.test"));
    command
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg("--provider=skeleton")
        // Each namespace made waits for its `default` ServiceAccount and `kube-root-ca.crt`
        // (kube-controller-manager's on the reference, apfkit's own controllers; decision 279).
        .arg("--ginkgo.no-color")
        .arg(format!("--ginkgo.focus={}", focus.join("|")))
        .arg(format!("--ginkgo.json-report={}", report.display()))
        .arg("--ginkgo.timeout=10m");
    let output = run_within(command, b"", Duration::from_secs(900), |_| {});
    let text = std::fs::read_to_string(report).unwrap_or_else(|e| {
        panic!(
            "e2e.test wrote no report ({e}); its output ends:\n{}",
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .rev()
                .take(30)
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    let reports: Vec<Value> = serde_json::from_str(&text).expect("ginkgo's JSON report");
    let mut results = Vec::new();
    for spec in reports
        .iter()
        .flat_map(|r| r["SpecReports"].as_array().into_iter().flatten())
    {
        if spec["LeafNodeType"] != "It" || spec["State"] == "skipped" {
            continue;
        }
        let mut name: Vec<String> = spec["ContainerHierarchyTexts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        name.push(spec["LeafNodeText"].as_str().unwrap_or_default().to_owned());
        let failure = &spec["Failure"];
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        results.push(Ended {
            name: name.join(" "),
            passed: spec["State"] == "passed",
            message: text(&failure["Message"])
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        });
    }
    results
}

/// `text` with the characters of a regular expression escaped.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// How the test whose name ends with `name` ended.
fn ended<'a>(results: &'a [Ended], name: &str) -> &'a Ended {
    results
        .iter()
        .find(|e| e.name.ends_with(name))
        .unwrap_or_else(|| panic!("{name}: not run; ran {results:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_e2e_selection_ends_on_apfkit_as_recorded() {
    let work = tempfile::tempdir().expect("a temporary folder");
    let reference_report = work.path().join("reference.json");
    let reference_results = tokio::task::spawn_blocking(move || {
        let reference = KubeApiserver::start(&[]);
        let _controllers = reference.start_controller_manager();
        run(&reference.kubeconfig(), &reference_report)
    })
    .await
    .expect("the control run");
    for (name, _) in SELECTION {
        let control = ended(&reference_results, name);
        assert!(
            control.passed,
            "the control run failed on the reference: {control:#?}"
        );
    }

    let server = apfkit_server::start(Config::new(work.path().join("apfkit")))
        .await
        .expect("apfkit's server starts");
    let kubeconfig = server.kubeconfig().to_owned();
    let apfkit_report = work.path().join("apfkit.json");
    let results = tokio::task::spawn_blocking(move || run(&kubeconfig, &apfkit_report))
        .await
        .expect("the run against apfkit");
    for (name, on_apfkit) in SELECTION {
        let run = ended(&results, name);
        match on_apfkit {
            None => assert!(
                run.passed,
                "{} passes on apfkit's server (docs/conformance.md), but it failed: {run:#?}",
                run.name
            ),
            Some(message) => assert!(
                !run.passed && run.message.starts_with(message),
                "{} was recorded as failing on apfkit with {message:?}, but it {} (record how \
                 it ends now): {run:#?}",
                run.name,
                if run.passed {
                    "passed".to_owned()
                } else {
                    format!("failed otherwise: {}", run.message)
                },
            ),
        }
    }
}
