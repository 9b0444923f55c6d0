//! Server-side apply bodies (what `application/apply-patch+yaml` carries, as JSON) applied by
//! the field manager to a stored FlowSchema that two other managers hold, with the v1 schema's
//! merge rules. Never a panic; an apply that succeeded is a no-op when repeated; a conflict is
//! gone when forced.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use apfkit_fieldmanager::managed::{FieldManager, FieldManagerError};
use apfkit_fieldmanager::path::PathElement;
use apfkit_fieldmanager::schema::Schema;
use apfkit_fieldmanager::set::FieldSet;
use apfkit_fieldmanager::updater::OneVersion;
use serde_json::{Value, json};

const V1: &str = "flowcontrol.apiserver.k8s.io/v1";
const NOW: &str = "2026-11-26T00:00:00Z";

fn versions() -> &'static OneVersion {
    static VERSIONS: OnceLock<OneVersion> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        let info = apfkit_types::KINDS
            .iter()
            .find(|k| k.api_version == V1 && k.kind == "FlowSchema")
            .expect("FlowSchema v1");
        let schema = info.json_schema().expect("a schema");
        OneVersion {
            api_version: V1.to_owned(),
            schema: Schema::compile(&schema),
        }
    })
}

fn manager() -> FieldManager<'static> {
    let mut status = FieldSet::new();
    status.insert(&[PathElement::Field("status".into())]);
    FieldManager::new(
        versions(),
        V1,
        "FlowSchema",
        None,
        BTreeMap::from([(V1.to_owned(), status)]),
    )
}

/// A FlowSchema applied by "owner", then changed by the update manager "ctl".
fn live() -> &'static Value {
    static LIVE: OnceLock<Value> = OnceLock::new();
    LIVE.get_or_init(|| {
        let fm = manager();
        let config = json!({
            "apiVersion": V1, "kind": "FlowSchema",
            "metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["f"]},
            "spec": {
                "priorityLevelConfiguration": {"name": "p"},
                "matchingPrecedence": 10,
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "u"}}]}],
            },
        });
        let mut applied = fm
            .apply(&json!({}), &config, "owner", false, NOW)
            .expect("applies");
        applied["metadata"]["uid"] = json!("u");
        let mut changed = applied.clone();
        changed["metadata"]["labels"]["y"] = json!("2");
        changed["spec"]["matchingPrecedence"] = json!(20);
        fm.update(&applied, changed, "ctl", NOW)
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(config) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let fm = manager();
    let force = choice & 1 == 1;
    match fm.apply(live(), &config, "fuzz", force, NOW) {
        Ok(applied) => {
            let again = fm
                .apply(&applied, &config, "fuzz", force, NOW)
                .expect("a repeated apply succeeds");
            assert_eq!(again, applied, "a repeated apply changed the object");
        }
        Err(FieldManagerError::Conflict { .. }) => {
            assert!(!force, "a forced apply conflicted");
            if let Err(FieldManagerError::Conflict { message, .. }) =
                fm.apply(live(), &config, "fuzz", true, NOW)
            {
                panic!("forcing kept a conflict: {message}");
            }
        }
        Err(_) => {}
    }
});
