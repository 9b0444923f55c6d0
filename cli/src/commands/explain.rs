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
/// paths, a live cluster's (--kubeconfig, --context), or the embedded Kubernetes default.
///
/// --uid takes the uid of a response header instead (X-Kubernetes-PF-FlowSchema-UID or
/// X-Kubernetes-PF-PriorityLevel-UID, which name objects by uid only) and answers with the
/// object's name, its priority level and its rules, or the schemas that use the level.
///
/// Examples:
///   apfkit explain --user alice --group system:authenticated --verb list --resource pods --namespace default
///   apfkit explain -f apf/ --user system:node:n1 --group system:nodes --verb get --path /healthz -o json
///   apfkit explain --kubeconfig ~/.kube/config --uid 5a3c1f0e-8f39-4a4e-9d3c-2b1f6e0c7d11
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[group(id = "request", required = true, multiple = false, args = ["resource", "path", "uid"])]
pub struct ExplainArgs {
    /// Configuration: file, directory or - (repeatable); the embedded default when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
    /// The requesting user's name.
    #[arg(long, required_unless_present = "uid", conflicts_with = "uid")]
    user: Option<String>,
    /// A group of the user (repeatable).
    #[arg(long = "group", value_name = "G")]
    groups: Vec<String>,
    /// The verb: get, list, watch, create, update, patch, delete, deletecollection; for
    /// non-resource requests the lower-case HTTP method.
    #[arg(long, required_unless_present = "uid", conflicts_with = "uid")]
    verb: Option<String>,
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
    /// The uid of a FlowSchema or PriorityLevelConfiguration, as a response header gives it.
    #[arg(long, value_name = "UID", conflicts_with = "groups")]
    uid: Option<String>,
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
    let config = configuration::load(&args.paths, &args.cluster, None)?;
    if let Some(uid) = &args.uid {
        return explain_uid(&config, uid, args.output);
    }
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
        user: args.user.as_deref().unwrap_or_default(),
        groups: &groups,
        verb: args.verb.as_deref().unwrap_or_default(),
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

/// What a uid names, for `--uid`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct UidExplanation {
    uid: String,
    /// `FlowSchema` or `PriorityLevelConfiguration`.
    kind: &'static str,
    /// The schema named, or none for a level.
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_schema: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matching_precedence: Option<i32>,
    priority_level: String,
    /// The schema's rules: a request goes to it when it matches one of them and no schema
    /// before it in matching order matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rules: Vec<serde_json::Value>,
    /// For a level: the schemas that send requests to it, in matching order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    flow_schemas: Vec<String>,
}

/// `--uid`: the FlowSchema or PriorityLevelConfiguration of `uid` in `config`.
fn explain_uid(
    config: &apfkit_dispatcher::config::Configuration,
    uid: &str,
    output: ReportFormat,
) -> Result<(), Failure> {
    let has_uid = |metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        metadata.uid.as_deref() == Some(uid)
    };
    let explanation = if let Some(schema) = config
        .flow_schemas()
        .iter()
        .find(|s| has_uid(&s.object.metadata))
    {
        UidExplanation {
            uid: uid.to_owned(),
            kind: "FlowSchema",
            flow_schema: Some(schema.name().to_owned()),
            matching_precedence: schema.object.spec.matching_precedence,
            priority_level: schema.priority_level().to_owned(),
            rules: schema
                .object
                .spec
                .rules
                .iter()
                .flatten()
                .map(|rule| serde_json::to_value(rule).unwrap_or_default())
                .collect(),
            flow_schemas: Vec::new(),
        }
    } else if let Some(level) = config
        .priority_levels()
        .iter()
        .find(|l| has_uid(&l.object.metadata))
    {
        UidExplanation {
            uid: uid.to_owned(),
            kind: "PriorityLevelConfiguration",
            flow_schema: None,
            matching_precedence: None,
            priority_level: level.name().to_owned(),
            rules: Vec::new(),
            flow_schemas: config
                .flow_schemas()
                .iter()
                .filter(|s| s.priority_level() == level.name())
                .map(|s| s.name().to_owned())
                .collect(),
        }
    } else {
        return Err(Failure::Invalid(format!(
            "no FlowSchema or PriorityLevelConfiguration has uid {}",
            printable(uid)
        )));
    };
    match output {
        ReportFormat::Json => print_json(&explanation),
        ReportFormat::Text => {
            let behavior = config
                .priority_level(&explanation.priority_level)
                .map(|l| &l.behavior);
            emit(&uid_text(&explanation, behavior))
        }
    }
}

fn uid_text(e: &UidExplanation, behavior: Option<&LevelBehavior>) -> String {
    let mut out = format!("UID:            {}\n", printable(&e.uid));
    if let Some(schema) = &e.flow_schema {
        out.push_str(&format!("FlowSchema:     {}\n", printable(schema)));
        if let Some(precedence) = e.matching_precedence {
            out.push_str(&format!("Precedence:     {precedence}\n"));
        }
    }
    out.push_str(&format!(
        "PriorityLevel:  {}\n",
        printable(&e.priority_level)
    ));
    out.push_str(&treatment(behavior));
    if e.flow_schema.is_some() {
        out.push_str(
            "Why:            a request comes here when it matches one of these rules and no \
             schema before this one (lower precedence) matched\n",
        );
        for rule in &e.rules {
            out.push_str(&format!(
                "Rule:           {}\n",
                printable(&rule.to_string())
            ));
        }
    } else {
        out.push_str(&format!(
            "FlowSchemas:    {}\n",
            printable(&e.flow_schemas.join(", "))
        ));
    }
    out
}

/// The level's treatment of requests, one line.
fn treatment(behavior: Option<&LevelBehavior>) -> String {
    match behavior {
        Some(LevelBehavior::Exempt) => {
            "Treatment:      exempt: never queued, never rejected\n".to_owned()
        }
        Some(LevelBehavior::Reject) => {
            "Treatment:      no queues: runs if seats are free now, else rejected (429)\n"
                .to_owned()
        }
        Some(LevelBehavior::Queue {
            queues,
            hand_size,
            queue_length_limit,
            ..
        }) => format!(
            "Treatment:      fair queuing over {queues} queues, hand size {hand_size}, queue length limit {queue_length_limit}\n"
        ),
        None => String::new(),
    }
}

fn text(e: &Explanation, behavior: Option<&LevelBehavior>) -> String {
    let mut out = format!(
        "FlowSchema:     {}\nPriorityLevel:  {}\n",
        printable(&e.flow_schema),
        printable(&e.priority_level)
    );
    out.push_str(&treatment(behavior));
    if let Some(LevelBehavior::Queue { .. }) = behavior {
        out.push_str(&format!("Distinguisher:  {:?}\n", e.distinguisher));
        out.push_str(&format!("Flow hash:      {}\n", e.hash));
        let hand: Vec<String> = e.hand.iter().map(ToString::to_string).collect();
        out.push_str(&format!("Hand (dealt):   {}\n", hand.join(", ")));
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
