//! The `flowcontrol.apiserver.k8s.io` schemas, one description for all five versions.
//!
//! The versions share their wire shape (the 1.28+ superset) except for the concurrency shares
//! of a Limited priority level: `assuredConcurrencyShares` before v1beta3, a value
//! `nominalConcurrencyShares` in v1beta3 and a nullable one in v1, and except for the
//! strategic-merge keys of `status.conditions`, which only v1beta3 and v1 declare.

use serde_json::{Value, json};

use super::build::META;
use super::build::*;

/// The API group.
pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// Every version, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1beta2", "v1beta3", "v1"];

/// The schemas of one version./// The schemas of one version.
pub fn schemas(version: &str) -> Vec<(String, Value)> {
    let version = Version { version };
    let mut schemas = version.flow_schemas();
    schemas.extend(version.policy_rules());
    schemas.extend(version.priority_levels());
    schemas.extend(version.priority_level_limits());
    schemas.extend(super::meta::schemas(GROUP, version.version));
    schemas
}

/// One version's descriptions: the parts that differ by version are methods.
/// The one version whose defaulting replaces a Limited level's 0 shares by 30 unless the object
/// carries the `flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares` annotation, which
/// kube-apiserver adds when it returns such a level in that version (Kubernetes 1.29+). Its
/// schema, its defaulting hook and its conversion hooks are all registered from here.
pub const PRESERVE_ZERO_SHARES_VERSION: &str = "v1beta3";

/// The name of a Limited level's concurrency shares in `version`: `assuredConcurrencyShares`
/// before v1beta3 renamed them. The one place that says so: the schemas, the Go layouts and
/// the conversion hooks' registration all ask here.
pub fn shares_field(version: &str) -> &'static str {
    match version {
        "v1alpha1" | "v1beta1" | "v1beta2" => "assuredConcurrencyShares",
        _ => "nominalConcurrencyShares",
    }
}

struct Version<'a> {
    version: &'a str,
}

impl Version<'_> {
    /// The definition name of `name` in this version.
    fn d(&self, name: &str) -> String {
        format!("io.k8s.api.flowcontrol.{}.{name}", self.version)
    }

    /// Whether `status.conditions` declares its strategic-merge keys (v1beta3 and v1 only).
    fn patch_merge(&self) -> bool {
        matches!(self.version, "v1beta3" | "v1")
    }

    /// The concurrency shares field of a Limited level: its name and schema.
    fn shares(&self) -> (&'static str, Value) {
        let name = shares_field(self.version);
        match self.version {
            "v1alpha1" | "v1beta1" | "v1beta2" => (
                name,
                defaulted_on_zero(
                    int32(
                        "Positive share of the server's concurrency limit reserved for this level. The nominal limit is \
                 ceil(serverConcurrencyLimit * shares / sum of all levels' shares). The server replaces unset and 0 by 30, \
                 so zero cannot be expressed in this version.",
                    ),
                    json!(30),
                ),
            ),
            PRESERVE_ZERO_SHARES_VERSION => (
                name,
                defaulted(
                    int32(
                        "Share of the server's concurrency limit reserved for this level: \
                 nominalCL = ceil(serverConcurrencyLimit * shares / sum of all levels' shares). Unset means 30. \
                 A 0 is also replaced by 30 unless the object carries the annotation \
                 `flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares`, which the server adds when it \
                 returns a level whose shares are 0.",
                    ),
                    json!(30),
                ),
            ),
            _ => (
                name,
                defaulted(
                    int32(
                        "Share of the server's concurrency limit reserved for this level: \
                 nominalCL = ceil(serverConcurrencyLimit * shares / sum of all levels' shares). Unset (or null) means 30; \
                 0 is kept and gives a level that can only run borrowed seats.",
                    ),
                    json!(30),
                ),
            ),
        }
    }

    /// A kind with metadata, spec and status.
    fn kind(
        &self,
        name: &str,
        spec_description: &str,
        status_description: &str,
        what: &str,
    ) -> Value {
        gvk(
            object(
                what,
                vec![
                    (
                        "apiVersion",
                        string("Versioned schema of this representation."),
                    ),
                    ("kind", string("Kind of this representation.")),
                    (
                        "metadata",
                        struct_value("Standard object metadata.", &format!("{META}.ObjectMeta")),
                    ),
                    (
                        "spec",
                        struct_value(spec_description, &self.d(&format!("{name}Spec"))),
                    ),
                    (
                        "status",
                        reference(status_description, &self.d(&format!("{name}Status"))),
                    ),
                ],
                &[],
            ),
            GROUP,
            self.version,
            name,
        )
    }

    /// The list kind of `name`.
    fn list(&self, name: &str, what: &str) -> Value {
        gvk(
            object(
                what,
                vec![
                    (
                        "apiVersion",
                        string("Versioned schema of this representation."),
                    ),
                    (
                        "items",
                        array("The objects.", item_ref(&self.d(name)), None),
                    ),
                    ("kind", string("Kind of this representation.")),
                    (
                        "metadata",
                        struct_value("Standard list metadata.", &format!("{META}.ListMeta")),
                    ),
                ],
                &["items"],
            ),
            GROUP,
            self.version,
            &format!("{name}List"),
        )
    }

    /// FlowSchema, its list, spec, status and condition, and what they reference by name.
    fn flow_schemas(&self) -> Vec<(String, Value)> {
        vec![
            (
                self.d("FlowDistinguisherMethod"),
                object(
                    "How requests of a flow schema are split into flows.",
                    vec![(
                        "type",
                        string_enum(
                            "`ByUser` (one flow per user name) or `ByNamespace` (one flow per namespace).",
                            &["ByUser", "ByNamespace"],
                        ),
                    )],
                    &["type"],
                ),
            ),
            (
                self.d("FlowSchema"),
                self.kind(
                    "FlowSchema",
                    "Which requests the schema matches, and where they go.",
                    "Conditions observed by the server, such as `Dangling`.",
                    "A FlowSchema matches a class of requests, sends them to a priority level, and splits them into flows.",
                ),
            ),
            (
                self.d("FlowSchemaCondition"),
                condition(
                    "One observed condition of a FlowSchema.",
                    "Type of the condition; unique within the list.",
                    &[],
                ),
            ),
            (
                self.d("FlowSchemaList"),
                self.list("FlowSchema", "A list of FlowSchemas."),
            ),
            (
                self.d("FlowSchemaSpec"),
                object(
                    "What a FlowSchema matches and where matching requests go.",
                    vec![
                        (
                            "distinguisherMethod",
                            reference(
                                "How matching requests are split into flows; unset puts them all in one flow.",
                                &self.d("FlowDistinguisherMethod"),
                            ),
                        ),
                        (
                            "matchingPrecedence",
                            defaulted_on_zero(
                                int32(
                                    "Order among schemas: the matching schema with the lowest value wins, ties broken by name. \
                         Must be 1-10000; unset and 0 mean 1000.",
                                ),
                                json!(1000),
                            ),
                        ),
                        (
                            "priorityLevelConfiguration",
                            struct_value(
                                "The priority level that serves matching requests.",
                                &self.d("PriorityLevelConfigurationReference"),
                            ),
                        ),
                        (
                            "rules",
                            array(
                                "A request matches the schema when it matches any rule; no rules match nothing.",
                                item_ref(&self.d("PolicyRulesWithSubjects")),
                                Some("atomic"),
                            ),
                        ),
                    ],
                    &["priorityLevelConfiguration"],
                ),
            ),
            (
                self.d("FlowSchemaStatus"),
                object(
                    "Observed state of a FlowSchema.",
                    vec![(
                        "conditions",
                        conditions(
                            "Current conditions, at most one per type.",
                            &self.d("FlowSchemaCondition"),
                            self.patch_merge(),
                        ),
                    )],
                    &[],
                ),
            ),
            (
                self.d("PriorityLevelConfigurationReference"),
                named(
                    "Names the priority level that a FlowSchema uses.",
                    "Name of the PriorityLevelConfiguration.",
                ),
            ),
        ]
    }

    /// A FlowSchema's rules: subjects, resource and non-resource rules.
    fn policy_rules(&self) -> Vec<(String, Value)> {
        vec![
            (
                self.d("GroupSubject"),
                named(
                    "A subject selected by user group.",
                    "Group name, such as `system:authenticated`; `*` matches every group.",
                ),
            ),
            (
                self.d("NonResourcePolicyRule"),
                object(
                    "Matches requests for paths that are not resources, such as `/healthz`.",
                    vec![
                        (
                            "nonResourceURLs",
                            array(
                                "Paths to match. An entry may end in `/*` to match a prefix; `*` alone matches every path and must be the only entry.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                        (
                            "verbs",
                            array(
                                "Lower-case HTTP verbs to match; `*` matches all and must be the only entry.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                    ],
                    &["verbs", "nonResourceURLs"],
                ),
            ),
            (
                self.d("PolicyRulesWithSubjects"),
                object(
                    "A rule: requests from any of the subjects that match any of the resource or non-resource rules.",
                    vec![
                        (
                            "nonResourceRules",
                            array(
                                "Rules for non-resource paths.",
                                item_ref(&self.d("NonResourcePolicyRule")),
                                Some("atomic"),
                            ),
                        ),
                        (
                            "resourceRules",
                            array(
                                "Rules for resource requests.",
                                item_ref(&self.d("ResourcePolicyRule")),
                                Some("atomic"),
                            ),
                        ),
                        (
                            "subjects",
                            array(
                                "Who the rule applies to; must not be empty.",
                                item_ref(&self.d("Subject")),
                                Some("atomic"),
                            ),
                        ),
                    ],
                    &["subjects"],
                ),
            ),
            (
                self.d("ResourcePolicyRule"),
                object(
                    "Matches resource requests by verb, API group, resource and namespace.",
                    vec![
                        (
                            "apiGroups",
                            array(
                                "API groups to match, `\"\"` for the core group; `*` matches all and must be the only entry.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                        (
                            "clusterScope",
                            boolean(
                                "Whether requests without a namespace (cluster-scoped resources, or all namespaces) match.",
                            ),
                        ),
                        (
                            "namespaces",
                            array(
                                "Namespaces to match; `*` matches any namespace but not a request without one. \
                         May be empty only when `clusterScope` is true.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                        (
                            "resources",
                            array(
                                "Resources to match, lower-case plural, with `/subresource` where needed; `*` matches all and must be the only entry.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                        (
                            "verbs",
                            array(
                                "Verbs to match, such as `get` or `list`; `*` matches all and must be the only entry.",
                                item_string(),
                                Some("set"),
                            ),
                        ),
                    ],
                    &["verbs", "apiGroups", "resources"],
                ),
            ),
            (
                self.d("ServiceAccountSubject"),
                object(
                    "A subject selected by service account.",
                    vec![
                        (
                            "name",
                            string(
                                "Service account name; `*` matches every account of the namespace.",
                            ),
                        ),
                        ("namespace", string("Namespace of the service account.")),
                    ],
                    &["namespace", "name"],
                ),
            ),
            (
                self.d("Subject"),
                union(
                    object(
                        "Who made a request: a user, a group or a service account.",
                        vec![
                            (
                                "group",
                                reference(
                                    "The group; required when `kind` is `Group`.",
                                    &self.d("GroupSubject"),
                                ),
                            ),
                            (
                                "kind",
                                string_enum(
                                    "Which of the other fields is set.",
                                    &["User", "Group", "ServiceAccount"],
                                ),
                            ),
                            (
                                "serviceAccount",
                                reference(
                                    "The service account; required when `kind` is `ServiceAccount`.",
                                    &self.d("ServiceAccountSubject"),
                                ),
                            ),
                            (
                                "user",
                                reference(
                                    "The user; required when `kind` is `User`.",
                                    &self.d("UserSubject"),
                                ),
                            ),
                        ],
                        &["kind"],
                    ),
                    "kind",
                    &[
                        ("group", "Group"),
                        ("serviceAccount", "ServiceAccount"),
                        ("user", "User"),
                    ],
                ),
            ),
            (
                self.d("UserSubject"),
                named(
                    "A subject selected by user name.",
                    "User name; `*` matches every user.",
                ),
            ),
        ]
    }

    /// PriorityLevelConfiguration, its list, spec, status and condition.
    fn priority_levels(&self) -> Vec<(String, Value)> {
        vec![
            (
                self.d("PriorityLevelConfiguration"),
                self.kind(
                    "PriorityLevelConfiguration",
                    "How this priority level is limited.",
                    "Conditions observed by the server.",
                    "A priority level: a share of the API server's concurrency, with its own queues.",
                ),
            ),
            (
                self.d("PriorityLevelConfigurationCondition"),
                condition(
                    "One observed condition of a PriorityLevelConfiguration.",
                    "Type of the condition; unique within the list.",
                    &[],
                ),
            ),
            (
                self.d("PriorityLevelConfigurationList"),
                self.list(
                    "PriorityLevelConfiguration",
                    "A list of PriorityLevelConfigurations.",
                ),
            ),
            (
                self.d("PriorityLevelConfigurationSpec"),
                union(
                    object(
                        "How a priority level is limited.",
                        vec![
                            (
                                "exempt",
                                reference(
                                    "Settings of an Exempt level; allowed only when `type` is `Exempt`, and may be left out then.",
                                    &self.d("ExemptPriorityLevelConfiguration"),
                                ),
                            ),
                            (
                                "limited",
                                reference(
                                    "Settings of a Limited level; required when `type` is `Limited`.",
                                    &self.d("LimitedPriorityLevelConfiguration"),
                                ),
                            ),
                            (
                                "type",
                                string_enum(
                                    "`Exempt` levels run every request at once; `Limited` levels enforce a concurrency limit.",
                                    &["Exempt", "Limited"],
                                ),
                            ),
                        ],
                        &["type"],
                    ),
                    "type",
                    &[("exempt", "Exempt"), ("limited", "Limited")],
                ),
            ),
            (
                self.d("PriorityLevelConfigurationStatus"),
                object(
                    "Observed state of a priority level.",
                    vec![(
                        "conditions",
                        conditions(
                            "Current conditions, at most one per type.",
                            &self.d("PriorityLevelConfigurationCondition"),
                            self.patch_merge(),
                        ),
                    )],
                    &[],
                ),
            ),
        ]
    }

    /// The two kinds of level a spec describes: exempt, and limited with its limit response
    /// and queuing.
    fn priority_level_limits(&self) -> Vec<(String, Value)> {
        vec![
            (
                self.d("ExemptPriorityLevelConfiguration"),
                object(
                    "Settings of an Exempt priority level. Requests at such a level are never queued or rejected; \
                 these numbers only take part in lending and borrowing among levels.",
                    vec![
                        (
                            "lendablePercent",
                            defaulted(
                                int32(
                                    "Percentage (0-100) of this level's nominal limit that other levels may borrow. Unset means 0.",
                                ),
                                json!(0),
                            ),
                        ),
                        (
                            "nominalConcurrencyShares",
                            defaulted(
                                int32(
                                    "Share of the server's concurrency limit nominally set aside for this level, which is lent out when unused. Unset means 0.",
                                ),
                                json!(0),
                            ),
                        ),
                    ],
                    &[],
                ),
            ),
            (
                self.d("LimitResponse"),
                union(
                    object(
                        "What happens to a request that cannot be executed at once.",
                        vec![
                            (
                                "queuing",
                                reference(
                                    "Queue parameters; allowed only when `type` is `Queue`.",
                                    &self.d("QueuingConfiguration"),
                                ),
                            ),
                            (
                                "type",
                                string_enum(
                                    "`Queue` to hold the request in a queue, `Reject` to answer 429 at once.",
                                    &["Queue", "Reject"],
                                ),
                            ),
                        ],
                        &["type"],
                    ),
                    "type",
                    &[("queuing", "Queuing")],
                ),
            ),
            (
                self.d("LimitedPriorityLevelConfiguration"),
                object(
                    "Settings of a Limited priority level: its share of the server's concurrency and what happens to the excess.",
                    vec![
                        (
                            "borrowingLimitPercent",
                            int32(
                                "Upper bound on borrowing from other levels, as a percentage of this level's nominal limit \
                         (may exceed 100). Unset means no bound.",
                            ),
                        ),
                        (
                            "lendablePercent",
                            defaulted(
                                int32(
                                    "Percentage (0-100) of this level's nominal limit that other levels may borrow. Unset means 0.",
                                ),
                                json!(0),
                            ),
                        ),
                        (
                            "limitResponse",
                            struct_value(
                                "What to do with requests that cannot run at once.",
                                &self.d("LimitResponse"),
                            ),
                        ),
                        self.shares(),
                    ],
                    &[],
                ),
            ),
            (
                self.d("QueuingConfiguration"),
                object(
                    "Queue parameters of a Limited priority level.",
                    vec![
                        (
                            "handSize",
                            defaulted_on_zero(
                                int32(
                                    "Number of queues dealt to each flow by shuffle sharding; a request joins the shortest of them. \
                         At most `queues`. Unset and 0 mean 8.",
                                ),
                                json!(8),
                            ),
                        ),
                        (
                            "queueLengthLimit",
                            defaulted_on_zero(
                                int32(
                                    "Requests a queue may hold before new ones are rejected. Unset and 0 mean 50.",
                                ),
                                json!(50),
                            ),
                        ),
                        (
                            "queues",
                            defaulted_on_zero(
                                int32(
                                    "Number of queues of the level; 1 disables shuffle sharding. Unset and 0 mean 64.",
                                ),
                                json!(64),
                            ),
                        ),
                    ],
                    &[],
                ),
            ),
        ]
    }
}

/// An object with only a required `name`.
fn named(what: &str, name: &str) -> Value {
    object(what, vec![("name", string(name))], &["name"])
}
