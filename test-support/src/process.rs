//! Running a command under test: fed its input, both outputs read while it runs, killed and
//! failed after a time limit (no hung test); a free loopback port for a server to listen on,
//! and polling until something holds, within a limit.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` feeding `stdin`, calling `sample` with its pid while it runs (every 2 ms);
/// kills it and fails the test if it has not finished after `limit`.
///
/// # Panics
///
/// When the command cannot start or does not finish within `limit`.
pub fn run_within(
    mut command: Command,
    stdin: &[u8],
    limit: Duration,
    mut sample: impl FnMut(u32),
) -> Output {
    // Its own process group, so that what it leaves running (a script's background server)
    // can be ended with it.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().expect("piped");
    let stdin = stdin.to_vec();
    // The command may exit before reading everything (a usage error); that is fine.
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    // Read both pipes while waiting, so that a large output cannot block the command.
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("piped")));
    let stderr = collect(Box::new(child.stderr.take().expect("piped")));
    let started = Instant::now();
    let status = loop {
        sample(child.id());
        if let Some(status) = child.try_wait().expect("waitable") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            kill_group(child.id());
            panic!("{command:?} did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // A process it left behind may hold its outputs open (a script that failed before it
    // stopped the server it started): given a moment, it is ended with its group, so that
    // the outputs end and the test goes on to report the failure.
    let ended = Instant::now();
    while !(stdout.is_finished() && stderr.is_finished()) {
        if ended.elapsed() > Duration::from_secs(5) {
            kill_group(child.id());
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = feeder.join();
    Output {
        status,
        stdout: stdout.join().expect("read"),
        stderr: stderr.join().expect("read"),
    }
}

/// Ends every process of the group `leader` leads (with `kill`, as this crate runs no unsafe
/// code).
fn kill_group(leader: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{leader}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Starts a server that says `... listening on https://ADDRESS; ...` on its standard error
/// (as `apfkit serve` and the example servers do), after at most a few warnings, waits for
/// that line and answers the child and the URL. The rest of its standard error is read and
/// dropped, so that it never blocks on a full pipe.
///
/// # Panics
///
/// When the command cannot start, or ends or says ten other lines before that one.
pub fn start_server(mut command: Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped"));
    let mut said = String::new();
    let mut url = None;
    for _ in 0..10 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        url = line
            .split_whitespace()
            .find(|w| w.starts_with("https://"))
            .map(|w| w.trim_end_matches(';').to_owned())
            .filter(|_| line.contains("listening on"));
        said.push_str(&line);
        if url.is_some() {
            break;
        }
    }
    let Some(url) = url else {
        // No server to hand back, so none to stop later: stop it here.
        let _ = child.kill();
        let _ = child.wait();
        panic!("{command:?} did not start: {said}");
    };
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = stderr.read_to_end(&mut rest);
    });
    (child, url)
}

/// A port of 127.0.0.1 free when asked (bound, then released), for a command that listens
/// on a fixed one.
///
/// # Panics
///
/// When no port can be bound.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// Asks `probe` every 100 ms until it answers something, for at most `limit`; `what` names
/// what was waited for.
///
/// # Panics
///
/// When `probe` has answered nothing after `limit`.
pub fn eventually<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(start.elapsed() < limit, "still not {what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// kubectl for the cluster of `kubeconfig`, with a `HOME` beside it: no discovery cache
/// shared between tests or with the user's.
///
/// # Panics
///
/// A kubeconfig path without a parent folder.
pub fn kubectl_command(kubeconfig: &Path) -> Command {
    let mut command = Command::new("kubectl");
    command
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().expect("a folder"));
    command
}

/// Runs kubectl with `args` and `stdin` for the cluster of `kubeconfig`, failing the test
/// after a minute.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut command = kubectl_command(kubeconfig);
    command.args(args);
    run_within(command, stdin, Duration::from_secs(60), |_| {})
}

/// [`kubectl`]'s standard output.
///
/// # Panics
///
/// When kubectl failed, with what it said; output that is not UTF-8.
pub fn kubectl_ok(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> String {
    let output = kubectl(kubeconfig, args, stdin);
    assert!(
        output.status.success(),
        "kubectl {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// A client certificate and its key, as files.
pub type Identity<'a> = (&'a Path, &'a Path);

/// A whole HTTPS answer read with curl (`-sS -i`) trusting `ca`, as `identity` when given,
/// with `args` (the URL among them), within 30 s: the head, an empty line, the body, line
/// ends made `\n`. [`split_head`] parts them.
pub fn curl_answer(ca: &Path, identity: Option<Identity<'_>>, args: &[&str]) -> String {
    let mut curl = Command::new("curl");
    curl.args(["-sS", "-i", "--cacert"]).arg(ca);
    if let Some((certificate, key)) = identity {
        curl.arg("--cert").arg(certificate).arg("--key").arg(key);
    }
    curl.args(args);
    let answer = run_within(curl, b"", Duration::from_secs(30), |_| {});
    String::from_utf8_lossy(&answer.stdout).replace("\r\n", "\n")
}

/// An answer of [`curl_answer`] as its head (status line and headers) and its body.
pub fn split_head(answer: &str) -> (&str, &str) {
    answer.split_once("\n\n").unwrap_or((answer, ""))
}

/// A FIFO at `path`, made by `mkfifo`.
///
/// # Panics
///
/// When `mkfifo` is missing or fails.
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("this test needs mkfifo: {e}"));
    assert!(status.success(), "mkfifo {}: {status}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script that fails and leaves a process holding its output (a server it started in
    /// the background) is reported, not waited for.
    #[test]
    fn a_process_left_behind_does_not_hang_the_run() {
        let mut command = Command::new("bash");
        command.args(["-c", "sleep 300 & echo started; exit 3"]);
        let started = Instant::now();
        let output = run_within(command, b"", Duration::from_secs(60), |_| {});
        assert_eq!(output.status.code(), Some(3));
        assert_eq!(output.stdout, b"started\n");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
