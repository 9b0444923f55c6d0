//! The `apiregistration.k8s.io` schemas (APIService); v1beta1 and v1 share one shape.

use serde_json::{Value, json};

use super::build::META;
use super::build::*;

/// The API group.
pub const GROUP: &str = "apiregistration.k8s.io";
/// Every version, oldest first.
pub const VERSIONS: &[&str] = &["v1beta1", "v1"];

/// The schemas of one version.
pub fn schemas(version: &str) -> Vec<(String, Value)> {
    let d =
        |name: &str| format!("io.k8s.kube-aggregator.pkg.apis.apiregistration.{version}.{name}");
    let mut schemas = vec![
        (
            d("APIService"),
            gvk(
                object(
                    "An APIService tells the aggregator who serves one group-version: this API server itself, or a Service in the cluster.",
                    vec![
                        (
                            "apiVersion",
                            string("Versioned schema of this representation."),
                        ),
                        ("kind", string("Kind of this representation.")),
                        (
                            "metadata",
                            struct_value(
                                "Standard object metadata. The name must be `<version>.<group>`.",
                                &format!("{META}.ObjectMeta"),
                            ),
                        ),
                        (
                            "spec",
                            struct_value(
                                "Where the group-version is served and how it ranks in discovery.",
                                &d("APIServiceSpec"),
                            ),
                        ),
                        (
                            "status",
                            reference("Whether the backend is available.", &d("APIServiceStatus")),
                        ),
                    ],
                    &[],
                ),
                GROUP,
                version,
                "APIService",
            ),
        ),
        (
            d("APIServiceCondition"),
            condition(
                "One observed condition of an APIService.",
                "Type of the condition; `Available` is the only one defined.",
                &["type", "status"],
            ),
        ),
        (
            d("APIServiceList"),
            gvk(
                object(
                    "A list of APIServices.",
                    vec![
                        (
                            "apiVersion",
                            string("Versioned schema of this representation."),
                        ),
                        (
                            "items",
                            array("The objects.", item_ref(&d("APIService")), None),
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
                version,
                "APIServiceList",
            ),
        ),
        (
            d("APIServiceSpec"),
            object(
                "Where a group-version is served. Only HTTPS backends are supported.",
                vec![
                    (
                        "caBundle",
                        with(
                            with(
                                string(
                                    "PEM bundle (base64 on the wire) of the CAs that sign the backend's serving certificate; unset uses the system roots.",
                                ),
                                "format",
                                json!("byte"),
                            ),
                            "x-kubernetes-list-type",
                            json!("atomic"),
                        ),
                    ),
                    (
                        "group",
                        string(
                            "The API group served; empty only for the legacy core group with version `v1`.",
                        ),
                    ),
                    (
                        "groupPriorityMinimum",
                        int32(
                            "Lower bound of the group's priority in discovery (higher first); the group ranks by its highest value. \
                     Must be 1-20000.",
                        ),
                    ),
                    (
                        "insecureSkipTLSVerify",
                        boolean(
                            "Skip verifying the backend's certificate. Strongly discouraged; not allowed with caBundle.",
                        ),
                    ),
                    (
                        "service",
                        reference(
                            "The Service that serves the group-version; unset means this API server serves it.",
                            &d("ServiceReference"),
                        ),
                    ),
                    (
                        "version",
                        string("The API version served, such as `v1beta1`."),
                    ),
                    (
                        "versionPriority",
                        int32(
                            "Order of this version within its group (higher first); ties are broken by Kubernetes version order. \
                     Must be 1-1000.",
                        ),
                    ),
                ],
                &["groupPriorityMinimum", "versionPriority"],
            ),
        ),
        (
            d("APIServiceStatus"),
            object(
                "Observed state of an APIService.",
                vec![(
                    "conditions",
                    conditions(
                        "Current conditions, at most one per type.",
                        &d("APIServiceCondition"),
                        true,
                    ),
                )],
                &[],
            ),
        ),
        (
            d("ServiceReference"),
            object(
                "A Service that serves an API.",
                vec![
                    ("name", string("Name of the Service.")),
                    ("namespace", string("Namespace of the Service.")),
                    (
                        "port",
                        defaulted(
                            int32("HTTPS port of the Service, 1-65535. Unset means 443."),
                            json!(443),
                        ),
                    ),
                ],
                &[],
            ),
        ),
    ];
    schemas.extend(super::meta::schemas(GROUP, version));
    schemas
}
