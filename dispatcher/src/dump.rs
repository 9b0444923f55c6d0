//! What kube-apiserver's `/debug/api_priority_and_fairness/dump_*` tables print beyond
//! numbers (`apf_controller_debug.go`): Go's `time.Duration` and RFC 3339 times with
//! nanoseconds.

use std::time::{Duration, SystemTime};

/// `d` as Go's `time.Duration.String` writes it: `0s`, `750ns`, `1.5µs`, `20ms`, `1.5s`,
/// `2m0s`, `1h2m3.5s`.
pub fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000_000_000 {
        let (unit, scale) = if nanos < 1_000 {
            ("ns", 1)
        } else if nanos < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", decimal(nanos, scale));
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = nanos / 60_000_000_000 % 60;
    let seconds = format!("{}s", decimal(nanos % 60_000_000_000, 1_000_000_000));
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// `value / scale` with the fraction's trailing zeros dropped (`scale` a power of ten).
fn decimal(value: u128, scale: u128) -> String {
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// `time` in UTC as Go's `time.RFC3339Nano` writes it (trailing zeros of the fraction
/// dropped); `None` is Go's zero time, `0001-01-01T00:00:00Z`.
pub fn rfc3339_nano(time: Option<SystemTime>) -> String {
    let Some(time) = time else {
        return "0001-01-01T00:00:00Z".to_owned();
    };
    let text = humantime::format_rfc3339_nanos(time).to_string();
    // `2026-11-26T06:28:30.120000000Z`: drop the fraction's trailing zeros, then a bare dot.
    match text.strip_suffix('Z').and_then(|t| t.split_once('.')) {
        Some((seconds, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                format!("{seconds}Z")
            } else {
                format!("{seconds}.{fraction}Z")
            }
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's own `time.Duration.String` cases (`time/time_test.go`'s durationTests).
    #[test]
    fn durations_as_go_writes_them() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_100), "1.1µs"),
            (Duration::from_nanos(2_200_000), "2.2ms"),
            (Duration::from_nanos(3_300_000_000), "3.3s"),
            (Duration::from_secs(4 * 60 + 5), "4m5s"),
            (
                Duration::from_nanos(4 * 60_000_000_000 + 5_001_000_000),
                "4m5.001s",
            ),
            (
                Duration::from_nanos(5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000),
                "5h6m7.001s",
            ),
            (Duration::from_secs(8 * 60), "8m0s"),
            (Duration::from_secs(3600), "1h0m0s"),
        ];
        for (duration, text) in cases {
            assert_eq!(go_duration(duration), text, "{duration:?}");
        }
    }

    #[test]
    fn times_as_rfc3339_nano_writes_them() {
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(rfc3339_nano(Some(epoch)), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_nano(Some(epoch + Duration::from_millis(1_500))),
            "1970-01-01T00:00:01.5Z"
        );
        assert_eq!(
            rfc3339_nano(Some(epoch + Duration::from_nanos(7))),
            "1970-01-01T00:00:00.000000007Z"
        );
        assert_eq!(rfc3339_nano(None), "0001-01-01T00:00:00Z");
    }
}
