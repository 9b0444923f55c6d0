//! RBAC in a running server: the bootstrap roles and bindings reconciled at start, the
//! policy the authorizer decides with kept in step with the stored objects by watches, and
//! aggregated ClusterRoles kept up to date (kube-apiserver's informers and
//! kube-controller-manager's aggregation controller, in one place).

use std::sync::Arc;

use apfkit_apiextensions::{CustomObject, ServedObject};
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::{KUBE_APISERVER, record_update};
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{ListRequest, Place, Preconditions, Propagation, Served, UpdateKind};
use apfkit_runtime::Object;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::{Resource, serde::Serialize};

use crate::bootstrap::{self, BindingChange};
use crate::policy::{Policy, RbacAuthorizer};
use crate::resources::VERSION;

/// A served resource of a server of [`ServedObject`]s over the hub `H`.
type Resource_<H> = Arc<Served<ServedObject<H>>>;

/// RBAC of one server: its four resources and the authorizer it keeps up to date.
pub struct Rbac<H: 'static> {
    server: Arc<ApiServer<ServedObject<H>>>,
    authorizer: Arc<RbacAuthorizer>,
    cluster_roles: Resource_<H>,
    cluster_role_bindings: Resource_<H>,
    roles: Resource_<H>,
    role_bindings: Resource_<H>,
}

fn api_version<T: Resource>() -> String {
    T::API_VERSION.to_owned()
}

/// A typed object of a stored one.
fn typed<T: DeserializeOwned, H>(object: &ServedObject<H>) -> Option<T> {
    match object {
        ServedObject::Custom(object) => serde_json::from_value(object.to_value()).ok(),
        ServedObject::Builtin(_) => None,
    }
}

/// The stored form of a typed object.
fn served<T: Serialize, H>(object: &T) -> Result<ServedObject<H>, ApiError> {
    let value = serde_json::to_value(object).map_err(ApiError::internal)?;
    CustomObject::from_value(value)
        .map(ServedObject::custom)
        .map_err(ApiError::internal)
}

impl<H> Rbac<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// RBAC of `server`, which serves the resources of [`mod@crate::resources`], deciding with
    /// `authorizer` (the one the server was given).
    ///
    /// # Errors
    ///
    /// The server does not serve the four resources.
    pub fn new(
        server: Arc<ApiServer<ServedObject<H>>>,
        authorizer: Arc<RbacAuthorizer>,
    ) -> Result<Self, ApiError> {
        let find = |plural: &str| {
            server
                .resource(crate::validation::GROUP, plural)
                .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))
        };
        Ok(Rbac {
            cluster_roles: find(ClusterRole::URL_PATH_SEGMENT)?,
            cluster_role_bindings: find(ClusterRoleBinding::URL_PATH_SEGMENT)?,
            roles: find(Role::URL_PATH_SEGMENT)?,
            role_bindings: find(RoleBinding::URL_PATH_SEGMENT)?,
            authorizer,
            server,
        })
    }

    async fn list<T: DeserializeOwned>(
        &self,
        resource: &Resource_<H>,
    ) -> Result<(Vec<T>, apfkit_apiserver::store::Revision), ApiError> {
        let listed = self
            .server
            .objects()
            .list(resource, &ListRequest::default())
            .await?;
        let items = listed.items.iter().filter_map(typed).collect();
        Ok((items, listed.revision))
    }

    /// Creates the bootstrap roles and bindings that are missing, and brings those that
    /// auto-update up to date (kube-apiserver's `EnsureRBACPolicy`).
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub async fn ensure_bootstrap(&self) -> Result<(), ApiError> {
        for expected in &bootstrap::policy().cluster_roles {
            self.ensure_role(
                &self.cluster_roles,
                expected,
                typed::<ClusterRole, H>,
                served,
            )
            .await?;
        }
        for expected in &bootstrap::policy().cluster_role_bindings {
            self.ensure_binding(
                &self.cluster_role_bindings,
                expected,
                typed::<ClusterRoleBinding, H>,
                served,
            )
            .await?;
        }
        // The Roles and RoleBindings of `kube-system` and `kube-public`, read and written as
        // what they are, reconciled as their cluster-wide twins.
        let as_cluster_role = |stored: &ServedObject<H>| {
            typed::<Role, H>(stored).map(|role| ClusterRole {
                metadata: role.metadata,
                rules: role.rules,
                aggregation_rule: None,
            })
        };
        let as_role = |role: &ClusterRole| {
            served(&Role {
                metadata: role.metadata.clone(),
                rules: role.rules.clone(),
            })
        };
        for expected in &bootstrap::policy().roles {
            self.ensure_role(&self.roles, expected, as_cluster_role, as_role)
                .await?;
        }
        let as_cluster_binding = |stored: &ServedObject<H>| {
            typed::<RoleBinding, H>(stored).map(|binding| ClusterRoleBinding {
                metadata: binding.metadata,
                role_ref: binding.role_ref,
                subjects: binding.subjects,
            })
        };
        let as_binding = |binding: &ClusterRoleBinding| {
            served(&RoleBinding {
                metadata: binding.metadata.clone(),
                role_ref: binding.role_ref.clone(),
                subjects: binding.subjects.clone(),
            })
        };
        for expected in &bootstrap::policy().role_bindings {
            self.ensure_binding(
                &self.role_bindings,
                expected,
                as_cluster_binding,
                as_binding,
            )
            .await?;
        }
        Ok(())
    }

    /// Creates a bootstrap role that is missing, or brings one that auto-updates up to date;
    /// `read` and `write` take the stored object to and from its cluster-wide form.
    async fn ensure_role(
        &self,
        resource: &Served<ServedObject<H>>,
        expected: &ClusterRole,
        read: impl Fn(&ServedObject<H>) -> Option<ClusterRole>,
        write: impl Fn(&ClusterRole) -> Result<ServedObject<H>, ApiError>,
    ) -> Result<(), ApiError> {
        let name = expected.metadata.name.clone().unwrap_or_default();
        let namespace = expected.metadata.namespace.as_deref();
        let place = Place {
            namespace,
            name: &name,
        };
        match self.server.objects().get(resource, place).await {
            Ok(stored) => {
                let Some(existing) = read(&stored) else {
                    return Ok(());
                };
                if !bootstrap::auto_updates(&existing.metadata) {
                    return Ok(());
                }
                if let Some(updated) = bootstrap::reconcile_role(&existing, expected) {
                    self.update_bootstrap(resource, place, write(&updated)?)
                        .await?;
                }
                Ok(())
            }
            Err(error) if error.code == 404 => {
                self.create_bootstrap(resource, namespace, write(expected)?)
                    .await
            }
            Err(error) => Err(error),
        }
    }

    /// Creates a bootstrap binding that is missing, or brings one that auto-updates up to
    /// date (made again when its role reference changed); `read` and `write` as for roles.
    async fn ensure_binding(
        &self,
        resource: &Served<ServedObject<H>>,
        expected: &ClusterRoleBinding,
        read: impl Fn(&ServedObject<H>) -> Option<ClusterRoleBinding>,
        write: impl Fn(&ClusterRoleBinding) -> Result<ServedObject<H>, ApiError>,
    ) -> Result<(), ApiError> {
        let name = expected.metadata.name.clone().unwrap_or_default();
        let namespace = expected.metadata.namespace.as_deref();
        let place = Place {
            namespace,
            name: &name,
        };
        let objects = self.server.objects();
        match objects.get(resource, place).await {
            Ok(stored) => {
                let Some(existing) = read(&stored) else {
                    return Ok(());
                };
                if !bootstrap::auto_updates(&existing.metadata) {
                    return Ok(());
                }
                match bootstrap::reconcile_binding(&existing, expected) {
                    BindingChange::None => Ok(()),
                    BindingChange::Update(binding) => {
                        self.update_bootstrap(resource, place, write(&binding)?)
                            .await
                    }
                    BindingChange::Recreate(mut binding) => {
                        objects
                            .delete(
                                resource,
                                place,
                                &Preconditions::default(),
                                Propagation::default(),
                                false,
                            )
                            .await?;
                        binding.metadata.uid = None;
                        binding.metadata.creation_timestamp = None;
                        binding.metadata.managed_fields = None;
                        self.create_bootstrap(resource, namespace, write(&binding)?)
                            .await
                    }
                }
            }
            Err(error) if error.code == 404 => {
                self.create_bootstrap(resource, namespace, write(expected)?)
                    .await
            }
            Err(error) => Err(error),
        }
    }

    /// Creates a bootstrap object as kube-apiserver's policy reconciliation does, through its
    /// loopback client: its managed fields recorded as kube-apiserver's.
    async fn create_bootstrap(
        &self,
        resource: &Served<ServedObject<H>>,
        namespace: Option<&str>,
        object: ServedObject<H>,
    ) -> Result<(), ApiError> {
        let codec = resource.version(VERSION).unwrap_or(&*resource.storage);
        let object = record_update(resource, codec, None, None, object, KUBE_APISERVER)?;
        self.server
            .objects()
            .create(resource, namespace, object, &codec.api_version(), false)
            .await
            .map(drop)
    }

    /// Updates a bootstrap object as kube-apiserver's policy reconciliation does, recording
    /// its managed fields.
    async fn update_bootstrap(
        &self,
        resource: &Served<ServedObject<H>>,
        place: Place<'_>,
        object: ServedObject<H>,
    ) -> Result<(), ApiError> {
        let codec = resource.version(VERSION).unwrap_or(&*resource.storage);
        self.server
            .objects()
            .update_with(
                resource,
                place,
                object,
                &codec.api_version(),
                UpdateKind::Main,
                false,
                |live, new| record_update(resource, codec, None, Some(live), new, KUBE_APISERVER),
            )
            .await
            .map(drop)
    }

    /// Reads the four resources, writes every aggregated ClusterRole whose rules are not
    /// those it aggregates, and gives the authorizer the policy read. Answers the revision
    /// read at.
    ///
    /// # Errors
    ///
    /// Storage errors (the authorizer keeps the policy it had).
    pub async fn sync(&self) -> Result<apfkit_apiserver::store::Revision, ApiError> {
        let (mut cluster_roles, at) = self.list::<ClusterRole>(&self.cluster_roles).await?;
        self.aggregate(&mut cluster_roles).await;
        let (cluster_role_bindings, _) = self
            .list::<ClusterRoleBinding>(&self.cluster_role_bindings)
            .await?;
        let (roles, _) = self.list::<Role>(&self.roles).await?;
        let (role_bindings, _) = self.list::<RoleBinding>(&self.role_bindings).await?;
        self.authorizer.set_policy(Policy::new(
            roles,
            role_bindings,
            cluster_roles,
            cluster_role_bindings,
        ));
        Ok(at)
    }

    /// Writes the aggregated roles whose rules changed, and uses the new rules at once (a
    /// conflict leaves the stored one; the next sync tries again).
    async fn aggregate(&self, cluster_roles: &mut [ClusterRole]) {
        let snapshot: Vec<ClusterRole> = cluster_roles.to_vec();
        let all: Vec<&ClusterRole> = snapshot.iter().collect();
        for role in cluster_roles.iter_mut() {
            let Some(rules) = crate::aggregation::aggregated_rules(role, &all) else {
                continue;
            };
            if role.rules.as_deref().unwrap_or_default() == rules.as_slice() {
                continue;
            }
            role.rules = Some(rules);
            let name = role.metadata.name.clone().unwrap_or_default();
            let Ok(object) = served::<_, H>(&*role) else {
                continue;
            };
            let _ = self
                .server
                .objects()
                .update(
                    &self.cluster_roles,
                    Place {
                        namespace: None,
                        name: &name,
                    },
                    object,
                    &api_version::<ClusterRole>(),
                    UpdateKind::Main,
                    false,
                )
                .await;
        }
    }

    /// Keeps the authorizer in step with the stored objects until the server stops: an
    /// informer of the four resources that reads the policy again after every change made
    /// after `handled_at`, the revision the authorizer's policy was read at (what
    /// [`Rbac::sync`] answered).
    pub fn keep_synced(self: Arc<Self>, handled_at: apfkit_apiserver::store::Revision) {
        let resources = vec![
            self.cluster_roles.clone(),
            self.cluster_role_bindings.clone(),
            self.roles.clone(),
            self.role_bindings.clone(),
        ];
        Informer::new(self.server.clone(), resources)
            .handled_at(handled_at)
            .run(move || {
                let rbac = self.clone();
                async move { rbac.sync().await }
            });
    }
}
