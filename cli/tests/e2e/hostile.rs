//! Hostile input: oversized documents and endless lines under a memory limit, deep nesting,
//! duplicate keys, list envelopes, control characters, and mistakes on the command line.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{apfkit, success};

const LEVEL_JSON: &str = r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "PriorityLevelConfiguration",
 "metadata": {"name": "ok"},
 "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}"#;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn documents_over_the_size_limit_are_refused_until_it_is_raised() {
    let big = LEVEL_JSON.replace("\"ok\"", &format!("\"{}\"", "x".repeat(2000)));
    let output = apfkit(
        &["convert", "--to", "v1", "--max-document-size", "1K"],
        big.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "error: -: document 1: document larger than 1024 bytes (raise the limit with --max-document-size)\n"
    );
    let output = apfkit(
        &["convert", "--to", "v1", "--max-document-size", "4K"],
        big.as_bytes(),
    );
    // The name is too long for validation, not for conversion.
    assert!(output.status.success(), "{}", stderr(&output));
    let output = apfkit(
        &["convert", "--to", "v1", "--max-document-size", "lots"],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
}

/// An endless line is refused at the limit, in bounded memory: under a 512 MiB address-space
/// limit, 700 MB of input ends with the limit's message, not an allocation failure.
#[test]
fn an_endless_line_is_refused_in_bounded_memory() {
    for (prefix, format) in [("name: ", "YAML"), ("{\"name\": \"", "JSON")] {
        let script = format!(
            "ulimit -v 524288; exec {} convert --to v1",
            env!("CARGO_BIN_EXE_apfkit")
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let block = vec![b'x'; 1 << 20];
            let _ = stdin.write_all(prefix.as_bytes());
            for _ in 0..700 {
                if stdin.write_all(&block).is_err() {
                    break; // the command stopped reading
                }
            }
        });
        let output = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{format}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("larger than 8388608 bytes"),
            "{format}: {}",
            stderr(&output)
        );
    }
}

fn nested_fields(depth: usize) -> String {
    let mut fields = String::from("{}");
    for _ in 0..depth {
        fields = format!("{{\"f:a\": {fields}}}");
    }
    format!(
        r#"{{"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
 "metadata": {{"name": "x", "managedFields": [{{"manager": "m", "fieldsV1": {fields}}}]}},
 "spec": {{"priorityLevelConfiguration": {{"name": "p"}}}}}}"#
    )
}

/// The deepest document the reader takes can be written in YAML and read back; one level
/// more is refused.
#[test]
fn nesting_limits_hold_for_what_the_command_writes() {
    // Root, metadata, managedFields, the entry and fieldsV1 make five levels.
    let deepest = nested_fields(59);
    let yaml = success(&["convert", "--to", "v1"], deepest.as_bytes());
    let again = success(&["convert", "--to", "v1beta3", "-o", "json"], &yaml);
    let back: serde_json::Value = serde_json::from_slice(&again).unwrap();
    let original: serde_json::Value = serde_json::from_str(&deepest).unwrap();
    assert_eq!(back["metadata"], original["metadata"]);
    let output = apfkit(&["convert", "--to", "v1"], nested_fields(60).as_bytes());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("nested deeper than 64 levels"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn duplicate_json_keys_follow_the_unknown_field_mode() {
    let input = LEVEL_JSON.replace(
        "\"kind\": \"PriorityLevelConfiguration\",",
        "\"kind\": \"PriorityLevelConfiguration\", \"kind\": \"PriorityLevelConfiguration\",",
    );
    let strict = apfkit(
        &["convert", "--to", "v1", "--unknown-fields", "strict"],
        input.as_bytes(),
    );
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(
        stderr(&strict),
        "error: -: document 1: strict decoding error: duplicate field \"kind\"\n"
    );
    let warn = apfkit(&["convert", "--to", "v1"], input.as_bytes());
    assert!(warn.status.success());
    assert_eq!(
        stderr(&warn),
        "-: document 1: warning: duplicate field \"kind\"\n"
    );
    let ignore = apfkit(
        &["convert", "--to", "v1", "--unknown-fields", "ignore"],
        input.as_bytes(),
    );
    assert!(ignore.status.success());
    assert_eq!(stderr(&ignore), "");
    // A second kind that differs changes the object's kind, as in Go: strict mode refuses it.
    let other = LEVEL_JSON.replace(
        "\"kind\": \"PriorityLevelConfiguration\",",
        "\"kind\": \"PriorityLevelConfiguration\", \"kind\": \"FlowSchema\",",
    );
    let output = apfkit(
        &["convert", "--to", "v1", "--unknown-fields", "strict"],
        other.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn list_envelopes_are_checked() {
    let list = |extra: &str| {
        format!(
            r#"{{"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "PriorityLevelConfigurationList", {extra} "items": [{LEVEL_JSON}]}}"#
        )
    };
    let unknown = list(r#""bogus": 1, "metadata": {"resourceVersion": "5", "extra": 2},"#);
    let strict = apfkit(
        &["convert", "--to", "v1", "--unknown-fields", "strict"],
        unknown.as_bytes(),
    );
    assert_eq!(strict.status.code(), Some(1));
    assert!(stderr(&strict).contains("unknown field \"bogus\", unknown field \"metadata.extra\""));
    for mode in ["ignore", "warn"] {
        let out = success(
            &[
                "convert",
                "--to",
                "v1",
                "-o",
                "json",
                "--unknown-fields",
                mode,
            ],
            unknown.as_bytes(),
        );
        let list: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(list.get("bogus").is_none(), "{mode}");
        assert_eq!(
            list["metadata"],
            serde_json::json!({"resourceVersion": "5"}),
            "{mode}"
        );
    }
    let bad = apfkit(
        &["convert", "--to", "v1"],
        list(r#""metadata": "not an object","#).as_bytes(),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("-: document 1: metadata: "),
        "{}",
        stderr(&bad)
    );
}

/// Text from the input cannot forge lines or send escape sequences to a terminal.
#[test]
fn control_characters_of_the_input_are_escaped() {
    let evil = LEVEL_JSON
        .replace("\"ok\"", "\"ok\\nforged: line\\u001b[31m\"")
        .replace("\"spec\"", "\"sp\\u001b[2Jec\": 1, \"spec\"");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("evil\nname\u{1b}.json");
    std::fs::write(&file, &evil).unwrap();
    let file = file.to_str().unwrap();
    for args in [
        vec!["validate", "-f", file],
        vec!["convert", "--to", "v1", "-f", file],
        vec![
            "convert",
            "--to",
            "v1",
            "--unknown-fields",
            "strict",
            "-f",
            file,
        ],
        vec!["limits", "-f", file],
        vec!["simulate", "-f", file],
    ] {
        let output = apfkit(&args, b"");
        let text = format!(
            "{}{}",
            stderr(&output),
            String::from_utf8_lossy(&output.stdout)
        );
        let diagnostics = if args[0] == "convert" && output.status.success() {
            stderr(&output)
        } else {
            text
        };
        assert!(!diagnostics.contains('\u{1b}'), "{args:?}: {diagnostics:?}");
        assert!(
            !diagnostics.contains("\nforged"),
            "{args:?}: {diagnostics:?}"
        );
        assert!(
            !diagnostics.contains("evil\nname"),
            "{args:?}: {diagnostics:?}"
        );
    }
    let output = apfkit(&["validate", "-f", file], b"");
    assert!(String::from_utf8_lossy(&output.stdout).contains("evil\\nname\\u{1b}.json"));
    // File names found by a directory walk, in read and write errors.
    let unreadable = dir.path().join("bad\nname\u{1b}.yaml");
    std::os::unix::fs::symlink("/nonexistent", &unreadable).unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    for args in [
        vec!["validate", "-f", dir_arg],
        vec!["convert", "--to", "v1", "--in-place", "-f", dir_arg],
    ] {
        let output = apfkit(&args, b"");
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = stderr(&output);
        assert!(
            stderr.contains("bad\\nname\\u{1b}.yaml"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains('\u{1b}'), "{args:?}: {stderr}");
    }
}

#[test]
fn an_unknown_version_is_a_usage_error_even_without_input() {
    for args in [
        vec!["convert", "--to", "v2"],
        vec!["convert", "--to", "flowcontrol.apiserver.k8s.io/v2"],
        vec!["bootstrap", "--to", "v2"],
    ] {
        let output = apfkit(&args, b"");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains("no served API has version"),
            "{args:?}"
        );
    }
    for version in ["bogus", "apps/v1", "v1/v1/v1"] {
        let output = apfkit(&["validate", "--request-version", version], b"");
        assert_eq!(output.status.code(), Some(2), "{version}");
    }
    let output = apfkit(
        &[
            "validate",
            "--request-version",
            "flowcontrol.apiserver.k8s.io/v1beta2",
        ],
        LEVEL_JSON.as_bytes(),
    );
    assert!(output.status.success());
}

#[test]
fn validate_reports_every_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-broken.yaml"), "kind: [\n").unwrap();
    std::fs::write(
        dir.path().join("b-invalid.json"),
        LEVEL_JSON.replace("5,", "-5,"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c-fine.json"),
        LEVEL_JSON.replace("\"ok\"", "\"fine\""),
    )
    .unwrap();
    let output = apfkit(&["validate", "-f", dir.path().to_str().unwrap()], b"");
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("a-broken.yaml: document 1: invalid YAML"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "b-invalid.json: document 1: PriorityLevelConfiguration/ok: spec.limited.nominalConcurrencyShares"
        ),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
}

/// A TLS server in Python answering `/metrics` and the priority-level dump as `mode` says:
/// `huge` (80 MiB of text), `garbage`, or `forbidden` (403). Answers its port.
const HOSTILE_METRICS: &str = r#"
import http.server, ssl, sys
mode = sys.argv[1]
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *args):
        pass
    def do_GET(self):
        if mode == "forbidden":
            body = b"forbidden: who are you"
            self.send_response(403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/apis":
            body = b'{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"flowcontrol.apiserver.k8s.io","versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode != "huge" or self.path.startswith("/debug/"):
            body = b"PriorityLevelName, ActiveQueues\nx, 1\n" if self.path.startswith("/debug/") else b"\x00\xff{{{ not # TYPE metrics\napiserver_flowcontrol_x{priority_level=\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if mode == "huge":
            line = b"apiserver_flowcontrol_current_executing_seats{priority_level=\"x\"} 1\n" * 16384
            try:
                for _ in range(80 * 1024 * 1024 // len(line) + 1):
                    self.wfile.write(line)
            except (BrokenPipeError, ConnectionResetError):
                pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// `apfkit status`, and `apfkit limits` reading a live cluster, against a server that answers
/// hostile metrics and lists: an answer past 64 MiB is refused in bounded memory, a 403 is an
/// error naming the path and the status, garbage metric lines are left out and a garbage list
/// is an error naming its path; never a panic.
#[test]
fn status_refuses_hostile_metrics_in_bounded_memory() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
        ])
        .args(["/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(made.success(), "openssl made a certificate");
    for (mode, said) in [
        ("huge", "/metrics: length limit exceeded"),
        (
            "forbidden",
            "/metrics: 403 Forbidden: forbidden: who are you",
        ),
        ("garbage", ""),
    ] {
        let mut server = Command::new("python3")
            .args(["-c", HOSTILE_METRICS, mode])
            .arg(&cert)
            .arg(&key)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let kubeconfig = dir.path().join(format!("{mode}.kubeconfig"));
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:{}\", insecure-skip-tls-verify: true}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
                port.trim()
            ),
        )
        .unwrap();
        let list = [
            "limits",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--kubernetes-version",
            "1.35",
        ];
        let (listed, list_peak_mib) = super::apfkit_peak(&list, 1024);
        let (output, peak_mib) = super::apfkit_peak(
            &[
                "status",
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--interval",
                "0s",
                "-o",
                "json",
            ],
            1024,
        );
        let _ = server.kill();
        let _ = server.wait();
        let list_said = stderr(&listed);
        assert_eq!(listed.status.code(), Some(1), "{mode}: {list_said}");
        assert!(list_peak_mib < 160, "{mode}: peak {list_peak_mib} MiB");
        let list_expected = match mode {
            "huge" => "/prioritylevelconfigurations?limit=500: length limit exceeded",
            "forbidden" => "discovery: ",
            _ => "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations: ",
        };
        assert!(list_said.contains(list_expected), "{mode}: {list_said}");
        assert!(!list_said.contains("panicked"), "{mode}: {list_said}");
        let stderr = stderr(&output);
        assert!(!stderr.contains("panicked"), "{mode}: {stderr}");
        assert!(peak_mib < 160, "{mode}: peak {peak_mib} MiB");
        if mode == "garbage" {
            // Lines prometheus-parse cannot read are left out: nothing is made up from them;
            // the dump's level stands.
            assert!(output.status.success(), "{stderr}");
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            let x = &report["priorityLevels"][0];
            assert_eq!(x["name"], "x", "{report}");
            assert_eq!(x["executingSeats"]["max"], 0.0, "{report}");
            assert_eq!(x["nominalLimit"], 0.0, "{report}");
            assert_eq!(x["activeQueues"]["max"], 1.0, "{report}");
        } else {
            assert_eq!(output.status.code(), Some(1), "{mode}: {stderr}");
            assert!(stderr.contains(said), "{mode}: {stderr}");
        }
    }
}

/// A kubeconfig, or a file it names, that is an endless device is read up to the limit and
/// refused naming it, whether given by `--kubeconfig` or `$KUBECONFIG`: never read until
/// memory runs out.
#[test]
fn endless_kubeconfigs_and_the_files_they_name_are_refused_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let naming = dir.path().join("kubeconfig");
    std::fs::write(
        &naming,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {client-certificate: /dev/zero, client-key: /dev/zero}}]\n\
         contexts: [{name: c, context: {cluster: k, user: u}}]\n",
    )
    .unwrap();
    let naming = naming.to_str().unwrap();
    for (args, environment) in [
        (vec!["status", "--kubeconfig", "/dev/zero"], None),
        (vec!["status", "--kubeconfig", naming], None),
        (vec!["status"], Some("/dev/zero")),
        (vec!["bootstrap", "--diff", "--context", "c"], Some(naming)),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command.args(&args).env_remove("KUBECONFIG");
        if let Some(kubeconfig) = environment {
            command.env("KUBECONFIG", kubeconfig);
        }
        let output = super::run_within(command, b"", std::time::Duration::from_secs(30), |_| {});
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("/dev/zero: larger than 4 MiB"),
            "{args:?} {environment:?}: {}",
            stderr(&output)
        );
    }
}
