//! kube-apiserver's checks of roles and bindings (kubernetes
//! `pkg/apis/rbac/validation/validation.go`) and its defaults for them
//! (`pkg/apis/rbac/v1/defaults.go`), with its field paths and messages.

use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// The group of roles and bindings.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// apimachinery's `IsValidPathSegmentName`, the only rule RBAC names follow.
pub fn path_segment_name(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for bad in [".", ".."] {
        if name == bad {
            errors.push(format!("may not be '{bad}'"));
        }
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errors.push(format!("may not contain '{bad}'"));
        }
    }
    errors
}

/// `ValidateObjectMeta` with RBAC's name rule: a namespaced object needs a namespace, a
/// cluster-scoped one may not have one.
fn metadata(meta: &ObjectMeta, namespaced: bool) -> Vec<FieldError> {
    let mut errors = names::object_name(
        meta.name.as_deref().unwrap_or_default(),
        meta.generate_name.as_deref().unwrap_or_default(),
        path_segment_name,
    );
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    if namespaced && namespace.is_empty() {
        errors.push(FieldError::required("metadata.namespace", ""));
    } else if !namespaced && !namespace.is_empty() {
        errors.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    errors
}

fn rules(rules: &Option<Vec<PolicyRule>>, namespaced: bool) -> Vec<FieldError> {
    let path = Path::new("rules");
    let mut errors = Vec::new();
    for (index, rule) in rules.iter().flatten().enumerate() {
        errors.extend(policy_rule(rule, namespaced, &path.index(index)));
    }
    errors
}

/// `validatePolicyRule`.
fn policy_rule(rule: &PolicyRule, namespaced: bool, path: &Path) -> Vec<FieldError> {
    let count = |list: &Option<Vec<String>>| list.as_ref().map_or(0, Vec::len);
    let mut errors = Vec::new();
    if rule.verbs.is_empty() {
        // Covered by 1.37's declarative validation (`+k8s:required`), whose error takes the
        // handwritten one's place: no detail.
        errors.push(FieldError::required(path.child("verbs"), ""));
    }
    let urls = rule.non_resource_urls.clone().unwrap_or_default();
    if !urls.is_empty() {
        if namespaced {
            errors.push(FieldError::invalid(
                path.child("nonResourceURLs"),
                BadValue::Strings(urls.clone()),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if count(&rule.api_groups) > 0
            || count(&rule.resources) > 0
            || count(&rule.resource_names) > 0
        {
            errors.push(FieldError::invalid(
                path.child("nonResourceURLs"),
                BadValue::Strings(urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errors;
    }
    if count(&rule.api_groups) == 0 {
        errors.push(FieldError::required(
            path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if count(&rule.resources) == 0 {
        errors.push(FieldError::required(
            path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    if count(&rule.resource_names) > 0 && count(&rule.resources) > 1 {
        errors.push(FieldError::required(
            path.child("resourceNames"),
            "resource names cannot apply to multiple resources",
        ));
    }
    errors
}

/// `ValidateRole`.
pub fn role(role: &Role) -> Vec<FieldError> {
    let mut errors = metadata(&role.metadata, true);
    errors.extend(rules(&role.rules, true));
    errors
}

/// `ValidateClusterRole`, with the aggregation rule's selectors.
pub fn cluster_role(role: &ClusterRole) -> Vec<FieldError> {
    let mut errors = metadata(&role.metadata, false);
    errors.extend(rules(&role.rules, false));
    if let Some(AggregationRule {
        cluster_role_selectors,
    }) = &role.aggregation_rule
        && cluster_role_selectors.as_ref().is_none_or(Vec::is_empty)
    {
        errors.push(FieldError::required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    errors
}

/// A role reference's `apiGroup`: k8s-openapi's `v1_37` types have it optional (1.37's
/// `+optional` marker), those of earlier releases a string; either reads here.
fn role_ref_group(role: &RoleRef) -> &str {
    /// The field as text, whichever type it is.
    trait Text {
        fn text(&self) -> &str;
    }
    impl Text for String {
        fn text(&self) -> &str {
            self
        }
    }
    impl Text for Option<String> {
        fn text(&self) -> &str {
            self.as_deref().unwrap_or_default()
        }
    }
    role.api_group.text()
}

/// A RoleRef as apimachinery prints a struct value: the JSON of the internal type, whose
/// fields carry no tags (`{"APIGroup":…,"Kind":…,"Name":…}`).
fn go_role_ref(role: &RoleRef) -> BadValue {
    BadValue::go_struct(&[
        ("APIGroup", role_ref_group(role).to_owned().into()),
        ("Kind", role.kind.clone().into()),
        ("Name", role.name.clone().into()),
    ])
}

/// The checks of a binding's role reference and subjects, for RoleBindings (`namespaced`)
/// and ClusterRoleBindings.
fn binding(
    meta: &ObjectMeta,
    role: &RoleRef,
    subjects: &Option<Vec<Subject>>,
    namespaced: bool,
) -> Vec<FieldError> {
    let mut errors = metadata(meta, namespaced);
    let api_group = role_ref_group(role);
    if api_group != GROUP {
        errors.push(FieldError::not_supported(
            "roleRef.apiGroup",
            BadValue::Str(api_group.to_owned()),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&role.kind.as_str()) {
        errors.push(FieldError::not_supported(
            "roleRef.kind",
            BadValue::Str(role.kind.clone()),
            kinds,
        ));
    }
    if role.name.is_empty() {
        errors.push(FieldError::required("roleRef.name", ""));
    } else {
        for message in path_segment_name(&role.name) {
            errors.push(FieldError::invalid(
                "roleRef.name",
                BadValue::Str(role.name.clone()),
                message,
            ));
        }
    }
    let path = Path::new("subjects");
    for (index, subject) in subjects.iter().flatten().enumerate() {
        errors.extend(binding_subject(subject, namespaced, &path.index(index)));
    }
    errors
}

/// `validateRoleBindingSubject`.
fn binding_subject(subject: &Subject, namespaced: bool, path: &Path) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if subject.name.is_empty() {
        errors.push(FieldError::required(path.child("name"), ""));
    }
    let api_group = subject.api_group.clone().unwrap_or_default();
    match subject.kind.as_str() {
        "ServiceAccount" => {
            if !subject.name.is_empty() {
                for message in names::dns1123_subdomain(&subject.name) {
                    errors.push(FieldError::invalid(
                        path.child("name"),
                        BadValue::Str(subject.name.clone()),
                        message,
                    ));
                }
            }
            if !api_group.is_empty() {
                errors.push(FieldError::not_supported(
                    path.child("apiGroup"),
                    BadValue::Str(api_group),
                    &[""],
                ));
            }
            if !namespaced && subject.namespace.as_deref().unwrap_or_default().is_empty() {
                errors.push(FieldError::required(path.child("namespace"), ""));
            }
        }
        kind @ ("User" | "Group") => {
            if subject.name.is_empty() {
                errors.push(FieldError::invalid(
                    path.child("name"),
                    BadValue::Str(String::new()),
                    format!("{} name cannot be empty", kind.to_lowercase()),
                ));
            }
            if api_group != GROUP {
                errors.push(FieldError::not_supported(
                    path.child("apiGroup"),
                    BadValue::Str(api_group),
                    &[GROUP],
                ));
            }
        }
        other => errors.push(FieldError::not_supported(
            path.child("kind"),
            BadValue::Str(other.to_owned()),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errors
}

/// `ValidateRoleBinding` (and `ValidateRoleBindingUpdate` with `old`).
pub fn role_binding(object: &RoleBinding, old: Option<&RoleBinding>) -> Vec<FieldError> {
    let mut errors = binding(&object.metadata, &object.role_ref, &object.subjects, true);
    errors.extend(role_ref_unchanged(
        &object.role_ref,
        old.map(|o| &o.role_ref),
    ));
    errors
}

/// `ValidateClusterRoleBinding` (and `ValidateClusterRoleBindingUpdate` with `old`).
pub fn cluster_role_binding(
    object: &ClusterRoleBinding,
    old: Option<&ClusterRoleBinding>,
) -> Vec<FieldError> {
    let mut errors = binding(&object.metadata, &object.role_ref, &object.subjects, false);
    errors.extend(role_ref_unchanged(
        &object.role_ref,
        old.map(|o| &o.role_ref),
    ));
    errors
}

fn role_ref_unchanged(role: &RoleRef, old: Option<&RoleRef>) -> Option<FieldError> {
    old.filter(|old| *old != role)
        .map(|_| FieldError::invalid("roleRef", go_role_ref(role), "field is immutable"))
}

/// kube-apiserver's defaults of a v1 role or binding, on its JSON: a binding's
/// `roleRef.apiGroup`, and each subject's `apiGroup` by its kind.
pub fn apply_defaults(object: &mut Value) {
    if let Some(role_ref) = object.get_mut("roleRef").and_then(Value::as_object_mut) {
        let empty = role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if empty {
            role_ref.insert("apiGroup".into(), GROUP.into());
        }
    }
    let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
        let empty = subject
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        let kind = subject
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if empty && matches!(kind, "User" | "Group") {
            subject.insert("apiGroup".into(), GROUP.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    fn binding_of(value: Value) -> ClusterRoleBinding {
        serde_json::from_value(value).unwrap()
    }

    /// kubernetes `pkg/apis/rbac/validation/validation_test.go`: `TestValidateClusterRoleBinding`
    /// and `TestValidateRoleBinding`'s error cases (bad group, bad kind, no name, bad names,
    /// bad subject kinds), `TestValidateRoleBindingUpdate` (`field is immutable` since 1.37,
    /// `cannot change roleRef` before) and `TestValidateRole...` on rules, each with the
    /// field it names.
    #[test]
    fn roles_and_bindings_are_checked_as_kube_apiserver_checks_them() {
        let valid = serde_json::json!({
            "metadata": {"name": "master"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "valid"},
            "subjects": [
                {"name": "validsaname", "apiGroup": "", "namespace": "foo", "kind": "ServiceAccount"},
                {"name": "valid@username", "apiGroup": GROUP, "kind": "User"},
                {"name": "valid@groupname", "apiGroup": GROUP, "kind": "Group"},
            ],
        });
        assert!(cluster_role_binding(&binding_of(valid.clone()), None).is_empty());
        let with = |pointer: &str, value: Value| {
            let mut object = valid.clone();
            *object.pointer_mut(pointer).unwrap() = value;
            messages(cluster_role_binding(&binding_of(object), None))
        };
        assert_eq!(
            with("/roleRef/apiGroup", "rbac.GroupName".into()),
            [
                "roleRef.apiGroup: Unsupported value: \"rbac.GroupName\": supported values: \"rbac.authorization.k8s.io\""
            ]
        );
        assert_eq!(
            with("/roleRef/kind", "Type".into()),
            ["roleRef.kind: Unsupported value: \"Type\": supported values: \"ClusterRole\""]
        );
        assert_eq!(
            with("/roleRef/name", "".into()),
            ["roleRef.name: Required value"]
        );
        assert_eq!(
            with("/metadata/name", "name/".into()),
            ["metadata.name: Invalid value: \"name/\": may not contain '/'"]
        );
        assert_eq!(
            with("/metadata/name", "..".into()),
            ["metadata.name: Invalid value: \"..\": may not be '..'"]
        );
        assert_eq!(
            with("/subjects/0/kind", "evil".into()),
            [
                "subjects[0].kind: Unsupported value: \"evil\": supported values: \"ServiceAccount\", \"User\", \"Group\""
            ]
        );
        assert_eq!(
            with("/subjects/0/namespace", "".into()),
            ["subjects[0].namespace: Required value"]
        );
        assert_eq!(
            with("/subjects/1/apiGroup", "".into()),
            [
                "subjects[1].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\""
            ]
        );
        assert_eq!(
            with("/subjects/0/name", "valid@name".into()),
            [
                "subjects[0].name: Invalid value: \"valid@name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        let changed = binding_of(serde_json::json!({
            "metadata": {"name": "master"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "changed"},
        }));
        assert_eq!(
            messages(cluster_role_binding(&changed, Some(&binding_of(valid)))),
            [
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"changed\"}: field is immutable"
            ]
        );
        let namespaced: Role = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "r", "namespace": "ns"},
            "rules": [
                {"verbs": [], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
                {"verbs": ["get"], "apiGroups": [], "resources": []},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["a", "b"], "resourceNames": ["x"]},
            ],
        }))
        .unwrap();
        assert_eq!(
            messages(role(&namespaced)),
            [
                "rules[0].verbs: Required value",
                "rules[1].nonResourceURLs: Invalid value: [\"/metrics\"]: namespaced rules cannot apply to non-resource URLs",
                "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[2].resources: Required value: resource rules must supply at least one resource",
                "rules[3].resourceNames: Required value: resource names cannot apply to multiple resources",
            ]
        );
        let aggregated: ClusterRole = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c"},
            "aggregationRule": {"clusterRoleSelectors": []},
        }))
        .unwrap();
        assert_eq!(
            messages(cluster_role(&aggregated)),
            [
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
    }

    /// `validation_test.go`'s error tables, each case by its name with the type and field
    /// of every error it expects: `TestValidateClusterRoleBinding`, `TestValidateRoleBinding`,
    /// `TestValidateRoleBindingUpdate`, and the `TestValidateRole*` cases.
    #[test]
    fn test_validate_tables() {
        use apfkit_runtime::field::ErrorType::{Invalid, NotSupported, Required};
        let check = |name: &str, errors: Vec<FieldError>, kind, field: &str| {
            assert!(!errors.is_empty(), "{name}: expected failure");
            for error in errors {
                assert_eq!(
                    (error.error_type, error.path.as_str()),
                    (kind, field),
                    "{name}"
                );
            }
        };
        let crb =
            |value: Value| cluster_role_binding(&serde_json::from_value(value).unwrap(), None);
        let rb = |value: Value| role_binding(&serde_json::from_value(value).unwrap(), None);
        let ok_ref = serde_json::json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "valid"});
        let role_ref = serde_json::json!({"apiGroup": GROUP, "kind": "Role", "name": "valid"});
        use serde_json::json;
        check(
            "bad group",
            crb(
                json!({"metadata": {"name": "default"}, "roleRef": {"apiGroup": "rbac.GroupName", "kind": "ClusterRole", "name": "valid"}}),
            ),
            NotSupported,
            "roleRef.apiGroup",
        );
        check(
            "bad kind",
            crb(
                json!({"metadata": {"name": "default"}, "roleRef": {"apiGroup": GROUP, "kind": "Type", "name": "valid"}}),
            ),
            NotSupported,
            "roleRef.kind",
        );
        check(
            "reference role",
            crb(json!({"metadata": {"name": "default"}, "roleRef": role_ref})),
            NotSupported,
            "roleRef.kind",
        );
        check(
            "zero-length name",
            crb(json!({"metadata": {}, "roleRef": ok_ref})),
            Required,
            "metadata.name",
        );
        check(
            "bad role",
            crb(
                json!({"metadata": {"name": "default"}, "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": ""}}),
            ),
            Required,
            "roleRef.name",
        );
        check(
            "bad subject kind",
            crb(
                json!({"metadata": {"name": "master"}, "roleRef": ok_ref, "subjects": [{"name": "subject", "kind": ""}]}),
            ),
            NotSupported,
            "subjects[0].kind",
        );
        check(
            "bad subject name",
            crb(
                json!({"metadata": {"name": "master"}, "roleRef": ok_ref, "subjects": [{"namespace": "foo", "name": "subject:bad", "kind": "ServiceAccount"}]}),
            ),
            Invalid,
            "subjects[0].name",
        );
        check(
            "missing SA namespace",
            crb(
                json!({"metadata": {"name": "master"}, "roleRef": ok_ref, "subjects": [{"name": "good", "kind": "ServiceAccount"}]}),
            ),
            Required,
            "subjects[0].namespace",
        );
        check(
            "missing subject name",
            crb(
                json!({"metadata": {"name": "master"}, "roleRef": ok_ref, "subjects": [{"namespace": "foo", "name": "", "kind": "ServiceAccount"}]}),
            ),
            Required,
            "subjects[0].name",
        );
        let ns = |name: &str| json!({"namespace": "default", "name": name});
        assert!(
            rb(
                json!({"metadata": ns("master"), "roleRef": role_ref, "subjects": [
            {"name": "validsaname", "kind": "ServiceAccount"},
            {"name": "valid@username", "kind": "User", "apiGroup": GROUP},
            {"name": "valid@groupname", "kind": "Group", "apiGroup": GROUP}]})
            )
            .is_empty()
        );
        check(
            "bad group",
            rb(
                json!({"metadata": ns("default"), "roleRef": {"apiGroup": "rbac.GroupName", "kind": "ClusterRole", "name": "valid"}}),
            ),
            NotSupported,
            "roleRef.apiGroup",
        );
        check(
            "bad kind",
            rb(
                json!({"metadata": ns("default"), "roleRef": {"apiGroup": GROUP, "kind": "Type", "name": "valid"}}),
            ),
            NotSupported,
            "roleRef.kind",
        );
        check(
            "zero-length namespace",
            rb(json!({"metadata": {"name": "default"}, "roleRef": role_ref})),
            Required,
            "metadata.namespace",
        );
        check(
            "zero-length name",
            rb(json!({"metadata": {"namespace": "default"}, "roleRef": role_ref})),
            Required,
            "metadata.name",
        );
        check(
            "bad role",
            rb(
                json!({"metadata": ns("default"), "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": ""}}),
            ),
            Required,
            "roleRef.name",
        );
        check(
            "bad subject kind",
            rb(
                json!({"metadata": ns("master"), "roleRef": role_ref, "subjects": [{"name": "subject", "kind": ""}]}),
            ),
            NotSupported,
            "subjects[0].kind",
        );
        check(
            "bad subject name",
            rb(
                json!({"metadata": ns("master"), "roleRef": role_ref, "subjects": [{"name": "subject:bad", "kind": "ServiceAccount"}]}),
            ),
            Invalid,
            "subjects[0].name",
        );
        check(
            "missing subject name",
            rb(
                json!({"metadata": ns("master"), "roleRef": role_ref, "subjects": [{"name": "", "kind": "ServiceAccount"}]}),
            ),
            Required,
            "subjects[0].name",
        );
        let old: RoleBinding =
            serde_json::from_value(json!({"metadata": ns("master"), "roleRef": role_ref})).unwrap();
        let same: RoleBinding = old.clone();
        assert!(role_binding(&same, Some(&old)).is_empty());
        let changed: RoleBinding = serde_json::from_value(json!({"metadata": ns("master"), "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "changed"}})).unwrap();
        check(
            "changedRef",
            role_binding(&changed, Some(&old)),
            Invalid,
            "roleRef",
        );
        let r = |value: Value| role(&serde_json::from_value(value).unwrap());
        let cr = |value: Value| cluster_role(&serde_json::from_value(value).unwrap());
        check(
            "TestValidateRoleZeroLengthNamespace",
            r(json!({"metadata": {"name": "default"}})),
            Required,
            "metadata.namespace",
        );
        check(
            "TestValidateRoleZeroLengthName",
            r(json!({"metadata": {"namespace": "default"}})),
            Required,
            "metadata.name",
        );
        assert!(
            r(json!({"metadata": ns("default")})).is_empty(),
            "TestValidateRoleValidRole"
        );
        assert!(
            cr(json!({"metadata": {"name": "default"}})).is_empty(),
            "TestValidateRoleValidRoleNoNamespace"
        );
        assert!(cr(json!({"metadata": {"name": "default"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"]}]})).is_empty(), "TestValidateRoleNonResourceURL");
        check(
            "TestValidateRoleNamespacedNonResourceURL",
            r(
                json!({"metadata": ns("default"), "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"]}]}),
            ),
            Invalid,
            "rules[0].nonResourceURLs",
        );
        check(
            "TestValidateRoleNonResourceURLNoVerbs",
            cr(
                json!({"metadata": {"name": "default"}, "rules": [{"verbs": [], "nonResourceURLs": ["/*"]}]}),
            ),
            Required,
            "rules[0].verbs",
        );
        check(
            "TestValidateRoleMixedNonResourceAndResource",
            r(
                json!({"metadata": ns("default"), "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"], "apiGroups": ["v1"], "resources": ["pods"]}]}),
            ),
            Invalid,
            "rules[0].nonResourceURLs",
        );
        assert!(r(json!({"metadata": ns("default"), "rules": [{"verbs": ["get"], "apiGroups": ["v1"], "resources": ["pods"]}]})).is_empty(), "TestValidateRoleValidResource");
        check(
            "TestValidateRoleNoAPIGroup",
            r(
                json!({"metadata": ns("default"), "rules": [{"verbs": ["get"], "resources": ["pods"]}]}),
            ),
            Required,
            "rules[0].apiGroups",
        );
        check(
            "TestValidateRoleNoResources",
            r(
                json!({"metadata": ns("default"), "rules": [{"verbs": ["get"], "apiGroups": ["v1"]}]}),
            ),
            Required,
            "rules[0].resources",
        );
    }

    #[test]
    fn bindings_are_defaulted_as_kube_apiserver_defaults_them() {
        let mut object = serde_json::json!({
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "devs", "apiGroup": ""},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "ns"},
            ],
        });
        apply_defaults(&mut object);
        assert_eq!(object["roleRef"]["apiGroup"], GROUP);
        assert_eq!(object["subjects"][0]["apiGroup"], GROUP);
        assert_eq!(object["subjects"][1]["apiGroup"], GROUP);
        assert!(object["subjects"][2].get("apiGroup").is_none());
    }
}
