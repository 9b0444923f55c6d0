//! What every apfkit client of an etcd cluster shares: the members of one cluster, each with
//! its own connection, and [`Members::call`], which runs a request on the member that answered
//! last and fails over to the others while a member cannot answer (down, unreachable, out of
//! time, no leader), as etcdctl does. Writes through it should be compare-and-swap
//! transactions: one repeated after a lost answer then fails its comparison instead of
//! writing twice.
//!
//! **Where to start**: [`Members::new`] with the cluster's client URLs, then
//! [`Members::call`] around each request:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let members = apfkit_etcd::Members::new(vec!["down", "up"]).unwrap();
//! let unavailable = || etcd_client::Error::GRpcStatus(tonic::Status::unavailable("no leader"));
//! // "down" cannot answer, so "up" is asked, and asked first from then on.
//! let answer = members.call(|member| async move {
//!     if member == "down" { Err(unavailable()) } else { Ok(member) }
//! }).await;
//! assert_eq!(answer.unwrap(), "up");
//! # });
//! ```

#![forbid(unsafe_code)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The members of one cluster (a client per member, or whatever a caller keeps per member),
/// with the one that answered last.
#[derive(Debug)]
pub struct Members<M> {
    members: Arc<[M]>,
    current: Arc<AtomicUsize>,
}

impl<M> Clone for Members<M> {
    fn clone(&self) -> Self {
        Members {
            members: Arc::clone(&self.members),
            current: Arc::clone(&self.current),
        }
    }
}

/// Why [`Members::call`] has no answer.
#[derive(Debug)]
pub enum CallError<M> {
    /// A member answered with an error that another member would answer too.
    Refused(etcd_client::Error),
    /// No member could answer: each with its error, in the order they were asked.
    Unavailable(Vec<(M, etcd_client::Error)>),
}

impl<M: Clone> Members<M> {
    /// The members; `None` when there are none.
    pub fn new(members: Vec<M>) -> Option<Self> {
        (!members.is_empty()).then(|| Members {
            members: members.into(),
            current: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Every member.
    pub fn all(&self) -> &[M] {
        &self.members
    }

    /// Runs `request` on the member that answered last, then on each other member in turn
    /// while members cannot answer ([`member_unavailable`]).
    ///
    /// # Errors
    ///
    /// The first error a member answered that is not unavailability, or every member's
    /// unavailability.
    pub async fn call<T, F, Fut>(&self, request: F) -> Result<T, CallError<M>>
    where
        F: Fn(M) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let count = self.members.len();
        let first = self.current.load(Ordering::Relaxed) % count;
        let mut failures = Vec::new();
        for step in 0..count {
            let index = (first + step) % count;
            let member = self.members[index].clone();
            match request(member.clone()).await {
                Ok(answer) => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(answer);
                }
                Err(err) if member_unavailable(&err) => failures.push((member, err)),
                Err(err) => return Err(CallError::Refused(err)),
            }
        }
        Err(CallError::Unavailable(failures))
    }
}

/// Whether a member failed to answer, rather than answered an error: another member may.
///
/// A call on a connection that breaks (the member stopped after the connection was made) ends
/// in `Unknown` ("transport error") that the client library made from the failure itself: a
/// status with a cause of its own, which a status a member sent never has.
pub fn member_unavailable(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(status) => match status.code() {
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
                true
            }
            tonic::Code::Unknown => std::error::Error::source(status).is_some(),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: tonic::Code) -> etcd_client::Error {
        etcd_client::Error::GRpcStatus(tonic::Status::new(code, "test"))
    }

    #[test]
    fn only_a_member_that_cannot_answer_is_failed_over() {
        assert!(member_unavailable(&status(tonic::Code::Unavailable)));
        assert!(member_unavailable(&status(tonic::Code::DeadlineExceeded)));
        assert!(!member_unavailable(&status(tonic::Code::InvalidArgument)));
        assert!(!member_unavailable(&status(tonic::Code::OutOfRange)));
        // An Unknown a member sent is its answer; one the client made of a broken connection
        // (tonic's "transport error", with the failure as its cause) is not.
        assert!(!member_unavailable(&status(tonic::Code::Unknown)));
        let broken = tonic::Status::from_error(Box::new(std::fmt::Error));
        assert_eq!(broken.code(), tonic::Code::Unknown);
        assert!(member_unavailable(&etcd_client::Error::GRpcStatus(broken)));
    }

    #[tokio::test]
    async fn a_refusal_is_not_retried_and_unavailability_names_every_member() {
        let members = Members::new(vec![1, 2, 3]).unwrap();
        let asked = std::sync::Mutex::new(Vec::new());
        let refused = members
            .call(|m| {
                asked.lock().unwrap().push(m);
                async move { Err::<(), _>(status(tonic::Code::InvalidArgument)) }
            })
            .await;
        assert!(matches!(refused, Err(CallError::Refused(_))));
        assert_eq!(*asked.lock().unwrap(), [1]);

        let down = members
            .call(|_| async { Err::<(), _>(status(tonic::Code::Unavailable)) })
            .await;
        match down {
            Err(CallError::Unavailable(failures)) => {
                assert_eq!(
                    failures.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
                    [1, 2, 3]
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(Members::<u8>::new(Vec::new()).is_none());
    }
}
