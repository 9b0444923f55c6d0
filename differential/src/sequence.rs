//! Seeded random sequences of requests: creates, reads, replacements, every patch type,
//! server-side apply by two managers, deletes with finalizers and propagation policies,
//! lists with selectors and pages, and watches from a resource version the sequence saw,
//! over four kinds (a custom resource with a status subresource, Roles, EndpointSlices and
//! headless Services). Each sequence runs in a namespace of its own on every server; a
//! difference found is shrunk by proptest to the fewest operations that still show it.
//!
//! The values are chosen from small sets (two names, two label values, a few bodies, some
//! of them invalid) so that a sequence's operations meet: an update of what was deleted, a
//! create of what exists, an apply over another manager's fields, a patch of a terminating
//! object.

use std::fmt;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::session::{Request, Session};

/// The group of the custom resource the sequences use; [`widget_definition`] defines it.
pub const WIDGET_GROUP: &str = "sequences.example.com";

const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
/// The finalizer a sequence's objects may carry.
const FINALIZER: &str = "example.com/keep";

/// The kinds a sequence writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `widgets.sequences.example.com`: defaults, an enum, a maximum, a status subresource.
    Widget,
    /// `rbac.authorization.k8s.io/v1` Roles.
    Role,
    /// `discovery.k8s.io/v1` EndpointSlices.
    EndpointSlice,
    /// core/v1 Services, headless (a cluster IP would be each server's own choice).
    Service,
}

impl Kind {
    fn collection(self, namespace: &str) -> String {
        match self {
            Kind::Widget => format!("/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/widgets"),
            Kind::Role => {
                format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles")
            }
            Kind::EndpointSlice => {
                format!("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices")
            }
            Kind::Service => format!("/api/v1/namespaces/{namespace}/services"),
        }
    }

    fn type_meta(self) -> (String, &'static str) {
        match self {
            Kind::Widget => (format!("{WIDGET_GROUP}/v1"), "Widget"),
            Kind::Role => ("rbac.authorization.k8s.io/v1".to_owned(), "Role"),
            Kind::EndpointSlice => ("discovery.k8s.io/v1".to_owned(), "EndpointSlice"),
            Kind::Service => ("v1".to_owned(), "Service"),
        }
    }

    /// The kind's own fields in variant `variant` (0–3; the last of each kind is invalid).
    fn content(self, variant: u8) -> Value {
        match (self, variant % 4) {
            (Kind::Widget, 0) => json!({"spec": {"color": "red"}}),
            (Kind::Widget, 1) => json!({"spec": {"size": 3, "color": "blue"}}),
            (Kind::Widget, 2) => json!({"spec": {"size": 7, "tags": ["x", "y"]}}),
            // One error only: kube-openapi checks a schema's properties in Go's map order,
            // which is random, so two errors come in either order.
            (Kind::Widget, _) => json!({"spec": {"size": 11}}),
            (Kind::Role, 0) => {
                json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
            }
            (Kind::Role, 1) => json!({"rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]}),
            // No empty lists: kube stores them as none, and a write of `[]` over none changes
            // only the manager's time in managed fields, which a server keeps or not as the
            // second turns (the `empty_lists` case holds the empty lists to kube's answers).
            (Kind::Role, 2) => json!({"rules": [{"apiGroups": [""], "resources": ["secrets"],
                "resourceNames": ["one"], "verbs": ["get"]}]}),
            (Kind::Role, _) => json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
            // Each endpoint with its `conditions`: Go holds an absent one as `{}`, which an
            // apply (whose configuration is not read through Go's types) would change back,
            // moving only the manager's time, so a server writes or not as the second turns.
            (Kind::EndpointSlice, 0) => json!({"addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]}),
            (Kind::EndpointSlice, 1) => json!({"addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                    {"addresses": ["10.0.0.2"], "conditions": {"serving": false}}],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
            (Kind::EndpointSlice, 2) => json!({"addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.3"], "hostname": "three",
                    "conditions": {"ready": false}}]}),
            (Kind::EndpointSlice, _) => json!({"addressType": "IPv4",
                "endpoints": [{"addresses": ["not-an-address"], "conditions": {}}]}),
            (Kind::Service, 0) => json!({"spec": {"clusterIP": "None",
                "ports": [{"port": 80}], "selector": {"app": "a"}}}),
            (Kind::Service, 1) => json!({"spec": {"clusterIP": "None",
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}}),
            (Kind::Service, 2) => json!({"spec": {"clusterIP": "None",
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
                "selector": {"app": "b", "tier": "c"}}}),
            (Kind::Service, _) => json!({"spec": {"clusterIP": "None",
                "ports": [{"port": 80}, {"port": 443}]}}),
        }
    }

    /// A status the kind's status subresource takes, if it has one.
    fn status(self, variant: u8) -> Option<Value> {
        let second = variant % 2 == 1;
        match self {
            Kind::Widget => {
                Some(json!({"status": {"phase": if second { "Done" } else { "Ready" }}}))
            }
            Kind::Service => Some(json!({"status": {"conditions": [{"type": "Checked",
                "status": if second { "False" } else { "True" }, "reason": "Seen",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
            Kind::Role | Kind::EndpointSlice => None,
        }
    }
}

/// One operation of a sequence. Names come from two (`a`, `b`), label values from two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// POST of a new object.
    Create {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
        /// Its `tier` label (`a` or `b`).
        tier: Tier,
        /// Whether it carries [`FINALIZER`].
        finalizer: bool,
        /// Which of the kind's bodies.
        variant: u8,
    },
    /// GET of one object.
    Get {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
    },
    /// GET, then PUT of what was read with its tier and body changed (of a fresh object,
    /// without a resource version, when the read found none).
    Replace {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
        /// The new `tier` label.
        tier: Tier,
        /// Which of the kind's bodies.
        variant: u8,
    },
    /// A patch of one of the four types.
    Patch {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
        /// Which patch.
        patch: PatchKind,
        /// The `tier` label it sets.
        tier: Tier,
        /// Which of the kind's bodies it carries (or which JSON patch).
        variant: u8,
    },
    /// A merge patch of the status subresource (or of a kind without one: 404).
    PatchStatus {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
        /// Which status.
        variant: u8,
    },
    /// A merge patch that drops every finalizer.
    DropFinalizers {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
    },
    /// DELETE, with a propagation policy and a dry run or not.
    Delete {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: Name,
        /// `propagationPolicy`, if any.
        propagation: Option<Propagation>,
        /// `dryRun=All`.
        dry_run: bool,
    },
    /// A list, by label selector or not, in pages of `limit` or whole.
    List {
        /// Its kind.
        kind: Kind,
        /// The label selector, if any.
        selector: Option<Selector>,
        /// The page size, if any: every page is read.
        limit: Option<u8>,
    },
    /// A watch (closed by the server after a second) from the resource version of one of
    /// the objects the sequence has written, counted back from the latest.
    Watch {
        /// Its kind.
        kind: Kind,
        /// Which resource version, counted back from the latest seen (none seen: nothing is
        /// sent).
        back: u8,
        /// The label selector, if any.
        selector: Option<Selector>,
    },
}

/// The two names a sequence's objects take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    /// `a`.
    A,
    /// `b`.
    B,
}

/// The two values of the `tier` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// `front`.
    Front,
    /// `back`.
    Back,
}

/// The patch types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`: one of four patches (a label added; kube-rs's
    /// finalizer test of an absent member against null then its add; the finalizers
    /// removed; a test that fails).
    Json,
    /// `application/strategic-merge-patch+json` (415 for a custom resource).
    Strategic,
    /// `application/apply-patch+yaml` by the manager `one` or `two`, forced or not.
    Apply {
        /// The second manager rather than the first.
        second: bool,
        /// `force=true`.
        force: bool,
    },
}

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// `Background`.
    Background,
    /// `Orphan`: the object is kept with the `orphan` finalizer.
    Orphan,
    /// `Foreground`: the object is kept with the `foregroundDeletion` finalizer.
    Foreground,
}

/// The label selectors of lists and watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// `tier=front`.
    Front,
    /// `tier!=back`.
    NotBack,
    /// `tier in (front,back)`.
    Either,
}

impl Name {
    fn as_str(self) -> &'static str {
        match self {
            Name::A => "a",
            Name::B => "b",
        }
    }
}

impl Tier {
    fn as_str(self) -> &'static str {
        match self {
            Tier::Front => "front",
            Tier::Back => "back",
        }
    }
}

impl Selector {
    fn query(self) -> &'static str {
        match self {
            Selector::Front => "labelSelector=tier%3Dfront",
            Selector::NotBack => "labelSelector=tier%21%3Dback",
            Selector::Either => "labelSelector=tier+in+%28front%2Cback%29",
        }
    }
}

/// A sequence of operations and the namespace it runs in.
#[derive(Clone, PartialEq, Eq)]
pub struct Sequence {
    /// The namespace, made by the sequence's first request.
    pub namespace: String,
    /// The operations, in order.
    pub operations: Vec<Operation>,
}

impl fmt::Debug for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "in namespace {}:", self.namespace)?;
        for (index, operation) in self.operations.iter().enumerate() {
            writeln!(f, "  {}. {operation:?}", index + 1)?;
        }
        Ok(())
    }
}

/// The strategy of one operation.
pub fn operation() -> impl Strategy<Value = Operation> {
    let kind = prop_oneof![
        Just(Kind::Widget),
        Just(Kind::Role),
        Just(Kind::EndpointSlice),
        Just(Kind::Service)
    ];
    let name = prop_oneof![Just(Name::A), Just(Name::B)];
    let tier = prop_oneof![Just(Tier::Front), Just(Tier::Back)];
    let variant = 0u8..4;
    let selector = proptest::option::of(prop_oneof![
        Just(Selector::Front),
        Just(Selector::NotBack),
        Just(Selector::Either)
    ]);
    let patch = prop_oneof![
        Just(PatchKind::Merge),
        Just(PatchKind::Json),
        Just(PatchKind::Strategic),
        (any::<bool>(), any::<bool>())
            .prop_map(|(second, force)| PatchKind::Apply { second, force }),
    ];
    // `Orphan` and `Foreground` leave the garbage collector's finalizers, which neither
    // server's collector removes here (none runs beside the reference): the object stays
    // until a `DropFinalizers` or a `Background` delete.
    let propagation = proptest::option::of(prop_oneof![
        Just(Propagation::Background),
        Just(Propagation::Orphan),
        Just(Propagation::Foreground),
    ]);
    prop_oneof![
        // Simpler operations first: proptest shrinks toward them.
        3 => (kind.clone(), name.clone()).prop_map(|(kind, name)| Operation::Get { kind, name }),
        6 => (kind.clone(), name.clone(), tier.clone(), any::<bool>(), variant.clone()).prop_map(
            |(kind, name, tier, finalizer, variant)| Operation::Create {
                kind, name, tier, finalizer, variant
            }
        ),
        2 => (kind.clone(), name.clone(), tier.clone(), variant.clone())
            .prop_map(|(kind, name, tier, variant)| Operation::Replace { kind, name, tier, variant }),
        6 => (kind.clone(), name.clone(), patch, tier, variant.clone()).prop_map(
            |(kind, name, patch, tier, variant)| Operation::Patch { kind, name, patch, tier, variant }
        ),
        1 => (kind.clone(), name.clone(), variant)
            .prop_map(|(kind, name, variant)| Operation::PatchStatus { kind, name, variant }),
        2 => (kind.clone(), name.clone())
            .prop_map(|(kind, name)| Operation::DropFinalizers { kind, name }),
        // No dry run with `Background`: where it would take the collector's last finalizer
        // kube answers an empty object (decision 277).
        3 => (kind.clone(), name, propagation, any::<bool>()).prop_map(
            |(kind, name, propagation, dry_run)| Operation::Delete {
                kind,
                name,
                dry_run: dry_run && propagation != Some(Propagation::Background),
                propagation,
            }
        ),
        2 => (kind.clone(), selector.clone(), proptest::option::of(1u8..3))
            .prop_map(|(kind, selector, limit)| Operation::List { kind, selector, limit }),
        1 => (kind, 0u8..4, selector)
            .prop_map(|(kind, back, selector)| Operation::Watch { kind, back, selector }),
    ]
}

/// The strategy of a sequence's operations: `length` of them.
pub fn operations(length: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Operation>> {
    proptest::collection::vec(operation(), length)
}

/// The CustomResourceDefinition of the widgets the sequences write.
pub fn widget_definition() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{WIDGET_GROUP}")},
        "spec": {"group": WIDGET_GROUP, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "default": 1, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "tags": {"type": "array", "items": {"type": "string"},
                            "x-kubernetes-list-type": "set"}}},
                    "status": {"type": "object",
                        "properties": {"phase": {"type": "string"}}}}}}}]}})
}

impl Sequence {
    /// The path of the widgets of `namespace`, for waiting until the definition is served.
    pub fn widgets(namespace: &str) -> String {
        Kind::Widget.collection(namespace)
    }

    /// Sends the sequence's requests through `session`: the namespace first, then each
    /// operation's.
    pub async fn run(&self, session: &mut Session) {
        let namespace = &self.namespace;
        session
            .send(Request::post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace}}),
            ))
            .await;
        // The resource versions of the objects written, oldest first, for watches.
        let mut written: Vec<String> = Vec::new();
        for operation in &self.operations {
            let version = self.send(session, operation, &written).await;
            written.extend(version);
        }
    }

    /// Sends one operation's requests; answers the resource version of the object a write
    /// left, if it left one.
    async fn send(
        &self,
        session: &mut Session,
        operation: &Operation,
        written: &[String],
    ) -> Option<String> {
        let namespace = &self.namespace;
        let object_path =
            |kind: Kind, name: Name| format!("{}/{}", kind.collection(namespace), name.as_str());
        let answer = match *operation {
            Operation::Create {
                kind,
                name,
                tier,
                finalizer,
                variant,
            } => {
                let mut body = object(kind, name, tier, variant);
                if finalizer {
                    body["metadata"]["finalizers"] = json!([FINALIZER]);
                }
                session
                    .send(Request::post(&kind.collection(namespace), &body))
                    .await
            }
            Operation::Get { kind, name } => {
                session.send(Request::get(&object_path(kind, name))).await;
                return None;
            }
            Operation::Replace {
                kind,
                name,
                tier,
                variant,
            } => {
                let path = object_path(kind, name);
                let read = session.send(Request::get(&path)).await;
                let mut body = object(kind, name, tier, variant);
                if session.last_code() == 200 {
                    body["metadata"] = read["metadata"].clone();
                    body["metadata"]["labels"] = json!({"tier": tier.as_str()});
                    if let Some(status) = read.get("status") {
                        body["status"] = status.clone();
                    }
                }
                session.send(Request::put(&path, &body)).await
            }
            Operation::Patch {
                kind,
                name,
                patch,
                tier,
                variant,
            } => {
                let path = object_path(kind, name);
                let labels = json!({"metadata": {"labels": {"tier": tier.as_str()}}});
                let request = match patch {
                    PatchKind::Merge => {
                        Request::patch(&path, MERGE, &merged(labels, kind.content(variant)))
                    }
                    PatchKind::Strategic => {
                        Request::patch(&path, STRATEGIC, &merged(labels, kind.content(variant)))
                    }
                    PatchKind::Json => {
                        Request::patch(&path, JSON_PATCH, &json_patch(tier, variant))
                    }
                    PatchKind::Apply { second, force } => {
                        let manager = if second { "two" } else { "one" };
                        Request::patch(
                            &format!("{path}?fieldManager={manager}&force={force}"),
                            APPLY,
                            &object(kind, name, tier, variant),
                        )
                    }
                };
                session.send(request).await
            }
            Operation::PatchStatus {
                kind,
                name,
                variant,
            } => {
                let status = kind
                    .status(variant)
                    .unwrap_or_else(|| json!({"status": {"phase": "Ready"}}));
                session
                    .send(Request::patch(
                        &format!("{}/status", object_path(kind, name)),
                        MERGE,
                        &status,
                    ))
                    .await
            }
            Operation::DropFinalizers { kind, name } => {
                session
                    .send(Request::patch(
                        &object_path(kind, name),
                        MERGE,
                        &json!({"metadata": {"finalizers": null}}),
                    ))
                    .await
            }
            Operation::Delete {
                kind,
                name,
                propagation,
                dry_run,
            } => {
                let mut query = Vec::new();
                if let Some(propagation) = propagation {
                    query.push(format!("propagationPolicy={propagation:?}"));
                }
                if dry_run {
                    query.push("dryRun=All".to_owned());
                }
                let mut path = object_path(kind, name);
                if !query.is_empty() {
                    path = format!("{path}?{}", query.join("&"));
                }
                session.send(Request::delete(&path)).await
            }
            Operation::List {
                kind,
                selector,
                limit,
            } => {
                let mut query: Vec<String> =
                    selector.map(|s| s.query().to_owned()).into_iter().collect();
                if let Some(limit) = limit {
                    query.push(format!("limit={limit}"));
                }
                let base = kind.collection(namespace);
                let mut token = String::new();
                // Every page, a bounded number of them.
                for _ in 0..8 {
                    let mut parameters = query.clone();
                    if !token.is_empty() {
                        parameters.push(format!("continue={token}"));
                    }
                    let path = if parameters.is_empty() {
                        base.clone()
                    } else {
                        format!("{base}?{}", parameters.join("&"))
                    };
                    let page = session.send(Request::get(&path)).await;
                    token = page["metadata"]["continue"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if token.is_empty() {
                        break;
                    }
                }
                return None;
            }
            Operation::Watch {
                kind,
                back,
                selector,
            } => {
                let version = written.iter().rev().nth(usize::from(back))?;
                let mut path = format!(
                    "{}?watch=true&timeoutSeconds=1&resourceVersion={version}",
                    kind.collection(namespace)
                );
                if let Some(selector) = selector {
                    path = format!("{path}&{}", selector.query());
                }
                session.send(Request::get(&path)).await;
                return None;
            }
        };
        (200..300)
            .contains(&session.last_code())
            .then(|| {
                answer["metadata"]["resourceVersion"]
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten()
    }
}

/// A whole object of `kind`: type, name, `tier` label and the variant's fields.
fn object(kind: Kind, name: Name, tier: Tier, variant: u8) -> Value {
    let (api_version, kind_name) = kind.type_meta();
    merged(
        json!({"apiVersion": api_version, "kind": kind_name,
            "metadata": {"name": name.as_str(), "labels": {"tier": tier.as_str()}}}),
        kind.content(variant),
    )
}

/// `base` with the members of `more` added (one level deep: `spec`, `rules`, `endpoints`).
fn merged(mut base: Value, more: Value) -> Value {
    if let (Value::Object(base), Value::Object(more)) = (&mut base, more) {
        base.extend(more);
    }
    base
}

/// The JSON patches: a label set, kube-rs's finalizer patch (a test of the absent member
/// against null, then its add), the finalizers removed, and a test that fails.
fn json_patch(tier: Tier, variant: u8) -> Value {
    match variant % 4 {
        0 => json!([{"op": "add", "path": "/metadata/labels", "value": {"tier": tier.as_str()}}]),
        1 => json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}]),
        2 => json!([{"op": "remove", "path": "/metadata/finalizers"}]),
        _ => json!([{"op": "test", "path": "/metadata/labels/tier", "value": "none"},
            {"op": "replace", "path": "/metadata/labels/tier", "value": tier.as_str()}]),
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    use super::*;

    fn generated(seed: u8, count: usize) -> Vec<Vec<Operation>> {
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
        );
        (0..count)
            .map(|_| operations(1..60).new_tree(&mut runner).unwrap().current())
            .collect()
    }

    #[test]
    fn a_seed_makes_the_same_sequences_every_time() {
        assert_eq!(generated(55, 20), generated(55, 20));
        assert_ne!(generated(55, 20), generated(56, 20));
    }

    #[test]
    fn sequences_meet_every_kind_and_operation() {
        let all: Vec<Operation> = generated(1, 40).into_iter().flatten().collect();
        for kind in [Kind::Widget, Kind::Role, Kind::EndpointSlice, Kind::Service] {
            let of_kind = |operation: &Operation| match operation {
                Operation::Create { kind: k, .. }
                | Operation::Get { kind: k, .. }
                | Operation::Replace { kind: k, .. }
                | Operation::Patch { kind: k, .. }
                | Operation::PatchStatus { kind: k, .. }
                | Operation::DropFinalizers { kind: k, .. }
                | Operation::Delete { kind: k, .. }
                | Operation::List { kind: k, .. }
                | Operation::Watch { kind: k, .. } => *k == kind,
            };
            assert!(all.iter().any(of_kind), "{kind:?}");
        }
        for wanted in [
            |o: &Operation| matches!(o, Operation::Watch { .. }),
            |o: &Operation| matches!(o, Operation::List { limit: Some(_), .. }),
            |o: &Operation| {
                matches!(
                    o,
                    Operation::Create {
                        finalizer: true,
                        ..
                    }
                )
            },
            |o: &Operation| {
                matches!(
                    o,
                    Operation::Patch {
                        patch: PatchKind::Apply { .. },
                        ..
                    }
                )
            },
            |o: &Operation| matches!(o, Operation::Delete { dry_run: true, .. }),
        ] {
            assert!(all.iter().any(wanted));
        }
    }

    #[test]
    fn bodies_are_whole_objects_of_their_kind() {
        for kind in [Kind::Widget, Kind::Role, Kind::EndpointSlice, Kind::Service] {
            for variant in 0..4 {
                let body = object(kind, Name::B, Tier::Back, variant);
                assert_eq!(body["kind"], kind.type_meta().1);
                assert_eq!(body["metadata"]["name"], "b");
                assert_eq!(body["metadata"]["labels"]["tier"], "back");
            }
        }
        // No empty lists in a write's body (see `Kind::content`).
        let empty_list = |value: &Value| value.as_array().is_some_and(Vec::is_empty);
        for kind in [Kind::Role, Kind::EndpointSlice] {
            for variant in 0..4 {
                let content = kind.content(variant);
                assert!(!content.as_object().unwrap().values().any(empty_list));
            }
        }
    }
}
