//! `apfkit serve` against the real kubectl: discovery, every version, writes, deletes that wait
//! on a watch, and `get -w`. kubectl must be on the PATH (`.ci/run` installs it); a test that
//! cannot run it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use apfkit_test_support::process;
use apfkit_tests::flowcontrol_versions;

use super::success;

/// The flag that turns API Priority and Fairness, and with it the configuration controller
/// that writes FlowSchemas' `Dangling` condition, off: for tests of other things, which
/// compare objects and watch events that the controller's writes would change.
pub const NO_APF: &str = "--enable-priority-and-fairness=false";

/// Two tests of one check: on the embedded store and on a real etcd started for it, each
/// server started with `args` too. `on_both_stores!(check: on_embedded, on_etcd; args...)`.
macro_rules! on_both_stores {
    ($check:ident: $embedded:ident, $etcd:ident; $($arg:expr),* $(,)?) => {
        #[test]
        fn $embedded() {
            $check(&$crate::serve::Server::start(&[$($arg),*]));
        }

        #[test]
        fn $etcd() {
            let etcd = apfkit_test_support::etcd::Etcd::start();
            $check(&$crate::serve::Server::start(&[
                "--etcd-servers",
                &etcd.endpoint,
                $($arg),*
            ]));
        }
    };
}
pub(crate) use on_both_stores;

/// A self-signed certificate for `127.0.0.1` and its key, written as `tls.crt` and `tls.key`
/// into `dir`: a loopback webhook's, whose certificate is its own CA bundle. Answers the two
/// paths and the certificate's PEM.
pub fn loopback_certificate(dir: &Path) -> (PathBuf, PathBuf, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let certificate = params.self_signed(&key).unwrap();
    let (cert, key_file) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert, certificate.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    (cert, key_file, certificate.pem())
}

/// A running `apfkit serve` on a free port, with its data directory; stopped when dropped.
pub struct Server {
    child: Child,
    kubeconfig: PathBuf,
    url: String,
    /// The data directory.
    data: PathBuf,
    /// The temporary directory that holds it, when the test did not give one.
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts the server on the embedded store and waits until it is ready.
    pub fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_owned();
        Self::start_with(Some(dir), data, extra)
    }

    /// Starts the server on the data directory `data` (kept when the server stops).
    pub fn start_in(data: &str, extra: &[&str]) -> Server {
        Self::start_with(None, PathBuf::from(data), extra)
    }

    fn start_with(dir: Option<tempfile::TempDir>, data: PathBuf, extra: &[&str]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .args(extra);
        let (child, url) = apfkit_test_support::process::start_server(command);
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        let mut server = Server {
            child,
            kubeconfig: data.join("kubeconfig"),
            url,
            data,
            _dir: dir,
        };
        server.wait_ready();
        server
    }

    /// Waits until `/readyz` answers 200, as kube-apiserver's clients wait: like it, the
    /// server listens before its informers have synced.
    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                panic!("apfkit serve exited at start ({status})");
            }
            let (code, body) = self.curl("/readyz?verbose", &[], b"");
            if code == 200 {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "apfkit serve was not ready within 60 s: {code} {}",
                String::from_utf8_lossy(&body)
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The certificate authority clients trust.
    pub fn ca(&self) -> PathBuf {
        self.data.join("ca.crt")
    }

    /// The server's base URL (`https://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The data directory (credentials, kubeconfig, database).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The resident memory of the server's process, in bytes (`VmRSS`).
    pub fn resident_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }

    /// Runs curl against the server as the administrator (its client certificate, in
    /// system:masters) unless `args` bring credentials of their own (`--cert`, an
    /// `Authorization` header): `args` then the URL of `path`; answers the status code and
    /// the body.
    pub fn curl(&self, path: &str, args: &[&str], body: &[u8]) -> (u16, Vec<u8>) {
        let own = args
            .iter()
            .any(|arg| *arg == "--cert" || arg.to_ascii_lowercase().starts_with("authorization:"));
        if own {
            return self.curl_anonymous(path, args, body);
        }
        let (cert, key) = (self.data.join("admin.crt"), self.data.join("admin.key"));
        let mut with_admin = vec![
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ];
        with_admin.extend_from_slice(args);
        self.curl_anonymous(path, &with_admin, body)
    }

    /// Runs curl against the server with only the credentials `args` bring (none: an
    /// anonymous request).
    pub fn curl_anonymous(&self, path: &str, args: &[&str], body: &[u8]) -> (u16, Vec<u8>) {
        let mut command = Command::new("curl");
        command
            .args(["--silent", "--show-error", "--cacert"])
            .arg(self.ca())
            .args([
                "--output",
                "-",
                "--write-out",
                "\n%{http_code}",
                "--max-time",
                "30",
            ])
            .args(args)
            .arg(format!("{}{path}", self.url));
        let output = super::run_within(command, body, Duration::from_secs(60), |_| {});
        assert!(
            output.status.success(),
            "curl {args:?} {path}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let split = output
            .stdout
            .iter()
            .rposition(|b| *b == b'\n')
            .expect("the status code line");
        let code = String::from_utf8_lossy(&output.stdout[split + 1..])
            .trim()
            .parse()
            .expect("a status code");
        (code, output.stdout[..split].to_vec())
    }

    /// curl answering the body as JSON.
    pub fn curl_json(&self, path: &str, args: &[&str], body: &[u8]) -> (u16, serde_json::Value) {
        let (code, body) = self.curl(path, args, body);
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{path}: {e}: {}", String::from_utf8_lossy(&body)));
        (code, value)
    }

    /// `method path` with `body` of `content_type`, as the administrator: the status code
    /// and the JSON answered.
    pub fn send_json(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, serde_json::Value) {
        let header = format!("Content-Type: {content_type}");
        let args = ["-X", method, "-H", &header, "--data-binary", "@-"];
        self.curl_json(path, &args, body)
    }

    /// Binds the plain user (context `apfkit-user`, bound to nothing at start) to
    /// `cluster-admin`, for tests that use it as a user who may act but is not in
    /// `system:masters` (which API Priority and Fairness exempts); waits until the binding
    /// holds.
    pub fn grant_plain_user(&self) {
        self.kubectl_ok(
            &[
                "create",
                "clusterrolebinding",
                "apfkit-user-admin",
                "--clusterrole",
                "cluster-admin",
                "--user",
                "apfkit-user",
            ],
            b"",
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let can = self.kubectl(
                &[
                    "--context",
                    "apfkit-user",
                    "auth",
                    "can-i",
                    "create",
                    "flowschemas",
                ],
                b"",
            );
            if can.status.success() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the plain user's binding did not hold within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Runs kubectl against the server, failing the test after a minute.
    pub fn kubectl(&self, args: &[&str], stdin: &[u8]) -> Output {
        process::kubectl(&self.kubeconfig, args, stdin)
    }

    /// Runs kubectl and returns its standard output, failing the test if it failed.
    pub fn kubectl_ok(&self, args: &[&str], stdin: &[u8]) -> String {
        process::kubectl_ok(&self.kubeconfig, args, stdin)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves the versions kube-apiserver 1.37 no longer does (flowcontrol's betas and alpha,
/// apiregistration's v1beta1), for the tests that write or read them.
pub const OLDER_VERSIONS: &str = "--runtime-config=api/all=true";

const FLOW_SCHEMA: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: team-a
  labels: {team: a}
spec:
  priorityLevelConfiguration: {name: global-default}
  matchingPrecedence: 500
  rules:
  - subjects:
    - kind: User
      user: {name: alice}
    resourceRules:
    - verbs: [get]
      apiGroups: ['*']
      resources: ['*']
      clusterScope: true
";

#[test]
fn kubectl_discovers_the_groups_and_reads_every_version() {
    let server = Server::start(&[OLDER_VERSIONS, NO_APF]);
    let resources = server.kubectl_ok(&["api-resources", "--no-headers"], b"");
    for (name, group_version) in [
        ("flowschemas", "flowcontrol.apiserver.k8s.io/v1"),
        (
            "prioritylevelconfigurations",
            "flowcontrol.apiserver.k8s.io/v1",
        ),
        ("apiservices", "apiregistration.k8s.io/v1"),
    ] {
        assert!(
            resources
                .lines()
                .any(|l| l.starts_with(name) && l.contains(group_version)),
            "{name} in {resources}"
        );
    }
    // The bootstrap configuration was created on start; every version serves it, as
    // `apfkit convert` writes it.
    let v1 = server.kubectl_ok(&["get", "flowschemas", "exempt", "-o", "json"], b"");
    for version in flowcontrol_versions() {
        let resource = format!("flowschemas.{version}.flowcontrol.apiserver.k8s.io");
        let served = server.kubectl_ok(&["get", &resource, "exempt", "-o", "json"], b"");
        let converted = success(&["convert", "--to", version, "-o", "json"], v1.as_bytes());
        let served: serde_json::Value = serde_json::from_str(&served).unwrap();
        let converted: serde_json::Value = serde_json::from_slice(&converted).unwrap();
        assert_eq!(served, converted, "{version}");
        let names = server.kubectl_ok(
            &[
                "get",
                &format!("prioritylevelconfigurations.{version}.flowcontrol.apiserver.k8s.io"),
                "-o",
                "name",
            ],
            b"",
        );
        assert!(names.contains("/catch-all\n"), "{version}: {names}");
    }
}

#[test]
fn kubectl_creates_replaces_and_deletes_waiting_on_a_watch() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let created = server.kubectl_ok(&["create", "-f", "-"], FLOW_SCHEMA.as_bytes());
    assert_eq!(
        created,
        "flowschema.flowcontrol.apiserver.k8s.io/team-a created\n"
    );
    let again = server.kubectl(&["create", "-f", "-"], FLOW_SCHEMA.as_bytes());
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains(
            r#"(AlreadyExists): error when creating "STDIN": flowschemas.flowcontrol.apiserver.k8s.io "team-a" already exists"#
        ),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let stored: serde_json::Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "flowschema", "team-a", "-o", "json"], b""),
    )
    .unwrap();
    assert_eq!(stored["metadata"]["generation"], 1);
    assert_eq!(
        stored["spec"]["distinguisherMethod"],
        serde_json::Value::Null
    );
    assert!(
        stored["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );

    // A replace that changes the spec bumps the generation.
    let changed = FLOW_SCHEMA.replace("matchingPrecedence: 500", "matchingPrecedence: 600");
    server.kubectl_ok(&["replace", "-f", "-"], changed.as_bytes());
    let replaced: serde_json::Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "flowschema", "team-a", "-o", "json"], b""),
    )
    .unwrap();
    assert_eq!(replaced["spec"]["matchingPrecedence"], 600);
    assert_eq!(replaced["metadata"]["generation"], 2);
    assert_eq!(replaced["metadata"]["uid"], stored["metadata"]["uid"]);

    // An invalid object is refused with kube-apiserver's message.
    let invalid = FLOW_SCHEMA
        .replace("team-a", "team-b")
        .replace("matchingPrecedence: 500", "matchingPrecedence: 10001");
    let refused = server.kubectl(&["create", "-f", "-"], invalid.as_bytes());
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(
            // kubectl prints the Status's causes under the kind and name.
            "The FlowSchema \"team-b\" is invalid: \
             spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"
        ),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // kubectl delete waits for the DELETED event of a watch on the name.
    let deleted = server.kubectl_ok(&["delete", "flowschema", "team-a"], b"");
    assert_eq!(
        deleted,
        "flowschema.flowcontrol.apiserver.k8s.io \"team-a\" deleted\n"
    );
    let gone = server.kubectl(&["get", "flowschema", "team-a"], b"");
    assert!(
        String::from_utf8_lossy(&gone.stderr)
            .contains(r#"flowschemas.flowcontrol.apiserver.k8s.io "team-a" not found"#)
    );
}

#[test]
fn kubectl_get_watch_sees_create_update_and_delete() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let mut watch = process::kubectl_command(server.kubeconfig())
        .args([
            "get",
            "flowschemas",
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    // Each event is printed as a JSON object: {"type": ..., "object": ...}.
    let mut events = serde_json::Deserializer::from_reader(watch.stdout.take().expect("piped"))
        .into_iter::<serde_json::Value>();
    // The watch is open once kubectl has listed; a create then shows.
    std::thread::sleep(Duration::from_millis(500));
    server.kubectl_ok(&["create", "-f", "-"], FLOW_SCHEMA.as_bytes());
    let changed = FLOW_SCHEMA.replace("matchingPrecedence: 500", "matchingPrecedence: 700");
    server.kubectl_ok(&["replace", "-f", "-"], changed.as_bytes());
    server.kubectl_ok(&["delete", "flowschema", "team-a"], b"");
    let started = Instant::now();
    let mut seen = Vec::new();
    while seen.len() < 3 && started.elapsed() < Duration::from_secs(30) {
        match events.next() {
            Some(Ok(event)) => seen.push(format!(
                "{} {} {}",
                event["type"].as_str().unwrap_or_default(),
                event["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default(),
                event["object"]["spec"]["matchingPrecedence"]
            )),
            other => panic!("kubectl get --watch ended: {other:?}"),
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        seen,
        [
            "ADDED team-a 500",
            "MODIFIED team-a 700",
            "DELETED team-a 700"
        ]
    );
}

#[test]
fn kubectl_apply_is_a_no_op_the_second_time_and_configures_a_change() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let bootstrap = String::from_utf8(success(&["bootstrap"], b"")).unwrap();
    let count =
        bootstrap.matches("\nkind: ").count() + usize::from(bootstrap.starts_with("kind: "));
    let outcome = |output: &str, word: &str| output.lines().filter(|l| l.ends_with(word)).count();
    let first = server.kubectl_ok(&["apply", "-f", "-"], bootstrap.as_bytes());
    assert_eq!(outcome(&first, " created"), count, "{first}");
    let second = server.kubectl_ok(&["apply", "-f", "-"], bootstrap.as_bytes());
    assert_eq!(outcome(&second, " unchanged"), count, "{second}");
    let before: serde_json::Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "prioritylevelconfigurations", "-o", "json"], b""),
    )
    .unwrap();
    let changed = bootstrap.replacen(
        "nominalConcurrencyShares: 30",
        "nominalConcurrencyShares: 31",
        1,
    );
    assert_ne!(
        changed, bootstrap,
        "the bootstrap levels have a share of 30"
    );
    let third = server.kubectl_ok(&["apply", "-f", "-"], changed.as_bytes());
    assert_eq!(outcome(&third, " configured"), 1, "{third}");
    assert_eq!(outcome(&third, " unchanged"), count - 1, "{third}");
    let after: serde_json::Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "prioritylevelconfigurations", "-o", "json"], b""),
    )
    .unwrap();
    let generations = |list: &serde_json::Value| -> Vec<i64> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["generation"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(
        generations(&before).iter().sum::<i64>() + 1,
        generations(&after).iter().sum::<i64>()
    );
    // kubectl diff shows the change that applying the old file would make, and exits 1.
    let diff = server.kubectl(&["diff", "-f", "-"], bootstrap.as_bytes());
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let diff = String::from_utf8_lossy(&diff.stdout);
    let changed_lines: Vec<String> = diff
        .lines()
        .filter(|l| l.contains("nominalConcurrencyShares") && !l.contains('{'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        changed_lines,
        [
            "- nominalConcurrencyShares: 31",
            "+ nominalConcurrencyShares: 30"
        ],
        "{diff}"
    );
}

#[test]
fn kubectl_patches_by_merge_json_and_strategic_merge() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    server.kubectl_ok(&["create", "-f", "-"], FLOW_SCHEMA.as_bytes());
    let precedence = || {
        server.kubectl_ok(
            &[
                "get",
                "flowschema",
                "team-a",
                "-o",
                "jsonpath={.spec.matchingPrecedence} {.metadata.generation} {.metadata.labels}",
            ],
            b"",
        )
    };
    server.kubectl_ok(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"matchingPrecedence":501}}"#,
        ],
        b"",
    );
    assert_eq!(precedence(), r#"501 2 {"team":"a"}"#);
    server.kubectl_ok(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/matchingPrecedence","value":502}]"#,
        ],
        b"",
    );
    assert_eq!(precedence(), r#"502 3 {"team":"a"}"#);
    // A label added by a strategic merge patch; metadata alone does not bump the generation.
    server.kubectl_ok(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "strategic",
            "-p",
            r#"{"metadata":{"labels":{"tier":"x"}}}"#,
        ],
        b"",
    );
    assert_eq!(precedence(), r#"502 3 {"team":"a","tier":"x"}"#);
    // A JSON patch whose test fails changes nothing and is refused with 422.
    let failed = server.kubectl(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/spec/matchingPrecedence","value":1}]"#,
        ],
        b"",
    );
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("is invalid"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
    // Patching to an invalid object is refused as an update would be.
    let invalid = server.kubectl(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"matchingPrecedence":-5}}"#,
        ],
        b"",
    );
    assert!(
        String::from_utf8_lossy(&invalid.stderr)
            .contains("spec.matchingPrecedence: Invalid value: -5: must be a positive value")
    );
    assert_eq!(precedence(), r#"502 3 {"team":"a","tier":"x"}"#);
}

#[test]
fn kubectl_explain_reads_the_openapi_documents() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let explained = server.kubectl_ok(&["explain", "flowschema.spec.rules"], b"");
    assert!(explained.contains("KIND:       FlowSchema"), "{explained}");
    assert!(
        explained.contains("FIELD: rules <[]PolicyRulesWithSubjects>"),
        "{explained}"
    );
    assert!(
        explained.contains("subjects\t<[]Subject> -required-"),
        "{explained}"
    );
    let older = server.kubectl_ok(
        &[
            "explain",
            "prioritylevelconfiguration.spec.limited",
            "--api-version",
            "flowcontrol.apiserver.k8s.io/v1beta2",
        ],
        b"",
    );
    assert!(older.contains("VERSION:    v1beta2"), "{older}");
    assert!(older.contains("assuredConcurrencyShares"), "{older}");
}

/// A kind with no PATCH in the v3 documents (a review) has kubectl validate it on its side,
/// from `/openapi/v2` in protobuf (decision 253): a review is created, and one with a field
/// its schema lacks is refused by kubectl in the words of its v2 validator.
#[test]
fn kubectl_validates_a_create_only_kind_against_the_v2_document() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let review = |extra: &str| {
        format!(
            "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  \
             resourceAttributes:\n    verb: delete\n    group: flowcontrol.apiserver.k8s.io\n    \
             resource: flowschemas\n{extra}"
        )
    };
    let allowed = server.kubectl_ok(
        &["create", "-f", "-", "-o", "jsonpath={.status.allowed}"],
        review("").as_bytes(),
    );
    assert_eq!(allowed, "true");
    let refused = server.kubectl(
        &["create", "-f", "-"],
        review("    colour: red\n").as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr
            .contains("unknown field \"colour\" in io.k8s.api.authorization.v1.ResourceAttributes"),
        "{stderr}"
    );
}

/// The words of each line of `kubectl get`'s table.
fn table_cells(table: &str) -> Vec<Vec<&str>> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

const MIGRATION: &str = "apiVersion: storagemigration.k8s.io/v1
kind: StorageVersionMigration
metadata:
  name: migrate-flowschemas
spec:
  resource:
    group: flowcontrol.apiserver.k8s.io
    resource: flowschemas
";

/// A StorageVersionMigration applied with kubectl is run: `kubectl wait` sees it succeed,
/// and `kubectl get` prints it so.
#[test]
fn kubectl_applies_a_storage_version_migration_and_waits_for_it_to_succeed() {
    let server = Server::start(&[NO_APF]);
    server.kubectl_ok(&["apply", "-f", "-"], MIGRATION.as_bytes());
    let waited = server.kubectl_ok(
        &[
            "wait",
            "--for=condition=Succeeded",
            "--timeout=60s",
            "storageversionmigration/migrate-flowschemas",
        ],
        b"",
    );
    assert!(waited.contains("condition met"), "{waited}");
    let rows = table_cells(&server.kubectl_ok(&["get", "storageversionmigrations"], b""))
        .into_iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>();
    assert_eq!(
        rows[1],
        "migrate-flowschemas flowschemas.flowcontrol.apiserver.k8s.io Succeeded"
    );
}

/// `kubectl create token` (a TokenRequest in protobuf) for a namespace's `default`
/// ServiceAccount, which the server's controller made: kubectl with that token alone is the
/// account, which RBAC lets list ConfigMaps once a RoleBinding names it.
#[test]
fn kubectl_creates_a_token_that_authenticates_as_its_service_account() {
    let server = Server::start(&[
        NO_APF,
        "--service-account-issuer=https://apfkit.example",
        "--api-audiences=https://apfkit.example,vault",
    ]);
    server.kubectl_ok(&["create", "namespace", "robots"], b"");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !server
        .kubectl(&["get", "serviceaccount", "default", "-n", "robots"], b"")
        .status
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no default ServiceAccount"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let token = server.kubectl_ok(&["create", "token", "default", "-n", "robots"], b"");
    // Issued as `--service-account-issuer` says, for `--api-audiences`.
    let claims = token.trim().split('.').nth(1).unwrap();
    let claims =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&claims).unwrap();
    assert_eq!(claims["iss"], "https://apfkit.example");
    assert_eq!(
        claims["aud"],
        serde_json::json!(["https://apfkit.example", "vault"])
    );
    // A kubeconfig of the server's address and authority, and no client certificate: kubectl
    // with the token alone.
    let admin_config = std::fs::read_to_string(server.kubeconfig()).unwrap();
    let address = admin_config
        .lines()
        .find_map(|line| line.trim().strip_prefix("server: "))
        .unwrap()
        .to_owned();
    let authority = server.kubeconfig().with_file_name("ca.crt");
    let robot_config = server.kubeconfig().with_file_name("robot-kubeconfig");
    std::fs::write(
        &robot_config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: apfkit\n  cluster:\n    \
             server: {address}\n    certificate-authority: {}\nusers:\n- name: robot\n  \
             user:\n    token: {}\ncontexts:\n- name: robot\n  context:\n    \
             cluster: apfkit\n    user: robot\ncurrent-context: robot\n",
            authority.display(),
            token.trim()
        ),
    )
    .unwrap();
    let as_robot = |args: &[&str]| process::kubectl(&robot_config, args, b"");
    let whoami = as_robot(&["auth", "whoami"]);
    let whoami = String::from_utf8_lossy(&whoami.stdout);
    assert!(
        whoami.contains("system:serviceaccount:robots:default"),
        "{whoami}"
    );
    assert!(
        !as_robot(&["get", "configmaps", "-n", "robots"])
            .status
            .success()
    );
    server.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "robot-views",
            "--clusterrole",
            "view",
            "--serviceaccount",
            "robots:default",
            "-n",
            "robots",
        ],
        b"",
    );
    // The authorizer follows the binding within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let listed = as_robot(&["get", "configmaps", "-n", "robots"]);
        if String::from_utf8_lossy(&listed.stdout).contains("kube-root-ca.crt") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&listed.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let short = server.kubectl(
        &[
            "create",
            "token",
            "default",
            "-n",
            "robots",
            "--duration",
            "5m",
        ],
        b"",
    );
    assert!(
        String::from_utf8_lossy(&short.stderr)
            .contains("may not specify a duration less than 10 minutes")
    );
}

/// A StorageVersionMigration applied with kubectl is printed with kubectl's columns; its
/// status, written through `/status`, shows in them, and its spec cannot change (without the
/// migrator, as kube-apiserver serves them alone).
#[test]
fn kubectl_applies_a_storage_version_migration_and_prints_its_columns() {
    let server = Server::start(&[
        NO_APF,
        "--controllers=*,-storage-version-migrator-controller",
    ]);
    let applied = server.kubectl_ok(&["apply", "-f", "-"], MIGRATION.as_bytes());
    assert!(
        applied.contains(
            "storageversionmigration.storagemigration.k8s.io/migrate-flowschemas created"
        ),
        "{applied}"
    );
    let rows = table_cells(&server.kubectl_ok(&["get", "storageversionmigrations"], b""))
        .into_iter()
        .map(|r| r.join(" "))
        .collect::<Vec<_>>();
    assert_eq!(
        rows,
        [
            "NAME RESOURCE STATUS",
            "migrate-flowschemas flowschemas.flowcontrol.apiserver.k8s.io Unknown"
        ]
    );
    server.kubectl_ok(
        &[
            "patch",
            "storageversionmigration",
            "migrate-flowschemas",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Running","status":"True","reason":"Started","message":"","lastTransitionTime":"2026-11-30T00:00:00Z"}]}}"#,
        ],
        b"",
    );
    let status = server.kubectl_ok(
        &[
            "get",
            "storageversionmigration",
            "migrate-flowschemas",
            "--no-headers",
        ],
        b"",
    );
    assert_eq!(table_cells(&status)[0][2], "Running", "{status}");
    let changed = MIGRATION.replace(
        "resource: flowschemas",
        "resource: prioritylevelconfigurations",
    );
    let refused = server.kubectl(&["apply", "-f", "-"], changed.as_bytes());
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("spec: Invalid value"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn kubectl_get_prints_kube_apiservers_columns() {
    let server = Server::start(&[NO_APF]);
    let schemas = server.kubectl_ok(&["get", "flowschemas"], b"");
    let rows = table_cells(&schemas);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    // Rows in matching order, as kube-apiserver sorts them.
    let precedences: Vec<i64> = rows[1..].iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(precedences.windows(2).all(|w| w[0] <= w[1]), "{schemas}");
    assert_eq!(rows[1][..4], ["exempt", "exempt", "1", "<none>"]);
    assert_eq!(
        rows.last().unwrap()[..4],
        ["catch-all", "catch-all", "10000", "ByUser"]
    );
    let levels = server.kubectl_ok(
        &[
            "get",
            "prioritylevelconfigurations",
            "exempt",
            "global-default",
        ],
        b"",
    );
    let rows = table_cells(&levels);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    assert_eq!(
        rows[1][..6],
        ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        rows[2][..6],
        ["global-default", "Limited", "20", "128", "6", "50"]
    );
    // The category lists APIServices: the local ones registered for the groups served.
    let extensions = server.kubectl_ok(&["get", "api-extensions"], b"");
    let rows = table_cells(&extensions);
    assert_eq!(rows[0][..3], ["NAME", "SERVICE", "AVAILABLE"]);
    let flowcontrol = rows
        .iter()
        .find(|row| row[0] == "apiservice.apiregistration.k8s.io/v1.flowcontrol.apiserver.k8s.io")
        .unwrap_or_else(|| panic!("{extensions}"));
    assert_eq!(flowcontrol[1], "Local");
}

#[test]
fn on_etcd_objects_are_stored_as_kube_apiserver_stores_them() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let server = Server::start(&[OLDER_VERSIONS, "--etcd-servers", &etcd.endpoint, NO_APF]);
    server.kubectl_ok(&["create", "-f", "-"], FLOW_SCHEMA.as_bytes());
    let api_service = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.widgets.example.com}\nspec:\n  group: widgets.example.com\n  version: v1\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n  service: {namespace: widgets, name: widgets-api, port: 443}\n";
    server.kubectl_ok(&["create", "-f", "-"], api_service.as_bytes());
    let endpoints = format!("--endpoints={}", etcd.endpoint);

    // kube-apiserver's keys and encodings: protobuf in v1 for flowcontrol, JSON for
    // APIServices (with the bootstrap configuration beside them).
    let listed: serde_json::Value =
        serde_json::from_slice(&success(&["storage", "ls", &endpoints, "-o", "json"], b""))
            .unwrap();
    let entry = |key: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("{key} in {listed}"))
            .clone()
    };
    let schema = entry("/registry/flowschemas/team-a");
    assert_eq!(schema["encoding"], "protobuf");
    assert_eq!(schema["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    let service = entry("/registry/apiregistration.k8s.io/apiservices/v1.widgets.example.com");
    assert_eq!(service["encoding"], "json");
    assert!(entry("/registry/prioritylevelconfigurations/catch-all")["encoding"] == "protobuf");

    // What etcd holds reads back as what the API serves, resourceVersion included (the key's
    // mod revision).
    for (key, resource) in [
        ("/registry/flowschemas/team-a", "flowschema/team-a"),
        (
            "/registry/apiregistration.k8s.io/apiservices/v1.widgets.example.com",
            "apiservice/v1.widgets.example.com",
        ),
    ] {
        let stored: serde_json::Value = serde_json::from_slice(&success(
            &["storage", "get", key, &endpoints, "-o", "json"],
            b"",
        ))
        .unwrap();
        let served: serde_json::Value = serde_json::from_str(&server.kubectl_ok(
            &["get", resource, "-o", "json", "--show-managed-fields"],
            b"",
        ))
        .unwrap();
        assert_eq!(stored, served, "{key}");
    }
}

/// The commands of docs/serving.md's "Serving the API", run as written (the binary under test
/// for `./target/release/apfkit`, a free port for 6443, the build step left out).
#[test]
fn the_guides_serving_commands_work_as_written() {
    let (stdout, _) = run_guide_section("serving.md", "Serving the API");
    for expected in [
        "MATCHINGPRECEDENCE",
        "kind: PriorityLevelConfiguration",
        "assuredConcurrencyShares",
        "flowschema.flowcontrol.apiserver.k8s.io/catch-all configured",
        "FIELD: rules <[]PolicyRulesWithSubjects>",
        "apfkit-user",
    ] {
        assert!(stdout.contains(expected), "{expected} in\n{stdout}");
    }
}

/// docs/serving.md's "Who may do what", run as written: the plain user refused in
/// kube-apiserver's words, then bound and allowed to read, `kubectl auth can-i` (and
/// `--list`, and `--as`), anonymous requests as the bootstrap policy lets them.
#[test]
fn the_guides_rbac_commands_work_as_written() {
    let (stdout, stderr) = run_guide_section("serving.md", "Who may do what");
    assert!(
        stderr.contains(
            "Error from server (Forbidden): flowschemas.flowcontrol.apiserver.k8s.io is \
             forbidden: User \"apfkit-user\" cannot list resource \"flowschemas\" in API group \
             \"flowcontrol.apiserver.k8s.io\" at the cluster scope"
        ),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    assert_eq!(lines.first(), Some(&"no"), "{stdout}");
    for expected in [
        "clusterrole.rbac.authorization.k8s.io/apf-reader created",
        "clusterrolebinding.rbac.authorization.k8s.io/apf-reader created",
        "flowschema.flowcontrol.apiserver.k8s.io/exempt",
        "\"gitVersion\":\"v1.37.2-apfkit",
        "forbidden: User \\\"system:anonymous\\\" cannot get path \\\"/apis\\\"",
    ] {
        assert!(stdout.contains(expected), "{expected} in\n{stdout}");
    }
    let list = lines
        .iter()
        .find(|l| l.starts_with("flowschemas.flowcontrol.apiserver.k8s.io"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(list.contains("[get list watch]"), "{list}");
    // can-i delete: no; can-i list --as apfkit-user: yes.
    assert!(
        lines.contains(&"yes") && lines.iter().filter(|l| **l == "no").count() == 2,
        "{stdout}"
    );
}

/// Issue 39 §2 and §4: the audit guide, run as written: the log names who read what with
/// the flow schema and priority level that served them, and who was refused what.
#[test]
fn the_guides_audit_commands_work_as_written() {
    let (stdout, _) = run_guide_section("serving.md", "Audit");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.contains(&"flowschema.flowcontrol.apiserver.k8s.io/exempt"),
        "{stdout}"
    );
    let read = lines
        .iter()
        .find(|l| l.starts_with("apfkit-admin\t"))
        .unwrap_or_else(|| panic!("the read of exempt in\n{stdout}"));
    let fields: Vec<&str> = read.split('\t').collect();
    assert_eq!(fields[..3], ["apfkit-admin", "exempt", "exempt"], "{read}");
    assert!(!fields[3].is_empty(), "the response's kind: {read}");
    assert!(
        lines.contains(&"apfkit-user\tlist\tprioritylevelconfigurations\t403"),
        "{stdout}"
    );
}

#[test]
fn the_guides_server_side_apply_commands_work_as_written() {
    let (stdout, stderr) = run_guide_section("serving.md", "Server-side apply");
    assert!(
        stdout.contains("flowschema.flowcontrol.apiserver.k8s.io/team-a serverside-applied"),
        "{stdout}"
    );
    for expected in [
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.matchingPrecedence",
        "document 1: Apply failed with 1 conflict: conflict with \"tuner\": .spec.matchingPrecedence",
    ] {
        assert!(stderr.contains(expected), "{expected} in\n{stderr}");
    }
    // The forced offline apply: kubectl's value back, and both managers.
    let forced = stdout.rsplit("\nkind: FlowSchema\n").next().unwrap();
    assert!(forced.contains("matchingPrecedence: 500"), "{forced}");
    assert!(
        forced.contains("manager: kubectl") && forced.contains("manager: tuner"),
        "{forced}"
    );
}

/// Runs the first `sh` block of the section `title` of the guide `docs/<page>` in a temporary
/// directory, with the built `apfkit` and a free port; answers its standard output and error.
pub fn run_guide_section(page: &str, title: &str) -> (String, String) {
    let block = apfkit_test_support::guide::first_sh_block(page, title);
    let port = apfkit_test_support::process::free_port();
    let script: String = block
        .lines()
        .filter(|line| !line.starts_with("cargo build"))
        .map(|line| {
            line.replace("./target/release/apfkit", env!("CARGO_BIN_EXE_apfkit"))
                .replace("127.0.0.1:6443", &format!("127.0.0.1:{port}"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("HOME", dir.path());
    let output = super::run_within(command, b"", Duration::from_secs(120), |_| {});
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{script}\n{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn the_guides_priority_and_fairness_commands_work_as_written() {
    let (stdout, _) = run_guide_section("serving.md", "Priority and fairness, live");
    let lines: Vec<&str> = stdout.lines().collect();
    // The headers name global-default, then, after the apply, plain-user.
    let uid_after = |header: &str, from: usize| {
        lines[from..]
            .iter()
            .position(|l| l.to_ascii_lowercase().starts_with(header))
            .map(|i| lines[from + i].split(':').nth(1).unwrap().trim().to_owned())
            .unwrap()
    };
    let first = uid_after("x-kubernetes-pf-flowschema-uid", 0);
    let global = lines
        .iter()
        .position(|l| *l == first)
        .expect("kubectl printed global-default's uid");
    let second = uid_after("x-kubernetes-pf-flowschema-uid", global + 1);
    assert_ne!(first, second);
    assert!(
        lines.iter().skip(global + 1).any(|l| *l == second),
        "plain-user's uid is the one the headers name: {stdout}"
    );
    assert!(stdout.contains("flowschema.flowcontrol.apiserver.k8s.io/plain-user created"));
    assert!(stdout.contains("PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing"));
    assert!(lines.contains(&"128"), "workload-low's queues: {stdout}");
    assert!(stdout.contains("/debug/api_priority_and_fairness/dump_requests"));
    assert!(stdout.contains(
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245"
    ));
    assert!(stdout.contains("apiserver_flowcontrol_dispatched_requests_total{"));
}

#[test]
fn the_guides_lint_commands_work_as_written() {
    let (stdout, _) = run_guide_section("apf-tools.md", "Linting a configuration");
    assert!(
        stdout.contains("apf.yaml: document 2: warning APF001 FlowSchema/team-a-pods spec.rules: every request team-a-pods matches goes first to team-a"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exit 1"),
        "--fail-on warning fails: {stdout}"
    );
    assert!(stdout.contains("APF001 shadowed-flow-schema (warning)"));
    assert!(stdout.contains("APF012  invalid-object"));
}

#[test]
fn the_guides_report_commands_work_as_written() {
    let (stdout, _) = run_guide_section("apf-tools.md", "Simulations to look at");
    for chart in [
        "seats-global-default.svg",
        "queue-global-default.svg",
        "waits-5-noisy-user.svg",
    ] {
        assert!(stdout.lines().any(|l| l == chart), "{chart} in {stdout}");
    }
}

/// The data directory `apfkit serve` creates is its owner's only, and so is everything in it
/// (issue 39: it was 0755 and the database 0644, so every local user could read all stored
/// objects): 0700 for the directory, as etcd creates its data directory, 0600 for the
/// database, its WAL, the keys and the kubeconfig.
#[cfg(unix)]
#[test]
fn the_data_directory_and_its_files_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("new").join("data");
    let server = Server::start_in(data.to_str().unwrap(), &[]);
    // A write, so that the database has its WAL.
    server.kubectl_ok(&["create", "-f", "-"], br#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "private"}, "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}"#);
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data directory");
    assert_eq!(
        mode(&parent.path().join("new")),
        0o700,
        "a directory created above it"
    );
    let mut files: Vec<(String, u32)> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().is_file())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, mode(&entry.path()))
        })
        .collect();
    files.sort();
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    for expected in ["apfkit.db", "apfkit.db-wal", "kubeconfig", "ca.key"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let readable: Vec<String> = files
        .iter()
        .filter(|(name, mode)| {
            // Certificates are public; everything else is private.
            !name.ends_with(".crt") && mode & 0o077 != 0
        })
        .map(|(name, mode)| format!("{name} {mode:o}"))
        .collect();
    assert!(readable.is_empty(), "readable by others: {readable:?}");
}

#[test]
fn the_guides_live_cluster_commands_work_as_written() {
    let (stdout, _) = run_guide_section("apf-tools.md", "A live cluster as input");
    // The plain user's GET /version went to global-default, named from its uid alone.
    assert!(
        stdout.contains("FlowSchema:     global-default\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PriorityLevel:  global-default\n"),
        "{stdout}"
    );
    assert!(stdout.contains("Rule:           {"), "{stdout}");
    assert!(stdout.contains("Server concurrency limit: 600"), "{stdout}");
}

#[test]
fn the_guides_status_commands_work_as_written() {
    let (stdout, _) = run_guide_section("apf-tools.md", "Sampling a live cluster");
    assert!(stdout.contains(" samples over "), "{stdout}");
    assert!(stdout.contains("PriorityLevel,"), "{stdout}");
    let global = stdout
        .lines()
        .find(|l| l.starts_with("global-default,"))
        .unwrap_or_else(|| panic!("{stdout}"));
    // global-default's nominal limit at 600 seats, as `apfkit limits` says (49).
    assert!(global.contains(" 49,"), "{global}");
    // The page of the same samples was written.
    assert!(stdout.contains("<h2>What matters</h2>"), "{stdout}");
}
