//! kube-apiserver's wire codecs for structs with an `x-apfkit-go` layout: a protobuf `Message`
//! impl that writes what gogo-protobuf writes, and a `GoJson` impl that writes JSON as Go's
//! `encoding/json` does. The runtime they call is the module the settings
//! name (`Settings::with_wire`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::error::{Error, Result};
use crate::openapi::GoField;
use crate::typespace::{
    FieldDef, FieldType, MICRO_TIME_DEFINITION as MICRO_TIME, Presence, StructDef,
    TIME_DEFINITION as TIME, TypeBody, TypeSpace,
};

/// Definitions with their own hand-written codec in the runtime.
const FIELDS_V1: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1";

/// How one value travels on the protobuf wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    String,
    Base64,
    I32,
    I64,
    Bool,
    Time,
    MicroTime,
    FieldsV1,
    Message,
}

impl Scalar {
    /// Whether `omitempty` can leave the value out (Go's empty strings, numbers and booleans).
    fn emptyable(self) -> bool {
        matches!(
            self,
            Scalar::String | Scalar::Base64 | Scalar::I32 | Scalar::I64 | Scalar::Bool
        )
    }
}

/// The shape of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single(Scalar),
    Repeated(Scalar),
    StringMap,
    /// `map<string, bytes>`, the values kept as base64 text.
    BytesMap,
}

/// One field with its Go layout.
struct Field<'a> {
    def: &'a FieldDef,
    go: &'a GoField,
    number: u32,
    shape: Shape,
}

/// The codec impls for `target` (a type path), whose struct is `def`.
pub(crate) fn impls(
    space: &TypeSpace,
    wire: &TokenStream,
    target: &TokenStream,
    definition: &str,
    def: &StructDef,
) -> Result<TokenStream> {
    let Some(layout) = &def.go else {
        return Ok(TokenStream::new());
    };
    let internal = |message: String| Error::Internal {
        module: definition.to_owned(),
        message,
    };
    let mut json_order = Vec::new();
    let mut fields = Vec::new();
    for go in &layout.fields {
        let Some(field) = def.fields.iter().find(|f| f.wire == go.json) else {
            // `kind` and `apiVersion` of a kind are constants, not fields.
            if def.kind.is_some() && go.protobuf.is_none() {
                json_order.push(JsonItem::Identity(go.json.clone()));
                continue;
            }
            return Err(internal(format!(
                "layout field {:?} has no Rust field",
                go.json
            )));
        };
        let number = go
            .protobuf
            .ok_or_else(|| internal(format!("{:?} has no protobuf field number", go.json)))?;
        let shape = shape(space, &field.ty).ok_or_else(|| {
            internal(format!(
                "{:?}: no protobuf encoding for {:?}",
                go.json, field.ty
            ))
        })?;
        json_order.push(JsonItem::Field(fields.len()));
        fields.push(Field {
            def: field,
            go,
            number,
            shape,
        });
    }
    let mut by_number: Vec<&Field<'_>> = fields.iter().collect();
    by_number.sort_by_key(|f| f.number);

    let encode: Vec<TokenStream> = by_number.iter().map(|f| encode_field(wire, f)).collect();
    let len: Vec<TokenStream> = by_number.iter().map(|f| len_field(wire, f)).collect();
    let merge: Vec<TokenStream> = by_number.iter().map(|f| merge_field(wire, f)).collect();
    let finish: Vec<TokenStream> = fields
        .iter()
        .filter_map(|f| finish_field(wire, f))
        .collect();
    let json: Vec<TokenStream> = json_order
        .iter()
        .map(|item| match item {
            JsonItem::Identity(name) => {
                let value = if name == "kind" {
                    def.kind.as_ref().map(|k| k.kind.clone())
                } else {
                    def.kind
                        .as_ref()
                        .map(|k| crate::names::api_version(&k.group, &k.version))
                };
                quote! { s.serialize_field(#name, #value)?; }
            }
            JsonItem::Field(i) => json_field(wire, &fields[*i]),
        })
        .collect();
    let struct_name = definition.rsplit('.').next().unwrap_or(definition);
    // An upper bound: serde_json closes an object announced with 0 members at once.
    let members = json_order.len();

    Ok(quote! {
        impl #wire::protobuf::Message for #target {
            fn encode_fields(&self, buf: &mut ::std::vec::Vec<u8>) -> ::std::result::Result<(), #wire::protobuf::EncodeError> {
                #(#encode)*
                ::std::result::Result::Ok(())
            }
            fn fields_len(&self) -> usize {
                let mut len = 0;
                #(#len)*
                len
            }
            fn merge_field(
                &mut self,
                number: u32,
                wire: #wire::protobuf::WireType,
                buf: &mut &[u8],
                decoder: &mut #wire::protobuf::Decoder,
            ) -> ::std::result::Result<(), #wire::protobuf::DecodeError> {
                match number {
                    #(#merge)*
                    _ => decoder.unknown(number, wire, buf)?,
                }
                ::std::result::Result::Ok(())
            }
            fn finish(&mut self) {
                #(#finish)*
            }
        }
        impl #wire::GoJson for #target {
            fn serialize_go<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeStruct as _;
                let value = self;
                let mut s = serializer.serialize_struct(#struct_name, #members)?;
                #(#json)*
                s.end()
            }
        }
    })
}

/// One member of the JSON object, in Go's order.
enum JsonItem {
    /// `kind` or `apiVersion` of a kind: a constant.
    Identity(String),
    /// A field, by index.
    Field(usize),
}

fn scalar(space: &TypeSpace, ty: &FieldType) -> Option<Scalar> {
    Some(match ty {
        FieldType::String => Scalar::String,
        FieldType::Bytes => Scalar::Base64,
        FieldType::I32 => Scalar::I32,
        FieldType::I64 => Scalar::I64,
        FieldType::Bool => Scalar::Bool,
        FieldType::Named(d) if d == TIME => Scalar::Time,
        FieldType::Named(d) if d == MICRO_TIME => Scalar::MicroTime,
        FieldType::Named(d) if d == FIELDS_V1 => Scalar::FieldsV1,
        FieldType::Named(d) => {
            let generated = matches!(
                space.entries.get(d).map(|e| &e.body),
                Some(TypeBody::Struct(s)) if s.go.is_some()
            );
            let foreign = space.foreign.get(d).is_some_and(|s| s.go.is_some());
            if !(generated || foreign) {
                return None;
            }
            Scalar::Message
        }
        _ => return None,
    })
}

fn shape(space: &TypeSpace, ty: &FieldType) -> Option<Shape> {
    Some(match ty {
        FieldType::Vec(inner) => Shape::Repeated(scalar(space, inner)?),
        FieldType::Map(inner) if **inner == FieldType::String => Shape::StringMap,
        FieldType::Map(inner) if **inner == FieldType::Bytes => Shape::BytesMap,
        other => Shape::Single(scalar(space, other)?),
    })
}

fn ident(f: &Field<'_>) -> proc_macro2::Ident {
    format_ident!("{}", f.def.rust)
}

/// Writes one value `v` (a reference) of field `f`.
fn put(wire: &TokenStream, f: &Field<'_>, scalar: Scalar, v: TokenStream) -> TokenStream {
    let n = f.number;
    let p = quote! { #wire::protobuf };
    let name = &f.go.json;
    match scalar {
        Scalar::String => quote! { #p::put_string(buf, #n, #v); },
        Scalar::Base64 => quote! { #p::put_base64(buf, #n, #name, #v)?; },
        Scalar::I32 => quote! { #p::put_int32(buf, #n, *#v); },
        Scalar::I64 => quote! { #p::put_int64(buf, #n, *#v); },
        Scalar::Bool => quote! { #p::put_bool(buf, #n, *#v); },
        Scalar::Time => quote! { #p::put_time(buf, #n, ::std::option::Option::Some(#v)); },
        Scalar::MicroTime => quote! { #p::put_micro(buf, #n, ::std::option::Option::Some(#v)); },
        Scalar::FieldsV1 => quote! { #p::put_fields_v1(buf, #n, #v); },
        Scalar::Message => quote! { #p::put_message(buf, #n, #v)?; },
    }
}

/// Length of [`put`].
fn put_len(wire: &TokenStream, f: &Field<'_>, scalar: Scalar, v: TokenStream) -> TokenStream {
    let n = f.number;
    let p = quote! { #wire::protobuf };
    match scalar {
        Scalar::String => quote! { len += #p::string_len(#n, #v); },
        Scalar::Base64 => quote! { len += #p::base64_len(#n, #v); },
        Scalar::I32 => quote! { len += #p::int32_len(#n, *#v); },
        Scalar::I64 => quote! { len += #p::int64_len(#n, *#v); },
        Scalar::Bool => quote! { len += #p::bool_len(#n, *#v); },
        Scalar::Time => quote! { len += #p::time_len(#n, ::std::option::Option::Some(#v)); },
        Scalar::MicroTime => quote! { len += #p::micro_len(#n, ::std::option::Option::Some(#v)); },
        Scalar::FieldsV1 => quote! { len += #p::fields_v1_len(#n, #v); },
        Scalar::Message => quote! { len += #p::message_len(#n, #v); },
    }
}

/// What a Go value field whose Rust `Option` is `None` writes: Go's zero value.
fn put_zero(wire: &TokenStream, f: &Field<'_>, scalar: Scalar, len: bool) -> TokenStream {
    let n = f.number;
    let p = quote! { #wire::protobuf };
    let zero = match scalar {
        Scalar::String => quote! { "" },
        Scalar::I32 => quote! { &0i32 },
        Scalar::I64 => quote! { &0i64 },
        Scalar::Bool => quote! { &false },
        // A nil `[]byte` is not written; a zero time is an empty message, as is a zero struct.
        Scalar::Base64 | Scalar::FieldsV1 => return TokenStream::new(),
        Scalar::Time | Scalar::MicroTime => {
            return if len {
                quote! { len += #p::time_len(#n, ::std::option::Option::None); }
            } else {
                quote! { #p::put_time(buf, #n, ::std::option::Option::None); }
            };
        }
        Scalar::Message => {
            return if len {
                quote! { len += #p::empty_len(#n); }
            } else {
                quote! { #p::put_empty(buf, #n); }
            };
        }
    };
    if len {
        put_len(wire, f, scalar, zero)
    } else {
        put(wire, f, scalar, zero)
    }
}

fn encode_or_len(wire: &TokenStream, f: &Field<'_>, len: bool) -> TokenStream {
    let id = ident(f);
    let one = |scalar: Scalar, v: TokenStream| {
        if len {
            put_len(wire, f, scalar, v)
        } else {
            put(wire, f, scalar, v)
        }
    };
    let optional = f.def.presence == Presence::Optional;
    match f.shape {
        Shape::Single(scalar) if !optional => one(scalar, quote! { &self.#id }),
        Shape::Single(scalar) => {
            let some = one(scalar, quote! { v });
            if f.go.pointer || matches!(scalar, Scalar::Base64 | Scalar::FieldsV1) {
                quote! { if let ::std::option::Option::Some(v) = &self.#id { #some } }
            } else {
                let zero = put_zero(wire, f, scalar, len);
                quote! {
                    match &self.#id {
                        ::std::option::Option::Some(v) => { #some }
                        ::std::option::Option::None => { #zero }
                    }
                }
            }
        }
        Shape::Repeated(scalar) => {
            let each = one(scalar, quote! { v });
            let iter = if optional {
                quote! { self.#id.iter().flatten() }
            } else {
                quote! { self.#id.iter() }
            };
            quote! { for v in #iter { #each } }
        }
        Shape::StringMap | Shape::BytesMap => {
            let n = f.number;
            let name = &f.go.json;
            let iter = if optional {
                quote! { self.#id.iter().flatten() }
            } else {
                quote! { self.#id.iter() }
            };
            match (f.shape, len) {
                (Shape::StringMap, true) => {
                    quote! { len += #wire::protobuf::string_map_len(#n, #iter); }
                }
                (Shape::StringMap, false) => {
                    quote! { #wire::protobuf::put_string_map(buf, #n, #iter); }
                }
                (_, true) => quote! { len += #wire::protobuf::bytes_map_len(#n, #iter); },
                (_, false) => quote! { #wire::protobuf::put_bytes_map(buf, #n, #name, #iter)?; },
            }
        }
    }
}

fn encode_field(wire: &TokenStream, f: &Field<'_>) -> TokenStream {
    encode_or_len(wire, f, false)
}

fn len_field(wire: &TokenStream, f: &Field<'_>) -> TokenStream {
    encode_or_len(wire, f, true)
}

/// The `match` arm that reads field `f`.
fn merge_field(wire: &TokenStream, f: &Field<'_>) -> TokenStream {
    let id = ident(f);
    let n = f.number;
    let name = &f.go.json;
    let p = quote! { #wire::protobuf };
    let optional = f.def.presence == Presence::Optional;
    let get = |scalar: Scalar| match scalar {
        Scalar::String => quote! { #p::get_string(wire, buf, decoder)? },
        Scalar::Base64 => quote! { #p::get_base64(wire, buf, decoder)? },
        Scalar::I32 => quote! { #p::get_int32(wire, buf, decoder)? },
        Scalar::I64 => quote! { #p::get_int64(wire, buf, decoder)? },
        Scalar::Bool => quote! { #p::get_bool(wire, buf, decoder)? },
        Scalar::FieldsV1 => quote! { #p::get_fields_v1(wire, buf, decoder)? },
        // A time is read as an `Option` (Go's zero time as `None`).
        Scalar::Time => quote! { #p::get_time(wire, buf, decoder)? },
        Scalar::MicroTime => quote! { #p::get_micro(wire, buf, decoder)? },
        // Handled by the callers.
        Scalar::Message => TokenStream::new(),
    };
    let body = match f.shape {
        Shape::Single(Scalar::Message) => {
            let target = if optional {
                quote! { self.#id.get_or_insert_with(::std::default::Default::default) }
            } else {
                quote! { &mut self.#id }
            };
            quote! { #p::get_message(wire, buf, decoder, #target)?; }
        }
        Shape::Single(time @ (Scalar::Time | Scalar::MicroTime)) => {
            let get = get(time);
            if optional {
                quote! { self.#id = #get; }
            } else {
                quote! { self.#id = #get.unwrap_or_default(); }
            }
        }
        Shape::Single(scalar) => {
            let value = get(scalar);
            if optional {
                quote! { self.#id = ::std::option::Option::Some(#value); }
            } else {
                quote! { self.#id = #value; }
            }
        }
        Shape::Repeated(scalar) => {
            let list = if optional {
                quote! { self.#id.get_or_insert_with(::std::vec::Vec::new) }
            } else {
                quote! { &mut self.#id }
            };
            match scalar {
                Scalar::Message => quote! { #p::get_element(wire, buf, decoder, #list)?; },
                scalar => {
                    let value = get(scalar);
                    let value = if matches!(scalar, Scalar::Time | Scalar::MicroTime) {
                        quote! { #value.unwrap_or_default() }
                    } else {
                        value
                    };
                    quote! {
                        let list = #list;
                        decoder.enter_index(list.len());
                        let value = #value;
                        decoder.leave();
                        list.push(value);
                    }
                }
            }
        }
        Shape::StringMap | Shape::BytesMap => {
            let map = if optional {
                quote! { self.#id.get_or_insert_with(::std::collections::BTreeMap::new) }
            } else {
                quote! { &mut self.#id }
            };
            let entry = if f.shape == Shape::StringMap {
                quote! { #p::get_string_entry(wire, buf, decoder)? }
            } else {
                quote! { #p::get_bytes_entry(wire, buf, decoder)? }
            };
            quote! {
                let (key, value) = #entry;
                #map.insert(key, value);
            }
        }
    };
    quote! {
        #n => {
            decoder.enter(#name);
            #body
            decoder.leave();
        }
    }
}

/// After decoding: a Go value field kept as `Option` becomes what Go's JSON would show. A Go
/// struct value is finished too, so that one the wire left out shows what Go's zero struct
/// shows (`matchingPrecedence: 0` of v1beta2's spec); finishing twice changes nothing.
fn finish_field(wire: &TokenStream, f: &Field<'_>) -> Option<TokenStream> {
    let id = ident(f);
    if f.go.pointer {
        return None;
    }
    if f.def.presence == Presence::Always {
        let value = if f.def.boxed {
            quote! { &mut *self.#id }
        } else {
            quote! { &mut self.#id }
        };
        return matches!(f.shape, Shape::Single(Scalar::Message))
            .then(|| quote! { #wire::protobuf::Message::finish(#value); });
    }
    match f.shape {
        Shape::Single(scalar) if scalar.emptyable() && scalar != Scalar::Base64 => {
            Some(if f.go.omitempty {
                quote! {
                    if self.#id.as_ref().is_some_and(#wire::GoEmpty::is_go_empty) {
                        self.#id = ::std::option::Option::None;
                    }
                }
            } else {
                quote! {
                    if self.#id.is_none() {
                        self.#id = ::std::option::Option::Some(::std::default::Default::default());
                    }
                }
            })
        }
        Shape::Single(Scalar::Message) => Some(quote! {
            if self.#id.is_none() {
                self.#id = ::std::option::Option::Some(::std::default::Default::default());
                if let ::std::option::Option::Some(empty) = &mut self.#id {
                    #wire::protobuf::Message::finish(empty);
                }
            }
        }),
        _ => None,
    }
}

/// Writes field `f` into the JSON object `s` as Go's `encoding/json` does.
fn json_field(wire: &TokenStream, f: &Field<'_>) -> TokenStream {
    let id = ident(f);
    let name = &f.go.json;
    let emptyable = match f.shape {
        Shape::Single(scalar) => scalar.emptyable(),
        Shape::Repeated(_) | Shape::StringMap | Shape::BytesMap => true,
    };
    let write = |v: TokenStream| quote! { s.serialize_field(#name, &#wire::GoOrder(#v))?; };
    let present = |v: TokenStream| {
        let w = write(v.clone());
        if f.go.omitempty && emptyable && !f.go.pointer {
            quote! { if !#wire::GoEmpty::is_go_empty(#v) { #w } }
        } else {
            w
        }
    };
    if f.def.presence == Presence::Always {
        return present(quote! { &value.#id });
    }
    let some = present(quote! { v });
    // `None`: a nil pointer, nil slice or map, zero time, or a Go value Rust leaves out.
    let none = if f.go.omitempty && (f.go.pointer || emptyable) || f.go.omitzero {
        TokenStream::new()
    } else {
        match f.shape {
            _ if f.go.pointer => quote! { s.serialize_field(#name, &())?; },
            Shape::Repeated(_) | Shape::StringMap | Shape::BytesMap => {
                quote! { s.serialize_field(#name, &())?; }
            }
            Shape::Single(Scalar::Time | Scalar::MicroTime | Scalar::FieldsV1 | Scalar::Base64) => {
                quote! { s.serialize_field(#name, &())?; }
            }
            Shape::Single(_) => write(quote! { &value.#id.clone().unwrap_or_default() }),
        }
    };
    quote! {
        match &value.#id {
            ::std::option::Option::Some(v) => { #some }
            ::std::option::Option::None => { #none }
        }
    }
}
