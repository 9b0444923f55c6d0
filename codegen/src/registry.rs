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
    let kind_info = kind_info_type(settings, wire.as_ref());
    let kinds = kinds_table(space, settings, wire.as_ref());
    Ok(quote! { #kind_info #kinds })
}

/// The `KindInfo` type.
fn kind_info_type(settings: &Settings, wire: Option<&TokenStream>) -> TokenStream {
    let json_schema = settings.schemars.then(|| {
        quote! {
            /// The JSON Schema (draft 2020-12) schemars derives for the type.
            pub json_schema: fn() -> ::schemars::Schema,
        }
    });
    let wire = wire.map(|wire| {
        quote! {
            /// kube-apiserver's encodings of the kind (protobuf, Go-order JSON), when its
            /// schema has a Go layout.
            pub wire: ::std::option::Option<#wire::Codec>,
        }
    });
    quote! {
        /// One kind of the generated API, as [`KINDS`] lists it.
        #[derive(Debug, Clone, Copy)]
        pub struct KindInfo {
            /// API group, empty for the legacy core group.
            pub group: &'static str,
            /// Version inside the group.
            pub version: &'static str,
            /// The kind.
            pub kind: &'static str,
            /// `group/version`, or only the version for the core group.
            pub api_version: &'static str,
            /// For a resource: the plural name used in URLs.
            pub plural: ::std::option::Option<&'static str>,
            /// For a resource: whether it lives in a namespace.
            pub namespaced: bool,
            /// For a resource with a list kind: that kind.
            pub list_kind: ::std::option::Option<&'static str>,
            /// For a list kind: the kind of its items.
            pub item_kind: ::std::option::Option<&'static str>,
            /// For a resource: its subresources (`status`, `scale`), sorted.
            pub subresources: &'static [&'static str],
            /// For a custom resource with a `scale` subresource: where its replicas are.
            pub scale: ::std::option::Option<ScaleSubresource>,
            #json_schema
            #wire
        }
        /// Where a custom resource's `scale` subresource reads replicas from.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct ScaleSubresource {
            /// JSON path of the desired replicas, such as `.spec.replicas`.
            pub spec_replicas_path: &'static str,
            /// JSON path of the observed replicas, such as `.status.replicas`.
            pub status_replicas_path: &'static str,
            /// JSON path of the label selector, if any.
            pub label_selector_path: ::std::option::Option<&'static str>,
        }
        impl KindInfo {
            /// Whether this is a list kind.
            pub fn is_list(&self) -> bool {
                self.item_kind.is_some()
            }
        }
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
        let json_schema = settings
            .schemars
            .then(|| quote! { json_schema: ::apfkit_runtime::__private::json_schema::<#ty>, });
        let wire = wire.map(|wire| {
            if def.go.is_some() {
                quote! { wire: ::std::option::Option::Some(#wire::Codec::of::<#ty>()), }
            } else {
                quote! { wire: ::std::option::Option::None, }
            }
        });
        let subresources = &def.subresources;
        let scale = match &def.scale {
            Some(scale) => {
                let spec = &scale.spec_replicas;
                let status = &scale.status_replicas;
                let selector = match &scale.label_selector {
                    Some(path) => quote! { ::std::option::Option::Some(#path) },
                    None => quote! { ::std::option::Option::None },
                };
                quote! {
                    ::std::option::Option::Some(ScaleSubresource {
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
                #json_schema
                #wire
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
