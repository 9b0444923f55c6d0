//! Generates typed, defaulted Rust structs from Kubernetes OpenAPI v3 documents.
//!
//! The pipeline is: JSON → an OpenAPI document (serde) → a [`TypeSpace`] (ordered,
//! deterministic) → tokens with `quote` → text with `prettyplease`. The output is a module tree whose root is
//! `mod.rs`; it needs `serde` and `serde_json`, `apfkit-runtime` when a schema has
//! int-or-string, date-time or quantity values, and `schemars` or `k8s-openapi` when
//! [`Settings`] asks for them.
//!
//! **Where to start**: a [`Generator`] with [`Settings`], its inputs (`add_file`, `add_bytes`:
//! OpenAPI documents or CRDs), then `write_module` from `build.rs` or `generate` for the
//! files in memory; [`ApiBuilder`] for several versions with a hub and conversions:
//!
//! ```
//! let crd = br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
//!   "metadata": {"name": "gadgets.example.com"},
//!   "spec": {"group": "example.com", "names": {"kind": "Gadget", "plural": "gadgets"},
//!     "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
//!       "schema": {"openAPIV3Schema": {"type": "object", "properties": {
//!         "spec": {"type": "object", "properties": {"size": {"type": "integer", "default": 1}}}}}}}]}}"#;
//! let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
//! generator.add_bytes("gadgets.json", crd)?;
//! let files = generator.generate()?;
//! let v1 = &files[std::path::Path::new("com/example/v1.rs")];
//! assert!(v1.contains("pub struct Gadget {"));
//! # Ok::<(), apfkit_codegen::Error>(())
//! ```
//!
//! # Use from `build.rs`
//!
//! ```no_run
//! // build.rs
//! let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
//! let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
//! generator.add_file("openapi/v1.json".as_ref()).expect("valid document");
//! generator.write_module(&out_dir, "api").expect("writable OUT_DIR");
//! println!("cargo::rerun-if-changed=openapi/v1.json");
//! // lib.rs: include!(concat!(env!("OUT_DIR"), "/api.rs"));  // declares `pub mod api`
//! ```
//!
//! # Mapping rules
//!
//! * A property listed in `required`, or a `$ref` property whose `default` is `{}` (how
//!   Kubernetes marks non-pointer Go structs), is a bare value; every other property is an
//!   `Option`, so absent and empty values stay apart.
//! * A schema with exactly one `x-kubernetes-group-version-kind` and `apiVersion`/`kind`
//!   properties is a kind: those two become constants, written on encode and checked
//!   on decode. Its plural and scope come from the document's read path.
//! * `default` values become `ApplyDefaults::apply_defaults`; `x-apfkit-default-on-zero: true`
//!   also replaces the zero value, as kube-apiserver does for non-pointer Go fields.
//! * The root module lists every kind in `KINDS` (group, version, kind, plural, scope, list
//!   kind and, with schemars, its JSON Schema).
//! * Structural schemas: `x-kubernetes-int-or-string`, quantities and `format: date-time`
//!   become `apfkit_runtime` types that check the value and keep it as written; string
//!   `enum`s become Rust enums ([`Enums`]); fields a schema keeps without listing them
//!   (`x-kubernetes-preserve-unknown-fields`, embedded resources) land in a flattened
//!   `other_fields` map; defaults of any shape are Rust literals; nested types are named by
//!   [`NestedNames`] or [`Settings::type_name`].
//! * [`emit_conversions`] pairs two type spaces (versions and a hub) into `ToHub`/`FromHub`
//!   impls, and with [`ConversionSettings::scheme`] a `HubObject` enum and a dynamic scheme
//!   (by `apiVersion` and `kind`) over every served kind.

#![forbid(unsafe_code)]

mod api;
mod conversion;
mod crd;
mod emit;
mod error;
mod load;
mod names;
mod openapi;
mod output;
mod registry;
mod settings;
mod tree;
mod typespace;
mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use api::{ApiBuilder, ApiFiles, Group, Hub, Layout};
pub use conversion::{
    ConversionSettings, Direction, DynamicScheme, Side, emit_conversions, emit_scheme,
};
pub use error::{Error, Result};
pub use settings::{EmptyStructs, Enums, NestedNames, Settings};
pub use typespace::TypeSpace;

use load::{LoadedDocument, parse_document};

/// Inputs larger than this are refused unless [`Generator::with_max_input_size`] says
/// otherwise: 64 MiB, far above the largest real CRD bundles (a few MiB), so that a wrong file
/// or a device fails fast instead of filling memory.
pub const DEFAULT_MAX_INPUT_SIZE: u64 = 64 << 20;

/// Collects documents and generates one module tree from all of them.
#[derive(Debug)]
pub struct Generator {
    settings: Settings,
    documents: Vec<LoadedDocument>,
    /// The CustomResourceDefinitions read, as they were written.
    crds: Vec<serde_json::Value>,
    max_input_size: u64,
}

impl Default for Generator {
    fn default() -> Self {
        Generator::new(Settings::default())
    }
}

impl Generator {
    /// A generator with the given settings and no documents yet.
    pub fn new(settings: Settings) -> Self {
        Generator {
            settings,
            documents: Vec::new(),
            crds: Vec::new(),
            max_input_size: DEFAULT_MAX_INPUT_SIZE,
        }
    }

    /// Refuses inputs larger than `bytes` (default [`DEFAULT_MAX_INPUT_SIZE`]).
    pub fn with_max_input_size(&mut self, bytes: u64) -> &mut Self {
        self.max_input_size = bytes;
        self
    }

    /// Reads and adds a file: an OpenAPI v3 document (JSON), or a YAML or JSON stream of
    /// `apiextensions.k8s.io/v1` CustomResourceDefinitions (see [`Generator::add_bytes`]).
    pub fn add_file(&mut self, path: &Path) -> Result<&mut Self> {
        use std::io::Read as _;
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        // Read at most one byte past the limit, so that a huge file or an endless device
        // (a FIFO, /dev/zero) is refused without being read whole.
        let file = std::fs::File::open(path).map_err(io)?;
        let mut bytes = Vec::new();
        file.take(self.max_input_size.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io)?;
        self.add_bytes(&path.display().to_string(), &bytes)
    }

    /// Adds an OpenAPI v3 document (JSON), or every CustomResourceDefinition of a YAML or JSON
    /// stream (`---`-separated documents, or a `v1 List`): each version of a CRD becomes a
    /// kind with the CRD's group, version, kind, plural and scope, and its list kind.
    /// `origin` names the input in errors.
    ///
    /// ```
    /// let crd = r#"
    /// apiVersion: apiextensions.k8s.io/v1
    /// kind: CustomResourceDefinition
    /// metadata: {name: crontabs.stable.example.com}
    /// spec:
    ///   group: stable.example.com
    ///   names: {kind: CronTab, plural: crontabs}
    ///   scope: Namespaced
    ///   versions:
    ///     - name: v1
    ///       served: true
    ///       storage: true
    ///       schema:
    ///         openAPIV3Schema:
    ///           type: object
    ///           properties:
    ///             spec:
    ///               type: object
    ///               properties:
    ///                 cronSpec: {type: string}
    ///                 replicas: {type: integer, default: 1}
    /// "#;
    /// let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
    /// generator.add_bytes("crontab.yaml", crd.as_bytes()).unwrap();
    /// let files = generator.generate().unwrap();
    /// let v1 = &files[std::path::Path::new("com/example/stable/v1.rs")];
    /// assert!(v1.contains("pub struct CronTab {"));
    /// assert!(v1.contains("const URL_PATH_SEGMENT: &'static str = \"crontabs\";"));
    /// assert!(v1.contains("type Scope = ::apfkit_runtime::k8s_openapi::NamespaceResourceScope;"));
    /// ```
    pub fn add_bytes(&mut self, origin: &str, bytes: &[u8]) -> Result<&mut Self> {
        let size = bytes.len() as u64;
        if size > self.max_input_size {
            return Err(Error::TooLarge {
                file: origin.to_owned(),
                size,
                limit: self.max_input_size,
            });
        }
        // Input that starts with `{` is one JSON document; anything else is a YAML stream.
        if bytes.trim_ascii_start().starts_with(b"{") {
            let value = serde_json::from_slice::<serde_json::Value>(bytes).ok();
            let crds: Vec<&serde_json::Value> = value.iter().flat_map(crd::items).collect();
            if crds.is_empty() || !crds.iter().all(|v| crd::is_crd(v)) {
                self.documents.push(parse_document(origin, bytes)?);
                return Ok(self);
            }
            for crd in crds {
                self.documents.extend(crd::documents(origin, 0, crd)?);
                crd::check(origin, 0, crd)?;
                self.crds.push(crd.clone());
            }
            return Ok(self);
        }
        let mut found = false;
        for (index, value) in crd::read_stream(origin, bytes)?.iter().enumerate() {
            let items = crd::items(value);
            for crd in &items {
                if !crd::is_crd(crd) {
                    return Err(Error::Unsupported {
                        file: format!("{origin} (document {})", index + 1),
                        pointer: "/kind".to_owned(),
                        message: "neither an OpenAPI v3 document nor a CustomResourceDefinition"
                            .to_owned(),
                    });
                }
                self.documents.extend(crd::documents(origin, index, crd)?);
                crd::check(origin, index, crd)?;
                self.crds.push((*crd).clone());
                found = true;
            }
        }
        if !found {
            return Err(Error::Malformed {
                file: origin.to_owned(),
                pointer: "/".to_owned(),
                message: "no OpenAPI document and no CustomResourceDefinition".to_owned(),
            });
        }
        Ok(self)
    }

    /// The CustomResourceDefinitions added so far, as they were read.
    pub fn custom_resource_definitions(&self) -> &[serde_json::Value] {
        &self.crds
    }

    /// The type space of the documents added so far.
    pub fn type_space(&self) -> Result<TypeSpace> {
        TypeSpace::build(&self.documents, &self.settings)
    }

    /// The generated files, by path relative to the output directory.
    pub fn generate(&self) -> Result<BTreeMap<PathBuf, String>> {
        emit::emit(&self.type_space()?, &self.settings)
    }

    /// The wire codecs of the replaced definitions the documents lay out (k8s-openapi's
    /// `ObjectMeta`, `ListMeta`, ...), alone, as the `mod.rs` of a tree: for the crate of a wire
    /// runtime that other generated crates name by an external path (see
    /// [`Settings::with_wire`]). Empty without [`Settings::with_wire`].
    pub fn replaced_wire_impls(&self) -> Result<BTreeMap<PathBuf, String>> {
        emit::replaced_wire_impls(&self.type_space()?, &self.settings)
    }

    /// Generates and writes the tree to `dir`, replacing whatever was there, atomically.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        let files = self.generate()?;
        output::write_tree(dir, &files)
    }

    /// For build scripts: writes the tree to `out_dir/<name>/` and a file `out_dir/<name>.rs`
    /// declaring `pub mod <name>` at that path, so that the crate can
    /// `include!(concat!(env!("OUT_DIR"), "/<name>.rs"))` (`#[path]` cannot take `env!`).
    /// Returns the path of the declaring file.
    pub fn write_module(&self, out_dir: &Path, name: &str) -> Result<PathBuf> {
        let module = names::sanitize_ident(name);
        let tree = out_dir.join(&module);
        self.write_to(&tree)?;
        declare_module(out_dir, &module, &tree)
    }
}

/// Writes `out_dir/<module>.rs`, declaring `pub mod <module>` at `tree/mod.rs`.
fn declare_module(out_dir: &Path, module: &str, tree: &Path) -> Result<PathBuf> {
    let declaration = out_dir.join(format!("{module}.rs"));
    let root = tree.join("mod.rs");
    let text = format!(
        "// Generated by apfkit-codegen, do not edit.\n#[path = {:?}]\npub mod {module};\n",
        root.display().to_string()
    );
    std::fs::write(&declaration, text).map_err(|source| Error::Io {
        path: declaration.clone(),
        source,
    })?;
    Ok(declaration)
}
