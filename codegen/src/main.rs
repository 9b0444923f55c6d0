//! `apfkit-codegen`: generate a Rust module tree from Kubernetes OpenAPI v3 documents and
//! CustomResourceDefinitions.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use apfkit_codegen::{EmptyStructs, Enums, Generator, NestedNames, Settings};
use clap::{Parser, ValueEnum};

/// Generate typed Rust structs (serde, defaulting, resource identity) from Kubernetes OpenAPI v3
/// group-version documents, such as those served at /openapi/v3/apis/<group>/<version>, or
/// from CustomResourceDefinition manifests (every version of every CRD in the files).
///
/// The output directory receives a module tree rooted at DIR/mod.rs that needs the serde (with
/// derive) and serde_json crates, and apfkit-runtime when a schema has int-or-string, date-time
/// or quantity values. It is replaced as a whole, and only when every document generated
/// without error.
///
/// Examples:
///   apfkit-codegen --out src/api flowcontrol-v1.json flowcontrol-v1beta3.json
///   apfkit-codegen --k8s-openapi --schemars --out src/api flowcontrol-v1.json
///   apfkit-codegen --k8s-openapi --out src/crds crds/*.yaml
///   apfkit-codegen --enums open --nested-names short --out src/crds httproutes.yaml
///   apfkit-codegen --type-name io.k8s.networking.gateway.v1.HTTPRoute.spec.rules.items=Rule \
///       --out src/crds httproutes.yaml
#[derive(Debug, Parser)]
#[command(version, verbatim_doc_comment)]
struct Args {
    /// Directory to write the module tree to (replaced atomically).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Also derive schemars::JsonSchema (the output then needs schemars 1.x too, and
    /// apfkit-runtime with its `schemars` feature).
    #[arg(long)]
    schemars: bool,
    /// Use k8s-openapi's meta/v1, runtime, Quantity, IntOrString and core/v1 types instead of
    /// generating copies, and implement its Resource, ListableResource and Metadata traits for
    /// kinds (so that kube's Api<K> takes them). The output then needs k8s-openapi.
    #[arg(long)]
    k8s_openapi: bool,
    /// What string schemas with `enum` become: closed Rust enums, open ones (a last
    /// `Other(String)` variant keeps unlisted values, for servers newer than the schema), or
    /// plain strings.
    #[arg(long, value_enum, default_value_t = EnumsArg::Closed)]
    enums: EnumsArg,
    /// How nested anonymous types are named: the whole schema path, or its shortest tail
    /// that stays unique in the module.
    #[arg(long, value_enum, default_value_t = NamesArg::Full)]
    nested_names: NamesArg,
    /// Name the type of one schema path (see the `Schema path:` line of a nested type's docs);
    /// repeatable.
    #[arg(long, value_name = "SCHEMA_PATH=NAME", value_parser = parse_type_name)]
    type_name: Vec<(String, String)>,
    /// How a bare struct field holding its empty value is encoded: written as `{}` (Go) or
    /// left out (k8s-openapi).
    #[arg(long, value_enum, default_value_t = EmptyArg::Written)]
    empty_structs: EmptyArg,
    /// Refuse an input file larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = apfkit_codegen::DEFAULT_MAX_INPUT_SIZE)]
    max_input_size: u64,
    /// OpenAPI v3 documents (JSON), or apiextensions.k8s.io/v1 CustomResourceDefinitions (YAML
    /// or JSON, several per file). Schemas defined in several documents must agree.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EnumsArg {
    Closed,
    Open,
    Strings,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum NamesArg {
    Full,
    Short,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EmptyArg {
    Written,
    Omitted,
}

fn parse_type_name(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((path, name)) if !path.is_empty() && !name.is_empty() => {
            Ok((path.to_owned(), name.to_owned()))
        }
        _ => Err(format!(
            "expected SCHEMA_PATH=NAME, such as com.example.v1.Widget.spec=WidgetSpec, got {text:?}"
        )),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut settings = Settings::default();
    settings
        .with_schemars(args.schemars)
        .with_enums(match args.enums {
            EnumsArg::Closed => Enums::Closed,
            EnumsArg::Open => Enums::Open,
            EnumsArg::Strings => Enums::Strings,
        })
        .with_nested_names(match args.nested_names {
            NamesArg::Full => NestedNames::Full,
            NamesArg::Short => NestedNames::Short,
        })
        .with_empty_structs(match args.empty_structs {
            EmptyArg::Written => EmptyStructs::Written,
            EmptyArg::Omitted => EmptyStructs::Omitted,
        });
    for (path, name) in &args.type_name {
        settings.type_name(path, name);
    }
    if args.k8s_openapi {
        settings.use_k8s_openapi();
    }
    let mut generator = Generator::new(settings);
    generator.with_max_input_size(args.max_input_size);
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
