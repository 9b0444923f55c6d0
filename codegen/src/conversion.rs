//! Conversion code between two type spaces: the Rust counterpart of Kubernetes' conversion-gen.
//!
//! For each pair of structs (an external version's type and the hub type of the same name),
//! fields whose wire names and types correspond are copied by generated code through the
//! `ToHub`/`FromHub` traits of the target crate. Fields that do not correspond must be handled
//! by a registered hand-written hook, which runs after the generated copy; a pair with such
//! fields and no hook is an error, so nothing is dropped silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::error::{Error, Result};
use crate::tree::{module_tree, render};
use crate::typespace::{EnumDef, FieldDef, FieldType, TypeBody, TypeEntry, TypeSpace};

/// Which way a conversion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// External version → hub.
    ToHub,
    /// Hub → external version.
    FromHub,
}

/// One side of the conversion: a type space and the Rust path of its generated root.
#[derive(Debug)]
pub struct Side<'a> {
    /// The types.
    pub space: &'a TypeSpace,
    /// Rust path of the module holding the generated root (`::apfkit_types`, `crate::hub`).
    pub root: &'a str,
}

impl Side<'_> {
    /// The Rust path of `segments` (empty ones skipped: a type of the root module) under the
    /// side's root.
    fn path_to(&self, segments: &[&str]) -> Result<syn::Path> {
        let mut text = self.root.to_owned();
        for segment in segments.iter().filter(|s| !s.is_empty()) {
            text.push_str("::");
            text.push_str(segment);
        }
        syn::parse_str(&text).map_err(|err| Error::Internal {
            module: text.clone(),
            message: err.to_string(),
        })
    }
}

/// What to pair and which hooks exist.
#[derive(Debug, Default)]
pub struct ConversionSettings {
    /// (external definition prefix, hub definition prefix, output module path).
    pub pairs: Vec<(String, String, Vec<String>)>,
    /// (external definition, direction) → path of `fn(&Source, &mut Target)`, called after
    /// the generated copy of the fields both sides share.
    pub hooks: BTreeMap<(String, Direction), String>,
    /// (external definition, direction) → path of `fn(&mut Source)`, called before the
    /// generated copy: it moves what has no counterpart in this type to where the copy carries
    /// it (a field only the hub has, into an annotation of the metadata).
    pub prepare_hooks: BTreeMap<(String, Direction), String>,
    /// External definition → path of `fn(&Hub) -> bool`: whether the hooks of that type give
    /// a hub value back unchanged (hub → external → hub), for what the generated code does not
    /// see (fields without counterpart). Without one, a type with hooks answers `false` to
    /// `FromHub::round_trips`, which is always safe, only slower.
    pub round_trip_checks: BTreeMap<String, String>,
    /// Path of the `ToHub` trait.
    pub to_hub_trait: String,
    /// Path of the `FromHub` trait.
    pub from_hub_trait: String,
    /// First line of every generated file.
    pub header: String,
    /// The dynamic scheme generated in the root module, if any.
    pub scheme: Option<DynamicScheme>,
}

/// The dynamic scheme over the paired kinds: in both forms, a `HubObject` enum with one variant
/// per hub kind, and one codec per served kind of every paired version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicScheme {
    /// `pub static SCHEME: apfkit_runtime::scheme::Scheme<HubObject>`, whose codecs decode,
    /// convert and default through the generated code. Needs `apfkit-runtime`, whose traits the
    /// generated types implement.
    Runtime,
    /// A module providing `Codec` (with `const fn of::<T>()`) and `HubKind` (`wrap`, `take`),
    /// in a crate of its own: its registry (`HubObject` and `CODECS`, a slice of those codecs)
    /// is emitted apart from the conversions, by [`emit_scheme`] (`ApiFiles::scheme`).
    Custom(String),
}

/// Generates one file per pair (plus `mod.rs` files), by path relative to the output root.
pub fn emit_conversions(
    external: &Side<'_>,
    hub: &Side<'_>,
    settings: &ConversionSettings,
) -> Result<BTreeMap<PathBuf, String>> {
    let mut modules: BTreeMap<Vec<String>, Vec<TokenStream>> = BTreeMap::new();
    // Modules whose `round_trips` bodies call the field helper.
    let mut with_helper = BTreeSet::new();
    for (external_prefix, hub_prefix, module) in &settings.pairs {
        let items = modules.entry(module.clone()).or_default();
        // A version that is its own hub converts by the identity.
        let identity = external_prefix == hub_prefix && same_types(external, hub);
        for (definition, entry) in external.space.entries.range(external_prefix.clone()..) {
            let Some(rest) = definition.strip_prefix(external_prefix.as_str()) else {
                break;
            };
            if identity {
                if is_resource(entry) {
                    items.push(identity_impls(external, entry, settings)?);
                }
                continue;
            }
            let hub_definition = format!("{hub_prefix}{rest}");
            let Some(hub_entry) = hub.space.entries.get(&hub_definition) else {
                return Err(Error::Settings {
                    setting: format!("hub of {}", module.join("::")),
                    message: format!("{definition} has no hub type {hub_definition}"),
                });
            };
            let pair = Pair {
                external,
                hub,
                settings,
                external_prefix,
                hub_prefix,
            };
            let (impls, uses_helper) = pair.impls(entry, hub_entry)?;
            items.push(impls);
            if uses_helper {
                with_helper.insert(module.clone());
            }
        }
    }
    let from_trait = parse_path("from_hub_trait", &settings.from_hub_trait)?;
    for module in with_helper {
        modules.entry(module).or_default().push(quote! {
            /// Whether a converted field's hub value round-trips, by the field's external
            /// type, named by `_field` (which picks it out of the external type) so that it is
            /// inferred.
            fn field_round_trips<S, F: #from_trait>(
                hub: &<F as #from_trait>::Hub,
                _field: fn(&S) -> &F,
            ) -> bool {
                <F as #from_trait>::round_trips(hub)
            }
        });
    }
    // `HubObject` and its `HubKind` impls go with the conversions (runtime's traits on the hub
    // types, which only their crate may implement); a custom scheme's codec list lives in the
    // scheme's own crate: see `emit_scheme`.
    if let Some(scheme) = &settings.scheme {
        let served = served_kinds(external, hub, settings)?;
        let mut registry = hub_registry(hub, &served)?;
        if *scheme == DynamicScheme::Runtime {
            registry.extend(codec_list(scheme, &served)?);
        }
        modules.entry(Vec::new()).or_default().push(registry);
    }
    let tree = module_tree(modules.keys());
    let mut files = BTreeMap::new();
    for (module, children) in &tree {
        let has_children = !children.is_empty();
        let children = children.iter().map(|c| format_ident!("{}", c));
        let items = modules.get(module).cloned().unwrap_or_default();
        let tokens = quote! {
            #![allow(clippy::all)]
            #(pub mod #children;)*
            #(#items)*
        };
        let (path, text) = render(module, has_children, &settings.header, tokens)?;
        files.insert(path, text);
    }
    Ok(files)
}

/// For a [`DynamicScheme::Custom`] scheme: its codec list (`CODECS`) as one `mod.rs`, for the
/// crate that holds the scheme, which names the types by the external side's root (the
/// conversions hold `HubObject`). Empty for other settings (a runtime scheme is emitted with
/// the conversions).
pub fn emit_scheme(
    external: &Side<'_>,
    hub: &Side<'_>,
    settings: &ConversionSettings,
) -> Result<BTreeMap<PathBuf, String>> {
    let Some(scheme @ DynamicScheme::Custom(_)) = &settings.scheme else {
        return Ok(BTreeMap::new());
    };
    let served = served_kinds(external, hub, settings)?;
    // The conversions carry `HubObject`; its checks (one hub kind per name) hold here too.
    hub_registry(hub, &served)?;
    let registry = codec_list(scheme, &served)?;
    let tokens = quote! {
        #![allow(clippy::all)]
        #registry
    };
    let (path, text) = render(&[], false, &settings.header, tokens)?;
    Ok(BTreeMap::from([(path, text)]))
}

/// Every served kind (a resource) of the paired versions, by the path of its external type,
/// with its hub entry, in the order of the pairs.
fn served_kinds<'a>(
    external: &Side<'a>,
    hub: &Side<'a>,
    settings: &ConversionSettings,
) -> Result<Vec<(syn::Path, &'a TypeEntry)>> {
    let mut served = Vec::new();
    for (external_prefix, hub_prefix, _) in &settings.pairs {
        let identity = external_prefix == hub_prefix && same_types(external, hub);
        for (definition, entry) in external.space.entries.range(external_prefix.clone()..) {
            let Some(rest) = definition.strip_prefix(external_prefix.as_str()) else {
                break;
            };
            if !is_resource(entry) {
                continue;
            }
            let hub_entry = if identity {
                entry
            } else {
                match hub.space.entries.get(&format!("{hub_prefix}{rest}")) {
                    Some(hub_entry) => hub_entry,
                    None => continue,
                }
            };
            served.push((Pair::path(external, entry)?, hub_entry));
        }
    }
    Ok(served)
}

/// A kind served as a resource (not a list and not a nested type).
fn is_resource(entry: &TypeEntry) -> bool {
    matches!(&entry.body, TypeBody::Struct(def) if def.kind.is_some() && def.resource.is_some())
}

/// Whether both sides are the same types at the same Rust path (a version as its own hub,
/// shared definitions such as meta/v1).
fn same_types(external: &Side<'_>, hub: &Side<'_>) -> bool {
    std::ptr::eq(external.space, hub.space) && external.root == hub.root
}

/// `ToHub`/`FromHub` of a hub version's kind: the object itself.
fn identity_impls(
    side: &Side<'_>,
    entry: &TypeEntry,
    settings: &ConversionSettings,
) -> Result<TokenStream> {
    let path = Pair::path(side, entry)?;
    let to_trait = parse_path("to_hub_trait", &settings.to_hub_trait)?;
    let from_trait = parse_path("from_hub_trait", &settings.from_hub_trait)?;
    Ok(quote! {
        impl #to_trait for #path {
            type Hub = #path;
            fn into_hub(self) -> #path { self }
        }
        impl #from_trait for #path {
            type Hub = #path;
            fn from_owned_hub(hub: #path) -> Self { hub }
            fn round_trips(_: &#path) -> bool { true }
        }
    })
}

/// A setting that must be a Rust path.
fn parse_path(setting: &str, text: &str) -> Result<syn::Path> {
    syn::parse_str(text).map_err(|err| Error::Settings {
        setting: setting.to_owned(),
        message: format!("{text:?} is not a Rust path: {err}"),
    })
}

/// `HubObject` (one variant per hub kind of the served kinds), its `apfkit_runtime::Object`
/// impl and each hub kind's `apfkit_runtime::HubKind`.
fn hub_registry(hub: &Side<'_>, served: &[(syn::Path, &TypeEntry)]) -> Result<TokenStream> {
    let mut hub_kinds: BTreeMap<&str, &TypeEntry> = BTreeMap::new();
    for (_, entry) in served {
        if let Some(other) = hub_kinds.insert(&entry.name, entry)
            && other.definition != entry.definition
        {
            return Err(Error::Settings {
                setting: "scheme".to_owned(),
                message: format!(
                    "hub kinds {} and {} share the name {}; one HubObject cannot hold both",
                    other.definition, entry.definition, entry.name
                ),
            });
        }
    }
    let mut variants = Vec::new();
    let mut hub_paths = Vec::new();
    for (name, entry) in &hub_kinds {
        let variant = format_ident!("{}", name);
        let path = Pair::path(hub, entry)?;
        let doc = format!(" The hub {name}.");
        variants.push(quote! {
            #[doc = #doc]
            #variant(#path),
        });
        hub_paths.push((variant, path));
    }
    let object_impl = object_impl(hub, &hub_kinds);
    let hub_kinds = hub_kind_impls(&hub_paths);
    Ok(quote! {
        /// A hub object of any kind.
        #[derive(Debug, Clone, PartialEq)]
        pub enum HubObject {
            #(#variants)*
        }
        #object_impl
        #hub_kinds
    })
}

/// The codec of every served kind (given by the path of its external type): `CODECS` for a
/// custom scheme, `SCHEME` for apfkit-runtime's.
fn codec_list(scheme: &DynamicScheme, served: &[(syn::Path, &TypeEntry)]) -> Result<TokenStream> {
    match scheme {
        DynamicScheme::Custom(runtime) => {
            let runtime = parse_path("scheme", runtime)?;
            let codecs = served
                .iter()
                .map(|(external, _)| quote! { #runtime::Codec::of::<#external>(), });
            Ok(quote! {
                /// Every served kind of every version, in the order of the pairs.
                pub static CODECS: &[#runtime::Codec] = &[#(#codecs)*];
            })
        }
        DynamicScheme::Runtime => {
            let codecs = served.iter().map(|(external, _)| {
                quote! { ::apfkit_runtime::scheme::Codec::of::<#external>(), }
            });
            Ok(quote! {
                /// Every served kind of every version, with conversion through the hub.
                pub static SCHEME: ::apfkit_runtime::scheme::Scheme<HubObject> =
                    ::apfkit_runtime::scheme::Scheme::new(&[#(#codecs)*]);
            })
        }
    }
}

/// k8s-openapi's `ObjectMeta`, which `apfkit_runtime::Object` hands out.
const OBJECT_META: &str = "::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta";

/// `apfkit_runtime::Object` for `HubObject`: each variant's kind and metadata. Nothing when a
/// hub kind's `metadata` is not k8s-openapi's `ObjectMeta` (a tree generated without
/// k8s-openapi).
fn object_impl(hub: &Side<'_>, hub_kinds: &BTreeMap<&str, &TypeEntry>) -> TokenStream {
    let mut kinds = Vec::new();
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    for (name, entry) in hub_kinds {
        let TypeBody::Struct(def) = &entry.body else {
            return TokenStream::new();
        };
        let Some(metadata) = def.fields.iter().find(|f| f.wire == "metadata") else {
            return TokenStream::new();
        };
        let FieldType::Named(meta) = &metadata.ty else {
            return TokenStream::new();
        };
        if hub.space.replaced.get(meta).map(String::as_str) != Some(OBJECT_META) {
            return TokenStream::new();
        }
        let variant = format_ident!("{}", name);
        let field = format_ident!("{}", metadata.rust);
        // A variant is named after its kind.
        let kind = *name;
        kinds.push(quote! { HubObject::#variant(_) => #kind, });
        match metadata.presence {
            crate::typespace::Presence::Always => {
                reads.push(quote! { HubObject::#variant(object) => &object.#field, });
                writes.push(quote! { HubObject::#variant(object) => &mut object.#field, });
            }
            crate::typespace::Presence::Optional => return TokenStream::new(),
        }
    }
    quote! {
        impl ::apfkit_runtime::Object for HubObject {
            fn kind(&self) -> &'static str {
                match self { #(#kinds)* }
            }
            fn metadata(&self) -> &::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                match self { #(#reads)* }
            }
            fn metadata_mut(&mut self) -> &mut ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                match self { #(#writes)* }
            }
        }
    }
}

/// `apfkit_runtime::HubKind` for each hub kind: how `HubObject` holds it.
fn hub_kind_impls(hub_paths: &[(proc_macro2::Ident, syn::Path)]) -> TokenStream {
    let impls = hub_paths.iter().map(|(variant, path)| {
        // A variant is named after its kind.
        let kind = variant.to_string();
        quote! {
            impl ::apfkit_runtime::HubKind for #path {
                type Object = HubObject;
                const KIND: &'static str = #kind;
                fn wrap(self) -> HubObject {
                    HubObject::#variant(self)
                }
                #[allow(unreachable_patterns)]
                fn take(object: HubObject) -> ::std::option::Option<Self> {
                    match object {
                        HubObject::#variant(inner) => ::std::option::Option::Some(inner),
                        _ => ::std::option::Option::None,
                    }
                }
                fn holds(object: &HubObject) -> bool {
                    ::std::matches!(object, HubObject::#variant(_))
                }
            }
        }
    });
    quote! { #(#impls)* }
}

struct Pair<'a> {
    external: &'a Side<'a>,
    hub: &'a Side<'a>,
    settings: &'a ConversionSettings,
    external_prefix: &'a str,
    hub_prefix: &'a str,
}

impl Pair<'_> {
    fn path(side: &Side<'_>, entry: &TypeEntry) -> Result<syn::Path> {
        side.path_to(&[&entry.module.join("::"), &entry.name])
    }

    /// Whether two named types are one Rust type: both replaced by the same path, or one
    /// definition of one type space (meta/v1 types, a version that is its own hub).
    fn same_named(&self, external: &str, hub: &str) -> bool {
        let replaced = |space: &TypeSpace, d: &str| space.replaced.get(d).cloned();
        match (
            replaced(self.external.space, external),
            replaced(self.hub.space, hub),
        ) {
            (Some(a), Some(b)) => a == b,
            (None, None) => external == hub && same_types(self.external, self.hub),
            _ => false,
        }
    }

    /// Whether an external type and a hub type correspond (so a trait call converts one to the other).
    fn corresponds(&self, external: &FieldType, hub: &FieldType) -> bool {
        match (external, hub) {
            (FieldType::Named(e), FieldType::Named(h)) => {
                let generated = |space: &TypeSpace, d: &str| !space.replaced.contains_key(d);
                self.same_named(e, h)
                    || (generated(self.external.space, e)
                        && generated(self.hub.space, h)
                        && e.strip_prefix(self.external_prefix)
                            .is_some_and(|rest| h.strip_prefix(self.hub_prefix) == Some(rest)))
            }
            (FieldType::Vec(e), FieldType::Vec(h)) | (FieldType::Map(e), FieldType::Map(h)) => {
                self.corresponds(e, h)
            }
            (e, h) => {
                e == h
                    && !matches!(
                        e,
                        FieldType::Named(_) | FieldType::Vec(_) | FieldType::Map(_)
                    )
            }
        }
    }

    /// Whether both sides of a corresponding field are the same Rust type (meta/v1 types,
    /// scalars), which is moved as it is rather than converted.
    fn identical(&self, external: &FieldType, hub: &FieldType) -> bool {
        match (external, hub) {
            (FieldType::Named(e), FieldType::Named(h)) => self.same_named(e, h),
            (FieldType::Vec(e), FieldType::Vec(h)) | (FieldType::Map(e), FieldType::Map(h)) => {
                self.identical(e, h)
            }
            (e, h) => self.corresponds(e, h),
        }
    }

    fn field_corresponds(
        &self,
        source: &FieldDef,
        target: &FieldDef,
        direction: Direction,
    ) -> bool {
        let (e, h) = match direction {
            Direction::ToHub => (source, target),
            Direction::FromHub => (target, source),
        };
        e.presence == h.presence && e.boxed == h.boxed && self.corresponds(&e.ty, &h.ty)
    }

    /// The `ToHub` and `FromHub` impls of a pair, and whether they call the module's
    /// `field_round_trips`.
    fn impls(&self, external: &TypeEntry, hub: &TypeEntry) -> Result<(TokenStream, bool)> {
        let external_path = Self::path(self.external, external)?;
        let hub_path = Self::path(self.hub, hub)?;
        let (to_hub, to_mut) = self.function(external, hub, Direction::ToHub)?;
        let (from_hub, from_mut) = self.function(hub, external, Direction::FromHub)?;
        let to_self = if to_mut {
            quote! { mut self }
        } else {
            quote! { self }
        };
        let from_param = if from_mut {
            quote! { mut hub }
        } else {
            quote! { hub }
        };
        let to_trait: syn::Path =
            syn::parse_str(&self.settings.to_hub_trait).map_err(|e| self.internal(e))?;
        let from_trait: syn::Path =
            syn::parse_str(&self.settings.from_hub_trait).map_err(|e| self.internal(e))?;
        let (round_trips, uses_helper) = self.round_trips(external, hub, &hub_path)?;
        let impls = quote! {
            impl #to_trait for #external_path {
                type Hub = #hub_path;
                fn into_hub(#to_self) -> #hub_path { #to_hub }
            }
            impl #from_trait for #external_path {
                type Hub = #hub_path;
                fn from_owned_hub(#from_param: #hub_path) -> Self { #from_hub }
                fn round_trips(hub: &#hub_path) -> bool { #round_trips }
            }
        };
        Ok((impls, uses_helper))
    }

    /// The body of `FromHub::round_trips` for a pair: the conjunction of each converted
    /// field's own answer (fields moved as they are always come back), the registered check of
    /// a type with hooks (or `false` without one), and for an enum whose hub side keeps
    /// unlisted values, that the value is not one the way back would turn into a listed one.
    /// Also whether the body calls the module's `field_round_trips`.
    fn round_trips(
        &self,
        external: &TypeEntry,
        hub: &TypeEntry,
        hub_path: &syn::Path,
    ) -> Result<(TokenStream, bool)> {
        let unsure = || Ok((quote! { let _ = hub; false }, false));
        let definition = &external.definition;
        let hooked = [Direction::ToHub, Direction::FromHub]
            .into_iter()
            .any(|direction| {
                let key = (definition.clone(), direction);
                self.settings.hooks.contains_key(&key)
                    || self.settings.prepare_hooks.contains_key(&key)
            });
        let mut checks = Vec::new();
        if hooked {
            let Some(check) = self.settings.round_trip_checks.get(definition) else {
                return unsure();
            };
            let check: syn::Path = syn::parse_str(check).map_err(|e| self.internal(e))?;
            checks.push(quote! { #check(hub) });
        }
        // A field converted through the trait answers for itself; the closure names the
        // external field so that its type, which this generator does not spell, is inferred.
        let mut fields = Vec::new();
        let mut converted = |hub_field: TokenStream, external_field: TokenStream| {
            fields.push(quote! {
                field_round_trips(&hub.#hub_field, |external: &Self| &external.#external_field)
            });
        };
        match (&hub.body, &external.body) {
            (TypeBody::Newtype(h), TypeBody::Newtype(e)) if self.corresponds(e, h) => {
                if !self.identical(e, h) {
                    converted(quote! { 0 }, quote! { 0 });
                }
            }
            (TypeBody::Struct(h), TypeBody::Struct(e)) => {
                for external_field in &e.fields {
                    let hub_field = h.fields.iter().find(|f| {
                        f.wire == external_field.wire
                            && self.field_corresponds(f, external_field, Direction::FromHub)
                    });
                    if let Some(hub_field) = hub_field
                        && !self.identical(&external_field.ty, &hub_field.ty)
                    {
                        let h = format_ident!("{}", hub_field.rust);
                        let e = format_ident!("{}", external_field.rust);
                        converted(quote! { #h }, quote! { #e });
                    }
                }
            }
            (TypeBody::Enum(h), TypeBody::Enum(_)) => {
                if let Some(other) = &h.other
                    && !h.variants.is_empty()
                {
                    let other = format_ident!("{}", other);
                    let listed = h.variants.iter().map(|v| &v.wire);
                    checks.push(quote! {
                        !matches!(hub, #hub_path::#other(value) if matches!(value.as_str(), #(#listed)|*))
                    });
                }
            }
            _ => return unsure(),
        }
        let uses_helper = !fields.is_empty();
        checks.extend(fields);
        let body = if checks.is_empty() {
            quote! { let _ = hub; true }
        } else {
            quote! { #(#checks)&&* }
        };
        Ok((body, uses_helper))
    }

    fn internal(&self, err: syn::Error) -> Error {
        Error::Internal {
            module: "conversion".to_owned(),
            message: err.to_string(),
        }
    }

    /// The body converting `source` (`self` or `hub`, owned) into `target`, and whether the
    /// input must be `mut`. Corresponding fields are moved. With a hook, they are moved out with
    /// `mem::take`, so the hook still gets the whole source: it reads only the fields that
    /// have no counterpart, and finds the others in the target.
    fn function(
        &self,
        source: &TypeEntry,
        target: &TypeEntry,
        direction: Direction,
    ) -> Result<(TokenStream, bool)> {
        let (input, method, trait_path) = match direction {
            Direction::ToHub => (
                quote! { self },
                quote! { into_hub },
                &self.settings.to_hub_trait,
            ),
            Direction::FromHub => (
                quote! { hub },
                quote! { from_owned_hub },
                &self.settings.from_hub_trait,
            ),
        };
        let trait_path: syn::Path = syn::parse_str(trait_path).map_err(|e| self.internal(e))?;
        let external_definition = match direction {
            Direction::ToHub => &source.definition,
            Direction::FromHub => &target.definition,
        };
        let hook = self
            .settings
            .hooks
            .get(&(external_definition.clone(), direction));
        let prepare = match self
            .settings
            .prepare_hooks
            .get(&(external_definition.clone(), direction))
        {
            Some(path) if matches!(source.body, TypeBody::Struct(_)) => {
                let path: syn::Path = syn::parse_str(path).map_err(|e| self.internal(e))?;
                Some(quote! { #path(&mut #input); })
            }
            Some(_) => {
                return Err(Error::Settings {
                    setting: format!("prepare hook of {external_definition}"),
                    message: "only struct types have prepare hooks".to_owned(),
                });
            }
            None => None,
        };
        let call = |value: TokenStream| quote! { #trait_path::#method(#value) };
        match (&source.body, &target.body) {
            (TypeBody::Newtype(s), TypeBody::Newtype(t))
                if self.corresponds_directed(s, t, direction) =>
            {
                let target_path = self.target_path(target, direction)?;
                let value = call(quote! { #input.0 });
                Ok((quote! { #target_path(#value) }, false))
            }
            (TypeBody::Struct(s), TypeBody::Struct(t)) => {
                let target_path = self.target_path(target, direction)?;
                let mut fields = Vec::new();
                let mut manual = Vec::new();
                // Whether a field is moved out of the input with `mem::take` (for a hook).
                let mut takes = false;
                for target_field in &t.fields {
                    let ident = format_ident!("{}", target_field.rust);
                    let source_field = s.fields.iter().find(|f| f.wire == target_field.wire);
                    match source_field {
                        Some(sf) if self.field_corresponds(sf, target_field, direction) => {
                            let source_ident = format_ident!("{}", sf.rust);
                            let moved = if hook.is_some() {
                                takes = true;
                                quote! { ::std::mem::take(&mut #input.#source_ident) }
                            } else {
                                quote! { #input.#source_ident }
                            };
                            let value = if self.identical(&sf.ty, &target_field.ty) {
                                moved
                            } else {
                                call(moved)
                            };
                            fields.push(quote! { #ident: #value, });
                        }
                        _ => {
                            manual.push(target_field.wire.clone());
                            fields.push(quote! { #ident: ::std::default::Default::default(), });
                        }
                    }
                }
                let unread: Vec<&str> = s
                    .fields
                    .iter()
                    .filter(|sf| {
                        !t.fields.iter().any(|tf| {
                            tf.wire == sf.wire && self.field_corresponds(sf, tf, direction)
                        })
                    })
                    .map(|sf| sf.wire.as_str())
                    .collect();
                match hook {
                    Some(hook) => {
                        let hook: syn::Path = syn::parse_str(hook).map_err(|e| self.internal(e))?;
                        Ok((
                            quote! {
                                #prepare
                                let mut out = #target_path { #(#fields)* };
                                #hook(&#input, &mut out);
                                out
                            },
                            takes || prepare.is_some(),
                        ))
                    }
                    None if manual.is_empty() && unread.is_empty() => Ok((
                        quote! { #prepare #target_path { #(#fields)* } },
                        prepare.is_some(),
                    )),
                    None => Err(Error::Settings {
                        setting: format!("hooks of {} → {}", source.definition, target.definition),
                        message: format!(
                            "fields without counterpart need a conversion hook ({direction:?}): target {manual:?}, source {unread:?}"
                        ),
                    }),
                }
            }
            (TypeBody::Enum(s), TypeBody::Enum(t)) => {
                let target_path = self.target_path(target, direction)?;
                let source_path = match direction {
                    Direction::ToHub => Self::path(self.external, source)?,
                    Direction::FromHub => Self::path(self.hub, source)?,
                };
                self.enum_function(
                    (source, s, &source_path),
                    (target, t, &target_path),
                    &input,
                    hook,
                )
            }
            _ => Err(Error::Settings {
                setting: format!("hub of {} → {}", source.definition, target.definition),
                message: "the two types have different shapes".to_owned(),
            }),
        }
    }

    /// Converts an enum value by its wire string: each listed value to the target's variant
    /// of the same string, an unlisted one (kept by an open enum) to the target's catch-all.
    /// A value the target cannot hold needs a hook, which gets the source and a target preset
    /// to the matching variant (or the default).
    fn enum_function(
        &self,
        (source_entry, source, source_path): (&TypeEntry, &EnumDef, &syn::Path),
        (target_entry, target, target_path): (&TypeEntry, &EnumDef, &syn::Path),
        input: &TokenStream,
        hook: Option<&String>,
    ) -> Result<(TokenStream, bool)> {
        let mut arms = Vec::new();
        let mut unmatched = Vec::new();
        let target_other = target.other.as_ref().map(|o| format_ident!("{}", o));
        for variant in &source.variants {
            let ident = format_ident!("{}", variant.rust);
            let wire = &variant.wire;
            match (
                target.variants.iter().find(|t| t.wire == variant.wire),
                &target_other,
            ) {
                (Some(t), _) => {
                    let t = format_ident!("{}", t.rust);
                    arms.push(quote! { #source_path::#ident => #target_path::#t, });
                }
                (None, Some(other)) => arms.push(quote! {
                    #source_path::#ident => #target_path::#other(::std::string::String::from(#wire)),
                }),
                (None, None) => unmatched.push(wire.clone()),
            }
        }
        if let Some(other) = &source.other {
            let other = format_ident!("{}", other);
            match &target_other {
                Some(target_other) => {
                    let listed = target.variants.iter().map(|t| {
                        let wire = &t.wire;
                        let t = format_ident!("{}", t.rust);
                        quote! { #wire => #target_path::#t, }
                    });
                    arms.push(quote! {
                        #source_path::#other(value) => match value.as_str() {
                            #(#listed)*
                            _ => #target_path::#target_other(::std::clone::Clone::clone(value)),
                        },
                    });
                }
                None => unmatched.push("(unlisted values)".to_owned()),
            }
        }
        match hook {
            Some(hook) => {
                let hook: syn::Path = syn::parse_str(hook).map_err(|e| self.internal(e))?;
                Ok((
                    quote! {
                        #[allow(unreachable_patterns)]
                        let mut out = match &#input {
                            #(#arms)*
                            _ => ::std::default::Default::default(),
                        };
                        #hook(&#input, &mut out);
                        out
                    },
                    false,
                ))
            }
            None if unmatched.is_empty() => Ok((quote! { match &#input { #(#arms)* } }, false)),
            None => Err(Error::Settings {
                setting: format!(
                    "hooks of {} → {}",
                    source_entry.definition, target_entry.definition
                ),
                message: format!(
                    "enum values without counterpart need a conversion hook: {unmatched:?}"
                ),
            }),
        }
    }

    fn target_path(&self, target: &TypeEntry, direction: Direction) -> Result<syn::Path> {
        match direction {
            Direction::ToHub => Self::path(self.hub, target),
            Direction::FromHub => Self::path(self.external, target),
        }
    }

    fn corresponds_directed(
        &self,
        source: &FieldType,
        target: &FieldType,
        direction: Direction,
    ) -> bool {
        match direction {
            Direction::ToHub => self.corresponds(source, target),
            Direction::FromHub => self.corresponds(target, source),
        }
    }
}
