//! What a delete asks of the garbage collector for the object's dependents (DeleteOptions'
//! `orphanDependents` and `propagationPolicy`), and the finalizers kube-apiserver's store
//! leaves on the object for it (`deletionFinalizersForGarbageCollection` in
//! `k8s.io/apiserver/pkg/registry/generic/registry/store.go`): `orphan` for dependents to be
//! orphaned, `foregroundDeletion` for dependents to go first. The garbage collector removes
//! them; until then the object is kept, marked with `deletionTimestamp`.

/// The finalizer of a delete whose dependents are orphaned (`metav1.FinalizerOrphanDependents`).
pub const ORPHAN_FINALIZER: &str = "orphan";

/// The finalizer of a delete whose dependents are deleted first
/// (`metav1.FinalizerDeleteDependents`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `propagationPolicy`: what becomes of an object's dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// `Orphan`: their owner references to it are removed.
    Orphan,
    /// `Background`: the object goes at once, its dependents after it.
    Background,
    /// `Foreground`: the object is kept until its blocking dependents are gone.
    Foreground,
}

impl PropagationPolicy {
    /// The policy of its name in DeleteOptions; `None` for any other text.
    pub fn parse(name: &str) -> Option<PropagationPolicy> {
        match name {
            "Orphan" => Some(PropagationPolicy::Orphan),
            "Background" => Some(PropagationPolicy::Background),
            "Foreground" => Some(PropagationPolicy::Foreground),
            _ => None,
        }
    }
}

/// What a delete says of the object's dependents; nothing said (the default) keeps the
/// finalizers the object has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Propagation {
    /// `orphanDependents` (deprecated; never given with `policy`).
    pub orphan_dependents: Option<bool>,
    /// `propagationPolicy`.
    pub policy: Option<PropagationPolicy>,
}

impl Propagation {
    /// The namespace controller's deletes of a namespace's content: `Background`.
    pub const BACKGROUND: Propagation = Propagation {
        orphan_dependents: None,
        policy: Some(PropagationPolicy::Background),
    };

    /// The object's finalizers after a delete asking this, as the generic store computes
    /// them for a kind whose garbage collection policy is the default: `None` when they do
    /// not change (as sets), else the new list, the others in their order and the
    /// collector's last.
    pub fn finalizers(&self, finalizers: &[String]) -> Option<Vec<String>> {
        let has = |name: &str| finalizers.iter().any(|f| f == name);
        // `shouldOrphanDependents`: the options, else the first of the two finalizers.
        let orphan = match (self.orphan_dependents, self.policy) {
            (Some(orphan), _) => orphan,
            (None, Some(policy)) => policy == PropagationPolicy::Orphan,
            (None, None) => first_of_two(finalizers) == Some(ORPHAN_FINALIZER),
        };
        // `shouldDeleteDependentsInForeground`: `orphanDependents` of either value says no.
        let foreground = match (self.orphan_dependents, self.policy) {
            (Some(_), _) => false,
            (None, Some(policy)) => policy == PropagationPolicy::Foreground,
            (None, None) => first_of_two(finalizers) == Some(FOREGROUND_FINALIZER),
        };
        changed(finalizers, orphan, foreground, has)
    }

    /// The finalizers after a delete of a kind the garbage collector does not look after
    /// (`GarbageCollectionPolicy` `Unsupported`): the collector's two taken away, whatever
    /// the delete asked; `None` when it had neither.
    pub fn without_collector(finalizers: &[String]) -> Option<Vec<String>> {
        let has = |name: &str| finalizers.iter().any(|f| f == name);
        changed(finalizers, false, false, has)
    }

    /// The finalizers of a namespace after its first delete asks this, as the namespace
    /// storage's own `Delete` computes them (`shouldHaveOrphanFinalizer`,
    /// `shouldHaveDeleteDependentsFinalizer`): unlike the generic store, each finalizer kept
    /// as it is when nothing is said of it, and `orphanDependents: false` asking for
    /// foreground deletion. `None` when they do not change.
    pub fn namespace_finalizers(&self, finalizers: &[String]) -> Option<Vec<String>> {
        let has = |name: &str| finalizers.iter().any(|f| f == name);
        let orphan = match (self.orphan_dependents, self.policy) {
            (Some(orphan), _) => orphan,
            (None, Some(policy)) => policy == PropagationPolicy::Orphan,
            (None, None) => has(ORPHAN_FINALIZER),
        };
        let foreground = match (self.orphan_dependents, self.policy) {
            (Some(orphan), _) => !orphan,
            (None, Some(policy)) => policy == PropagationPolicy::Foreground,
            (None, None) => has(FOREGROUND_FINALIZER),
        };
        changed(finalizers, orphan, foreground, has)
    }
}

/// Which of the collector's two finalizers comes first in the list, if any.
fn first_of_two(finalizers: &[String]) -> Option<&str> {
    finalizers
        .iter()
        .map(String::as_str)
        .find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER)
}

/// The list with the two finalizers as wanted (the others kept in order, the wanted ones
/// last), or `None` when it holds the same names as before.
fn changed(
    finalizers: &[String],
    orphan: bool,
    foreground: bool,
    has: impl Fn(&str) -> bool,
) -> Option<Vec<String>> {
    if has(ORPHAN_FINALIZER) == orphan && has(FOREGROUND_FINALIZER) == foreground {
        return None;
    }
    let mut kept: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    kept.extend(orphan.then(|| ORPHAN_FINALIZER.to_owned()));
    kept.extend(foreground.then(|| FOREGROUND_FINALIZER.to_owned()));
    Some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn policy(policy: PropagationPolicy) -> Propagation {
        Propagation {
            orphan_dependents: None,
            policy: Some(policy),
        }
    }

    fn orphan_dependents(orphan: bool) -> Propagation {
        Propagation {
            orphan_dependents: Some(orphan),
            policy: None,
        }
    }

    /// The cases of upstream's `TestStoreDeleteWithOrphanDependents` and
    /// `TestStoreDeletionPropagation` for a kind whose policy is the default (background):
    /// each option against objects with no finalizer, the orphan one, the foreground one, and
    /// another one.
    #[test]
    fn the_generic_store_adds_and_removes_the_collectors_finalizers() {
        use PropagationPolicy::*;
        let none: &[&str] = &[];
        /// What a delete asks, the finalizers before, and after (`None`: unchanged).
        type Case<'a> = (Propagation, &'a [&'a str], Option<&'a [&'a str]>);
        let cases: &[Case] = &[
            // Nothing said: the object's own finalizers stand.
            (Propagation::default(), none, None),
            (Propagation::default(), &["orphan"], None),
            (Propagation::default(), &["foregroundDeletion"], None),
            (Propagation::default(), &["foo.com/x"], None),
            // Orphan.
            (policy(Orphan), none, Some(&["orphan"])),
            (policy(Orphan), &["orphan"], None),
            (policy(Orphan), &["foregroundDeletion"], Some(&["orphan"])),
            (
                policy(Orphan),
                &["foo.com/x"],
                Some(&["foo.com/x", "orphan"]),
            ),
            (orphan_dependents(true), none, Some(&["orphan"])),
            // Foreground.
            (policy(Foreground), none, Some(&["foregroundDeletion"])),
            (
                policy(Foreground),
                &["orphan", "foo.com/x"],
                Some(&["foo.com/x", "foregroundDeletion"]),
            ),
            (policy(Foreground), &["foregroundDeletion"], None),
            // Background removes both.
            (policy(Background), none, None),
            (policy(Background), &["orphan"], Some(&[])),
            (
                policy(Background),
                &["foregroundDeletion", "foo.com/x"],
                Some(&["foo.com/x"]),
            ),
            // `orphanDependents: false` removes both too.
            (orphan_dependents(false), &["orphan"], Some(&[])),
            (orphan_dependents(false), &["foregroundDeletion"], Some(&[])),
            (orphan_dependents(false), none, None),
        ];
        for (propagation, before, after) in cases {
            assert_eq!(
                propagation.finalizers(&list(before)),
                after.map(list),
                "{propagation:?} on {before:?}"
            );
        }
    }

    /// With both finalizers (validation refuses that on writes, but a stored object may have
    /// them), nothing said keeps the first's meaning: `shouldOrphanDependents` and
    /// `shouldDeleteDependentsInForeground` each stop at the first of the two.
    #[test]
    fn the_first_of_both_finalizers_decides_when_nothing_is_said() {
        let both = list(&["foregroundDeletion", "orphan"]);
        assert_eq!(
            Propagation::default().finalizers(&both),
            Some(list(&["foregroundDeletion"]))
        );
        let both = list(&["orphan", "foregroundDeletion"]);
        assert_eq!(
            Propagation::default().finalizers(&both),
            Some(list(&["orphan"]))
        );
    }

    /// The namespace storage's own rules: `orphanDependents: false` asks for foreground
    /// deletion there.
    #[test]
    fn a_namespace_takes_orphan_dependents_false_as_foreground() {
        use PropagationPolicy::*;
        assert_eq!(
            orphan_dependents(false).namespace_finalizers(&list(&["orphan"])),
            Some(list(&["foregroundDeletion"]))
        );
        assert_eq!(
            orphan_dependents(true).namespace_finalizers(&[]),
            Some(list(&["orphan"]))
        );
        assert_eq!(
            policy(Background).namespace_finalizers(&list(&["orphan"])),
            Some(list(&[]))
        );
        assert_eq!(
            Propagation::default().namespace_finalizers(&list(&["orphan", "foregroundDeletion"])),
            None
        );
        assert_eq!(PropagationPolicy::parse("Sideways"), None);
        assert_eq!(PropagationPolicy::parse("Orphan"), Some(Orphan));
    }
}
