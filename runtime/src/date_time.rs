//! `format: date-time`, checked as kube-apiserver checks it in custom resources.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// A `format: date-time` string, kept exactly as written.
///
/// kube-apiserver validates such a value in a custom resource with kube-openapi's
/// `strfmt.IsDateTime` (`k8s.io/kube-openapi/pkg/validation/strfmt/time.go`), and this type
/// accepts exactly what that function accepts, quirks included:
///
/// - the text is split at its `T`s (either case): before the first is a full date
///   `YYYY-MM-DD` that must exist (leap years counted); between the first and the second is
///   `hh:mm:ss`, an optional fraction, and a zone `Z` or `±hh:mm`; anything after a second `T`
///   is not looked at;
/// - hours go to 23 and minutes and seconds to 59; the zone's digits are not range-checked;
/// - the character before the fraction's digits may be any character but a newline, not
///   only `.`, since upstream's pattern writes it as `.`.
///
/// Unlike k8s-openapi's `Time` (and Go's `metav1.Time`), the value is not re-formatted:
/// `2024-01-01T10:00:00.5+01:00` is written back as it was read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateTime(String);

/// Why a string is not a `date-time`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a date-time (RFC 3339, such as 2006-01-02T15:04:05Z)")]
pub struct DateTimeError {
    text: String,
}

impl DateTime {
    /// Checks `text` and keeps it.
    pub fn new(text: impl Into<String>) -> Result<Self, DateTimeError> {
        let text = text.into();
        if is_date_time(&text) {
            Ok(DateTime(text))
        } else {
            Err(DateTimeError { text })
        }
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as written.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl Default for DateTime {
    /// The Unix epoch, `1970-01-01T00:00:00Z`.
    fn default() -> Self {
        DateTime("1970-01-01T00:00:00Z".to_owned())
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for DateTime {
    type Err = DateTimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        DateTime::new(text)
    }
}

impl TryFrom<String> for DateTime {
    type Error = DateTimeError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        DateTime::new(text)
    }
}

impl AsRef<str> for DateTime {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for DateTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DateTime::new(text).map_err(de::Error::custom)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for DateTime {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DateTime".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time"})
    }
}

/// kube-openapi's `strfmt.IsDateTime`.
fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let mut parts = text.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_full_date(date) && is_time_of_day(time)
}

/// Go's `time.Parse("2006-01-02", text)` succeeding: four-digit year, two-digit month and day,
/// and a day that exists in that month.
fn is_full_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (
        digits(&bytes[0..4]),
        digits(&bytes[5..7]),
        digits(&bytes[8..10]),
    ) else {
        return false;
    };
    (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month)
}

/// The days in `month` (1 to 12) of `year` in the proleptic Gregorian calendar.
pub fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$` (case-insensitive,
/// since upstream lower-cases first), with hours ≤ 23 and minutes and seconds ≤ 59.
fn is_time_of_day(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 9 || bytes[2] != b':' || bytes[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        digits(&bytes[0..2]),
        digits(&bytes[3..5]),
        digits(&bytes[6..8]),
    ) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    let rest = &text[8..];
    is_zone(rest) || is_fraction_and_zone(rest)
}

/// `z` or `±hh:mm`.
fn is_zone(text: &str) -> bool {
    match text.as_bytes() {
        [b'z' | b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

/// `.[0-9]+` then a zone, where `.` is any character but a newline.
fn is_fraction_and_zone(text: &str) -> bool {
    let mut chars = text.chars();
    match chars.next() {
        None | Some('\n') => return false,
        Some(_) => {}
    }
    let rest = chars.as_str();
    let zone_len = if rest.ends_with(['z', 'Z']) { 1 } else { 6 };
    let Some(split) = rest.len().checked_sub(zone_len) else {
        return false;
    };
    let Some((fraction, zone)) = rest.split_at_checked(split) else {
        return false;
    };
    !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit()) && is_zone(zone)
}

/// The value of a run of ASCII digits.
fn digits(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::DateTime;

    #[test]
    fn accepted_values_are_kept_as_written() {
        for text in [
            "2006-01-02T15:04:05Z",
            "2006-01-02t15:04:05z",
            "2024-02-29T23:59:59.123+01:00",
            "2000-02-29T00:00:00.000000001-12:30",
            "1970-01-01T00:00:00Z",
            "2006-01-02T15:04:05+99:99",
            // Upstream quirks: any character before the fraction, and nothing checked after a
            // second `T`.
            "2006-01-02T15:04:05x5Z",
            "2006-01-02T15:04:05-5Z",
            "2006-01-02T15:04:05ZTanything",
        ] {
            let json = format!("{text:?}");
            let value: DateTime =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(serde_json::to_string(&value).unwrap(), json);
        }
    }

    #[test]
    fn garbage_is_rejected() {
        for text in [
            "",
            "2006",
            "2006-01-02",
            "2006-01-02 15:04:05Z",
            "2006-01-02T15:04:05",
            "2006-01-02T24:00:00Z",
            "2006-01-02T23:60:00Z",
            "2006-01-02T23:59:60Z",
            "2006-13-02T15:04:05Z",
            "2006-00-02T15:04:05Z",
            "2023-02-29T15:04:05Z",
            "1900-02-29T15:04:05Z",
            "2006-04-31T15:04:05Z",
            "2006-1-02T15:04:05Z",
            "+006-01-02T15:04:05Z",
            "2006-01-02T15:04:05.Z",
            "2006-01-02T15:04:05\n5Z",
            "2006-01-02T15:04:05+0100",
            "2006-01-02T15:04:05+01:0",
            "2006-01-02T1:04:05Z",
            "2006-01-02T15:04:05Z ",
            "2006-01-02T15:04:05ZZ",
            "2006-01-02T15:04:05é",
        ] {
            assert!(text.parse::<DateTime>().is_err(), "{text:?} was accepted");
        }
        let err = serde_json::from_str::<DateTime>(r#""yesterday""#).unwrap_err();
        assert!(
            err.to_string()
                .contains(r#""yesterday" is not a date-time"#),
            "{err}"
        );
    }
}
