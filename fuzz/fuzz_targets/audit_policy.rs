//! An audit policy file (`apfkit serve --audit-policy-file`): any bytes into
//! `apfkit_apiserver::audit::policy::Policy::from_bytes`; a policy it accepts is valid and
//! gives every request a level without panicking.
#![no_main]

use apfkit_apiserver::audit::policy::Policy;
use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::authz::Attributes;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok((policy, _warnings)) = Policy::from_bytes(data) else {
        return;
    };
    assert!(policy.validate().is_empty(), "an accepted policy is valid");
    assert!(!policy.rules.is_empty());
    let user = UserInfo {
        name: "tim".into(),
        groups: vec!["humans".into()],
        ..UserInfo::default()
    };
    let requests = [
        Attributes {
            user: user.clone(),
            verb: "get".into(),
            resource_request: true,
            api_group: "flowcontrol.apiserver.k8s.io".into(),
            resource: "flowschemas".into(),
            subresource: "status".into(),
            name: "exempt".into(),
            ..Attributes::default()
        },
        Attributes {
            user,
            verb: "get".into(),
            path: "/healthz/etcd".into(),
            ..Attributes::default()
        },
    ];
    for request in &requests {
        let config = policy.evaluate(request);
        assert!(config.level >= apfkit_apiserver::audit::Level::None);
    }
});
