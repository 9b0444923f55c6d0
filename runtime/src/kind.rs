//! The traits every generated type implements: its defaults, and for a kind its identity.
//!
//! `apfkit-codegen` writes the impls; the traits live here so that every generated tree (the
//! flowcontrol types, their hubs, a user's CRD) implements the same ones and code written
//! against them works with all of them.

use std::collections::BTreeMap;

/// Applies the server-side defaults of the schema, recursively, in place.
pub trait ApplyDefaults {
    /// Fills in every defaulted field that is unset (and, where the schema says so, zero),
    /// then runs any hand-written defaulting hook.
    fn apply_defaults(&mut self);
    /// Whether [`ApplyDefaults::apply_defaults`] would leave the value as it is, answered
    /// without a copy. `false` when unsure: the generated types answer exactly, unless a
    /// defaulting hook has no check registered beside it.
    fn is_defaulted(&self) -> bool {
        false
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Option<T> {
    fn apply_defaults(&mut self) {
        if let Some(value) = self {
            value.apply_defaults();
        }
    }
    fn is_defaulted(&self) -> bool {
        self.as_ref().is_none_or(ApplyDefaults::is_defaulted)
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Box<T> {
    fn apply_defaults(&mut self) {
        (**self).apply_defaults();
    }
    fn is_defaulted(&self) -> bool {
        (**self).is_defaulted()
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Vec<T> {
    fn apply_defaults(&mut self) {
        self.iter_mut().for_each(ApplyDefaults::apply_defaults);
    }
    fn is_defaulted(&self) -> bool {
        self.iter().all(ApplyDefaults::is_defaulted)
    }
}

impl<T: ApplyDefaults> ApplyDefaults for BTreeMap<String, T> {
    fn apply_defaults(&mut self) {
        self.values_mut().for_each(ApplyDefaults::apply_defaults);
    }
    fn is_defaulted(&self) -> bool {
        self.values().all(ApplyDefaults::is_defaulted)
    }
}

/// A type that serves exactly one kind: `apiVersion` and `kind` are constants, written on
/// encode and checked on decode.
pub trait Kind {
    /// API group, empty for the legacy core group.
    const GROUP: &'static str;
    /// Version inside the group.
    const VERSION: &'static str;
    /// The kind.
    const KIND: &'static str;
    /// `group/version`, or only the version for the core group.
    const API_VERSION: &'static str;
}

/// A kind served as a REST resource.
pub trait Resource: Kind {
    /// The plural name used in URLs.
    const PLURAL: &'static str;
    /// Whether the resource lives in a namespace; `false` for cluster-scoped resources.
    const NAMESPACED: bool;
}

/// A list kind and the kind of its items.
pub trait ListKind: Kind {
    /// The item kind.
    type Item: Resource;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose default is 7, for the container impls.
    #[derive(Debug, PartialEq)]
    struct Shares(Option<i32>);

    impl ApplyDefaults for Shares {
        fn apply_defaults(&mut self) {
            self.0.get_or_insert(7);
        }
        fn is_defaulted(&self) -> bool {
            self.0.is_some()
        }
    }

    #[test]
    fn containers_default_every_element() {
        let mut list = vec![Shares(None), Shares(Some(1))];
        assert!(!list.is_defaulted());
        list.apply_defaults();
        assert_eq!(list, [Shares(Some(7)), Shares(Some(1))]);
        assert!(list.is_defaulted());

        let mut map = BTreeMap::from([("a".to_owned(), Box::new(Shares(None)))]);
        assert!(!map.is_defaulted());
        map.apply_defaults();
        assert_eq!(*map["a"], Shares(Some(7)));

        let mut absent: Option<Shares> = None;
        assert!(
            absent.is_defaulted(),
            "nothing to default in an absent value"
        );
        absent.apply_defaults();
        assert_eq!(absent, None);
    }
}
