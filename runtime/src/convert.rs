//! The traits that generated conversions implement: every version of a kind converts to its
//! hub with [`ToHub`] and back with [`FromHub`], so any two versions convert through the hub.
//! Every generated tree implements these (flowcontrol's in `apfkit-types`, beside the types
//! they convert, and a user's CRD module), so code written against them takes any of them.

use std::collections::BTreeMap;

/// Conversion of a versioned object to its hub type.
pub trait ToHub: Sized {
    /// The hub type.
    type Hub;
    /// The hub object, moving every field that both sides share.
    fn into_hub(self) -> Self::Hub;
    /// The hub object; `self` is left as it is (one clone, then [`ToHub::into_hub`]).
    fn to_hub(&self) -> Self::Hub
    where
        Self: Clone,
    {
        self.clone().into_hub()
    }
}

/// Conversion of a hub object to a versioned type.
pub trait FromHub: Sized {
    /// The hub type.
    type Hub;
    /// The versioned object, moving every field that both sides share.
    fn from_owned_hub(hub: Self::Hub) -> Self;
    /// The versioned object; `hub` is left as it is (one clone, then
    /// [`FromHub::from_owned_hub`]).
    fn from_hub(hub: &Self::Hub) -> Self
    where
        Self::Hub: Clone,
    {
        Self::from_owned_hub(hub.clone())
    }
    /// Whether `hub` comes back unchanged from this type (`from_owned_hub`, then `into_hub`,
    /// with no defaulting between), answered without converting. `false` when unsure: the
    /// generated impls answer exactly, unless a type with conversion hooks has no
    /// round-trip check registered.
    fn round_trips(hub: &Self::Hub) -> bool {
        let _ = hub;
        false
    }
}

impl<T: ToHub> ToHub for Option<T> {
    type Hub = Option<T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.map(ToHub::into_hub)
    }
}

impl<T: FromHub> FromHub for Option<T> {
    type Hub = Option<T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.map(T::from_owned_hub)
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.as_ref().is_none_or(T::round_trips)
    }
}

impl<T: ToHub> ToHub for Box<T> {
    type Hub = Box<T::Hub>;
    fn into_hub(self) -> Self::Hub {
        Box::new((*self).into_hub())
    }
}

impl<T: FromHub> FromHub for Box<T> {
    type Hub = Box<T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        Box::new(T::from_owned_hub(*hub))
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        T::round_trips(hub)
    }
}

impl<T: ToHub> ToHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.into_iter().map(ToHub::into_hub).collect()
    }
}

impl<T: FromHub> FromHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.into_iter().map(T::from_owned_hub).collect()
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.iter().all(T::round_trips)
    }
}

impl<T: ToHub> ToHub for BTreeMap<String, T> {
    type Hub = BTreeMap<String, T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.into_iter().map(|(k, v)| (k, v.into_hub())).collect()
    }
}

impl<T: FromHub> FromHub for BTreeMap<String, T> {
    type Hub = BTreeMap<String, T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.into_iter()
            .map(|(k, v)| (k, T::from_owned_hub(v)))
            .collect()
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.values().all(T::round_trips)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Old(i32);
    #[derive(Debug, Clone, PartialEq)]
    struct New(i64);

    impl ToHub for Old {
        type Hub = New;
        fn into_hub(self) -> New {
            New(i64::from(self.0) * 10)
        }
    }
    impl FromHub for Old {
        type Hub = New;
        fn from_owned_hub(hub: New) -> Self {
            Old((hub.0 / 10) as i32)
        }
    }

    #[test]
    fn containers_convert_each_element_and_keep_their_shape() {
        let map = BTreeMap::from([("a".to_owned(), Old(1)), ("b".to_owned(), Old(2))]);
        let hub = map.to_hub();
        assert_eq!(hub["b"], New(20));
        assert_eq!(BTreeMap::<String, Old>::from_hub(&hub), map);
        assert_eq!(vec![Old(3), Old(4)].into_hub(), vec![New(30), New(40)]);
        assert_eq!(Some(Box::new(Old(5))).into_hub(), Some(Box::new(New(50))));
        assert_eq!(Option::<Old>::from_owned_hub(None), None);
    }
}
