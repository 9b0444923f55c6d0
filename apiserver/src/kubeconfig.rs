//! Kubeconfigs read as kubectl reads them, within bounds: each file at most
//! [`SETTINGS_FILE_LIMIT`], and the certificates and keys it names read within the same
//! bound and held in it (`*-data`, paths relative to the kubeconfig's folder as kubectl
//! resolves them), so that no file a kubeconfig names is read without a limit. A token file
//! is checked once here and read again by the client as it rotates.

use std::path::{Path, PathBuf};

use apfkit_runtime::files::{SETTINGS_FILE_LIMIT, read_at_most, read_text_at_most};
use base64::Engine as _;
use kube::config::Kubeconfig;

/// The kubeconfig at `path`, with the files it names read into it.
///
/// # Errors
///
/// The file, or one it names, cannot be read, is larger than the limit, or is not a
/// kubeconfig; the message names the file.
pub fn read(path: &Path) -> Result<Kubeconfig, String> {
    let text = read_text_at_most(path, SETTINGS_FILE_LIMIT)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    let mut kubeconfig =
        Kubeconfig::from_yaml(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    let folder = path.parent().unwrap_or_else(|| Path::new("."));
    inline_files(&mut kubeconfig, folder)?;
    Ok(kubeconfig)
}

/// The kubeconfig kubectl would use: the files `$KUBECONFIG` lists, merged (the first to set
/// a value wins), else `~/.kube/config`.
///
/// # Errors
///
/// As [`read`]; no `$KUBECONFIG` and no home folder.
pub fn from_environment() -> Result<Kubeconfig, String> {
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|value| {
            std::env::split_paths(&value)
                .filter(|path| !path.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if listed.is_empty() {
        let home = std::env::var_os("HOME")
            .ok_or("no $KUBECONFIG and no $HOME to find ~/.kube/config in")?;
        return read(&Path::new(&home).join(".kube").join("config"));
    }
    listed
        .iter()
        .try_fold(Kubeconfig::default(), |merged, path| {
            merged
                .merge(read(path)?)
                .map_err(|error| format!("{}: {error}", path.display()))
        })
}

/// The bytes of a file a kubeconfig names, within the limit; an error names the file.
fn read_named(path: &Path) -> Result<Vec<u8>, String> {
    read_at_most(path, SETTINGS_FILE_LIMIT).map_err(|error| format!("{}: {error}", path.display()))
}

/// Reads each certificate and key file `kubeconfig` names (relative to `folder`) into its
/// data field, and holds each token file to the limit.
fn inline_files(kubeconfig: &mut Kubeconfig, folder: &Path) -> Result<(), String> {
    let load = |named: &str| {
        read_named(&folder.join(named))
            .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes))
    };
    for cluster in kubeconfig
        .clusters
        .iter_mut()
        .filter_map(|c| c.cluster.as_mut())
    {
        if let Some(named) = cluster.certificate_authority.take() {
            cluster.certificate_authority_data = Some(load(&named)?);
        }
    }
    for user in kubeconfig
        .auth_infos
        .iter_mut()
        .filter_map(|u| u.auth_info.as_mut())
    {
        if let Some(named) = user.client_certificate.take() {
            user.client_certificate_data = Some(load(&named)?);
        }
        if let Some(named) = user.client_key.take() {
            user.client_key_data = Some(load(&named)?.into());
        }
        if let Some(named) = &user.token_file {
            let path = folder.join(named);
            read_named(&path)?;
            user.token_file = Some(path.display().to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig_naming(dir: &Path, certificate: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
                 clusters: [{{name: k, cluster: {{server: 'https://127.0.0.1:1', \
                 certificate-authority: ca.crt}}}}]\n\
                 users: [{{name: u, user: {{client-certificate: {certificate}, \
                 client-key: user.key}}}}]\n\
                 contexts: [{{name: c, context: {{cluster: k, user: u}}}}]\n"
            ),
        )
        .unwrap();
        path
    }

    #[test]
    fn the_files_a_kubeconfig_names_are_read_within_the_limit_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("ca.crt", "CA"), ("user.crt", "CERT"), ("user.key", "KEY")] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let kubeconfig = read(&kubeconfig_naming(dir.path(), "user.crt")).unwrap();
        let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.certificate_authority, None);
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
        let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate_data.as_deref(), Some("Q0VSVA=="));
        assert!(user.client_key.is_none() && user.client_key_data.is_some());

        // An endless device named as a certificate, or as the kubeconfig itself.
        let error = read(&kubeconfig_naming(dir.path(), "/dev/zero")).unwrap_err();
        assert_eq!(error, "/dev/zero: larger than 4 MiB");
        let error = read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(error, "/dev/zero: larger than 4 MiB");
        let error = read(dir.path()).unwrap_err();
        assert!(error.ends_with(": is a directory"), "{error}");
    }
}
