//! How each object schema is laid out as a Go struct in kube-apiserver: field order, protobuf
//! field numbers, pointers and `omitempty`. Written into the documents as the `x-apfkit-go`
//! extension, from which the generator derives the protobuf codecs and the Go-order JSON.
//!
//! Sources: the `json:"..."` and `protobuf:"..."` tags of upstream's `types.go` for
//! flowcontrol (k8s.io/api, v1alpha1 as of its last release), apiregistration
//! (k8s.io/kube-aggregator) and meta/v1 (k8s.io/apimachinery, 1.34+: `creationTimestamp`
//! carries `omitzero`). The numbers agree with upstream's `generated.proto`.

use serde_json::{Map, Value, json};

/// Go's `TypeMeta`, inlined first in every kind: JSON only, never in the protobuf message.
const TYPE_META: [GoField; 2] = [f("kind", 0, OMITEMPTY), f("apiVersion", 0, OMITEMPTY)];

/// One Go struct field.
#[derive(Clone, Copy)]
struct GoField {
    json: &'static str,
    /// Protobuf field number; 0 for the inlined `TypeMeta`, which has none.
    protobuf: u32,
    flags: u8,
}

/// The Go field is a pointer: protobuf writes it only when set, JSON writes `null` for nil.
const POINTER: u8 = 1;
/// The JSON tag has `omitempty`.
const OMITEMPTY: u8 = 2;
/// The JSON tag has `omitzero` (Go 1.24): a zero struct is left out.
const OMITZERO: u8 = 4;
/// No flag.
const VALUE: u8 = 0;

const fn f(json: &'static str, protobuf: u32, flags: u8) -> GoField {
    GoField {
        json,
        protobuf,
        flags,
    }
}

/// A kind: `TypeMeta`, then metadata, spec and status (the last two Go values, not pointers).
fn kind() -> Vec<GoField> {
    let mut fields = TYPE_META.to_vec();
    fields.extend([
        f("metadata", 1, OMITEMPTY),
        f("spec", 2, OMITEMPTY),
        f("status", 3, OMITEMPTY),
    ]);
    fields
}

/// A list kind: `TypeMeta`, list metadata and items.
fn list() -> Vec<GoField> {
    let mut fields = TYPE_META.to_vec();
    fields.extend([f("metadata", 1, OMITEMPTY), f("items", 2, VALUE)]);
    fields
}

/// A status condition; `omit_type_and_status` says whether `type` and `status` carry
/// `omitempty` (flowcontrol's do, apiregistration's do not).
fn condition(omit_type_and_status: bool) -> Vec<GoField> {
    let first = if omit_type_and_status {
        OMITEMPTY
    } else {
        VALUE
    };
    vec![
        f("type", 1, first),
        f("status", 2, first),
        f("lastTransitionTime", 3, OMITEMPTY),
        f("reason", 4, OMITEMPTY),
        f("message", 5, OMITEMPTY),
    ]
}

/// The Go layout of a flowcontrol definition (short name) in `version`.
fn flowcontrol(name: &str, version: &str) -> Option<Vec<GoField>> {
    Some(match name {
        "FlowSchema" | "PriorityLevelConfiguration" => kind(),
        "FlowSchemaList" | "PriorityLevelConfigurationList" => list(),
        "FlowSchemaSpec" => vec![
            f("priorityLevelConfiguration", 1, VALUE),
            f("matchingPrecedence", 2, VALUE),
            f("distinguisherMethod", 3, POINTER | OMITEMPTY),
            f("rules", 4, OMITEMPTY),
        ],
        "FlowDistinguisherMethod" => vec![f("type", 1, VALUE)],
        "PriorityLevelConfigurationReference" | "UserSubject" | "GroupSubject" => {
            vec![f("name", 1, VALUE)]
        }
        "PolicyRulesWithSubjects" => vec![
            f("subjects", 1, VALUE),
            f("resourceRules", 2, OMITEMPTY),
            f("nonResourceRules", 3, OMITEMPTY),
        ],
        "Subject" => vec![
            f("kind", 1, VALUE),
            f("user", 2, POINTER | OMITEMPTY),
            f("group", 3, POINTER | OMITEMPTY),
            f("serviceAccount", 4, POINTER | OMITEMPTY),
        ],
        "ServiceAccountSubject" => vec![f("namespace", 1, VALUE), f("name", 2, VALUE)],
        "ResourcePolicyRule" => vec![
            f("verbs", 1, VALUE),
            f("apiGroups", 2, VALUE),
            f("resources", 3, VALUE),
            f("clusterScope", 4, OMITEMPTY),
            f("namespaces", 5, VALUE),
        ],
        "NonResourcePolicyRule" => vec![f("verbs", 1, VALUE), f("nonResourceURLs", 6, VALUE)],
        "FlowSchemaStatus" | "PriorityLevelConfigurationStatus" => {
            vec![f("conditions", 1, OMITEMPTY)]
        }
        "FlowSchemaCondition" | "PriorityLevelConfigurationCondition" => condition(true),
        "PriorityLevelConfigurationSpec" => vec![
            f("type", 1, VALUE),
            f("limited", 2, POINTER | OMITEMPTY),
            f("exempt", 3, POINTER | OMITEMPTY),
        ],
        "LimitedPriorityLevelConfiguration" => {
            // A value before v1, a pointer (where unset and 0 differ) from v1.
            let shape = if version == "v1" { POINTER } else { VALUE };
            let shares = f(super::flowcontrol::shares_field(version), 1, shape);
            vec![
                shares,
                f("limitResponse", 2, OMITEMPTY),
                f("lendablePercent", 3, POINTER | OMITEMPTY),
                f("borrowingLimitPercent", 4, POINTER | OMITEMPTY),
            ]
        }
        "ExemptPriorityLevelConfiguration" => vec![
            f("nominalConcurrencyShares", 1, POINTER | OMITEMPTY),
            f("lendablePercent", 2, POINTER | OMITEMPTY),
        ],
        "LimitResponse" => vec![f("type", 1, VALUE), f("queuing", 2, POINTER | OMITEMPTY)],
        "QueuingConfiguration" => vec![
            f("queues", 1, VALUE),
            f("handSize", 2, VALUE),
            f("queueLengthLimit", 3, VALUE),
        ],
        _ => return None,
    })
}

/// The Go layout of an apiregistration definition (short name); v1beta1 and v1 agree.
fn apiregistration(name: &str) -> Option<Vec<GoField>> {
    Some(match name {
        "APIService" => kind(),
        "APIServiceList" => list(),
        "APIServiceSpec" => vec![
            f("service", 1, POINTER | OMITEMPTY),
            f("group", 2, OMITEMPTY),
            f("version", 3, OMITEMPTY),
            f("insecureSkipTLSVerify", 4, OMITEMPTY),
            f("caBundle", 5, OMITEMPTY),
            f("groupPriorityMinimum", 7, VALUE),
            f("versionPriority", 8, VALUE),
        ],
        "ServiceReference" => vec![
            f("namespace", 1, OMITEMPTY),
            f("name", 2, OMITEMPTY),
            f("port", 3, POINTER | OMITEMPTY),
        ],
        "APIServiceStatus" => vec![f("conditions", 1, OMITEMPTY)],
        "APIServiceCondition" => condition(false),
        _ => return None,
    })
}

/// The Go layout of a meta/v1 definition (short name) that stored objects carry.
fn meta(name: &str) -> Option<Vec<GoField>> {
    Some(match name {
        "ObjectMeta" => vec![
            f("name", 1, OMITEMPTY),
            f("generateName", 2, OMITEMPTY),
            f("namespace", 3, OMITEMPTY),
            f("selfLink", 4, OMITEMPTY),
            f("uid", 5, OMITEMPTY),
            f("resourceVersion", 6, OMITEMPTY),
            f("generation", 7, OMITEMPTY),
            f("creationTimestamp", 8, OMITEMPTY | OMITZERO),
            f("deletionTimestamp", 9, POINTER | OMITEMPTY),
            f("deletionGracePeriodSeconds", 10, POINTER | OMITEMPTY),
            f("labels", 11, OMITEMPTY),
            f("annotations", 12, OMITEMPTY),
            f("ownerReferences", 13, OMITEMPTY),
            f("finalizers", 14, OMITEMPTY),
            f("managedFields", 17, OMITEMPTY),
        ],
        "ListMeta" => vec![
            f("selfLink", 1, OMITEMPTY),
            f("resourceVersion", 2, OMITEMPTY),
            f("continue", 3, OMITEMPTY),
            f("remainingItemCount", 4, POINTER | OMITEMPTY),
        ],
        "OwnerReference" => vec![
            f("apiVersion", 5, VALUE),
            f("kind", 1, VALUE),
            f("name", 3, VALUE),
            f("uid", 4, VALUE),
            f("controller", 6, POINTER | OMITEMPTY),
            f("blockOwnerDeletion", 7, POINTER | OMITEMPTY),
        ],
        "ManagedFieldsEntry" => vec![
            f("manager", 1, OMITEMPTY),
            f("operation", 2, OMITEMPTY),
            f("apiVersion", 3, OMITEMPTY),
            f("time", 4, POINTER | OMITEMPTY),
            f("fieldsType", 6, OMITEMPTY),
            f("fieldsV1", 7, POINTER | OMITEMPTY),
            f("subresource", 8, OMITEMPTY),
        ],
        _ => return None,
    })
}

/// The extension's value for one layout.
fn extension(fields: &[GoField]) -> Value {
    let fields: Vec<Value> = fields
        .iter()
        .map(|field| {
            let mut entry = Map::new();
            entry.insert("json".into(), json!(field.json));
            if field.protobuf != 0 {
                entry.insert("protobuf".into(), json!(field.protobuf));
            }
            for (flag, key) in [
                (POINTER, "pointer"),
                (OMITEMPTY, "omitempty"),
                (OMITZERO, "omitzero"),
            ] {
                if field.flags & flag != 0 {
                    entry.insert(key.into(), json!(true));
                }
            }
            Value::Object(entry)
        })
        .collect();
    json!({ "fields": fields })
}

/// Adds `x-apfkit-go` to every schema of a `group`/`version` document that has a Go layout.
///
/// # Panics
///
/// If a layout and its schema disagree on the property names: the table is out of date.
pub fn annotate(schemas: &mut [(String, Value)], group: &str, version: &str) {
    for (definition, schema) in schemas {
        let short = definition.rsplit('.').next().unwrap_or_default();
        let layout = if definition.starts_with(super::build::META) {
            meta(short)
        } else if group == super::flowcontrol::GROUP {
            flowcontrol(short, version)
        } else {
            apiregistration(short)
        };
        let Some(layout) = layout else { continue };
        let mut listed: Vec<&str> = layout.iter().map(|f| f.json).collect();
        let mut properties: Vec<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        listed.sort_unstable();
        properties.sort_unstable();
        assert_eq!(
            listed, properties,
            "the Go layout of {definition} does not list the schema's properties"
        );
        schema["x-apfkit-go"] = extension(&layout);
    }
}
