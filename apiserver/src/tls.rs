//! Serving credentials kept in a data directory: a certificate authority, a serving
//! certificate it signed and two client certificates (an administrator in `system:masters`
//! and a plain user), made on first start (rcgen), and a kubeconfig that trusts the authority
//! with a context for each client, so that kubectl works against the server at once.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The file names in the data directory.
const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const SERVING_CERT: &str = "serving.crt";
const SERVING_KEY: &str = "serving.key";
/// The kubeconfig written beside them.
pub const KUBECONFIG: &str = "kubeconfig";
/// The front-proxy authority (kube-apiserver's `--requestheader-client-ca-file`), which an
/// extension server trusts for the user a proxied request names.
pub const FRONT_PROXY_CA_CERT: &str = "front-proxy-ca.crt";
const FRONT_PROXY_CA_KEY: &str = "front-proxy-ca.key";
/// The front-proxy client's certificate and key (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`): what the aggregator connects to extension servers with.
pub const FRONT_PROXY_CLIENT_CERT: &str = "front-proxy-client.crt";
const FRONT_PROXY_CLIENT_KEY: &str = "front-proxy-client.key";
/// The front-proxy client's name, the one extension servers allow
/// (`--requestheader-allowed-names`, kubeadm's default).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// The clients a data directory has certificates for: (file stem, user, groups, kubeconfig
/// context). The first is the kubeconfig's current context.
pub const CLIENTS: [(&str, &str, &[&str], &str); 2] = [
    ("admin", "apfkit-admin", &["system:masters"], "apfkit"),
    ("user", "apfkit-user", &[], "apfkit-user"),
];

/// A data directory's credentials as files, read to be written into another directory:
/// servers of one process that start from one template (a test's servers in memory) share
/// them rather than make their own, which is most of what such a start still does.
#[derive(Clone)]
pub struct CredentialFiles(Vec<(&'static str, Vec<u8>, bool)>);

impl std::fmt::Debug for CredentialFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|(name, _, _)| *name).collect();
        f.debug_tuple("CredentialFiles").field(&names).finish()
    }
}

impl CredentialFiles {
    /// The files [`ensure`], [`ensure_front_proxy`] and [`ensure_service_account_key`] make,
    /// each with whether it is private.
    const FILES: [(&'static str, bool); 13] = [
        (CA_CERT, false),
        (CA_KEY, true),
        (SERVING_CERT, false),
        (SERVING_KEY, true),
        ("admin.crt", false),
        ("admin.key", true),
        ("user.crt", false),
        ("user.key", true),
        (FRONT_PROXY_CA_CERT, false),
        (FRONT_PROXY_CA_KEY, true),
        (FRONT_PROXY_CLIENT_CERT, false),
        (FRONT_PROXY_CLIENT_KEY, true),
        (SERVICE_ACCOUNT_KEY, true),
    ];

    /// The credentials of `dir`, which holds all of them (each within the size limit of a
    /// settings file).
    ///
    /// # Errors
    ///
    /// A file that is missing, cannot be read, or is too large or not text.
    pub fn read(dir: &Path) -> Result<Self, TlsError> {
        let mut files = Vec::with_capacity(Self::FILES.len());
        for (name, private) in Self::FILES {
            let path = dir.join(name);
            let contents = read_pem(&path)?.into_bytes();
            files.push((name, contents, private));
        }
        Ok(CredentialFiles(files))
    }

    /// Writes them into `dir` (made when missing) unless it holds credentials already, whose
    /// files then stay as they are: `false`.
    ///
    /// # Errors
    ///
    /// A directory or a file that cannot be written.
    pub fn write_into(&self, dir: &Path, flush: Flush) -> Result<bool, TlsError> {
        std::fs::create_dir_all(dir).map_err(file_error(dir))?;
        if self.0.iter().any(|(name, _, _)| dir.join(name).exists()) {
            return Ok(false);
        }
        for (name, contents, private) in &self.0 {
            write_file(&dir.join(name), contents, *private, flush)?;
        }
        Ok(true)
    }
}

/// Why credentials could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A certificate or key could not be made or parsed.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The serving certificate chain and key, and the authority's certificate in PEM.
#[derive(Debug)]
pub struct Credentials {
    /// The serving certificate.
    pub chain: Vec<CertificateDer<'static>>,
    /// Its key.
    pub key: PrivateKeyDer<'static>,
    /// The authority's certificate, PEM, for clients to trust.
    pub ca_pem: String,
    /// Each client's certificate and key, PEM, in the order of [`CLIENTS`].
    pub clients: Vec<(String, String)>,
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::File {
        path: path.to_owned(),
        source,
    }
}

/// The text of a PEM file, read within [`SETTINGS_FILE_LIMIT`] whatever the file is.
fn read_pem(path: &Path) -> Result<String, TlsError> {
    use apfkit_runtime::files::{FileError, SETTINGS_FILE_LIMIT, read_text_at_most};
    read_text_at_most(path, SETTINGS_FILE_LIMIT).map_err(|error| match error {
        FileError::Io(source) => TlsError::File {
            path: path.to_owned(),
            source,
        },
        other => invalid(path, other),
    })
}

fn invalid(path: &Path, message: impl std::fmt::Display) -> TlsError {
    TlsError::Invalid {
        path: path.to_owned(),
        message: message.to_string(),
    }
}

/// Whether a file is flushed to the disk before it is renamed into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// Flushed first (`fsync`): after a crash the file is the old one or the new one, whole.
    Always,
    /// Not flushed: for a directory that does not outlive the process (a test server's, with
    /// its store in memory). A reader in the process still sees the file whole or not at all.
    Never,
}

/// Writes `contents` to `path` through a temporary file renamed into place, readable by the
/// owner only when `private`, flushed as `flush` says.
pub fn write_file(
    path: &Path,
    contents: &[u8],
    private: bool,
    flush: Flush,
) -> Result<(), TlsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(file_error(path))?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt as _;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(file_error(path))?;
    }
    #[cfg(not(unix))]
    let _ = private;
    file.write_all(contents).map_err(file_error(path))?;
    if flush == Flush::Always {
        file.as_file().sync_all().map_err(file_error(path))?;
    }
    file.persist(path).map_err(|e| TlsError::File {
        path: path.to_owned(),
        source: e.error,
    })?;
    Ok(())
}

/// The credentials of `dir`, made when absent: an authority valid for ten years and a
/// serving certificate for `localhost`, `127.0.0.1`, `::1` and `hosts`.
///
/// # Errors
///
/// Files that cannot be read or written, or that hold no usable certificate or key.
pub fn ensure(dir: &Path, hosts: &[String], flush: Flush) -> Result<Credentials, TlsError> {
    std::fs::create_dir_all(dir).map_err(file_error(dir))?;
    let [ca_cert, ca_key, cert, key] =
        [CA_CERT, CA_KEY, SERVING_CERT, SERVING_KEY].map(|name| dir.join(name));
    if !cert.exists() || !key.exists() || !ca_cert.exists() {
        generate(&ca_cert, &ca_key, &cert, &key, hosts, flush)?;
    }
    let chain = CertificateDer::pem_slice_iter(read_pem(&cert)?.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(&cert, e))?;
    if chain.is_empty() {
        return Err(invalid(&cert, "no certificate"));
    }
    let private =
        PrivateKeyDer::from_pem_slice(read_pem(&key)?.as_bytes()).map_err(|e| invalid(&key, e))?;
    let ca_pem = read_pem(&ca_cert)?;
    let mut clients = Vec::new();
    for (stem, user, groups, _) in CLIENTS {
        let [client_cert, client_key] = ["crt", "key"].map(|ext| dir.join(format!("{stem}.{ext}")));
        if !client_cert.exists() || !client_key.exists() {
            issue_client(
                &ca_cert,
                &ca_key,
                &client_cert,
                &client_key,
                user,
                groups,
                flush,
            )?;
        }
        clients.push((read_pem(&client_cert)?, read_pem(&client_key)?));
    }
    Ok(Credentials {
        chain,
        key: private,
        ca_pem,
        clients,
    })
}

/// The front-proxy credentials of `dir`, made when absent: an authority of their own (as
/// kubeadm makes `front-proxy-ca`), and a client certificate it signed for
/// [`FRONT_PROXY_CLIENT`].
#[derive(Debug, Clone)]
pub struct FrontProxy {
    /// The authority's certificate, PEM: what extension servers trust for request headers.
    pub ca_pem: String,
    /// The client's certificate, PEM.
    pub client_cert_pem: String,
    /// The client's key, PEM.
    pub client_key_pem: String,
}

/// The front-proxy credentials of `dir` ([`FrontProxy`]), made when absent.
///
/// # Errors
///
/// Files that cannot be read or written, or that hold no usable certificate or key.
pub fn ensure_front_proxy(dir: &Path, flush: Flush) -> Result<FrontProxy, TlsError> {
    std::fs::create_dir_all(dir).map_err(file_error(dir))?;
    let [ca_cert, ca_key, cert, key] = [
        FRONT_PROXY_CA_CERT,
        FRONT_PROXY_CA_KEY,
        FRONT_PROXY_CLIENT_CERT,
        FRONT_PROXY_CLIENT_KEY,
    ]
    .map(|name| dir.join(name));
    if !ca_cert.exists() || !ca_key.exists() {
        let issuer = authority("front-proxy-ca", &ca_cert)?;
        write_file(
            &ca_key,
            issuer.key().serialize_pem().as_bytes(),
            true,
            flush,
        )?;
        write_file(&ca_cert, issuer.pem().as_bytes(), false, flush)?;
        let _ = std::fs::remove_file(&cert);
    }
    if !cert.exists() || !key.exists() {
        issue_client(
            &ca_cert,
            &ca_key,
            &cert,
            &key,
            FRONT_PROXY_CLIENT,
            &[],
            flush,
        )?;
    }
    Ok(FrontProxy {
        ca_pem: read_pem(&ca_cert)?,
        client_cert_pem: read_pem(&cert)?,
        client_key_pem: read_pem(&key)?,
    })
}

/// The file of the key service-account tokens are signed with (kube-apiserver's
/// `--service-account-signing-key-file`).
pub const SERVICE_ACCOUNT_KEY: &str = "service-account.key";

/// The key that signs service-account tokens, in `dir`: an ECDSA P-256 key (ES256), made when
/// absent (readable by its owner only); PKCS#8 PEM, with its public key (SubjectPublicKeyInfo
/// PEM and DER).
///
/// # Errors
///
/// A file that cannot be read or written, or that holds no usable key.
pub fn ensure_service_account_key(dir: &Path, flush: Flush) -> Result<SigningKey, TlsError> {
    std::fs::create_dir_all(dir).map_err(file_error(dir))?;
    let path = dir.join(SERVICE_ACCOUNT_KEY);
    if !path.exists() {
        let key = rcgen::KeyPair::generate().map_err(|e| invalid(&path, e))?;
        write_file(&path, key.serialize_pem().as_bytes(), true, flush)?;
    }
    let private_pem = read_pem(&path)?;
    let key = rcgen::KeyPair::from_pem(&private_pem).map_err(|e| invalid(&path, e))?;
    if !key.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256) {
        return Err(invalid(&path, "not an ECDSA P-256 key"));
    }
    Ok(SigningKey {
        private_pem,
        public_pem: key.public_key_pem(),
        public_der: rcgen::PublicKeyData::subject_public_key_info(&key),
    })
}

/// A key that signs tokens ([`ensure_service_account_key`]).
#[derive(Clone)]
pub struct SigningKey {
    /// The private key, PKCS#8 PEM.
    pub private_pem: String,
    /// The public key, SubjectPublicKeyInfo PEM.
    pub public_pem: String,
    /// The public key, SubjectPublicKeyInfo DER.
    pub public_der: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public_pem", &self.public_pem)
            .finish_non_exhaustive()
    }
}

/// A new self-signed authority named `common_name`, valid until 2036 (errors name `path`).
fn authority(
    common_name: &str,
    path: &Path,
) -> Result<rcgen::CertifiedIssuer<'static, rcgen::KeyPair>, TlsError> {
    let make = |message: rcgen::Error| invalid(path, message);
    let authority_key = rcgen::KeyPair::generate().map_err(make)?;
    let mut authority = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(make)?;
    authority
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    authority.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    authority.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    authority.not_after = rcgen::date_time_ymd(2036, 1, 1);
    rcgen::CertifiedIssuer::self_signed(authority, authority_key).map_err(make)
}

/// A client certificate for `user` in `groups` (its subject's common name and
/// organizations, as kube-apiserver reads them), signed by the authority of `dir`.
fn issue_client(
    ca_cert: &Path,
    ca_key: &Path,
    cert: &Path,
    key: &Path,
    user: &str,
    groups: &[&str],
    flush: Flush,
) -> Result<(), TlsError> {
    let make = |message: rcgen::Error| invalid(cert, message);
    let authority_pem = read_pem(ca_cert)?;
    let authority_key_pem = read_pem(ca_key)?;
    let authority_key =
        rcgen::KeyPair::from_pem(&authority_key_pem).map_err(|e| invalid(ca_key, e))?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&authority_pem, authority_key)
        .map_err(|e| invalid(ca_cert, e))?;
    let client_key = rcgen::KeyPair::generate().map_err(make)?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(make)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    for group in groups {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *group);
    }
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    params.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let certificate = params.signed_by(&client_key, &issuer).map_err(make)?;
    write_file(key, client_key.serialize_pem().as_bytes(), true, flush)?;
    write_file(cert, certificate.pem().as_bytes(), false, flush)
}

fn generate(
    ca_cert: &Path,
    ca_key: &Path,
    cert: &Path,
    key: &Path,
    hosts: &[String],
    flush: Flush,
) -> Result<(), TlsError> {
    let make = |message: rcgen::Error| invalid(cert, message);
    let issuer = authority("apfkit-ca", cert)?;

    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    names.extend(hosts.iter().cloned());
    let serving_key = rcgen::KeyPair::generate().map_err(make)?;
    let mut serving = rcgen::CertificateParams::new(names).map_err(make)?;
    serving
        .distinguished_name
        .push(rcgen::DnType::CommonName, "apfkit-serve");
    serving.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let certificate = serving.signed_by(&serving_key, &issuer).map_err(make)?;

    write_file(ca_key, issuer.key().serialize_pem().as_bytes(), true, flush)?;
    write_file(ca_cert, issuer.pem().as_bytes(), false, flush)?;
    write_file(key, serving_key.serialize_pem().as_bytes(), true, flush)?;
    write_file(cert, certificate.pem().as_bytes(), false, flush)
}

/// A kubeconfig for `server` (`https://127.0.0.1:6443`) that trusts `ca_pem`, with a user and
/// a context for each client of [`CLIENTS`] (certificate and key in `clients`), the
/// administrator's (`apfkit`) current.
pub fn kubeconfig(server: &str, ca_pem: &str, clients: &[(String, String)]) -> String {
    use base64::Engine as _;
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let mut users = String::new();
    let mut contexts = String::new();
    for ((_, user, _, context), (cert, key)) in CLIENTS.iter().zip(clients) {
        users.push_str(&format!(
            "- name: {user}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            encode(cert),
            encode(key)
        ));
        contexts.push_str(&format!(
            "- name: {context}\n  context:\n    cluster: apfkit\n    user: {user}\n"
        ));
    }
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: apfkit\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\n\
         users:\n{users}\
         contexts:\n{contexts}\
         current-context: {}\n",
        encode(ca_pem),
        CLIENTS[0].3
    )
}
