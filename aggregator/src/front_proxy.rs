//! What a request carries to an extension server: the client's headers without those of its
//! connection, its credentials or any front-proxy header it sent, then the user in
//! client-go's `SetAuthProxyHeaders` headers.

use apfkit_apiserver::auth::{
    REMOTE_EXTRA_HEADER_PREFIX, REMOTE_GROUP_HEADER, REMOTE_UID_HEADER, REMOTE_USER_HEADER,
    UserInfo,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

/// The headers of a proxied request: the client's, without those of its connection, its
/// credentials (kube-apiserver's authentication drops `Authorization`) or any front-proxy
/// header it sent, then the user's (`SetAuthProxyHeaders`).
pub(crate) fn forward_headers(headers: &mut HeaderMap, user: &UserInfo) {
    remove_hop_by_hop(headers);
    headers.remove(header::HOST);
    headers.remove(header::AUTHORIZATION);
    let stale: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let name = name.as_str();
            matches!(
                name,
                REMOTE_USER_HEADER | REMOTE_UID_HEADER | REMOTE_GROUP_HEADER
            ) || name.starts_with(REMOTE_EXTRA_HEADER_PREFIX)
        })
        .cloned()
        .collect();
    for name in stale {
        headers.remove(name);
    }
    let value = |text: &str| HeaderValue::from_str(text).ok();
    if let Some(name) = value(&user.name) {
        headers.insert(REMOTE_USER_HEADER, name);
    }
    if !user.uid.is_empty()
        && let Some(uid) = value(&user.uid)
    {
        headers.insert(REMOTE_UID_HEADER, uid);
    }
    for group in &user.groups {
        if let Some(group) = value(group) {
            headers.append(REMOTE_GROUP_HEADER, group);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::from_bytes(
            format!("{REMOTE_EXTRA_HEADER_PREFIX}{}", escape_extra_key(key)).as_bytes(),
        ) else {
            continue;
        };
        for extra in values {
            if let Some(extra) = value(extra) {
                headers.append(name.clone(), extra);
            }
        }
    }
}

/// client-go's `headerKeyEscape`: every byte but RFC 3986's unreserved ones
/// percent-encoded.
fn escape_extra_key(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}

/// Removes the headers of one connection (RFC 9110 §7.6.1), those `Connection` names
/// included, as Go's reverse proxy does.
pub(crate) fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// client-go's `TestAuthProxyRoundTripper` points (`transport/round_trippers_test.go`):
    /// incoming front-proxy headers replaced, the uid only when set, a group header each,
    /// extras' keys escaped.
    #[test]
    fn the_user_is_forwarded_in_front_proxy_headers_and_nothing_else_of_the_client() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("x-remote-user", "mallory"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("authorization", "Bearer secret"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("accept", "application/json"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let user = UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: BTreeMap::from([
                ("example.org/foo-bar".into(), vec!["a".into(), "b".into()]),
                ("alpha".into(), vec!["x".into()]),
            ]),
        };
        forward_headers(&mut headers, &user);
        let mut seen: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("accept", "application/json"),
                ("x-remote-extra-alpha", "x"),
                ("x-remote-extra-example.org%2ffoo-bar", "a"),
                ("x-remote-extra-example.org%2ffoo-bar", "b"),
                ("x-remote-group", "dev"),
                ("x-remote-group", "system:authenticated"),
                ("x-remote-user", "alice"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        let with_uid = UserInfo {
            uid: "42".into(),
            ..user
        };
        forward_headers(&mut headers, &with_uid);
        assert_eq!(headers["x-remote-uid"], "42");
        assert_eq!(escape_extra_key("a b/ü"), "a%20b%2F%C3%BC");
    }
}
