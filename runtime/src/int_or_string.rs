//! `x-kubernetes-int-or-string`: Go's `intstr.IntOrString`.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A value that is either a 32-bit integer or a string, as Go's `intstr.IntOrString`:
/// a JSON number decodes as [`IntOrString::Int`] (it must be an integer that fits `i32`), a JSON
/// string as [`IntOrString::String`]. Each is written back in the form it was read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// A JSON number.
    Int(i32),
    /// A JSON string, often a percentage (`"25%"`) or a port name.
    String(String),
}

impl Default for IntOrString {
    /// Go's zero value: the integer 0.
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl fmt::Display for IntOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(value) => write!(f, "{value}"),
            IntOrString::String(value) => f.write_str(value),
        }
    }
}

impl From<i32> for IntOrString {
    fn from(value: i32) -> Self {
        IntOrString::Int(value)
    }
}

impl From<String> for IntOrString {
    fn from(value: String) -> Self {
        IntOrString::String(value)
    }
}

impl From<&str> for IntOrString {
    fn from(value: &str) -> Self {
        IntOrString::String(value.to_owned())
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(value) => serializer.serialize_i32(*value),
            IntOrString::String(value) => serializer.serialize_str(value),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntOrStringVisitor;

        impl Visitor<'_> for IntOrStringVisitor {
            type Value = IntOrString;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 32-bit integer or a string")
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<IntOrString, E> {
                i32::try_from(value)
                    .map(IntOrString::Int)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(value), &self))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<IntOrString, E> {
                i32::try_from(value)
                    .map(IntOrString::Int)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(value), &self))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(value.to_owned()))
            }

            fn visit_string<E: de::Error>(self, value: String) -> Result<IntOrString, E> {
                Ok(IntOrString::String(value))
            }
        }

        deserializer.deserialize_any(IntOrStringVisitor)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for IntOrString {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrString".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "integer", "format": "int32"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::IntOrString;

    #[test]
    fn numbers_and_strings_keep_their_form() {
        for (json, expected) in [
            ("0", IntOrString::Int(0)),
            ("-2147483648", IntOrString::Int(i32::MIN)),
            ("2147483647", IntOrString::Int(i32::MAX)),
            (r#""25%""#, IntOrString::from("25%")),
            (r#""8080""#, IntOrString::from("8080")),
        ] {
            let value: IntOrString = serde_json::from_str(json).unwrap();
            assert_eq!(value, expected, "{json}");
            assert_eq!(serde_json::to_string(&value).unwrap(), json);
        }
    }

    #[test]
    fn what_go_rejects_is_rejected() {
        for json in [
            "2147483648",
            "-2147483649",
            "1.5",
            "1e3",
            "true",
            "null",
            "[]",
            "{}",
        ] {
            let err = serde_json::from_str::<IntOrString>(json).unwrap_err();
            assert!(
                err.to_string().contains("a 32-bit integer or a string"),
                "{json}: {err}"
            );
        }
    }
}
