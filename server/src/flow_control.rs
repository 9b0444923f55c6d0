//! API Priority and Fairness in front of `apfkit serve`: the dispatcher configured by the
//! FlowSchemas and PriorityLevelConfigurations the server stores (and configured again when
//! they change, as kube-apiserver's configuration controller does), and the dispatcher's
//! tower layer between authentication and the handler, classifying each request by its user
//! and what kube-apiserver's `RequestInfo` says it asks for.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::fields::apply;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::Revision;
use apfkit_apiserver::store::{ListRequest, Place, UpdateKind};
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::estimate::Observed;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::layer::{ApfLayer, Attributes};
use apfkit_dispatcher::queueset::WorkEstimate;
use apfkit_dispatcher::watches::{WatchTracker, Watched};
use apfkit_runtime::Object as _;
use apfkit_runtime::scheme::UnknownFields;
use apfkit_scheme::scheme::HubObject;
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};
use axum::extract::Request;

use crate::estimates::ObjectStats;
use apfkit_dispatcher::dispatch::printable;

use crate::Error;

/// The stored PriorityLevelConfigurations and FlowSchemas, and the revision they were read
/// at (the earlier of the two lists').
pub async fn stored_objects(
    server: &ApiServer<crate::ServeObject>,
) -> Result<(Vec<PriorityLevelConfiguration>, Vec<FlowSchema>, Revision), Error> {
    let (mut levels, mut schemas) = (Vec::new(), Vec::new());
    let mut read_at: Option<Revision> = None;
    for served in server.resources() {
        if served.config.group != "flowcontrol.apiserver.k8s.io" {
            continue;
        }
        let request = ListRequest {
            namespace: None,
            start: Vec::new(),
            limit: 0,
            revision: None,
            count: false,
        };
        let listed = server
            .objects()
            .list(&served, &request)
            .await
            .map_err(|e| Error::Start(format!("reading the APF configuration: {e}")))?;
        read_at = Some(read_at.map_or(listed.revision, |r| r.min(listed.revision)));
        for object in listed.items {
            match object {
                ServedObject::Builtin(HubObject::FlowSchema(schema)) => schemas.push(schema),
                ServedObject::Builtin(HubObject::PriorityLevelConfiguration(level)) => {
                    levels.push(level);
                }
                ServedObject::Builtin(HubObject::APIService(_)) | ServedObject::Custom(_) => {}
            }
        }
    }
    Ok((levels, schemas, read_at.unwrap_or(Revision(0))))
}

/// The configuration of the objects stored now, for a server of `limit` seats, the revision
/// it was read at and the FlowSchemas as stored; objects the configuration leaves out are
/// reported on standard error.
async fn stored(
    server: &ApiServer<crate::ServeObject>,
    limit: i32,
) -> Result<(Configuration, Revision, Vec<FlowSchema>), Error> {
    let (levels, schemas, read_at) = stored_objects(server).await?;
    let config = Configuration::new_trusted(levels, schemas.clone(), limit)
        .map_err(|e| Error::Start(format!("the APF configuration: {e}")))?;
    for skipped in config.skipped() {
        eprintln!(
            "apfkit serve: warning: {} {} left out of the APF configuration: {}",
            skipped.kind,
            printable(&skipped.name),
            printable(
                &skipped
                    .reasons
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        );
    }
    Ok((config, read_at, schemas))
}

/// The field manager kube-apiserver's configuration controller applies `Dangling` conditions
/// as (`apf_controller.go`'s `asFieldManager`).
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Reads the stored configuration and writes each stored FlowSchema's `Dangling` condition
/// where it differs from what the configuration says (its priority level exists or not),
/// through `/status`, with the messages of kube-apiserver's controller
/// (`apf_controller.go`); `lastTransitionTime` changes with the status. Answers the
/// configuration and the revision after the writes.
pub async fn configure_and_mark_dangling(
    server: &ApiServer<crate::ServeObject>,
    limit: i32,
) -> Result<(Configuration, Revision), Error> {
    let (config, mut read_at, schemas) = stored(server, limit).await?;
    let Some(served) = server.resource_of_kind("flowcontrol.apiserver.k8s.io", "FlowSchema") else {
        return Ok((config, read_at));
    };
    for wanted in config.dangling_conditions() {
        let Some(schema) = schemas
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(wanted.flow_schema.as_str()))
        else {
            continue;
        };
        let current = schema
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some("Dangling")));
        let same_status = current.is_some_and(|c| c.status.as_deref() == Some(wanted.status));
        let same = same_status
            && current.is_some_and(|c| {
                c.reason.as_deref() == Some(wanted.reason)
                    && c.message.as_deref() == Some(wanted.message.as_str())
            });
        if same {
            continue;
        }
        let condition = serde_json::json!({
            "type": "Dangling",
            "status": wanted.status,
            "reason": wanted.reason,
            "message": wanted.message,
            "lastTransitionTime": if same_status {
                current.and_then(|c| c.last_transition_time.clone())
            } else {
                Some(apfkit_apiserver::store::now())
            },
        });
        let name = wanted.flow_schema.clone();
        let place = Place {
            namespace: None,
            name: &name,
        };
        let codec = served.version("v1").unwrap_or(&*served.storage);
        // The consumer applies the condition to `/status`, forcing, as its field manager.
        let config = serde_json::json!({
            "apiVersion": codec.api_version(),
            "kind": "FlowSchema",
            "metadata": {"name": name},
            "status": {"conditions": [condition]},
        });
        match server
            .objects()
            .update_with(
                &served,
                place,
                ServedObject::Builtin(HubObject::FlowSchema(schema.clone())),
                &codec.api_version(),
                UpdateKind::Status,
                false,
                |old, _| {
                    let applied = apply(&served, codec, true, Some(old), &config, CONSUMER, true)?;
                    codec
                        .decode(&applied, UnknownFields::Ignore, &mut Vec::new())
                        .map_err(ApiError::internal)
                },
            )
            .await
        {
            Ok(written) => {
                if let Some(revision) = written
                    .object
                    .metadata()
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse().ok())
                {
                    read_at = read_at.max(Revision(revision));
                }
            }
            // Changed or deleted meanwhile: the watch brings the next round.
            Err(error) => eprintln!(
                "apfkit serve: warning: the Dangling condition of {}: {error}",
                printable(&name)
            ),
        }
    }
    Ok((config, read_at))
}

/// What APF sees of a request: the authenticated user (anonymous when the request carries
/// none) and kube-apiserver's reading of its method and URL, watches long-running; resource
/// requests are estimated from the stored objects and open watches (`stats`, `watches`) as
/// kube-apiserver's work estimator does, others take one seat.
pub fn attributes(request: &Request, stats: &ObjectStats, watches: &WatchTracker) -> Attributes {
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let info = apfkit_apiserver::request_info::of(request);
    let observed = info.is_resource_request.then(|| Observed {
        objects: stats.get(&info.api_group, &info.resource),
        watchers: watches.interested(
            &info.verb,
            &Watched {
                api_group: &info.api_group,
                resource: &info.resource,
                namespace: &info.namespace,
                name: &info.name,
            },
        ),
    });
    Attributes {
        user: user.name,
        groups: user.groups,
        long_running: info.is_long_running(),
        verb: info.verb.clone(),
        is_resource_request: info.is_resource_request,
        api_group: info.api_group.clone(),
        api_version: info.api_version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        namespace: info.namespace.clone(),
        name: info.name.clone(),
        path: info.path.clone(),
        estimate: WorkEstimate::ONE_SEAT,
        observed,
        query: request.uri().query().unwrap_or_default().to_owned(),
    }
}

/// The layer guarding the server's routes, estimating work from `stats` and the watches it
/// counts itself.
pub fn layer(
    guard: Guard,
    stats: ObjectStats,
) -> ApfLayer<impl Fn(&Request) -> Attributes + Send + Sync + 'static> {
    let watches = WatchTracker::default();
    let counted = watches.clone();
    ApfLayer::new(guard, move |request: &Request| {
        attributes(request, &stats, &counted)
    })
    .with_watch_tracker(watches)
}

/// The prefix of the audit annotations of flow control (beyond kube-apiserver: kubernetes
/// issue 113473 asks for them; decision 203).
pub const AUDIT_ANNOTATION_PREFIX: &str = "flowcontrol.apfkit/";

/// The layer in front of APF's: notes in the request's audit event what APF did with it
/// (its flow schema and priority level, by name and uid, the seats it held, how long it
/// waited, or why it was rejected).
pub async fn annotate_audit(
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let audit = apfkit_apiserver::audit::AuditContext::of(request.extensions());
    let response = next.run(request).await;
    if let (Some(audit), Some(handled)) = (
        audit,
        response
            .extensions()
            .get::<apfkit_dispatcher::layer::Handled>(),
    ) {
        for (key, value) in audit_annotations(handled) {
            audit.annotate(&format!("{AUDIT_ANNOTATION_PREFIX}{key}"), &value);
        }
    }
    response
}

/// The annotations of what APF did with a request, keys without their prefix.
fn audit_annotations(handled: &apfkit_dispatcher::layer::Handled) -> Vec<(&'static str, String)> {
    let matched = &handled.matched;
    let mut annotations = vec![
        ("flow-schema", matched.flow_schema.clone()),
        ("flow-schema-uid", matched.flow_schema_uid.clone()),
        ("priority-level", matched.priority_level.clone()),
        ("priority-level-uid", matched.priority_level_uid.clone()),
        (
            "queue-wait",
            apfkit_dispatcher::dump::go_duration(handled.waited),
        ),
    ];
    if let Some(seats) = handled.seats {
        annotations.push(("seats", seats.to_string()));
    }
    if let Some(reason) = handled.rejected {
        annotations.push(("rejected", reason.as_str().to_owned()));
    }
    annotations
}

/// How long the controller waits after a change for more before it configures again.
const SETTLE: Duration = Duration::from_millis(100);

/// Keeps `guard` configured by the stored objects, read at `read_at` first: an informer of
/// FlowSchemas and PriorityLevelConfigurations that, after changes (gathered for
/// [`SETTLE`]), reads them again and puts a dispatcher for them in front of new requests.
pub fn keep_configured(
    server: Arc<ApiServer<crate::ServeObject>>,
    guard: Guard,
    limit: i32,
    read_at: Revision,
) {
    let resources = server
        .resources()
        .into_iter()
        .filter(|served| served.config.group == "flowcontrol.apiserver.k8s.io")
        .collect();
    let configured = server.clone();
    Informer::new(server, resources)
        .handled_at(read_at)
        .settle(SETTLE)
        .run(move || {
            let (server, guard) = (configured.clone(), guard.clone());
            async move {
                match configure_and_mark_dangling(&server, limit).await {
                    Ok((config, _)) => guard.reconfigure(config),
                    Err(error) => eprintln!("apfkit serve: warning: {error}"),
                }
                Ok::<(), std::convert::Infallible>(())
            }
        });
}

/// `routes` with kube-apiserver's `/debug/api_priority_and_fairness/` tables of `guard`:
/// `dump_priority_levels`, `dump_queues` and `dump_requests` (with who asked for what when
/// the query's `includeRequestDetails` is not empty, as upstream reads it), as text.
pub(crate) fn debug_routes(routes: axum::Router, guard: &Guard) -> axum::Router {
    use apfkit_dispatcher::dispatch::Dispatcher;
    use axum::routing::get;
    let text = |body: String| ([("content-type", "text/plain; charset=utf-8")], body);
    let (levels, queues, requests) = (guard.clone(), guard.clone(), guard.clone());
    routes
        .route(
            "/debug/api_priority_and_fairness/dump_priority_levels",
            get(move || {
                let body = levels.inspect(Dispatcher::dump_priority_levels);
                async move { text(body) }
            }),
        )
        .route(
            "/debug/api_priority_and_fairness/dump_queues",
            get(move || {
                let body = queues.inspect(Dispatcher::dump_queues);
                async move { text(body) }
            }),
        )
        .route(
            "/debug/api_priority_and_fairness/dump_requests",
            get(move |uri: axum::http::Uri| {
                let details = form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
                    .find(|(key, _)| key == "includeRequestDetails")
                    .is_some_and(|(_, value)| !value.is_empty());
                let body = requests.dump_requests(details);
                async move { text(body) }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_dispatcher::estimate::ObjectCount;

    #[test]
    fn audit_annotations_name_what_apf_did_or_why_it_refused() {
        let matched = Arc::new(apfkit_dispatcher::dispatch::Matched {
            flow_schema: "global-default".into(),
            flow_schema_uid: "fs-uid".into(),
            priority_level: "global-default".into(),
            priority_level_uid: "pl-uid".into(),
        });
        let served = apfkit_dispatcher::layer::Handled {
            matched: matched.clone(),
            seats: Some(3),
            waited: Duration::from_micros(1500),
            rejected: None,
        };
        assert_eq!(
            audit_annotations(&served),
            [
                ("flow-schema", "global-default".to_owned()),
                ("flow-schema-uid", "fs-uid".to_owned()),
                ("priority-level", "global-default".to_owned()),
                ("priority-level-uid", "pl-uid".to_owned()),
                ("queue-wait", "1.5ms".to_owned()),
                ("seats", "3".to_owned()),
            ]
        );
        let rejected = apfkit_dispatcher::layer::Handled {
            matched,
            seats: None,
            waited: Duration::from_secs(15),
            rejected: Some(apfkit_dispatcher::RejectReason::TimeOut),
        };
        let annotations = audit_annotations(&rejected);
        assert!(annotations.contains(&("rejected", "time-out".to_owned())));
        assert!(annotations.contains(&("queue-wait", "15s".to_owned())));
        assert!(!annotations.iter().any(|(key, _)| *key == "seats"));
    }

    fn request(method: &str, uri: &str) -> Request {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap()
    }

    #[test]
    fn resource_requests_carry_what_the_estimator_reads() {
        let stats = ObjectStats::default();
        let watches = WatchTracker::default();
        let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
        let _watch = watches.register(Watched {
            api_group: "flowcontrol.apiserver.k8s.io",
            resource: "flowschemas",
            namespace: "",
            name: "",
        });
        let update = attributes(&request("PUT", &format!("{fs}/a")), &stats, &watches);
        let observed = update.observed.expect("a resource request is estimated");
        assert_eq!(observed.watchers, 1, "the watch of every FlowSchema wakes");
        assert_eq!(observed.objects, ObjectCount::Untracked, "not counted yet");
        let list = attributes(&request("GET", &format!("{fs}?limit=5")), &stats, &watches);
        assert_eq!(
            (list.verb.as_str(), list.query.as_str()),
            ("list", "limit=5")
        );
        assert_eq!(
            list.observed.map(|o| o.watchers),
            Some(0),
            "reads wake no watch"
        );
        assert!(
            attributes(&request("GET", "/healthz"), &stats, &watches)
                .observed
                .is_none()
        );
        assert_eq!(list.user, "system:anonymous");
    }
}
