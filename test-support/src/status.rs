//! kube-apiserver's `metav1.Status` answers that tests of several crates expect.

/// The 504 of kube-apiserver's timeout filter when a request is not answered by its deadline
/// (k8s.io/apiserver `pkg/server/filters/timeout.go`: `NewTimeoutError("request did not
/// complete within the allotted timeout", 0)`): empty `details`, no retry hint.
pub fn allotted_timeout() -> serde_json::Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Timeout: request did not complete within the allotted timeout",
        "reason": "Timeout",
        "details": {},
        "code": 504,
    })
}
