//! What kube-controller-manager's garbage collector does with one object that has owner
//! references and is not being deleted (`attemptToDeleteItem` in
//! `pkg/controller/garbagecollector/garbagecollector.go`), as a function of what it found of
//! each owner.

use apfkit_apiserver::store::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, PropagationPolicy};

/// What an owner reference points at, as the collector finds it (`classifyReferences`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// No object of that name, or one with another uid: the reference dangles.
    Absent,
    /// Being deleted in the foreground (`deletionTimestamp` and the `foregroundDeletion`
    /// finalizer): waiting for its dependents to go.
    WaitingForDependents,
    /// There, and not waiting.
    Solid,
}

/// What the collector does with the object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing: every owner is there.
    Nothing,
    /// The references to these owner uids removed, the object kept: it has an owner that
    /// is there.
    RemoveReferences(Vec<String>),
    /// The object deleted, with this policy for its own dependents.
    Delete(PropagationPolicy),
}

/// The action for an object whose references found `owners` (each owner's uid and what was
/// found), that has dependents of its own or not, with `finalizers`.
pub(crate) fn decide(
    owners: &[(String, Owner)],
    has_dependents: bool,
    finalizers: &[String],
) -> Action {
    let any = |wanted: Owner| owners.iter().any(|(_, found)| *found == wanted);
    if any(Owner::Solid) {
        let gone: Vec<String> = owners
            .iter()
            .filter(|(_, found)| *found != Owner::Solid)
            .map(|(uid, _)| uid.clone())
            .collect();
        return if gone.is_empty() {
            Action::Nothing
        } else {
            Action::RemoveReferences(gone)
        };
    }
    // No owner left that stays: the object goes. One waiting for its dependents is deleted
    // in the foreground itself when it has dependents, so that its owner waits for them too.
    if any(Owner::WaitingForDependents) && has_dependents {
        return Action::Delete(PropagationPolicy::Foreground);
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    Action::Delete(if has(ORPHAN_FINALIZER) {
        PropagationPolicy::Orphan
    } else if has(FOREGROUND_FINALIZER) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(found: &[Owner]) -> Vec<(String, Owner)> {
        found
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("uid-{i}"), *f))
            .collect()
    }

    #[test]
    fn an_object_with_an_owner_that_stays_keeps_it_and_loses_the_others() {
        use Owner::*;
        assert_eq!(decide(&owners(&[Solid]), false, &[]), Action::Nothing);
        assert_eq!(decide(&owners(&[Solid, Solid]), true, &[]), Action::Nothing);
        assert_eq!(
            decide(&owners(&[Absent, Solid, WaitingForDependents]), false, &[]),
            Action::RemoveReferences(vec!["uid-0".into(), "uid-2".into()])
        );
    }

    #[test]
    fn an_object_whose_owners_are_all_gone_is_deleted_as_its_finalizers_say() {
        use Owner::*;
        use PropagationPolicy::*;
        assert_eq!(
            decide(&owners(&[Absent]), true, &[]),
            Action::Delete(Background)
        );
        assert_eq!(
            decide(&owners(&[Absent, Absent]), false, &["orphan".into()]),
            Action::Delete(Orphan)
        );
        assert_eq!(
            decide(
                &owners(&[Absent]),
                false,
                &["x".into(), "foregroundDeletion".into()]
            ),
            Action::Delete(Foreground)
        );
    }

    #[test]
    fn a_dependent_of_an_owner_waiting_for_it_goes_in_the_foreground_if_it_has_dependents() {
        use Owner::*;
        use PropagationPolicy::*;
        assert_eq!(
            decide(&owners(&[WaitingForDependents]), true, &[]),
            Action::Delete(Foreground)
        );
        assert_eq!(
            decide(&owners(&[WaitingForDependents, Absent]), false, &[]),
            Action::Delete(Background)
        );
        assert_eq!(
            decide(&owners(&[WaitingForDependents]), false, &["orphan".into()]),
            Action::Delete(Orphan)
        );
    }
}
