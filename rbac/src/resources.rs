//! The four resources of `rbac.authorization.k8s.io/v1`, served in a server of
//! [`ServedObject`]s as kube-apiserver serves them: objects read as k8s-openapi's types read
//! them (fields the types do not have dropped, and reported as `fieldValidation` says),
//! defaulted and checked as kube-apiserver does ([`crate::validation`]), in JSON, YAML or
//! protobuf ([`crate::protobuf`]; a server's wire formats read protobuf bodies with
//! [`crate::protobuf::read`]), printed with
//! kube-apiserver's columns (kubernetes `pkg/printers/internalversion/printers.go`), and
//! stored in protobuf, as kube-apiserver stores them, under its keys
//! (`/registry/clusterroles/NAME`, ...); objects stored as JSON are read too.

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::{self, JsonVersion};
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{
    Generation, ResourceConfig, ResourceError, Served, SharedVersion, Strategy,
};
use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, default_columns, field_doc, name_column,
    now_seconds,
};
use apfkit_runtime::field::FieldError;
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use k8s_openapi::Resource as _;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use serde_json::Value;

use crate::escalation;
use crate::policy::RbacAuthorizer;
use crate::validation::{self, GROUP};
use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::error::ApiError;

/// The one served version.
pub const VERSION: &str = "v1";

/// An object of a served RBAC kind read as kube-apiserver reads it: as the type `T`
/// ([`json_kind::typed`]), then defaulted, in the shape Go gives it.
fn normalize<T: DeserializeOwned + Serialize>(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = json_kind::typed::<T>(object, unknown, warnings)?;
    validation::apply_defaults(&mut kept);
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// How each kind is checked: the typed object and, on an update, the stored one.
type Check = fn(&Value, Option<&Value>) -> Vec<FieldError>;

fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, FieldError> {
    serde_json::from_value(value.clone())
        .map_err(|error| FieldError::internal("", error.to_string()))
}

fn check_role(object: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    typed::<Role>(object).map_or_else(|e| vec![e], |role| validation::role(&role))
}

fn check_cluster_role(object: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    typed::<ClusterRole>(object).map_or_else(|e| vec![e], |role| validation::cluster_role(&role))
}

fn check_role_binding(object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let old = old.and_then(|old| typed::<RoleBinding>(old).ok());
    typed::<RoleBinding>(object).map_or_else(
        |e| vec![e],
        |binding| validation::role_binding(&binding, old.as_ref()),
    )
}

fn check_cluster_role_binding(object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let old = old.and_then(|old| typed::<ClusterRoleBinding>(old).ok());
    typed::<ClusterRoleBinding>(object).map_or_else(
        |e| vec![e],
        |binding| validation::cluster_role_binding(&binding, old.as_ref()),
    )
}

/// Which of the four kinds a strategy guards, for the escalation checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guarded {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

/// kube-apiserver's strategy of a kind of the group: its checks, columns and escalation
/// checks (on the authorizer's policy).
struct RbacStrategy {
    check: Check,
    printer: Printer,
    guarded: Guarded,
    authorizer: Arc<RbacAuthorizer>,
}

impl RbacStrategy {
    /// The escalation checks of `user` writing `object` (JSON) in `namespace`.
    fn admit_json(&self, user: &UserInfo, namespace: &str, object: &Value) -> Result<(), ApiError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let authorizer = &self.authorizer;
        let malformed = |e: FieldError| ApiError::bad_request(e.to_string());
        match self.guarded {
            Guarded::Role => {
                let role = typed::<Role>(object).map_err(malformed)?;
                let rules = role.rules.unwrap_or_default();
                escalation::check_role(authorizer, user, "roles", namespace, name, &rules, false)
            }
            Guarded::ClusterRole => {
                let role = typed::<ClusterRole>(object).map_err(malformed)?;
                let aggregated = role.aggregation_rule.is_some();
                let rules = role.rules.unwrap_or_default();
                escalation::check_role(
                    authorizer,
                    user,
                    "clusterroles",
                    "",
                    name,
                    &rules,
                    aggregated,
                )
            }
            Guarded::RoleBinding => {
                let binding = typed::<RoleBinding>(object).map_err(malformed)?;
                escalation::check_binding(
                    authorizer,
                    user,
                    "rolebindings",
                    namespace,
                    name,
                    &binding.role_ref,
                )
            }
            Guarded::ClusterRoleBinding => {
                let binding = typed::<ClusterRoleBinding>(object).map_err(malformed)?;
                escalation::check_binding(
                    authorizer,
                    user,
                    "clusterrolebindings",
                    "",
                    name,
                    &binding.role_ref,
                )
            }
        }
    }
}

impl<H> Strategy<ServedObject<H>> for RbacStrategy {
    /// kube's four RBAC strategies create an object an update finds missing.
    fn allows_create_on_update(&self) -> bool {
        true
    }
    fn validate(
        &self,
        object: &ServedObject<H>,
        old: Option<&ServedObject<H>>,
        _api_version: &str,
    ) -> Vec<Cause> {
        json_kind::json_causes(object, old, self.check)
    }
    fn admit(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
        object: &ServedObject<H>,
    ) -> Result<(), ApiError> {
        match object {
            ServedObject::Custom(object) => {
                self.admit_json(user, namespace.unwrap_or_default(), &object.to_value())
            }
            ServedObject::Builtin(_) => Ok(()),
        }
    }
    fn printer(&self) -> Option<&Printer> {
        Some(&self.printer)
    }
}

/// `roleBindingsColumnDefinitions` and `clusterRoleBindingsColumnDefinitions` of `kind`
/// (`RoleBinding`, `ClusterRoleBinding`): the name, the role (described as the kind's
/// `roleRef`), the age, and with `-o wide` the users, groups and service accounts, in the
/// words of each.
fn binding_columns(kind: &'static str) -> Vec<Column> {
    let in_binding = match kind {
        "ClusterRoleBinding" => "clusterRoleBinding",
        _ => "roleBinding",
    };
    vec![
        name_column(),
        column(
            "Role",
            "string",
            0,
            // kube's printers describe it by v1beta1's documentation.
            field_doc(&format!("io.k8s.api.rbac.v1beta1.{kind}"), "roleRef"),
        ),
        creation_column("Age", "string"),
        column(
            "Users",
            "string",
            1,
            format!("Users in the {in_binding}").into(),
        ),
        column(
            "Groups",
            "string",
            1,
            format!("Groups in the {in_binding}").into(),
        ),
        column(
            "ServiceAccounts",
            "string",
            1,
            format!("ServiceAccounts in the {in_binding}").into(),
        ),
    ]
}

/// The cells of a binding (`printRoleBinding`, `printClusterRoleBinding`).
fn binding_cells(object: &Value) -> Vec<Value> {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut accounts = Vec::new();
    for subject in object
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |name: &str| {
            subject
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        match field("kind") {
            "User" => users.push(field("name").to_owned()),
            "Group" => groups.push(field("name").to_owned()),
            "ServiceAccount" => accounts.push(format!("{}/{}", field("namespace"), field("name"))),
            _ => {}
        }
    }
    vec![
        text("/metadata/name").into(),
        format!("{}/{}", text("/roleRef/kind"), text("/roleRef/name")).into(),
        age(object, now_seconds()),
        users.join(", ").into(),
        groups.join(", ").into(),
        accounts.join(", ").into(),
    ]
}

/// Roles print kube-apiserver's default columns, name and creation time.
fn role_printer() -> Printer {
    Printer::of(
        VERSION,
        default_columns(),
        apfkit_apiserver::table::default_cells,
    )
}

fn binding_printer(kind: &'static str) -> Printer {
    Printer::of(VERSION, binding_columns(kind), binding_cells)
}

/// A new Role or ClusterRole as Go writes it: `rules` has no `omitempty`.
fn role_zero() -> Value {
    serde_json::json!({"rules": null})
}

/// A new RoleBinding or ClusterRoleBinding as Go writes it: `roleRef` is a struct.
fn binding_zero() -> Value {
    serde_json::json!({"roleRef": {"apiGroup": "", "kind": "", "name": ""}})
}

/// One resource of the group, from the kind's k8s-openapi type.
fn resource<T, H>(
    normalize: apfkit_apiextensions::json_kind::Normalize,
    check: Check,
    printer: Printer,
    guarded: Guarded,
    authorizer: &Arc<RbacAuthorizer>,
) -> Result<Served<ServedObject<H>>, ResourceError>
where
    T: k8s_openapi::Resource,
    T::Scope: 'static,
    H: Send + Sync + 'static,
{
    // kube-apiserver's RBAC strategies track no generation.
    let config = ResourceConfig::of::<T>()
        .with_generation(Generation::Untracked)
        .with_kube_openapi();
    let version = JsonVersion::new(
        T::GROUP,
        T::VERSION,
        T::KIND,
        T::URL_PATH_SEGMENT,
        normalize,
    )
    .stored_as_kube_stores_it()
    .with_protobuf(
        |object| {
            crate::protobuf::write(object)
                .unwrap_or_else(|| Err("not an object of rbac.authorization.k8s.io/v1".to_owned()))
        },
        crate::protobuf::read_stored,
    )
    .with_zero(match guarded {
        Guarded::Role | Guarded::ClusterRole => role_zero,
        Guarded::RoleBinding | Guarded::ClusterRoleBinding => binding_zero,
    });
    let versions = vec![Arc::new(version) as SharedVersion<ServedObject<H>>];
    Ok(
        Served::with_versions(config, T::URL_PATH_SEGMENT.to_owned(), versions)?.with_strategy(
            RbacStrategy {
                check,
                printer,
                guarded,
                authorizer: authorizer.clone(),
            },
        ),
    )
}

/// The four resources: Roles and RoleBindings (namespaced), ClusterRoles and
/// ClusterRoleBindings, their writes held to the escalation checks on `authorizer`'s policy
/// (the authorizer the server decides with).
///
/// # Errors
///
/// None in practice: each has its one version as its storage version.
pub fn resources<H: Send + Sync + 'static>(
    authorizer: &Arc<RbacAuthorizer>,
) -> Result<Vec<Served<ServedObject<H>>>, ResourceError> {
    debug_assert_eq!(Role::GROUP, GROUP);
    Ok(vec![
        resource::<ClusterRole, H>(
            normalize::<ClusterRole>,
            check_cluster_role,
            role_printer(),
            Guarded::ClusterRole,
            authorizer,
        )?,
        resource::<ClusterRoleBinding, H>(
            normalize::<ClusterRoleBinding>,
            check_cluster_role_binding,
            binding_printer("ClusterRoleBinding"),
            Guarded::ClusterRoleBinding,
            authorizer,
        )?,
        resource::<Role, H>(
            normalize::<Role>,
            check_role,
            role_printer(),
            Guarded::Role,
            authorizer,
        )?,
        resource::<RoleBinding, H>(
            normalize::<RoleBinding>,
            check_role_binding,
            binding_printer("RoleBinding"),
            Guarded::RoleBinding,
            authorizer,
        )?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_runtime::scheme::ErrorKind;
    use serde_json::json;

    #[test]
    fn objects_keep_the_fields_of_their_type_and_report_the_rest() {
        let mut warnings = Vec::new();
        let kept = normalize::<ClusterRoleBinding>(
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "b", "labels": {}},
                "roleRef": {"kind": "ClusterRole", "name": "view", "color": "red"},
                "subjects": [{"kind": "User", "name": "alice", "extra": 1}],
                "spec": {"x": 1},
                "aggregationRule": null,
            }),
            UnknownFields::Warn,
            &mut warnings,
        )
        .unwrap();
        assert_eq!(kept["roleRef"]["apiGroup"], GROUP);
        assert_eq!(kept["subjects"][0]["apiGroup"], GROUP);
        assert!(kept.get("spec").is_none());
        let paths: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            paths,
            [
                "unknown field \"roleRef.color\"",
                "unknown field \"spec\"",
                "unknown field \"subjects[0].extra\"",
            ]
        );
        let strict = normalize::<ClusterRoleBinding>(
            json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "v"}, "x": 1}),
            UnknownFields::Strict,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(strict.kind, ErrorKind::UnknownFields);
        let wrong_type = normalize::<Role>(
            json!({"metadata": {"name": "r"}, "rules": [{"verbs": "get"}]}),
            UnknownFields::Ignore,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(wrong_type.kind, ErrorKind::InvalidValue);
    }

    #[test]
    fn bindings_print_kube_apiservers_columns() {
        let cells = binding_cells(&json!({
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "ns"},
            ],
        }));
        assert_eq!(cells[0], "b");
        assert_eq!(cells[1], "ClusterRole/view");
        assert_eq!(cells[3], "alice, bob");
        assert_eq!(cells[4], "devs");
        assert_eq!(cells[5], "ns/robot");
        let columns = binding_columns("ClusterRoleBinding");
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(
            names,
            ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
        );
        assert_eq!(columns[3].description, "Users in the clusterRoleBinding");
        assert!(
            columns[1]
                .description
                .starts_with("roleRef can only reference a ClusterRole")
        );
        assert_eq!(
            binding_columns("RoleBinding")[5].description,
            "ServiceAccounts in the roleBinding"
        );
    }

    #[test]
    fn the_resources_are_the_groups_four() {
        let served =
            resources::<apfkit_apiextensions::NoKind>(&Arc::new(RbacAuthorizer::default()))
                .unwrap();
        let names: Vec<(&str, bool, &str)> = served
            .iter()
            .map(|s| {
                (
                    s.plural.as_str(),
                    s.config.namespaced,
                    s.config.key_path.as_str(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("clusterroles", false, "clusterroles"),
                ("clusterrolebindings", false, "clusterrolebindings"),
                ("roles", true, "roles"),
                ("rolebindings", true, "rolebindings"),
            ]
        );
    }
}
