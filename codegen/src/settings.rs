//! What the caller can choose about the generated code.

use crate::names::module_ident;

/// Kubernetes' shared definition namespaces and the k8s-openapi modules that hold them.
const K8S_OPENAPI_MODULES: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.",
        "::k8s_openapi::apimachinery::pkg::apis::meta::v1",
    ),
    (
        "io.k8s.apimachinery.pkg.runtime.",
        "::k8s_openapi::apimachinery::pkg::runtime",
    ),
    (
        "io.k8s.apimachinery.pkg.api.resource.",
        "::k8s_openapi::apimachinery::pkg::api::resource",
    ),
    (
        "io.k8s.apimachinery.pkg.util.intstr.",
        "::k8s_openapi::apimachinery::pkg::util::intstr",
    ),
    ("io.k8s.api.core.v1.", "::k8s_openapi::api::core::v1"),
];

/// What a string schema with `enum` becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Enums {
    /// A Rust enum with one unit variant per listed value; any other value fails to decode.
    #[default]
    Closed,
    /// A Rust enum with one unit variant per listed value and a last `Other(String)` variant
    /// that keeps any other value, for servers newer than the schema.
    Open,
    /// A plain `String` (the values are listed in the JSON Schema only), as Go's types keep them.
    Strings,
}

/// How nested anonymous object types are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NestedNames {
    /// The whole path from the definition: `ServerSpecPodSelectorMatchExpressionsItem`.
    #[default]
    Full,
    /// The shortest tail of that path that no other type of the module uses:
    /// `MatchExpressionsItem`, growing (`PodSelectorMatchExpressionsItem`) only to stay unique.
    Short,
}

/// How a bare (non-`Option`) struct field that holds its empty value is encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EmptyStructs {
    /// Always written, `{}` when empty, as Go's `encoding/json` writes a non-pointer struct.
    #[default]
    Written,
    /// Left out when equal to its `Default`, as k8s-openapi's `Option` fields are when unset.
    Omitted,
}

/// Settings of one generation run, built with chained setters.
///
/// ```
/// let mut settings = apfkit_codegen::Settings::default();
/// settings
///     .map_namespace("io.k8s.api.flowcontrol.", &["flowcontrol"])
///     .replace_namespace(
///         "io.k8s.apimachinery.pkg.apis.meta.v1.",
///         "::k8s_openapi::apimachinery::pkg::apis::meta::v1",
///     )
///     .with_schemars(true);
/// assert_eq!(settings.module_for("io.k8s.api.flowcontrol.v1"), vec!["flowcontrol", "v1"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Settings {
    namespace_maps: Vec<(String, Vec<String>)>,
    replacements: Vec<(String, String)>,
    defaulting_hooks: Vec<(String, String)>,
    defaulting_hook_checks: Vec<(String, String)>,
    pub(crate) schemars: bool,
    pub(crate) k8s_openapi: bool,
    pub(crate) header: Option<String>,
    pub(crate) enums: Enums,
    pub(crate) nested_names: NestedNames,
    pub(crate) empty_structs: EmptyStructs,
    type_names: Vec<(String, String)>,
    pub(crate) wire: Option<String>,
}

impl Settings {
    /// Definitions whose name starts with `prefix` go to `module` (plus the remaining dotted
    /// segments). Without a matching map, a leading `io.k8s.` is dropped and every segment
    /// becomes a module: `io.k8s.api.core.v1.Pod` → `api::core::v1::Pod`.
    pub fn map_namespace(&mut self, prefix: &str, module: &[&str]) -> &mut Self {
        self.namespace_maps.push((
            prefix.to_owned(),
            module.iter().map(|s| (*s).to_owned()).collect(),
        ));
        self
    }

    /// Definitions whose name starts with `prefix` are not generated: references to them use
    /// `rust_module::<rest of the name>` instead, for example k8s-openapi's meta/v1 types.
    pub fn replace_namespace(&mut self, prefix: &str, rust_module: &str) -> &mut Self {
        self.replacements
            .push((prefix.to_owned(), rust_module.to_owned()));
        self
    }

    /// After the generated defaults of `definition`, call the hand-written function at `path`
    /// (`fn(&mut T)`), for rules that are not plain defaults.
    pub fn defaulting_hook(&mut self, definition: &str, path: &str) -> &mut Self {
        self.defaulting_hooks
            .push((definition.to_owned(), path.to_owned()));
        self
    }

    /// Beside the defaulting hook of `definition`: the hand-written function at `path`
    /// (`fn(&T) -> bool`) that tells whether the hook would leave a value as it is. The
    /// generated `ApplyDefaults::is_defaulted` uses it; without one, it answers `false` for
    /// this type, which is always safe, only slower where callers skip work on `true`.
    pub fn defaulting_hook_check(&mut self, definition: &str, path: &str) -> &mut Self {
        self.defaulting_hook_checks
            .push((definition.to_owned(), path.to_owned()));
        self
    }

    /// Derive `schemars::JsonSchema`, with the full definition name as the schema name.
    pub fn with_schemars(&mut self, enabled: bool) -> &mut Self {
        self.schemars = enabled;
        self
    }

    /// For every object schema with an `x-apfkit-go` layout (field order, protobuf field
    /// numbers, pointers, `omitempty`), generate kube-apiserver's wire codecs: a protobuf
    /// `Message` impl (gogo-protobuf's bytes) and a `GoJson` impl (JSON in Go's field order),
    /// both from the module at `path`, which provides the runtime (`::apfkit_wire`), and each
    /// kind's `KindInfo::wire` is the runtime's `KindEncodings` of it. Replaced definitions
    /// with a layout (k8s-openapi's `ObjectMeta`, ...) get the impls in the root module when
    /// `path` is in the generated crate (`crate::…`); an external runtime's crate holds them
    /// itself, as Rust's orphan rule requires ([`Generator::replaced_wire_impls`] writes
    /// them).
    ///
    /// [`Generator::replaced_wire_impls`]: crate::Generator::replaced_wire_impls
    pub fn with_wire(&mut self, path: &str) -> &mut Self {
        self.wire = Some(path.to_owned());
        self
    }

    /// Implement `k8s_openapi::ListableResource` and `Metadata` for kinds whose `metadata` is
    /// k8s-openapi's `ObjectMeta`, so that kube's blanket impls apply. (`k8s_openapi::Resource`,
    /// a kind's identity, is implemented for every kind whatever this says.)
    pub fn with_k8s_openapi_traits(&mut self, enabled: bool) -> &mut Self {
        self.k8s_openapi = enabled;
        self
    }

    /// Reuse k8s-openapi's types for Kubernetes' shared definitions instead of generating
    /// copies: meta/v1 (`ObjectMeta`, `Time`, ...), `runtime`, `api::resource::Quantity`,
    /// `util::intstr::IntOrString` and core/v1; and implement k8s-openapi's traits for kinds,
    /// so that kube's `Api<K>` takes them. The output then needs k8s-openapi.
    ///
    /// ```
    /// let mut settings = apfkit_codegen::Settings::default();
    /// settings.use_k8s_openapi();
    /// assert_eq!(
    ///     settings.replacement_for("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").as_deref(),
    ///     Some("::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta"),
    /// );
    /// ```
    pub fn use_k8s_openapi(&mut self) -> &mut Self {
        for (prefix, module) in K8S_OPENAPI_MODULES {
            self.replace_namespace(prefix, module);
        }
        self.with_k8s_openapi_traits(true)
    }

    /// First line of every generated file, as a `//!` comment. The default names the generator.
    pub fn with_header(&mut self, header: &str) -> &mut Self {
        self.header = Some(header.to_owned());
        self
    }

    /// What string schemas with `enum` become (default: [`Enums::Closed`]).
    pub fn with_enums(&mut self, enums: Enums) -> &mut Self {
        self.enums = enums;
        self
    }

    /// How nested anonymous types are named (default: [`NestedNames::Full`]).
    pub fn with_nested_names(&mut self, names: NestedNames) -> &mut Self {
        self.nested_names = names;
        self
    }

    /// How bare struct fields holding their empty value are encoded (default:
    /// [`EmptyStructs::Written`], Go's `{}`).
    pub fn with_empty_structs(&mut self, empty: EmptyStructs) -> &mut Self {
        self.empty_structs = empty;
        self
    }

    /// Names the type generated for `schema_path` `name`, whatever the naming scheme says.
    /// The path is the definition name followed by the property names that lead to a nested
    /// schema, with `items` for array items and `additionalProperties` for map values:
    /// `com.example.stable.v1.CronTab.spec.template` or `….spec.ports.items`. The generated
    /// doc comment of every nested type ends with its path.
    ///
    /// ```
    /// let mut settings = apfkit_codegen::Settings::default();
    /// settings.type_name("com.example.stable.v1.CronTab.spec", "CronTabSpec");
    /// assert_eq!(settings.type_name_for("com.example.stable.v1.CronTab.spec"), Some("CronTabSpec"));
    /// ```
    pub fn type_name(&mut self, schema_path: &str, name: &str) -> &mut Self {
        self.type_names
            .push((schema_path.to_owned(), name.to_owned()));
        self
    }

    /// The name [`Settings::type_name`] gave `schema_path`.
    pub fn type_name_for(&self, schema_path: &str) -> Option<&str> {
        self.type_names
            .iter()
            .rev()
            .find(|(path, _)| path == schema_path)
            .map(|(_, name)| name.as_str())
    }

    /// The module path (relative to the output root) of a definition namespace.
    pub fn module_for(&self, namespace: &str) -> Vec<String> {
        let dotted = format!("{namespace}.");
        let best = self
            .namespace_maps
            .iter()
            .filter(|(prefix, _)| dotted.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len());
        let (mut module, rest) = match best {
            Some((prefix, module)) => (module.clone(), &dotted[prefix.len()..]),
            None => (
                Vec::new(),
                dotted.strip_prefix("io.k8s.").unwrap_or(&dotted),
            ),
        };
        module.extend(rest.split('.').filter(|s| !s.is_empty()).map(module_ident));
        module
    }

    /// The Rust path replacing `definition`, if a replacement applies.
    pub fn replacement_for(&self, definition: &str) -> Option<String> {
        self.replacements
            .iter()
            .filter(|(prefix, _)| definition.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(prefix, module)| {
                format!(
                    "{module}::{}",
                    &definition[prefix.len()..].replace('.', "::")
                )
            })
    }

    /// The hook registered for `definition`.
    pub fn hook_for(&self, definition: &str) -> Option<&str> {
        self.defaulting_hooks
            .iter()
            .find(|(d, _)| d == definition)
            .map(|(_, p)| p.as_str())
    }

    /// The check registered beside the hook of `definition`.
    pub fn hook_check_for(&self, definition: &str) -> Option<&str> {
        self.defaulting_hook_checks
            .iter()
            .find(|(d, _)| d == definition)
            .map(|(_, p)| p.as_str())
    }
}

impl Settings {
    /// Whether the wire runtime is a module of the generated crate, which may then implement
    /// its traits for the replaced (foreign) types.
    pub(crate) fn wire_is_local(&self) -> bool {
        self.wire.as_deref().is_some_and(|path| {
            let first = path.split("::").next().unwrap_or_default().trim();
            matches!(first, "crate" | "self" | "super")
        })
    }

    /// The module path of the wire runtime, when the settings ask for wire codecs.
    pub(crate) fn wire_path(&self) -> crate::error::Result<Option<proc_macro2::TokenStream>> {
        let Some(path) = &self.wire else {
            return Ok(None);
        };
        let path: syn::Path =
            syn::parse_str(path).map_err(|err| crate::error::Error::Settings {
                setting: "wire".to_owned(),
                message: format!("{path:?} is not a Rust path: {err}"),
            })?;
        Ok(Some(quote::quote! { #path }))
    }
}
