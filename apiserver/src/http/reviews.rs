//! The reviews kube-apiserver answers without storing anything: `authentication.k8s.io/v1`
//! SelfSubjectReview (`kubectl auth whoami`) and TokenReview (who a bearer token is, as
//! `pkg/registry/authentication/tokenreview` answers), and, with an authorizer, the four
//! reviews of
//! `authorization.k8s.io/v1` (`kubectl auth can-i`, `--list`): SelfSubjectAccessReview,
//! SubjectAccessReview, LocalSubjectAccessReview (namespaced) and SelfSubjectRulesReview, as
//! kubernetes' `pkg/registry/authorization/*/rest.go` answer them, checked as
//! `pkg/apis/authorization/validation` checks them.

use apfkit_runtime::field::{BadValue, FieldError};
use apfkit_runtime::identity::GroupVersionKind;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use crate::auth::{Authenticator, TokenUser, UserInfo};
use crate::authz::{Attributes, Authorizer, Decision};
use crate::error::{ApiError, Cause, Subject};
use crate::request_info::RequestInfo;

/// A create-only resource answered here, for discovery.
#[derive(Debug, Clone, Copy)]
pub(super) struct Review {
    /// API group.
    pub(super) group: &'static str,
    /// Kind.
    pub(super) kind: &'static str,
    /// Plural.
    pub(super) plural: &'static str,
    /// Whether it lives in namespaces.
    pub(super) namespaced: bool,
    /// Whether only a server with an authorizer answers it.
    pub(super) needs_authorizer: bool,
    /// Its status as Go writes a new one (fields without `omitempty`), which the field manager
    /// compares a created review with (the spec's fields are all `omitempty`).
    zero_status: &'static str,
}

/// The group of the access reviews.
const AUTHORIZATION: &str = "authorization.k8s.io";

/// Every review, in kube-apiserver's discovery order within each group.
pub(super) const REVIEWS: &[Review] = &[
    Review {
        group: "authentication.k8s.io",
        kind: "SelfSubjectReview",
        plural: "selfsubjectreviews",
        namespaced: false,
        needs_authorizer: false,
        zero_status: r#"{"userInfo":{}}"#,
    },
    Review {
        group: "authentication.k8s.io",
        kind: "TokenReview",
        plural: "tokenreviews",
        namespaced: false,
        needs_authorizer: false,
        zero_status: r#"{"user":{}}"#,
    },
    Review {
        group: AUTHORIZATION,
        kind: "LocalSubjectAccessReview",
        plural: "localsubjectaccessreviews",
        namespaced: true,
        needs_authorizer: true,
        zero_status: r#"{"allowed":false}"#,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        namespaced: false,
        needs_authorizer: true,
        zero_status: r#"{"allowed":false}"#,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        namespaced: false,
        needs_authorizer: true,
        zero_status: r#"{"resourceRules":null,"nonResourceRules":null,"incomplete":false}"#,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SubjectAccessReview",
        plural: "subjectaccessreviews",
        namespaced: false,
        needs_authorizer: true,
        zero_status: r#"{"allowed":false}"#,
    },
];

/// The reviews a server answers: the self-subject review always, the access reviews when it
/// has an authorizer.
pub(super) fn served(has_authorizer: bool) -> impl Iterator<Item = &'static Review> {
    REVIEWS
        .iter()
        .filter(move |review| has_authorizer || !review.needs_authorizer)
}

/// The review a request creates, if it is one this server answers.
pub(super) fn asked(info: &RequestInfo, has_authorizer: bool) -> Option<&'static Review> {
    at(info, has_authorizer).filter(|_| info.verb == "create")
}

/// The review whose resource `info`'s path names, whatever the method: create is its only
/// verb, so any other is 405 there (kube-apiserver's route for a create-only storage).
pub(super) fn at(info: &RequestInfo, has_authorizer: bool) -> Option<&'static Review> {
    if info.api_version != "v1" || !info.subresource.is_empty() {
        return None;
    }
    served(has_authorizer).find(|review| {
        review.group == info.api_group
            && review.plural == info.resource
            && review.namespaced != info.namespace.is_empty()
            && info.name.is_empty()
    })
}

/// The answer to a review: 201 with the review and its status.
///
/// # Errors
///
/// A body that is not the review (400), or one kube-apiserver refuses (422, 400).
pub(super) async fn answer(
    review: &Review,
    object: &Value,
    info: &RequestInfo,
    user: UserInfo,
    (authenticator, from_tokens): (&Authenticator, Option<TokenUser>),
    authorizer: Option<&dyn Authorizer>,
    manager: &str,
) -> Result<Value, ApiError> {
    if review.kind == "SelfSubjectReview" {
        return Ok(self_subject_review(user));
    }
    if !object.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body is not a {}: not a JSON object",
            review.kind
        )));
    }
    let object = &without_go_empty_values(object);
    let managed_fields = created_managed_fields(review, object, manager);
    if review.kind == "TokenReview" {
        return token_review(object, authenticator, from_tokens, managed_fields);
    }
    let authorizer = authorizer.ok_or_else(ApiError::no_route)?;
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    // The registries name the kind of the review they decoded, whose kind is empty.
    let invalid = |causes: Vec<FieldError>| {
        ApiError::invalid(
            &Subject {
                group: AUTHORIZATION.to_owned(),
                kind: String::new(),
                name: String::new(),
            },
            causes.iter().map(Cause::from).collect(),
        )
    };
    let decode_error = |error: serde_json::Error| {
        ApiError::bad_request(format!(
            "{} in version \"v1\" cannot be handled as a {}: {error}",
            review.kind, review.kind
        ))
    };
    let status = match review.kind {
        "SelfSubjectRulesReview" => {
            let namespace = spec
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            rules_review_status(authorizer, &user, namespace)
        }
        _ => {
            let spec: SubjectAccessReviewSpec = match spec {
                Value::Null => SubjectAccessReviewSpec::default(),
                spec => serde_json::from_value(spec).map_err(decode_error)?,
            };
            let metadata = metadata_error(review, object, info, managed_fields.as_ref());
            let errors = validate(review.kind, &spec, object, info, metadata);
            if !errors.is_empty() {
                return Err(invalid(errors));
            }
            let subject = match review.kind {
                "SelfSubjectAccessReview" => user,
                _ => UserInfo {
                    name: spec.user.clone().unwrap_or_default(),
                    uid: spec.uid.clone().unwrap_or_default(),
                    groups: spec.groups.clone().unwrap_or_default(),
                    extra: spec.extra.clone().unwrap_or_default(),
                },
            };
            let verdict = authorizer.authorize(&attributes_of(&spec, subject)).await;
            let status = SubjectAccessReviewStatus {
                allowed: verdict.decision == Decision::Allow,
                denied: (verdict.decision == Decision::Deny).then_some(true),
                reason: (!verdict.reason.is_empty()).then_some(verdict.reason),
                evaluation_error: verdict.error,
            };
            serde_json::to_value(status).map_err(ApiError::internal)?
        }
    };
    // kube's answer is the review it decoded: no creation time (ObjectMeta's zero time is
    // left out), the managed fields of the create handler's field manager.
    let mut metadata = json!({});
    if review.namespaced {
        metadata["namespace"] = info.namespace.clone().into();
    }
    if let Some(managed_fields) = managed_fields {
        metadata["managedFields"] = managed_fields;
    }
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    Ok(json!({
        "kind": review.kind,
        "apiVersion": format!("{}/v1", review.group),
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// A TokenReview's token and audiences, as the embedding server's token authenticator is
/// asked them; `None` for another review, or one without a token.
pub(super) fn token_and_audiences(
    review: &Review,
    object: &Value,
) -> Option<(String, Vec<String>)> {
    if review.kind != "TokenReview" {
        return None;
    }
    let spec = object.get("spec")?;
    let token = spec.get("token")?.as_str().filter(|t| !t.is_empty())?;
    let audiences = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    Some((token.to_owned(), audiences))
}

/// A TokenReview: whether `spec.token` authenticates, and as whom. A token not known is not
/// authenticated ("invalid bearer token"); the token file's tokens have no audiences, so a
/// review that names some is not authenticated by them (kube-apiserver's tokens of its token
/// file carry its `--api-audiences`). A token the embedding server's code authenticated
/// (`from_tokens`: a service account's) is, with the audiences it is for.
fn token_review(
    object: &Value,
    authenticator: &Authenticator,
    from_tokens: Option<TokenUser>,
    managed_fields: Option<Value>,
) -> Result<Value, ApiError> {
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let token = match spec.get("token") {
        None | Some(Value::Null) => "",
        Some(Value::String(token)) => token,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "TokenReview in version \"v1\" cannot be handled as a TokenReview: json: cannot unmarshal {} into Go struct field TokenReviewSpec.spec.token of type string",
                apfkit_wire::go_scanner::value_kind(other)
            )));
        }
    };
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = spec
        .get("audiences")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let found = authenticator
        .token_user(token)
        .filter(|_| !audiences)
        .map(|user| (user, Vec::new()))
        .or_else(|| {
            from_tokens.map(|found| (found.user.with_authenticated_group(), found.audiences))
        });
    let status = match found {
        // `UserInfo`'s fields are all `omitempty`.
        Some((user, token_audiences)) => {
            let mut info = serde_json::Map::new();
            if !user.name.is_empty() {
                info.insert("username".into(), user.name.into());
            }
            if !user.uid.is_empty() {
                info.insert("uid".into(), user.uid.into());
            }
            if !user.groups.is_empty() {
                info.insert("groups".into(), json!(user.groups));
            }
            if !user.extra.is_empty() {
                info.insert("extra".into(), json!(user.extra));
            }
            let mut status = json!({"authenticated": true, "user": info});
            if !token_audiences.is_empty() {
                status["audiences"] = json!(token_audiences);
            }
            status
        }
        // The bearer-token authenticator's error for a token nobody authenticates.
        None => json!({"user": {}, "error": "invalid bearer token"}),
    };
    let mut metadata = json!({});
    if let Some(managed_fields) = managed_fields {
        metadata["managedFields"] = managed_fields;
    }
    Ok(json!({
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// A review as kube decodes it: the `omitempty` fields of its spec (all of them, and those of
/// its resource and non-resource attributes) left out when empty, as the typed review it
/// answers and its managed fields have them.
fn without_go_empty_values(object: &Value) -> Value {
    let mut object = object.clone();
    let is_empty = |value: &Value| {
        value.as_str().is_some_and(str::is_empty) || value.as_array().is_some_and(Vec::is_empty)
    };
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.retain(|_, value| !is_empty(value));
        for attributes in ["resourceAttributes", "nonResourceAttributes"] {
            if let Some(fields) = spec.get_mut(attributes).and_then(Value::as_object_mut) {
                fields.retain(|_, value| !is_empty(value));
            }
        }
    }
    object
}

/// The `managedFields` kube-apiserver's create handler gives a review before its registry
/// answers it: the fields the request set, for `manager`; `None` when it set none.
fn created_managed_fields(review: &Review, object: &Value, manager: &str) -> Option<Value> {
    let kind = GroupVersionKind {
        group: review.group.into(),
        version: "v1".into(),
        kind: review.kind.into(),
    };
    let status: Value = serde_json::from_str(review.zero_status).ok()?;
    let zero = json!({"metadata": {}, "spec": {}, "status": status});
    crate::fields::created_managed_fields(&kind, &zero, object, manager, None)
}

/// The access reviews' `metadata must be empty` (a LocalSubjectAccessReview's but for its
/// namespace), compared without the managed fields the create handler gave it and printed
/// with them, as `pkg/apis/authorization/validation` prints the review's ObjectMeta.
fn metadata_error(
    review: &Review,
    object: &Value,
    info: &RequestInfo,
    managed_fields: Option<&Value>,
) -> Option<FieldError> {
    let detail = match review.kind {
        "SubjectAccessReview" | "SelfSubjectAccessReview" => "must be empty",
        "LocalSubjectAccessReview" => "must be empty except for namespace",
        _ => return None,
    };
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut meta: ObjectMeta = serde_json::from_value(metadata).unwrap_or_default();
    meta.managed_fields = None;
    // The create handler gives the review the request's namespace: none for a cluster's.
    meta.namespace =
        (review.namespaced && !info.namespace.is_empty()).then(|| info.namespace.clone());
    let mut compared = meta.clone();
    compared.namespace = None;
    if compared == ObjectMeta::default() {
        return None;
    }
    meta.managed_fields = managed_fields.and_then(|f| serde_json::from_value(f.clone()).ok());
    let printed = apfkit_wire::go_json::to_vec::<ObjectMeta>(&meta, false).ok()?;
    Some(FieldError::invalid(
        "metadata",
        BadValue::Go(String::from_utf8_lossy(&printed).into_owned()),
        detail,
    ))
}

/// `kubectl auth whoami`: the user the request acts as (`SelfSubjectReview`).
fn self_subject_review(user: UserInfo) -> Value {
    let mut user_info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        user_info["uid"] = user.uid.into();
    }
    if !user.extra.is_empty() {
        user_info["extra"] = json!(user.extra);
    }
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        // Its registry stamps the review it answers with the time.
        "metadata": {"creationTimestamp": crate::store::now()},
        "status": {"userInfo": user_info},
    })
}

/// The status of a SelfSubjectRulesReview: the rules the user holds in `namespace`.
fn rules_review_status(authorizer: &dyn Authorizer, user: &UserInfo, namespace: &str) -> Value {
    let rules = authorizer.rules_for(user, namespace);
    let mut status = json!({
        "resourceRules": rules.resource_rules,
        "nonResourceRules": rules.non_resource_rules,
        "incomplete": rules.incomplete,
    });
    if !rules.evaluation_error.is_empty() {
        status["evaluationError"] = rules.evaluation_error.into();
    }
    status
}

/// The attributes a review asks about (`authorizationutil.ResourceAttributesFrom` and
/// `NonResourceAttributesFrom`).
fn attributes_of(spec: &SubjectAccessReviewSpec, user: UserInfo) -> Attributes {
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(resource), _) => Attributes {
            user,
            verb: text(&resource.verb),
            resource_request: true,
            api_group: text(&resource.group),
            api_version: text(&resource.version),
            namespace: text(&resource.namespace),
            resource: text(&resource.resource),
            subresource: text(&resource.subresource),
            name: text(&resource.name),
            ..Attributes::default()
        },
        (None, Some(path)) => Attributes {
            user,
            verb: text(&path.verb),
            path: text(&path.path),
            ..Attributes::default()
        },
        (None, None) => Attributes {
            user,
            ..Attributes::default()
        },
    }
}

/// `authorization.NonResourceAttributes` as Go's `%#v` prints it in a field error.
fn go_non_resource(attributes: &NonResourceAttributes) -> BadValue {
    // The internal type has no JSON tags: its Go field names.
    BadValue::go_struct(&[
        ("Path", attributes.path.clone().unwrap_or_default().into()),
        ("Verb", attributes.verb.clone().unwrap_or_default().into()),
    ])
}

/// `pkg/apis/authorization/validation`: `ValidateSubjectAccessReviewSpec` (and its
/// self-subject and local variants).
fn validate(
    kind: &str,
    spec: &SubjectAccessReviewSpec,
    object: &Value,
    info: &RequestInfo,
    metadata: Option<FieldError>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let resource: Option<&ResourceAttributes> = spec.resource_attributes.as_ref();
    // Both or neither: the union's error on `spec`, with the non-resource attributes' value
    // (`null` when there are none).
    let union = match (resource, &spec.non_resource_attributes) {
        (Some(_), Some(path)) => Some(go_non_resource(path)),
        (None, None) => Some(BadValue::Go("null".to_owned())),
        _ => None,
    };
    if let Some(value) = union {
        errors.push(FieldError::invalid(
            "spec",
            value,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if kind != "SelfSubjectAccessReview"
        && spec.user.as_deref().unwrap_or_default().is_empty()
        && spec.groups.as_ref().is_none_or(Vec::is_empty)
    {
        errors.push(FieldError::invalid(
            "spec.user",
            BadValue::Str(spec.user.clone().unwrap_or_default()),
            "at least one of user or group must be specified",
        ));
    }
    // The metadata's error after the spec's, before a local review's own.
    errors.extend(metadata);
    if kind == "LocalSubjectAccessReview" {
        let metadata_namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(&info.namespace);
        if let Some(resource) = resource {
            let namespace = resource.namespace.as_deref().unwrap_or_default();
            if namespace != metadata_namespace {
                errors.push(FieldError::invalid(
                    "spec.resourceAttributes.namespace",
                    BadValue::Str(namespace.to_owned()),
                    "must match metadata.namespace",
                ));
            }
        }
        if let Some(path) = &spec.non_resource_attributes {
            errors.push(FieldError::invalid(
                "spec.nonResourceAttributes",
                go_non_resource(path),
                "disallowed on this kind of request",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AlwaysAllow, Deciding, PrivilegedGroups, Verdict};

    /// A review's body as the route hands it over: JSON read, or `null` for garbage; the
    /// answer waited for (the authorizers here decide at once).
    fn answer(
        review: &Review,
        body: &[u8],
        info: &RequestInfo,
        user: UserInfo,
        authorizer: Option<&dyn Authorizer>,
    ) -> Result<Value, ApiError> {
        let value = serde_json::from_slice(body).unwrap_or(Value::Null);
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(super::answer(
                review,
                &value,
                info,
                user,
                (&tokens(), None),
                authorizer,
                "tester",
            ))
    }

    /// An authenticator with one token, `secret`, of `alice`.
    fn tokens() -> Authenticator {
        Authenticator::new(false)
            .with_token_file("secret,alice,alice-uid,\"devs,ops\"")
            .unwrap()
    }

    fn token_review(spec: Value) -> Result<Value, ApiError> {
        let review = REVIEWS.iter().find(|r| r.kind == "TokenReview").unwrap();
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": spec});
        answer(
            review,
            body.to_string().as_bytes(),
            &info("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
            UserInfo::anonymous(),
            None,
        )
    }

    #[test]
    fn a_token_review_says_whom_a_token_authenticates() {
        let known = token_review(json!({"token": "secret"})).unwrap();
        assert_eq!(
            known["status"],
            json!({"authenticated": true, "user": {"username": "alice", "uid": "alice-uid",
                "groups": ["devs", "ops", "system:authenticated"]}})
        );
        assert_eq!(known["spec"], json!({"token": "secret"}));
        let managed = &known["metadata"]["managedFields"][0];
        assert_eq!(managed["manager"], "tester");
        assert_eq!(managed["fieldsV1"], json!({"f:spec": {"f:token": {}}}));
        let unknown = token_review(json!({"token": "guess"})).unwrap();
        let unauthenticated = json!({"user": {}, "error": "invalid bearer token"});
        assert_eq!(unknown["status"], unauthenticated);
        // No audiences here: a review that names some is not authenticated.
        let audiences = token_review(json!({"token": "secret", "audiences": ["api"]})).unwrap();
        assert_eq!(audiences["status"], unauthenticated);
        for spec in [json!({}), json!({"token": ""}), json!(null)] {
            let error = token_review(spec).unwrap_err();
            assert_eq!(
                error.message,
                "token is required for TokenReview in authentication"
            );
        }
        let error = token_review(json!({"token": 7})).unwrap_err();
        assert!(error.message.ends_with("of type string"), "{error:?}");
    }

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfo::new(method, path, None)
    }

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    #[test]
    fn only_creates_of_served_reviews_are_reviews() {
        let ssar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        assert_eq!(asked(&ssar, true).unwrap().kind, "SelfSubjectAccessReview");
        assert!(asked(&ssar, false).is_none());
        let lsar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
        );
        assert_eq!(asked(&lsar, true).unwrap().kind, "LocalSubjectAccessReview");
        let cluster_lsar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/localsubjectaccessreviews",
        );
        assert!(asked(&cluster_lsar, true).is_none());
        let get = info(
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        assert!(asked(&get, true).is_none());
        let whoami = info("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews");
        assert_eq!(asked(&whoami, false).unwrap().kind, "SelfSubjectReview");
    }

    #[test]
    fn an_access_review_says_what_the_authorizer_decides() {
        let ssar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        let review = asked(&ssar, true).unwrap();
        let body = br#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
            "metadata":{"creationTimestamp":null},
            "spec":{"resourceAttributes":{"verb":"list","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}}}"#;
        let masters = PrivilegedGroups::masters();
        let refused = answer(review, body, &ssar, bob(), Some(&masters)).unwrap();
        assert_eq!(refused["status"], json!({"allowed": false}));
        assert_eq!(refused["spec"]["resourceAttributes"]["verb"], "list");
        let allowed = answer(review, body, &ssar, bob(), Some(&AlwaysAllow)).unwrap();
        assert_eq!(allowed["status"], json!({"allowed": true}));

        struct Denies;
        impl Authorizer for Denies {
            fn authorize<'a>(&'a self, _: &'a Attributes) -> Deciding<'a> {
                Verdict::because(Decision::Deny, "never").ready()
            }
        }
        let denied = answer(review, body, &ssar, bob(), Some(&Denies)).unwrap();
        assert_eq!(
            denied["status"],
            json!({"allowed": false, "denied": true, "reason": "never"})
        );
    }

    /// A review's answer carries the managed fields kube's create handler records (its
    /// spec's fields, a struct's `.` included) and no creation time; a review with metadata
    /// is refused with its ObjectMeta printed, managed fields and all (as the reference
    /// answers).
    #[test]
    fn a_review_carries_its_managed_fields_and_refuses_metadata() {
        let ssar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        let review = asked(&ssar, true).unwrap();
        let body = |metadata: &str| {
            format!(
                r#"{{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
                "metadata":{metadata},
                "spec":{{"resourceAttributes":{{"verb":"get","resource":"pods"}}}}}}"#
            )
        };
        let answered = answer(
            review,
            body("{}").as_bytes(),
            &ssar,
            bob(),
            Some(&AlwaysAllow),
        )
        .unwrap();
        let metadata = answered["metadata"].as_object().unwrap();
        assert_eq!(metadata.keys().collect::<Vec<_>>(), ["managedFields"]);
        let managed = &metadata["managedFields"][0];
        assert_eq!(managed["manager"], "tester");
        assert_eq!(managed["operation"], "Update");
        // A request that names no manager is recorded as `unknown`'s.
        let object: Value = serde_json::from_str(&body("{}")).unwrap();
        let unnamed = created_managed_fields(review, &object, "").unwrap();
        assert_eq!(unnamed[0]["manager"], "unknown");
        assert_eq!(
            managed["fieldsV1"],
            json!({"f:spec": {"f:resourceAttributes": {".": {}, "f:resource": {}, "f:verb": {}}}})
        );
        let refused = answer(
            review,
            body(r#"{"name":"x","labels":{"a":"b"}}"#).as_bytes(),
            &ssar,
            bob(),
            Some(&AlwaysAllow),
        )
        .unwrap_err();
        let message = refused.message.clone();
        assert!(
            message.starts_with(
                r#".authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"x","labels":{"a":"b"},"managedFields":[{"manager":"tester","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":""#
            ) && message.ends_with(
                r#""fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:resourceAttributes":{".":{},"f:resource":{},"f:verb":{}}}}}]}: must be empty"#
            ),
            "{message}"
        );
    }

    /// kubernetes `pkg/apis/authorization/validation/validation_test.go`
    /// (`TestValidateSARSpec`, `TestValidateLocalSAR`): the messages of a review kube-apiserver
    /// refuses.
    #[test]
    fn reviews_are_checked_as_kube_apiserver_checks_them() {
        let sar = info("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews");
        let review = asked(&sar, true).unwrap();
        let error = answer(review, br#"{"spec":{}}"#, &sar, bob(), Some(&AlwaysAllow)).unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            ".authorization.k8s.io \"\" is invalid: [spec: Invalid value: null: exactly one of \
             nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid \
             value: \"\": at least one of user or group must be specified]"
        );
        let both = br#"{"spec":{"user":"me","resourceAttributes":{},"nonResourceAttributes":{"path":"/x","verb":"get"}}}"#;
        let error = answer(review, both, &sar, bob(), Some(&AlwaysAllow)).unwrap_err();
        assert_eq!(
            error.message,
            ".authorization.k8s.io \"\" is invalid: spec: Invalid value: \
             {\"Path\":\"/x\",\"Verb\":\"get\"}: exactly one of nonResourceAttributes or \
             resourceAttributes must be specified"
        );
        let lsar = info(
            "POST",
            "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
        );
        let review = asked(&lsar, true).unwrap();
        let elsewhere =
            br#"{"metadata":{"namespace":"ns"},"spec":{"user":"me","resourceAttributes":{"namespace":"other"}}}"#;
        let error = answer(review, elsewhere, &lsar, bob(), Some(&AlwaysAllow)).unwrap_err();
        assert_eq!(
            error.message,
            ".authorization.k8s.io \"\" is invalid: \
             spec.resourceAttributes.namespace: Invalid value: \"other\": must match \
             metadata.namespace"
        );
        let here = br#"{"metadata":{"namespace":"ns"},"spec":{"user":"me","resourceAttributes":{"namespace":"ns","verb":"get"}}}"#;
        let answered = answer(review, here, &lsar, bob(), Some(&AlwaysAllow)).unwrap();
        assert_eq!(answered["metadata"]["namespace"], "ns");
        assert_eq!(answered["status"]["allowed"], true);
        for garbage in [&b"{"[..], b"[]", b"{\"spec\":{\"user\":7}}", b"7"] {
            let error = answer(review, garbage, &lsar, bob(), Some(&AlwaysAllow)).unwrap_err();
            assert_eq!(error.code, 400, "{}", String::from_utf8_lossy(garbage));
        }
    }

    #[test]
    fn a_rules_review_lists_the_rules_and_needs_a_namespace() {
        let ssrr = info(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        );
        let review = asked(&ssrr, true).unwrap();
        let error =
            answer(review, br#"{"spec":{}}"#, &ssrr, bob(), Some(&AlwaysAllow)).unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (400, "no namespace on request")
        );
        let answered = answer(
            review,
            br#"{"spec":{"namespace":"default"}}"#,
            &ssrr,
            bob(),
            Some(&AlwaysAllow),
        )
        .unwrap();
        assert_eq!(
            answered["status"],
            json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            })
        );
    }
}
