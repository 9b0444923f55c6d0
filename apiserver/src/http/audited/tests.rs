use std::sync::Arc;

use super::*;
use crate::audit::testing::Kept as Events;
use crate::audit::{Auditor, policy::Policy};

fn context(kept: &Arc<Events>) -> AuditContext {
    let (policy, _) =
        Policy::from_bytes(b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Request}]")
            .unwrap();
    let auditor = Arc::new(Auditor::new(policy, kept.clone()));
    let request = Request::builder()
        .method("POST")
        .uri("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
        .body(Body::empty())
        .unwrap();
    let info = RequestInfo::new("POST", request.uri().path(), None);
    crate::audit::begin(&auditor, &request, &info, None, "id").expect("audited")
}

/// `TestAudit`'s panicking handler: the `Panic` stage, with a 500.
#[test]
fn a_handler_that_panics_is_written_at_the_panic_stage() {
    let kept = Arc::new(Events::default());
    let audit = context(&kept);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _pending = Pending {
            context: Some(audit.clone()),
        };
        panic!("the handler fails");
    }));
    assert!(caught.is_err());
    let events = kept.0.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["stage"], "Panic");
    assert_eq!(events[0]["responseStatus"]["code"], 500);
    assert_eq!(events[0]["responseStatus"]["reason"], "InternalError");
}

#[test]
fn a_handler_that_answers_writes_nothing_at_the_panic_stage() {
    let kept = Arc::new(Events::default());
    let audit = context(&kept);
    drop(Pending {
        context: Some(audit),
    });
    assert!(kept.0.lock().unwrap().is_empty());
}

#[test]
fn kept_bodies_stop_at_the_limit() {
    let mut kept = Kept::default();
    kept.keep(&vec![b'a'; MAX_BODY_BYTES]);
    assert!(!kept.overflowed);
    kept.keep(b"b");
    assert!(kept.overflowed);
    assert!(kept.bytes.is_empty());
    kept.complete = true;
    assert!(kept.whole().is_none());
}
