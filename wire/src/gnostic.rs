//! An OpenAPI v2 document (JSON) in protobuf, as kube-apiserver serves `/openapi/v2` to an
//! `Accept` of `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`: kube-openapi's
//! `handler.ToProtoBinary`, which compiles the document into gnostic's `openapi.v2.Document`
//! (gnostic-models' `OpenAPIv2.proto`) and marshals it.
//!
//! gnostic's compiler is followed where a kube document (or a custom resource's) reaches it:
//! each object's keys become the message's fields, a map (`paths`, `definitions`,
//! `properties`, `responses`, …) a list of named values in the document's order, a key
//! starting with `x-` a vendor extension, and a default, an example, an enum value or an
//! extension's value an `Any` holding the value as YAML ([`go_yaml`]). Where
//! gnostic picks one of several messages it is picked the same way: a parameter by its `in`,
//! a parameter or a response that is a `$ref` as a JSON reference, a response's schema of
//! `type: file` as a file schema, a security definition by its `type` (and an OAuth2 one by
//! its `flow`). Fields are written in field-number order and proto3's zero values left out,
//! as Go's `proto.Marshal` writes them. gnostic refuses documents that break OpenAPI v2's own
//! schema (a key it does not know, a required field missing); this writes what it can of
//! any document and leaves such keys out.
//!
//! ```
//! use serde_json::json;
//! let document = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.37.2"}});
//! let bytes = apfkit_wire::gnostic::encode(&document, |_| false);
//! // Field 1 (swagger) "2.0", field 2 (info) a message of title and version.
//! assert_eq!(bytes[..5], [0x0a, 3, b'2', b'.', b'0']);
//! assert_eq!(bytes[5], 0x12);
//! ```

use prost::encoding::{WireType, encode_key, encode_varint};
use serde_json::{Map, Value};

use crate::go_yaml;

/// `value` (an OpenAPI v2 document) as gnostic's `openapi.v2.Document` in protobuf.
///
/// `kind_is_struct` says, for a path, whether kube-apiserver writes its operations'
/// `x-kubernetes-group-version-kind` from a Go struct (`metav1.GroupVersionKind`: group,
/// version, kind, as for the aggregator's APIServices) rather than from a map (sorted:
/// group, kind, version, as for the built-in kinds and custom resources): the YAML of that
/// extension keeps the JSON's order, which a `serde_json` object does not hold.
pub fn encode(document: &Value, kind_is_struct: impl Fn(&str) -> bool) -> Vec<u8> {
    let mut out = Vec::new();
    if let Value::Object(members) = document {
        let writer = Writer {
            kind_is_struct: &kind_is_struct,
            struct_kind: std::cell::Cell::new(false),
        };
        writer.message(&mut out, members, &DOCUMENT);
    }
    out
}

/// A message: its fields by the JSON key they are read from, and the field of its vendor
/// extensions (keys starting with `x-`), if it has one.
struct Message {
    fields: &'static [(&'static str, u32, Field)],
    extensions: Option<u32>,
}

/// What a field holds, and so how its JSON value is written.
#[derive(Clone, Copy)]
enum Field {
    Text,
    Bool,
    Int64,
    Double,
    /// `repeated string`.
    Texts,
    /// A message.
    Message(&'static Message),
    /// `repeated` of a message, from a JSON array.
    Messages(&'static Message),
    /// An `Any`: the value as YAML.
    Any,
    /// `repeated Any`, from a JSON array.
    Anys,
    /// A message of one field 1 holding the object's members as `Named…` messages (name 1,
    /// value 2): `Definitions`, `Properties`, `Headers`, ….
    Named(&'static Field),
    /// `TypeItem`: one string or an array of them.
    TypeItem,
    /// `ItemsItem`: one schema.
    ItemsItem,
    /// `AdditionalPropertiesItem`: a schema or a bool.
    AdditionalProperties,
    /// `repeated ParametersItem`: each a JSON reference or a parameter.
    ParametersItem,
    /// `Parameter`: a body parameter or one of the four other kinds, by `in`.
    Parameter,
    /// `ResponseValue`: a JSON reference or a response.
    ResponseValue,
    /// `SchemaItem`: a file schema or a schema.
    SchemaItem,
    /// `SecurityDefinitionsItem`: by `type` (and an OAuth2 one's `flow`).
    SecurityDefinitionsItem,
    /// `StringArray`: field 1, `repeated string`.
    StringArray,
    /// `Paths`: extensions (field 1) and the members starting with `/` (field 2).
    Paths,
    /// `Responses`: status codes and `default` (field 1), extensions (field 2).
    Responses,
    /// `repeated SecurityRequirement`: each a map of names to string arrays.
    SecurityRequirements,
}

const ANY_YAML: u32 = 2;

static DOCUMENT: Message = Message {
    fields: &[
        ("swagger", 1, Field::Text),
        ("info", 2, Field::Message(&INFO)),
        ("host", 3, Field::Text),
        ("basePath", 4, Field::Text),
        ("schemes", 5, Field::Texts),
        ("consumes", 6, Field::Texts),
        ("produces", 7, Field::Texts),
        ("paths", 8, Field::Paths),
        ("definitions", 9, Field::Named(&Field::Message(&SCHEMA))),
        ("parameters", 10, Field::Named(&Field::Parameter)),
        ("responses", 11, Field::Named(&Field::Message(&RESPONSE))),
        ("security", 12, Field::SecurityRequirements),
        (
            "securityDefinitions",
            13,
            Field::Named(&Field::SecurityDefinitionsItem),
        ),
        ("tags", 14, Field::Messages(&TAG)),
        ("externalDocs", 15, Field::Message(&EXTERNAL_DOCS)),
    ],
    extensions: Some(16),
};

static INFO: Message = Message {
    fields: &[
        ("title", 1, Field::Text),
        ("version", 2, Field::Text),
        ("description", 3, Field::Text),
        ("termsOfService", 4, Field::Text),
        ("contact", 5, Field::Message(&CONTACT)),
        ("license", 6, Field::Message(&LICENSE)),
    ],
    extensions: Some(7),
};

static CONTACT: Message = Message {
    fields: &[
        ("name", 1, Field::Text),
        ("url", 2, Field::Text),
        ("email", 3, Field::Text),
    ],
    extensions: Some(4),
};

static LICENSE: Message = Message {
    fields: &[("name", 1, Field::Text), ("url", 2, Field::Text)],
    extensions: Some(3),
};

static EXTERNAL_DOCS: Message = Message {
    fields: &[("description", 1, Field::Text), ("url", 2, Field::Text)],
    extensions: Some(3),
};

static TAG: Message = Message {
    fields: &[
        ("name", 1, Field::Text),
        ("description", 2, Field::Text),
        ("externalDocs", 3, Field::Message(&EXTERNAL_DOCS)),
    ],
    extensions: Some(4),
};

static PATH_ITEM: Message = Message {
    fields: &[
        ("$ref", 1, Field::Text),
        ("get", 2, Field::Message(&OPERATION)),
        ("put", 3, Field::Message(&OPERATION)),
        ("post", 4, Field::Message(&OPERATION)),
        ("delete", 5, Field::Message(&OPERATION)),
        ("options", 6, Field::Message(&OPERATION)),
        ("head", 7, Field::Message(&OPERATION)),
        ("patch", 8, Field::Message(&OPERATION)),
        ("parameters", 9, Field::ParametersItem),
    ],
    extensions: Some(10),
};

static OPERATION: Message = Message {
    fields: &[
        ("tags", 1, Field::Texts),
        ("summary", 2, Field::Text),
        ("description", 3, Field::Text),
        ("externalDocs", 4, Field::Message(&EXTERNAL_DOCS)),
        ("operationId", 5, Field::Text),
        ("produces", 6, Field::Texts),
        ("consumes", 7, Field::Texts),
        ("parameters", 8, Field::ParametersItem),
        ("responses", 9, Field::Responses),
        ("schemes", 10, Field::Texts),
        ("deprecated", 11, Field::Bool),
        ("security", 12, Field::SecurityRequirements),
    ],
    extensions: Some(13),
};

static RESPONSE: Message = Message {
    fields: &[
        ("description", 1, Field::Text),
        ("schema", 2, Field::SchemaItem),
        ("headers", 3, Field::Named(&Field::Message(&HEADER))),
        ("examples", 4, Field::Named(&Field::Any)),
    ],
    extensions: Some(5),
};

static JSON_REFERENCE: Message = Message {
    fields: &[("$ref", 1, Field::Text), ("description", 2, Field::Text)],
    extensions: None,
};

static BODY_PARAMETER: Message = Message {
    fields: &[
        ("description", 1, Field::Text),
        ("name", 2, Field::Text),
        ("in", 3, Field::Text),
        ("required", 4, Field::Bool),
        ("schema", 5, Field::Message(&SCHEMA)),
    ],
    extensions: Some(6),
};

/// The fields of a primitive's constraints, from `type` on, numbered from `first` (the same
/// run in headers, items and the four non-body parameters).
macro_rules! primitive_fields {
    ($($head:expr,)* ; $first:expr; $($tail:expr,)*) => {
        &[
            $($head,)*
            ("type", $first, Field::Text),
            ("format", $first + 1, Field::Text),
            ("items", $first + 2, Field::Message(&PRIMITIVES_ITEMS)),
            ("collectionFormat", $first + 3, Field::Text),
            ("default", $first + 4, Field::Any),
            ("maximum", $first + 5, Field::Double),
            ("exclusiveMaximum", $first + 6, Field::Bool),
            ("minimum", $first + 7, Field::Double),
            ("exclusiveMinimum", $first + 8, Field::Bool),
            ("maxLength", $first + 9, Field::Int64),
            ("minLength", $first + 10, Field::Int64),
            ("pattern", $first + 11, Field::Text),
            ("maxItems", $first + 12, Field::Int64),
            ("minItems", $first + 13, Field::Int64),
            ("uniqueItems", $first + 14, Field::Bool),
            ("enum", $first + 15, Field::Anys),
            ("multipleOf", $first + 16, Field::Double),
            $($tail,)*
        ]
    };
}

static PRIMITIVES_ITEMS: Message = Message {
    fields: primitive_fields!(; 1;),
    extensions: Some(18),
};

static HEADER: Message = Message {
    fields: primitive_fields!(; 1; ("description", 18, Field::Text),),
    extensions: Some(19),
};

/// Header and path parameters.
static SIMPLE_PARAMETER: Message = Message {
    fields: primitive_fields!(
        ("required", 1, Field::Bool),
        ("in", 2, Field::Text),
        ("description", 3, Field::Text),
        ("name", 4, Field::Text),
        ; 5;
    ),
    extensions: Some(22),
};

/// Query and form data parameters.
static VALUE_PARAMETER: Message = Message {
    fields: primitive_fields!(
        ("required", 1, Field::Bool),
        ("in", 2, Field::Text),
        ("description", 3, Field::Text),
        ("name", 4, Field::Text),
        ("allowEmptyValue", 5, Field::Bool),
        ; 6;
    ),
    extensions: Some(23),
};

static SCHEMA: Message = Message {
    fields: &[
        ("$ref", 1, Field::Text),
        ("format", 2, Field::Text),
        ("title", 3, Field::Text),
        ("description", 4, Field::Text),
        ("default", 5, Field::Any),
        ("multipleOf", 6, Field::Double),
        ("maximum", 7, Field::Double),
        ("exclusiveMaximum", 8, Field::Bool),
        ("minimum", 9, Field::Double),
        ("exclusiveMinimum", 10, Field::Bool),
        ("maxLength", 11, Field::Int64),
        ("minLength", 12, Field::Int64),
        ("pattern", 13, Field::Text),
        ("maxItems", 14, Field::Int64),
        ("minItems", 15, Field::Int64),
        ("uniqueItems", 16, Field::Bool),
        ("maxProperties", 17, Field::Int64),
        ("minProperties", 18, Field::Int64),
        ("required", 19, Field::Texts),
        ("enum", 20, Field::Anys),
        ("additionalProperties", 21, Field::AdditionalProperties),
        ("type", 22, Field::TypeItem),
        ("items", 23, Field::ItemsItem),
        ("allOf", 24, Field::Messages(&SCHEMA)),
        ("properties", 25, Field::Named(&Field::Message(&SCHEMA))),
        ("discriminator", 26, Field::Text),
        ("readOnly", 27, Field::Bool),
        ("xml", 28, Field::Message(&XML)),
        ("externalDocs", 29, Field::Message(&EXTERNAL_DOCS)),
        ("example", 30, Field::Any),
    ],
    extensions: Some(31),
};

static FILE_SCHEMA: Message = Message {
    fields: &[
        ("format", 1, Field::Text),
        ("title", 2, Field::Text),
        ("description", 3, Field::Text),
        ("default", 4, Field::Any),
        ("required", 5, Field::Texts),
        ("type", 6, Field::Text),
        ("readOnly", 7, Field::Bool),
        ("externalDocs", 8, Field::Message(&EXTERNAL_DOCS)),
        ("example", 9, Field::Any),
    ],
    extensions: Some(10),
};

static XML: Message = Message {
    fields: &[
        ("name", 1, Field::Text),
        ("namespace", 2, Field::Text),
        ("prefix", 3, Field::Text),
        ("attribute", 4, Field::Bool),
        ("wrapped", 5, Field::Bool),
    ],
    extensions: Some(6),
};

static BASIC_SECURITY: Message = Message {
    fields: &[("type", 1, Field::Text), ("description", 2, Field::Text)],
    extensions: Some(3),
};

static API_KEY_SECURITY: Message = Message {
    fields: &[
        ("type", 1, Field::Text),
        ("name", 2, Field::Text),
        ("in", 3, Field::Text),
        ("description", 4, Field::Text),
    ],
    extensions: Some(5),
};

/// The OAuth2 flows with one URL (implicit: `authorizationUrl`; password, application:
/// `tokenUrl`).
static OAUTH2_IMPLICIT: Message = Message {
    fields: &[
        ("type", 1, Field::Text),
        ("flow", 2, Field::Text),
        ("scopes", 3, Field::Named(&Field::Text)),
        ("authorizationUrl", 4, Field::Text),
        ("description", 5, Field::Text),
    ],
    extensions: Some(6),
};

static OAUTH2_TOKEN: Message = Message {
    fields: &[
        ("type", 1, Field::Text),
        ("flow", 2, Field::Text),
        ("scopes", 3, Field::Named(&Field::Text)),
        ("tokenUrl", 4, Field::Text),
        ("description", 5, Field::Text),
    ],
    extensions: Some(6),
};

static OAUTH2_ACCESS_CODE: Message = Message {
    fields: &[
        ("type", 1, Field::Text),
        ("flow", 2, Field::Text),
        ("scopes", 3, Field::Named(&Field::Text)),
        ("authorizationUrl", 4, Field::Text),
        ("tokenUrl", 5, Field::Text),
        ("description", 6, Field::Text),
    ],
    extensions: Some(7),
};

/// Writes a document's messages.
struct Writer<'f> {
    kind_is_struct: &'f dyn Fn(&str) -> bool,
    /// Within a path whose operations' kind is a Go struct.
    struct_kind: std::cell::Cell<bool>,
}

impl Writer<'_> {
    /// Writes `members` as a message of `shape`: its fields (the tables are in number order),
    /// then its vendor extensions (which have the highest number in every message that has them).
    fn message(&self, out: &mut Vec<u8>, members: &Map<String, Value>, shape: &Message) {
        for (key, number, field) in shape.fields {
            if let Some(value) = members.get(*key) {
                self.field(out, *number, field, value);
            }
        }
        if let Some(number) = shape.extensions {
            self.extensions(out, number, members);
        }
    }

    /// The `x-` members as `NamedAny`s.
    fn extensions(&self, out: &mut Vec<u8>, number: u32, members: &Map<String, Value>) {
        for (name, value) in members.iter().filter(|(key, _)| key.starts_with("x-")) {
            match (name.as_str(), value) {
                // An operation's kind is a Go struct in kube-openapi (`GroupVersionKind`): its
                // YAML has the struct's order, not the sorted one of the JSON value held here.
                ("x-kubernetes-group-version-kind", Value::Object(kind))
                    if self.struct_kind.get() =>
                {
                    let fields: Vec<(&str, &Value)> = ["group", "version", "kind"]
                        .into_iter()
                        .filter_map(|field| Some((field, kind.get(field)?)))
                        .collect();
                    let yaml = go_yaml::mapping_to_string(&fields);
                    write_nested(out, number, |named| {
                        write_text(named, 1, name);
                        write_nested(named, 2, |any| write_text(any, ANY_YAML, &yaml));
                    });
                }
                _ => self.named_value(out, number, name, &Field::Any, value),
            }
        }
    }

    /// `Paths`: extensions (field 1) and the members starting with `/` (field 2), each in the
    /// document's order.
    fn paths(&self, out: &mut Vec<u8>, members: &Map<String, Value>) {
        self.extensions(out, 1, members);
        for (path, item) in members.iter().filter(|(key, _)| key.starts_with('/')) {
            self.struct_kind.set((self.kind_is_struct)(path));
            self.named_value(out, 2, path, &Field::Message(&PATH_ITEM), item);
        }
        self.struct_kind.set(false);
    }

    /// `Responses`: the status codes and `default` (field 1), then extensions (field 2).
    fn responses(&self, out: &mut Vec<u8>, members: &Map<String, Value>) {
        let is_code = |key: &str| {
            key == "default" || (key.len() == 3 && key.bytes().all(|b| b.is_ascii_digit()))
        };
        for (code, response) in members.iter().filter(|(key, _)| is_code(key)) {
            self.named_value(out, 1, code, &Field::ResponseValue, response);
        }
        self.extensions(out, 2, members);
    }

    /// A `Named…` message (name 1, value 2) of field `number`.
    fn named_value(
        &self,
        out: &mut Vec<u8>,
        number: u32,
        name: &str,
        field: &Field,
        value: &Value,
    ) {
        write_nested(out, number, |named| {
            write_text(named, 1, name);
            self.field(named, 2, field, value);
        });
    }

    fn field(&self, out: &mut Vec<u8>, number: u32, field: &Field, value: &Value) {
        match (field, value) {
            (Field::Text, Value::String(text)) => write_text(out, number, text),
            (Field::Bool, Value::Bool(flag)) => write_bool(out, number, *flag),
            (Field::Int64, Value::Number(n)) => {
                // Go's int64 fields take whole numbers only; a fraction gnostic refuses.
                if let Some(n) = n.as_i64().filter(|n| *n != 0) {
                    encode_key(number, WireType::Varint, out);
                    // Two's complement, as protobuf writes a negative int64.
                    encode_varint(u64::from_ne_bytes(n.to_ne_bytes()), out);
                }
            }
            (Field::Double, Value::Number(n)) => {
                if let Some(n) = n.as_f64().filter(|n| n.to_bits() != 0) {
                    encode_key(number, WireType::SixtyFourBit, out);
                    out.extend_from_slice(&n.to_le_bytes());
                }
            }
            (Field::Texts, Value::Array(items)) => {
                for item in items.iter().filter_map(Value::as_str) {
                    write_text_always(out, number, item);
                }
            }
            (Field::Message(shape), Value::Object(members)) => {
                write_nested(out, number, |message| self.message(message, members, shape));
            }
            (Field::Messages(shape), Value::Array(items)) => {
                for members in items.iter().filter_map(Value::as_object) {
                    write_nested(out, number, |message| self.message(message, members, shape));
                }
            }
            (Field::Any, value) => write_nested(out, number, |any| {
                write_text(any, ANY_YAML, &go_yaml::to_string(value));
            }),
            (Field::Anys, Value::Array(items)) => {
                for item in items {
                    self.field(out, number, &Field::Any, item);
                }
            }
            (Field::Named(inner), Value::Object(members)) => {
                self.named_map(out, number, members, inner);
            }
            (Field::Paths, Value::Object(members)) => {
                write_nested(out, number, |paths| self.paths(paths, members));
            }
            (Field::Responses, Value::Object(members)) => {
                write_nested(out, number, |responses| self.responses(responses, members));
            }
            (Field::SecurityRequirements, Value::Array(items)) => {
                for members in items.iter().filter_map(Value::as_object) {
                    self.named_map(out, number, members, &Field::StringArray);
                }
            }
            (Field::TypeItem | Field::StringArray, Value::String(text)) => {
                write_nested(out, number, |item| write_text_always(item, 1, text));
            }
            (Field::TypeItem | Field::StringArray, Value::Array(_)) => {
                write_nested(out, number, |item| {
                    self.field(item, 1, &Field::Texts, value)
                });
            }
            (Field::ItemsItem, Value::Object(_)) => write_nested(out, number, |item| {
                self.field(item, 1, &Field::Message(&SCHEMA), value);
            }),
            // gnostic reads any node as a map, a sequence's items taken as keys and values
            // in turn: a tuple's items are one schema, empty unless its items are strings.
            (Field::ItemsItem, Value::Array(items)) => write_nested(out, number, |item| {
                let pairs: Map<String, Value> = items
                    .chunks_exact(2)
                    .filter_map(|pair| Some((pair[0].as_str()?.to_owned(), pair[1].clone())))
                    .collect();
                self.message_field(item, 1, &pairs, &SCHEMA);
            }),
            (Field::AdditionalProperties, Value::Object(_)) => write_nested(out, number, |item| {
                self.field(item, 1, &Field::Message(&SCHEMA), value);
            }),
            (Field::AdditionalProperties, Value::Bool(flag)) => write_nested(out, number, |item| {
                // A oneof's member is written even when it is its zero value.
                encode_key(2, WireType::Varint, item);
                encode_varint(u64::from(*flag), item);
            }),
            (Field::ParametersItem, Value::Array(items)) => {
                for members in items.iter().filter_map(Value::as_object) {
                    write_nested(out, number, |item| {
                        if members.contains_key("$ref") {
                            self.message_field(item, 2, members, &JSON_REFERENCE);
                        } else {
                            self.parameter(item, 1, members);
                        }
                    });
                }
            }
            (Field::Parameter, Value::Object(members)) => self.parameter(out, number, members),
            (Field::ResponseValue, Value::Object(members)) => write_nested(out, number, |item| {
                if members.contains_key("$ref") {
                    self.message_field(item, 2, members, &JSON_REFERENCE);
                } else {
                    self.message_field(item, 1, members, &RESPONSE);
                }
            }),
            (Field::SchemaItem, Value::Object(members)) => write_nested(out, number, |item| {
                if is_file_schema(members) {
                    self.message_field(item, 2, members, &FILE_SCHEMA);
                } else {
                    self.message_field(item, 1, members, &SCHEMA);
                }
            }),
            (Field::SecurityDefinitionsItem, Value::Object(members)) => {
                write_nested(out, number, |item| {
                    let text = |key: &str| members.get(key).and_then(Value::as_str);
                    let (alternative, shape) = match (text("type"), text("flow")) {
                        (Some("basic"), _) => (1, &BASIC_SECURITY),
                        (Some("oauth2"), Some("implicit")) => (3, &OAUTH2_IMPLICIT),
                        (Some("oauth2"), Some("password")) => (4, &OAUTH2_TOKEN),
                        (Some("oauth2"), Some("application")) => (5, &OAUTH2_TOKEN),
                        (Some("oauth2"), Some("accessCode")) => (6, &OAUTH2_ACCESS_CODE),
                        _ => (2, &API_KEY_SECURITY),
                    };
                    self.message_field(item, alternative, members, shape);
                });
            }
            _ => {}
        }
    }

    /// A map's message (`Definitions`, `Properties`, …): field 1 repeated, a `Named…` message
    /// for each member.
    fn named_map(
        &self,
        out: &mut Vec<u8>,
        number: u32,
        members: &Map<String, Value>,
        field: &Field,
    ) {
        write_nested(out, number, |map| {
            for (name, value) in members {
                self.named_value(map, 1, name, field, value);
            }
        });
    }

    /// A message field of `shape` holding `members`.
    fn message_field(
        &self,
        out: &mut Vec<u8>,
        number: u32,
        members: &Map<String, Value>,
        shape: &Message,
    ) {
        write_nested(out, number, |message| self.message(message, members, shape));
    }

    /// A `Parameter`: a body parameter (field 1), or a `NonBodyParameter` (field 2) holding the
    /// header, form data, query or path parameter (fields 1 to 4) its `in` names.
    fn parameter(&self, out: &mut Vec<u8>, number: u32, members: &Map<String, Value>) {
        write_nested(out, number, |parameter| {
            let (alternative, shape) = match members.get("in").and_then(Value::as_str) {
                Some("body") => return self.message_field(parameter, 1, members, &BODY_PARAMETER),
                Some("header") => (1, &SIMPLE_PARAMETER),
                Some("formData") => (2, &VALUE_PARAMETER),
                Some("query") => (3, &VALUE_PARAMETER),
                Some("path") => (4, &SIMPLE_PARAMETER),
                // No alternative compiles: gnostic refuses the document.
                _ => return,
            };
            write_nested(parameter, 2, |non_body| {
                self.message_field(non_body, alternative, members, shape);
            });
        });
    }
}

/// A schema gnostic also compiles as a `FileSchema`: `type: file` and no key a file schema
/// lacks.
fn is_file_schema(members: &Map<String, Value>) -> bool {
    members.get("type").and_then(Value::as_str) == Some("file")
        && members.keys().all(|key| {
            key.starts_with("x-") || FILE_SCHEMA.fields.iter().any(|(name, _, _)| name == key)
        })
}

/// A bool, written when true (proto3 leaves out a field's zero value).
fn write_bool(out: &mut Vec<u8>, number: u32, flag: bool) {
    if flag {
        encode_key(number, WireType::Varint, out);
        encode_varint(1, out);
    }
}

fn write_text(out: &mut Vec<u8>, number: u32, text: &str) {
    if !text.is_empty() {
        write_text_always(out, number, text);
    }
}

/// A string, written even when empty (an element of a `repeated string`).
fn write_text_always(out: &mut Vec<u8>, number: u32, text: &str) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

/// A nested message of field `number`, written by `write` (a message is written even when
/// empty, as Go writes a set pointer).
fn write_nested(out: &mut Vec<u8>, number: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut message = Vec::new();
    write(&mut message);
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(message.len() as u64, out);
    out.extend_from_slice(&message);
}
