//! kube-apiserver's API-machinery e2e tests (kubernetes/kubernetes `test/e2e/apimachinery`)
//! rewritten onto FlowSchemas and CRDs, and run with the Python `kubernetes` client against
//! `apfkit serve` on the embedded store and on etcd. Each test names the upstream file and
//! test it ports; docs/conformance.md lists them all.

use serde_json::Value;

use super::serve::{NO_APF, Server, on_both_stores};
use super::serve_clients::run_python;

/// Shared by the scripts: a raw request (the body sent as given, duplicate keys and all),
/// answering the status and the body; and a CRD created and waited for until it serves.
const PYTHON_HELPERS: &str = r#"
import json, random, string, sys, time
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
api = client.ApiClient()
ext = client.ApiextensionsV1Api(api)

def raw(method, path, body, content_type, query=""):
    url = api.configuration.host + path + ("?" + query if query else "")
    data = body.encode() if isinstance(body, str) else body
    r = api.rest_client.pool_manager.request(
        method, url, body=data,
        headers={"Content-Type": content_type, "Accept": "application/json"})
    return r.status, r.data.decode()

def eventually(check):
    """Whether check() comes true within 30 s, asked every 100 ms."""
    for _ in range(300):
        if check():
            return True
        time.sleep(0.1)
    return False

def answers(path, status):
    return lambda: raw("GET", path, None, "application/json")[0] == status

def wait_served(path):
    if not eventually(answers(path, 200)):
        raise Exception(path + " is not served")

def noxu(schema=None):
    """apiextensions-apiserver's fixtures.NewRandomNameMultipleVersionCustomResourceDefinition,
    cluster-scoped: v1beta1 and v1 (stored), each with a status subresource and the schema
    (AllowAllSchema when none is given)."""
    g = "foo" + "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5)) + "a"
    schema = schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    versions = [{"name": v, "served": True, "storage": v == "v1",
                 "subresources": {"status": {}}, "schema": {"openAPIV3Schema": schema}}
                for v in ("v1beta1", "v1")]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": g + "s.mygroup.example.com"},
           "spec": {"group": "mygroup.example.com", "scope": "Cluster", "versions": versions,
                    "names": {"plural": g + "s", "singular": g, "kind": g, "listKind": g + "List"}}}
    ext.create_custom_resource_definition(crd)
    wait_served("/apis/mygroup.example.com/v1beta1/" + g + "s")
    return g
"#;

/// test/e2e/apimachinery/field_validation.go, all seven [Conformance] tests (Release v1.27):
/// typed objects (a FlowSchema for upstream's Deployment) with unknown and duplicate fields
/// and unknown metadata, POSTed with `fieldValidation=Strict`; then server-side applies of
/// custom resources of the noxu fixture with `fieldValidation=Strict`: valid against a
/// schema, unknown fields without one (preserved), an unknown field against a schema,
/// unknown metadata at the root and in an embedded object, and a duplicate key in YAML.
const FIELD_VALIDATION: &str = r#"
out = {}
typed = """{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
  "kind": "FlowSchema",
  "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
  "spec": {
    "unknownField": "foo",
    "matchingPrecedence": 2,
    "matchingPrecedence": 3,
    "priorityLevelConfiguration": {"name": "global-default"}
  }
}"""
q = "fieldManager=field_validation_mgr&fieldValidation=Strict"
out["typed_unknown_and_duplicate"] = raw("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", typed, "application/json", q)
typed_meta = """{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
  "kind": "FlowSchema",
  "metadata": {"name": "my-dep", "unknownMeta": "foo", "labels": {"app": "nginx"}},
  "spec": {"priorityLevelConfiguration": {"name": "global-default"}}
}"""
out["typed_unknown_metadata"] = raw("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", typed_meta, "application/json", q)

ports = {"type": "array", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
         "x-kubernetes-list-type": "map",
         "items": {"type": "object", "required": ["containerPort", "protocol"], "properties": {
             "containerPort": {"format": "int32", "type": "integer"}, "hostIP": {"type": "string"},
             "hostPort": {"format": "int32", "type": "integer"}, "name": {"type": "string"},
             "protocol": {"type": "string"}}}}
cron = {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"}
def spec_schema(extra=None, preserve=False):
    spec = {"type": "object", "properties": {"foo": {"type": "string"}, "cronSpec": cron, "ports": ports}}
    if preserve:
        spec["x-kubernetes-preserve-unknown-fields"] = True
    spec["properties"].update(extra or {})
    return {"type": "object", "properties": {"spec": spec}}

def apply(g, body):
    return raw("PATCH", "/apis/mygroup.example.com/v1beta1/" + g + "s/mytest", body,
               "application/apply-patch+yaml", q)

g = noxu(spec_schema())
out["valid_cr"] = apply(g, f"""
apiVersion: mygroup.example.com/v1beta1
kind: {g}
metadata:
  name: mytest
  finalizers:
  - test-finalizer
spec:
  foo: foo1
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP""")

g = noxu()
out["unknown_fields_without_schema"] = apply(g, f"""
apiVersion: mygroup.example.com/v1beta1
kind: {g}
metadata:
  name: mytest
  finalizers:
  - test-finalizer
spec:
  unknown: uk1
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP""")

g = noxu(spec_schema())
out["unknown_field_with_schema"] = apply(g, f"""
apiVersion: mygroup.example.com/v1beta1
kind: {g}
metadata:
  name: mytest
  finalizers:
  - test-finalizer
unknownField: unknown
spec:
  foo: foo1
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP""")

template = {"template": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
    "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
    "spec": {"type": "object"}}}}
g = noxu(spec_schema(template, preserve=True))
out["unknown_metadata_root_and_embedded"] = apply(g, f"""
apiVersion: mygroup.example.com/v1beta1
kind: {g}
metadata:
  name: mytest
  unknownMeta: unknown
  finalizers:
  - test-finalizer
spec:
  template:
    apiversion: foo/v1
    kind: Sub
    metadata:
        unknownSubMeta: unknown
        name: subobject
        namespace: default
  foo: foo1
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP""")

g = noxu(spec_schema(preserve=True))
out["duplicates_preserving_unknown"] = apply(g, f"""
apiVersion: mygroup.example.com/v1beta1
kind: {g}
metadata:
  name: mytest
  finalizers:
  - test-finalizer
spec:
  unknown: uk1
  foo: foo1
  foo: foo2
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP""")
print(json.dumps(out))
"#;

fn field_validation_holds(server: &Server) {
    let report = run_python(server, &format!("{PYTHON_HELPERS}{FIELD_VALIDATION}"));
    let answer = |case: &str| -> (u64, String) {
        let pair = &report[case];
        (
            pair[0].as_u64().unwrap_or_default(),
            pair[1].as_str().unwrap_or_default().to_owned(),
        )
    };
    // Upstream checks that the client's error (or the raw body) contains these words.
    for (case, status, words) in [
        (
            "typed_unknown_and_duplicate",
            400,
            r#"strict decoding error: unknown field \"spec.unknownField\", duplicate field \"spec.matchingPrecedence\""#,
        ),
        (
            "typed_unknown_metadata",
            400,
            r#"strict decoding error: unknown field \"metadata.unknownMeta\""#,
        ),
        // Server-side apply's own error, which kube-apiserver answers as a 500 without a
        // reason (ErrorToAPIStatus).
        (
            "unknown_field_with_schema",
            500,
            ".unknownField: field not declared in schema",
        ),
        (
            "unknown_metadata_root_and_embedded",
            500,
            ".metadata.unknownMeta: field not declared in schema",
        ),
        (
            "duplicates_preserving_unknown",
            400,
            r#"error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 11: key \"foo\" already set in map"#,
        ),
    ] {
        let (code, body) = answer(case);
        assert!(body.contains(words), "{case}: {code} {body}");
        assert_eq!(code, status, "{case}: {body}");
    }
    // The embedded resource's `kind` and ObjectMeta's `namespace` are declared, as
    // apiextensions-apiserver's OpenAPI builder declares them; `apiversion` (sic) is not.
    let (_, embedded) = answer("unknown_metadata_root_and_embedded");
    let message = serde_json::from_str::<Value>(&embedded).unwrap()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.ends_with(
            "errors:\n  .metadata.unknownMeta: field not declared in schema\n  \
             .spec.template.apiversion: field not declared in schema\n  \
             .spec.template.metadata.unknownSubMeta: field not declared in schema"
        ),
        "{message}"
    );
    for case in ["valid_cr", "unknown_fields_without_schema"] {
        let (code, body) = answer(case);
        assert!(code == 200 || code == 201, "{case}: {code} {body}");
        let object: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(object["metadata"]["name"], "mytest", "{case}");
    }
    let (_, preserved) = answer("unknown_fields_without_schema");
    let object: Value = serde_json::from_str(&preserved).unwrap();
    assert_eq!(object["spec"]["unknown"], "uk1", "kept without a schema");
}

on_both_stores!(
    field_validation_holds:
    field_validation_go_with_the_python_client_on_the_embedded_store,
    field_validation_go_with_the_python_client_on_etcd; NO_APF
);

/// test/e2e/apimachinery/custom_resource_definition.go, its five [Conformance] tests:
/// "creating/deleting custom resource definition objects works" (v1.9), "listing custom
/// resource definition objects works" (v1.16: ten labelled CRDs listed by label with the specs
/// they were created with, deleted as a collection, an unlabelled one left), "getting/updating/
/// patching custom resource definition status sub-resource works" (v1.16), "should include
/// custom resource definition resources in discovery documents" (v1.16) and "custom resource
/// defaulting for requests and from storage works" (v1.17). The status conditions upstream
/// writes carry only a message, which the Python client's models refuse to read, so those
/// requests are raw.
const CUSTOM_RESOURCE_DEFINITION: &str = r#"
out = {}
def v1crd(labels=None, properties=None):
    """fixtures.NewRandomNameV1CustomResourceDefinition, cluster-scoped, created and waited for."""
    g = "foo" + "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5)) + "a"
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if properties:
        schema["properties"] = properties
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": g + "s.mygroup.example.com", "labels": labels or {}},
           "spec": {"group": "mygroup.example.com", "scope": "Cluster",
                    "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}],
                    "names": {"plural": g + "s", "singular": g, "kind": g, "listKind": g + "List"}}}
    created = ext.create_custom_resource_definition(crd)
    wait_served("/apis/mygroup.example.com/v1beta1/" + g + "s")
    return g, created

def gone(g):
    return eventually(answers("/apis/mygroup.example.com/v1beta1/" + g + "s", 404))

# creating/deleting
g, created = v1crd()
ext.delete_custom_resource_definition(created.metadata.name)
out["deleted_and_gone"] = gone(g)

# listing
uid = "".join(random.choice(string.ascii_lowercase) for _ in range(12))
crds = {}
for _ in range(10):
    g, created = v1crd(labels={"e2e-list-test-uuid": uid})
    crds[created.metadata.name] = api.sanitize_for_serialization(created.spec)
_, other = v1crd()
listed = ext.list_custom_resource_definition(label_selector="e2e-list-test-uuid=" + uid)
out["listed"] = len(listed.items)
out["listed_specs_match"] = all(
    api.sanitize_for_serialization(c.spec) == crds.get(c.metadata.name) for c in listed.items)
ext.delete_collection_custom_resource_definition(label_selector="e2e-list-test-uuid=" + uid)
# fixtures.DeleteV1CustomResourceDefinitions waits until they are gone: each terminates
# first, under its cleanup finalizer.
def remaining():
    return len(ext.list_custom_resource_definition(
        label_selector="e2e-list-test-uuid=" + uid).items)
eventually(lambda: remaining() == 0)
out["after_delete_collection"] = remaining()
out["unlabelled_remains"] = ext.read_custom_resource_definition(other.metadata.name).metadata.name == other.metadata.name

# status sub-resource
g, created = v1crd()
path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + created.metadata.name + "/status"
for _ in range(10):
    code, body = raw("GET", path, None, "application/json")
    status = json.loads(body)
    out["status_spec_matches"] = status["spec"] == api.sanitize_for_serialization(created.spec)
    status["status"].setdefault("conditions", []).append({"message": "updated"})
    code, body = raw("PUT", path, json.dumps(status), "application/json")
    if code != 409:
        break
# As upstream's test, by the message (the condition comes back in Go's shape, its type and
# status empty, its lastTransitionTime null).
def has_condition(body, message):
    return any(c.get("message") == message for c in json.loads(body)["status"]["conditions"])
out["updated"] = [code, has_condition(body, "updated")]
code, body = raw("PATCH", path, '[{"op": "add", "path": "/status/conditions", "value": [{"message": "patched"}]}]',
                 "application/json-patch+json")
out["patched"] = [code, has_condition(body, "patched")]

# discovery
groups = json.loads(raw("GET", "/apis", None, "application/json")[1])
group = [x for x in groups["groups"] if x["name"] == "apiextensions.k8s.io"]
out["apis_lists_v1"] = bool(group) and any(v["version"] == "v1" for v in group[0]["versions"])
group = json.loads(raw("GET", "/apis/apiextensions.k8s.io", None, "application/json")[1])
out["group_lists_v1"] = group["name"] == "apiextensions.k8s.io" and any(v["version"] == "v1" for v in group["versions"])
resources = json.loads(raw("GET", "/apis/apiextensions.k8s.io/v1", None, "application/json")[1])
out["version_lists_crds"] = resources["groupVersion"] == "apiextensions.k8s.io/v1" and any(
    r["name"] == "customresourcedefinitions" for r in resources["resources"])

# defaulting for requests and from storage
g, created = v1crd(properties={"a": {"type": "string"}, "b": {"type": "string"}})
custom = client.CustomObjectsApi(api)
def cr(name):
    return custom.create_cluster_custom_object("mygroup.example.com", "v1beta1", g + "s",
        {"apiVersion": "mygroup.example.com/v1beta1", "kind": g, "metadata": {"name": name}})
def poll(name, check):
    return eventually(lambda: check(
        custom.get_cluster_custom_object("mygroup.example.com", "v1beta1", g + "s", name)))
cr("cr-1")
ext.patch_custom_resource_definition(created.metadata.name,
    [{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/a/default", "value": "A"}])
out["cr1_defaulted_on_read"] = poll("cr-1", lambda o: o.get("a") == "A")
out["cr2_defaulted_on_create"] = cr("cr-2").get("a")
ext.patch_custom_resource_definition(created.metadata.name, [
    {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/a/default"},
    {"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/b/default", "value": "B"}])
out["cr2_b_defaulted_a_kept"] = poll("cr-2", lambda o: o.get("b") == "B" and o.get("a") == "A")
print(json.dumps(out))
"#;

fn custom_resource_definitions_hold(server: &Server) {
    let report = run_python(
        server,
        &format!("{PYTHON_HELPERS}{CUSTOM_RESOURCE_DEFINITION}"),
    );
    assert_eq!(
        report,
        serde_json::json!({
            "deleted_and_gone": true,
            "listed": 10,
            "listed_specs_match": true,
            "after_delete_collection": 0,
            "unlabelled_remains": true,
            "status_spec_matches": true,
            "updated": [200, true],
            "patched": [200, true],
            "apis_lists_v1": true,
            "group_lists_v1": true,
            "version_lists_crds": true,
            "cr1_defaulted_on_read": true,
            "cr2_defaulted_on_create": "A",
            "cr2_b_defaulted_a_kept": true,
        })
    );
}

on_both_stores!(
    custom_resource_definitions_hold:
    custom_resource_definition_go_with_the_python_client_on_the_embedded_store,
    custom_resource_definition_go_with_the_python_client_on_etcd; NO_APF
);

/// test/e2e/apimachinery/chunking.go, "should return chunks of results for list calls": 400
/// objects (FlowSchemas for upstream's PodTemplates, created by 20 threads) listed three
/// times in pages of a random size from 1 to 40, every page at the first page's revision, its
/// `remainingItemCount` set exactly when a continue token is and adding up to 400, the names
/// in order; then all at once with `limit=401`.
const CHUNKING: &str = r#"
from concurrent.futures import ThreadPoolExecutor
schemas = client.FlowcontrolApiserverV1Api(api)
TOTAL = 400
def create(i):
    for _ in range(4):
        try:
            schemas.create_flow_schema({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                "metadata": {"name": "template-%04d" % i},
                "spec": {"priorityLevelConfiguration": {"name": "global-default"}}})
            return
        except ApiException:
            pass
    raise Exception("unable to create template %d" % i)
with ThreadPoolExecutor(20) as pool:
    list(pool.map(create, range(TOTAL)))
problems = []
for _ in range(3):
    found, last_rv, token = 0, None, None
    while True:
        limit = random.randint(1, TOTAL // 10)
        page = schemas.list_flow_schema(limit=limit, _continue=token)
        if len(page.items) > limit:
            problems.append("%d items for limit %d" % (len(page.items), limit))
        last_rv = last_rv or page.metadata.resource_version
        if page.metadata.resource_version != last_rv:
            problems.append("rv %s after %s" % (page.metadata.resource_version, last_rv))
        remaining = page.metadata.remaining_item_count
        if not page.metadata._continue:
            if remaining is not None:
                problems.append("remainingItemCount %s on the last page" % remaining)
        elif remaining is None or remaining + len(page.items) + found != TOTAL:
            problems.append("remainingItemCount %s after %d + %d" % (remaining, found, len(page.items)))
        for item in page.items:
            if item.metadata.name != "template-%04d" % found:
                problems.append("%s where template-%04d" % (item.metadata.name, found))
            found += 1
        if not page.metadata._continue:
            break
        token = page.metadata._continue
    if found != TOTAL:
        problems.append("found %d" % found)
whole = schemas.list_flow_schema(limit=TOTAL + 1)
print(json.dumps({"problems": problems[:10], "all_at_once": len(whole.items)}))
"#;

fn chunks_are_returned_for_list_calls(server: &Server) {
    let report = run_python(server, &format!("{PYTHON_HELPERS}{CHUNKING}"));
    assert_eq!(
        report,
        serde_json::json!({"problems": [], "all_at_once": 400})
    );
}

on_both_stores!(
    chunks_are_returned_for_list_calls:
    chunking_go_returns_chunks_of_results_for_list_calls_on_the_embedded_store,
    chunking_go_returns_chunks_of_results_for_list_calls_on_etcd; "--no-bootstrap", NO_APF
);

/// test/e2e/apimachinery/table_conversion.go, "should return pod details", "should return
/// chunks of table results for list calls" and "should return generic metadata details across
/// all namespaces for nodes", on FlowSchemas (cluster-scoped, as nodes are) as `meta.k8s.io/
/// v1beta1` Tables.
const TABLES: &str = r#"
TABLE = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
BASE = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
def get_table(path):
    url = api.configuration.host + path
    r = api.rest_client.pool_manager.request("GET", url, headers={"Accept": TABLE})
    return r.status, json.loads(r.data.decode())
schemas = client.FlowcontrolApiserverV1Api(api)
def create(name):
    schemas.create_flow_schema({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}}})
out = {}
create("pod-1")
code, table = get_table(BASE + "/pod-1")
columns = table.get("columnDefinitions", [])
rows = table.get("rows", [])
out["pod_details"] = [code, table.get("kind"), table.get("apiVersion"), len(columns) > 2, len(rows),
                      len(rows[0]["cells"]) == len(columns) if rows else None,
                      columns[0]["name"] if columns else None, rows[0]["cells"][0] if rows else None]
for i in range(20):
    create("template-%04d" % i)
code, paged = get_table(BASE + "?limit=2")
out["paged"] = [code, len(paged["rows"]), paged["metadata"].get("resourceVersion", "") != "",
                paged["metadata"].get("continue", "") != "", [r["cells"][0] for r in paged["rows"]]]
code, rest = get_table(BASE + "?continue=" + paged["metadata"]["continue"])
out["continued"] = [code, rest["rows"][0]["cells"][0] if rest["rows"] else None]
code, whole = get_table(BASE)
out["cluster_wide"] = [code, len(whole["columnDefinitions"]) >= 2, len(whole["rows"]),
                       all(len(r["cells"]) == len(whole["columnDefinitions"]) for r in whole["rows"]),
                       whole["columnDefinitions"][0]["name"], whole["metadata"].get("resourceVersion", "") != ""]
print(json.dumps(out))
"#;

fn tables_hold(server: &Server) {
    let report = run_python(server, &format!("{PYTHON_HELPERS}{TABLES}"));
    assert_eq!(
        report,
        serde_json::json!({
            "pod_details": [200, "Table", "meta.k8s.io/v1beta1", true, 1, true, "Name", "pod-1"],
            "paged": [200, 2, true, true, ["pod-1", "template-0000"]],
            "continued": [200, "template-0001"],
            "cluster_wide": [200, true, 21, true, "Name", true],
        })
    );
}

on_both_stores!(
    tables_hold:
    table_conversion_go_with_the_python_client_on_the_embedded_store,
    table_conversion_go_with_the_python_client_on_etcd; "--no-bootstrap", NO_APF
);

/// test/e2e/apimachinery/flowcontrol.go, "should ensure that requests can be classified by
/// adding FlowSchema and PriorityLevelConfiguration": a priority level and a FlowSchema for
/// the user `noxu`, waited for until the FlowSchema is not dangling and the level has a seat
/// limit in `/metrics` (`apiserver_flowcontrol_nominal_limit_seats`); then `GET /version`
/// impersonating `noxu` carries their uids in the `X-Kubernetes-PF-*` headers, and
/// impersonating `foo` carries some. (Its "can't be drowned out" tests are skipped upstream
/// as flaky, issue 96710.)
const FLOWCONTROL_CLASSIFICATION: &str = r#"
fc = client.FlowcontrolApiserverV1Api(api)
level = fc.create_priority_level_configuration({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "PriorityLevelConfiguration", "metadata": {"name": "e2e-testing-prioritylevel"},
    "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                                            "limitResponse": {"type": "Reject"}}}})
schema = fc.create_flow_schema({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
    "metadata": {"name": "e2e-testing-flowschema"},
    "spec": {"matchingPrecedence": 1000, "priorityLevelConfiguration": {"name": "e2e-testing-prioritylevel"},
             "distinguisherMethod": {"type": "ByUser"},
             "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
steady = False
for _ in range(300):
    got = fc.read_flow_schema("e2e-testing-flowschema")
    dangling = [c for c in (got.status.conditions or []) if c.type == "Dangling"]
    metrics = raw("GET", "/metrics", None, "text/plain")[1]
    if dangling and dangling[0].status == "False" and \
            'apiserver_flowcontrol_nominal_limit_seats{priority_level="e2e-testing-prioritylevel"}' in metrics:
        steady = True
        break
    time.sleep(0.1)
def as_user(user):
    r = api.rest_client.pool_manager.request("GET", api.configuration.host + "/version",
        headers={"Impersonate-User": user, "Impersonate-Group": "system:authenticated"})
    return [r.status, r.headers.get("X-Kubernetes-PF-FlowSchema-UID", ""),
            r.headers.get("X-Kubernetes-PF-PriorityLevel-UID", "")]
matching, other = as_user("noxu"), as_user("foo")
print(json.dumps({"steady": steady,
    "matching": [matching[0], matching[1] == schema.metadata.uid, matching[2] == level.metadata.uid],
    "other": [other[0], other[1] != "", other[2] != ""]}))
"#;

fn requests_are_classified(server: &Server) {
    let report = run_python(
        server,
        &format!("{PYTHON_HELPERS}{FLOWCONTROL_CLASSIFICATION}"),
    );
    assert_eq!(
        report,
        serde_json::json!({
            "steady": true,
            "matching": [200, true, true],
            "other": [200, true, true],
        })
    );
}

on_both_stores!(
    requests_are_classified:
    flowcontrol_go_requests_are_classified_by_a_new_flow_schema_on_the_embedded_store,
    flowcontrol_go_requests_are_classified_by_a_new_flow_schema_on_etcd;
);

/// test/e2e/apimachinery/crd_conversion_webhook.go, "should be able to convert from CR v1 to
/// CR v2" and "should be able to convert a non homogeneous list of CRs" ([Conformance]
/// v1.16). Upstream's webhook is agnhost's `crd-conversion-webhook` behind a Service; here it
/// is the same conversion (v1 `hostPort` ⇄ v2 `host` and `port`) in Python over TLS on
/// loopback, reached by the CRD's `url` (apfkit serve resolves no Services).
const CONVERSION_WEBHOOK: &str = r#"
import http.server, ssl, threading, base64
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = review["request"]
        desired = req["desiredAPIVersion"]
        converted = []
        for o in req["objects"]:
            o = dict(o)
            if o["apiVersion"].endswith("/v1") and desired.endswith("/v2") and "hostPort" in o:
                o["host"], o["port"] = o.pop("hostPort").split(":")
            elif o["apiVersion"].endswith("/v2") and desired.endswith("/v1") and "host" in o:
                o["hostPort"] = o.pop("host") + ":" + o.pop("port")
            o["apiVersion"] = desired
            converted.append(o)
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
            "response": {"uid": req["uid"], "convertedObjects": converted,
                         "result": {"status": "Success"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(CERT, KEY)
hook.socket = tls.wrap_socket(hook.socket, server_side=True)
threading.Thread(target=hook.serve_forever, daemon=True).start()
url = "https://127.0.0.1:%d/crdconvert" % hook.server_address[1]
bundle = base64.b64encode(open(CERT, "rb").read()).decode()

def versions(storage):
    return [{"name": "v1", "served": True, "storage": storage == "v1", "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"hostPort": {"type": "string"}}}}},
            {"name": "v2", "served": True, "storage": storage == "v2", "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"host": {"type": "string"}, "port": {"type": "string"}}}}}]
custom = client.CustomObjectsApi(api)
def test_crd(serial):
    kind = "e2e-test-crd-webhook-%d-crd" % serial
    plural = kind + "s"
    ext.create_custom_resource_definition({"apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition", "metadata": {"name": plural + ".stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced", "versions": versions("v1"),
                 "names": {"plural": plural, "singular": kind, "kind": kind, "listKind": kind + "List"},
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": {"url": url, "caBundle": bundle},
                     "conversionReviewVersions": ["v1", "v1beta1"]}}}})
    wait_served("/apis/stable.example.com/v2/namespaces/default/" + plural)
    return kind, plural
def create_v1(kind, plural, name):
    custom.create_namespaced_custom_object("stable.example.com", "v1", "default", plural,
        {"apiVersion": "stable.example.com/v1", "kind": kind,
         "metadata": {"name": name, "namespace": "default"}, "hostPort": "localhost:8080"})
def shape(o):
    return [o["apiVersion"], o.get("hostPort"), o.get("host"), o.get("port")]
out = {}

# should be able to convert from CR v1 to CR v2
kind, plural = test_crd(1)
create_v1(kind, plural, "cr-instance-1")
out["v2_of_v1"] = shape(custom.get_namespaced_custom_object("stable.example.com", "v2", "default", plural, "cr-instance-1"))

# should be able to convert a non homogeneous list of CRs
kind, plural = test_crd(2)
create_v1(kind, plural, "cr-instance-1")
name = plural + ".stable.example.com"
for _ in range(10):
    crd = ext.read_custom_resource_definition(name)
    body = api.sanitize_for_serialization(crd)
    body["spec"]["versions"] = versions("v2")
    try:
        ext.replace_custom_resource_definition(name, body)
        break
    except ApiException as e:
        if e.status != 409:
            raise
for _ in range(100):
    try:
        create_v1(kind, plural, "cr-instance-2")
        break
    except ApiException:
        time.sleep(0.1)
listed = {}
for version in ("v2", "v1"):
    items = custom.list_namespaced_custom_object("stable.example.com", version, "default", plural)["items"]
    listed[version] = [[o["metadata"]["name"]] + shape(o) for o in items]
out["listed"] = listed
stored = raw("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name, None, "application/json")[1]
out["stored_versions"] = json.loads(stored)["status"]["storedVersions"]
print(json.dumps(out))
"#;

fn conversion_webhooks_convert(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key_file, _) = super::serve::loopback_certificate(dir.path());
    let paths = format!(
        "CERT = {:?}\nKEY = {:?}\n",
        cert.display().to_string(),
        key_file.display().to_string()
    );
    let report = run_python(
        server,
        &format!("{PYTHON_HELPERS}{paths}{CONVERSION_WEBHOOK}"),
    );
    let v1 = |name: &str| {
        serde_json::json!([name, "stable.example.com/v1", "localhost:8080", null, null])
    };
    let v2 =
        |name: &str| serde_json::json!([name, "stable.example.com/v2", null, "localhost", "8080"]);
    assert_eq!(
        report,
        serde_json::json!({
            "v2_of_v1": ["stable.example.com/v2", null, "localhost", "8080"],
            "listed": {
                "v2": [v2("cr-instance-1"), v2("cr-instance-2")],
                "v1": [v1("cr-instance-1"), v1("cr-instance-2")],
            },
            "stored_versions": ["v1", "v2"],
        })
    );
}

on_both_stores!(
    conversion_webhooks_convert:
    crd_conversion_webhook_go_with_the_python_client_on_the_embedded_store,
    crd_conversion_webhook_go_with_the_python_client_on_etcd; NO_APF
);

/// test/e2e/apimachinery/aggregated_discovery.go, "should support aggregated discovery
/// interface" and "…for CRDs" (v1.30), through client-go's aggregated discovery as kubectl
/// (1.32 and 1.37) uses it (`kubectl api-resources`, `api-versions`, each with an empty cache): the
/// client reads `/api` and `/apis` once each, asking for `apidiscovery.k8s.io/v2` first, and no
/// group's own document; the groups, versions and resources this server serves are present
/// (upstream's expected kinds are Kubernetes' built-ins, which it does not serve; the
/// legacy `/api` group has none here); a CRD created is present once served.
fn aggregated_discovery_interface_holds(server: &Server) {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = format!("--cache-dir={}", cache.path().display());
    let output = server.kubectl(&["api-resources", "-o", "name", &cache_dir, "-v=8"], b"");
    assert!(output.status.success(), "{output:?}");
    let log = String::from_utf8_lossy(&output.stderr);
    let fetched: Vec<&str> = log
        .lines()
        // kubectl 1.32 logs `GET https://…`; 1.37 `"Request" verb="GET" url="https://…"`.
        .filter_map(|line| {
            line.split("GET https://")
                .nth(1)
                .or_else(|| line.split("verb=\"GET\" url=\"https://").nth(1))
        })
        .collect();
    assert_eq!(fetched.len(), 2, "only /api and /apis: {fetched:?}");
    assert!(
        log.contains(
            "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        "{log}"
    );
    let resources = String::from_utf8_lossy(&output.stdout).into_owned();
    for expected in [
        "customresourcedefinitions.apiextensions.k8s.io",
        "apiservices.apiregistration.k8s.io",
        "flowschemas.flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
    ] {
        assert!(
            resources.lines().any(|l| l == expected),
            "{expected}: {resources}"
        );
    }
    let versions = server.kubectl_ok(&["api-versions", &cache_dir], b"");
    for expected in [
        "apiextensions.k8s.io/v1",
        "apiregistration.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == expected),
            "{expected}: {versions}"
        );
    }

    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "testcrds.group7x2kq.example.com"},
        "spec": {"group": "group7x2kq.example.com", "scope": "Namespaced",
                 "names": {"plural": "testcrds", "singular": "testcrd", "kind": "testcrd",
                           "listKind": "testcrdList"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema":
                     {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    server.kubectl_ok(&["create", "-f", "-"], crd.to_string().as_bytes());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let fresh = tempfile::tempdir().unwrap();
        let listed = server.kubectl_ok(
            &[
                "api-resources",
                "-o",
                "name",
                &format!("--cache-dir={}", fresh.path().display()),
            ],
            b"",
        );
        if listed
            .lines()
            .any(|l| l == "testcrds.group7x2kq.example.com")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for the CRD's resource in discovery: {listed}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

on_both_stores!(
    aggregated_discovery_interface_holds:
    aggregated_discovery_go_client_interface_with_kubectl_on_the_embedded_store,
    aggregated_discovery_go_client_interface_with_kubectl_on_etcd; NO_APF
);
