//! The `meta/v1` and `runtime` schemas every group-version document carries.

use serde_json::{Value, json};

use super::build::*;

fn m(name: &str) -> String {
    format!("{META}.{name}")
}

/// Every meta schema, with `DeleteOptions` and `WatchEvent` declared for `group/version`.
pub fn schemas(group: &str, version: &str) -> Vec<(String, Value)> {
    let mut schemas = object_metadata();
    schemas.extend(responses());
    schemas.extend(requests(group, version));
    schemas
}

/// `DeleteOptions` and its `Preconditions`, `Patch`, `WatchEvent` and `RawExtension`: what
/// requests and watches carry, the first and `WatchEvent` declared for `group/version`.
fn requests(group: &str, version: &str) -> Vec<(String, Value)> {
    let shared_kinds = |schema: Value| {
        with(
            schema,
            "x-kubernetes-group-version-kind",
            json!([
                { "group": "", "kind": "", "version": "v1" },
                { "group": group, "kind": "", "version": version },
            ]),
        )
    };
    let delete_options = {
        let mut s = shared_kinds(object(
            "Options of a DELETE request.",
            vec![
                (
                    "apiVersion",
                    string("Versioned schema of this representation."),
                ),
                (
                    "dryRun",
                    array(
                        "When present, the deletion is checked but not persisted. The only accepted value is `All`.",
                        item_string(),
                        Some("atomic"),
                    ),
                ),
                (
                    "gracePeriodSeconds",
                    int64(
                        "Seconds to wait before deleting; zero deletes at once. Unset uses the kind's own default.",
                    ),
                ),
                (
                    "ignoreStoreReadErrorWithClusterBreakingPotential",
                    boolean(
                        "Delete even an object that the storage cannot read or decode. Dangerous; needs extra permission.",
                    ),
                ),
                ("kind", string("Kind of this representation.")),
                (
                    "orphanDependents",
                    boolean(
                        "Deprecated in favour of propagationPolicy: whether dependents are orphaned.",
                    ),
                ),
                (
                    "preconditions",
                    reference(
                        "Conditions that must hold for the deletion to proceed.",
                        &m("Preconditions"),
                    ),
                ),
                (
                    "propagationPolicy",
                    string(
                        "How dependents are garbage collected: `Orphan`, `Background` or `Foreground`.",
                    ),
                ),
            ],
            &[],
        ));
        for gvk in s["x-kubernetes-group-version-kind"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            gvk["kind"] = json!("DeleteOptions");
        }
        s
    };
    let watch_event = {
        let mut s = shared_kinds(object(
            "One change notification of a watch.",
            vec![
                (
                    "object",
                    reference(
                        "The object after an ADDED or MODIFIED event, before a DELETED event, or a Status after an ERROR.",
                        "io.k8s.apimachinery.pkg.runtime.RawExtension",
                    ),
                ),
                (
                    "type",
                    string("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
                ),
            ],
            &["type", "object"],
        ));
        for gvk in s["x-kubernetes-group-version-kind"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            gvk["kind"] = json!("WatchEvent");
        }
        s
    };
    vec![
        (m("DeleteOptions"), delete_options),
        (
            m("Patch"),
            object(
                "The body of a PATCH request; its format depends on the content type.",
                vec![],
                &[],
            ),
        ),
        (
            m("Preconditions"),
            object(
                "Conditions that must hold before an operation proceeds.",
                vec![
                    (
                        "resourceVersion",
                        string("Required resource version of the target."),
                    ),
                    ("uid", string("Required UID of the target.")),
                ],
                &[],
            ),
        ),
        (m("WatchEvent"), watch_event),
        (
            "io.k8s.apimachinery.pkg.runtime.RawExtension".to_owned(),
            object("An embedded object, kept as raw JSON.", vec![], &[]),
        ),
    ]
}

/// `ObjectMeta`, `ListMeta` and the types they use; also what apfkit-codegen embeds for the
/// kinds it makes from CustomResourceDefinitions.
pub fn object_metadata() -> Vec<(String, Value)> {
    vec![
        (
            m("FieldsV1"),
            object(
                "A set of field paths, encoded as a JSON trie, as recorded by server-side apply.",
                vec![],
                &[],
            ),
        ),
        (
            m("ListMeta"),
            object(
                "Metadata of a list response.",
                vec![
                    (
                        "continue",
                        string(
                            "Token to pass as `continue` to read the next page, when the list was limited.",
                        ),
                    ),
                    (
                        "remainingItemCount",
                        int64("Number of items after this page, when the server could count them."),
                    ),
                    (
                        "resourceVersion",
                        string(
                            "Version of the collection at the time of the list, for watches and consistency.",
                        ),
                    ),
                    (
                        "selfLink",
                        string("Deprecated and never set by current servers."),
                    ),
                ],
                &[],
            ),
        ),
        (
            m("ManagedFieldsEntry"),
            object(
                "The fields one manager owns, as recorded by server-side apply.",
                vec![
                    (
                        "apiVersion",
                        string("Version of the schema the field set refers to."),
                    ),
                    (
                        "fieldsType",
                        string("Encoding of fieldsV1; only `FieldsV1` exists."),
                    ),
                    ("fieldsV1", reference("The owned fields.", &m("FieldsV1"))),
                    ("manager", string("Name of the manager.")),
                    (
                        "operation",
                        string("`Apply` or `Update`: how the fields came to be owned."),
                    ),
                    (
                        "subresource",
                        string(
                            "Subresource through which the fields were written; empty for the main resource.",
                        ),
                    ),
                    (
                        "time",
                        reference("When the entry last changed.", &m("Time")),
                    ),
                ],
                &[],
            ),
        ),
        (
            m("ObjectMeta"),
            object(
                "Metadata every persisted object carries.",
                vec![
                    (
                        "annotations",
                        json!({ "description": "Free-form string metadata for tools; not used to select objects.", "type": "object", "additionalProperties": { "type": "string", "default": "" } }),
                    ),
                    (
                        "creationTimestamp",
                        reference(
                            "When the server created the object (RFC 3339, UTC). Read-only.",
                            &m("Time"),
                        ),
                    ),
                    (
                        "deletionGracePeriodSeconds",
                        int64("Grace period of a pending deletion. Read-only."),
                    ),
                    (
                        "deletionTimestamp",
                        reference(
                            "When the object will be deleted, once set by a deletion request. Read-only.",
                            &m("Time"),
                        ),
                    ),
                    (
                        "finalizers",
                        with(
                            array(
                                "Names of controllers that must finish before the object is removed.",
                                item_string(),
                                Some("set"),
                            ),
                            "x-kubernetes-patch-strategy",
                            json!("merge"),
                        ),
                    ),
                    (
                        "generateName",
                        string(
                            "Prefix from which the server builds a unique name when `name` is empty.",
                        ),
                    ),
                    (
                        "generation",
                        int64(
                            "Sequence number of the desired state; the server increments it when the spec changes. Read-only.",
                        ),
                    ),
                    (
                        "labels",
                        json!({ "description": "String key-value pairs used to select objects.", "type": "object", "additionalProperties": { "type": "string", "default": "" } }),
                    ),
                    (
                        "managedFields",
                        array(
                            "Which manager owns which fields. Maintained by the server.",
                            item_ref(&m("ManagedFieldsEntry")),
                            Some("atomic"),
                        ),
                    ),
                    (
                        "name",
                        string(
                            "Name, unique among objects of the kind (in the namespace, for namespaced kinds).",
                        ),
                    ),
                    (
                        "namespace",
                        string(
                            "Namespace of a namespaced object; empty for cluster-scoped objects.",
                        ),
                    ),
                    ("ownerReferences", {
                        let mut s = array(
                            "Objects this one depends on; it is garbage collected when they are gone.",
                            item_ref(&m("OwnerReference")),
                            Some("map"),
                        );
                        s["x-kubernetes-list-map-keys"] = json!(["uid"]);
                        s["x-kubernetes-patch-merge-key"] = json!("uid");
                        s["x-kubernetes-patch-strategy"] = json!("merge");
                        s
                    }),
                    (
                        "resourceVersion",
                        string(
                            "Opaque version of the object, for optimistic concurrency and watches. Read-only.",
                        ),
                    ),
                    (
                        "selfLink",
                        string("Deprecated and never set by current servers."),
                    ),
                    (
                        "uid",
                        string(
                            "Unique identifier of this object over the whole life of the cluster. Read-only.",
                        ),
                    ),
                ],
                &[],
            ),
        ),
        (
            m("OwnerReference"),
            with(
                object(
                    "A reference to an owning object in the same namespace (or cluster scope).",
                    vec![
                        ("apiVersion", string("API version of the owner.")),
                        (
                            "blockOwnerDeletion",
                            boolean(
                                "Whether foreground deletion of the owner waits for this object.",
                            ),
                        ),
                        (
                            "controller",
                            boolean("Whether the owner is the managing controller."),
                        ),
                        ("kind", string("Kind of the owner.")),
                        ("name", string("Name of the owner.")),
                        ("uid", string("UID of the owner.")),
                    ],
                    &["apiVersion", "kind", "name", "uid"],
                ),
                "x-kubernetes-map-type",
                json!("atomic"),
            ),
        ),
        (
            m("Time"),
            json!({ "description": "A point in time, encoded as an RFC 3339 string with second precision.", "type": "string", "format": "date-time" }),
        ),
    ]
}

/// `Status` and the discovery documents (`APIResourceList`).
fn responses() -> Vec<(String, Value)> {
    vec![
        (
            m("APIResource"),
            object(
                "One resource served by a group-version, as listed by discovery.",
                vec![
                    (
                        "categories",
                        array(
                            "Groupings, such as `all`, that the resource belongs to.",
                            item_string(),
                            Some("atomic"),
                        ),
                    ),
                    (
                        "group",
                        string(
                            "Preferred group of the resource, when it differs from the group being listed.",
                        ),
                    ),
                    (
                        "kind",
                        string("Kind of the resource, such as `FlowSchema`."),
                    ),
                    (
                        "name",
                        string(
                            "Plural name of the resource, with `/subresource` for subresources.",
                        ),
                    ),
                    (
                        "namespaced",
                        boolean("Whether the resource lives in namespaces."),
                    ),
                    (
                        "shortNames",
                        array(
                            "Short aliases that clients accept.",
                            item_string(),
                            Some("atomic"),
                        ),
                    ),
                    ("singularName", string("Singular name of the resource.")),
                    (
                        "storageVersionHash",
                        string("Opaque hash of the version in which objects are stored."),
                    ),
                    (
                        "verbs",
                        array("Verbs the resource supports.", item_string(), None),
                    ),
                    (
                        "version",
                        string(
                            "Preferred version of the resource, when it differs from the version being listed.",
                        ),
                    ),
                ],
                &["name", "singularName", "namespaced", "kind", "verbs"],
            ),
        ),
        (
            m("APIResourceList"),
            gvk(
                object(
                    "The resources of one group-version, as served by discovery.",
                    vec![
                        (
                            "apiVersion",
                            string("Versioned schema of this representation."),
                        ),
                        ("groupVersion", string("The group-version listed.")),
                        ("kind", string("Kind of this representation.")),
                        (
                            "resources",
                            array(
                                "The resources.",
                                item_ref(&m("APIResource")),
                                Some("atomic"),
                            ),
                        ),
                    ],
                    &["groupVersion", "resources"],
                ),
                "",
                "v1",
                "APIResourceList",
            ),
        ),
        (
            m("Status"),
            gvk(
                object(
                    "The result of an operation that returns no object, such as an error.",
                    vec![
                        (
                            "apiVersion",
                            string("Versioned schema of this representation."),
                        ),
                        ("code", int32("HTTP status code.")),
                        (
                            "details",
                            reference(
                                "Extra data about the reason, depending on it.",
                                &m("StatusDetails"),
                            ),
                        ),
                        ("kind", string("Kind of this representation.")),
                        ("message", string("Human-readable description.")),
                        (
                            "metadata",
                            struct_value("List metadata; normally empty.", &m("ListMeta")),
                        ),
                        (
                            "reason",
                            string("Machine-readable reason, such as `NotFound`."),
                        ),
                        ("status", string("`Success` or `Failure`.")),
                    ],
                    &[],
                ),
                "",
                "v1",
                "Status",
            ),
        ),
        (
            m("StatusCause"),
            object(
                "One cause of a failed operation.",
                vec![
                    (
                        "field",
                        string("Path of the field that caused the failure, when there is one."),
                    ),
                    ("message", string("Human-readable description.")),
                    ("reason", string("Machine-readable reason.")),
                ],
                &[],
            ),
        ),
        (
            m("StatusDetails"),
            object(
                "Details of a Status.",
                vec![
                    (
                        "causes",
                        array(
                            "The individual causes.",
                            item_ref(&m("StatusCause")),
                            Some("atomic"),
                        ),
                    ),
                    ("group", string("Group of the object concerned.")),
                    ("kind", string("Kind of the object concerned.")),
                    ("name", string("Name of the object concerned.")),
                    (
                        "retryAfterSeconds",
                        int32("Seconds the client should wait before retrying."),
                    ),
                    ("uid", string("UID of the object concerned.")),
                ],
                &[],
            ),
        ),
    ]
}
