//! Stores in memory bootstrapped once a process (decision 284).
//!
//! Every start of kube-apiserver writes its bootstrap objects (APF's configuration, the
//! system namespaces, RBAC's policy, the APIServices of the built-in groups), about two
//! hundred of them: most of a test server's start. A store in memory is gone with its
//! server, so what the first server of a process wrote is kept, as a
//! [`MemoryBackend::snapshot`], and later servers of the same settings start from a copy of
//! it, with RBAC's policy as read then: the same objects, revisions, uids and timestamps in
//! each. They take its credentials too (its authority, certificates and keys), written into
//! their data directory unless it holds credentials already.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use apfkit_apiserver::storage::Revision;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_apiserver::tls::CredentialFiles;

use crate::Config;

/// A store as the bootstrap left it, RBAC's policy read from it, and the first server's
/// credentials.
pub(crate) struct Template {
    store: MemoryBackend,
    /// The policy and the revision it was read at, when RBAC authorizes.
    pub(crate) rbac: Option<(Arc<apfkit_rbac::Policy>, Revision)>,
    /// The credential files, which later servers of an empty data directory take rather
    /// than make keys and certificates of their own.
    pub(crate) credentials: CredentialFiles,
}

impl Template {
    /// What `store` holds now, with RBAC's policy and `credentials`.
    pub(crate) fn new(
        store: &MemoryBackend,
        rbac: Option<(Arc<apfkit_rbac::Policy>, Revision)>,
        credentials: CredentialFiles,
    ) -> Self {
        Template {
            store: store.snapshot(),
            rbac,
            credentials,
        }
    }

    /// A store of its own, holding what the template holds.
    pub(crate) fn store(&self) -> MemoryBackend {
        self.store.snapshot()
    }
}

static TEMPLATES: LazyLock<Mutex<HashMap<String, Arc<Template>>>> = LazyLock::new(Default::default);

/// The settings that decide what the bootstrap writes, and how: two servers whose keys are
/// equal start from the same store.
pub(crate) fn key(config: &Config) -> String {
    format!(
        "{:?}",
        (
            &config.prefix,
            &config.storage_versions,
            &config.runtime_config,
            config.bootstrap,
            config.suggested_apf_configuration,
            config.enable_priority_and_fairness,
            config.authorization_mode,
        )
    )
}

/// The template of `key`, if a server of this process made it.
pub(crate) fn find(key: &str) -> Option<Arc<Template>> {
    templates().get(key).cloned()
}

/// Keeps `template` for the servers of `key` to come (the first kept stays).
pub(crate) fn keep(key: String, template: Template) {
    templates().entry(key).or_insert_with(|| Arc::new(template));
}

fn templates() -> std::sync::MutexGuard<'static, HashMap<String, Arc<Template>>> {
    // Each change is one insert: a panic elsewhere cannot leave the map half-changed.
    TEMPLATES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
