//! `explain`.

use apfkit_dispatcher::classify::{Classifier, Request};
use apfkit_dispatcher::config::LevelBehavior;
use clap::Args;
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::configuration;
use crate::failure::{Failure, printable};

/// Explain which FlowSchema and priority level a request gets, its flow and its queues.
///
/// Resource requests take --resource (and optionally --subresource, --api-group, --namespace,
/// --name); non-resource requests take --path. The configuration is the objects of the -f
/// paths, or the embedded Kubernetes default.
///
/// Examples:
///   apfkit explain --user alice --group system:authenticated --verb list --resource pods --namespace default
///   apfkit explain -f apf/ --user system:node:n1 --group system:nodes --verb get --path /healthz -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[group(id = "request", required = true, multiple = false, args = ["resource", "path"])]
pub struct ExplainArgs {
    /// Configuration: file, directory or - (repeatable); the embedded default when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// The requesting user's name.
    #[arg(long)]
    user: String,
    /// A group of the user (repeatable).
    #[arg(long = "group", value_name = "G")]
    groups: Vec<String>,
    /// The verb: get, list, watch, create, update, patch, delete, deletecollection; for
    /// non-resource requests the lower-case HTTP method.
    #[arg(long)]
    verb: String,
    /// Resource, such as pods (a resource request).
    #[arg(long, value_name = "R")]
    resource: Option<String>,
    /// Subresource, such as status.
    #[arg(long, value_name = "S", requires = "resource")]
    subresource: Option<String>,
    /// API group (empty for the core group).
    #[arg(long, value_name = "G", requires = "resource")]
    api_group: Option<String>,
    /// Namespace (empty for cluster-scoped requests).
    #[arg(long, value_name = "NS", requires = "resource")]
    namespace: Option<String>,
    /// Object name.
    #[arg(long, value_name = "N", requires = "resource")]
    name: Option<String>,
    /// URL path (a non-resource request), such as /healthz.
    #[arg(long, value_name = "P")]
    path: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Explanation {
    flow_schema: String,
    priority_level: String,
    distinguisher: String,
    /// The 64-bit flow hash, as a decimal string: JSON numbers above 2^53 lose digits in jq
    /// and JavaScript.
    #[serde(serialize_with = "as_decimal_string")]
    hash: u64,
    hand: Vec<usize>,
    queues: i32,
    skipped: Vec<SkippedSchema>,
}

fn as_decimal_string<S: serde::Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SkippedSchema {
    flow_schema: String,
    reason: String,
}

/// `apfkit explain`.
pub fn run(args: ExplainArgs) -> Result<(), Failure> {
    args.input.apply();
    let config = configuration::load(&args.paths, None)?;
    let mut skipped: Vec<SkippedSchema> = config
        .dangling_conditions()
        .iter()
        .filter(|c| c.status == "True")
        .map(|c| SkippedSchema {
            flow_schema: c.flow_schema.clone(),
            reason: c.message.clone(),
        })
        .collect();
    skipped.extend(
        config
            .skipped()
            .iter()
            .filter(|s| s.kind == "FlowSchema")
            .map(|s| SkippedSchema {
                flow_schema: s.name.clone(),
                reason: crate::configuration::join(&s.reasons),
            }),
    );
    let classifier = Classifier::new(config);
    let groups: Vec<&str> = args.groups.iter().map(String::as_str).collect();
    let request = Request {
        user: &args.user,
        groups: &groups,
        verb: &args.verb,
        is_resource_request: args.resource.is_some(),
        api_group: args.api_group.as_deref().unwrap_or_default(),
        api_version: "",
        resource: args.resource.as_deref().unwrap_or_default(),
        subresource: args.subresource.as_deref().unwrap_or_default(),
        namespace: args.namespace.as_deref().unwrap_or_default(),
        name: args.name.as_deref().unwrap_or_default(),
        path: args.path.as_deref().unwrap_or_default(),
    };
    let classification = classifier.classify(&request).ok_or_else(|| {
        Failure::Invalid("no FlowSchema matches and there is no catch-all".to_owned())
    })?;
    let level = classifier
        .config()
        .priority_level(classification.priority_level);
    let queues = match level.map(|l| &l.behavior) {
        Some(LevelBehavior::Queue { queues, .. }) => *queues,
        _ => 0,
    };
    let explanation = Explanation {
        flow_schema: classification.flow_schema.to_owned(),
        priority_level: classification.priority_level.to_owned(),
        distinguisher: classification.distinguisher.to_owned(),
        hash: classification.hash,
        hand: classification.hand.to_vec(),
        queues,
        skipped,
    };
    match args.output {
        ReportFormat::Json => print_json(&explanation),
        ReportFormat::Text => emit(&text(&explanation, level.map(|l| &l.behavior))),
    }
}

fn text(e: &Explanation, behavior: Option<&LevelBehavior>) -> String {
    let mut out = format!(
        "FlowSchema:     {}\nPriorityLevel:  {}\n",
        printable(&e.flow_schema),
        printable(&e.priority_level)
    );
    match behavior {
        Some(LevelBehavior::Exempt) => {
            out.push_str("Treatment:      exempt: never queued, never rejected\n")
        }
        Some(LevelBehavior::Reject) => out.push_str(
            "Treatment:      no queues: runs if seats are free now, else rejected (429)\n",
        ),
        Some(LevelBehavior::Queue {
            queues,
            hand_size,
            queue_length_limit,
            ..
        }) => {
            out.push_str(&format!(
                "Treatment:      fair queuing over {queues} queues, hand size {hand_size}, queue length limit {queue_length_limit}\n"
            ));
            out.push_str(&format!("Distinguisher:  {:?}\n", e.distinguisher));
            out.push_str(&format!("Flow hash:      {}\n", e.hash));
            let hand: Vec<String> = e.hand.iter().map(ToString::to_string).collect();
            out.push_str(&format!("Hand (dealt):   {}\n", hand.join(", ")));
        }
        None => {}
    }
    for skipped in &e.skipped {
        out.push_str(&format!(
            "Skipped:        FlowSchema {}: {}\n",
            printable(&skipped.flow_schema),
            printable(&skipped.reason)
        ));
    }
    out
}
