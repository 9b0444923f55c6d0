//! What the collector knows between reads (the `GraphBuilder`'s graph of kube's collector, kept
//! small): each object that has owner references, by where it is, with the owners it names;
//! and the owners being deleted in the foreground. Objects without owner references are not
//! kept: an owner is read from the store when it is needed, as kube's collector reads one it
//! has not seen.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Where an object is: its resource, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    /// The resource's API group.
    pub(crate) group: String,
    /// The resource's plural name.
    pub(crate) plural: String,
    /// The namespace; `None` for cluster-scoped resources.
    pub(crate) namespace: Option<String>,
    /// The name.
    pub(crate) name: String,
}

/// An object with owner references: its uid and the references.
#[derive(Debug)]
struct Owned {
    uid: String,
    references: Vec<OwnerReference>,
}

/// The objects with owner references, and who refers to each owner.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    owned: HashMap<Key, Owned>,
    /// The objects that refer to each owner uid.
    dependents: HashMap<String, BTreeSet<Key>>,
    /// The owners being deleted in the foreground, by uid: a change of one of their
    /// dependents is for them to look at.
    waiting: HashMap<String, Key>,
}

impl Graph {
    /// Records the object at `key` (of `uid`) with `references`, in place of what it had;
    /// none forgets it.
    pub(crate) fn set(&mut self, key: &Key, uid: &str, references: &[OwnerReference]) {
        self.remove(key);
        if references.is_empty() {
            return;
        }
        for reference in references {
            self.dependents
                .entry(reference.uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.owned.insert(
            key.clone(),
            Owned {
                uid: uid.to_owned(),
                references: references.to_vec(),
            },
        );
    }

    /// Forgets the object at `key`, and it as an owner waiting for its dependents.
    pub(crate) fn remove(&mut self, key: &Key) {
        if let Some(owned) = self.owned.remove(key) {
            for reference in owned.references {
                if let Some(dependents) = self.dependents.get_mut(&reference.uid) {
                    dependents.remove(key);
                    if dependents.is_empty() {
                        self.dependents.remove(&reference.uid);
                    }
                }
            }
            self.waiting.remove(&owned.uid);
        }
        self.waiting.retain(|_, waiting| waiting != key);
    }

    /// Forgets every object of one resource (its watch starts again from a list).
    pub(crate) fn remove_resource(&mut self, group: &str, plural: &str) {
        let gone: Vec<Key> = self
            .owned
            .keys()
            .filter(|key| key.group == group && key.plural == plural)
            .cloned()
            .collect();
        for key in &gone {
            self.remove(key);
        }
        self.waiting
            .retain(|_, key| key.group != group || key.plural != plural);
    }

    /// The objects that refer to `owner_uid`, each with its reference to it.
    pub(crate) fn dependents(&self, owner_uid: &str) -> Vec<(Key, OwnerReference)> {
        let Some(keys) = self.dependents.get(owner_uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|key| {
                let owned = self.owned.get(key)?;
                let reference = owned.references.iter().find(|r| r.uid == owner_uid)?;
                Some((key.clone(), reference.clone()))
            })
            .collect()
    }

    /// Records that the owner `uid` at `key` is being deleted in the foreground, or not.
    pub(crate) fn set_waiting(&mut self, uid: &str, key: &Key, waiting: bool) {
        if waiting {
            self.waiting.insert(uid.to_owned(), key.clone());
        } else {
            self.waiting.remove(uid);
        }
    }

    /// Whether the object at `key` is an owner waiting for its dependents.
    pub(crate) fn is_waiting(&self, key: &Key) -> bool {
        self.waiting.values().any(|waiting| waiting == key)
    }

    /// The owners waiting for their dependents that `references` name.
    pub(crate) fn waiting_among(&self, references: &[OwnerReference]) -> Vec<Key> {
        references
            .iter()
            .filter_map(|reference| self.waiting.get(&reference.uid).cloned())
            .collect()
    }

    /// Every object with owner references.
    pub(crate) fn owned(&self) -> Vec<Key> {
        self.owned.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            group: "example.com".into(),
            plural: "gadgets".into(),
            namespace: Some("default".into()),
            name: name.into(),
        }
    }

    fn reference(uid: &str, block: bool) -> OwnerReference {
        OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Gadget".into(),
            name: format!("owner-{uid}"),
            uid: uid.into(),
            block_owner_deletion: Some(block),
            controller: None,
        }
    }

    #[test]
    fn dependents_follow_the_references_each_object_has_now() {
        let mut graph = Graph::default();
        graph.set(
            &key("a"),
            "ua",
            &[reference("o1", true), reference("o2", false)],
        );
        graph.set(&key("b"), "ub", &[reference("o1", false)]);
        let names = |graph: &Graph, uid| -> Vec<String> {
            graph
                .dependents(uid)
                .into_iter()
                .map(|(k, _)| k.name)
                .collect()
        };
        assert_eq!(names(&graph, "o1"), ["a", "b"]);
        assert_eq!(graph.dependents("o1")[0].1.block_owner_deletion, Some(true));
        assert_eq!(names(&graph, "o2"), ["a"]);
        // `a` no longer names o2; `b` loses its references altogether.
        graph.set(&key("a"), "ua", &[reference("o1", true)]);
        graph.set(&key("b"), "ub", &[]);
        assert_eq!(names(&graph, "o1"), ["a"]);
        assert!(names(&graph, "o2").is_empty());
        assert_eq!(graph.owned(), [key("a")]);
        graph.remove_resource("example.com", "gadgets");
        assert!(graph.owned().is_empty() && graph.dependents.is_empty());
    }

    #[test]
    fn owners_waiting_for_dependents_are_found_from_their_references() {
        let mut graph = Graph::default();
        graph.set_waiting("o1", &key("owner"), true);
        assert_eq!(
            graph.waiting_among(&[reference("o1", true), reference("o9", true)]),
            [key("owner")]
        );
        graph.remove(&key("owner"));
        assert!(graph.waiting_among(&[reference("o1", true)]).is_empty());
        graph.set_waiting("o2", &key("other"), true);
        assert!(graph.is_waiting(&key("other")) && !graph.is_waiting(&key("owner")));
        graph.set_waiting("o2", &key("other"), false);
        assert!(graph.waiting_among(&[reference("o2", true)]).is_empty());
    }
}
