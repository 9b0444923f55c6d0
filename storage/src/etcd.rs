//! etcd as kube-apiserver's store: connecting like etcdctl (endpoints, TLS), and reading the
//! keys of the resources this toolkit knows, page by page.

use std::path::PathBuf;
use std::time::Duration;

use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, GetOptions, Identity, PutOptions,
    TlsOptions, Txn, TxnOp, TxnOpResponse,
};

use crate::envelope::{EnvelopeError, Stored, inspect};

/// A resource kept in etcd, and where: `<prefix>/<path>/<name>` (namespaced resources add
/// `<namespace>/` before the name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredResource {
    /// API group.
    pub group: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// The path under the prefix. kube-apiserver keeps its own groups' resources under the
    /// bare plural (`flowschemas`), and kube-aggregator its APIServices under
    /// `apiregistration.k8s.io/apiservices`.
    pub path: &'static str,
}

/// Every resource of flowcontrol and apiregistration, with its etcd path.
pub const RESOURCES: &[StoredResource] = &[
    StoredResource {
        group: "flowcontrol.apiserver.k8s.io",
        plural: "flowschemas",
        path: "flowschemas",
    },
    StoredResource {
        group: "flowcontrol.apiserver.k8s.io",
        plural: "prioritylevelconfigurations",
        path: "prioritylevelconfigurations",
    },
    StoredResource {
        group: "apiregistration.k8s.io",
        plural: "apiservices",
        path: "apiregistration.k8s.io/apiservices",
    },
];

/// How to reach etcd, with etcdctl's choices.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// Client URLs (`http://127.0.0.1:2379`, `https://...`).
    pub endpoints: Vec<String>,
    /// CA bundle (PEM) to verify the server with.
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM), with `key`.
    pub cert: Option<PathBuf>,
    /// Client key (PEM), with `cert`.
    pub key: Option<PathBuf>,
    /// The key prefix kube-apiserver was started with (`--etcd-prefix`, default `/registry`).
    pub prefix: String,
    /// Deadline of the connection and of each request.
    pub timeout: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".to_owned()],
            ca: None,
            cert: None,
            key: None,
            prefix: "/registry".to_owned(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Why etcd could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A TLS file could not be read.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// `--cert` without `--key`, or the other way round.
    #[error("a client certificate needs both --cert and --key")]
    HalfIdentity,
    /// Connecting failed.
    #[error("connecting to etcd at {endpoints}: {message}")]
    Connect {
        /// The endpoints tried.
        endpoints: String,
        /// The client's error.
        message: String,
    },
    /// A request failed.
    #[error("etcd request for {what}: {message}")]
    Request {
        /// What was asked.
        what: String,
        /// The client's error.
        message: String,
    },
}

/// One stored object's key and what its value says.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The etcd key (non-UTF-8 bytes shown as U+FFFD).
    pub key: String,
    /// Its resource.
    pub resource: StoredResource,
    /// Its encoding, apiVersion and kind, or why the value is not a stored object.
    pub stored: Result<Stored, EnvelopeError>,
    /// Size of the value in bytes.
    pub size: usize,
    /// The revision of its last change (for compare-and-swap).
    pub mod_revision: i64,
}

/// Keys read per request: bounded memory however many objects are stored.
const PAGE: i64 = 200;

/// A connection to the etcd of a kube-apiserver.
pub struct Store {
    client: Client,
    prefix: String,
}

fn read(path: &PathBuf) -> Result<Vec<u8>, StorageError> {
    std::fs::read(path).map_err(|err| StorageError::File {
        path: path.clone(),
        message: err.to_string(),
    })
}

impl Store {
    /// Connects (and checks the connection with a status request).
    pub async fn connect(options: &EtcdOptions) -> Result<Store, StorageError> {
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.timeout)
            .with_timeout(options.timeout);
        let wants_tls = options.ca.is_some()
            || options.cert.is_some()
            || options.endpoints.iter().any(|e| e.starts_with("https://"));
        if wants_tls {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &options.ca {
                tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
            }
            match (&options.cert, &options.key) {
                (Some(cert), Some(key)) => {
                    tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
                }
                (None, None) => {}
                _ => return Err(StorageError::HalfIdentity),
            }
            connect = connect.with_tls(tls);
        }
        let endpoints = options.endpoints.join(",");
        let failed = |err: etcd_client::Error| StorageError::Connect {
            endpoints: endpoints.clone(),
            message: err.to_string(),
        };
        let mut client = tokio::time::timeout(
            options.timeout,
            Client::connect(&options.endpoints, Some(connect)),
        )
        .await
        .map_err(|_| StorageError::Connect {
            endpoints: endpoints.clone(),
            message: format!("no answer within {:?}", options.timeout),
        })?
        .map_err(failed)?;
        client.status().await.map_err(failed)?;
        Ok(Store {
            client,
            prefix: options.prefix.trim_end_matches('/').to_owned(),
        })
    }

    /// The key prefix of a resource: `<prefix>/<path>/`.
    pub fn resource_prefix(&self, resource: &StoredResource) -> String {
        format!("{}/{}/", self.prefix, resource.path)
    }

    /// How many keys `resource` has.
    pub async fn count(&mut self, resource: &StoredResource) -> Result<u64, StorageError> {
        let prefix = self.resource_prefix(resource).into_bytes();
        let options = GetOptions::new()
            .with_range(prefix_end(&prefix))
            .with_count_only();
        let response = self
            .client
            .get(prefix.clone(), Some(options))
            .await
            .map_err(|err| request_error(&prefix, err))?;
        Ok(u64::try_from(response.count()).unwrap_or(0))
    }

    /// One page (up to 200 keys) of `resource`, with values, starting at `from` (the resource
    /// prefix for the first page); the key after the page, if any.
    pub async fn page(
        &mut self,
        resource: &StoredResource,
        from: Option<Vec<u8>>,
    ) -> Result<(Vec<RawValue>, Option<Vec<u8>>), StorageError> {
        let prefix = self.resource_prefix(resource).into_bytes();
        let start = from.unwrap_or_else(|| prefix.clone());
        let options = GetOptions::new()
            .with_range(prefix_end(&prefix))
            .with_limit(PAGE);
        let response = self
            .client
            .get(start, Some(options))
            .await
            .map_err(|err| request_error(&[&prefix[..], b"*"].concat(), err))?;
        let values = response.kvs().iter().map(RawValue::of).collect();
        let next = match response.kvs().last() {
            Some(last) if response.more() => {
                let mut next = last.key().to_vec();
                next.push(0);
                Some(next)
            }
            _ => None,
        };
        Ok((values, next))
    }

    /// The value of `key` and its mod revision, if the key exists.
    pub async fn get(&mut self, key: &[u8]) -> Result<Option<RawValue>, StorageError> {
        let response = self
            .client
            .get(key, None)
            .await
            .map_err(|err| request_error(key, err))?;
        Ok(response.kvs().first().map(RawValue::of))
    }

    /// Writes `value` to `key` only if the key's mod revision is still `mod_revision`
    /// (compare-and-swap, as kube-apiserver's `GuaranteedUpdate`); `false` on a conflict.
    pub async fn swap(
        &mut self,
        key: &[u8],
        value: Vec<u8>,
        mod_revision: i64,
    ) -> Result<bool, StorageError> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, mod_revision)])
            .and_then([TxnOp::put(key, value, None::<PutOptions>)]);
        let response = self
            .client
            .txn(txn)
            .await
            .map_err(|err| request_error(key, err))?;
        Ok(response.succeeded())
    }

    /// Writes every swap in one transaction if no key's mod revision changed, and none of them
    /// otherwise; then the current value of every key (`None`: deleted), in order, read in the
    /// same transaction.
    ///
    /// One transaction for many keys is what makes a migration fast: etcd applies its
    /// transactions one at a time, so a transaction per key leaves it waiting on the apply loop.
    /// Every key is still written only over the revision it was read at. etcd refuses more
    /// than `--max-txn-ops` (default 128) writes in one transaction.
    pub async fn swap_batch(&mut self, swaps: &[Swap]) -> Result<Swapped, StorageError> {
        let compares = swaps
            .iter()
            .map(|s| Compare::mod_revision(s.key.as_slice(), CompareOp::Equal, s.mod_revision));
        let puts = swaps
            .iter()
            .map(|s| TxnOp::put(s.key.as_slice(), s.value.as_slice(), None::<PutOptions>));
        let gets = swaps
            .iter()
            .map(|s| TxnOp::get(s.key.as_slice(), None::<GetOptions>));
        let txn = Txn::new()
            .when(compares.collect::<Vec<_>>())
            .and_then(puts.collect::<Vec<_>>())
            .or_else(gets.collect::<Vec<_>>());
        let first = swaps.first().map_or(&[][..], |s| s.key.as_slice());
        let response = self
            .client
            .txn(txn)
            .await
            .map_err(|err| request_error(first, err))?;
        if response.succeeded() {
            return Ok(Swapped::All);
        }
        let current = response
            .op_responses()
            .into_iter()
            .map(|op| match op {
                TxnOpResponse::Get(get) => Ok(get.kvs().first().map(RawValue::of)),
                other => Err(StorageError::Request {
                    what: String::from_utf8_lossy(first).into_owned(),
                    message: format!("etcd answered a read with {other:?}"),
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if current.len() != swaps.len() {
            return Err(StorageError::Request {
                what: String::from_utf8_lossy(first).into_owned(),
                message: format!(
                    "etcd answered {} reads with {} values",
                    swaps.len(),
                    current.len()
                ),
            });
        }
        Ok(Swapped::None { current })
    }

    /// Writes `value` to `key` unconditionally (for seeding test data and benchmarks).
    pub async fn put(&mut self, key: &[u8], value: Vec<u8>) -> Result<(), StorageError> {
        self.client
            .put(key, value, None)
            .await
            .map(drop)
            .map_err(|err| request_error(key, err))
    }

    /// A handle on the same connection, for requests in parallel.
    pub fn handle(&self) -> Store {
        Store {
            client: self.client.clone(),
            prefix: self.prefix.clone(),
        }
    }

    /// The prefix under which kube-apiserver keeps everything (`--etcd-prefix`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every key of every known resource, in key order per resource, with what its value
    /// says; read `PAGE` keys at a time.
    pub async fn list(&mut self) -> Result<Vec<Entry>, StorageError> {
        let mut entries = Vec::new();
        for resource in RESOURCES {
            let mut from = None;
            loop {
                let (page, next) = self.page(resource, from.take()).await?;
                entries.extend(page.into_iter().map(|raw| Entry {
                    key: String::from_utf8_lossy(&raw.key).into_owned(),
                    resource: *resource,
                    stored: inspect(&raw.value),
                    size: raw.value.len(),
                    mod_revision: raw.mod_revision,
                }));
                match next {
                    Some(next) => from = Some(next),
                    None => break,
                }
            }
        }
        Ok(entries)
    }
}

/// One write of [`Store::swap_batch`]: `value` to `key` if its mod revision is still
/// `mod_revision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swap {
    /// The key.
    pub key: Vec<u8>,
    /// The new value.
    pub value: Vec<u8>,
    /// The mod revision the key was read at.
    pub mod_revision: i64,
}

/// What [`Store::swap_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// Every key was written.
    All,
    /// Some key had changed, so nothing was written; the current value of every key, in order
    /// (`None`: the key is gone).
    None {
        /// The keys' current values.
        current: Vec<Option<RawValue>>,
    },
}

/// A stored key with its value and mod revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawValue {
    /// The key.
    pub key: Vec<u8>,
    /// The value as stored.
    pub value: Vec<u8>,
    /// The revision of the key's last change.
    pub mod_revision: i64,
}

impl RawValue {
    fn of(kv: &etcd_client::KeyValue) -> RawValue {
        RawValue {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            mod_revision: kv.mod_revision(),
        }
    }
}

fn request_error(key: &[u8], err: etcd_client::Error) -> StorageError {
    StorageError::Request {
        what: String::from_utf8_lossy(key).into_owned(),
        message: err.to_string(),
    }
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff: to the end of the keyspace.
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_resource_has_an_etcd_path_and_no_other() {
        let mut served: Vec<(&str, &str)> = apfkit_types::KINDS
            .iter()
            .filter_map(|k| Some((k.group, k.plural?)))
            .collect();
        served.sort();
        served.dedup();
        let mut known: Vec<(&str, &str)> = RESOURCES.iter().map(|r| (r.group, r.plural)).collect();
        known.sort();
        assert_eq!(known, served);
    }

    #[test]
    fn prefix_ends_follow_etcds_rule() {
        assert_eq!(
            prefix_end(b"/registry/flowschemas/"),
            b"/registry/flowschemas0"
        );
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    }
}
