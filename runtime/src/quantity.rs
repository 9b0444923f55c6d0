//! Kubernetes' `resource.Quantity`, checked by its grammar and kept as written.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A Kubernetes quantity (`500m`, `1.5Gi`, `2e3`, or a plain integer), kept exactly as written.
///
/// Text is accepted when upstream's `resource.ParseQuantity` (`k8s.io/apimachinery/pkg/api/
/// resource/quantity.go`) accepts it, quirks included: a sign or a `.` alone reads as zero, a
/// digit is optional after `.` (`1.G`), and the exponent of `e`/`E` is any 64-bit integer.
/// CustomResourceDefinitions type a quantity as an integer or a string
/// (`x-kubernetes-int-or-string`), so a JSON number is accepted too and written back as a
/// number: Go's `Quantity.UnmarshalJSON` parses an unquoted number's text with `ParseQuantity`,
/// so `1000.0`, `1e3` and `-0.5` are quantities as much as `1000` (every JSON number's text is
/// in `ParseQuantity`'s grammar). A whole number keeps its digits; a number with a fraction or
/// an exponent is kept as its value (`1e3` is written back as `1000.0`). k8s-openapi's
/// `Quantity` checks nothing, and Go's rewrites `1000m` as `1`; this keeps the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Quantity(Repr);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    Text(String),
    Signed(i64),
    Unsigned(u64),
    /// A JSON number with a fraction or an exponent, by its bits (so that `Eq` and `Hash` hold).
    Float(u64),
}

/// Why text is not a quantity, with upstream's two error messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not follow the grammar, or holds no digit where upstream needs one.
    #[error(
        "{0:?} is not a quantity: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format(String),
    /// The suffix is not one Kubernetes knows.
    #[error("{0:?} is not a quantity: unable to parse quantity's suffix")]
    Suffix(String),
}

impl Quantity {
    /// Checks `text` and keeps it.
    pub fn new(text: impl Into<String>) -> Result<Self, QuantityError> {
        let text = text.into();
        check(&text)?;
        Ok(Quantity(Repr::Text(text)))
    }

    /// The value as written (an integer read from JSON in decimal).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        match &self.0 {
            Repr::Text(text) => text.as_str().into(),
            Repr::Signed(value) => value.to_string().into(),
            Repr::Unsigned(value) => value.to_string().into(),
            Repr::Float(bits) => f64::from_bits(*bits).to_string().into(),
        }
    }

    /// Whether the value was a JSON number rather than a string.
    pub fn is_number(&self) -> bool {
        !matches!(self.0, Repr::Text(_))
    }
}

impl Default for Quantity {
    /// The quantity `"0"`.
    fn default() -> Self {
        Quantity(Repr::Text("0".to_owned()))
    }
}

impl From<i64> for Quantity {
    fn from(value: i64) -> Self {
        Quantity(Repr::Signed(value))
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Quantity::new(text)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Text(text) => serializer.serialize_str(text),
            Repr::Signed(value) => serializer.serialize_i64(*value),
            Repr::Unsigned(value) => serializer.serialize_u64(*value),
            Repr::Float(bits) => serializer.serialize_f64(f64::from_bits(*bits)),
        }
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct QuantityVisitor;

        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity: a number or a string such as \"500m\" or \"1.5Gi\"")
            }

            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Quantity, E> {
                // JSON has no other floats; YAML's `.inf` and `.nan` have no JSON form, and
                // Go's YAML-to-JSON conversion refuses them.
                if value.is_finite() {
                    Ok(Quantity(Repr::Float(value.to_bits())))
                } else {
                    Err(E::custom(format!(
                        "{value} is not a quantity: not a finite number"
                    )))
                }
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Quantity, E> {
                Ok(Quantity(Repr::Signed(value)))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Quantity, E> {
                Ok(Quantity(Repr::Unsigned(value)))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Quantity, E> {
                Quantity::new(value).map_err(E::custom)
            }

            fn visit_string<E: de::Error>(self, value: String) -> Result<Quantity, E> {
                Quantity::new(value).map_err(E::custom)
            }
        }

        deserializer.deserialize_any(QuantityVisitor)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Quantity {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Quantity".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true
        })
    }
}

/// The pieces `parseQuantityString` finds.
struct Parts<'a> {
    /// Sign, zeros, digits, point and fraction digits: what upstream hands to `inf.Dec`.
    value: &'a str,
    /// Significant integer digits ("0" when there are none).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

/// `resource.ParseQuantity`'s verdict on `text`.
fn check(text: &str) -> Result<(), QuantityError> {
    let format = || QuantityError::Format(text.to_owned());
    if text.is_empty() {
        return Err(format());
    }
    let parts = split(text).ok_or_else(format)?;
    let (base, exponent) =
        interpret_suffix(parts.suffix).ok_or_else(|| QuantityError::Suffix(text.to_owned()))?;
    // Upstream takes an int64 fast path when the digits fit; otherwise it parses `value` as an
    // arbitrary-precision decimal, which fails when `value` holds no digit at all (".", "-.").
    let has_digit = parts.value.bytes().any(|b| b.is_ascii_digit());
    if has_digit || fast_path(&parts, base, exponent) {
        Ok(())
    } else {
        Err(format())
    }
}

/// Upstream's `parseQuantityString`: sign, digits, optional point and digits, then a suffix of
/// letters from `eEinumkKMGTP`, an optional sign and digits.
fn split(text: &str) -> Option<Parts<'_>> {
    let bytes = text.as_bytes();
    let end = bytes.len();
    let mut pos = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    if pos == end {
        return Some(Parts {
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == num_start {
        "0"
    } else {
        &text[num_start..pos]
    };
    let mut denom = "";
    if pos < end && bytes[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &text[denom_start..pos];
    }
    let value = &text[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < end && matches!(bytes[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    (pos == end).then(|| Parts {
        value,
        num,
        denom,
        suffix: &text[suffix_start..],
    })
}

/// Upstream's `suffixHandler.interpret`: the base (10 or 2) and exponent of a suffix.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exponent) = decimal {
        return Some((10, exponent));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exponent) = binary {
        return Some((2, exponent));
    }
    let digits = suffix
        .strip_prefix(['e', 'E'])
        .filter(|rest| !rest.is_empty())?;
    // Go's `strconv.ParseInt(s, 10, 64)`, then a truncating conversion to int32.
    let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let parsed: i64 = digits.parse().ok()?;
    Some((10, parsed as i32))
}

/// Whether upstream's int64 fast path handles the value (then `value` is never re-parsed).
fn fast_path(parts: &Parts<'_>, base: u32, exponent: i32) -> bool {
    const MAX_INT64_FACTORS: i64 = 18;
    const NANO: i64 = -9;
    let digits = (parts.num.len() + parts.denom.len()) as i64;
    let (precision, mut scale, mantissa) = if base == 10 {
        (MAX_INT64_FACTORS - digits, i64::from(exponent), 1i64)
    } else if exponent >= 0 && parts.denom.is_empty() {
        let reduced = (exponent as f32 * 3.0 / 10.0) as i64;
        (
            15 - parts.num.len() as i64 - reduced - 1,
            0,
            1i64 << exponent,
        )
    } else {
        (-1, 0, 1)
    };
    if precision < 0 {
        return false;
    }
    scale -= parts.denom.len() as i64;
    if scale < NANO {
        return false;
    }
    let shifted = format!("{}{}", parts.num, parts.denom);
    shifted
        .parse::<i64>()
        .ok()
        .and_then(|value| value.checked_mul(mantissa))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::{Quantity, QuantityError};

    /// Issue 24, item 9: Go's `Quantity.UnmarshalJSON` hands an unquoted number's text to
    /// `ParseQuantity` (k8s.io/apimachinery `pkg/api/resource/quantity.go`), so whole-number
    /// floats and exponents are quantities; they are written back as the same JSON number.
    #[test]
    fn json_numbers_of_every_form_are_quantities() {
        for (text, value) in [
            ("1000.0", 1000.0),
            ("1e3", 1000.0),
            ("1E3", 1000.0),
            ("1E+3", 1000.0),
            ("2.5e-3", 0.0025),
            ("-0.5", -0.5),
            ("0.0", 0.0),
            ("1.7976931348623157e308", f64::MAX),
        ] {
            let quantity: Quantity =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(quantity.is_number(), "{text}");
            let written = serde_json::to_string(&quantity).unwrap();
            assert_eq!(
                serde_json::from_str::<f64>(&written).unwrap(),
                value,
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<Quantity>(&written).unwrap(),
                quantity
            );
            // What it displays is a quantity too.
            assert!(
                quantity.as_str().parse::<Quantity>().is_ok(),
                "{text}: {}",
                quantity.as_str()
            );
        }
        assert_eq!(
            serde_json::to_string(&serde_json::from_str::<Quantity>("1e3").unwrap()).unwrap(),
            "1000.0"
        );
        // Integers keep their digits.
        assert_eq!(
            serde_json::to_string(&serde_json::from_str::<Quantity>("1000").unwrap()).unwrap(),
            "1000"
        );
        // In YAML too, and YAML's infinities are refused.
        let memory: Quantity = serde_saphyr::from_str("1000.0").unwrap();
        assert_eq!(memory.as_str(), "1000");
        assert!(serde_saphyr::from_str::<Quantity>(".inf").is_err());
        // IntOrString stays as Go's: a float is an error.
        assert!(serde_json::from_str::<crate::IntOrString>("1000.0").is_err());
        assert!(serde_json::from_str::<crate::IntOrString>("1e3").is_err());
    }

    /// Inputs upstream's `TestQuantityParse` and `TestQuantityParseZero` accept, and the quirks
    /// read off `parseQuantityString`.
    #[test]
    fn upstream_accepted_quantities() {
        for text in [
            "0",
            "0n",
            "0u",
            "0m",
            "0Ki",
            "0k",
            "0Mi",
            "0M",
            "0Gi",
            "0G",
            "0Ti",
            "0T",
            "1",
            "1Ki",
            "8Ki",
            "7Mi",
            "6Gi",
            "5Ti",
            "4Pi",
            "3Ei",
            "10Ti",
            "100Ti",
            "5n",
            "4u",
            "3m",
            "9",
            "8k",
            "50k",
            "7M",
            "6G",
            "5T",
            "40T",
            "300T",
            "2P",
            "1E",
            "1E-3",
            "1e3",
            "1E6",
            "1e9",
            "1E12",
            "1e15",
            "1e18",
            "0.001",
            "0.0005k",
            "0.005",
            "0.05",
            "0.5",
            "0.00050k",
            "0.00500",
            "0.05000",
            "0.50000",
            "0.5e0",
            "0.5e-1",
            "0.5e-2",
            "0.5e0",
            "10.035M",
            "1.2e3",
            "1.3E+6",
            "1.40e9",
            "1.53E12",
            "1.6e15",
            "1.7E18",
            "9.01",
            "8.1k",
            "7.123456M",
            "6.987654321G",
            "5.444T",
            "40.1T",
            "300.2T",
            "2.5P",
            "1.01E",
            "1.1Ki",
            "1.5Mi",
            "10.25Gi",
            "0.1Ti",
            "1.5Pi",
            "1.0Ei",
            "0.1Ki",
            ".001",
            ".0001k",
            "1.",
            "1.G",
            "-1",
            "+1",
            "-5Ki",
            "-0.5",
            "1e-9",
            "1e-10",
            "1e9223372036854775807",
            "123456789012345678901234567890",
            "100000000000000Ei",
            "-",
            "+",
            ".",
            "0.",
            "000",
            "-0",
        ] {
            let value: Quantity = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            let json = format!("{text:?}");
            let decoded: Quantity = serde_json::from_str(&json).unwrap();
            assert_eq!(decoded, value);
            assert_eq!(serde_json::to_string(&decoded).unwrap(), json);
            assert_eq!(decoded.as_str(), text);
        }
    }

    /// Upstream's `invalid` table, plus what the grammar rules out.
    #[test]
    fn upstream_rejected_quantities() {
        for (text, suffix_error) in [
            ("", false),
            ("1.1.M", false),
            ("1+1.0M", false),
            ("0.1mi", true),
            ("0.1am", false),
            ("aoeu", false),
            (".5i", true),
            ("1i", true),
            ("-3.01i", true),
            ("-3.01e-", true),
            (" 1", false),
            ("1 ", false),
            ("1K", true),
            ("1e", true),
            ("1e1.5", false),
            ("1e99999999999999999999", true),
            ("--1", true),
            (".e-10", false),
            ("-.Mi5", true),
        ] {
            let err = text.parse::<Quantity>().unwrap_err();
            assert_eq!(
                matches!(err, QuantityError::Suffix(_)),
                suffix_error,
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn integers_stay_numbers() {
        for json in ["0", "-3", "9223372036854775807", "18446744073709551615"] {
            let value: Quantity = serde_json::from_str(json).unwrap();
            assert!(value.is_number());
            assert_eq!(serde_json::to_string(&value).unwrap(), json);
            assert_eq!(value.as_str(), json);
        }
        // Not numbers nor strings (a fraction such as 1.5 is a quantity, as in Go: see
        // json_numbers_of_every_form_are_quantities).
        for json in ["true", "null", "[]", "{}"] {
            assert!(serde_json::from_str::<Quantity>(json).is_err(), "{json}");
        }
    }
}
