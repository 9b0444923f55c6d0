//! Decoding a document straight into a typed object while checking what the value path
//! checks, so that a document of a served kind is parsed once.
//!
//! [`decode`] (JSON) and [`decode_yaml`] wrap the format's deserializer: every value the type
//! reads is counted against the reader's [`Limits`] (nodes and nesting depth, counted as the
//! scan and the value builder count them), every key of every object is hashed to notice a
//! repeat, and a field the type does not have (which serde skips with
//! `deserialize_ignored_any`) ends the decode unless the caller allows it. Whatever the guard
//! does not like makes the decode fail: the caller then takes the value path, whose errors and
//! warnings name what was wrong. A successful decode therefore means the value path would have
//! accepted the document, found nothing to report and decoded the same object.
//!
//! YAML needs one more rule for that promise. serde_yaml_ng reads a plain scalar as whatever
//! the type asks for (`123` as the string "123" when a string is wanted), while the value path
//! first resolves it (`123` is a number) and then decodes the value, which fails for a string
//! field. Under a YAML guard every scalar, sequence and mapping is therefore read through
//! `deserialize_any`, which resolves it as the value path does, and the type's own visitor
//! decides from that.
//!
//! Every forwarding method here is `#[inline(always)]`. The objects are large (about 500
//! bytes for a PriorityLevelConfiguration), and each wrapper layer that stays a call returns
//! its value by copying it: without the attribute those copies were about a sixth of the
//! library's conversion time (`cargo bench -p apfkit-scheme --bench convert`, 1.21× the
//! baseline against 1.07–1.11× with it).

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    Visitor,
};

use super::document::{KeyHashes, Limits};

/// What a guarded decode checks.
pub(super) struct Guard {
    max_depth: usize,
    max_nodes: usize,
    allow_ignored: bool,
    /// Read values through `deserialize_any`, resolved as the value path resolves them (YAML).
    resolve: bool,
    depth: Cell<usize>,
    nodes: Cell<usize>,
}

impl Guard {
    /// A guard for a document nobody checked: within `limits`, no repeated key, no field the
    /// type lacks.
    pub(super) fn checking(limits: &Limits) -> Guard {
        Guard {
            max_depth: limits.max_depth,
            max_nodes: limits.max_nodes,
            allow_ignored: false,
            resolve: false,
            depth: Cell::new(0),
            nodes: Cell::new(0),
        }
    }

    /// [`Guard::checking`] for a YAML document: every value is also resolved as the value
    /// path resolves it.
    pub(super) fn checking_yaml(limits: &Limits) -> Guard {
        Guard {
            resolve: true,
            ..Guard::checking(limits)
        }
    }

    /// A guard for a document the reader already checked against its limits: no repeated key,
    /// and fields the type lacks only if `allow_ignored`.
    pub(super) fn checked(allow_ignored: bool) -> Guard {
        Guard {
            max_depth: usize::MAX,
            max_nodes: usize::MAX,
            allow_ignored,
            resolve: false,
            depth: Cell::new(0),
            nodes: Cell::new(0),
        }
    }

    #[inline(always)]
    fn node<E: de::Error>(&self) -> Result<(), E> {
        let nodes = self.nodes.get() + 1;
        if nodes > self.max_nodes {
            return Err(E::custom("too many nodes"));
        }
        self.nodes.set(nodes);
        Ok(())
    }

    #[inline(always)]
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        self.node()?;
        let depth = self.depth.get() + 1;
        if depth > self.max_depth {
            return Err(E::custom("nested too deep"));
        }
        self.depth.set(depth);
        Ok(())
    }

    #[inline(always)]
    fn leave(&self) {
        self.depth.set(self.depth.get() - 1);
    }
}

/// The JSON value `text` starts with (blanks before it allowed), decoded as `T` under
/// `guard`, and the offset where it ends; `None` if it does not decode, ends after `text` does,
/// or the guard refused something. What follows the value is the caller's to check.
pub(super) fn decode<T: DeserializeOwned>(text: &str, guard: &Guard) -> Option<(T, usize)> {
    // Text already checked as UTF-8, once, spares serde_json a check of every string.
    let mut de = serde_json::Deserializer::from_str(text);
    let typed = T::deserialize(Guarded {
        inner: &mut de,
        guard,
    })
    .ok()?;
    // A stream made from the deserializer starts where the value ended.
    let end = de.into_iter::<serde::de::IgnoredAny>().byte_offset();
    Some((typed, end))
}

/// The one document of the YAML `text` decoded as `T` under `guard` (a
/// [`Guard::checking_yaml`]); `None` if it does not decode, the guard refused something, or
/// `text` holds a second document.
pub(super) fn decode_yaml<T: DeserializeOwned>(text: &str, guard: &Guard) -> Option<T> {
    let mut documents = serde_yaml_ng::Deserializer::from_str(text);
    let typed = T::deserialize(Guarded {
        inner: documents.next()?,
        guard,
    })
    .ok()?;
    documents.next().is_none().then_some(typed)
}

/// `value` decoded as `T` if it has no field `T` lacks: the quick try before a decode that
/// names such fields (a JSON value has no repeated keys, and its reader checked the limits).
pub(super) fn decode_value<T: DeserializeOwned>(value: &serde_json::Value) -> Option<T> {
    T::deserialize(Guarded {
        inner: value,
        guard: &Guard::checked(false),
    })
    .ok()
}

/// A deserializer whose values are counted and whose objects are checked.
struct Guarded<'g, D> {
    inner: D,
    guard: &'g Guard,
}

/// A visitor of [`Guarded`] values.
struct Visit<'g, V> {
    inner: V,
    guard: &'g Guard,
}

/// A visitor of an object's key, which records it.
struct KeyVisit<'k, V> {
    inner: V,
    keys: &'k mut KeyHashes,
}

/// A deserializer of an object's key.
struct KeyDeserializer<'k, D> {
    inner: D,
    keys: &'k mut KeyHashes,
}

/// Forwards the `deserialize_*` methods of a wrapping deserializer, wrapping each visitor.
macro_rules! forward_deserialize {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?;)*) => {$(
        #[inline(always)]
        fn $method<V: Visitor<'de>>(
            self,
            $($($arg: $ty,)*)?
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let (inner, visitor) = self.split(visitor);
            inner.$method($($($arg,)*)? visitor)
        }
    )*};
}

/// The methods every wrapping deserializer forwards the same way.
macro_rules! forward_all {
    () => {
        forward_deserialize! {
            deserialize_any; deserialize_bool; deserialize_i8; deserialize_i16; deserialize_i32;
            deserialize_i64; deserialize_i128; deserialize_u8; deserialize_u16; deserialize_u32;
            deserialize_u64; deserialize_u128; deserialize_f32; deserialize_f64;
            deserialize_char; deserialize_str; deserialize_string; deserialize_bytes;
            deserialize_byte_buf; deserialize_option; deserialize_unit;
            deserialize_unit_struct(name: &'static str);
            deserialize_newtype_struct(name: &'static str);
            deserialize_seq; deserialize_tuple(len: usize);
            deserialize_tuple_struct(name: &'static str, len: usize);
            deserialize_map;
            deserialize_struct(name: &'static str, fields: &'static [&'static str]);
            deserialize_enum(name: &'static str, variants: &'static [&'static str]);
            deserialize_identifier;
        }

        fn is_human_readable(&self) -> bool {
            self.inner.is_human_readable()
        }
    };
}

impl<'g, D> Guarded<'g, D> {
    #[inline(always)]
    fn split<V>(self, inner: V) -> (D, Visit<'g, V>) {
        let visitor = Visit {
            inner,
            guard: self.guard,
        };
        (self.inner, visitor)
    }
}

/// Forwards `deserialize_*` methods of [`Guarded`], or reads the value through
/// `deserialize_any` if the guard resolves values.
macro_rules! forward_or_resolve {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?;)*) => {$(
        #[inline(always)]
        fn $method<V: Visitor<'de>>(
            self,
            $($($arg: $ty,)*)?
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            let resolve = self.guard.resolve;
            let (inner, visitor) = self.split(visitor);
            if resolve {
                inner.deserialize_any(visitor)
            } else {
                inner.$method($($($arg,)*)? visitor)
            }
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Guarded<'_, D> {
    type Error = D::Error;

    forward_or_resolve! {
        deserialize_bool; deserialize_i8; deserialize_i16; deserialize_i32; deserialize_i64;
        deserialize_i128; deserialize_u8; deserialize_u16; deserialize_u32; deserialize_u64;
        deserialize_u128; deserialize_f32; deserialize_f64; deserialize_char;
        deserialize_str; deserialize_string; deserialize_unit;
        deserialize_unit_struct(name: &'static str);
        deserialize_seq; deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map;
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }

    // `null`, `~` and an empty plain scalar are `None` to serde_yaml_ng, as they are `null`
    // to the value path; an enum is refused by the visitor either way.
    forward_deserialize! {
        deserialize_any; deserialize_bytes; deserialize_byte_buf; deserialize_option;
        deserialize_newtype_struct(name: &'static str);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier;
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }

    /// What serde reads for a field its type does not have.
    #[inline(always)]
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        if !self.guard.allow_ignored {
            return Err(de::Error::custom("a field the type does not have"));
        }
        self.inner.deserialize_ignored_any(visitor)
    }
}

impl<'k, D> KeyDeserializer<'k, D> {
    #[inline(always)]
    fn split<V>(self, inner: V) -> (D, KeyVisit<'k, V>) {
        let visitor = KeyVisit {
            inner,
            keys: self.keys,
        };
        (self.inner, visitor)
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyDeserializer<'_, D> {
    type Error = D::Error;

    forward_all!();

    #[inline(always)]
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, visitor) = self.split(visitor);
        inner.deserialize_ignored_any(visitor)
    }
}

/// Forwards scalar visits, calling `$before` first.
macro_rules! forward_scalars {
    ($before:ident; $($method:ident($ty:ty);)*) => {$(
        #[inline(always)]
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.$before::<E>()?;
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Visit<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    // No 128-bit integers: the value path has no JSON value for them (serde_json never
    // gives one; serde_yaml_ng does for huge YAML integers).
    forward_scalars! {count;
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64);
        visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64);
        visit_f32(f32); visit_f64(f64); visit_char(char);
        visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }

    #[inline(always)]
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.count::<E>()?;
        self.inner.visit_none()
    }

    #[inline(always)]
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.count::<E>()?;
        self.inner.visit_unit()
    }

    #[inline(always)]
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Guarded {
            inner: deserializer,
            guard: self.guard,
        })
    }

    #[inline(always)]
    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Guarded {
            inner: deserializer,
            guard: self.guard,
        })
    }

    #[inline(always)]
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.guard.enter()?;
        let value = self.inner.visit_seq(Items {
            inner: seq,
            guard: self.guard,
        });
        self.guard.leave();
        value
    }

    #[inline(always)]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.guard.enter()?;
        let value = self.inner.visit_map(Entries {
            inner: map,
            guard: self.guard,
            keys: KeyHashes::default(),
        });
        self.guard.leave();
        value
    }

    // Kubernetes types have no enums with data; a document that reaches one takes the
    // scanning path, which counts what is inside.
    fn visit_enum<A: EnumAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(de::Error::custom("an enum"))
    }
}

impl<V> Visit<'_, V> {
    #[inline(always)]
    fn count<E: de::Error>(&self) -> Result<(), E> {
        self.guard.node()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyVisit<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    #[inline(always)]
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        record::<E>(self.keys, v)?;
        self.inner.visit_str(v)
    }

    #[inline(always)]
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        record::<E>(self.keys, v)?;
        self.inner.visit_borrowed_str(v)
    }

    #[inline(always)]
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        record::<E>(self.keys, &v)?;
        self.inner.visit_string(v)
    }
}

/// Records a key; a repeated one (or a hash collision) ends the decode. Keys that are not
/// strings end it too, through the visitor's default methods.
fn record<E: de::Error>(keys: &mut KeyHashes, key: &str) -> Result<(), E> {
    if keys.insert(key) {
        Ok(())
    } else {
        Err(E::custom("a repeated key"))
    }
}

/// The elements of a guarded array.
struct Items<'g, A> {
    inner: A,
    guard: &'g Guard,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Items<'_, A> {
    type Error = A::Error;

    #[inline(always)]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Seed {
            inner: seed,
            guard: self.guard,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// The entries of a guarded object.
struct Entries<'g, A> {
    inner: A,
    guard: &'g Guard,
    keys: KeyHashes,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<'_, A> {
    type Error = A::Error;

    #[inline(always)]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let key = self.inner.next_key_seed(KeySeed {
            inner: seed,
            keys: &mut self.keys,
        })?;
        if key.is_some() {
            self.guard.node()?;
        }
        Ok(key)
    }

    #[inline(always)]
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.next_value_seed(Seed {
            inner: seed,
            guard: self.guard,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A seed whose value is guarded.
struct Seed<'g, S> {
    inner: S,
    guard: &'g Guard,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Guarded {
            inner: deserializer,
            guard: self.guard,
        })
    }
}

/// A seed whose key is recorded.
struct KeySeed<'k, S> {
    inner: S,
    keys: &'k mut KeyHashes,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, S> {
    type Value = S::Value;

    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(KeyDeserializer {
            inner: deserializer,
            keys: self.keys,
        })
    }
}
