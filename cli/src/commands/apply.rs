//! `apply --server-side --dry-run`: what kube-apiserver would make of a server-side apply,
//! computed offline with the server's own field manager.

use std::collections::BTreeMap;
use std::sync::Arc;

use apfkit_apiserver::fields::{ApplyRequest, KindVersions, apply_values};
use apfkit_apiserver::store::{SchemeVersion, SharedVersion};
use apfkit_fieldmanager::schema::Schema;
use apfkit_scheme::scheme::{Codec, HubObject, SCHEME, UnknownFields};
use apfkit_types::json_schema::{self, Variant};
use clap::Args;
use serde_json::Value;

use crate::failure::{Failure, Location, printable};
use crate::input;
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Show what a server-side apply would store, without a server.
///
/// Each object of -f is applied for --field-manager, as kube-apiserver applies it, to the
/// object of the same kind, namespace and name in --live (in any version; without one the
/// apply creates it). The result is printed in the applied object's version with its
/// metadata.managedFields: which manager owns which fields. Fields other managers of the
/// live object set to other values are conflicts, reported with kube-apiserver's message
/// (exit code 1), unless --force-conflicts. Nothing is printed unless every object applied.
///
/// To see what `kubectl apply --server-side` would do to an object of a cluster, save it with
/// its managed fields (kubectl get ... -o yaml --show-managed-fields) and give it as --live.
///
/// Examples:
///   apfkit apply --server-side --dry-run -f team-a.yaml
///   apfkit apply --server-side --dry-run -f team-a.yaml --live live.yaml --field-manager gitops
///   apfkit apply --server-side --dry-run=server -f manifests/ --live cluster.yaml --force-conflicts -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ApplyArgs {
    /// The configurations to apply: file, directory or - (repeatable).
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    paths: Vec<String>,
    /// The live objects: file, directory or - (repeatable), with their managedFields.
    #[arg(long, value_name = "PATH")]
    live: Vec<String>,
    /// The manager applying (kubectl's default name).
    #[arg(long, value_name = "NAME", default_value = "kubectl")]
    field_manager: String,
    /// Take the fields other managers hold instead of failing on conflicts.
    #[arg(long)]
    force_conflicts: bool,
    /// Required: the apply is computed as the server computes it.
    #[arg(long, required = true)]
    server_side: bool,
    /// Required: nothing is written anywhere (`--dry-run` or `--dry-run=server`).
    #[arg(
        long,
        required = true,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "server",
        value_parser = ["server"],
        value_name = "server"
    )]
    dry_run: Option<String>,
    #[command(flatten)]
    input: input::InputArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ObjectFormat,
}

/// An object's identity: group, kind, namespace and name.
type Identity = (String, String, String, String);

fn identity(value: &Value) -> Identity {
    let text = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let api_version = text("/apiVersion");
    let group = api_version
        .rsplit_once('/')
        .map(|(group, _)| group.to_owned())
        .unwrap_or_default();
    (
        group,
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

/// The codec of `value`'s apiVersion and kind.
fn codec_of(location: &Location, value: &Value) -> Result<&'static Codec, Failure> {
    let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    SCHEME
        .codecs()
        .iter()
        .find(|c| c.api_version() == api_version && c.kind == kind)
        .ok_or_else(|| {
            Failure::at(
                location,
                format!(
                    "{} {} is not a kind apfkit serves",
                    printable(api_version),
                    printable(kind)
                ),
            )
        })
}

/// The codecs and merge rules of every version of `codec`'s kind.
struct Kind {
    codecs: Vec<SharedVersion<HubObject>>,
    schemas: BTreeMap<String, Schema>,
    has_status: bool,
}

impl Kind {
    fn of(codec: &Codec) -> Kind {
        let codecs: Vec<&'static Codec> = SCHEME
            .codecs()
            .iter()
            .filter(|c| c.group == codec.group && c.kind == codec.kind)
            .collect();
        let mut has_status = false;
        let schemas = codecs
            .iter()
            .map(|c| {
                let schema = apfkit_types::find_kind(&c.gvk())
                    .map(|info| json_schema::schema(info, Variant::Open));
                has_status |= schema
                    .as_ref()
                    .is_some_and(|s| s.pointer("/properties/status").is_some());
                let compiled = schema.map_or_else(Schema::deduced, |s| Schema::compile(&s));
                (c.api_version(), compiled)
            })
            .collect();
        Kind {
            codecs: codecs
                .into_iter()
                .map(|c| Arc::new(SchemeVersion::new(c, &SCHEME)) as SharedVersion<HubObject>)
                .collect(),
            schemas,
            has_status,
        }
    }
}

/// `apfkit apply`.
pub fn run(args: ApplyArgs) -> Result<(), Failure> {
    args.input.apply();
    let mut live: BTreeMap<Identity, (Location, Value)> = BTreeMap::new();
    for source in input::sources(&args.live)? {
        input::for_each_document(&source, |location, document| {
            let document = input::built(&location, document)?;
            live.insert(identity(&document.value), (location, document.value));
            Ok(())
        })?;
    }
    let mut sink = Sink::new(args.output, Destination::Stdout)?;
    let mut kinds: BTreeMap<(String, String), Kind> = BTreeMap::new();
    for source in input::sources(&args.paths)? {
        input::for_each_document(&source, |location, document| {
            if input::skipped_as_other_kind(&location, &document)? {
                return Ok(());
            }
            let document = input::built(&location, document)?;
            input::check_fields(&location, &document, UnknownFields::Warn)?;
            let config = &document.value;
            let codec = codec_of(&location, config)?;
            let kind = kinds
                .entry((codec.group.to_owned(), codec.kind.to_owned()))
                .or_insert_with(|| Kind::of(codec));
            let live_value = match live.get(&identity(config)) {
                Some((live_location, value)) => {
                    let live_codec = codec_of(live_location, value)?;
                    let hub = live_codec
                        .decode(value, UnknownFields::Ignore, &mut Vec::new())
                        .map_err(|e| Failure::at(live_location, e))?;
                    codec
                        .encode(hub, &mut Vec::new())
                        .map_err(|e| Failure::at(live_location, e))?
                }
                None => serde_json::json!({}),
            };
            let versions = KindVersions {
                codecs: &kind.codecs,
                schemas: &kind.schemas,
                has_status: kind.has_status,
                // Applied to the object, never to its status.
                status_writes_metadata: false,
            };
            let request = ApplyRequest {
                codec: &SchemeVersion::new(codec, &SCHEME),
                status: false,
                manager: &args.field_manager,
                force: args.force_conflicts,
            };
            let applied = apply_values(&versions, &request, &live_value, config)
                .map_err(|error| Failure::at(&location, error.message))?;
            // Stored as the server stores it: defaulted in its version.
            let hub = codec
                .decode(&applied, UnknownFields::Strict, &mut Vec::new())
                .map_err(|e| Failure::at(&location, e))?;
            let written = codec
                .encode(hub, &mut Vec::new())
                .map_err(|e| Failure::at(&location, e))?;
            sink.write(&written)
        })?;
    }
    output::commit(vec![sink])
}
