//! Who is asking, as kube-apiserver authenticates a request
//! (`k8s.io/apiserver/pkg/authentication`): a client certificate signed by the server's CA
//! (its subject's common name is the user, its organizations the groups), a bearer token from
//! a file in `--token-auth-file` format, or else an anonymous request, which can be refused;
//! every authenticated user is in `system:authenticated`. Then impersonation
//! (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`), each asked of the
//! server's authorizer.

use std::collections::HashMap;

use axum::http::HeaderMap;

use crate::error::ApiError;

/// The anonymous user.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of anonymous requests.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group of every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group that may do anything, impersonation included.
pub const MASTERS: &str = "system:masters";

/// An authenticated user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The uid, when the authenticator knows one.
    pub uid: String,
    /// The groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The anonymous user, in `system:unauthenticated`.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.to_owned(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED.to_owned()],
        }
    }

    /// The user of a client certificate (DER): the subject's common name, and its
    /// organizations as groups; `None` for a certificate without a common name.
    pub fn of_certificate(der: &[u8]) -> Option<Self> {
        let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = certificate.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_owned))
            .collect();
        Some(UserInfo {
            name,
            uid: String::new(),
            groups,
        })
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `system:authenticated` unless the user is anonymous or already in it
    /// (`AuthenticatedGroupAdder`).
    fn with_authenticated_group(mut self) -> Self {
        if self.name != ANONYMOUS && !self.in_group(AUTHENTICATED) {
            self.groups.push(AUTHENTICATED.to_owned());
        }
        self
    }
}

/// A token file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token file: {0}")]
pub struct TokenFileError(String);

/// How requests are authenticated.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
    anonymous: bool,
}

impl Authenticator {
    /// Client certificates only, and anonymous requests when `anonymous`
    /// (kube-apiserver's `--anonymous-auth`, true by default).
    pub fn new(anonymous: bool) -> Self {
        Authenticator {
            tokens: HashMap::new(),
            anonymous,
        }
    }

    /// Adds the tokens of a `--token-auth-file`: CSV lines `token,user,uid` with an
    /// optional fourth column of groups (`"group1,group2"`), as kube-apiserver's
    /// `tokenfile` reads them: fewer than three columns is an error, an empty token is
    /// skipped, a repeated token replaces the earlier one.
    ///
    /// # Errors
    ///
    /// A line with fewer than three columns, or CSV that does not parse.
    pub fn with_token_file(mut self, text: &str) -> Result<Self, TokenFileError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::Fields)
            .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
        for (line, record) in reader.records().enumerate() {
            let record = record.map_err(|e| TokenFileError(e.to_string()))?;
            if record.len() < 3 {
                return Err(TokenFileError(format!(
                    "line {}: must have at least 3 columns (token, user name, user uid), found {}",
                    line + 1,
                    record.len()
                )));
            }
            let token = &record[0];
            if token.is_empty() {
                continue;
            }
            let groups = record
                .get(3)
                .filter(|g| !g.is_empty())
                .map(|g| g.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            self.tokens.insert(
                token.to_owned(),
                UserInfo {
                    name: record[1].to_owned(),
                    uid: record[2].to_owned(),
                    groups,
                },
            );
        }
        Ok(self)
    }

    /// The user of a request: the client certificate's (`peer`, verified by TLS), else the
    /// bearer token's, else anonymous. A bearer token that is not known is 401, whether or
    /// not anonymous requests are allowed (kube-apiserver does not treat a bad token as
    /// anonymous); so is a request without credentials when they are not.
    ///
    /// # Errors
    ///
    /// 401 `Unauthorized`.
    pub fn authenticate(
        &self,
        peer: Option<&UserInfo>,
        headers: &HeaderMap,
    ) -> Result<UserInfo, ApiError> {
        if let Some(user) = peer {
            return Ok(user.clone().with_authenticated_group());
        }
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        match bearer {
            Some(token) => self
                .tokens
                .get(token)
                .map(|user| user.clone().with_authenticated_group())
                .ok_or_else(ApiError::unauthorized),
            None if self.anonymous => Ok(UserInfo::anonymous()),
            None => Err(ApiError::unauthorized()),
        }
    }
}

/// The token of an `Authorization` header, read as k8s.io/apiserver's bearer-token
/// authenticator reads it (`pkg/authentication/request/bearertoken/bearertoken.go`): the
/// header trimmed, split at its first two single spaces, the first part `bearer` in any case,
/// the second the token, anything after it ignored. `Bearer  token` (two spaces) has an empty
/// token, so no token at all.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.to_lowercase() == "bearer" && !token.is_empty()).then_some(token)
}

/// The prefix of a service account's user name: `system:serviceaccount:NAMESPACE:NAME`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The namespace and name of a service account's user name
/// (`serviceaccount.SplitUsername`), `None` for any other user.
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

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
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn tokens_are_read_as_kube_apiservers_token_file() {
        let auth = Authenticator::new(true)
            .with_token_file(
                "\u{feff}t1,alice,1,\"dev,ops\"\n,nobody,2\nt2, bob ,3\nt1,alice2,4,admins\n",
            )
            .unwrap();
        let by = |token: &str| {
            auth.authenticate(
                None,
                &headers(&[("authorization", &format!("Bearer {token}"))]),
            )
        };
        assert_eq!(
            by("t1").unwrap(),
            UserInfo {
                name: "alice2".into(),
                uid: "4".into(),
                groups: vec!["admins".into(), AUTHENTICATED.into()],
            }
        );
        assert_eq!(by("t2").unwrap().name, "bob");
        assert_eq!(by("t2").unwrap().groups, [AUTHENTICATED]);
        let unknown = by("t3").unwrap_err();
        assert_eq!((unknown.code, unknown.reason), (401, "Unauthorized"));
        assert!(Authenticator::new(true).with_token_file("t,u\n").is_err());
        assert!(Authenticator::new(true).with_token_file("t,\"u\n").is_err());
    }

    /// k8s.io/apiserver `pkg/authentication/request/bearertoken/bearertoken_test.go`: what
    /// follows the token is ignored (`TestAuthenticateRequestIncludingValueAfterToken`); a
    /// header without a token is no credential at all, so the request is anonymous
    /// (`TestAuthenticateRequestBadValue`, and `TestBearerToken`'s empty, `Basic`, `Bearer `
    /// and two-space cases).
    #[test]
    fn bearer_tokens_are_parsed_as_kube_apiserver_parses_them() {
        let auth = Authenticator::new(true)
            .with_token_file("token,alice,1\n")
            .unwrap();
        let user = |value: &str| auth.authenticate(None, &headers(&[("authorization", value)]));
        for value in [
            "Bearer token",
            "Bearer token a",
            "Bearer token a b c",
            "Bearer token   a",
            "bearer token",
            "BEARER token",
            "  Bearer token  ",
        ] {
            assert_eq!(user(value).unwrap().name, "alice", "{value:?}");
        }
        for value in [
            "",
            "Bearer",
            "Bearer ",
            "bear token",
            "Bearer: token",
            "Basic 123",
            "Bearer  token",
        ] {
            assert_eq!(user(value).unwrap(), UserInfo::anonymous(), "{value:?}");
        }
    }

    #[test]
    fn anonymous_requests_unless_refused() {
        let open = Authenticator::new(true);
        assert_eq!(
            open.authenticate(None, &HeaderMap::new()).unwrap(),
            UserInfo::anonymous()
        );
        let closed = Authenticator::new(false);
        assert_eq!(
            closed
                .authenticate(None, &HeaderMap::new())
                .unwrap_err()
                .code,
            401
        );
        // A client certificate's user wins over any token.
        let peer = UserInfo {
            name: "admin".into(),
            uid: String::new(),
            groups: vec![MASTERS.into()],
        };
        let user = closed
            .authenticate(Some(&peer), &headers(&[("authorization", "Bearer nope")]))
            .unwrap();
        assert_eq!(user.groups, [MASTERS, AUTHENTICATED]);
    }

    #[test]
    fn certificates_name_the_user_and_groups() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "dev");
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        let user = UserInfo::of_certificate(certificate.der()).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev"]);
        assert!(UserInfo::of_certificate(b"not a certificate").is_none());
    }

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

    #[test]
    fn service_account_names_split_as_kube_splits_them() {
        assert_eq!(
            service_account("system:serviceaccount:ns:name"),
            Some(("ns", "name"))
        );
        assert_eq!(service_account("system:serviceaccount:ns"), None);
        assert_eq!(service_account("system:serviceaccount::name"), None);
        assert_eq!(service_account("system:serviceaccount:ns:a:b"), None);
        assert_eq!(service_account("alice"), None);
    }
}
