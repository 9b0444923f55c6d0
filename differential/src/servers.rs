//! The servers compared: the reference kube-apiserver and apfkit's server on each backend.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use apfkit_server::{Config, Server, Storage};
use apfkit_test_support::etcd::Etcd;
use apfkit_test_support::reference::KubeApiserver;
use apfkit_test_support::requests;

use crate::sequence::Sequence;
use crate::session::{Session, Transcript};

/// A case: a script of requests sent through a [`Session`].
pub type Case = for<'a> fn(&'a mut Session) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What [`Servers::compare`] runs on each server: a case, or a sequence's requests.
trait Script:
    for<'a> Fn(&'a mut Session) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> + Sync
{
}

impl<C> Script for C where
    C: for<'a> Fn(&'a mut Session) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> + Sync
{
}

/// `script` as a [`Script`] (a closure's signature is not inferred higher-ranked).
fn as_script<C>(script: C) -> C
where
    C: for<'a> Fn(&'a mut Session) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> + Sync,
{
    script
}

/// The environment variable naming a folder to write every transcript to.
pub const DUMP_VARIABLE: &str = "APFKIT_DIFFERENTIAL_DUMP";

/// The bearer tokens every server knows (`--token-auth-file`): a user with groups and one
/// without.
pub const TOKENS: &str =
    "token-of-tina,tina,tina-uid,\"reviewers,auditors\"\ntoken-of-tom,tom,tom-uid\n";

/// Which server a transcript came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// kube-apiserver, the judge.
    Reference,
    /// apfkit's server on its embedded store.
    Embedded,
    /// apfkit's server on etcd.
    Etcd,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Target::Reference => "kube-apiserver",
            Target::Embedded => "apfkit (embedded store)",
            Target::Etcd => "apfkit (etcd)",
        })
    }
}

/// The audit policy of every server: what a case sends in the namespace `audited` at
/// `RequestResponse`, FlowSchemas at `Metadata`, `/version` at `Request`, nothing else.
pub const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  namespaces: [audited]
- level: Metadata
  resources:
  - group: flowcontrol.apiserver.k8s.io
    resources: [flowschemas]
- level: Request
  nonResourceURLs: [/version]
- level: None
";

/// The reference and apfkit's server on each backend, running until dropped.
pub struct Servers {
    reference: KubeApiserver,
    embedded: Server,
    on_etcd: Server,
    /// Where each server writes its audit events, by [`Target`] order.
    audit_logs: [PathBuf; 3],
    // Dropped after the servers that use them.
    _etcd: Etcd,
    _data: tempfile::TempDir,
}

impl Servers {
    /// Starts the three servers side by side (the reference in a blocking task: it waits for
    /// its own readiness), with kube-apiserver's defaults on every one.
    ///
    /// # Panics
    ///
    /// When one does not start: the reference without its binary names the command that
    /// builds it.
    pub async fn start() -> Servers {
        let data = tempfile::tempdir().expect("a temporary folder");
        // The same bearer tokens on every server, for TokenReviews.
        let tokens = data.path().join("tokens.csv");
        std::fs::write(&tokens, TOKENS).expect("the token file");
        let flag = format!("--token-auth-file={}", tokens.display());
        // The same audit policy on every server, each with a log of its own.
        let policy = data.path().join("audit-policy.yaml");
        std::fs::write(&policy, AUDIT_POLICY).expect("the audit policy");
        let audit_logs = ["reference", "embedded", "etcd"]
            .map(|name| data.path().join(format!("{name}-audit.log")));
        let audit_flags = [
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", audit_logs[0].display()),
        ];
        let reference = tokio::task::spawn_blocking(move || {
            KubeApiserver::start(&[&flag, &audit_flags[0], &audit_flags[1]])
        });
        let with_tokens = |mut config: Config, log: &PathBuf| {
            config.tokens = Some(apfkit_server::Tokens {
                source: "the differential suite's tokens".to_owned(),
                csv: TOKENS.to_owned(),
            });
            config.audit = apfkit_server::AuditConfig {
                policy_file: Some(policy.clone()),
                log_path: Some(log.clone()),
                ..apfkit_server::AuditConfig::default()
            };
            // The reference runs no kube-controller-manager: nothing runs its migrations,
            // collects its garbage, or makes a namespace's ServiceAccount and root CA.
            config.controllers.storage_version_migrator = false;
            config.controllers.garbage_collector = false;
            config.controllers.service_account = false;
            config.controllers.root_ca_certificate_publisher = false;
            config
        };
        // The etcd the reference runs on, so that both stores are the same release.
        let etcd = Etcd::start_binary(
            &apfkit_test_support::reference::binary("etcd")
                .display()
                .to_string(),
            &[],
        );
        let embedded = apfkit_server::start(with_tokens(
            Config::new(data.path().join("embedded")),
            &audit_logs[1],
        ))
        .await
        .expect("apfkit's server starts on its embedded store");
        let mut config = with_tokens(Config::new(data.path().join("etcd")), &audit_logs[2]);
        config.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
        let on_etcd = apfkit_server::start(config)
            .await
            .expect("apfkit's server starts on etcd");
        let reference = match reference.await {
            Ok(reference) => reference,
            Err(failed) => std::panic::resume_unwind(failed.into_panic()),
        };
        Servers {
            reference,
            embedded,
            on_etcd,
            audit_logs,
            _etcd: etcd,
            _data: data,
        }
    }

    async fn run<C: Script>(&self, target: Target, case: &C) -> Transcript {
        let kubeconfig = match target {
            Target::Reference => self.reference.kubeconfig(),
            Target::Embedded => self.embedded.kubeconfig().to_owned(),
            Target::Etcd => self.on_etcd.kubeconfig().to_owned(),
        };
        let audit_log = match target {
            Target::Reference => &self.audit_logs[0],
            Target::Embedded => &self.audit_logs[1],
            Target::Etcd => &self.audit_logs[2],
        };
        let mut session = Session::new(
            requests::client(&kubeconfig, "apfkit").await,
            requests::client(&kubeconfig, "apfkit-user").await,
            audit_log.clone(),
        );
        case(&mut session).await;
        session.into_transcript()
    }

    /// Runs `case` on every server at once and holds each apfkit transcript to the
    /// reference's; answers how many requests the case sent each server, or where the
    /// transcripts differ.
    ///
    /// With `APFKIT_DIFFERENTIAL_DUMP` set to a folder, each transcript is also written there
    /// whole, as `NAME.TARGET.txt`, for reading what a server answered.
    pub async fn compare(&self, name: &str, case: Case) -> Result<usize, String> {
        self.compare_script(name, &case).await
    }

    /// [`Servers::compare`] of a [`Sequence`]'s requests.
    pub async fn compare_sequence(&self, name: &str, sequence: &Sequence) -> Result<usize, String> {
        let script = as_script(|session| {
            let sequence = sequence.clone();
            Box::pin(async move { sequence.run(session).await })
        });
        self.compare_script(name, &script).await
    }

    async fn compare_script<C: Script>(&self, name: &str, case: &C) -> Result<usize, String> {
        let (reference, embedded, on_etcd) = tokio::join!(
            self.run(Target::Reference, case),
            self.run(Target::Embedded, case),
            self.run(Target::Etcd, case),
        );
        if let Some(folder) = std::env::var_os(DUMP_VARIABLE) {
            for (target, transcript) in [
                (Target::Reference, &reference),
                (Target::Embedded, &embedded),
                (Target::Etcd, &on_etcd),
            ] {
                let text: Vec<String> = transcript
                    .exchanges
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                let file = std::path::Path::new(&folder).join(format!("{name}.{target:?}.txt"));
                std::fs::write(&file, text.join("\n\n"))
                    .map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        for (target, transcript) in [(Target::Embedded, &embedded), (Target::Etcd, &on_etcd)] {
            difference(&reference, target, transcript)?;
        }
        Ok(reference.exchanges.len())
    }
}

/// Where `transcript` differs from the reference's: each differing exchange with the places
/// it differs, then the first of them whole on both servers.
fn difference(
    reference: &Transcript,
    target: Target,
    transcript: &Transcript,
) -> Result<(), String> {
    let mut report = String::new();
    let mut first = None;
    for (index, (expected, answered)) in reference
        .exchanges
        .iter()
        .zip(&transcript.exchanges)
        .enumerate()
    {
        if expected != answered {
            let paths = crate::normalize::differences(&expected.summary(), &answered.summary());
            report.push_str(&format!(
                "exchange {} ({}) differs on {target}:\n  {}\n",
                index + 1,
                expected.request,
                paths.join("\n  ")
            ));
            first.get_or_insert((expected, answered));
        }
    }
    if reference.exchanges.len() != transcript.exchanges.len() {
        report.push_str(&format!(
            "{} exchanges with {}, {} with {target}\n",
            reference.exchanges.len(),
            Target::Reference,
            transcript.exchanges.len()
        ));
    }
    match first {
        None if report.is_empty() => Ok(()),
        None => Err(report),
        Some((expected, answered)) => Err(format!(
            "{report}--- {}:\n{expected}\n--- {target}:\n{answered}",
            Target::Reference
        )),
    }
}
