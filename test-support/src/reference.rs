//! The reference: the real kube-apiserver of the Kubernetes release apfkit serves, built from
//! its Go module by `reference/build` (which `.ci/reference` runs) and started here as
//! controller-runtime's envtest starts it: its own etcd ([`Etcd`], the release kube-apiserver
//! is tested with, built beside it: Debian's 3.4 lacks what WatchList needs) on loopback, a serving
//! certificate and client certificates made on the spot, RBAC authorization, and a
//! kubeconfig whose users and contexts are named as `apfkit serve`'s (`apfkit`: the
//! administrator `apfkit-admin` in `system:masters`; `apfkit-user`: a user without groups), so
//! that one request and one answer read alike on both. Nothing it is given points outside
//! loopback.
//!
//! The binaries are found in the folder `APFKIT_REFERENCE_BIN` names, which `.ci/reference`
//! sets; without it, or without the binary, starting fails, naming the command that builds it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::etcd::{Etcd, free_port};
use crate::process::{curl_answer, split_head};

/// The environment variable naming the folder of the reference binaries.
pub const BIN_VARIABLE: &str = "APFKIT_REFERENCE_BIN";

/// How long kube-apiserver may take to be ready (its post-start hooks: RBAC's bootstrap
/// roles, APF's default configuration, the `default` namespace). Seen: 5 to 15 s on 2 cores.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// The path of the reference binary `name` (`kube-apiserver`, `kubectl`, `etcd`,
/// `apfkit-client-go`).
///
/// # Panics
///
/// When `APFKIT_REFERENCE_BIN` is not set or the binary is not in that folder; the message
/// names the command that builds it.
pub fn binary(name: &str) -> PathBuf {
    let build = "run the reference suites with .ci/reference, or build the binaries with \
                 reference/build and set APFKIT_REFERENCE_BIN to the folder it prints";
    let folder = std::env::var_os(BIN_VARIABLE).unwrap_or_else(|| {
        panic!("the reference {name} is needed and {BIN_VARIABLE} is not set: {build}")
    });
    let path = Path::new(&folder).join(name);
    assert!(
        path.is_file(),
        "the reference {name} is not at {}: {build}",
        path.display()
    );
    path
}

/// A running kube-apiserver with its etcd, stopped when dropped.
pub struct KubeApiserver {
    child: Child,
    /// `https://127.0.0.1:<port>`.
    url: String,
    dir: tempfile::TempDir,
    // Dropped after the server: kube-apiserver stops first, then its store.
    etcd: Etcd,
}

/// The certificates and keys of a reference server, as files in its folder.
struct Credentials {
    ca: PathBuf,
    serving: (PathBuf, PathBuf),
    admin: (PathBuf, PathBuf),
    user: (PathBuf, PathBuf),
    /// The public key service account tokens are checked with, and the private key they are
    /// signed with.
    service_account_keys: (PathBuf, PathBuf),
}

impl KubeApiserver {
    /// Starts etcd and kube-apiserver with envtest's flags plus `extra`, and waits until
    /// `/readyz` answers 200.
    ///
    /// # Panics
    ///
    /// When the binary is missing (naming the command that builds it), or the server exits or
    /// is not ready in time (quoting the end of its log).
    pub fn start(extra: &[&str]) -> KubeApiserver {
        let binary = binary("kube-apiserver");
        let etcd = Etcd::start_binary(&self::binary("etcd").display().to_string(), &[]);
        let dir = tempfile::tempdir().expect("a temporary folder");
        let credentials = Credentials::write(dir.path());
        let port = free_port();
        let url = format!("https://127.0.0.1:{port}");
        let log = fs::File::create(dir.path().join("kube-apiserver.log")).expect("a log file");
        let path = |p: &Path| p.display().to_string();
        let mut args = vec![
            format!("--etcd-servers={}", etcd.endpoint),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            // Since 1.37 the endpoint reconciler refuses a loopback address for the
            // `kubernetes` Service's endpoints; nothing here needs them.
            "--endpoint-reconciler-type=none".to_owned(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", path(&dir.path().join("certificates"))),
            format!("--tls-cert-file={}", path(&credentials.serving.0)),
            format!("--tls-private-key-file={}", path(&credentials.serving.1)),
            format!("--client-ca-file={}", path(&credentials.ca)),
            format!("--service-account-issuer={url}"),
            format!(
                "--service-account-key-file={}",
                path(&credentials.service_account_keys.0)
            ),
            format!(
                "--service-account-signing-key-file={}",
                path(&credentials.service_account_keys.1)
            ),
            // Addresses Services are given; nothing is ever sent to them.
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            "--authorization-mode=RBAC".to_owned(),
            "--allow-privileged=true".to_owned(),
        ];
        args.extend(extra.iter().map(|flag| (*flag).to_owned()));
        let child = Command::new(&binary)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let mut server = KubeApiserver {
            child,
            url,
            dir,
            etcd,
        };
        server.write_kubeconfig(&credentials);
        server.wait_ready(&credentials);
        server
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The client URL of its etcd, to read what it stores.
    pub fn etcd_endpoint(&self) -> &str {
        &self.etcd.endpoint
    }

    /// The kubeconfig: contexts `apfkit` (current; `system:masters`) and `apfkit-user` (a
    /// plain user), trusting the server's certificate authority.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The end of the server's log, for a failure message.
    pub fn log_tail(&self) -> String {
        tail(&self.dir.path().join("kube-apiserver.log"))
    }

    fn write_kubeconfig(&self, credentials: &Credentials) {
        let path = |p: &Path| p.display().to_string();
        let user = |name: &str, (cert, key): &(PathBuf, PathBuf)| {
            format!(
                "- name: {name}\n  user:\n    client-certificate: {}\n    client-key: {}\n",
                path(cert),
                path(key)
            )
        };
        let context = |name: &str| {
            format!("- name: {name}\n  context:\n    cluster: reference\n    user: {name}\n")
        };
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: reference\n  cluster:\n    \
             server: {}\n    certificate-authority: {}\nusers:\n{}{}contexts:\n{}{}\
             current-context: apfkit\n",
            self.url,
            path(&credentials.ca),
            user("apfkit", &credentials.admin),
            user("apfkit-user", &credentials.user),
            context("apfkit"),
            context("apfkit-user"),
        );
        fs::write(self.kubeconfig(), config).expect("the kubeconfig is written");
    }

    fn wait_ready(&mut self, credentials: &Credentials) {
        let started = Instant::now();
        let ready = format!("{}/readyz", self.url);
        let (cert, key) = &credentials.admin;
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                panic!(
                    "kube-apiserver exited at start ({status}); its log ends:\n{}",
                    self.log_tail()
                );
            }
            let answer = curl_answer(&credentials.ca, Some((cert, key)), &[&ready]);
            if split_head(&answer).0.starts_with("HTTP/2 200") {
                return;
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "kube-apiserver was not ready within {READY_WITHIN:?} (last answer: {answer}); \
                 its log ends:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A running kube-controller-manager beside a [`KubeApiserver`], stopped when dropped.
pub struct ControllerManager {
    child: Child,
    log: PathBuf,
}

impl KubeApiserver {
    /// Starts kube-controller-manager 1.37 against this server as its administrator (the
    /// controllers upstream's e2e tests need: namespaces, service accounts, garbage
    /// collection, quotas), on loopback, and waits until its `/healthz` answers `ok`.
    ///
    /// # Panics
    ///
    /// When the binary is missing (naming the command that builds it), or the manager exits
    /// or is not healthy in time (quoting the end of its log).
    pub fn start_controller_manager(&self) -> ControllerManager {
        self.start_controller_manager_with(&[])
    }

    /// [`KubeApiserver::start_controller_manager`] with `extra` flags (`--controllers=...`).
    ///
    /// # Panics
    ///
    /// As [`KubeApiserver::start_controller_manager`].
    pub fn start_controller_manager_with(&self, extra: &[&str]) -> ControllerManager {
        let binary = binary("kube-controller-manager");
        let kubeconfig = self.kubeconfig().display().to_string();
        let port = free_port();
        let log = self.dir.path().join("kube-controller-manager.log");
        let file = fs::File::create(&log).expect("a log file");
        let child = Command::new(&binary)
            .args([
                format!("--kubeconfig={kubeconfig}"),
                format!("--authentication-kubeconfig={kubeconfig}"),
                format!("--authorization-kubeconfig={kubeconfig}"),
                "--leader-elect=false".to_owned(),
                "--bind-address=127.0.0.1".to_owned(),
                format!("--secure-port={port}"),
                format!(
                    "--service-account-private-key-file={}",
                    self.dir.path().join("service-account.key").display()
                ),
                format!(
                    "--root-ca-file={}",
                    self.dir.path().join("ca.crt").display()
                ),
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("the log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let mut manager = ControllerManager { child, log };
        let started = Instant::now();
        let healthz = format!("https://127.0.0.1:{port}/healthz");
        loop {
            if let Some(status) = manager.child.try_wait().expect("the manager's status") {
                panic!(
                    "kube-controller-manager exited at start ({status}); its log ends:\n{}",
                    manager.log_tail()
                );
            }
            let answer = Command::new("curl")
                .args(["-sk", "--max-time", "2", &healthz])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if answer == "ok" {
                return manager;
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "kube-controller-manager was not healthy within {READY_WITHIN:?}; its log \
                 ends:\n{}",
                manager.log_tail()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl ControllerManager {
    /// The end of the manager's log, for a failure message.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }
}

/// The last 12 lines of the log at `path`.
fn tail(path: &Path) -> String {
    let log = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

impl Drop for ControllerManager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for KubeApiserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Credentials {
    /// Makes a certificate authority, a serving certificate for 127.0.0.1 and localhost, the
    /// two clients' certificates and the service account signing key, as files in `dir`.
    fn write(dir: &Path) -> Credentials {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "reference-ca");
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let issuer =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().expect("a key"))
                .expect("the authority");
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            fs::write(&path, text).expect("a credential is written");
            path
        };
        let sign = |name: &str, params: rcgen::CertificateParams| {
            let key = rcgen::KeyPair::generate().expect("a key");
            let cert = params.signed_by(&key, &issuer).expect("a certificate");
            (
                write(&format!("{name}.crt"), cert.pem()),
                write(&format!("{name}.key"), key.serialize_pem()),
            )
        };
        let mut serving =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("names");
        serving.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let client = |user: &str, groups: &[&str]| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, user);
            for group in groups {
                params
                    .distinguished_name
                    .push(rcgen::DnType::OrganizationName, *group);
            }
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            params
        };
        Credentials {
            ca: write("ca.crt", issuer.pem()),
            serving: sign("serving", serving),
            admin: sign("admin", client("apfkit-admin", &["system:masters"])),
            user: sign("user", client("apfkit-user", &[])),
            service_account_keys: {
                let key = rcgen::KeyPair::generate().expect("a key");
                (
                    write("service-account.pub", key.public_key_pem()),
                    write("service-account.key", key.serialize_pem()),
                )
            },
        }
    }
}
