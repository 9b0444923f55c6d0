//! The kind registry of a generated tree: one `KindInfo` per kind (resources and their lists),
//! so that programs can list, look up and export the kinds without a hand-written table.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::error::Result;
use crate::settings::Settings;
use crate::typespace::{TypeBody, TypeSpace};

/// The `KindInfo` type and the `KINDS` table, for the root module; nothing for a tree without
/// kinds (such as a hub).
pub(crate) fn registry(space: &TypeSpace, settings: &Settings) -> Result<TokenStream> {
    let has_kinds = space
        .entries
        .values()
        .any(|e| matches!(&e.body, TypeBody::Struct(s) if s.kind.is_some()));
    if !has_kinds {
        return Ok(TokenStream::new());
    }
    let wire = settings.wire_path()?;
    let kind_info = kind_info_type(wire.as_ref());
    let kinds = kinds_table(space, settings, wire.as_ref());
    Ok(quote! { #kind_info #kinds })
}

/// The `KindInfo` type: apfkit-runtime's, with the tree's wire encodings.
fn kind_info_type(wire: Option<&TokenStream>) -> TokenStream {
    let codec = match wire {
        Some(wire) => quote! { #wire::KindEncodings },
        None => quote! { () },
    };
    quote! {
        /// One kind of the generated API, as [`KINDS`] lists it.
        pub type KindInfo = ::apfkit_runtime::kind::KindInfo<#codec>;
    }
}

/// The `KINDS` table, in the order of the definitions (by definition name).
fn kinds_table(space: &TypeSpace, settings: &Settings, wire: Option<&TokenStream>) -> TokenStream {
    let mut rows = Vec::new();
    for entry in space.entries.values() {
        let TypeBody::Struct(def) = &entry.body else {
            continue;
        };
        let Some(gvk) = &def.kind else {
            continue;
        };
        let (group, version, kind) = (&gvk.group, &gvk.version, &gvk.kind);
        let api_version = crate::names::api_version(group, version);
        let segments = entry.module.iter().map(|m| format_ident!("{}", m));
        let name = format_ident!("{}", entry.name);
        let ty = quote! { self #(::#segments)* :: #name };
        let (plural, namespaced) = match &def.resource {
            Some(resource) => {
                let plural = &resource.plural;
                (
                    quote! { ::std::option::Option::Some(#plural) },
                    resource.namespaced,
                )
            }
            None => (quote! { ::std::option::Option::None }, false),
        };
        let list_kind = list_kind_of(space, &entry.definition);
        let list_kind = match list_kind {
            Some(list) if def.resource.is_some() => quote! { ::std::option::Option::Some(#list) },
            _ => quote! { ::std::option::Option::None },
        };
        let item_kind = match def
            .list_item
            .as_ref()
            .and_then(|item| item_kind(space, item))
        {
            Some(item) => quote! { ::std::option::Option::Some(#item) },
            None => quote! { ::std::option::Option::None },
        };
        let schema = if settings.schemars {
            quote! { ::std::option::Option::Some(::apfkit_runtime::__private::json_schema_value::<#ty>) }
        } else {
            quote! { ::std::option::Option::None }
        };
        let wire = match wire {
            Some(wire) if def.go.is_some() => {
                quote! { ::std::option::Option::Some(#wire::KindEncodings::of::<#ty>()) }
            }
            _ => quote! { ::std::option::Option::None },
        };
        let subresources = &def.subresources;
        let scale = match &def.scale {
            Some(scale) => {
                let borrowed = |path: &str| quote! { ::std::borrow::Cow::Borrowed(#path) };
                let spec = borrowed(&scale.spec_replicas_path);
                let status = borrowed(&scale.status_replicas_path);
                let selector = match &scale.label_selector_path {
                    Some(path) => {
                        let path = borrowed(path);
                        quote! { ::std::option::Option::Some(#path) }
                    }
                    None => quote! { ::std::option::Option::None },
                };
                quote! {
                    ::std::option::Option::Some(::apfkit_runtime::kind::ScaleSubresource {
                        spec_replicas_path: #spec,
                        status_replicas_path: #status,
                        label_selector_path: #selector,
                    })
                }
            }
            None => quote! { ::std::option::Option::None },
        };
        rows.push(quote! {
            KindInfo {
                group: #group,
                version: #version,
                kind: #kind,
                api_version: #api_version,
                plural: #plural,
                namespaced: #namespaced,
                list_kind: #list_kind,
                item_kind: #item_kind,
                subresources: &[#(#subresources),*],
                scale: #scale,
                schema: #schema,
                wire: #wire,
            },
        });
    }
    quote! {
        /// Every kind of the generated API (resources and list kinds), by definition name.
        pub static KINDS: &[KindInfo] = &[#(#rows)*];
    }
}

/// The list kind whose items are the kind `item_definition`, as the CRD or document names it.
pub(crate) fn list_kind_of(space: &TypeSpace, item_definition: &str) -> Option<String> {
    space.entries.values().find_map(|e| match &e.body {
        TypeBody::Struct(s) if s.list_item.as_deref() == Some(item_definition) => {
            s.kind.as_ref().map(|k| k.kind.clone())
        }
        _ => None,
    })
}

/// The kind of the definition a list holds.
fn item_kind(space: &TypeSpace, definition: &str) -> Option<String> {
    match &space.entries.get(definition)?.body {
        TypeBody::Struct(def) => def.kind.as_ref().map(|gvk| gvk.kind.clone()),
        TypeBody::Newtype(_) | TypeBody::Enum(_) => None,
    }
}
