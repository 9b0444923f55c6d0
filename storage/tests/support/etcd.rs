//! A real etcd server for tests: Debian's `etcd-server` package, on free loopback ports, in a
//! temporary data directory, stopped when dropped. Without the binary the test fails with
//! what to install; it never passes silently.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd.
pub struct Etcd {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    binary: String,
    args: Vec<String>,
    client_port: u16,
    _data: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Etcd {
    /// Starts etcd and waits until it answers (at most 20 s).
    pub fn start() -> Etcd {
        let binary = std::env::var("ETCD").unwrap_or_else(|_| "etcd".to_owned());
        let data = tempfile::tempdir().unwrap();
        let (client, peer) = (free_port(), free_port());
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let args: Vec<String> = [
            "--data-dir",
            &data.path().display().to_string(),
            "--name",
            "test",
            "--listen-client-urls",
            &endpoint,
            "--advertise-client-urls",
            &endpoint,
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
            "--initial-cluster",
            &format!("test={peer_url}"),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let child = spawn(&binary, &args);
        let mut etcd = Etcd {
            child,
            endpoint,
            binary,
            args,
            client_port: client,
            _data: data,
        };
        etcd.wait_listening();
        etcd
    }

    /// Kills the server, as a crash would, keeping its data.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same data and ports.
    pub fn restart(&mut self) {
        self.stop();
        self.child = spawn(&self.binary, &self.args);
        self.wait_listening();
    }

    fn wait_listening(&mut self) {
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("etcd exited at start: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "etcd did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Starts the binary; without it, fails naming the package to install.
fn spawn(binary: &str, args: &[String]) -> Child {
    Command::new(binary)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "cannot start etcd ({binary}): {err}. Install Debian's etcd-server package \
                 (apt-get install etcd-server), or set ETCD to the binary."
            )
        })
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
