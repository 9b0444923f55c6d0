//! Reading objects: `-f` paths (files, directories, `-`), streamed document by document so
//! that large inputs stay in bounded memory, each document within the reader's limits.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use apfkit_runtime::Object as _;
use apfkit_scheme::scheme::{
    Document, HubObject, Input, InputError, Limits, ReadError, SCHEME, UnknownFields,
};
use apfkit_scheme::validation::{BadValue, FieldError};

use crate::failure::{Failure, Location, printable};

/// The PriorityLevelConfigurations and FlowSchemas of a configuration, each with where it was
/// read (a file's document, or a cluster's URL).
pub type Objects = (
    Vec<(
        apfkit_types::hub::flowcontrol::PriorityLevelConfiguration,
        Location,
    )>,
    Vec<(apfkit_types::hub::flowcontrol::FlowSchema, Location)>,
);

/// One input: a file or standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input (`-`, or no `-f` at all).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Source {
    /// The name errors use.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "-".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }

    /// The file's path, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Stdin => None,
            Source::File(path) => Some(path),
        }
    }

    fn open(&self) -> std::io::Result<Box<dyn Read>> {
        Ok(match self {
            Source::Stdin => Box::new(std::io::stdin().lock()),
            Source::File(path) => Box::new(File::open(path)?),
        })
    }
}

static SETTINGS: OnceLock<InputArgs> = OnceLock::new();

/// How the commands that read objects read them.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Largest input document accepted, in bytes (suffixes K, M, G: powers of 1024). Documents
    /// are also limited to 64 levels of nesting and 1,000,000 nodes; output documents must fit
    /// the same limits, so that everything written can be read back.
    #[arg(long, value_name = "SIZE", default_value = "8M", value_parser = parse_size)]
    max_document_size: usize,
    /// Skip documents of other kinds (a Deployment in a manifests folder) with a note on
    /// standard error, instead of failing; convert --in-place keeps them unchanged.
    #[arg(long)]
    skip_other_kinds: bool,
}

impl InputArgs {
    /// Sets how input is read for the whole command (once, before reading).
    pub fn apply(&self) {
        let _ = SETTINGS.set(self.clone());
    }
}

/// Whether `input` is of a kind apfkit does not serve and `--skip-other-kinds` was given; if
/// so, says on standard error that it is skipped.
pub fn skipped_as_other_kind(location: &Location, input: &Input<'_>) -> Result<bool, Failure> {
    if !SETTINGS.get().is_some_and(|s| s.skip_other_kinds) {
        return Ok(false);
    }
    if SCHEME.is_served(input) {
        return Ok(false);
    }
    let text_built;
    let document = match input {
        Input::Value(document) => document,
        text => {
            text_built = built_text(location, text)?;
            &text_built
        }
    };
    let field = |name| {
        document
            .value
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
    };
    let name = document
        .value
        .pointer("/metadata/name")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    eprintln!(
        "{location}: note: skipped {} {} {:?}, not a kind apfkit serves",
        printable(field("apiVersion")),
        printable(field("kind")),
        printable(name),
    );
    Ok(true)
}

/// The document as a JSON value (a JSON or decoded YAML document is built from its text).
pub fn built(location: &Location, input: Input<'_>) -> Result<Document, Failure> {
    match input {
        Input::Value(document) => Ok(document),
        text => built_text(location, &text),
    }
}

/// A document still in its text built as a JSON value; a built one copied.
pub fn built_text(location: &Location, input: &Input<'_>) -> Result<Document, Failure> {
    match input {
        Input::Json(json) => json.to_document(),
        Input::Yaml(yaml) => yaml.to_document(),
        Input::Value(document) => Ok(document.clone()),
    }
    .map_err(|e| Failure::at(location, read_message(&e)))
}

/// `1048576`, `512K`, `8M`, `1G` (powers of 1024; `KiB`, `MiB` and `GiB` too).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let shift = match &text[digits.len()..] {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        other => return Err(format!("unknown unit {other:?}: use K, M or G")),
    };
    let number: usize = digits
        .parse()
        .map_err(|_| format!("expected a size such as 8M, not {text:?}"))?;
    number
        .checked_mul(1 << shift)
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("{text} is not a usable size"))
}

/// The reader's limits: those set, or the defaults.
pub fn limits() -> Limits {
    SETTINGS
        .get()
        .map_or_else(Limits::default, |settings| Limits {
            max_document_bytes: settings.max_document_size,
            ..Limits::default()
        })
}

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Expands `-f` values: files as given, directories to their `.yaml`, `.yml` and `.json` files
/// (recursively, in sorted order), `-` to standard input; none at all means standard input.
///
/// The walk follows symlinks but reads every real file and enters every real directory once,
/// so symlink loops end; names starting with `..` are skipped, as the `..data` and
/// `..2024_…` entries a Kubernetes ConfigMap or Secret volume keeps beside the files' links.
pub fn sources(paths: &[String]) -> Result<Vec<Source>, Failure> {
    if paths.is_empty() {
        return Ok(vec![Source::Stdin]);
    }
    let mut walk = Walk::default();
    let mut sources = Vec::new();
    for path in paths {
        if path == "-" {
            sources.push(Source::Stdin);
            continue;
        }
        let path = PathBuf::from(path);
        let metadata = std::fs::metadata(&path).map_err(|e| not_readable(&path, e))?;
        if metadata.is_dir() {
            let mut found = Vec::new();
            walk.directory(&path, &metadata, &mut found)?;
            found.sort();
            sources.extend(found.into_iter().map(Source::File));
        } else {
            // A file named on the command line is read as often as it is named.
            walk.files.insert(identity(&metadata));
            sources.push(Source::File(path));
        }
    }
    Ok(sources)
}

fn not_readable(path: &Path, error: std::io::Error) -> Failure {
    let path = path.display().to_string();
    Failure::Invalid(format!("{}: {error}", crate::failure::printable(&path)))
}

/// A file's identity on its device.
fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

/// What a directory walk has seen.
#[derive(Default)]
struct Walk {
    directories: HashSet<(u64, u64)>,
    files: HashSet<(u64, u64)>,
}

impl Walk {
    fn directory(
        &mut self,
        dir: &Path,
        metadata: &std::fs::Metadata,
        found: &mut Vec<PathBuf>,
    ) -> Result<(), Failure> {
        if !self.directories.insert(identity(metadata)) {
            return Ok(());
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| not_readable(dir, e))? {
            entries.push(entry.map_err(|e| not_readable(dir, e))?.path());
        }
        // Sorted, so that the first of several links to one file is the one read.
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if name.starts_with("..") {
                continue;
            }
            let wanted = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e));
            let metadata = match std::fs::metadata(&path) {
                Ok(metadata) => metadata,
                // A dangling link that looks like a manifest is worth an error; others are not.
                Err(e) if wanted => return Err(not_readable(&path, e)),
                Err(_) => continue,
            };
            if metadata.is_dir() {
                self.directory(&path, &metadata, found)?;
            } else if wanted && self.files.insert(identity(&metadata)) {
                found.push(path);
            }
        }
        Ok(())
    }
}

/// What stopped a read: the input, or the caller.
enum Stop {
    Read(ReadError),
    Caller(Failure),
}

impl From<ReadError> for Stop {
    fn from(error: ReadError) -> Self {
        Stop::Read(error)
    }
}

/// The message of a read error as the command prints it.
fn read_message(error: &InputError) -> String {
    match error {
        // serde_json's own message already says where.
        InputError::Json { message, .. } => format!("invalid JSON: {message}"),
        InputError::TooLarge { .. } => {
            format!("{error} (raise the limit with --max-document-size)")
        }
        other => other.to_string(),
    }
}

/// Calls `each` with every document of `source` and its location, in order, reading one
/// document at a time. Kubernetes protobuf (`k8s\0`, or a stream of length-prefixed objects)
/// is detected by its first bytes; input whose first non-blank character is `{` or `[` is a
/// stream of JSON values; anything else is multi-document YAML (empty documents are skipped and
/// not counted).
pub fn for_each_document(
    source: &Source,
    mut each: impl FnMut(Location, Input<'_>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let name = source.name();
    let location = |index| Location {
        file: name.clone(),
        document: index,
    };
    let reader = source.open().map_err(|e| Failure::at(&location(None), e))?;
    let result = SCHEME.read(reader, &limits(), |input| {
        each(location(Some(input.index())), input).map_err(Stop::Caller)
    });
    match result {
        Ok(()) => Ok(()),
        Err(Stop::Caller(failure)) => Err(failure),
        Err(Stop::Read(error)) => {
            // A YAML document that is too large is named by its line: the parser's document
            // index lags behind what it read ahead.
            let index = match error.error {
                InputError::TooLarge { line: Some(_), .. } => None,
                _ => Some(error.document),
            };
            Err(Failure::at(&location(index), read_message(&error.error)))
        }
    }
}

/// Reports the duplicate JSON keys of a document, and the fields a protobuf object's schema
/// lacks, as kube-apiserver's field validation does: an error in `Strict` mode, a warning in
/// `Warn` mode, nothing in `Ignore` mode (for duplicates, the last value was kept, as Go's
/// decoder keeps it; unknown protobuf fields were skipped).
pub fn check_fields(
    location: &Location,
    document: &Document,
    unknown: UnknownFields,
) -> Result<(), Failure> {
    let warnings = document
        .reported_fields(unknown)
        .map_err(|e| Failure::at(location, e))?;
    for warning in warnings {
        crate::failure::warn(location, &warning.to_string());
    }
    Ok(())
}

/// Calls `each` with every object of `paths` decoded and defaulted to its hub form (each item
/// of a list), in order; unknown and duplicate fields are reported on standard error.
pub fn for_each_hub_object(
    paths: &[String],
    mut each: impl FnMut(&Location, HubObject) -> Result<(), Failure>,
) -> Result<(), Failure> {
    for source in sources(paths)? {
        for_each_document(&source, |location, input| {
            if skipped_as_other_kind(&location, &input)? {
                return Ok(());
            }
            let (objects, warnings) = SCHEME
                .to_hub(input, UnknownFields::Warn)
                .map_err(|e| Failure::at(&location, e))?;
            for warning in warnings {
                crate::failure::warn(&location, &warning.to_string());
            }
            objects
                .into_iter()
                .try_for_each(|object| each(&location, object))
        })?;
    }
    Ok(())
}

/// `Kind/name` of an object, for messages, with control characters of the name escaped.
pub fn label(object: &HubObject) -> String {
    let (kind, name) = kind_and_name(object);
    format!("{kind}/{}", printable(&name))
}

/// An object's kind and name.
fn kind_and_name(object: &HubObject) -> (String, String) {
    (object.kind().to_owned(), object.name().to_owned())
}

/// Where each object was first seen, by kind and name: a cluster holds one object of a kind
/// per name, so a second one in the input is an error.
#[derive(Default)]
pub struct Names {
    seen: HashMap<(String, String), Location>,
}

impl Names {
    /// Records `object` seen at `location`; if its kind and name were seen before, the error
    /// kube-apiserver's validation would give a duplicate, naming where the first one is.
    pub fn record(&mut self, location: &Location, object: &HubObject) -> Option<String> {
        let (kind, name) = kind_and_name(object);
        match self.seen.get(&(kind.clone(), name.clone())) {
            Some(first) => {
                let error = FieldError::duplicate("metadata.name", BadValue::Str(name));
                Some(format!("{error}: first defined at {first}"))
            }
            None => {
                self.seen.insert((kind, name), location.clone());
                None
            }
        }
    }
}

/// The text of a file a flag names, at most 4 MiB, in UTF-8.
///
/// # Errors
///
/// A file that cannot be read, is larger, or is not UTF-8.
pub fn read_bounded(path: &std::path::Path) -> Result<String, String> {
    apfkit_runtime::files::read_text_at_most(path, apfkit_runtime::files::SETTINGS_FILE_LIMIT)
        .map_err(|error| error.to_string())
}
