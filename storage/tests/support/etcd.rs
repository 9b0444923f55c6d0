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
        let child = Command::new(&binary)
            .arg("--data-dir")
            .arg(data.path())
            .args(["--name", "test"])
            .args(["--listen-client-urls", &endpoint])
            .args(["--advertise-client-urls", &endpoint])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("test={peer_url}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot start etcd ({binary}): {err}. Install Debian's etcd-server package \
                     (apt-get install etcd-server), or set ETCD to the binary."
                )
            });
        let mut etcd = Etcd {
            child,
            endpoint,
            _data: data,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
            if let Some(status) = etcd.child.try_wait().unwrap() {
                panic!("etcd exited at start: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "etcd did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        etcd
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
