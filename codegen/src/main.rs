//! `apfkit-codegen`: generate a Rust module tree from Kubernetes OpenAPI v3 documents and
//! CustomResourceDefinitions.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use apfkit_codegen::{Generator, Settings};
use clap::Parser;

/// Generate typed Rust structs (serde, defaulting, resource identity) from Kubernetes OpenAPI v3
/// group-version documents, such as those served at /openapi/v3/apis/<group>/<version>, or
/// from CustomResourceDefinition manifests (every version of every CRD in the files).
///
/// The output directory receives a module tree rooted at DIR/mod.rs that needs only the serde
/// (with derive) and serde_json crates. It is replaced as a whole, and only when every document
/// generated without error.
///
/// Examples:
///   apfkit-codegen --out src/api flowcontrol-v1.json flowcontrol-v1beta3.json
///   apfkit-codegen --k8s-openapi --schemars --out src/api flowcontrol-v1.json
///   apfkit-codegen --k8s-openapi --out src/crds crds/*.yaml
#[derive(Debug, Parser)]
#[command(version, verbatim_doc_comment)]
struct Args {
    /// Directory to write the module tree to (replaced atomically).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Also derive schemars::JsonSchema (the output then needs schemars 1.x too).
    #[arg(long)]
    schemars: bool,
    /// Use k8s-openapi's meta/v1, runtime, Quantity, IntOrString and core/v1 types instead of
    /// generating copies, and implement its Resource, ListableResource and Metadata traits for
    /// kinds (so that kube's Api<K> takes them). The output then needs k8s-openapi.
    #[arg(long)]
    k8s_openapi: bool,
    /// OpenAPI v3 documents (JSON), or apiextensions.k8s.io/v1 CustomResourceDefinitions (YAML
    /// or JSON, several per file). Schemas defined in several documents must agree.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut settings = Settings::default();
    settings.with_schemars(args.schemars);
    if args.k8s_openapi {
        settings.use_k8s_openapi();
    }
    let mut generator = Generator::new(settings);
    let result = args
        .files
        .iter()
        .try_for_each(|file| generator.add_file(file).map(|_| ()))
        .and_then(|()| generator.write_to(&args.out));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("apfkit-codegen: error: {err}");
            ExitCode::FAILURE
        }
    }
}
