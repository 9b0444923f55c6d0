//! Conditions as apimachinery's `meta.SetStatusCondition` and kube-controller-manager's
//! migrator (`pkg/controller/storageversionmigrator/util.go`) write them, on JSON lists of
//! `metav1.Condition`.

use serde_json::{Value, json};

/// The condition a migration under way has (`MigrationRunning`).
pub(crate) const RUNNING: &str = "Running";
/// The condition of a migration that finished (`MigrationSucceeded`).
pub(crate) const SUCCEEDED: &str = "Succeeded";
/// The condition of a migration that gave up (`MigrationFailed`).
pub(crate) const FAILED: &str = "Failed";

/// `migrationRunningReason`.
pub(crate) const RUNNING_REASON: &str = "MigrationRunning";
/// `migrationSuccessStatusReason`.
pub(crate) const SUCCEEDED_REASON: &str = "StorageVersionMigrationSucceeded";
/// `migrationFailedStatusReason`.
pub(crate) const FAILED_REASON: &str = "StorageVersionMigrationFailed";

/// A condition to set: type, status, reason, message, observed generation.
pub(crate) struct Wanted<'a> {
    pub(crate) kind: &'a str,
    pub(crate) status: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) message: String,
    pub(crate) observed_generation: i64,
}

impl Wanted<'_> {
    /// A `True` condition, generation 0 (a StorageVersionMigration has none).
    pub(crate) fn true_<'a>(kind: &'a str, reason: &'a str, message: String) -> Wanted<'a> {
        Wanted {
            kind,
            status: "True",
            reason,
            message,
            observed_generation: 0,
        }
    }
}

/// The conditions of `status` (made a list when it is not one).
fn list(status: &mut Value) -> Option<&mut Vec<Value>> {
    if !status.is_object() {
        *status = json!({});
    }
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    status["conditions"].as_array_mut()
}

/// The condition of type `kind`.
pub(crate) fn find<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// `meta.IsStatusConditionTrue`.
pub(crate) fn is_true(status: &Value, kind: &str) -> bool {
    find(status, kind).is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

/// `meta.SetStatusCondition`: a new type appended with the time now; an existing one takes
/// the status (and a new transition time when it changes), reason, message and observed
/// generation given. Answers whether anything changed.
pub(crate) fn set(status: &mut Value, wanted: &Wanted<'_>, now: &Value) -> bool {
    let Some(conditions) = list(status) else {
        return false;
    };
    let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(wanted.kind))
    else {
        let mut condition = json!({
            "type": wanted.kind,
            "status": wanted.status,
            "lastTransitionTime": now,
            "reason": wanted.reason,
            "message": wanted.message,
        });
        if wanted.observed_generation != 0 {
            condition["observedGeneration"] = wanted.observed_generation.into();
        }
        conditions.push(condition);
        return true;
    };
    let mut changed = false;
    let take = |existing: &mut Value, field: &str, value: Value| {
        if existing.get(field).unwrap_or(&Value::Null) != &value {
            existing[field] = value;
            true
        } else {
            false
        }
    };
    if take(existing, "status", wanted.status.into()) {
        existing["lastTransitionTime"] = now.clone();
        changed = true;
    }
    changed |= take(existing, "reason", wanted.reason.into());
    changed |= take(existing, "message", wanted.message.clone().into());
    let generation = existing
        .get("observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if generation != wanted.observed_generation {
        if wanted.observed_generation == 0 {
            if let Some(map) = existing.as_object_mut() {
                map.remove("observedGeneration");
            }
        } else {
            existing["observedGeneration"] = wanted.observed_generation.into();
        }
        changed = true;
    }
    changed
}

/// `setStatusConditions` (util.go): appends a `True` condition of a type not yet set, true or
/// false; one already set stays as it is.
pub(crate) fn set_once(status: &mut Value, kind: &str, reason: &str, message: &str, now: &Value) {
    let set = find(status, kind).is_some_and(|c| {
        matches!(
            c.get("status").and_then(Value::as_str),
            Some("True" | "False")
        )
    });
    if !set && let Some(conditions) = list(status) {
        conditions.push(json!({
            "type": kind,
            "status": "True",
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }));
    }
}

/// `migrationRunningMessage`: how far the migration is, and the error it is waiting out.
pub(crate) fn running_message(counts: Option<(u64, u64)>, transient: Option<&str>) -> String {
    let mut message = "The migration is running".to_owned();
    if let Some((left, total)) = counts
        && total > 0
    {
        if left > 0 {
            message += &format!(", {left}/{total} objects not yet migrated");
        } else {
            message += &format!(", {total} objects verified migrated");
        }
    }
    if let Some(error) = transient {
        message += &format!("; transient error: {error}");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_changes() {
        let mut status = json!({});
        let running = |message: &str| Wanted::true_(RUNNING, RUNNING_REASON, message.to_owned());
        assert!(set(&mut status, &running("one"), &json!("t1")));
        assert!(!set(&mut status, &running("one"), &json!("t2")));
        assert!(set(&mut status, &running("two"), &json!("t3")));
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(status["conditions"][0]["message"], "two");
        let stopped = Wanted {
            status: "False",
            reason: "MigrationCompleted",
            ..running("Migration completed")
        };
        assert!(set(&mut status, &stopped, &json!("t4")));
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t4");
        assert_eq!(status["conditions"][0]["status"], "False");
        assert!(!is_true(&status, RUNNING));
    }

    #[test]
    fn set_once_leaves_a_condition_already_set() {
        let mut status = json!({"conditions": [{"type": "Failed", "status": "False"}]});
        set_once(&mut status, FAILED, FAILED_REASON, "gone", &json!("t"));
        assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
        set_once(&mut status, RUNNING, RUNNING_REASON, "running", &json!("t"));
        assert!(is_true(&status, RUNNING));
    }

    #[test]
    fn running_messages_are_kube_controller_managers() {
        assert_eq!(running_message(None, None), "The migration is running");
        assert_eq!(
            running_message(Some((3, 10)), Some("etcdserver: request timed out")),
            "The migration is running, 3/10 objects not yet migrated; transient error: \
             etcdserver: request timed out"
        );
        assert_eq!(
            running_message(Some((0, 10)), None),
            "The migration is running, 10 objects verified migrated"
        );
        assert_eq!(
            running_message(Some((0, 0)), None),
            "The migration is running"
        );
    }
}
