//! Go's `time.ParseDuration`, which Kubernetes uses for durations in URLs (`?timeout=10s`),
//! flags (`--request-timeout=1m0s`) and CEL's `duration()`: the same values accepted, the
//! same values refused, and Go's error text, so a server or a CEL rule answers as
//! kube-apiserver does.

/// Nanoseconds per unit, as Go's `unitMap` (src/time/format.go) lists them.
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000), // U+00B5, micro sign
    ("μs", 1_000), // U+03BC, Greek small letter mu
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
];

/// The magnitude of `i64::MIN`, the largest a duration's digits may add up to (Go's `1<<63`).
const LIMIT: u64 = 1 << 63;

/// A duration Go's `time.ParseDuration` refuses, in Go's words (`time: invalid duration
/// "1d"`, `time: unknown unit "d" in duration "1d"`, `time: missing unit in duration "3"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GoDurationError(String);

/// Parses `text` as Go's `time.ParseDuration` does: a sign, then one or more decimal numbers
/// each with a unit (`300ms`, `-1.5h`, `2h45m`; units `ns`, `us` (or `µs`), `ms`, `s`, `m`,
/// `h`), or a bare `0`. Returns nanoseconds, which may be negative.
///
/// ```
/// use apfkit_runtime::go_duration::parse_go_duration;
///
/// assert_eq!(parse_go_duration("1m30s"), Ok(90_000_000_000));
/// assert_eq!(parse_go_duration("-1.5s"), Ok(-1_500_000_000));
/// assert_eq!(
///     parse_go_duration("3d").unwrap_err().to_string(),
///     r#"time: unknown unit "d" in duration "3d""#
/// );
/// ```
///
/// # Errors
///
/// Text that is not a Go duration, or a duration beyond an `i64` of nanoseconds.
pub fn parse_go_duration(text: &str) -> Result<i64, GoDurationError> {
    let invalid = || GoDurationError(format!("time: invalid duration {}", quote(text)));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let before = rest.len();
        let (whole, after_whole) = leading_int(rest).ok_or_else(invalid)?;
        rest = after_whole;
        let had_whole = before != rest.len();
        let (mut fraction, mut scale, mut had_fraction) = (0, 1.0, false);
        if let Some(after_point) = rest.strip_prefix('.') {
            let (digits, digits_scale, after_digits) = leading_fraction(after_point);
            had_fraction = after_point.len() != after_digits.len();
            (fraction, scale, rest) = (digits, digits_scale, after_digits);
        }
        if !had_whole && !had_fraction {
            return Err(invalid());
        }
        let unit_end = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        if unit_end == 0 {
            return Err(GoDurationError(format!(
                "time: missing unit in duration {}",
                quote(text)
            )));
        }
        let (unit, after_unit) = rest.split_at(unit_end);
        rest = after_unit;
        let Some(&(_, per_unit)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(GoDurationError(format!(
                "time: unknown unit {} in duration {}",
                quote(unit),
                quote(text)
            )));
        };
        if whole > LIMIT / per_unit {
            return Err(invalid());
        }
        let mut value = whole * per_unit;
        if fraction > 0 {
            // As Go: a float64 keeps fractions of an hour exact to the nanosecond.
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            let nanos = (fraction as f64 * (per_unit as f64 / scale)) as u64;
            value += nanos;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total += value;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        // `total` is at most 2^63, whose negation is i64::MIN.
        return Ok(0i64.wrapping_sub_unsigned(total));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Go's `leadingInt`: the leading digits' value and the rest, or `None` past 2^63.
fn leading_int(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let mut value: u64 = 0;
    for digit in text[..end].bytes() {
        if value > LIMIT / 10 {
            return None;
        }
        value = value * 10 + u64::from(digit - b'0');
        if value > LIMIT {
            return None;
        }
    }
    Some((value, &text[end..]))
}

/// Go's `leadingFraction`: the leading digits as an integer and its scale (10 to the number
/// of digits kept), and the rest; digits past an `i64`'s precision are consumed, not kept.
fn leading_fraction(text: &str) -> (u64, f64, &str) {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (mut value, mut scale) = (0u64, 1.0);
    for digit in text[..end].bytes() {
        if value > (LIMIT - 1) / 10 {
            break;
        }
        let next = value * 10 + u64::from(digit - b'0');
        if next > LIMIT {
            break;
        }
        value = next;
        scale *= 10.0;
    }
    (value, scale, &text[end..])
}

/// Go's `time.quote`: the text in double quotes, `"` and `\` escaped, every byte of a
/// control or non-ASCII character as `\xNN`.
fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                quoted.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `parseDurationTests` (src/time/time_test.go, `TestParseDuration`).
    #[test]
    fn parse_duration() {
        let cases: &[(&str, i64)] = &[
            // simple
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            // sign
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            // decimal
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            // different units
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US),
            ("12μs", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            // composite durations
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            // large value
            ("52763797000ns", 52_763_797_000),
            // more than 9 digits after decimal point (golang.org/issue/6617)
            ("0.3333333333333333333h", 20 * M),
            // 1<<53+1 cannot be stored precisely in a float64
            ("9007199254740993ns", (1 << 53) + 1),
            // largest duration that can be represented by int64 in nanoseconds
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            // largest negative round trip value (golang.org/issue/48629)
            ("-2562047h47m16.854775808s", i64::MIN),
            // huge string (golang.org/issue/15011)
            ("0.100000000000000000000h", 6 * M),
            // the first overflow check in leadingFraction
            ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse_go_duration(text), Ok(*nanos), "{text:?}");
        }
    }

    /// Go's `parseDurationErrorTests` (src/time/time_test.go, `TestParseDurationErrors`):
    /// each error quotes the input as Go's `quote` does.
    #[test]
    fn parse_duration_errors() {
        let cases: &[(&str, &str)] = &[
            // invalid
            ("", r#""""#),
            ("3", r#""3""#),
            ("-", r#""-""#),
            ("s", r#""s""#),
            (".", r#"".""#),
            ("-.", r#""-.""#),
            (".s", r#"".s""#),
            ("+.s", r#""+.s""#),
            ("1d", r#""1d""#),
            ("\u{FFFD}", r#""\xef\xbf\xbd""#),
            (
                "\u{FFFD} hello \u{FFFD} world",
                r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
            ),
            // overflow
            ("9223372036854775810ns", r#""9223372036854775810ns""#),
            ("9223372036854775808ns", r#""9223372036854775808ns""#),
            ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
            ("9223372036854776us", r#""9223372036854776us""#),
            ("3000000h", r#""3000000h""#),
            ("9223372036854775.808us", r#""9223372036854775.808us""#),
            (
                "9223372036854ms775us808ns",
                r#""9223372036854ms775us808ns""#,
            ),
        ];
        for (text, quoted) in cases {
            let error = parse_go_duration(text).expect_err(text).to_string();
            assert!(error.contains(quoted), "{text:?}: {error}");
        }
    }

    #[test]
    fn errors_are_gos_words() {
        let error = |text| parse_go_duration(text).unwrap_err().to_string();
        assert_eq!(error("foo"), r#"time: invalid duration "foo""#);
        assert_eq!(error("3"), r#"time: missing unit in duration "3""#);
        assert_eq!(error("1d"), r#"time: unknown unit "d" in duration "1d""#);
        assert_eq!(
            error("1\"x"),
            r#"time: unknown unit "\"x" in duration "1\"x""#
        );
        assert_eq!(
            error("1\n"),
            r#"time: unknown unit "\x0a" in duration "1\x0a""#
        );
    }

    #[test]
    fn hostile_text_costs_one_pass() {
        let digits = "9".repeat(1 << 20);
        assert!(parse_go_duration(&digits).is_err());
        let fraction = format!("0.{digits}s");
        // Go keeps 19 digits and multiplies in float64, as here: 0.99…9 s rounds to 1 s.
        assert_eq!(parse_go_duration(&fraction), Ok(S));
        let many = "1ns".repeat(100_000);
        assert_eq!(parse_go_duration(&many), Ok(100_000));
    }
}
