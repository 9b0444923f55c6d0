//! A real etcd server for tests: Debian's `etcd-server` package, on free loopback ports, in a
//! temporary data directory, stopped when dropped. Without the binary the test fails with
//! what to install; it never passes silently.

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
        Etcd::start_with(&[])
    }

    /// Starts etcd with `extra` flags (such as `--max-request-bytes`), and waits until it
    /// answers.
    pub fn start_with(extra: &[&str]) -> Etcd {
        let (client, peer) = (free_port(), free_port());
        let peer_url = format!("http://127.0.0.1:{peer}");
        let cluster = format!("test={peer_url}");
        let mut etcd = Etcd::spawn_member("test", client, peer, &cluster, extra);
        etcd.wait_listening();
        etcd
    }

    /// Spawns one member of the cluster `initial_cluster` without waiting for it.
    fn spawn_member(
        name: &str,
        client: u16,
        peer: u16,
        initial_cluster: &str,
        extra: &[&str],
    ) -> Etcd {
        let binary = std::env::var("ETCD").unwrap_or_else(|_| "etcd".to_owned());
        let data = tempfile::tempdir().unwrap();
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut args: Vec<String> = [
            "--data-dir",
            &data.path().display().to_string(),
            "--name",
            name,
            "--listen-client-urls",
            &endpoint,
            "--advertise-client-urls",
            &endpoint,
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
            "--initial-cluster",
            initial_cluster,
            "--initial-cluster-state",
            "new",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let child = spawn(&binary, &args);
        Etcd {
            child,
            endpoint,
            binary,
            args,
            client_port: client,
            _data: data,
        }
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

/// A cluster of etcd members on loopback, each with its own data directory.
pub struct Cluster {
    /// The members, in the order of their names (`m0`, `m1`, ...).
    pub members: Vec<Etcd>,
}

impl Cluster {
    /// Starts `size` members and waits until each listens and the cluster has a leader.
    pub fn start(size: usize) -> Cluster {
        let ports: Vec<(u16, u16)> = (0..size).map(|_| (free_port(), free_port())).collect();
        let initial = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members: Vec<Etcd> = ports
            .iter()
            .enumerate()
            .map(|(i, &(client, peer))| {
                Etcd::spawn_member(&format!("m{i}"), client, peer, &initial, &[])
            })
            .collect();
        for member in &mut members {
            member.wait_listening();
        }
        let cluster = Cluster { members };
        cluster.wait_until_writable(0);
        cluster
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.endpoint.clone()).collect()
    }

    /// Waits (at most 30 s) until a write through `member` succeeds: the cluster has a leader
    /// (after a member was stopped, once the others elected one). On a thread of its own, so
    /// that async tests can call it too.
    pub fn wait_until_writable(&self, member: usize) {
        let endpoint = self.members[member].endpoint.clone();
        let waiter = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let started = Instant::now();
            runtime.block_on(async {
                loop {
                    let written = async {
                        let mut client = etcd_client::Client::connect([endpoint.as_str()], None)
                            .await
                            .ok()?;
                        client.put("/cluster-ready", "yes", None).await.ok()
                    };
                    if tokio::time::timeout(Duration::from_secs(2), written)
                        .await
                        .ok()
                        .flatten()
                        .is_some()
                    {
                        return;
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(30),
                        "the etcd cluster elected no leader within 30 s"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
        });
        waiter.join().expect("the cluster has a leader");
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
