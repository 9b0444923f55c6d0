//! JSON as kube-apiserver writes it: fields in the order of its Go structs, `encoding/json`'s
//! `omitempty` rules, and Go's escaping of `<`, `>`, `&`, U+2028 and U+2029.
//!
//! [`GoOrder`] wraps a value of a [`GoJson`] type for serde; the per-struct [`GoJson`] impls
//! are generated from the `x-apfkit-go` layout of each schema, the ones for scalars and
//! containers are here.

use std::collections::BTreeMap;
use std::io;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::ser::{CompactFormatter, Formatter};

/// A value serialized in Go's field order. Serialize `GoOrder(&object)` with any serde
/// serializer, or use [`to_vec`].
#[derive(Debug, Clone, Copy)]
pub struct GoOrder<'a, T: ?Sized>(pub &'a T);

/// A type kube-apiserver writes as JSON in the field order of its Go struct: the generated
/// impls follow each schema's `x-apfkit-go` layout, the ones for scalars and containers are
/// here. Serialized through [`GoOrder`].
pub trait GoJson {
    /// Serializes the value in Go's field order.
    ///
    /// # Errors
    ///
    /// The serializer's.
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl<T: GoJson + ?Sized> Serialize for GoOrder<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_go(serializer)
    }
}

macro_rules! plain {
    ($($ty:ty),*) => {$(
        impl GoJson for $ty {
            fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.serialize(serializer)
            }
        }
    )*};
}
plain!(String, str, i32, i64, bool, serde_json::Value);

impl GoJson for FieldsV1 {
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// RFC 3339 in UTC, whole seconds, as `metav1.Time.MarshalJSON` writes it.
impl GoJson for Time {
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }
}

/// RFC 3339 in UTC with six digits of a second, as `metav1.MicroTime.MarshalJSON` writes it.
impl GoJson for MicroTime {
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }
}

impl<T: GoJson> GoJson for Vec<T> {
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for item in self {
            seq.serialize_element(&GoOrder(item))?;
        }
        seq.end()
    }
}

impl<T: GoJson> GoJson for BTreeMap<String, T> {
    fn serialize_go<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self {
            map.serialize_entry(key, &GoOrder(value))?;
        }
        map.end()
    }
}

/// What `omitempty` looks at: Go's empty values of strings, numbers, booleans, slices and maps.
/// Structs are never empty.
pub trait GoEmpty {
    /// Whether `encoding/json` leaves the value out under `omitempty`.
    fn is_go_empty(&self) -> bool;
}

impl GoEmpty for String {
    fn is_go_empty(&self) -> bool {
        self.is_empty()
    }
}
impl GoEmpty for i32 {
    fn is_go_empty(&self) -> bool {
        *self == 0
    }
}
impl GoEmpty for i64 {
    fn is_go_empty(&self) -> bool {
        *self == 0
    }
}
impl GoEmpty for bool {
    fn is_go_empty(&self) -> bool {
        !*self
    }
}
impl<T> GoEmpty for Vec<T> {
    fn is_go_empty(&self) -> bool {
        self.is_empty()
    }
}
impl<T> GoEmpty for BTreeMap<String, T> {
    fn is_go_empty(&self) -> bool {
        self.is_empty()
    }
}

/// A serde_json formatter that escapes as Go's `encoding/json` does by default
/// (`SetEscapeHTML(true)`): `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`, and the line
/// and paragraph separators U+2028 and U+2029.
pub struct GoFormatter<F>(F);

impl<F: Formatter> Formatter for GoFormatter<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Byte by byte: U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        let bytes = fragment.as_bytes();
        let (mut start, mut from) = (0, 0);
        while let Some(offset) = first_special(&bytes[from..]) {
            let at = from + offset;
            let (escaped, width) = match &bytes[at..] {
                [b'<', ..] => ("\\u003c", 1),
                [b'>', ..] => ("\\u003e", 1),
                [b'&', ..] => ("\\u0026", 1),
                [0xE2, 0x80, 0xA8, ..] => ("\\u2028", 3),
                [0xE2, 0x80, 0xA9, ..] => ("\\u2029", 3),
                _ => {
                    from = at + 1;
                    continue;
                }
            };
            writer.write_all(&bytes[start..at])?;
            writer.write_all(escaped.as_bytes())?;
            start = at + width;
            from = start;
        }
        writer.write_all(&bytes[start..])
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// The bytes [`GoFormatter`] looks at: the three Go escapes, and the first byte of U+2028
/// and U+2029.
static SPECIAL: [bool; 256] = {
    let mut set = [false; 256];
    set[b'<' as usize] = true;
    set[b'>' as usize] = true;
    set[b'&' as usize] = true;
    set[0xE2] = true;
    set
};

/// The offset of the first byte of `bytes` in [`SPECIAL`]. Eight bytes at a time until a word
/// holds one: almost no string does, and this check runs on every string written.
#[inline]
fn first_special(bytes: &[u8]) -> Option<usize> {
    let (words, _) = bytes.as_chunks::<8>();
    let mut from = 0;
    for word in words {
        if holds_special(u64::from_le_bytes(*word)) {
            break;
        }
        from += 8;
    }
    bytes[from..]
        .iter()
        .position(|&b| SPECIAL[usize::from(b)])
        .map(|offset| from + offset)
}

/// Whether one of the eight bytes of `word` is in [`SPECIAL`]; exact, with no false alarms.
#[inline]
fn holds_special(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    // Whether a byte of `v` is zero (exact for the question "any byte").
    let any_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH_BITS != 0;
    // `<` (3C) and `>` (3E) differ only in bit 1; E2 has its high bit set, which ASCII never has.
    any_zero(word ^ (ONES * u64::from(b'&')))
        || any_zero((word | (ONES * 0x02)) ^ (ONES * u64::from(b'>')))
        || (word & HIGH_BITS != 0 && any_zero(word ^ (ONES * 0xE2)))
}

/// `json.MarshalIndent(v, "", "  ")`'s layout, as serde_json's `PrettyFormatter` with a
/// two-space indent writes it, with each line break and its indent written at once.
#[derive(Default)]
struct Indented {
    level: usize,
    has_value: bool,
}

/// A comma, a line break and the indent of [`BREAKS_LEVELS`] levels.
const BREAKS: &[u8] = b",\n                                                                                                                                ";
const BREAKS_LEVELS: usize = (BREAKS.len() - 2) / 2;

impl Indented {
    /// Writes a line break (after a comma unless `first`) and the current indent.
    fn line<W: ?Sized + io::Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        if self.level <= BREAKS_LEVELS {
            return w.write_all(&BREAKS[from..2 + 2 * self.level]);
        }
        w.write_all(&BREAKS[from..2])?;
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl Formatter for Indented {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` (a [`GoOrder`], or anything serializable) as kube-apiserver does: compact
/// (the wire and etcd) or indented by two spaces (`json.MarshalIndent(v, "", "  ")`), without a
/// trailing newline, with Go's escaping.
///
/// # Errors
///
/// The writer's errors, and values that cannot be written (a time outside RFC 3339's years).
pub fn write<W: io::Write, V: Serialize + ?Sized>(
    writer: W,
    value: &V,
    pretty: bool,
) -> serde_json::Result<()> {
    if pretty {
        let mut ser =
            serde_json::Serializer::with_formatter(writer, GoFormatter(Indented::default()));
        value.serialize(&mut ser)
    } else {
        let mut ser = serde_json::Serializer::with_formatter(writer, GoFormatter(CompactFormatter));
        value.serialize(&mut ser)
    }
}

/// `value` in Go's order, written by [`write()`] into a new buffer.
///
/// # Errors
///
/// See [`write()`].
pub fn to_vec<T: GoJson + ?Sized>(value: &T, pretty: bool) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    write(&mut out, &GoOrder(value), pretty)?;
    Ok(out)
}

/// Any value written by [`write()`] as it is (a `serde_json::Value`'s keys sorted), for objects
/// whose Go type is not known here.
///
/// # Errors
///
/// See [`write()`].
pub fn to_vec_plain<V: Serialize + ?Sized>(value: &V, pretty: bool) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    write(&mut out, value, pretty)?;
    Ok(out)
}
