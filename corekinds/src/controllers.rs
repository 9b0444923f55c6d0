//! Two of kube-controller-manager's controllers that give every namespace what a workload in it
//! counts on: the `serviceaccount-controller` (`pkg/controller/serviceaccount`), which makes
//! the `default` ServiceAccount of each active namespace and makes it again when it is deleted,
//! and the `root-ca-certificate-publisher-controller`
//! (`pkg/controller/certificates/rootcacertpublisher`), which keeps the ConfigMap
//! `kube-root-ca.crt` of each active namespace holding the server's certificate authority.
//! Both write as `kube-controller-manager`, and run after every burst of changes to
//! Namespaces or to the objects they keep, as long as the server serves.

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::{record_update, update_as};
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{ListRequest, Place, Served, UpdateKind};
use apfkit_runtime::Object;
use apfkit_runtime::scheme::UnknownFields;
use serde_json::{Value, json};

/// Who writes what the controllers make (kube-controller-manager's clients' user agent).
const CONTROLLER: &str = "kube-controller-manager";
/// The ServiceAccount every active namespace gets.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// The ConfigMap of the server's certificate authority in every active namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The annotation that says what [`ROOT_CA_CONFIG_MAP`] is for, and its text.
const DESCRIPTION: (&str, &str) = (
    "kubernetes.io/description",
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal \
     endpoints such as the internal service IP or kubernetes.default.svc. No other usage is \
     guaranteed across distributions of Kubernetes clusters.",
);

/// What the two controllers share: the server, its Namespaces and the resource whose objects
/// one of them keeps.
struct Kept<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    namespaces: Arc<Served<ServedObject<H>>>,
    kept: Arc<Served<ServedObject<H>>>,
}

impl<H> Kept<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    fn of(server: Arc<ApiServer<ServedObject<H>>>, plural: &str) -> Result<Self, ApiError> {
        let resource = |plural: &str| {
            server
                .resource("", plural)
                .ok_or_else(|| ApiError::internal(format!("the server serves no {plural}")))
        };
        Ok(Kept {
            namespaces: resource("namespaces")?,
            kept: resource(plural)?,
            server,
        })
    }

    /// The names of the namespaces in the phase `Active` (neither deleted nor terminating).
    async fn active_namespaces(&self) -> Result<Vec<String>, ApiError> {
        let listed = self
            .server
            .objects()
            .list(&self.namespaces, &ListRequest::default())
            .await?;
        Ok(listed
            .items
            .iter()
            .filter_map(|namespace| match namespace {
                ServedObject::Custom(namespace) => Some(namespace.to_value()),
                ServedObject::Builtin(_) => None,
            })
            .filter(|namespace| namespace.pointer("/status/phase") == Some(&json!("Active")))
            .filter_map(|namespace| {
                namespace
                    .pointer("/metadata/name")?
                    .as_str()
                    .map(str::to_owned)
            })
            .collect())
    }

    /// The object `name` of `namespace`, as JSON; `None` when there is none.
    async fn read(&self, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let place = Place {
            namespace: Some(namespace),
            name,
        };
        match self.server.objects().get(&self.kept, place).await {
            Ok(ServedObject::Custom(object)) => Ok(Some(object.to_value())),
            Ok(ServedObject::Builtin(_)) => Ok(None),
            Err(error) if error.code == 404 => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Creates `object` in `namespace` as the controller's client does; one made meanwhile
    /// (409) is as good.
    async fn create(&self, namespace: &str, object: &Value) -> Result<(), ApiError> {
        let served = &self.kept;
        let codec = &*served.storage;
        let decoded = codec
            .decode(object, UnknownFields::Ignore, &mut Vec::new())
            .map_err(ApiError::internal)?;
        let decoded = record_update(served, codec, None, None, decoded, CONTROLLER)?;
        let created = self
            .server
            .objects()
            .create(
                served,
                Some(namespace),
                decoded,
                &codec.api_version(),
                false,
            )
            .await;
        match created {
            Ok(_) => Ok(()),
            Err(error) if error.code == 409 => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Writes `object` over the stored one, conditional on its `resourceVersion`.
    async fn update(&self, namespace: &str, object: &Value) -> Result<(), ApiError> {
        let served = &self.kept;
        let codec = &*served.storage;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let decoded = codec
            .decode(object, UnknownFields::Ignore, &mut Vec::new())
            .map_err(ApiError::internal)?;
        let place = Place {
            namespace: Some(namespace),
            name,
        };
        update_as(
            self.server.objects(),
            served,
            codec,
            place,
            decoded,
            UpdateKind::Main,
            CONTROLLER,
        )
        .await
        .map(drop)
    }

    /// Runs `sync` after every burst of changes to Namespaces and to the kept objects, until
    /// the server stops.
    fn keep_synced<S, F>(self: Arc<Self>, sync: S)
    where
        S: Fn(Arc<Self>) -> F + Send + 'static,
        F: Future<Output = Result<(), ApiError>> + Send + 'static,
    {
        let resources = vec![self.namespaces.clone(), self.kept.clone()];
        Informer::new(self.server.clone(), resources).run(move || sync(self.clone()));
    }
}

/// kube-controller-manager's `serviceaccount-controller`: the `default` ServiceAccount of
/// every active namespace.
pub struct ServiceAccounts<H: 'static>(Arc<Kept<H>>);

impl<H> ServiceAccounts<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The controller of `server`, which serves Namespaces and ServiceAccounts.
    ///
    /// # Errors
    ///
    /// A server that serves no Namespaces or no ServiceAccounts.
    pub fn new(server: Arc<ApiServer<ServedObject<H>>>) -> Result<Self, ApiError> {
        Ok(ServiceAccounts(Arc::new(Kept::of(
            server,
            "serviceaccounts",
        )?)))
    }

    /// Makes the `default` ServiceAccount of each active namespace that has none.
    ///
    /// # Errors
    ///
    /// Namespaces that could not be listed, or a ServiceAccount that could not be read or
    /// made; the other namespaces are seen to first.
    pub async fn sync(&self) -> Result<(), ApiError> {
        sync_accounts(self.0.clone()).await
    }

    /// Keeps every active namespace with its `default` ServiceAccount until the server stops.
    pub fn keep_synced(&self) {
        self.0.clone().keep_synced(sync_accounts);
    }
}

async fn sync_accounts<H>(kept: Arc<Kept<H>>) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let mut failed = None;
    for namespace in kept.active_namespaces().await? {
        let made = match kept.read(&namespace, DEFAULT_SERVICE_ACCOUNT).await {
            Ok(Some(_)) => continue,
            Ok(None) => {
                let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}});
                kept.create(&namespace, &account).await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = made {
            failed = Some(error);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// kube-controller-manager's `root-ca-certificate-publisher-controller`: the ConfigMap
/// `kube-root-ca.crt` of every active namespace, holding the server's certificate authority
/// (`ca.crt`) and kube's description of it; changed back when it is changed.
pub struct RootCaPublisher<H: 'static> {
    kept: Arc<Kept<H>>,
    ca_pem: Arc<str>,
}

impl<H> RootCaPublisher<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The controller of `server`, which serves Namespaces and ConfigMaps, publishing `ca_pem`
    /// (the authority of the server's certificate, PEM).
    ///
    /// # Errors
    ///
    /// A server that serves no Namespaces or no ConfigMaps.
    pub fn new(server: Arc<ApiServer<ServedObject<H>>>, ca_pem: &str) -> Result<Self, ApiError> {
        Ok(RootCaPublisher {
            kept: Arc::new(Kept::of(server, "configmaps")?),
            ca_pem: Arc::from(ca_pem),
        })
    }

    /// Makes or puts back the `kube-root-ca.crt` ConfigMap of each active namespace.
    ///
    /// # Errors
    ///
    /// Namespaces that could not be listed, or a ConfigMap that could not be read or
    /// written; the other namespaces are seen to first.
    pub async fn sync(&self) -> Result<(), ApiError> {
        publish(self.kept.clone(), self.ca_pem.clone()).await
    }

    /// Keeps every active namespace's `kube-root-ca.crt` until the server stops.
    pub fn keep_synced(&self) {
        let ca_pem = self.ca_pem.clone();
        self.kept
            .clone()
            .keep_synced(move |kept| publish(kept, ca_pem.clone()));
    }
}

/// `syncNamespace`: the ConfigMap made when there is none; its data and description put back
/// when they differ (its other fields left as they are).
async fn publish<H>(kept: Arc<Kept<H>>, ca_pem: Arc<str>) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let data = json!({"ca.crt": &*ca_pem});
    let (annotation, description) = DESCRIPTION;
    let mut failed = None;
    for namespace in kept.active_namespaces().await? {
        let written = match kept.read(&namespace, ROOT_CA_CONFIG_MAP).await {
            Ok(None) => {
                let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                        "annotations": {annotation: description}},
                    "data": data});
                kept.create(&namespace, &config_map).await
            }
            Ok(Some(mut config_map)) => {
                let described = config_map
                    .pointer(&format!(
                        "/metadata/annotations/{}",
                        annotation.replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .is_some_and(|text| !text.is_empty());
                if config_map.get("data") == Some(&data) && described {
                    continue;
                }
                config_map["data"] = data.clone();
                let metadata = &mut config_map["metadata"];
                if !metadata["annotations"].is_object() {
                    metadata["annotations"] = json!({});
                }
                metadata["annotations"][annotation] = description.into();
                kept.update(&namespace, &config_map).await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            failed = Some(error);
        }
    }
    failed.map_or(Ok(()), Err)
}
