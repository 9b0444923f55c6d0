//! `meta.k8s.io/v1` `Table`s, which `kubectl get` asks for: columns a resource's printer
//! defines, or kube-apiserver's default (name and creation time,
//! `k8s.io/apiserver/pkg/registry/rest/table.go`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Value, json};

/// One column of a table.
#[derive(Debug, Clone)]
pub struct Column {
    /// The header, such as `PriorityLevel`.
    pub name: Cow<'static, str>,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_name: Cow<'static, str>,
    /// `name` for the object's name column, otherwise empty.
    pub format: Cow<'static, str>,
    /// What the column shows.
    pub description: Cow<'static, str>,
    /// 0 for the columns `kubectl get` shows, 1 and above for `-o wide`.
    pub priority: i32,
}

/// How a resource's objects are printed: the columns, the cells of an object given in
/// `version`, and the order of a list's rows (the store's order when `None`).
#[derive(Clone)]
pub struct Printer {
    /// The version the cells read the object in.
    pub version: Cow<'static, str>,
    /// The columns.
    pub columns: Cow<'static, [Column]>,
    /// The cells of an object, one per column.
    pub cells: Cells,
    /// The order of a list's rows.
    pub order: Option<fn(&Value, &Value) -> Ordering>,
}

/// The cells of an object, one per column.
pub type Cells = Arc<dyn Fn(&Value) -> Vec<Value> + Send + Sync>;

impl Printer {
    /// A kind's printer of its own columns, the cells of an object read in `version`, rows in
    /// the store's order.
    pub fn of(
        version: &'static str,
        columns: Vec<Column>,
        cells: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static,
    ) -> Printer {
        Printer {
            version: Cow::Borrowed(version),
            columns: Cow::Owned(columns),
            cells: Arc::new(cells),
            order: None,
        }
    }
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("version", &self.version)
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

/// The OpenAPI definition of `metadata`.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The `SwaggerDoc()` of the Go types whose fields kube-apiserver's printers describe their
/// columns with, by OpenAPI definition name: kube-apiserver 1.37's own, written by
/// `go run ./golden swaggerdoc` in `reference/` (the OpenAPI documents' descriptions differ:
/// they list enum values, and some were written after the Go docs).
const SWAGGER_DOC: &str = include_str!("../data/swagger-doc.json");

/// The documentation of `property` of the Go type of OpenAPI definition `definition` (such as
/// `io.k8s.api.flowcontrol.v1.FlowSchemaSpec`, `matchingPrecedence`): the text of its
/// `SwaggerDoc()`, which kube-apiserver's printers give a column showing that field. Empty
/// for a field it has none of.
pub fn field_doc(definition: &str, property: &str) -> Cow<'static, str> {
    type Docs = std::collections::HashMap<String, std::collections::HashMap<String, String>>;
    static DOCS: std::sync::OnceLock<Docs> = std::sync::OnceLock::new();
    DOCS.get_or_init(|| serde_json::from_str(SWAGGER_DOC).unwrap_or_default())
        .get(definition)
        .and_then(|fields| fields.get(property))
        .map_or(Cow::Borrowed(""), |doc| Cow::Borrowed(doc.as_str()))
}

/// A column: its header, type, priority and description.
pub fn column(
    name: &'static str,
    type_name: &'static str,
    priority: i32,
    description: Cow<'static, str>,
) -> Column {
    Column {
        name: Cow::Borrowed(name),
        type_name: Cow::Borrowed(type_name),
        format: Cow::Borrowed(""),
        description,
        priority,
    }
}

/// The first column of every table: the name, described as `metadata.name` is.
pub fn name_column() -> Column {
    Column {
        format: Cow::Borrowed("name"),
        ..column("Name", "string", 0, field_doc(OBJECT_META, "name"))
    }
}

/// The cell of [`name_column`]: the object's `metadata.name` (null when it has none).
pub fn name_cell(object: &Value) -> Value {
    object
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or_default()
}

/// A column of the object's creation, under `name` (`Age`, `Created At`), described as
/// `metadata.creationTimestamp` is.
pub fn creation_column(name: &'static str, type_name: &'static str) -> Column {
    column(
        name,
        type_name,
        0,
        field_doc(OBJECT_META, "creationTimestamp"),
    )
}

/// kube-apiserver's table for a resource without a printer (`rest.NewDefaultTableConvertor`):
/// the name and the creation time, described by `metav1.ObjectMeta`'s documentation.
pub fn default_columns() -> Vec<Column> {
    vec![name_column(), creation_column("Created At", "date")]
}

/// The cells of the default table: the name and the creation time as written.
pub fn default_cells(object: &Value) -> Vec<Value> {
    vec![
        object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null),
        object
            .pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

/// The column definitions of a table.
pub fn column_definitions(columns: &[Column]) -> Value {
    Value::Array(
        columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.type_name,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

/// apimachinery's `duration.HumanDuration` of the time since an object's
/// `metadata.creationTimestamp` (`k8s.io/apimachinery/pkg/util/duration/duration.go`), or
/// `<unknown>` without one.
pub fn age(object: &Value, now_seconds: i64) -> Value {
    let created = object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
    match created {
        Some(created) => Value::String(human_duration(now_seconds - created.as_second())),
        None => Value::String("<unknown>".to_owned()),
    }
}

/// `HumanDuration` of a number of seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Seconds since the Unix epoch, now.
pub fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_described_by_kubes_field_documentation() {
        assert!(super::field_doc(super::OBJECT_META, "name").starts_with("Name must be unique"));
        assert!(
            super::field_doc(
                "io.k8s.api.flowcontrol.v1.FlowSchemaSpec",
                "matchingPrecedence"
            )
            .starts_with("`matchingPrecedence` is used to choose")
        );
        assert_eq!(
            super::field_doc("io.k8s.api.core.v1.ServiceSpec", "nothing"),
            ""
        );
        assert_eq!(super::field_doc("nothing", "name"), "");
    }

    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (47 * 3600, "47h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 3600, "2d1h"),
            (8 * 86400, "8d"),
            (730 * 86400, "2y"),
            (731 * 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
        let object = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
        let created = "2026-01-01T00:00:00Z"
            .parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_second();
        assert_eq!(age(&object, created + 90), "90s");
        assert_eq!(age(&json!({}), created), "<unknown>");
    }
}
