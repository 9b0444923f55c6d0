//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`), as
//! k8s.io/apiserver's `filters/impersonation` does it: each name asked of the server's
//! authorizer with the verb `impersonate`, then the request acts as the user named.

use axum::http::HeaderMap;

use crate::auth::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo, service_account};
use crate::error::ApiError;

/// The user a request acts as (k8s.io/apiserver `filters/impersonation.WithImpersonation`):
/// `user` itself, or the one its `Impersonate-User`, `Impersonate-Group` and
/// `Impersonate-Uid` headers name when `authorizer` allows `user` to `impersonate` each of
/// them (`users`, `serviceaccounts` in the account's namespace, `groups`, and
/// `authentication.k8s.io` `uids`); without an authorizer every user may. An impersonated
/// user other than `system:anonymous` is in `system:authenticated` unless a group named says
/// otherwise; a service account named without groups is in its groups.
///
/// # Errors
///
/// 403 in kube-apiserver's words for what `user` may not impersonate; 400 for groups or a
/// uid without a user.
pub fn impersonated(
    user: UserInfo,
    headers: &HeaderMap,
    authorizer: Option<&dyn crate::authz::Authorizer>,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    };
    let users = values("Impersonate-User");
    let groups = values("Impersonate-Group");
    let uids = values("Impersonate-Uid");
    let Some(name) = users.first().filter(|name| !name.is_empty()) else {
        if groups.is_empty() && uids.is_empty() {
            return Ok(user);
        }
        return Err(ApiError::bad_request(format!(
            "requested {} without impersonating a user",
            if groups.is_empty() { "uid" } else { "groups" }
        )));
    };
    let mut acting = UserInfo {
        name: name.clone(),
        uid: uids.first().cloned().unwrap_or_default(),
        groups: Vec::new(),
    };
    let mut asked = Vec::new();
    match service_account(name) {
        Some((namespace, account)) => {
            asked.push(("", "serviceaccounts", namespace, account));
            if groups.is_empty() {
                acting.groups = vec![
                    "system:serviceaccounts".to_owned(),
                    format!("system:serviceaccounts:{namespace}"),
                ];
            }
        }
        None => asked.push(("", "users", "", name.as_str())),
    }
    for group in &groups {
        asked.push(("", "groups", "", group.as_str()));
        acting.groups.push(group.clone());
    }
    if let Some(uid) = uids.first() {
        asked.push(("authentication.k8s.io", "uids", "", uid.as_str()));
    }
    if let Some(authorizer) = authorizer {
        for (group, resource, namespace, asked_name) in asked {
            let attributes = crate::authz::Attributes {
                user: user.clone(),
                verb: "impersonate".to_owned(),
                resource_request: true,
                api_group: group.to_owned(),
                resource: resource.to_owned(),
                namespace: namespace.to_owned(),
                name: asked_name.to_owned(),
                ..crate::authz::Attributes::default()
            };
            let verdict = authorizer.authorize(&attributes);
            if !verdict.allowed() {
                return Err(attributes.forbidden(&verdict.reason));
            }
        }
    }
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
    /// (the `Impersonate-Extra-*` cases are not ported: extras are not impersonated here,
    /// docs/decisions.md).
    #[test]
    fn test_impersonation_filter() {
        use crate::authz::{Attributes, Authorizer, Decision, Verdict};
        struct ImpersonateAuthorizer;
        impl Authorizer for ImpersonateAuthorizer {
            fn authorize(&self, a: &Attributes) -> Verdict {
                let user = &a.user;
                let group = |i: usize| user.groups.get(i).map(String::as_str);
                let impersonate =
                    |resource: &str| a.verb == "impersonate" && a.resource == resource;
                match user.name.as_str() {
                    "system:admin" => return Verdict::new(Decision::Allow),
                    "deny-me" => {
                        return Verdict {
                            decision: Decision::NoOpinion,
                            reason: "denied".into(),
                        };
                    }
                    _ => {}
                }
                let allow = (group(0) == Some("wheel") && impersonate("users"))
                    || (group(0) == Some("sa-impersonater") && impersonate("serviceaccounts"))
                    || (group(0) == Some("regular-impersonater") && impersonate("users"))
                    || (group(1) == Some("group-impersonater") && impersonate("groups"))
                    || (group(0) == Some("everything-impersonater")
                        && ((impersonate("users") && a.api_group.is_empty())
                            || (impersonate("uids")
                                && a.name == "some-uid"
                                && a.api_group == "authentication.k8s.io")
                            || (impersonate("groups") && a.api_group.is_empty())));
                if allow {
                    Verdict::new(Decision::Allow)
                } else {
                    Verdict {
                        decision: Decision::NoOpinion,
                        reason: "deny by default".into(),
                    }
                }
            }
        }
        let user = |name: &str, groups: &[&str], uid: &str| UserInfo {
            name: name.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        };
        struct Case<'a> {
            name: &'a str,
            user: UserInfo,
            impersonation_user: &'a str,
            impersonation_groups: &'a [&'a str],
            impersonation_uid: &'a str,
            expected: Result<UserInfo, u16>,
        }
        let cases = [
            Case {
                name: "not-impersonating",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &[],
                impersonation_uid: "",
                expected: Ok(user("tester", &[], "")),
            },
            Case {
                name: "impersonating-error",
                user: user("tester", &[], ""),
                impersonation_user: "anyone",
                impersonation_groups: &[],
                impersonation_uid: "",
                expected: Err(403),
            },
            Case {
                name: "impersonating-group-without-user",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                expected: Err(400),
            },
            Case {
                name: "impersonating-uid-without-user",
                user: user("tester", &[], ""),
                impersonation_user: "",
                impersonation_groups: &[],
                impersonation_uid: "some-uid",
                expected: Err(400),
            },
            Case {
                name: "disallowed-group",
                user: user("dev", &["wheel"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                expected: Err(403),
            },
            Case {
                name: "allowed-group",
                user: user("dev", &["wheel", "group-impersonater"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group"],
                impersonation_uid: "",
                expected: Ok(user("system:admin", &["some-group", AUTHENTICATED], "")),
            },
            Case {
                name: "allowed-users-impersonation",
                user: user("dev", &["regular-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "",
                expected: Ok(user("tester", &[AUTHENTICATED], "")),
            },
            Case {
                name: "disallowed-impersonating",
                user: user("dev", &["sa-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "",
                expected: Err(403),
            },
            Case {
                name: "allowed-sa-impersonating",
                user: user("dev", &["sa-impersonater"], ""),
                impersonation_user: "system:serviceaccount:foo:default",
                impersonation_groups: &[],
                impersonation_uid: "",
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
                expected: Ok(user(ANONYMOUS, &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "unauthenticated-group-prevents-adding-authenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: "unknown",
                impersonation_groups: &[UNAUTHENTICATED],
                impersonation_uid: "",
                expected: Ok(user("unknown", &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "unauthenticated-group-prevents-double-adding-authenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: "unknown",
                impersonation_groups: &[AUTHENTICATED],
                impersonation_uid: "",
                expected: Ok(user("unknown", &[AUTHENTICATED], "")),
            },
            Case {
                name: "specified-authenticated-group-prevents-double-adding-authenticated-group",
                user: user("dev", &["wheel", "group-impersonater"], ""),
                impersonation_user: "system:admin",
                impersonation_groups: &["some-group", AUTHENTICATED],
                impersonation_uid: "",
                expected: Ok(user("system:admin", &["some-group", AUTHENTICATED], "")),
            },
            Case {
                name: "anonymous-user-prevents-double-adding-unauthenticated-group",
                user: user("system:admin", &[], ""),
                impersonation_user: ANONYMOUS,
                impersonation_groups: &[UNAUTHENTICATED],
                impersonation_uid: "",
                expected: Ok(user(ANONYMOUS, &[UNAUTHENTICATED], "")),
            },
            Case {
                name: "allowed-user-impersonation-with-uid",
                user: user("dev", &["everything-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "some-uid",
                expected: Ok(user("tester", &[AUTHENTICATED], "some-uid")),
            },
            Case {
                name: "disallowed-user-impersonation-with-uid",
                user: user("dev", &["everything-impersonater"], ""),
                impersonation_user: "tester",
                impersonation_groups: &[],
                impersonation_uid: "disallowed-uid",
                expected: Err(403),
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
            let got = impersonated(case.user, &asked, Some(&ImpersonateAuthorizer))
                .map_err(|error| error.code);
            assert_eq!(got, case.expected, "{}", case.name);
        }
        let refused = impersonated(
            user("dev", &["everything-impersonater"], ""),
            &headers(&[("Impersonate-User", "tester"), ("Impersonate-Uid", "other")]),
            Some(&ImpersonateAuthorizer),
        )
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
        );
        assert_eq!(open.unwrap().name, "y");
    }
}
