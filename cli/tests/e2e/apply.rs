//! `apfkit apply --server-side --dry-run`: the server's apply computed offline, against live
//! objects given in a file (in any version), all or nothing.

use serde_json::{Value, json};

use super::{apfkit, success};

const CONFIG: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: team-a, labels: {team: a}}
spec:
  priorityLevelConfiguration: {name: global-default}
  matchingPrecedence: 500
";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn applied(args: &[&str]) -> Value {
    let mut all = vec!["apply", "--server-side", "--dry-run", "-o", "json"];
    all.extend_from_slice(args);
    serde_json::from_slice(&success(&all, b"")).unwrap()
}

#[test]
fn an_apply_without_a_live_object_creates_it_with_its_manager() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(&dir, "config.yaml", CONFIG);
    let object = applied(&["-f", &config, "--field-manager", "gitops"]);
    assert_eq!(object["spec"]["matchingPrecedence"], 500);
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["manager"], "gitops");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:team": {}}},
               "f:spec": {"f:matchingPrecedence": {}, "f:priorityLevelConfiguration": {"f:name": {}}}})
    );
}

#[test]
fn conflicts_with_the_live_objects_managers_fail_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(&dir, "config.yaml", CONFIG);
    // The live object: applied by gitops, in v1beta3 (apply converts it).
    let live = applied(&["-f", &config, "--field-manager", "gitops"]);
    let beta = success(
        &["convert", "--to", "v1beta3", "-o", "json"],
        live.to_string().as_bytes(),
    );
    let live_path = write(&dir, "live.json", &String::from_utf8(beta).unwrap());
    let changed = write(
        &dir,
        "changed.yaml",
        &format!(
            "{}---\n{}",
            CONFIG.replace("team-a", "team-b"),
            CONFIG.replace("matchingPrecedence: 500", "matchingPrecedence: 400")
        ),
    );
    let refused = apfkit(
        &[
            "apply",
            "--server-side",
            "--dry-run",
            "-f",
            &changed,
            "--live",
            &live_path,
            "--field-manager",
            "tuner",
        ],
        b"",
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty(), "printed before the failure");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "{changed}: document 2: Apply failed with 1 conflict: conflict with \"gitops\": .spec.matchingPrecedence"
        )),
        "{stderr}"
    );
    let forced = success(
        &[
            "apply",
            "--server-side",
            "--dry-run",
            "-o",
            "json",
            "-f",
            &changed,
            "--live",
            &live_path,
            "--field-manager",
            "tuner",
            "--force-conflicts",
        ],
        b"",
    );
    let objects: Vec<Value> = serde_json::Deserializer::from_slice(&forced)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(objects.len(), 2);
    let taken = &objects[1];
    assert_eq!(taken["spec"]["matchingPrecedence"], 400);
    let managers: Vec<&str> = taken["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers.len(), 2);
    assert!(
        managers.contains(&"gitops") && managers.contains(&"tuner"),
        "{managers:?}"
    );
}

#[test]
fn apply_refuses_what_kube_apiserver_refuses_and_insists_on_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let undeclared = write(
        &dir,
        "undeclared.yaml",
        &CONFIG.replace(
            "  matchingPrecedence: 500\n",
            "  matchingPrecedence: 500\n  colour: red\n",
        ),
    );
    let refused = apfkit(
        &["apply", "--server-side", "--dry-run", "-f", &undeclared],
        b"",
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains(".spec.colour: field not declared in schema"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let other = write(
        &dir,
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let refused = apfkit(&["apply", "--server-side", "--dry-run", "-f", &other], b"");
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("v1 ConfigMap is not a kind apfkit serves")
    );
    let skipped = apfkit(
        &[
            "apply",
            "--server-side",
            "--dry-run",
            "--skip-other-kinds",
            "-f",
            &other,
        ],
        b"",
    );
    assert!(skipped.status.success());
    assert!(skipped.stdout.is_empty());
    assert!(String::from_utf8_lossy(&skipped.stderr).contains("note: skipped v1 ConfigMap"));
    let config = write(&dir, "config.yaml", CONFIG);
    for args in [
        vec!["apply", "-f", &config],
        vec!["apply", "--server-side", "-f", &config],
        vec!["apply", "--server-side", "--dry-run=client", "-f", &config],
    ] {
        let usage = apfkit(&args, b"");
        assert_eq!(usage.status.code(), Some(2), "{args:?}");
        assert!(usage.stdout.is_empty());
    }
}
