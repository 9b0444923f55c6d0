//! kube-aggregator's `autoregister_controller_test.go` (`TestSync`), its cases by name, and
//! kube-apiserver's choice of what to register.

use super::*;

/// `newAPIService`: a name, nothing else.
fn plain(name: &str) -> Value {
    json!({"metadata": {"name": name, "uid": "u1"}, "spec": {}})
}

/// `newAutoRegisterManagedAPIService` (label `true`) and its `onstart` and modified forms.
fn managed(name: &str, how: &str, group: &str) -> Value {
    json!({"metadata": {"name": name, "uid": "u1", "labels": {MANAGED: how}},
           "spec": {"group": group}})
}

/// What upstream's cases ask to sync: an empty spec.
fn wanted(managed: &'static str) -> Desired {
    Desired {
        group_version: GroupVersion::default(),
        group_priority: 0,
        version_priority: 0,
        managed,
    }
}

fn memory(synced: &[&str], at_start: &[&str]) -> Memory {
    Memory {
        at_start: at_start.iter().map(|s| (*s).to_owned()).collect(),
        synced: synced.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// What an action is, as upstream's `checkFor*` helpers look at it.
fn kind(action: &Action) -> (&'static str, Option<&str>, Option<Value>) {
    let labels = |object: &Value| {
        object
            .pointer(&format!("/metadata/labels/{}", MANAGED.replace('/', "~1")))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match action {
        Action::Nothing => ("nothing", None, None),
        Action::Create(object) => ("create", None, labels(object).map(Value::from)),
        Action::Update(object) => ("update", None, Some(object["spec"].clone())),
        Action::Delete(uid) => ("delete", Some(uid.as_str()), None),
    }
}

/// A case: its name, the stored object, what is wanted, the memory, what is expected.
type Case = (
    &'static str,
    Option<Value>,
    Option<Desired>,
    Memory,
    (&'static str, Option<&'static str>, Option<Value>),
);

#[test]
fn test_sync() {
    let nothing = ("nothing", None, None);
    let cases: Vec<Case> = vec![
        (
            "adding an API service which isn't auto-managed does nothing",
            Some(plain("foo")),
            None,
            memory(&[], &[]),
            nothing.clone(),
        ),
        (
            "adding one to auto-register should create",
            None,
            Some(wanted(CONTINUOUSLY)),
            memory(&[], &[]),
            ("create", None, Some(json!("true"))),
        ),
        (
            "duplicate AddAPIServiceToSync don't panic",
            Some(managed("foo", CONTINUOUSLY, "")),
            Some(wanted(CONTINUOUSLY)),
            memory(&[], &[]),
            nothing.clone(),
        ),
        (
            "duplicate RemoveAPIServiceToSync don't panic",
            Some(managed("foo", CONTINUOUSLY, "")),
            None,
            memory(&[], &[]),
            ("delete", Some("u1"), None),
        ),
        (
            "removing auto-managed then RemoveAPIService should not touch APIService",
            Some(plain("foo")),
            None,
            memory(&[], &[]),
            nothing.clone(),
        ),
        (
            "create managed apiservice without a matching request",
            Some(managed("foo", CONTINUOUSLY, "")),
            None,
            memory(&[], &[]),
            ("delete", Some("u1"), None),
        ),
        (
            "modifying it should result in stomping",
            Some(managed("foo", CONTINUOUSLY, "something")),
            Some(wanted(CONTINUOUSLY)),
            memory(&[], &[]),
            ("update", None, Some(wanted(CONTINUOUSLY).spec())),
        ),
        (
            "adding one to auto-register on start should create",
            None,
            Some(wanted(ON_START)),
            memory(&[], &[]),
            ("create", None, Some(json!("onstart"))),
        ),
        (
            "adding one to auto-register on start already synced should do nothing",
            None,
            Some(wanted(ON_START)),
            memory(&["foo"], &[]),
            nothing.clone(),
        ),
        (
            "managed onstart apiservice present at start without a matching request should delete",
            Some(managed("foo", ON_START, "")),
            None,
            memory(&[], &["foo"]),
            ("delete", Some("u1"), None),
        ),
        (
            "managed onstart apiservice present at start without a matching request already synced once should no-op",
            Some(managed("foo", ON_START, "")),
            None,
            memory(&["foo"], &["foo"]),
            nothing.clone(),
        ),
        (
            "managed onstart apiservice not present at start without a matching request should no-op",
            Some(managed("foo", ON_START, "")),
            None,
            memory(&[], &[]),
            nothing.clone(),
        ),
        (
            "modifying onstart it should result in stomping",
            Some(managed("foo", CONTINUOUSLY, "something")),
            Some(wanted(ON_START)),
            memory(&[], &[]),
            ("update", None, Some(wanted(ON_START).spec())),
        ),
        (
            "modifying onstart already synced should no-op",
            Some(managed("foo", CONTINUOUSLY, "something")),
            Some(wanted(ON_START)),
            memory(&["foo"], &[]),
            nothing.clone(),
        ),
    ];
    for (name, current, desired, memory, expected) in cases {
        let action = check("foo", current.as_ref(), desired.as_ref(), &memory);
        assert_eq!(kind(&action), expected, "{name}");
    }
}

/// kube-apiserver's choice: built-in group-versions of its table on start with their
/// priorities, the aggregator's own group never, anything else (a CRD's) always, at 1000
/// and 100.
#[test]
fn served_group_versions_want_kube_apiservers_apiservices() {
    let served = vec![
        (
            "apiregistration.k8s.io".to_owned(),
            vec!["v1".to_owned(), "v1beta1".to_owned()],
        ),
        (String::new(), vec!["v1".to_owned()]),
        (
            "flowcontrol.apiserver.k8s.io".to_owned(),
            vec!["v1".to_owned(), "v1beta3".to_owned()],
        ),
        ("example.com".to_owned(), vec!["v1".to_owned()]),
    ];
    let desired = desired(&served);
    let names: Vec<&String> = desired.keys().collect();
    assert_eq!(
        names,
        [
            "v1.",
            "v1.example.com",
            "v1.flowcontrol.apiserver.k8s.io",
            "v1beta3.flowcontrol.apiserver.k8s.io"
        ]
    );
    assert_eq!(
        desired["v1."].object("v1."),
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": "v1.", "labels": {MANAGED: "onstart"}},
               "spec": {"group": "", "version": "v1", "groupPriorityMinimum": 18000,
                        "versionPriority": 1}})
    );
    let flowcontrol = &desired["v1.flowcontrol.apiserver.k8s.io"];
    assert_eq!(
        (flowcontrol.group_priority, flowcontrol.version_priority),
        (16100, 21)
    );
    assert_eq!(
        desired["v1beta3.flowcontrol.apiserver.k8s.io"].version_priority,
        18
    );
    let crd = &desired["v1.example.com"];
    assert_eq!(
        (crd.group_priority, crd.version_priority, crd.managed),
        (1000, 100, "true")
    );
}
