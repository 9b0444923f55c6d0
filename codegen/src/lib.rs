//! Generates typed, defaulted Rust structs from Kubernetes OpenAPI v3 documents.
//!
//! The pipeline is: JSON → [`openapi::Document`] (serde) → [`TypeSpace`] (ordered, deterministic)
//! → tokens with `quote` → text with `prettyplease`. The output is a module tree whose root is
//! `mod.rs`; it needs only `serde` and `serde_json` (plus `schemars` or `k8s-openapi` when
//! [`Settings`] asks for them).
//!
//! # Use from `build.rs`
//!
//! ```no_run
//! // build.rs
//! let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("api");
//! let mut generator = apfkit_codegen::Generator::new(apfkit_codegen::Settings::default());
//! generator.add_file("openapi/v1.json".as_ref()).expect("valid document");
//! generator.write_to(&out).expect("writable OUT_DIR");
//! println!("cargo::rerun-if-changed=openapi/v1.json");
//! // lib.rs: #[path = concat!(env!("OUT_DIR"), "/api/mod.rs")] mod api;
//! ```
//!
//! # Mapping rules
//!
//! * A property listed in `required`, or a `$ref` property whose `default` is `{}` (how
//!   Kubernetes marks non-pointer Go structs), is a bare value; every other property is an
//!   `Option`, so absent and empty values stay apart.
//! * A schema with exactly one `x-kubernetes-group-version-kind` and `apiVersion`/`kind`
//!   properties is a [kind](`emit`): those two become constants, written on encode and checked
//!   on decode. Its plural and scope come from the document's read path.
//! * `default` values become `ApplyDefaults::apply_defaults`; `x-apfkit-default-on-zero: true`
//!   also replaces the zero value, as kube-apiserver does for non-pointer Go fields.

#![forbid(unsafe_code)]

pub mod emit;
pub mod error;
pub mod load;
pub mod names;
pub mod openapi;
pub mod output;
pub mod settings;
pub mod typespace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use error::{Error, Result};
pub use load::{LoadedDocument, load_document, parse_document};
pub use settings::Settings;
pub use typespace::TypeSpace;

/// Collects documents and generates one module tree from all of them.
#[derive(Debug, Default)]
pub struct Generator {
    settings: Settings,
    documents: Vec<LoadedDocument>,
}

impl Generator {
    /// A generator with the given settings and no documents yet.
    pub fn new(settings: Settings) -> Self {
        Generator {
            settings,
            documents: Vec::new(),
        }
    }

    /// Reads and adds a document file.
    pub fn add_file(&mut self, path: &Path) -> Result<&mut Self> {
        self.documents.push(load_document(path)?);
        Ok(self)
    }

    /// Adds a document from bytes; `origin` names it in errors.
    pub fn add_bytes(&mut self, origin: &str, bytes: &[u8]) -> Result<&mut Self> {
        self.documents.push(parse_document(origin, bytes)?);
        Ok(self)
    }

    /// The type space of the documents added so far.
    pub fn type_space(&self) -> Result<TypeSpace> {
        TypeSpace::build(&self.documents, &self.settings)
    }

    /// The generated files, by path relative to the output directory.
    pub fn generate(&self) -> Result<BTreeMap<PathBuf, String>> {
        emit::emit(&self.type_space()?, &self.settings)
    }

    /// Generates and writes the tree to `dir`, replacing whatever was there, atomically.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        let files = self.generate()?;
        output::write_tree(dir, &files)
    }
}
