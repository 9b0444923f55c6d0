//! Authorization on `apfkit serve`, as kube-apiserver authorizes with
//! `--authorization-mode=RBAC` (the default) and `AlwaysAllow`: strangers refused with its
//! 403s, its bootstrap roles and bindings, roles and bindings that grant, `kubectl auth
//! can-i` (and `--list`), impersonation by the `impersonate` verb, ClusterRole aggregation.
//! The findings of the third hostile run (an anonymous `DELETE` of every FlowSchema, an
//! anonymous FlowSchema exempting `system:unauthenticated`, anonymous CRDs and APIServices)
//! are replayed and refused.

use std::time::Duration;

use serde_json::Value;

use super::serve::Server;

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

/// kubectl as the plain user (context `apfkit-user`, bound to nothing at start).
fn as_user<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--context", "apfkit-user"];
    all.extend_from_slice(args);
    all
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn strangers_are_refused_with_kube_apiservers_403s() {
    let server = Server::start(&[]);
    // Anonymous: what system:public-info-viewer grants, nothing more.
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, _) = server.curl_anonymous(path, &[], b"");
        assert_eq!(code, 200, "{path}");
    }
    let (code, status) = server.curl_anonymous("/apis", &[], b"");
    let status: Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(code, 403);
    assert_eq!(
        status,
        serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "forbidden: User \"system:anonymous\" cannot get path \"/apis\"",
            "reason": "Forbidden", "details": {}, "code": 403,
        })
    );
    // The hostile run's first finding: an anonymous DELETE of the collection.
    let (code, status) = server.curl_anonymous(FLOW_SCHEMAS, &["-X", "DELETE"], b"");
    let status: Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User \"system:anonymous\" \
         cannot deletecollection resource \"flowschemas\" in API group \
         \"flowcontrol.apiserver.k8s.io\" at the cluster scope"
    );
    assert_eq!(
        status["details"],
        serde_json::json!({"group": "flowcontrol.apiserver.k8s.io", "kind": "flowschemas"})
    );
    // An anonymous FlowSchema that would exempt anonymous requests, a CRD and an
    // APIService: all refused, nothing stored.
    let exempting = br#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
        "metadata":{"name":"open"},"spec":{"priorityLevelConfiguration":{"name":"exempt"},
        "rules":[{"subjects":[{"kind":"Group","group":{"name":"system:unauthenticated"}}],
        "nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}"#;
    let json = [
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        "@-",
    ];
    let (code, _) = server.curl_anonymous(FLOW_SCHEMAS, &json, exempting);
    assert_eq!(code, 403);
    let crd = br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":"gadgets.example.com"},"spec":{"group":"example.com","scope":"Cluster",
        "names":{"kind":"Gadget","plural":"gadgets"},"versions":[{"name":"v1","served":true,
        "storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}"#;
    let (code, _) = server.curl_anonymous(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json,
        crd,
    );
    assert_eq!(code, 403);
    let (code, _) = server.curl_anonymous(
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com",
        &["-X", "DELETE"],
        b"",
    );
    assert_eq!(code, 403);
    let (code, listed) = server.curl_json(FLOW_SCHEMAS, &[], b"");
    assert_eq!(code, 200);
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"exempt") && !names.contains(&"open"),
        "{names:?}"
    );

    // The plain user: authenticated, bound to nothing but the basic roles.
    let refused = server.kubectl(&as_user(&["get", "flowschemas"]), b"");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains(
            "Error from server (Forbidden): flowschemas.flowcontrol.apiserver.k8s.io is \
             forbidden: User \"apfkit-user\" cannot list resource \"flowschemas\" in API group \
             \"flowcontrol.apiserver.k8s.io\" at the cluster scope"
        ),
        "{}",
        stderr(&refused)
    );
    let can = server.kubectl(&as_user(&["auth", "can-i", "delete", "flowschemas"]), b"");
    assert_eq!(String::from_utf8_lossy(&can.stdout).trim(), "no");
    assert!(!can.status.success());
    let admin = server.kubectl_ok(&["auth", "can-i", "delete", "flowschemas"], b"");
    assert_eq!(admin.trim(), "yes");
    // The plain user may not impersonate: no mode of constrained impersonation is its, nor
    // the impersonate verb of before; the first mode's refusal is the answer.
    let impersonating = server.kubectl(&as_user(&["--as", "dave", "get", "flowschemas"]), b"");
    assert!(
        stderr(&impersonating).contains(
            "flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User \"apfkit-user\" \
             cannot impersonate-on:user-info:list resource \"flowschemas\" in API group \
             \"flowcontrol.apiserver.k8s.io\" at the cluster scope"
        ),
        "{}",
        stderr(&impersonating)
    );
}

#[test]
fn roles_and_bindings_grant_and_kubectl_auth_can_i_says_so() {
    let server = Server::start(&[]);
    // kube-apiserver's bootstrap roles and bindings are there.
    let roles = server.kubectl_ok(&["get", "clusterroles"], b"");
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:monitoring",
    ] {
        assert!(
            roles.lines().any(|l| l.starts_with(&format!("{role} "))),
            "{role}: {roles}"
        );
    }
    let bindings = server.kubectl_ok(
        &["get", "clusterrolebindings", "cluster-admin", "-o", "wide"],
        b"",
    );
    assert!(bindings.contains("ClusterRole/cluster-admin"), "{bindings}");
    assert!(bindings.contains("system:masters"), "{bindings}");

    // A role that reads the APF configuration, bound to the plain user.
    server.kubectl_ok(
        &[
            "create",
            "clusterrole",
            "apf-reader",
            "--verb",
            "get,list,watch",
            "--resource",
            "flowschemas,prioritylevelconfigurations",
        ],
        b"",
    );
    server.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "apf-reader",
            "--clusterrole",
            "apf-reader",
            "--user",
            "apfkit-user",
        ],
        b"",
    );
    let listed = wait_for(|| {
        let out = server.kubectl(&as_user(&["get", "flowschemas", "-o", "name"]), b"");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert!(
        listed.contains("flowschema.flowcontrol.apiserver.k8s.io/exempt"),
        "{listed}"
    );
    let refused = server.kubectl(&as_user(&["delete", "flowschema", "exempt"]), b"");
    assert!(
        stderr(&refused).contains(
            "flowschemas.flowcontrol.apiserver.k8s.io \"exempt\" is forbidden: User \
             \"apfkit-user\" cannot delete resource \"flowschemas\" in API group \
             \"flowcontrol.apiserver.k8s.io\" at the cluster scope"
        ),
        "{}",
        stderr(&refused)
    );
    let can = server.kubectl_ok(
        &as_user(&["auth", "can-i", "watch", "prioritylevelconfigurations"]),
        b"",
    );
    assert_eq!(can.trim(), "yes");
    // The administrator asks on the user's behalf (SubjectAccessReview through --as).
    let on_behalf = server.kubectl(
        &[
            "auth",
            "can-i",
            "delete",
            "flowschemas",
            "--as",
            "apfkit-user",
        ],
        b"",
    );
    assert_eq!(String::from_utf8_lossy(&on_behalf.stdout).trim(), "no");
    // `--list`: the user's rules from its bindings (SelfSubjectRulesReview).
    let list = server.kubectl_ok(&as_user(&["auth", "can-i", "--list"]), b"");
    let row = list
        .lines()
        .find(|l| l.starts_with("flowschemas.flowcontrol.apiserver.k8s.io"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("[get list watch]"), "{row}");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );

    // A SubjectAccessReview posted as kube's clients post it.
    let review = br#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
        "spec":{"user":"apfkit-user","resourceAttributes":{"verb":"list",
        "group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}}}"#;
    let (code, answer) = server.curl_json(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ],
        review,
    );
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["status"]["allowed"], true);
    assert_eq!(
        answer["status"]["reason"],
        "RBAC: allowed by ClusterRoleBinding \"apf-reader\" of ClusterRole \"apf-reader\" to User \"apfkit-user\""
    );

    // Impersonation by the impersonate verb: granted to the user for one name.
    server.kubectl_ok(
        &[
            "create",
            "clusterrole",
            "impersonate-robot",
            "--verb",
            "impersonate",
            "--resource",
            "users",
            "--resource-name",
            "robot",
        ],
        b"",
    );
    server.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "impersonate-robot",
            "--clusterrole",
            "impersonate-robot",
            "--user",
            "apfkit-user",
        ],
        b"",
    );
    let whoami = wait_for(|| {
        let out = server.kubectl(
            &as_user(&[
                "--as",
                "robot",
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ]),
            b"",
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert_eq!(whoami, "robot");
    let other = server.kubectl(&as_user(&["--as", "someone-else", "auth", "whoami"]), b"");
    assert!(!other.status.success());
    // Extras: `impersonate` on `userextras` with the key as subresource
    // (`authentication.k8s.io`), one value granted by name.
    server.kubectl_ok(
        &["apply", "-f", "-"],
        br#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"impersonate-scopes"},
            "rules":[{"apiGroups":["authentication.k8s.io"],"resources":["userextras/scopes"],
                      "resourceNames":["read"],"verbs":["impersonate"]}]}"#,
    );
    server.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "impersonate-scopes",
            "--clusterrole",
            "impersonate-scopes",
            "--user",
            "apfkit-user",
        ],
        b"",
    );
    let dir = server.data_dir();
    let (cert, key) = (dir.join("user.crt"), dir.join("user.key"));
    let review = |scope: &str| {
        server.curl_json(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[
                "-X",
                "POST",
                "--cert",
                cert.to_str().unwrap(),
                "--key",
                key.to_str().unwrap(),
                "-H",
                "Impersonate-User: robot",
                "-H",
                &format!("Impersonate-Extra-Scopes: {scope}"),
                "-d",
                "{}",
            ],
            b"",
        )
    };
    let (code, granted) = wait_for(|| Some(review("read")).filter(|(code, _)| *code == 201));
    assert_eq!(code, 201);
    assert_eq!(
        granted["status"]["userInfo"]["extra"]["scopes"],
        serde_json::json!(["read"])
    );
    let (code, refused) = review("write");
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "userextras.authentication.k8s.io \"write\" is forbidden: User \"apfkit-user\" cannot \
         impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the \
         cluster scope"
    );

    // Aggregation: a role labelled for view adds its rules to view.
    server.kubectl_ok(
        &["apply", "-f", "-"],
        br#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"apf-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
            "rules":[{"apiGroups":["flowcontrol.apiserver.k8s.io"],"resources":["flowschemas"],"verbs":["get"]}]}"#,
    );
    let view = wait_for(|| {
        let rules = server.kubectl_ok(
            &["get", "clusterrole", "view", "-o", "jsonpath={.rules}"],
            b"",
        );
        rules.contains("flowschemas").then_some(rules)
    });
    assert!(view.contains("flowcontrol.apiserver.k8s.io"), "{view}");
    // Edit and admin aggregate view's rules in turn.
    wait_for(|| {
        let rules = server.kubectl_ok(
            &["get", "clusterrole", "admin", "-o", "jsonpath={.rules}"],
            b"",
        );
        rules.contains("flowschemas").then_some(rules)
    });
}

#[test]
fn bootstrap_roles_are_reconciled_unless_their_autoupdate_is_false() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let server = Server::start_in(&data, &["--no-bootstrap"]);
    // Take a rule away from one role and mark another not to be updated.
    server.kubectl_ok(
        &["patch", "clusterrole", "system:public-info-viewer", "--type", "json", "-p",
          r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}]"#],
        b"",
    );
    server.kubectl_ok(
        &[
            "annotate",
            "--overwrite",
            "clusterrole",
            "system:monitoring",
            "rbac.authorization.kubernetes.io/autoupdate=false",
        ],
        b"",
    );
    server.kubectl_ok(
        &["patch", "clusterrole", "system:monitoring", "--type", "json", "-p",
          r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/metrics"]}]}]"#],
        b"",
    );
    server.kubectl_ok(&["delete", "clusterrolebinding", "system:discovery"], b"");
    drop(server);
    let server = Server::start_in(&data, &["--no-bootstrap"]);
    let viewer = server.kubectl_ok(
        &[
            "get",
            "clusterrole",
            "system:public-info-viewer",
            "-o",
            "jsonpath={.rules[*].nonResourceURLs}",
        ],
        b"",
    );
    for path in ["/livez", "/readyz", "/version"] {
        assert!(viewer.contains(path), "{path} in {viewer}");
    }
    let monitoring = server.kubectl_ok(
        &[
            "get",
            "clusterrole",
            "system:monitoring",
            "-o",
            "jsonpath={.rules[*].nonResourceURLs}",
        ],
        b"",
    );
    assert_eq!(monitoring, r#"["/metrics"]"#);
    server.kubectl_ok(&["get", "clusterrolebinding", "system:discovery"], b"");
}

#[test]
fn always_allow_lets_everyone_in_and_turns_anonymous_requests_off() {
    let server = Server::start(&["--authorization-mode", "AlwaysAllow"]);
    let (code, _) = server.curl_anonymous("/version", &[], b"");
    assert_eq!(code, 401);
    let deleted = server.kubectl_ok(&as_user(&["auth", "can-i", "delete", "flowschemas"]), b"");
    assert_eq!(deleted.trim(), "yes");
    // RBAC's resources are not served in this mode.
    let missing = server.kubectl(&["get", "clusterroles"], b"");
    assert!(!missing.status.success());
}

/// A user allowed to update and patch Services, not to create them, makes none by a
/// replace or a server-side apply of a missing one: kube's handlers authorize the create an
/// update or an apply turns into (`withAuthorization`), after validating it.
#[test]
fn an_update_or_apply_that_creates_is_authorized_as_a_create() {
    let server = Server::start(&[]);
    server.kubectl_ok(&["create", "namespace", "updates"], b"");
    grant_on_services(&server, "may-update", "get,update,patch");
    let service = |port: u16| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"made","namespace":"updates"}},
            "spec":{{"clusterIP":"None","ports":[{{"port":{port}}}]}}}}"#
        )
    };
    let forbidden = "services \"made\" is forbidden: User \"apfkit-user\" cannot create \
                     resource \"services\" in API group \"\" in the namespace \"updates\"";
    let replaced = wait_for(|| {
        let out = server.kubectl(&as_user(&["replace", "-f", "-"]), service(80).as_bytes());
        let said = stderr(&out);
        (!said.contains("cannot get") && !said.contains("cannot update")).then_some(out)
    });
    assert!(!replaced.status.success());
    assert!(
        stderr(&replaced).contains(forbidden),
        "{}",
        stderr(&replaced)
    );
    let applied = server.kubectl(
        &as_user(&["apply", "--server-side", "-f", "-"]),
        service(80).as_bytes(),
    );
    assert!(!applied.status.success());
    assert!(stderr(&applied).contains(forbidden), "{}", stderr(&applied));
    // Nothing was made; an invalid Service is refused for what it is first.
    let missing = server.kubectl(&["get", "service", "made", "-n", "updates"], b"");
    assert!(
        stderr(&missing).contains("NotFound"),
        "{}",
        stderr(&missing)
    );
    let invalid = server.kubectl(&as_user(&["replace", "-f", "-"]), service(0).as_bytes());
    assert!(
        stderr(&invalid).contains("spec.ports[0].port: Invalid value: 0"),
        "{}",
        stderr(&invalid)
    );
    // Once allowed to create, the same apply makes it.
    grant_on_services(&server, "may-create", "create");
    let created = wait_for(|| {
        let out = server.kubectl(
            &as_user(&["apply", "--server-side", "-f", "-"]),
            service(80).as_bytes(),
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert!(
        created.contains("service/made serverside-applied"),
        "{created}"
    );
}

/// Grants the plain user `verbs` on Services in the namespace `updates` by a Role and a
/// RoleBinding named `name`.
fn grant_on_services(server: &Server, name: &str, verbs: &str) {
    let role = ["create", "role", name, "-n", "updates", "--verb", verbs];
    server.kubectl_ok(&[&role[..], &["--resource", "services"]].concat(), b"");
    let binding = [
        "create",
        "rolebinding",
        name,
        "-n",
        "updates",
        "--role",
        name,
    ];
    server.kubectl_ok(&[&binding[..], &["--user", "apfkit-user"]].concat(), b"");
}

/// Waits up to 20 s for `probe` to answer something.
fn wait_for<T>(probe: impl FnMut() -> Option<T>) -> T {
    apfkit_test_support::process::eventually(Duration::from_secs(20), "an answer", probe)
}

/// The Python client as the plain user: refused with kube-apiserver's 403, then allowed to
/// list once bound, and refused a write it was not granted.
const PYTHON_PLAIN_USER: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1], context="apfkit-user")
api = client.FlowcontrolApiserverV1Api()
seen = {}
try:
    api.list_flow_schema()
    seen["list"] = 200
except ApiException as e:
    seen["list"] = e.status
    seen["reason"] = json.loads(e.body)["reason"]
print(json.dumps(seen))
"#;

#[test]
fn escalation_is_refused_and_the_python_client_is_held_as_a_plain_user() {
    let server = Server::start(&["--no-bootstrap"]);
    let refused = super::serve_clients::run_python(&server, PYTHON_PLAIN_USER);
    assert_eq!(
        refused,
        serde_json::json!({"list": 403, "reason": "Forbidden"})
    );

    // The plain user may write roles and bindings, and read flow schemas: no more.
    server.kubectl_ok(
        &[
            "create",
            "clusterrole",
            "rbac-writer",
            "--verb",
            "create,get,list",
            "--resource",
            "clusterroles,clusterrolebindings,flowschemas",
        ],
        b"",
    );
    server.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "rbac-writer",
            "--clusterrole",
            "rbac-writer",
            "--user",
            "apfkit-user",
        ],
        b"",
    );
    wait_for(|| {
        let out = server.kubectl(&as_user(&["auth", "can-i", "create", "clusterroles"]), b"");
        out.status.success().then_some(())
    });
    let listed = super::serve_clients::run_python(&server, PYTHON_PLAIN_USER);
    assert_eq!(listed, serde_json::json!({"list": 200}));

    // A role within what it holds may be written.
    server.kubectl_ok(
        &as_user(&[
            "create",
            "clusterrole",
            "lister",
            "--verb",
            "list",
            "--resource",
            "flowschemas",
        ]),
        b"",
    );
    // One beyond it is refused, naming what is missing (kube-apiserver's words).
    let beyond = server.kubectl(
        &as_user(&[
            "create",
            "clusterrole",
            "deleter",
            "--verb",
            "delete",
            "--resource",
            "flowschemas",
        ]),
        b"",
    );
    assert!(!beyond.status.success());
    assert!(
        stderr(&beyond).contains(
            "clusterroles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \
             \"apfkit-user\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC \
             permissions not currently held:\n{APIGroups:[\"flowcontrol.apiserver.k8s.io\"], \
             Resources:[\"flowschemas\"], Verbs:[\"delete\"]}"
        ),
        "{}",
        stderr(&beyond)
    );
    // Binding itself to cluster-admin is refused; binding a role it holds is not.
    let escalating = server.kubectl(
        &as_user(&[
            "create",
            "clusterrolebinding",
            "self-admin",
            "--clusterrole",
            "cluster-admin",
            "--user",
            "apfkit-user",
        ]),
        b"",
    );
    assert!(
        stderr(&escalating).contains(
            "clusterrolebindings.rbac.authorization.k8s.io \"self-admin\" is forbidden: user \
             \"apfkit-user\""
        ),
        "{}",
        stderr(&escalating)
    );
    server.kubectl_ok(
        &as_user(&[
            "create",
            "clusterrolebinding",
            "lister",
            "--clusterrole",
            "lister",
            "--group",
            "team",
        ]),
        b"",
    );
    // An aggregated role needs every right.
    let aggregated = server.kubectl(
        &as_user(&[
            "create",
            "clusterrole",
            "gather",
            "--aggregation-rule",
            "team=yes",
        ]),
        b"",
    );
    assert!(
        stderr(&aggregated).contains("is attempting to grant RBAC permissions"),
        "{}",
        stderr(&aggregated)
    );
    assert!(
        server
            .kubectl(&["get", "clusterrole", "deleter"], b"")
            .status
            .code()
            != Some(0)
    );
}

/// Hostile RBAC objects and reviews, sent as curl sends them: garbage, truncated, deeply
/// nested, duplicated keys, oversized; each refused with a Status, nothing stored.
#[test]
fn hostile_roles_and_reviews_are_refused_with_a_status() {
    let server = Server::start(&["--no-bootstrap"]);
    let post = |path: &str, body: &[u8]| {
        server.curl(
            path,
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            body,
        )
    };
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    // Duplicate keys are a warning by default, as in kube-apiserver; Strict refuses them.
    let strict = "/apis/rbac.authorization.k8s.io/v1/clusterroles?fieldValidation=Strict";
    let reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let nested = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{{"name":"deep"}},"rules":{}{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let oversized = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{{"name":"big"}},"rules":[{{"verbs":["{}"]}}]}}"#,
        "x".repeat(3 << 20)
    );
    for (path, body, codes) in [
        (roles, b"garbage".to_vec(), &[400][..]),
        (roles, br#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"t""#.to_vec(), &[400]),
        (roles, nested.into_bytes(), &[400, 422]),
        (strict, br#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"dup"},"rules":[],"rules":[]}"#.to_vec(), &[400, 422]),
        (roles, oversized.into_bytes(), &[413]),
        (roles, br#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"typed"},"rules":[{"verbs":"get"}]}"#.to_vec(), &[400]),
        (reviews, b"garbage".to_vec(), &[400]),
        (reviews, br#"{"spec":{"resourceAttributes":{"verb":7}}}"#.to_vec(), &[400]),
        (reviews, br#"{"spec":{}}"#.to_vec(), &[422]),
        (reviews, format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(), &[400]),
    ] {
        let (code, answer) = post(path, &body);
        let status: Value = serde_json::from_slice(&answer)
            .unwrap_or_else(|e| panic!("{path}: {e}: {}", String::from_utf8_lossy(&answer)));
        assert!(codes.contains(&code), "{path} {code}: {status}");
        assert_eq!(status["kind"], "Status", "{status}");
    }
    let listed = server.kubectl_ok(&["get", "clusterroles", "-o", "name"], b"");
    for name in ["deep", "big", "typed", "t", "dup"] {
        assert!(
            !listed.contains(&format!("clusterrole.rbac.authorization.k8s.io/{name}\n")),
            "{name}: {listed}"
        );
    }
    // The server still answers.
    assert_eq!(server.curl("/healthz", &[], b"").0, 200);
}

/// Roles and bindings are kept in etcd as kube-apiserver keeps them, in protobuf in the
/// `k8s\0` envelope (read here with `protoc --decode_raw`, which knows nothing of
/// Kubernetes); one stored as JSON, as apfkit kept them before, is still read.
#[test]
fn on_etcd_roles_and_bindings_are_kept_in_protobuf_and_json_ones_still_read() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = || async {
        etcd_client::Client::connect([etcd.endpoint.as_str()], None)
            .await
            .unwrap()
    };
    let legacy = br#"{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"legacy","uid":"5b9c1b4e-0f6e-4c35-9d53-0e8d3c0a1f00","creationTimestamp":"2026-01-01T00:00:00Z"},"rules":[{"verbs":["list"],"apiGroups":[""],"resources":["nodes"]}]}
"#;
    runtime.block_on(async {
        client()
            .await
            .put("/registry/clusterroles/legacy", legacy.to_vec(), None)
            .await
            .unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_in(
        data.to_str().unwrap(),
        &["--no-bootstrap", "--etcd-servers", &etcd.endpoint],
    );
    server.kubectl_ok(
        &[
            "create",
            "clusterrole",
            "reader",
            "--verb",
            "get",
            "--resource",
            "flowschemas",
        ],
        b"",
    );
    let stored = runtime.block_on(async {
        let got = client()
            .await
            .get("/registry/clusterroles/reader", None)
            .await
            .unwrap();
        got.kvs().first().map(|kv| kv.value().to_vec())
    });
    let stored = stored.expect("the role is stored");
    let message = stored
        .strip_prefix(b"k8s\0")
        .expect("the protobuf envelope");
    let mut protoc = std::process::Command::new("protoc");
    protoc.arg("--decode_raw");
    let decoded = super::run_within(protoc, message, Duration::from_secs(30), |_| {});
    assert!(decoded.status.success(), "{}", stderr(&decoded));
    let decoded = String::from_utf8_lossy(&decoded.stdout);
    for expected in [
        "\"rbac.authorization.k8s.io/v1\"",
        "\"ClusterRole\"",
        "\"reader\"",
        "\"flowschemas\"",
        "\"flowcontrol.apiserver.k8s.io\"",
    ] {
        assert!(decoded.contains(expected), "{expected} in {decoded}");
    }
    let legacy: Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "clusterrole", "legacy", "-o", "json"], b""),
    )
    .unwrap();
    assert_eq!(
        legacy["rules"],
        serde_json::json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]}])
    );
    let reader: Value = serde_json::from_str(
        &server.kubectl_ok(&["get", "clusterrole", "reader", "-o", "json"], b""),
    )
    .unwrap();
    assert_eq!(
        reader["rules"][0]["resources"],
        serde_json::json!(["flowschemas"])
    );
}
