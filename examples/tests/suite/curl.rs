//! The `widgets-webhook` binary, started as a user would, answered through curl: a real,
//! independent HTTPS client. curl must be installed (`.ci/run` installs it); without it these
//! tests fail, they do not pass.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::tls;

struct Running {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Running {
    let dir = tempfile::tempdir().unwrap();
    tls::write_certificate(dir.path(), "curl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_widgets-webhook"))
        .args(["--listen", "127.0.0.1:0", "--max-body", "65536", "--cert"])
        .arg(dir.path().join("tls.crt"))
        .arg("--key")
        .arg(dir.path().join("tls.key"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("the widgets-webhook binary starts");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    Running { child, port, dir }
}

/// curl's status code and body.
fn curl(running: &Running, arguments: &[&str]) -> (u16, String) {
    let url_base = format!("https://localhost:{}", running.port);
    let output = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "10", "--cacert"])
        .arg(running.dir.path().join("tls.crt"))
        .args(["--write-out", "\n%{http_code}"])
        .args(arguments.iter().map(|a| a.replace("BASE", &url_base)))
        .output()
        .expect("curl is installed (apt-get install curl)");
    assert!(
        output.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_owned())
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reviews")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn curl_gets_conversions_health_and_refusals() {
    let running = start();
    let data = format!("@{}", fixture("widgets-v1.json"));
    let (code, body) = curl(
        &running,
        &[
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &data,
            "BASE/convert",
        ],
    );
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(
        answer["response"]["convertedObjects"][0]["spec"]["paused"],
        true
    );

    assert_eq!(curl(&running, &["BASE/healthz"]), (200, "ok".to_owned()));
    let (code, body) = curl(&running, &["--data-binary", "{\"kind\":", "BASE/convert"]);
    assert_eq!(code, 400);
    assert!(body.starts_with("not a ConversionReview"), "{body}");
    let wrong =
        r#"{"apiVersion":"apiextensions.k8s.io/v2","kind":"ConversionReview","request":{}}"#;
    let (code, body) = curl(&running, &["--data-binary", wrong, "BASE/convert"]);
    assert_eq!(code, 400);
    assert!(body.contains("unsupported review"), "{body}");
    let big = running.dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; 100 << 10]).unwrap();
    let data = format!("@{}", big.display());
    // With `Expect: 100-continue` curl waits for the server's word before sending the body, so
    // the 413 (given on Content-Length alone) arrives before any of it; otherwise the server
    // may close the connection while curl is still sending, and curl fails with "Broken pipe".
    assert_eq!(
        curl(
            &running,
            &[
                "-H",
                "Expect: 100-continue",
                "--data-binary",
                &data,
                "BASE/convert"
            ]
        )
        .0,
        413
    );
}

#[test]
fn sigterm_stops_the_binary_cleanly() {
    let mut running = start();
    assert_eq!(curl(&running, &["BASE/healthz"]).0, 200);
    let status = Command::new("kill")
        .args(["-TERM", &running.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_missing_certificate_is_a_clear_error_and_exit_code_1() {
    let output = Command::new(env!("CARGO_BIN_EXE_widgets-webhook"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--cert",
            "/nonexistent/tls.crt",
            "--key",
            "/nonexistent/tls.key",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("widgets-webhook: /nonexistent/tls.crt:"),
        "{stderr}"
    );
}

/// The webhook commands of docs/custom-resources.md ("Your own multi-version CRD", step 3),
/// run as written: openssl makes the certificate, the binary under test stands in for
/// `cargo run`, a free port for 9443, and curl's `/healthz` answers `ok`.
#[test]
fn the_guides_webhook_commands_work_as_written() {
    let block = apfkit_test_support::guide::first_sh_block(
        "custom-resources.md",
        "Your own multi-version CRD",
    );
    let port = apfkit_test_support::process::free_port();
    let script = block
        .replace(
            "cargo run -q -p apfkit-example-widgets --bin widgets-webhook --",
            env!("CARGO_BIN_EXE_widgets-webhook"),
        )
        .replace(":9443", &format!(":{port}"));
    assert!(
        !script.contains("cargo run"),
        "the guide's command changed: {script}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path());
    let output =
        apfkit_test_support::process::run_within(command, b"", Duration::from_secs(60), |_| {});
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script}\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout, "ok", "{script}");
    assert!(dir.path().join("tls.key").exists());
}
