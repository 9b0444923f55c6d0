//! A real etcd server for tests: Debian's `etcd-server` package, on free loopback ports, in a
//! temporary data directory, stopped when dropped. Without the binary the test fails with
//! what to install; it never passes silently.
//!
//! Ports come from below Linux's ephemeral range (32768–60999), each handed out once per
//! process: a port taken with `bind(127.0.0.1:0)` and released for etcd can be given by the
//! kernel to the next `bind(0)` or outgoing connection of a test running beside it, and etcd
//! then exits with "address already in use" (seen in CI). An etcd that still exits at start is
//! started again on other ports, and its own log is quoted when it gives up.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// How many times an etcd that exits at start is started again on fresh ports.
const START_ATTEMPTS: usize = 4;

/// The ports tests hand to etcd: below the kernel's ephemeral range, so that no `bind(0)` and
/// no outgoing connection takes one between its check and etcd's bind.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A running etcd.
pub struct Etcd {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    binary: String,
    args: Vec<String>,
    client_port: u16,
    /// The temporary directory: etcd's data in `data/`, its log in `etcd.log`.
    dir: tempfile::TempDir,
}

/// The etcd tests start: `$ETCD`, else `etcd` on the path.
fn default_binary() -> String {
    std::env::var("ETCD").unwrap_or_else(|_| "etcd".to_owned())
}

/// A loopback port no other etcd of this process was given and nothing listens on. Test
/// binaries run one after another, so each starts from its own offset (its process id) only to
/// keep clear of an etcd a crashed earlier run left behind.
pub(crate) fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let span = PORTS.end - PORTS.start;
    let offset = (std::process::id() % u32::from(span)) as u16;
    for _ in 0..span {
        let taken = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        let port = PORTS.start + (offset + taken) % span;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {PORTS:?}")
}

impl Etcd {
    /// Starts etcd and waits until it answers (at most 20 s).
    pub fn start() -> Etcd {
        Etcd::start_with(&[])
    }

    /// Starts etcd with `extra` flags (such as `--max-request-bytes`), and waits until it
    /// answers.
    pub fn start_with(extra: &[&str]) -> Etcd {
        Etcd::start_binary(&default_binary(), extra)
    }

    /// Starts the etcd at `binary` (the reference's own build of the release kube-apiserver
    /// is tested with) with `extra` flags, and waits until it answers.
    pub fn start_binary(binary: &str, extra: &[&str]) -> Etcd {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let (client, peer) = (free_port(), free_port());
            let cluster = format!("test=http://127.0.0.1:{peer}");
            let mut etcd = Etcd::spawn_member(binary, "test", client, peer, &cluster, extra);
            match etcd.wait_listening() {
                Ok(()) => return etcd,
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "etcd did not start in {START_ATTEMPTS} attempts:\n{}",
            failures.join("\n")
        )
    }

    /// Spawns one member of the cluster `initial_cluster` without waiting for it.
    fn spawn_member(
        binary: &str,
        name: &str,
        client: u16,
        peer: u16,
        initial_cluster: &str,
        extra: &[&str],
    ) -> Etcd {
        let binary = binary.to_owned();
        let data = tempfile::tempdir().unwrap();
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut args: Vec<String> = [
            "--data-dir",
            &data.path().join("data").display().to_string(),
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
        let child = spawn(&binary, &args, data.path());
        Etcd {
            child,
            endpoint,
            binary,
            args,
            client_port: client,
            dir: data,
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
        self.child = spawn(&self.binary, &self.args, self.dir.path());
        if let Err(failure) = self.wait_listening() {
            panic!("etcd did not start again: {failure}");
        }
    }

    /// Waits (at most 20 s) until the client port accepts connections; if etcd exits first,
    /// says how, with the end of its log.
    fn wait_listening(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(format!(
                    "etcd exited at start ({status}); its log ends:\n{}",
                    log_tail(self.dir.path())
                ));
            }
            if started.elapsed() > Duration::from_secs(20) {
                return Err(format!(
                    "etcd did not listen within 20 s; its log ends:\n{}",
                    log_tail(self.dir.path())
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
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
                Etcd::spawn_member(
                    &default_binary(),
                    &format!("m{i}"),
                    client,
                    peer,
                    &initial,
                    &[],
                )
            })
            .collect();
        for member in &mut members {
            if let Err(failure) = member.wait_listening() {
                panic!("an etcd cluster member did not start: {failure}");
            }
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

/// Where a member's log goes: beside its data directory, never inside it.
fn log_path(data: &std::path::Path) -> std::path::PathBuf {
    data.join("etcd.log")
}

/// The last lines etcd logged, for a failure message.
fn log_tail(data: &std::path::Path) -> String {
    let log = std::fs::read_to_string(log_path(data)).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// Starts the binary, its log appended to `data/etcd.log`; without the binary, fails naming
/// the package to install.
fn spawn(binary: &str, args: &[String], data: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(data))
        .expect("etcd's log file in its temporary directory");
    Command::new(binary)
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
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
