//! CustomResourceDefinitions and their lists in Kubernetes protobuf, as client-go's
//! apiextensions clientset sends them (upstream's e2e framework does) and kube-apiserver
//! answers them: the messages of k8s.io/apiextensions-apiserver's
//! `pkg/apis/apiextensions/v1/generated.proto` as field tables (`apfkit_wire::shaped`), in the
//! `k8s\0` envelope. A schema's `dependencies` (field 32, a map of schemas or string lists)
//! is the one field of the messages not read: structural schemas, which v1 requires, refuse
//! it, and it is reported as an unknown field.

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_wire::shaped::{self, Holds, Reader, RootShape, Shape};
use serde_json::Value;

/// A Go `string` without `omitempty`.
const TEXT: Holds = Holds::Text { omit_empty: false };
/// A Go `string` with `omitempty`.
const OMITTED_TEXT: Holds = Holds::Text { omit_empty: true };
/// A Go `bool` with `omitempty`.
const OMITTED_BOOL: Holds = Holds::Bool { omit_false: true };

/// `JSONSchemaProps`, which holds itself.
static SCHEMA: Shape = Shape(&[
    (1, "id", OMITTED_TEXT),
    (2, "$schema", OMITTED_TEXT),
    (3, "$ref", Holds::OptionalText),
    (4, "description", OMITTED_TEXT),
    (5, "type", OMITTED_TEXT),
    (6, "format", OMITTED_TEXT),
    (7, "title", OMITTED_TEXT),
    (8, "default", Holds::Json),
    (9, "maximum", Holds::OptionalDouble),
    (10, "exclusiveMaximum", OMITTED_BOOL),
    (11, "minimum", Holds::OptionalDouble),
    (12, "exclusiveMinimum", OMITTED_BOOL),
    (13, "maxLength", Holds::OptionalInt64),
    (14, "minLength", Holds::OptionalInt64),
    (15, "pattern", OMITTED_TEXT),
    (16, "maxItems", Holds::OptionalInt64),
    (17, "minItems", Holds::OptionalInt64),
    (18, "uniqueItems", OMITTED_BOOL),
    (19, "multipleOf", Holds::OptionalDouble),
    (20, "enum", Holds::Jsons),
    (21, "maxProperties", Holds::OptionalInt64),
    (22, "minProperties", Holds::OptionalInt64),
    (23, "required", Holds::Texts),
    (24, "items", Holds::Either(&SCHEMA_OR_ARRAY)),
    (25, "allOf", Holds::Messages(&SCHEMA)),
    (26, "oneOf", Holds::Messages(&SCHEMA)),
    (27, "anyOf", Holds::Messages(&SCHEMA)),
    (28, "not", Holds::Message(&SCHEMA, false)),
    (29, "properties", Holds::MessageMap(&SCHEMA)),
    (30, "additionalProperties", Holds::Either(&SCHEMA_OR_BOOL)),
    (31, "patternProperties", Holds::MessageMap(&SCHEMA)),
    (33, "additionalItems", Holds::Either(&SCHEMA_OR_BOOL)),
    (34, "definitions", Holds::MessageMap(&SCHEMA)),
    (
        35,
        "externalDocs",
        Holds::Message(&EXTERNAL_DOCUMENTATION, false),
    ),
    (36, "example", Holds::Json),
    (37, "nullable", OMITTED_BOOL),
    (
        38,
        "x-kubernetes-preserve-unknown-fields",
        Holds::OptionalBool,
    ),
    (39, "x-kubernetes-embedded-resource", OMITTED_BOOL),
    (40, "x-kubernetes-int-or-string", OMITTED_BOOL),
    (41, "x-kubernetes-list-map-keys", Holds::Texts),
    (42, "x-kubernetes-list-type", Holds::OptionalText),
    (43, "x-kubernetes-map-type", Holds::OptionalText),
    (
        44,
        "x-kubernetes-validations",
        Holds::Messages(&VALIDATION_RULE),
    ),
]);
/// `JSONSchemaPropsOrArray`: a schema, or a list of them.
static SCHEMA_OR_ARRAY: Shape = Shape(&[
    (1, "schema", Holds::Message(&SCHEMA, false)),
    (2, "jSONSchemas", Holds::Messages(&SCHEMA)),
]);
/// `JSONSchemaPropsOrBool`: a schema, or whether anything is allowed.
static SCHEMA_OR_BOOL: Shape = Shape(&[
    (1, "allows", Holds::Bool { omit_false: false }),
    (2, "schema", Holds::Message(&SCHEMA, false)),
]);
static EXTERNAL_DOCUMENTATION: Shape =
    Shape(&[(1, "description", OMITTED_TEXT), (2, "url", OMITTED_TEXT)]);
static VALIDATION_RULE: Shape = Shape(&[
    (1, "rule", TEXT),
    (2, "message", OMITTED_TEXT),
    (3, "messageExpression", OMITTED_TEXT),
    (4, "reason", Holds::OptionalText),
    (5, "fieldPath", OMITTED_TEXT),
    (6, "optionalOldSelf", Holds::OptionalBool),
]);
static NAMES: Shape = Shape(&[
    (1, "plural", TEXT),
    (2, "singular", OMITTED_TEXT),
    (3, "shortNames", Holds::Texts),
    (4, "kind", TEXT),
    (5, "listKind", OMITTED_TEXT),
    (6, "categories", Holds::Texts),
]);
static VALIDATION: Shape = Shape(&[(1, "openAPIV3Schema", Holds::Message(&SCHEMA, false))]);
static EMPTY: Shape = Shape(&[]);
static SCALE: Shape = Shape(&[
    (1, "specReplicasPath", TEXT),
    (2, "statusReplicasPath", TEXT),
    (3, "labelSelectorPath", Holds::OptionalText),
]);
static SUBRESOURCES: Shape = Shape(&[
    (1, "status", Holds::Message(&EMPTY, false)),
    (2, "scale", Holds::Message(&SCALE, false)),
]);
static COLUMN: Shape = Shape(&[
    (1, "name", TEXT),
    (2, "type", TEXT),
    (3, "format", OMITTED_TEXT),
    (4, "description", OMITTED_TEXT),
    (5, "priority", Holds::Int32 { omit_zero: true }),
    (6, "jsonPath", TEXT),
]);
static SELECTABLE_FIELD: Shape = Shape(&[(1, "jsonPath", TEXT)]);
static VERSION: Shape = Shape(&[
    (1, "name", TEXT),
    (2, "served", Holds::Bool { omit_false: false }),
    (3, "storage", Holds::Bool { omit_false: false }),
    (4, "schema", Holds::Message(&VALIDATION, false)),
    (5, "subresources", Holds::Message(&SUBRESOURCES, false)),
    (6, "additionalPrinterColumns", Holds::Messages(&COLUMN)),
    (7, "deprecated", OMITTED_BOOL),
    (8, "deprecationWarning", Holds::OptionalText),
    (9, "selectableFields", Holds::Messages(&SELECTABLE_FIELD)),
]);
static SERVICE_REFERENCE: Shape = Shape(&[
    (1, "namespace", TEXT),
    (2, "name", TEXT),
    (3, "path", Holds::OptionalText),
    (4, "port", Holds::OptionalInt32),
]);
static CLIENT_CONFIG: Shape = Shape(&[
    (1, "service", Holds::Message(&SERVICE_REFERENCE, false)),
    (2, "caBundle", Holds::Bytes),
    (3, "url", Holds::OptionalText),
]);
static WEBHOOK_CONVERSION: Shape = Shape(&[
    (2, "clientConfig", Holds::Message(&CLIENT_CONFIG, false)),
    (3, "conversionReviewVersions", Holds::Texts),
]);
static CONVERSION: Shape = Shape(&[
    (1, "strategy", TEXT),
    (2, "webhook", Holds::Message(&WEBHOOK_CONVERSION, false)),
]);
static SPEC: Shape = Shape(&[
    (1, "group", TEXT),
    (3, "names", Holds::Message(&NAMES, true)),
    (4, "scope", TEXT),
    (7, "versions", Holds::Messages(&VERSION)),
    (9, "conversion", Holds::Message(&CONVERSION, false)),
    (10, "preserveUnknownFields", OMITTED_BOOL),
]);
static CONDITION: Shape = Shape(&[
    (1, "type", TEXT),
    (2, "status", TEXT),
    (3, "lastTransitionTime", Holds::Time),
    (4, "reason", OMITTED_TEXT),
    (5, "message", OMITTED_TEXT),
    (6, "observedGeneration", Holds::Int64 { omit_zero: true }),
]);
static STATUS: Shape = Shape(&[
    (1, "conditions", Holds::Messages(&CONDITION)),
    (2, "acceptedNames", Holds::Message(&NAMES, true)),
    (3, "storedVersions", Holds::Texts),
    (4, "observedGeneration", Holds::Int64 { omit_zero: true }),
]);
static DEFINITION: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&SPEC, true)),
    (3, "status", Holds::Message(&STATUS, true)),
]);
static DEFINITION_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&DEFINITION)),
]);

/// The `apiVersion` of CustomResourceDefinitions.
const API_VERSION: &str = "apiextensions.k8s.io/v1";

struct DefinitionRoot;
impl RootShape for DefinitionRoot {
    const SHAPE: &'static Shape = &DEFINITION;
}
struct DefinitionListRoot;
impl RootShape for DefinitionListRoot {
    const SHAPE: &'static Shape = &DEFINITION_LIST;
}

/// An enveloped CustomResourceDefinition or its list (prefix included) as JSON, with the
/// paths of the fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    shaped::read_enveloped(bytes, limits, |api_version, kind| {
        Some(match (api_version, kind) {
            (API_VERSION, "CustomResourceDefinition") => shaped::read::<DefinitionRoot> as Reader,
            (API_VERSION, "CustomResourceDefinitionList") => shaped::read::<DefinitionListRoot>,
            _ => return None,
        })
    })
}

/// A stored CustomResourceDefinition (prefix included) as JSON, read as [`read`] reads it.
///
/// # Errors
///
/// Bytes that are not a CustomResourceDefinition within `limits`, in words.
pub fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    match read(bytes, limits) {
        Some(Ok((value, _))) => Ok(value),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("not a CustomResourceDefinition in protobuf".to_owned()),
    }
}

/// A CustomResourceDefinition or its list in the envelope, as kube-apiserver writes it;
/// `None` for any other kind.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    shaped::write_enveloped(object, |api_version, kind| {
        Some(match (api_version, kind) {
            (API_VERSION, "CustomResourceDefinition") => &DEFINITION,
            (API_VERSION, "CustomResourceDefinitionList") => &DEFINITION_LIST,
            _ => return None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use prost::Message as _;
    use serde_json::json;

    /// A CRD with every kind of field the messages hold.
    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                          "listKind": "WidgetList", "shortNames": ["wd"]},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1.5, "maximum": 10,
                                             "default": 3},
                                    "color": {"type": "string", "enum": ["red", "blue"],
                                              "maxLength": 10},
                                    "tags": {"type": "array", "items": {"type": "string"},
                                             "x-kubernetes-list-type": "set"},
                                    "labels": {"type": "object",
                                               "additionalProperties": {"type": "string"}},
                                    "any": {"x-kubernetes-preserve-unknown-fields": true},
                                    "open": {"type": "object", "additionalProperties": false},
                                    "port": {"x-kubernetes-int-or-string": true,
                                             "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                },
                                "x-kubernetes-validations": [{"rule": "self.size < 9",
                                    "message": "too big", "reason": "FieldValueInvalid"}],
                            },
                        },
                    }},
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                      "statusReplicasPath": ".status.size"}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                  "jsonPath": ".spec.size", "priority": 1}],
                }],
                "conversion": {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": "https://127.0.0.1:9443/convert",
                                     "caBundle": "Y2EgYnVuZGxl"}}},
            },
            "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"],
                       "conditions": [{"type": "Established", "status": "True",
                                       "lastTransitionTime": "2026-11-29T10:00:00Z",
                                       "reason": "InitialNamesAccepted",
                                       "message": "the initial names have been accepted"}]},
        })
    }

    /// What is written is what upstream's messages (k8s-pb) read, and it reads back as it was.
    #[test]
    fn upstreams_messages_agree() {
        let crd = crd();
        let bytes = write(&crd).unwrap().unwrap();
        let raw = envelope::unwrap(&bytes[4..]).unwrap().raw.unwrap();
        use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb;
        let upstream = pb::CustomResourceDefinition::decode(raw.as_slice()).unwrap();
        let spec = upstream.spec.clone().unwrap();
        let schema = spec.versions[0]
            .schema
            .clone()
            .unwrap()
            .open_apiv3_schema
            .unwrap();
        let properties = &schema.properties["spec"].properties;
        assert_eq!(properties["size"].minimum, Some(1.5));
        assert_eq!(
            properties["size"].default.clone().unwrap().raw.unwrap(),
            b"3"
        );
        assert_eq!(properties["color"].r#enum.len(), 2);
        let labels = properties["labels"].additional_properties.clone().unwrap();
        assert_eq!(labels.allows, Some(true));
        assert_eq!(labels.schema.unwrap().r#type.as_deref(), Some("string"));
        let open = properties["open"].additional_properties.clone().unwrap();
        assert_eq!((open.allows, open.schema.is_none()), (Some(false), true));
        let client = spec
            .conversion
            .unwrap()
            .webhook
            .unwrap()
            .client_config
            .unwrap();
        assert_eq!(client.ca_bundle.as_deref(), Some(&b"ca bundle"[..]));
        assert_eq!(read(&bytes, &Limits::default()).unwrap().unwrap().0, crd);

        // What client-go sends, read as the same CRD.
        let sent = envelope::wrap(
            API_VERSION,
            "CustomResourceDefinition",
            &upstream.encode_to_vec(),
        );
        let (value, unknown) = read(&sent, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(value, crd);
    }

    /// Truncated, garbage and deeply nested messages are errors, never panics.
    #[test]
    fn hostile_messages_are_refused() {
        let bytes = write(&crd()).unwrap().unwrap();
        for cut in [5, 20, bytes.len() / 2, bytes.len() - 1] {
            let _ = read(&bytes[..cut], &Limits::default());
        }
        let garbage = envelope::wrap(API_VERSION, "CustomResourceDefinition", &[0x12, 0x40]);
        assert!(read_stored(&garbage, &Limits::default()).is_err());
        // A schema whose `not` nests a hundred levels deep, past the default limit of 64.
        let mut nested = json!({"type": "string"});
        for _ in 0..100 {
            nested = json!({"not": nested});
        }
        let mut deep = crd();
        deep["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = nested;
        let bytes = write(&deep).unwrap().unwrap();
        let read = read(&bytes, &Limits::default()).unwrap();
        assert!(
            read.is_err(),
            "a hundred levels read within the default limits"
        );
        // Bad raw JSON in `default`.
        let bad = pb_with_default(b"{not json");
        assert!(read_stored(&bad, &Limits::default()).is_err());
    }

    /// A CRD whose one schema's `default` holds `raw`.
    fn pb_with_default(raw: &[u8]) -> Vec<u8> {
        use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb;
        let schema = pb::JsonSchemaProps {
            default: Some(pb::Json {
                raw: Some(raw.to_vec()),
            }),
            ..Default::default()
        };
        let crd = pb::CustomResourceDefinition {
            spec: Some(pb::CustomResourceDefinitionSpec {
                versions: vec![pb::CustomResourceDefinitionVersion {
                    schema: Some(pb::CustomResourceValidation {
                        open_apiv3_schema: Some(schema),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        envelope::wrap(
            API_VERSION,
            "CustomResourceDefinition",
            &crd.encode_to_vec(),
        )
    }
}
