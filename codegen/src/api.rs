//! The multi-version builder: inputs, groups with their versions and hub, and conversion
//! hooks in; typed versions, hub types, conversions, the kind registry and a dynamic scheme
//! out. `cargo xtask codegen` builds flowcontrol and apiregistration through it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::conversion::{
    ConversionSettings, Direction, DynamicScheme, Side, emit_conversions, emit_scheme,
};
use crate::error::{Error, Result};
use crate::typespace::{TypeBody, TypeSpace};
use crate::{Generator, Settings, names, output};

/// The shape a group's versions convert through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hub {
    /// One of the group's versions, usually the storage version: every other version converts
    /// to it and back, and it converts to itself by the identity (controller-runtime's
    /// Hub/Convertible pattern).
    Version(String),
    /// An internal shape, from the documents added with [`ApiBuilder::hub_generator`]: the
    /// definition-name prefix of its types (`io.apfkit.hub.flowcontrol.`), as kube-apiserver's
    /// internal version.
    Internal(String),
}

/// One API group: its versions, its hub and its conversion hooks.
#[derive(Debug, Clone)]
pub struct Group {
    name: String,
    versions: Vec<String>,
    hub: Hub,
    /// (version, schema path inside the version, direction) → function path.
    hooks: BTreeMap<(String, String, Direction), String>,
    /// The same for prepare hooks.
    prepare_hooks: BTreeMap<(String, String, Direction), String>,
    /// (version, schema path inside the version) → round-trip check.
    round_trip_checks: BTreeMap<(String, String), String>,
}

impl Group {
    /// The group `name` (`stable.example.com`) served in `versions` (oldest first: the order
    /// of the registry), converting through `hub`.
    pub fn new(name: &str, versions: &[&str], hub: Hub) -> Self {
        Group {
            name: name.to_owned(),
            versions: versions.iter().map(|v| (*v).to_owned()).collect(),
            hub,
            hooks: BTreeMap::new(),
            prepare_hooks: BTreeMap::new(),
            round_trip_checks: BTreeMap::new(),
        }
    }

    /// Registers a hand-written prepare hook for the struct at `schema_path` in `version`:
    /// `fn(&mut Source)`, called before the generated copy. It moves what has no counterpart
    /// in this type to a place the copy carries: for example, converting from the hub, a
    /// field that only the hub version has goes into an annotation of the metadata, which the
    /// copy then moves across (kube-apiserver keeps such fields the same way).
    pub fn prepare(
        &mut self,
        version: &str,
        schema_path: &str,
        direction: Direction,
        function: &str,
    ) -> &mut Self {
        let key = (version.to_owned(), schema_path.to_owned(), direction);
        self.prepare_hooks.insert(key, function.to_owned());
        self
    }

    /// Registers a hand-written conversion hook for the type at `schema_path` in `version`
    /// (`Widget`, `Widget.spec`, as in [`Settings::type_name`] without the version prefix):
    /// `fn(&Source, &mut Target)`, called after the generated copy of the fields both sides
    /// share. A pair with fields that have no counterpart needs one in each direction.
    pub fn hook(
        &mut self,
        version: &str,
        schema_path: &str,
        direction: Direction,
        function: &str,
    ) -> &mut Self {
        let key = (version.to_owned(), schema_path.to_owned(), direction);
        self.hooks.insert(key, function.to_owned());
        self
    }

    /// Registers, beside the hooks of the type at `schema_path` in `version`, the hand-written
    /// `fn(&Hub) -> bool` telling whether the hooks give a hub value back unchanged (hub →
    /// this version → hub) as far as the fields without counterpart go; the generated code
    /// checks the others. Callers such as the lossy-conversion check skip their read-back
    /// when `FromHub::round_trips` says `true`; without a check, a type with hooks says
    /// `false`, which is always safe.
    pub fn round_trip_check(
        &mut self,
        version: &str,
        schema_path: &str,
        function: &str,
    ) -> &mut Self {
        let key = (version.to_owned(), schema_path.to_owned());
        self.round_trip_checks.insert(key, function.to_owned());
        self
    }

    /// The module (under the conversions root) of the group's conversions: the first label
    /// of the group name (`flowcontrol` for `flowcontrol.apiserver.k8s.io`).
    fn module(&self) -> String {
        names::sanitize_ident(self.name.split('.').next().unwrap_or_default())
    }
}

/// Where the generated parts live in the target crates, and how conversions are spelled.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Rust path of the typed versions' root module; `None`: `<module>::types`, where the
    /// module is the one [`ApiBuilder::write_module`] writes (`crate::api` for
    /// [`ApiBuilder::generate`]).
    pub types_root: Option<String>,
    /// Rust path of the internal hub types' root module (unused when every hub is a version);
    /// `None`: `<module>::hub`.
    pub hub_root: Option<String>,
    /// Path of the `ToHub` trait the conversions implement.
    pub to_hub_trait: String,
    /// Path of the `FromHub` trait the conversions implement.
    pub from_hub_trait: String,
    /// The dynamic scheme generated with the conversions.
    pub scheme: Option<DynamicScheme>,
    /// First line of every generated conversion file.
    pub header: String,
}

impl Default for Layout {
    /// Roots inside the written module, apfkit-runtime's traits and scheme.
    fn default() -> Self {
        Layout {
            types_root: None,
            hub_root: None,
            to_hub_trait: "::apfkit_runtime::ToHub".to_owned(),
            from_hub_trait: "::apfkit_runtime::FromHub".to_owned(),
            scheme: Some(DynamicScheme::Runtime),
            header: "Generated by apfkit-codegen, do not edit.".to_owned(),
        }
    }
}

impl Layout {
    /// The types' and hub's roots for parts laid out under `module` (`crate::api`).
    fn roots(&self, module: &str) -> (String, String) {
        let or_under = |root: &Option<String>, part: &str| {
            root.clone().unwrap_or_else(|| format!("{module}::{part}"))
        };
        (
            or_under(&self.types_root, "types"),
            or_under(&self.hub_root, "hub"),
        )
    }
}

/// The generated files of one API, each map by path relative to its own output directory.
#[derive(Debug, Default)]
pub struct ApiFiles {
    /// The typed versions (and, for CRDs, the meta/v1 types they use), with `KINDS`.
    pub types: BTreeMap<PathBuf, String>,
    /// The internal hub types; empty when every hub is a version.
    pub hub: BTreeMap<PathBuf, String>,
    /// `ToHub`/`FromHub` for every kind and nested type of every version, `HubObject` and the
    /// dynamic scheme.
    pub conversions: BTreeMap<PathBuf, String>,
    /// The registry of a [`DynamicScheme::Custom`] scheme (`HubObject`, `CODECS`), for the
    /// crate that holds that scheme; empty otherwise.
    pub scheme: BTreeMap<PathBuf, String>,
}

/// Builds a multi-version API: typed versions, hub, conversions and registry.
///
/// ```
/// use apfkit_codegen::{ApiBuilder, Direction, Group, Hub, Settings};
///
/// let crd = r#"
/// apiVersion: apiextensions.k8s.io/v1
/// kind: CustomResourceDefinition
/// metadata: {name: widgets.example.com}
/// spec:
///   group: example.com
///   names: {kind: Widget, plural: widgets}
///   scope: Namespaced
///   versions:
///     - name: v1beta1
///       served: true
///       storage: false
///       schema:
///         openAPIV3Schema:
///           type: object
///           properties:
///             spec: {type: object, properties: {size: {type: integer}}}
///     - name: v1
///       served: true
///       storage: true
///       schema:
///         openAPIV3Schema:
///           type: object
///           properties:
///             spec: {type: object, properties: {replicas: {type: integer}}}
/// "#;
/// let mut builder = ApiBuilder::new(Settings::default());
/// builder.add_bytes("widgets.yaml", crd.as_bytes()).unwrap();
/// let mut group = Group::new("example.com", &["v1beta1", "v1"], Hub::Version("v1".into()));
/// // `size` became `replicas`: without these hooks generation fails, naming both fields.
/// group
///     .hook("v1beta1", "Widget.spec", Direction::ToHub, "crate::hooks::spec_to_v1")
///     .hook("v1beta1", "Widget.spec", Direction::FromHub, "crate::hooks::spec_from_v1");
/// builder.group(group);
/// let files = builder.generate().unwrap();
/// let v1beta1 = &files.conversions[std::path::Path::new("example/v1beta1.rs")];
/// assert!(v1beta1.contains("crate::hooks::spec_to_v1(&self, &mut out);"));
/// ```
#[derive(Debug)]
pub struct ApiBuilder {
    types: Generator,
    hub: Option<Generator>,
    groups: Vec<Group>,
    layout: Layout,
}

impl ApiBuilder {
    /// A builder whose typed versions are generated with `settings`, with the default
    /// [`Layout`] until [`ApiBuilder::layout`] changes it.
    pub fn new(settings: Settings) -> Self {
        ApiBuilder {
            types: Generator::new(settings),
            hub: None,
            groups: Vec::new(),
            layout: Layout::default(),
        }
    }

    /// Adds an input of the typed versions: CustomResourceDefinitions or an OpenAPI document
    /// (see [`Generator::add_file`]).
    pub fn add_file(&mut self, path: &Path) -> Result<&mut Self> {
        self.types.add_file(path)?;
        Ok(self)
    }

    /// Adds an input of the typed versions from memory (see [`Generator::add_bytes`]).
    pub fn add_bytes(&mut self, origin: &str, bytes: &[u8]) -> Result<&mut Self> {
        self.types.add_bytes(origin, bytes)?;
        Ok(self)
    }

    /// The generator of the internal hub types ([`Hub::Internal`]), created with `settings`
    /// on first use; add the hub's documents to it.
    pub fn hub_generator(&mut self, settings: Settings) -> &mut Generator {
        self.hub.get_or_insert_with(|| Generator::new(settings))
    }

    /// Adds a group.
    pub fn group(&mut self, group: Group) -> &mut Self {
        self.groups.push(group);
        self
    }

    /// Where the parts live and which traits and scheme the conversions use.
    pub fn layout(&mut self) -> &mut Layout {
        &mut self.layout
    }

    /// Generates every part; roots the layout leaves open are under `crate::api`.
    pub fn generate(&self) -> Result<ApiFiles> {
        self.generate_under("crate::api")
    }

    /// Generates every part, with the roots the layout leaves open under `module`.
    fn generate_under(&self, module: &str) -> Result<ApiFiles> {
        let (types_root, hub_root) = self.layout.roots(module);
        let types_space = self.types.type_space()?;
        let hub_space = match &self.hub {
            Some(generator) => Some(generator.type_space()?),
            None => None,
        };
        let conversion = self.conversion_settings(&types_space, hub_space.as_ref())?;
        let external = Side {
            space: &types_space,
            root: &types_root,
        };
        let internal_hub = hub_space.as_ref().map(|space| Side {
            space,
            root: &hub_root,
        });
        // One emitter call pairs one external side with one hub side: every group's hub is
        // either internal (the hub space) or a version (the types space), not a mix.
        let hub = match (
            &internal_hub,
            self.groups.iter().any(|g| matches!(g.hub, Hub::Version(_))),
        ) {
            (Some(_), true) => {
                return Err(Error::Settings {
                    setting: "groups".to_owned(),
                    message:
                        "one builder cannot mix internal hubs and version hubs; use two builders"
                            .to_owned(),
                });
            }
            (Some(hub), false) => hub,
            (None, _) => &external,
        };
        Ok(ApiFiles {
            types: crate::emit::emit(&types_space, &self.types.settings)?,
            hub: match (&self.hub, &hub_space) {
                (Some(generator), Some(space)) => crate::emit::emit(space, &generator.settings)?,
                _ => BTreeMap::new(),
            },
            conversions: emit_conversions(&external, hub, &conversion)?,
            scheme: emit_scheme(&external, hub, &conversion)?,
        })
    }

    /// The emitter's pairs and hooks for every group, checked against the type spaces.
    fn conversion_settings(
        &self,
        types: &TypeSpace,
        hub: Option<&TypeSpace>,
    ) -> Result<ConversionSettings> {
        let layout = &self.layout;
        let mut settings = ConversionSettings {
            to_hub_trait: layout.to_hub_trait.clone(),
            from_hub_trait: layout.from_hub_trait.clone(),
            header: layout.header.clone(),
            scheme: layout.scheme.clone(),
            ..ConversionSettings::default()
        };
        let mut modules = BTreeSet::new();
        for group in &self.groups {
            let setting = || format!("group {}", group.name);
            if !modules.insert(group.module()) {
                return Err(Error::Settings {
                    setting: setting(),
                    message: format!(
                        "another group's conversions already use the module {}",
                        group.module()
                    ),
                });
            }
            let prefixes = version_prefixes(types, &group.name);
            let prefix_of = |version: &str| {
                prefixes
                    .get(version)
                    .cloned()
                    .ok_or_else(|| Error::Settings {
                        setting: setting(),
                        message: format!(
                            "no kind of version {version:?} in the inputs (versions found: {})",
                            prefixes.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    })
            };
            let hub_prefix = match &group.hub {
                Hub::Version(version) => {
                    if !group.versions.contains(version) {
                        return Err(Error::Settings {
                            setting: setting(),
                            message: format!(
                                "the hub version {version:?} is not one of the group's versions"
                            ),
                        });
                    }
                    prefix_of(version)?
                }
                Hub::Internal(prefix) => {
                    let found = hub.is_some_and(|space| {
                        space.entries.keys().any(|d| d.starts_with(prefix.as_str()))
                    });
                    if !found {
                        return Err(Error::Settings {
                            setting: setting(),
                            message: format!(
                                "no hub type starts with {prefix:?} (add the hub's documents with hub_generator)"
                            ),
                        });
                    }
                    prefix.clone()
                }
            };
            for version in &group.versions {
                settings.pairs.push((
                    prefix_of(version)?,
                    hub_prefix.clone(),
                    vec![group.module(), names::sanitize_ident(version)],
                ));
            }
            for (hooks, target) in [
                (&group.hooks, &mut settings.hooks),
                (&group.prepare_hooks, &mut settings.prepare_hooks),
            ] {
                for ((version, path, direction), function) in hooks {
                    let definition = format!("{}{path}", prefix_of(version)?);
                    if !types.entries.contains_key(&definition) {
                        return Err(Error::Settings {
                            setting: format!("hook {function}"),
                            message: format!("no type {path:?} in {} {version}", group.name),
                        });
                    }
                    target.insert((definition, *direction), function.clone());
                }
            }
            for ((version, path), function) in &group.round_trip_checks {
                let definition = format!("{}{path}", prefix_of(version)?);
                if !types.entries.contains_key(&definition) {
                    return Err(Error::Settings {
                        setting: format!("round-trip check {function}"),
                        message: format!("no type {path:?} in {} {version}", group.name),
                    });
                }
                settings
                    .round_trip_checks
                    .insert(definition, function.clone());
            }
        }
        Ok(settings)
    }

    /// For build scripts: writes everything to `out_dir/<name>/` (`types`, `hub` when there is
    /// an internal hub, `conversion`) and `out_dir/<name>.rs` declaring `pub mod <name>`, to be
    /// included at the crate root with `include!(concat!(env!("OUT_DIR"), "/<name>.rs"))`. The
    /// root module re-exports `HubObject` and `SCHEME`. Unless [`Layout`] sets the roots, the
    /// generated paths assume the module is `crate::<name>`.
    pub fn write_module(&self, out_dir: &Path, name: &str) -> Result<PathBuf> {
        let module = names::sanitize_ident(name);
        let parts = self.generate_under(&format!("crate::{module}"))?;
        let mut files = BTreeMap::new();
        let mut children = vec!["types", "conversion"];
        for (folder, part) in [
            ("types", parts.types),
            ("hub", parts.hub),
            ("conversion", parts.conversions),
        ] {
            if folder == "hub" && !part.is_empty() {
                children.push("hub");
            }
            files.extend(
                part.into_iter()
                    .map(|(path, text)| (Path::new(folder).join(path), text)),
            );
        }
        let mut root = format!("//! {}\n", self.layout.header);
        for child in children {
            root.push_str(&format!("pub mod {child};\n"));
        }
        if self.layout.scheme == Some(DynamicScheme::Runtime) {
            root.push_str("pub use conversion::{HubObject, SCHEME};\n");
        }
        root.push_str(&crd_constant(self.types.custom_resource_definitions()));
        files.insert(PathBuf::from("mod.rs"), root);
        let tree = out_dir.join(&module);
        output::write_tree(&tree, &files)?;
        crate::declare_module(out_dir, &module, &tree)
    }
}

/// The `CUSTOM_RESOURCE_DEFINITIONS` constant of a module generated from CRDs: each one as
/// compact JSON, so that the types carry their schemas and `x-kubernetes-validations` rules
/// (for `apfkit_crd::CustomResourceDefinition::from_json`). Empty when no CRD was read.
fn crd_constant(crds: &[serde_json::Value]) -> String {
    if crds.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "/// The CustomResourceDefinitions these types were generated from, as JSON: their schemas\n\
         /// and `x-kubernetes-validations` rules, for validating objects as kube-apiserver does\n\
         /// (`apfkit_crd::CustomResourceDefinition::from_json`).\n\
         pub const CUSTOM_RESOURCE_DEFINITIONS: &[&str] = &[\n",
    );
    for crd in crds {
        let json = crd.to_string();
        // A raw string whose delimiter the JSON does not contain.
        let mut hashes = String::from("#");
        while json.contains(&format!("\"{hashes}")) {
            hashes.push('#');
        }
        text.push_str(&format!("    r{hashes}\"{json}\"{hashes},\n"));
    }
    text.push_str("];\n");
    text
}

/// The definition prefix (`com.example.stable.v1.`) of each version of `group`, from its
/// kinds.
fn version_prefixes(space: &TypeSpace, group: &str) -> BTreeMap<String, String> {
    let mut prefixes = BTreeMap::new();
    for entry in space.entries.values() {
        let TypeBody::Struct(def) = &entry.body else {
            continue;
        };
        let Some(gvk) = &def.kind else { continue };
        if gvk.group != group {
            continue;
        }
        let suffix = format!("{}.{}", gvk.version, gvk.kind);
        if let Some(namespace) = entry.definition.strip_suffix(&suffix) {
            prefixes.insert(gvk.version.clone(), format!("{namespace}{}.", gvk.version));
        }
    }
    prefixes
}

#[cfg(test)]
mod tests {
    use super::crd_constant;

    #[test]
    fn the_crd_constant_holds_each_crd_in_a_raw_string_its_text_cannot_end() {
        assert_eq!(crd_constant(&[]), "");
        let crd = serde_json::json!({"kind": "CustomResourceDefinition", "description": "a \"# and \"## inside"});
        let text = crd_constant(std::slice::from_ref(&crd));
        assert!(
            text.contains("pub const CUSTOM_RESOURCE_DEFINITIONS: &[&str] = &["),
            "{text}"
        );
        // The delimiter is one hash longer than the longest `"#...` run of the JSON.
        let start = text.find("r###\"").expect("a three-hash raw string");
        let json = &text[start + 5..text.rfind("\"###").unwrap()];
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(json).unwrap(),
            crd
        );
    }
}
