//! Whether a user may do what a request asks, as kube-apiserver authorizes it
//! (`k8s.io/apiserver/pkg/authorization/authorizer`): the request's [`Attributes`] (its
//! `RequestInfo` and user), an [`Authorizer`] that allows, denies or has no opinion, the
//! modes kube-apiserver puts together ([`AlwaysAllow`], [`PrivilegedGroups`] for
//! `system:masters`, [`Union`] of them in order), and the 403 `Status` of a refusal in
//! kube-apiserver's words (`responsewriters.ForbiddenStatusError`).
//!
//! An authorizer also answers which rules a user holds in a namespace
//! ([`Authorizer::rules_for`]), for `SelfSubjectRulesReview` (`kubectl auth can-i --list`).

pub mod delegated;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use k8s_openapi::api::authorization::v1::{NonResourceRule, ResourceRule};

use crate::auth::UserInfo;
use crate::error::{ApiError, Subject};
use crate::request_info::RequestInfo;

/// The audit annotation of an authorization's decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The audit annotation of the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// What a request asks to do, as the authorizers see it (`authorizer.AttributesRecord`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, ... (for a path: the lower-case HTTP method).
    pub verb: String,
    /// Whether the request is for a resource (else for a path such as `/healthz`).
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
    /// API group of a resource request; empty for the core group.
    pub api_group: String,
    /// API version of a resource request.
    pub api_version: String,
    /// Namespace, empty for a cluster-scoped resource.
    pub namespace: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource (`status`, `scale`), if any.
    pub subresource: String,
    /// The object's name, if the request names one.
    pub name: String,
}

impl Attributes {
    /// The attributes of a request (`filters.GetAuthorizerAttributes`).
    pub fn of_request(info: &RequestInfo, user: &UserInfo) -> Self {
        Attributes {
            user: user.clone(),
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            path: info.path.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            namespace: info.namespace.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
        }
    }

    /// The 403 of a refusal, as kube-apiserver writes it: `flowschemas.flowcontrol.apiserver.k8s.io
    /// "x" is forbidden: User "bob" cannot get resource "flowschemas" in API group
    /// "flowcontrol.apiserver.k8s.io" at the cluster scope`, then `: ` and the authorizer's
    /// reason when it gave one; `forbidden: User "bob" cannot get path "/metrics"` for a path.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let message = html_safe(&self.forbidden_message());
        let why = if reason.is_empty() {
            message
        } else {
            format!("{message}: {reason}")
        };
        ApiError::forbidden(
            &Subject {
                group: self.api_group.clone(),
                kind: self.resource.clone(),
                name: self.name.clone(),
            },
            &why,
        )
    }

    /// `responsewriters.forbiddenMessage`.
    fn forbidden_message(&self) -> String {
        let user = &self.user.name;
        if !self.resource_request {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let mut resource = self.resource.clone();
        if !self.subresource.is_empty() {
            resource = format!("{resource}/{}", self.subresource);
        }
        if self.namespace.is_empty() {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
                self.verb, self.api_group
            )
        } else {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
                self.verb, self.api_group, self.namespace
            )
        }
    }
}

/// apiserver's `sanitizer`: nothing in an error that reads as HTML.
fn html_safe(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An authorizer's answer (`authorizer.Decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The request may go on.
    Allow,
    /// The request is refused, whatever later authorizers would say.
    Deny,
    /// This authorizer neither allows nor denies; the next one is asked.
    NoOpinion,
}

/// A decision with the authorizer's reason (RBAC's `allowed by ClusterRoleBinding ...`, or
/// why rules could not be read), and the error that kept it from deciding, if any (a
/// delegated authorizer that could not reach its server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// Why, or empty.
    pub reason: String,
    /// What went wrong on the way to the decision: a request that is not allowed and has one
    /// is answered 500 (`Internal Server Error`), not 403, as kube-apiserver's
    /// `WithAuthorization` answers it.
    pub error: Option<String>,
}

impl Verdict {
    /// `decision` without a reason.
    pub fn new(decision: Decision) -> Self {
        Verdict::because(decision, "")
    }

    /// `decision` for `reason`.
    pub fn because(decision: Decision, reason: &str) -> Self {
        Verdict {
            decision,
            reason: reason.to_owned(),
            error: None,
        }
    }

    /// Whether the request may go on.
    pub fn allowed(&self) -> bool {
        self.decision == Decision::Allow
    }

    /// The verdict as an [`Authorizer::authorize`] answer, for an authorizer that decides
    /// without waiting.
    pub fn ready<'a>(self) -> Deciding<'a> {
        Box::pin(std::future::ready(self))
    }
}

/// A verdict on its way: what [`Authorizer::authorize`] returns, so that an authorizer may
/// ask another server (a `SubjectAccessReview` to the aggregator) before it decides.
pub type Deciding<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

/// The rules a user holds in a namespace (`authorizer.RuleResolver.RulesFor`), in the form of
/// `SelfSubjectRulesReview`'s status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    /// Rules on resources.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules on paths.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Whether more may be allowed than the rules say (an authorizer that cannot list them).
    pub incomplete: bool,
    /// Why rules could not all be read, or empty.
    pub evaluation_error: String,
}

/// Decides whether a request may go on (`authorizer.Authorizer`, with `RuleResolver`).
///
/// ```
/// use apfkit_apiserver::authz::{Attributes, Authorizer, Deciding, Decision, Verdict};
///
/// /// Lets everyone read, and has no opinion on the rest.
/// struct ReadOnly;
///
/// impl Authorizer for ReadOnly {
///     fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
///         let reads = matches!(attributes.verb.as_str(), "get" | "list" | "watch");
///         let decision = if reads { Decision::Allow } else { Decision::NoOpinion };
///         Verdict::new(decision).ready()
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let list = Attributes { verb: "list".into(), ..Attributes::default() };
/// assert!(ReadOnly.authorize(&list).await.allowed());
/// # });
/// ```
pub trait Authorizer: Send + Sync {
    /// The decision on `attributes` (the future of one: [`Verdict::ready`] for an authorizer
    /// that needs no waiting).
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a>;

    /// The rules `user` holds in `namespace` (empty: cluster-wide ones only). By default none,
    /// and incomplete: an authorizer that cannot list what it allows.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let _ = (user, namespace);
        Rules {
            incomplete: true,
            ..Rules::default()
        }
    }
}

/// Allows everything (`--authorization-mode=AlwaysAllow`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize<'a>(&'a self, _attributes: &'a Attributes) -> Deciding<'a> {
        Verdict::new(Decision::Allow).ready()
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        let all = || Some(vec!["*".to_owned()]);
        Rules {
            resource_rules: vec![ResourceRule {
                verbs: vec!["*".to_owned()],
                api_groups: all(),
                resources: all(),
                resource_names: None,
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["*".to_owned()],
                non_resource_urls: all(),
            }],
            incomplete: false,
            evaluation_error: String::new(),
        }
    }
}

/// Allows every request of a member of one of its groups, and has no opinion on the rest
/// (kube-apiserver puts `system:masters` first: `authorizerfactory.NewPrivilegedGroups`).
#[derive(Debug, Clone)]
pub struct PrivilegedGroups(pub Vec<String>);

impl PrivilegedGroups {
    /// `system:masters`.
    pub fn masters() -> Self {
        PrivilegedGroups(vec![crate::auth::MASTERS.to_owned()])
    }
}

impl Authorizer for PrivilegedGroups {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        let member = self.0.iter().any(|group| attributes.user.in_group(group));
        Verdict::new(if member {
            Decision::Allow
        } else {
            Decision::NoOpinion
        })
        .ready()
    }

    /// It lists no rules (kube-apiserver's privileged-group authorizer is no rule resolver):
    /// `system:masters` sees cluster-admin's rules through RBAC's binding.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}

/// Authorizers asked in order, the first that allows or denies deciding
/// (`union.New`); with none deciding, no opinion, every reason given (one per line) and
/// every error (aggregated as apimachinery prints them).
#[derive(Clone, Default)]
pub struct Union(pub Vec<Arc<dyn Authorizer>>);

impl std::fmt::Debug for Union {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Union({} authorizers)", self.0.len())
    }
}

impl Authorizer for Union {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        Box::pin(async move {
            let mut reasons = Vec::new();
            let mut errors = Vec::new();
            for authorizer in &self.0 {
                let verdict = authorizer.authorize(attributes).await;
                if verdict.decision != Decision::NoOpinion {
                    return verdict;
                }
                if !verdict.reason.is_empty() {
                    reasons.push(verdict.reason);
                }
                errors.extend(verdict.error);
            }
            Verdict {
                decision: Decision::NoOpinion,
                reason: reasons.join("\n"),
                error: (!errors.is_empty()).then(|| aggregate(&errors)),
            }
        })
    }

    /// Every authorizer's rules together (`unionAuthzRulesHandler.RulesFor`).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut all = Rules::default();
        let mut errors = Vec::new();
        for authorizer in &self.0 {
            let rules = authorizer.rules_for(user, namespace);
            all.resource_rules.extend(rules.resource_rules);
            all.non_resource_rules.extend(rules.non_resource_rules);
            all.incomplete |= rules.incomplete;
            if !rules.evaluation_error.is_empty() {
                errors.push(rules.evaluation_error);
            }
        }
        all.evaluation_error = aggregate(&errors);
        all
    }
}

/// apimachinery's `utilerrors.NewAggregate(...).Error()`: one error as itself, several as
/// `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        }
    }

    /// k8s.io/apiserver `pkg/endpoints/handlers/responsewriters/errors_test.go`,
    /// `TestForbidden`, its cases as they are; and one with RBAC's reason after the message.
    #[test]
    fn test_forbidden() {
        let u = UserInfo {
            name: "NAME".to_owned(),
            ..UserInfo::default()
        };
        let resource =
            |verb: &str, namespace: &str, group: &str, sub: &str, name: &str| Attributes {
                user: u.clone(),
                verb: verb.into(),
                resource_request: true,
                namespace: namespace.into(),
                api_group: group.into(),
                resource: "pod".into(),
                subresource: sub.into(),
                name: name.into(),
                ..Attributes::default()
            };
        let path = |path: &str| Attributes {
            user: u.clone(),
            verb: "GET".into(),
            path: path.into(),
            ..Attributes::default()
        };
        let cases: Vec<(&str, Attributes, &str)> = vec![
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/whatever\"","reason":"Forbidden","details":{},"code":403}"#,
                path("/whatever"),
                "",
            ),
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/\u0026lt;script\u0026gt;\"","reason":"Forbidden","details":{},"code":403}"#,
                path("/<script>"),
                "",
            ),
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"pod"},"code":403}"#,
                resource("get", "", "", "", ""),
                "",
            ),
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod \"mypod\" is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"mypod","kind":"pod"},"code":403}"#,
                resource("get", "", "", "", "mypod"),
                "",
            ),
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod.v2 is forbidden: User \"NAME\" cannot get resource \"pod/quota\" in API group \"v2\" in the namespace \"test\"","reason":"Forbidden","details":{"group":"v2","kind":"pod"},"code":403}"#,
                resource("get", "test", "v2", "quota", ""),
                "",
            ),
            (
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod is forbidden: User \"NAME\" cannot list resource \"pod\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found","reason":"Forbidden","details":{"kind":"pod"},"code":403}"#,
                resource("list", "", "", "", ""),
                "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found",
            ),
        ];
        for (expected, attributes, reason) in cases {
            let status = attributes.forbidden(reason).status();
            let expected: serde_json::Value = serde_json::from_str(expected).unwrap();
            assert_eq!(status, expected, "{attributes:?}");
        }
    }

    /// Waits for a decision (the authorizers here decide at once).
    fn now(deciding: Deciding<'_>) -> Verdict {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(deciding)
    }

    /// k8s.io/apiserver `pkg/authorization/union/union_test.go`: the first decision wins;
    /// no opinion from all gives every reason and every error.
    #[test]
    fn a_union_takes_the_first_decision() {
        struct Says(Decision, &'static str);
        impl Authorizer for Says {
            fn authorize<'a>(&'a self, _: &'a Attributes) -> Deciding<'a> {
                Verdict::because(self.0, self.1).ready()
            }
        }
        struct Fails(&'static str);
        impl Authorizer for Fails {
            fn authorize<'a>(&'a self, _: &'a Attributes) -> Deciding<'a> {
                Verdict {
                    error: Some(self.0.to_owned()),
                    ..Verdict::new(Decision::NoOpinion)
                }
                .ready()
            }
        }
        let attributes = Attributes::default();
        let union = |list: Vec<Arc<dyn Authorizer>>| now(Union(list).authorize(&attributes));
        let allowed = union(vec![
            Arc::new(Says(Decision::NoOpinion, "a")),
            Arc::new(Says(Decision::Allow, "b")),
            Arc::new(Says(Decision::Deny, "c")),
        ]);
        assert_eq!(
            (allowed.decision, allowed.reason.as_str()),
            (Decision::Allow, "b")
        );
        let denied = union(vec![
            Arc::new(Says(Decision::Deny, "no")),
            Arc::new(Says(Decision::Allow, "yes")),
        ]);
        assert_eq!(denied.decision, Decision::Deny);
        let none = union(vec![
            Arc::new(Says(Decision::NoOpinion, "first")),
            Arc::new(Says(Decision::NoOpinion, "")),
            Arc::new(Says(Decision::NoOpinion, "second")),
        ]);
        assert_eq!(
            (none.decision, none.reason.as_str(), none.error),
            (Decision::NoOpinion, "first\nsecond", None)
        );
        let failed = union(vec![
            Arc::new(Fails("timeout")),
            Arc::new(Says(Decision::NoOpinion, "")),
            Arc::new(Fails("refused")),
        ]);
        assert_eq!(failed.error.as_deref(), Some("[timeout, refused]"));
        let failed_then_allowed = union(vec![
            Arc::new(Fails("timeout")),
            Arc::new(Says(Decision::Allow, "")),
        ]);
        assert!(failed_then_allowed.allowed());
        assert_eq!(failed_then_allowed.error, None);
    }

    #[test]
    fn masters_are_allowed_and_list_no_rules_of_their_own() {
        let masters = PrivilegedGroups::masters();
        let mut attributes = Attributes {
            user: user("admin", &["system:masters"]),
            verb: "delete".into(),
            ..Attributes::default()
        };
        assert!(now(masters.authorize(&attributes)).allowed());
        attributes.user = user("bob", &["system:authenticated"]);
        assert_eq!(
            now(masters.authorize(&attributes)).decision,
            Decision::NoOpinion
        );
        assert_eq!(masters.rules_for(&attributes.user, ""), Rules::default());
        let everything = AlwaysAllow.rules_for(&attributes.user, "default");
        assert_eq!(everything.resource_rules[0].verbs, ["*"]);
        assert!(!everything.incomplete);
    }

    #[test]
    fn errors_aggregate_as_apimachinery_prints_them() {
        assert_eq!(aggregate(&[]), "");
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
