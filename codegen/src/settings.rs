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
    pub(crate) schemars: bool,
    pub(crate) k8s_openapi: bool,
    pub(crate) header: Option<String>,
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

    /// Derive `schemars::JsonSchema`, with the full definition name as the schema name.
    pub fn with_schemars(&mut self, enabled: bool) -> &mut Self {
        self.schemars = enabled;
        self
    }

    /// Implement `k8s_openapi::Resource`, `ListableResource` and `Metadata` for kinds whose
    /// `metadata` is k8s-openapi's `ObjectMeta`, so that kube's blanket impls apply.
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
}
