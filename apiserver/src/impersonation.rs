//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-*`), as k8s.io/apiserver's `filters/impersonation` does it: each name
//! asked of the server's authorizer with the verb `impersonate`, then the request acts as the
//! user named.

use std::collections::BTreeMap;

use axum::http::HeaderMap;

use crate::auth::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo, service_account};
use crate::error::ApiError;

/// The prefix of the headers that set the impersonated user's extra fields, one key each
/// (`authenticationv1.ImpersonateUserExtraHeaderPrefix`, lower case as HTTP/2 sends it).
pub(crate) const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

/// Removes the headers of impersonation from a request that now acts as the user they name,
/// as the filter does, so that nothing behind it (a proxied backend) sees them again.
pub(crate) fn remove_headers(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|name| {
            matches!(
                name.as_str(),
                "impersonate-user" | "impersonate-group" | "impersonate-uid"
            ) || name.as_str().starts_with(EXTRA_HEADER_PREFIX)
        })
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

/// One thing a request asks to impersonate (the `ObjectReference`s of
/// `buildImpersonationRequests`), asked of the authorizer in this order: the user, each
/// group, each extra value, the uid.
#[derive(Debug)]
enum Asked<'a> {
    User(&'a str),
    ServiceAccount { namespace: &'a str, name: &'a str },
    Group(&'a str),
    Extra { key: String, value: &'a str },
    Uid(&'a str),
}

impl Asked<'_> {
    /// The request as Go's `%v` prints its `ObjectReference` (Kind, Namespace, Name, UID,
    /// APIVersion, ResourceVersion, FieldPath), for the 400 that names them.
    fn go_value(&self) -> String {
        const V1: &str = "authentication.k8s.io/v1";
        let (kind, namespace, name, api_version, field_path) = match self {
            Asked::User(name) => ("User", "", *name, "", ""),
            Asked::ServiceAccount { namespace, name } => {
                ("ServiceAccount", *namespace, *name, "", "")
            }
            Asked::Group(name) => ("Group", "", *name, "", ""),
            Asked::Extra { key, value } => ("UserExtra", "", *value, V1, key.as_str()),
            Asked::Uid(uid) => ("UID", "", *uid, V1, ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }
}

/// The user a request acts as (k8s.io/apiserver `filters/impersonation.WithImpersonation`):
/// `user` itself, or the one its `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`
/// and `Impersonate-Extra-KEY` headers name when `authorizer` allows `user` to `impersonate`
/// each of them (`users`, `serviceaccounts` in the account's namespace, `groups`, and
/// `authentication.k8s.io` `uids` and `userextras` with the key as subresource); without an
/// authorizer every user may. An extra's key is the header name's rest, lower case and
/// percent-decoded. An impersonated user other than `system:anonymous` is in
/// `system:authenticated` unless a group named says otherwise; a service account named without
/// groups is in its groups.
///
/// # Errors
///
/// 403 in kube-apiserver's words for what `user` may not impersonate; 400 for groups, extras
/// or a uid without a user.
pub async fn impersonated(
    user: UserInfo,
    headers: &HeaderMap,
    authorizer: Option<&dyn crate::authz::Authorizer>,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<&str> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let mut asked = Vec::new();
    let requested_user = values("Impersonate-User")
        .first()
        .copied()
        .unwrap_or_default();
    if !requested_user.is_empty() {
        asked.push(match service_account(requested_user) {
            Some((namespace, name)) => Asked::ServiceAccount { namespace, name },
            None => Asked::User(requested_user),
        });
    }
    let groups = values("Impersonate-Group");
    asked.extend(groups.iter().map(|group| Asked::Group(group)));
    for name in headers.keys() {
        let Some(key) = name.as_str().strip_prefix(EXTRA_HEADER_PREFIX) else {
            continue;
        };
        let key = crate::auth::unescape_extra_key(key);
        for value in headers.get_all(name).iter().filter_map(|v| v.to_str().ok()) {
            asked.push(Asked::Extra {
                key: key.clone(),
                value,
            });
        }
    }
    if let Some(uid) = values("Impersonate-Uid")
        .first()
        .filter(|uid| !uid.is_empty())
    {
        asked.push(Asked::Uid(uid));
    }
    if requested_user.is_empty() {
        if asked.is_empty() {
            return Ok(user);
        }
        let requests: Vec<String> = asked.iter().map(Asked::go_value).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            requests.join(" ")
        )));
    }
    let mut acting = UserInfo {
        name: requested_user.to_owned(),
        ..UserInfo::default()
    };
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &asked {
        let mut attributes = crate::authz::Attributes {
            user: user.clone(),
            verb: "impersonate".to_owned(),
            resource_request: true,
            ..crate::authz::Attributes::default()
        };
        let v1 = |attributes: &mut crate::authz::Attributes| {
            "authentication.k8s.io".clone_into(&mut attributes.api_group);
            "v1".clone_into(&mut attributes.api_version);
        };
        match request {
            Asked::ServiceAccount { namespace, name } => {
                attributes.resource = "serviceaccounts".to_owned();
                attributes.namespace = (*namespace).to_owned();
                attributes.name = (*name).to_owned();
                if groups.is_empty() {
                    acting.groups = vec![
                        "system:serviceaccounts".to_owned(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Asked::User(name) => {
                attributes.resource = "users".to_owned();
                attributes.name = (*name).to_owned();
            }
            Asked::Group(group) => {
                attributes.resource = "groups".to_owned();
                attributes.name = (*group).to_owned();
                acting.groups.push((*group).to_owned());
            }
            Asked::Extra { key, value } => {
                v1(&mut attributes);
                attributes.resource = "userextras".to_owned();
                attributes.subresource = key.clone();
                attributes.name = (*value).to_owned();
                extra
                    .entry(key.clone())
                    .or_default()
                    .push((*value).to_owned());
            }
            Asked::Uid(uid) => {
                v1(&mut attributes);
                attributes.resource = "uids".to_owned();
                attributes.name = (*uid).to_owned();
                acting.uid = (*uid).to_owned();
            }
        }
        if let Some(authorizer) = authorizer {
            // Refused, whether the authorizer said no or could not say (`WithImpersonation`).
            let verdict = authorizer.authorize(&attributes).await;
            if !verdict.allowed() {
                return Err(attributes.forbidden(&verdict.reason));
            }
        }
    }
    acting.extra = extra;
    if acting.name == ANONYMOUS {
        if !acting.in_group(UNAUTHENTICATED) {
            acting.groups.push(UNAUTHENTICATED.to_owned());
        }
    } else if !acting.in_group(AUTHENTICATED) && !acting.in_group(UNAUTHENTICATED) {
        acting.groups.push(AUTHENTICATED.to_owned());
    }
    Ok(acting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tests::headers;
    use axum::http::HeaderValue;

    /// k8s.io/apiserver `pkg/endpoints/filters/impersonation/impersonation_test.go`: the
    /// test's authorizer (`impersonateAuthorizer`) and the cases of
    /// `TestImpersonationFilter` on users, groups, service accounts and uids, by their names
    /// and extras, by their names; and that the headers are gone from the request once
    /// honoured (its `doNothingHandler`'s checks).
    #[tokio::test]
    async fn test_impersonation_filter() {
        use crate::authz::{Attributes, Authorizer, Deciding, Decision, Verdict};
        struct ImpersonateAuthorizer;
        impl Authorizer for ImpersonateAuthorizer {
            fn authorize<'a>(&'a self, a: &'a Attributes) -> Deciding<'a> {
                Self::decide(a).ready()
            }
        }
        impl ImpersonateAuthorizer {
            fn decide(a: &Attributes) -> Verdict {
                let user = &a.user;
                let group = |i: usize| user.groups.get(i).map(String::as_str);
                let impersonate =
                    |resource: &str| a.verb == "impersonate" && a.resource == resource;
                match user.name.as_str() {
                    "system:admin" => return Verdict::new(Decision::Allow),
                    "deny-me" => {
                        return Verdict::because(Decision::NoOpinion, "denied");
                    }
                    _ => {}
                }
                let extra = |key: &str| {
                    impersonate("userextras")
                        && a.subresource == key
                        && a.api_group == "authentication.k8s.io"
                };
                let allow = (group(0) == Some("wheel") && impersonate("users"))
                    || (group(0) == Some("sa-impersonater") && impersonate("serviceaccounts"))
                    || (group(0) == Some("regular-impersonater") && impersonate("users"))
                    || (group(1) == Some("group-impersonater") && impersonate("groups"))
                    || (group(1) == Some("extra-setter-scopes")
                        && impersonate("userextras")
                        && a.subresource == "scopes")
                    || matches!(group(1), Some("escaped-scopes" | "almost-escaped-scopes"))
                    || (group(1) == Some("extra-setter-particular-scopes")
                        && extra("scopes")
                        && a.name == "scope-a")
                    || (group(1) == Some("extra-setter-project") && extra("project"))
                    || (group(0) == Some("everything-impersonater") && extra("scopes"))
                    || (group(0) == Some("everything-impersonater")
                        && ((impersonate("users") && a.api_group.is_empty())
                            || (impersonate("uids")
                                && a.name == "some-uid"
                                && a.api_group == "authentication.k8s.io")
                            || (impersonate("groups") && a.api_group.is_empty())));
                if allow {
                    Verdict::new(Decision::Allow)
                } else {
                    Verdict::because(Decision::NoOpinion, "deny by default")
                }
            }
        }
        let user = |name: &str, groups: &[&str], uid: &str| UserInfo {
            name: name.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        };
        let with_extra = |user: UserInfo, extras: &[(&str, &[&str])]| UserInfo {
            extra: extras
                .iter()
                .map(|(key, values)| {
                    let values = values.iter().map(|v| (*v).to_owned()).collect();
                    ((*key).to_owned(), values)
                })
                .collect(),
            ..user
        };
        struct Case<'a> {
            name: &'a str,
            user: UserInfo,
            impersonation_user: &'a str,
            impersonation_groups: &'a [&'a str],
            impersonation_uid: &'a str,
            impersonation_user_extras: &'a [(&'a str, &'a [&'a str])],
            expected: Result<UserInfo, u16>,
        }
        let cases = [
            Case {
                name: "not-impersonating",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("tester", &[], "")),
            },
            Case {
                name: "impersonating-error",
                user: user("tester", &[], ""),
                impersonation_user: "anyone",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Err(403),
            },
            Case {
                name: "impersonating-group-without-user",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Err(400),
            },
            Case {
                name: "impersonating-uid-without-user",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &[],
                impersonation_uid: "some-uid",
                impersonation_user_extras: &[],
                expected: Err(400),
            },
            Case {
                name: "disallowed-group",
                user: user("dev", &["wheel"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Err(403),
            },
            Case {
                name: "allowed-group",
                user: user("dev", &["wheel", "group-impersonater"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("system:admin", &["some-group", AUTHENTICATED], "")),
            },
            Case {
                name: "impersonating-extra-without-user",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[("scopes", &["scope-a"])],
                expected: Err(400),
            },
            Case {
                name: "disallowed-userextra-1",
                user: user("dev", &["wheel"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[("scopes", &["scope-a"])],
                expected: Err(403),
            },
            Case {
                name: "disallowed-userextra-2",
                user: user("dev", &["wheel", "extra-setter-project"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[("scopes", &["scope-a"])],
                expected: Err(403),
            },
            Case {
                name: "disallowed-userextra-3",
                user: user("dev", &["wheel", "extra-setter-particular-scopes"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                impersonation_user_extras: &[("scopes", &["scope-a", "scope-b"])],
                expected: Err(403),
            },
            Case {
                name: "allowed-userextras",
                user: user("dev", &["wheel", "extra-setter-scopes"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[("scopes", &["scope-a", "scope-b"])],
                expected: Ok(with_extra(
                    user("system:admin", &[AUTHENTICATED], ""),
                    &[("scopes", &["scope-a", "scope-b"])],
                )),
            },
            Case {
                name: "percent-escaped-userextras",
                user: user("dev", &["wheel", "escaped-scopes"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[(
                    "example.com%2fescaped%e1%9b%84scopes",
                    &["scope-a", "scope-b"],
                )],
                expected: Ok(with_extra(
                    user("system:admin", &[AUTHENTICATED], ""),
                    &[("example.com/escaped\u{16c4}scopes", &["scope-a", "scope-b"])],
                )),
            },
            Case {
                name: "almost-percent-escaped-userextras",
                user: user("dev", &["wheel", "almost-escaped-scopes"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[(
                    "almost%zzpercent%xxencoded",
                    &["scope-a", "scope-b"],
                )],
                expected: Ok(with_extra(
                    user("system:admin", &[AUTHENTICATED], ""),
                    &[("almost%zzpercent%xxencoded", &["scope-a", "scope-b"])],
                )),
            },
            Case {
                name: "allowed-users-impersonation",
                user: user("dev", &["regular-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("tester", &[AUTHENTICATED], "")),
            },
            Case {
                name: "disallowed-impersonating",
                user: user("dev", &["sa-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Err(403),
            },
            Case {
                name: "allowed-sa-impersonating",
                user: user("dev", &["sa-impersonater"], ""),
                impersonation_user: "system:serviceaccount:foo:default",
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user(
                    "system:serviceaccount:foo:default",
                    &[
                        "system:serviceaccounts",
                        "system:serviceaccounts:foo",
                        AUTHENTICATED,
                    ],
                    "",
                )),
            },
            Case {
                name: "anonymous-username-prevents-adding-authenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: ANONYMOUS,
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user(ANONYMOUS, &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "unauthenticated-group-prevents-adding-authenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: "unknown",
                impersonation_groups: &[UNAUTHENTICATED],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("unknown", &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "unauthenticated-group-prevents-double-adding-authenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: "unknown",
                impersonation_groups: &[AUTHENTICATED],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("unknown", &[AUTHENTICATED], "")),
            },
            Case {
                name: "specified-authenticated-group-prevents-double-adding-authenticated-group",
                user: user("dev", &["wheel", "group-impersonater"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group", AUTHENTICATED],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user("system:admin", &["some-group", AUTHENTICATED], "")),
            },
            Case {
                name: "anonymous-user-prevents-double-adding-unauthenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: ANONYMOUS,
                impersonation_groups: &[UNAUTHENTICATED],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user(ANONYMOUS, &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "allowed-user-impersonation-with-uid",
                user: user("dev", &["everything-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "some-uid",
                impersonation_user_extras: &[],
                expected: Ok(user("tester", &[AUTHENTICATED], "some-uid")),
            },
            Case {
                name: "disallowed-user-impersonation-with-uid",
                user: user("dev", &["everything-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "disallowed-uid",
                impersonation_user_extras: &[],
                expected: Err(403),
            },
            Case {
                name: "anonymous-user-should-include-unauthenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: ANONYMOUS,
                impersonation_groups: &[],
                impersonation_uid: "",
                impersonation_user_extras: &[],
                expected: Ok(user(ANONYMOUS, &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "allowed-impersonation-with-all-headers",
                user: user("dev", &["everything-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[AUTHENTICATED],
                impersonation_uid: "some-uid",
                impersonation_user_extras: &[("scopes", &["scope-a", "scope-b"])],
                expected: Ok(with_extra(
                    user("tester", &[AUTHENTICATED], "some-uid"),
                    &[("scopes", &["scope-a", "scope-b"])],
                )),
            },
        ];
        for case in cases {
            let mut asked = HeaderMap::new();
            let mut add = |name: &'static str, value: &str| {
                if !value.is_empty() {
                    asked.append(name, HeaderValue::from_str(value).unwrap());
                }
            };
            add("Impersonate-User", case.impersonation_user);
            for group in case.impersonation_groups {
                add("Impersonate-Group", group);
            }
            add("Impersonate-Uid", case.impersonation_uid);
            for (key, values) in case.impersonation_user_extras {
                for value in *values {
                    asked.append(
                        axum::http::HeaderName::from_bytes(
                            format!("Impersonate-Extra-{key}").as_bytes(),
                        )
                        .unwrap(),
                        HeaderValue::from_str(value).unwrap(),
                    );
                }
            }
            let got = impersonated(case.user, &asked, Some(&ImpersonateAuthorizer))
                .await
                .map_err(|error| error.code);
            assert_eq!(got, case.expected, "{}", case.name);
        }
        let without_user = impersonated(
            user("dev", &[], ""),
            &headers(&[
                ("Impersonate-Group", "g"),
                ("Impersonate-Extra-Scopes", "a"),
                ("Impersonate-Uid", "u"),
            ]),
            Some(&ImpersonateAuthorizer),
        )
        .await
        .unwrap_err();
        // Go's `%v` of the `ObjectReference`s asked for.
        assert_eq!(
            without_user.message,
            "requested [{Group  g    } {UserExtra  a  authentication.k8s.io/v1  scopes} \
             {UID  u  authentication.k8s.io/v1  }] without impersonating a user"
        );
        let mut honoured = headers(&[
            ("Impersonate-User", "tester"),
            ("Impersonate-Group", "g"),
            ("Impersonate-Uid", "u"),
            ("Impersonate-Extra-Scopes", "a"),
            ("Impersonate-Extra-Project", "b"),
            ("Accept", "application/json"),
        ]);
        remove_headers(&mut honoured);
        assert_eq!(honoured.keys().collect::<Vec<_>>(), ["accept"]);
        let refused = impersonated(
            user("dev", &["everything-impersonater"], ""),
            &headers(&[("Impersonate-User", "tester"), ("Impersonate-Uid", "other")]),
            Some(&ImpersonateAuthorizer),
        )
        .await
        .unwrap_err();
        assert_eq!(
            refused.message,
            "uids.authentication.k8s.io \"other\" is forbidden: User \"dev\" cannot \
             impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the \
             cluster scope: deny by default"
        );
        // Without an authorizer, everyone may (authorization is off).
        let open = impersonated(
            user("x", &[], ""),
            &headers(&[("Impersonate-User", "y")]),
            None,
        )
        .await;
        assert_eq!(open.unwrap().name, "y");
    }
}
