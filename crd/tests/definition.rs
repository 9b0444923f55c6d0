//! A CustomResourceDefinition checked as kube-apiserver checks it when it is written
//! (apiextensions-apiserver's `ValidateCustomResourceDefinition`), in its order and words.

use apfkit_crd::CustomResourceDefinition;
use serde_json::{Value, json};

fn errors(crd: Value) -> Vec<String> {
    match CustomResourceDefinition::from_value(&crd) {
        Ok(_) => Vec::new(),
        Err(apfkit_crd::DefinitionError::Invalid { errors, .. }) => {
            errors.iter().map(ToString::to_string).collect()
        }
        Err(other) => panic!("{other}"),
    }
}

fn valid() -> Value {
    let mut v1 = apfkit_test_support::crd::version("v1", true, json!({"type": "object"}));
    v1["additionalPrinterColumns"] =
        json!([{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]);
    apfkit_test_support::crd::definition("gadgets.example.com", "Gadget", json!([v1]))
}

#[test]
fn a_valid_definition_has_no_error() {
    assert_eq!(errors(valid()), Vec::<String>::new());
}

#[test]
fn every_part_is_checked_in_kube_apiservers_order_and_words() {
    let mut crd = valid();
    crd["metadata"]["name"] = json!("gizmos.example.com");
    crd["spec"]["group"] = json!("example");
    crd["spec"]["scope"] = json!("Galaxy");
    crd["spec"]["names"]["listKind"] = json!("Gadget");
    crd["spec"]["names"]["shortNames"] = json!(["GD"]);
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("V2");
    v2["additionalPrinterColumns"] =
        json!([{"name": "", "type": "text", "jsonPath": "", "format": "money"}]);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    crd["spec"]["conversion"] =
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1", "v1", "v3"]}});
    assert_eq!(
        errors(crd),
        [
            r#"metadata.name: Invalid value: "gizmos.example.com": must be spec.names.plural+"."+spec.group"#,
            r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
            r#"spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced""#,
            r#"spec.versions[1].name: Invalid value: "V2": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            r#"spec.versions: Invalid value: ["v1", "V2"]: must have exactly one version marked as storage version"#,
            r#"spec.names.shortNames[0]: Invalid value: "GD": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            r#"spec.names.listKind: Invalid value: "Gadget": kind and listKind may not be the same"#,
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v1": duplicate version"#,
            "spec.versions[1].additionalPrinterColumns[0].name: Required value",
            r#"spec.versions[1].additionalPrinterColumns[0].type: Invalid value: "text": must be one of boolean,date,integer,number,string"#,
            r#"spec.versions[1].additionalPrinterColumns[0].format: Invalid value: "money": must be one of byte,date,date-time,double,float,int32,int64,password"#,
            "spec.versions[1].additionalPrinterColumns[0].JSONPath: Required value",
        ]
    );
}

#[test]
fn conversion_fields_belong_to_a_webhook_only() {
    let mut crd = valid();
    crd["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/convert"}}});
    assert_eq!(
        errors(crd.clone()),
        [
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ]
    );
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v3"],
        "clientConfig": {"url": "https://example.com/convert", "service": {"namespace": "a", "name": "b"}}}});
    assert_eq!(
        errors(crd),
        [
            "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
            r#"spec.conversion.conversionReviewVersions: Invalid value: ["v3"]: must include at least one of v1, v1beta1"#,
        ]
    );
}

/// A conversion webhook's URL is held to kube-apiserver's `ValidateWebhookURL` with https
/// forced (k8s.io/apiserver `pkg/util/webhook/validation.go`; apiextensions-apiserver's
/// `TestValidateCustomResourceDefinition`, "webhookconfig: blank URL": two errors at the URL).
/// Issue 39: an `http://` URL was accepted, and the server then connected wherever a user said.
#[test]
fn a_conversion_webhook_url_is_https_with_a_host_and_nothing_else() {
    let with_url = |url: &str| {
        let mut crd = valid();
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": {"url": url}}});
        errors(crd)
    };
    const FORM: &str = "; desired format: https://host[/path]";
    assert_eq!(
        with_url(""),
        [
            format!(
                r#"spec.conversion.webhookClientConfig.url: Invalid value: "": 'https' is the only allowed URL scheme{FORM}"#
            ),
            format!(
                r#"spec.conversion.webhookClientConfig.url: Invalid value: "": host must be specified{FORM}"#
            ),
        ]
    );
    assert_eq!(
        with_url("http://127.0.0.1:6443/convert"),
        [format!(
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme{FORM}"#
        )]
    );
    assert_eq!(
        with_url("https://user:pw@example.com/convert?x=1#part"),
        [
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "user:pw": user information is not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "part": fragments are not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL"#,
        ]
    );
    assert_eq!(
        with_url("https://\u{7f}"),
        [format!(
            r#"spec.conversion.webhookClientConfig.url: Required value: url must be a valid URL: parse "https://\x7f": net/url: invalid control character in URL{FORM}"#
        )]
    );
    // Odd, truncated and oversized URLs are errors, never a panic.
    let long = format!("https://{}/x", "a".repeat(1 << 20));
    for odd in [
        ":",
        "://",
        "a:b",
        "https:",
        "https:/",
        "https://@",
        "https://[",
        "#",
        "?",
        "é:x",
        "https://h/\u{2028}",
        &long,
    ] {
        let _ = with_url(odd);
    }
    assert_eq!(with_url(&long), Vec::<String>::new());
    for fine in [
        "https://example.com/convert",
        "HTTPS://example.com",
        "https://[::1]:8443/x",
    ] {
        assert_eq!(with_url(fine), Vec::<String>::new(), "{fine}");
    }
}

#[test]
fn a_version_without_a_schema_and_names_that_are_not_labels_are_refused() {
    let mut crd = valid();
    crd["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    crd["spec"]["names"]["kind"] = json!("Gad_get");
    crd["metadata"]["name"] = json!("gadgets.example.com");
    let found = errors(crd);
    assert_eq!(
        found[0],
        "spec.versions[0].schema.openAPIV3Schema: Required value"
    );
    // The singular and list kind v1 defaults from the kind are refused with it.
    let fields: Vec<&str> = found.iter().map(|e| e.split(':').next().unwrap()).collect();
    assert_eq!(
        fields,
        [
            "spec.versions[0].schema.openAPIV3Schema",
            "spec.names.singular",
            "spec.names.kind",
            "spec.names.listKind"
        ]
    );
    assert!(
        found[2].starts_with(r#"spec.names.kind: Invalid value: "Gad_get": may have mixed case, but should otherwise match: a DNS-1035 label"#),
        "{found:?}"
    );
}

/// A schema that is not structural is refused, with upstream's errors in its order (as the
/// reference answers, `schema_errors_come_in_kubes_order`): `ValidateStructural`'s sorted by
/// their text, then those of the schema's walk (a node's before its children's, the list and
/// map extensions after them).
#[test]
fn schemas_must_be_structural() {
    let mut crd = valid();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "additionalProperties": {"type": "string"},
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object"}}},
            "spec": {"type": "object", "properties": {
                "untyped": {"description": "no type"},
                "list": {"type": "array"},
                "either": {"type": "string", "anyOf": [{"type": "string"}, {"maxLength": 3}]},
                "counted": {"type": "object", "x-kubernetes-list-type": "set"},
                "free": {"x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}
            }}
        }
    });
    let root = "spec.validation.openAPIV3Schema";
    assert_eq!(
        errors(crd),
        [
            format!("{root}.additionalProperties: Forbidden: must not be used at the root"),
            format!(
                "{root}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ),
            format!(
                "{root}.properties[spec].properties[either].anyOf[0].type: Forbidden: must be empty to be structural"
            ),
            format!(
                "{root}.properties[spec].properties[list].items: Required value: must be specified"
            ),
            format!(
                "{root}.properties[spec].properties[untyped].type: Required value: must not be empty for specified object fields"
            ),
            format!(
                "{root}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ),
            format!(
                r#"{root}.properties[spec].properties[counted].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#
            ),
        ]
    );
}

/// Defaults must be valid values of their schemas, without fields the schema would prune, and
/// hold their rules, as kube-apiserver checks them when the CRD is written.
#[test]
fn defaults_must_be_valid_values_of_their_schemas() {
    let mut crd = valid();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "maximum": 10, "default": 20},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "medium"},
            "limits": {"type": "object", "properties": {"cpu": {"type": "string"}}, "default": {"cpu": "1", "gpu": "2"}},
            "window": {"type": "integer", "default": 0,
                "x-kubernetes-validations": [{"rule": "self > 0", "message": "must be positive"}]},
            "fine": {"type": "integer", "minimum": 1, "default": 3}
        }}}
    });
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
    assert_eq!(
        errors(crd),
        [
            format!(
                r#"{at}[limits].default: Invalid value: {{"cpu":"1","gpu":"2"}}: must not have unknown fields"#
            ),
            format!(
                r#"{at}[mode].default: Unsupported value: "medium": supported values: "fast", "slow""#
            ),
            format!(
                "{at}[replicas].default: Invalid value: 20:  in body should be less than or equal to 10"
            ),
            format!("{at}[window].default: Invalid value: 0: must be positive"),
        ]
    );
}

/// A schema every version shares is compiled once (its CEL programs too), as kube-apiserver's
/// internal version keeps it once at `spec.validation`.
#[test]
fn a_shared_schema_is_compiled_once_for_every_version() {
    let mut crd = valid();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let compiled = CustomResourceDefinition::from_value(&crd).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &compiled.versions[0].schema,
        &compiled.versions[1].schema
    ));
}
