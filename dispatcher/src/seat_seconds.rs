//! `SeatSeconds` (upstream's `request/seat_seconds.go`): work and virtual time as a `u64` count of 10⁻⁸ seat-seconds, with
//! Go's wrapping arithmetic.

use std::fmt;
use std::time::Duration;

/// Units per seat-second.
const SCALE: f64 = 1e8;

/// Work or virtual time, in 10⁻⁸ seat-seconds (one seat for 10 ns). Arithmetic wraps modulo
/// 2⁶⁴, as Go's `uint64` does; a negative duration's work is its two's complement, so that
/// subtracting it adds the magnitude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SeatSeconds(pub u64);

impl SeatSeconds {
    /// The largest value.
    pub const MAX: SeatSeconds = SeatSeconds(u64::MAX);
    /// Zero.
    pub const ZERO: SeatSeconds = SeatSeconds(0);
    /// Half the range: what an epoch advance subtracts from virtual time.
    pub const R_DECREMENT: SeatSeconds = SeatSeconds(u64::MAX / 2);
    /// Virtual time at or above which an epoch advance happens.
    pub const HIGH_R: SeatSeconds = SeatSeconds(u64::MAX / 2 + u64::MAX / 4);

    /// `seats` held for `duration`: `round(seats × nanoseconds / 10)`.
    pub fn seats_times_duration(seats: f64, duration: Duration) -> Self {
        Self::seats_times_nanos(seats, nanos_f64(duration))
    }

    /// Like [`SeatSeconds::seats_times_duration`] for a signed duration in nanoseconds; a
    /// negative one gives the two's complement.
    pub fn seats_times_nanos(seats: f64, nanos: f64) -> Self {
        SeatSeconds((seats * nanos / 10.0).round() as i64 as u64)
    }

    /// How long `seats` seats take to do this work: `self / seats × 10` ns, truncated.
    pub fn duration_per_seat(self, seats: f64) -> Duration {
        Duration::from_nanos((self.0 as f64 / seats * 10.0) as u64)
    }

    /// Seat-seconds as a float.
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / SCALE
    }

    /// Wrapping addition.
    pub fn wrapping_add(self, other: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_add(other.0))
    }

    /// Wrapping subtraction.
    pub fn wrapping_sub(self, other: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_sub(other.0))
    }
}

/// A duration's nanoseconds as f64, through `u64` when it fits (a cheaper conversion than
/// from `u128`, with the same result).
pub fn nanos_f64(duration: Duration) -> f64 {
    let nanos = duration.as_nanos();
    match u64::try_from(nanos) {
        Ok(n) => n as f64,
        Err(_) => nanos as f64,
    }
}

impl fmt::Display for SeatSeconds {
    /// `"%d.%08dss"`, as upstream's debug string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:08}ss", self.0 / 100_000_000, self.0 % 100_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_request_work() {
        let work = SeatSeconds::seats_times_duration(3.0, Duration::from_secs(2)).wrapping_add(
            SeatSeconds::seats_times_duration(50.0, Duration::from_secs(70)),
        );
        assert_eq!(work, SeatSeconds(350_600_000_000));
        let g = SeatSeconds::seats_times_duration(1.0, Duration::from_millis(3));
        assert_eq!(g, SeatSeconds(300_000));
        assert_eq!(g.to_string(), "0.00300000ss");
    }

    #[test]
    fn constants() {
        assert_eq!(SeatSeconds::R_DECREMENT.0, 9_223_372_036_854_775_807);
        assert_eq!(SeatSeconds::HIGH_R.0, 13_835_058_055_282_163_710);
    }

    #[test]
    fn negative_durations_add_when_subtracted() {
        // nextDispatchR −= work(G − S) with S > G adds InitialSeats × (S − G).
        let next = SeatSeconds(1_000);
        let negative = SeatSeconds::seats_times_nanos(1.0, -7_000_000.0);
        assert_eq!(next.wrapping_sub(negative), SeatSeconds(1_000 + 700_000));
        // A queue whose virtual start was 300,000 and whose request ran 3 ms instead of the
        // estimated 10 ms: S0 = 300,000 − work(3 ms − 10 ms) = 1,000,000.
        let s0 = SeatSeconds(300_000).wrapping_sub(SeatSeconds::seats_times_nanos(1.0, 3e6 - 10e6));
        assert_eq!(s0, SeatSeconds(1_000_000));
    }

    #[test]
    fn duration_per_seat_preserves_the_area() {
        let final_work = SeatSeconds::seats_times_duration(10.0, Duration::from_millis(100));
        assert_eq!(
            final_work.duration_per_seat(4.0),
            Duration::from_millis(250)
        );
    }
}
