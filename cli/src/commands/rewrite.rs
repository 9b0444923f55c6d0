//! `convert` and `default`: the commands that read objects, rewrite each one (to another
//! version, or with its defaults) and write them out.

use apfkit_scheme::scheme::{
    self, Encoded, ErrorKind, Input, SCHEME, Target, UnknownFields, Warning,
};
use clap::Args;

use crate::failure::{Failure, Location};
use crate::input::{self, Source};
use crate::output::{self, Destination, ObjectFormat, Sink};

/// How unknown fields are treated (kube-apiserver's fieldValidation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unknown {
    /// Drop them silently.
    Ignore,
    /// Drop them and report each on standard error.
    Warn,
    /// Fail on the first document that has one.
    Strict,
}

impl From<Unknown> for UnknownFields {
    fn from(unknown: Unknown) -> Self {
        match unknown {
            Unknown::Ignore => UnknownFields::Ignore,
            Unknown::Warn => UnknownFields::Warn,
            Unknown::Strict => UnknownFields::Strict,
        }
    }
}

/// Convert objects to another API version, as kube-apiserver converts them.
///
/// Objects are defaulted in their own version, converted through the internal version, and
/// written in the target version, keeping the order of documents. Lossy conversions and
/// unknown fields are reported on standard error as FILE: document N: path: message. Comments and
/// formatting of the input are not kept.
///
/// Input is YAML, JSON or Kubernetes protobuf, told apart by its first bytes: protobuf starts
/// with k8s\0 (one object, as etcd stores it) or is a stream of objects each after its length
/// (4 bytes big-endian as Kubernetes frames them, or a varint). -o json writes what
/// kube-apiserver writes (Go's field order); -o protobuf writes one object as kube-apiserver
/// stores it, several each after its 4-byte length.
///
/// Guarantees:
///   - Nothing is written unless every document converted.
///   - A regular file (--output-file, --in-place) is replaced atomically and keeps its mode,
///     owner and group; a symlink is followed and kept; a read-only file is refused; a file
///     with other hard links becomes a new file (the other links keep the old content).
///   - Devices, FIFOs and /dev/stdout are written into, never replaced.
///   - --in-place checks every file can be replaced before replacing any, and puts back the
///     files already replaced if a later one fails; files without objects are left untouched.
///   - SIGINT, SIGTERM and SIGHUP remove temporary files (.NAME.apfkit-XXXXXX.tmp beside the
///     target, apfkit-XXXXXX.tmp in $TMPDIR for output over 8 MiB); a kill -9 may leave them.
///   - Each document is at most --max-document-size bytes, 64 levels deep and 1,000,000
///     nodes; output documents must fit the same limits.
///
/// Examples:
///   apfkit convert -f flowschemas.yaml --to v1
///   apfkit bootstrap --to v1beta3 | apfkit convert --to flowcontrol.apiserver.k8s.io/v1 -o json
///   apfkit convert -f manifests/ --to v1 --in-place
///   apfkit convert -f stored.pb --to v1 -o protobuf --output-file migrated.pb
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ConvertArgs {
    /// File, directory or - (repeatable); standard input when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: input::InputArgs,
    /// Target version: VERSION (each object keeps its group) or GROUP/VERSION.
    #[arg(long, value_name = "VERSION")]
    to: String,
    /// Output format [default: yaml; with --in-place, the format of each file].
    #[arg(short = 'o', long, value_enum)]
    output: Option<ObjectFormat>,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE", conflicts_with = "in_place")]
    output_file: Option<String>,
    /// Rewrite each input file with its converted objects (all files or none).
    #[arg(long)]
    in_place: bool,
    /// What to do with fields the object's version does not have.
    #[arg(long, value_enum, default_value = "warn")]
    unknown_fields: Unknown,
}

/// Apply kube-apiserver's defaults to objects, in their own version.
///
/// Examples:
///   apfkit default -f prioritylevels.yaml
///   cat flowschema.json | apfkit default -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DefaultArgs {
    /// File, directory or - (repeatable); standard input when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: input::InputArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ObjectFormat,
    /// What to do with fields the object's version does not have.
    #[arg(long, value_enum, default_value = "warn")]
    unknown_fields: Unknown,
}

fn report(location: &Location, warnings: &[Warning]) {
    for warning in warnings {
        crate::failure::warn(location, &warning.to_string());
    }
}

/// Where `transform` writes: one sink for all sources, or one per source (`--in-place`).
enum Sinks {
    Shared(Box<Sink>),
    PerFile(Option<ObjectFormat>),
}

/// What `transform` does to each object.
enum Job {
    Convert(Target),
    Default,
}

impl Job {
    /// The object of `input` rewritten and written as `sink` writes, with its warnings.
    fn run(
        &self,
        location: &Location,
        input: Input<'_>,
        unknown: UnknownFields,
        sink: &Sink,
    ) -> Result<Encoded, Failure> {
        let encoding = sink.encoding();
        let encoded = match self {
            Job::Convert(target) => SCHEME.convert(input, target, unknown, encoding),
            Job::Default => SCHEME.default(input, unknown, encoding),
        };
        encoded.map_err(|e| match e.kind {
            ErrorKind::Encoding => sink.encoding_failure(e.message),
            _ => Failure::at(location, e),
        })
    }
}

/// Runs `job` over every document of every source into sinks, then commits them all. With a
/// sink per file, a file without objects (empty, or only comments) is left untouched.
fn transform(
    sources: &[Source],
    sinks: Sinks,
    unknown: UnknownFields,
    job: &Job,
) -> Result<(), Failure> {
    let (mut shared, per_file) = match sinks {
        Sinks::Shared(sink) => (Some(*sink), None),
        Sinks::PerFile(format) => (None, Some(format)),
    };
    let mut own = Vec::new();
    for source in sources {
        let mut sink = match (per_file, source.path()) {
            (Some(format), Some(path)) => {
                let format = format.unwrap_or_else(|| ObjectFormat::of_path(path));
                Some(Sink::new(format, Destination::File(path.to_owned()))?)
            }
            _ => None,
        };
        input::for_each_document(source, |location, read| {
            let Some(sink) = sink.as_mut().or(shared.as_mut()) else {
                return Ok(());
            };
            if input::skipped_as_other_kind(&location, &read)? {
                // Rewriting a file in place must not drop its other objects.
                return match per_file {
                    Some(_) => sink.write(&input::built(&location, read)?.value),
                    None => Ok(()),
                };
            }
            let encoded = job.run(&location, read, unknown, sink)?;
            report(&location, &encoded.warnings);
            sink.write_encoded(encoded.bytes)
        })?;
        if let Some(mut sink) = sink.filter(|sink| sink.documents() > 0) {
            sink.close()?;
            own.push(sink);
        }
    }
    own.extend(shared);
    output::commit(own)
}

/// The target of `--to`, checked against the served versions: an unknown version is a usage
/// error.
pub fn parse_target(to: &str) -> Result<Target, Failure> {
    let target: Target = to
        .parse()
        .map_err(|e: scheme::SchemeError| Failure::Usage(e.message))?;
    SCHEME
        .check_target(&target)
        .map_err(|e| Failure::Usage(format!("--to {to}: {}", e.message)))?;
    Ok(target)
}

/// `apfkit convert`.
pub fn convert(args: ConvertArgs) -> Result<(), Failure> {
    args.input.apply();
    let target = parse_target(&args.to)?;
    let sources = input::sources(&args.paths)?;
    let unknown = args.unknown_fields.into();
    let job = Job::Convert(target);
    if args.in_place {
        if let Some(source) = sources.iter().find(|s| !is_regular_file(s)) {
            return Err(Failure::Usage(format!(
                "--in-place needs regular files, not {}",
                crate::failure::printable(&source.name())
            )));
        }
        return transform(&sources, Sinks::PerFile(args.output), unknown, &job);
    }
    let destination = match args.output_file {
        Some(path) => Destination::File(path.into()),
        None => Destination::Stdout,
    };
    let sink = Sink::new(args.output.unwrap_or(ObjectFormat::Yaml), destination)?;
    transform(&sources, Sinks::Shared(Box::new(sink)), unknown, &job)
}

fn is_regular_file(source: &Source) -> bool {
    source
        .path()
        .and_then(|path| std::fs::metadata(path).ok())
        .is_some_and(|metadata| metadata.is_file())
}

/// `apfkit default`.
pub fn default(args: DefaultArgs) -> Result<(), Failure> {
    args.input.apply();
    let sources = input::sources(&args.paths)?;
    let unknown = args.unknown_fields.into();
    let sink = Sink::new(args.output, Destination::Stdout)?;
    transform(
        &sources,
        Sinks::Shared(Box::new(sink)),
        unknown,
        &Job::Default,
    )
}
