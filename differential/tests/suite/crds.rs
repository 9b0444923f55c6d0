//! CustomResourceDefinitions: a deleted CRD terminates until its custom resources are gone
//! (item 12).

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS: &str = "/apis/terminating.example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "terminating.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name, "finalizers": finalizers}, "spec": {"size": 1}})
}

/// What a terminating CRD shows: its finalizers, whether it is marked, and its conditions
/// but their times (the rest is compared where CRDs are served).
fn terminating(crd: &Value) -> Value {
    let conditions: Vec<Value> = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!([c["type"], c["status"], c["reason"], c["message"]]))
        .collect();
    json!({
        "finalizers": crd["metadata"]["finalizers"],
        "marked": crd["metadata"]["deletionTimestamp"].is_string(),
        "conditions": conditions,
        "code": crd["code"],
    })
}

/// A list's kind, its metadata's keys (its resource version is the store's, which the cases
/// beside this one move) and the names it lists.
fn list_shape(list: &Value) -> Value {
    let keys: Vec<&String> = list["metadata"]
        .as_object()
        .map(|metadata| metadata.keys().collect())
        .unwrap_or_default();
    let items = list["items"].as_array().or(list["rows"].as_array());
    let names: Vec<&Value> = items
        .into_iter()
        .flatten()
        // A table's row names its object in its `object` (as metadata, by default).
        .map(|item| &item.get("object").unwrap_or(item)["metadata"]["name"])
        .collect();
    json!({"kind": list["kind"], "metadataKeys": keys, "names": names})
}

/// A deleted CRD gets the cleanup finalizer and the `Terminating` condition; its custom
/// resources are deleted (one with a finalizer stays, marked), new ones refused; once the
/// last is gone, so is the CRD.
async fn a_deleted_crd_terminates_until_its_custom_resources_are_gone(s: &mut Session) {
    let crd = format!("{CRDS}/gadgets.terminating.example.com");
    s.send(Request::post(
        CRDS,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.terminating.example.com"},
            "spec": {"group": "terminating.example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    ))
    .await;
    s.wait_until(Request::get(GADGETS), |code, _| code == 200)
        .await;
    s.send(Request::post(
        GADGETS,
        &gadget("kept", &["example.com/keep"]),
    ))
    .await;
    s.send(Request::post(GADGETS, &gadget("plain", &[]))).await;
    // Its metadata in protobuf, as a metadata client asks, though the custom resource itself
    // is never written in protobuf.
    s.agreeing(
        Request::get(&format!("{GADGETS}/kept"))
            .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
        Request::get(&format!("{GADGETS}/kept")).accept(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,\
             application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ),
        crate::routes::partial_metadata_agrees,
    )
    .await;
    s.agreeing(
        Request::get(GADGETS)
            .accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
            .selecting(list_shape),
        Request::get(GADGETS).accept(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ),
        crate::routes::partial_metadata_agrees,
    )
    .await;
    // In protobuf, which its objects have not: refused by kube's negotiation, whose 406 is
    // written in protobuf; protobuf first and JSON after answers JSON.
    for path in [
        format!("{GADGETS}/kept"),
        format!("{GADGETS}/absent"),
        GADGETS.to_owned(),
    ] {
        s.send(Request::get(&path).accept("application/vnd.kubernetes.protobuf"))
            .await;
        s.send(Request::get(&path).accept("application/vnd.kubernetes.protobuf, application/json"))
            .await;
    }
    // As a table, whose list metadata has no empty `continue` either.
    s.send(
        Request::get(GADGETS)
            .accept("application/json;as=Table;g=meta.k8s.io;v=v1")
            .selecting(list_shape),
    )
    .await;
    s.send(Request::delete(&crd).selecting(terminating)).await;
    s.wait_until(Request::get(&format!("{GADGETS}/plain")), |code, _| {
        code == 404
    })
    .await;
    s.wait_until(Request::get(&crd).selecting(terminating), |_, crd| {
        crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["reason"] == "InstanceDeletionInProgress")
    })
    .await;
    s.send(
        Request::get(&format!("{GADGETS}/kept")).selecting(|gadget| {
            json!({"finalizers": gadget["metadata"]["finalizers"],
                "marked": gadget["metadata"]["deletionTimestamp"].is_string()})
        }),
    )
    .await;
    s.send(Request::post(GADGETS, &gadget("late", &[]))).await;
    s.send(Request::patch(
        &format!("{GADGETS}/kept"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    ))
    .await;
    s.wait_until(Request::get(&crd), |code, _| code == 404)
        .await;
    s.wait_until(Request::get(GADGETS), |code, _| code == 404)
        .await;
}

/// A CRD sent in protobuf, as client-go's apiextensions clientset sends it (upstream's e2e
/// framework makes its CRDs so), built with upstream's own messages: read as its JSON twin,
/// then served.
async fn a_crd_sent_in_protobuf_is_read_as_kube_reads_it(s: &mut Session) {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb;
    use prost::Message as _;
    let text = |t: &str| Some(t.to_owned());
    let string = pb::JsonSchemaProps {
        r#type: text("string"),
        ..Default::default()
    };
    let spec_schema = pb::JsonSchemaProps {
        r#type: text("object"),
        required: vec!["size".to_owned()],
        properties: [
            (
                "size".to_owned(),
                pb::JsonSchemaProps {
                    r#type: text("integer"),
                    minimum: Some(1.0),
                    maximum: Some(9.0),
                    default: Some(pb::Json {
                        raw: Some(b"3".to_vec()),
                    }),
                    ..Default::default()
                },
            ),
            (
                "ratio".to_owned(),
                pb::JsonSchemaProps {
                    r#type: text("number"),
                    minimum: Some(0.5),
                    maximum: Some(9.5),
                    exclusive_maximum: Some(true),
                    ..Default::default()
                },
            ),
            (
                "color".to_owned(),
                pb::JsonSchemaProps {
                    r#type: text("string"),
                    r#enum: vec![
                        pb::Json {
                            raw: Some(br#""red""#.to_vec()),
                        },
                        pb::Json {
                            raw: Some(br#""blue""#.to_vec()),
                        },
                    ],
                    ..Default::default()
                },
            ),
            (
                "tags".to_owned(),
                pb::JsonSchemaProps {
                    r#type: text("array"),
                    items: Some(Box::new(pb::JsonSchemaPropsOrArray {
                        schema: Some(Box::new(string.clone())),
                        j_son_schemas: Vec::new(),
                    })),
                    x_kubernetes_list_type: text("set"),
                    ..Default::default()
                },
            ),
            (
                "labels".to_owned(),
                pb::JsonSchemaProps {
                    r#type: text("object"),
                    additional_properties: Some(Box::new(pb::JsonSchemaPropsOrBool {
                        allows: Some(true),
                        schema: Some(Box::new(string)),
                    })),
                    ..Default::default()
                },
            ),
        ]
        .into(),
        x_kubernetes_validations: vec![pb::ValidationRule {
            rule: text("self.size < 9"),
            message: text("too big"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let crd = pb::CustomResourceDefinition {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: text("sprockets.protobuf.example.com"),
            ..Default::default()
        }),
        spec: Some(pb::CustomResourceDefinitionSpec {
            group: text("protobuf.example.com"),
            names: Some(pb::CustomResourceDefinitionNames {
                plural: text("sprockets"),
                kind: text("Sprocket"),
                ..Default::default()
            }),
            scope: text("Namespaced"),
            versions: vec![pb::CustomResourceDefinitionVersion {
                name: text("v1"),
                served: Some(true),
                storage: Some(true),
                schema: Some(pb::CustomResourceValidation {
                    open_apiv3_schema: Some(pb::JsonSchemaProps {
                        r#type: text("object"),
                        properties: [("spec".to_owned(), spec_schema)].into(),
                        ..Default::default()
                    }),
                }),
                subresources: Some(pb::CustomResourceSubresources {
                    status: Some(pb::CustomResourceSubresourceStatus {}),
                    scale: None,
                }),
                additional_printer_columns: vec![pb::CustomResourceColumnDefinition {
                    name: text("Size"),
                    r#type: text("integer"),
                    json_path: text(".spec.size"),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let envelope = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: text("apiextensions.k8s.io/v1"),
            kind: text("CustomResourceDefinition"),
        }),
        raw: Some(crd.encode_to_vec()),
        content_encoding: text(""),
        content_type: text(""),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(envelope.encode_to_vec());
    s.send(
        Request::with_method("POST", CRDS)
            .raw("application/vnd.kubernetes.protobuf", &body)
            .accept("application/json"),
    )
    .await;
    let sprockets = "/apis/protobuf.example.com/v1/namespaces/default/sprockets";
    s.wait_until(Request::get(sprockets), |code, _| code == 200)
        .await;
    s.send(Request::post(
        sprockets,
        &json!({"apiVersion": "protobuf.example.com/v1", "kind": "Sprocket",
            "metadata": {"name": "defaulted"}, "spec": {"tags": ["a"]}}),
    ))
    .await;
    // One wrong field each: kube-openapi reads a schema's properties in Go's map order.
    for (name, spec) in [
        ("too-big", json!({"size": 10})),
        ("too-green", json!({"size": 2, "color": "green"})),
        ("too-far", json!({"size": 2, "ratio": 9.5})),
        ("too-big-for-its-rule", json!({"size": 9})),
    ] {
        s.send(Request::post(
            sprockets,
            &json!({"apiVersion": "protobuf.example.com/v1", "kind": "Sprocket",
                "metadata": {"name": name}, "spec": spec}),
        ))
        .await;
    }
}

/// A rule naming a field its object does not declare is refused as cel-go's checker refuses
/// it ("undefined field"), where one naming what kube-apiserver declares itself at the root
/// (`apiVersion`, `kind`, `metadata`) or a field of an object that keeps unknown fields is not.
async fn a_rule_naming_an_undeclared_field_is_refused(s: &mut Session) {
    let crd = |name: &str, root_rules: Value, spec: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{name}s.rules.example.com")},
            "spec": {"group": "rules.example.com", "scope": "Namespaced",
                "names": {"plural": format!("{name}s"), "kind": name.to_uppercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-validations": root_rules,
                        "properties": {"spec": spec}}}}]}})
    };
    s.send(Request::post(
        CRDS,
        &crd(
            "undeclared",
            json!([]),
            json!({"type": "object", "properties": {"x": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.z == 100"},
                                             {"rule": "has(self.y) || self.x > 0"}]}),
        ),
    ))
    .await;
    s.send(Request::post(
        CRDS,
        &crd(
            "declared",
            json!([{"rule": "self.metadata.name.startsWith('a') && self.kind != ''"}]),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"x": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.x > 0"}]}),
        ),
    ))
    .await;
}

/// A rule or `messageExpression` naming a function or a variable the environment does not
/// declare is refused as cel-go's checker refuses it ("undeclared reference"); functions of
/// a namespace (`sets.contains`, `lists.range`, `optional.of`) are declared by their full
/// name; 1.37's `includes` is not declared for a new rule (kube compiles it against 1.36's
/// libraries).
async fn a_rule_naming_an_undeclared_function_or_variable_is_refused(s: &mut Session) {
    let rules = [
        json!({"rule": "nosuch(self.x)"}),
        json!({"rule": "self.s.nosuch()"}),
        json!({"rule": "other > 1"}),
        json!({"rule": "self.l.all(i, j > 0)"}),
        json!({"rule": "self.l.includes(1)"}),
        json!({"rule": "self.x > 0", "messageExpression": "nosuch()"}),
        json!({"rule": "sets.contains(self.l, [1]) && lists.range(3).size() == 3 \
            && optional.of(self.x).hasValue() && self.l.exists(i, i > self.x) \
            && type(self.x) == int && self.s.lowerAscii() != '' && ['a'].join('-') == 'a'"}),
    ];
    for (i, rule) in rules.into_iter().enumerate() {
        let name = format!("undeclared{i}");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{name}s.rules.example.com")},
            "spec": {"group": "rules.example.com", "scope": "Namespaced",
                "names": {"plural": format!("{name}s"), "kind": name.to_uppercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"type": "object",
                            "properties": {"x": {"type": "integer"},
                                "s": {"type": "string", "maxLength": 10},
                                "l": {"type": "array", "maxItems": 10,
                                    "items": {"type": "integer"}}},
                            "x-kubernetes-validations": [rule]}}}}}]}});
        s.send(Request::post(CRDS, &crd)).await;
        if s.last_code() == 201 {
            let path = format!("{CRDS}/{name}s.rules.example.com");
            s.send(Request::delete(&path).kind_only()).await;
        }
    }
}

/// An integer's boundaries that are not whole (kube-openapi's `IsValueValidAgainstRange`):
/// a CRD whose default must meet them is refused, and a custom resource of a CRD without a
/// default is refused whatever its value, past the boundary twice.
async fn an_integers_boundaries_that_are_not_whole_refuse_every_value(s: &mut Session) {
    let crd = |plural: &str, size: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.boundaries.example.com")},
            "spec": {"group": "boundaries.example.com", "scope": "Namespaced",
                "names": {"plural": plural, "kind": format!("K{plural}")},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": size}}}}}}]}})
    };
    s.send(Request::post(
        CRDS,
        &crd(
            "bolts",
            json!({"type": "integer", "maximum": 1.5, "minimum": 0.5, "multipleOf": 0.5,
                "default": 1}),
        ),
    ))
    .await;
    s.send(
        Request::post(
            CRDS,
            &crd("nuts", json!({"type": "integer", "maximum": 1.5})),
        )
        .kind_only(),
    )
    .await;
    const NUTS: &str = "/apis/boundaries.example.com/v1/namespaces/default/nuts";
    s.wait_until(Request::get(NUTS), |code, _| code == 200)
        .await;
    for size in [1, 2] {
        let nut = json!({"apiVersion": "boundaries.example.com/v1", "kind": "Knuts",
            "metadata": {"name": format!("n{size}")}, "spec": {"size": size}});
        s.send(Request::post(NUTS, &nut)).await;
    }
    let crd = format!("{CRDS}/nuts.boundaries.example.com");
    s.send(Request::delete(&crd).kind_only()).await;
    s.wait_until(Request::get(&crd).kind_only(), |code, _| code == 404)
        .await;
}

crate::cases!(
    an_integers_boundaries_that_are_not_whole_refuse_every_value,
    a_rule_naming_an_undeclared_field_is_refused,
    a_rule_naming_an_undeclared_function_or_variable_is_refused,
    a_deleted_crd_terminates_until_its_custom_resources_are_gone,
    a_crd_sent_in_protobuf_is_read_as_kube_reads_it,
);
