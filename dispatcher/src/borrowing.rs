//! Concurrency borrowing between priority levels (upstream's `apf_controller.go`
//! `updateBorrowingLocked`, `conc_alloc.go` and `fairqueuing/integrator.go`): the seat-demand integrator,
//! the smoothed demand statistics, the fair-allocation solver and the periodic adjustment of
//! each level's current concurrency limit.

use std::time::Duration;

use crate::config::StaticLimits;

/// Weight of the previous smoothed value in each period (half-life about 30 periods).
pub const SMOOTHING: f64 = 0.977;

/// Targets below this are raised to it, so relative bounds stay finite.
pub const MIN_TARGET: f64 = 0.001;

/// Tolerance of the solver's sum checks.
const EPSILON: f64 = 1e-7;

/// Time-weighted statistics of a level's seat demand over one period.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Integrator {
    last_time: Duration,
    x: f64,
    duration: f64,
    integral: f64,
    integral_of_squares: f64,
    min: f64,
    max: f64,
}

/// What an integrator measured over a period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntegratorResults {
    /// Length of the period, in seconds.
    pub duration: f64,
    /// Time-weighted mean.
    pub average: f64,
    /// Time-weighted population standard deviation (0 when rounding makes the variance negative).
    pub deviation: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Integrator {
    /// An integrator at time `now` (on the caller's monotonic clock) with value `x`.
    pub fn new(now: Duration, x: f64) -> Self {
        Integrator {
            last_time: now,
            x,
            duration: 0.0,
            integral: 0.0,
            integral_of_squares: 0.0,
            min: x,
            max: x,
        }
    }

    fn advance(&mut self, now: Duration) {
        let dt = now.saturating_sub(self.last_time).as_secs_f64();
        self.duration += dt;
        self.integral += self.x * dt;
        self.integral_of_squares += self.x * self.x * dt;
        self.last_time = self.last_time.max(now);
    }

    /// The value changes to `x` at time `now`.
    pub fn set(&mut self, now: Duration, x: f64) {
        self.advance(now);
        self.x = x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Ends the period at `now`, returns its results and starts a new one with min = max = the
    /// current value.
    pub fn reset(&mut self, now: Duration) -> IntegratorResults {
        self.advance(now);
        let (average, deviation) = if self.duration > 0.0 {
            let average = self.integral / self.duration;
            let variance = self.integral_of_squares / self.duration - average * average;
            (average, if variance > 0.0 { variance.sqrt() } else { 0.0 })
        } else {
            (0.0, 0.0)
        };
        let results = IntegratorResults {
            duration: self.duration,
            average,
            deviation,
            min: self.min,
            max: self.max,
        };
        *self = Integrator::new(self.last_time, self.x);
        results
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.x
    }

    /// The value changes by `delta` at time `now`.
    pub fn add(&mut self, now: Duration, delta: f64) {
        self.set(now, self.x + delta);
    }

    /// The results so far, without ending the period.
    pub fn results(&self, now: Duration) -> IntegratorResults {
        self.clone().reset(now)
    }
}

/// A level's seat-demand statistics, updated once per adjustment period.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DemandStats {
    /// Rounded maximum demand of the last period.
    pub high_watermark: i64,
    /// Exponentially smoothed envelope (mean plus standard deviation).
    pub smoothed: f64,
}

impl DemandStats {
    /// Takes a period's results: the high watermark always, the smoothed envelope when the
    /// period had a duration.
    pub fn update(&mut self, results: &IntegratorResults) {
        self.high_watermark = results.max.round() as i64;
        if results.duration > 0.0 {
            let envelope = results.average + results.deviation;
            self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
        }
    }
}

/// One item of an allocation problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocationItem {
    /// Desired share, proportionally.
    pub target: f64,
    /// Least allowed allocation.
    pub lower_bound: f64,
    /// Most allowed allocation.
    pub upper_bound: f64,
}

/// Why an allocation problem has no solution; messages as kube-apiserver's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolverError {
    /// An item's lower bound is negative.
    #[error("lower bound {0} is {1} but negative lower bounds are not allowed")]
    NegativeLowerBound(usize, f64),
    /// An item's target is below its lower bound.
    #[error("target {0} is {1}, which is below its lower bound of {2}")]
    TargetBelowLowerBound(usize, f64, f64),
    /// An item's upper bound is below its lower bound.
    #[error("upper bound {0} is {1} but should not be less than the lower bound {2}")]
    UpperBelowLower(usize, f64, f64),
    /// Some lower bound is more than its target.
    #[error("maximum relative lower bound {0} exceeds 1")]
    RelativeLowerBoundAboveOne(f64),
    /// The lower bounds sum to more than the required sum.
    #[error("sum of lower bounds {0} exceeds required sum {1}")]
    LowerBoundsTooLarge(f64, f64),
    /// The upper bounds sum to less than the required sum.
    #[error("required sum {0} exceeds sum of upper bounds {1}")]
    UpperBoundsTooSmall(f64, f64),
}

/// The fair allocation (kube-apiserver's `computeConcurrencyAllocation`): allocations summing to
/// `required_sum`, each `clamp(fair_fraction × target, lower, upper)`, and the fair fraction.
pub fn allocate(
    required_sum: i64,
    items: &[AllocationItem],
) -> Result<(Vec<f64>, f64), SolverError> {
    let required = required_sum.max(0) as f64;
    let mut targets = Vec::with_capacity(items.len());
    let (mut lower_sum, mut upper_sum) = (0.0, 0.0);
    let (mut min_rel_lower, mut max_rel_lower) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut min_rel_upper, mut max_rel_upper) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut bounds: Vec<(f64, bool, usize)> = Vec::with_capacity(items.len() * 2);
    for (i, item) in items.iter().enumerate() {
        if item.lower_bound < 0.0 {
            return Err(SolverError::NegativeLowerBound(i, item.lower_bound));
        }
        if item.target < item.lower_bound {
            return Err(SolverError::TargetBelowLowerBound(
                i,
                item.target,
                item.lower_bound,
            ));
        }
        if item.upper_bound < item.lower_bound {
            return Err(SolverError::UpperBelowLower(
                i,
                item.upper_bound,
                item.lower_bound,
            ));
        }
        let target = item.target.max(MIN_TARGET);
        targets.push(target);
        lower_sum += item.lower_bound;
        upper_sum += item.upper_bound;
        let (rel_lower, rel_upper) = (item.lower_bound / target, item.upper_bound / target);
        min_rel_lower = min_rel_lower.min(rel_lower);
        max_rel_lower = max_rel_lower.max(rel_lower);
        min_rel_upper = min_rel_upper.min(rel_upper);
        max_rel_upper = max_rel_upper.max(rel_upper);
        bounds.push((rel_lower, true, i));
        bounds.push((rel_upper, false, i));
    }
    if max_rel_lower > 1.0 {
        return Err(SolverError::RelativeLowerBoundAboveOne(max_rel_lower));
    }
    if lower_sum - required > EPSILON {
        return Err(SolverError::LowerBoundsTooLarge(lower_sum, required));
    }
    if required - upper_sum > EPSILON {
        return Err(SolverError::UpperBoundsTooSmall(required, upper_sum));
    }
    if required == 0.0 {
        return Ok((vec![0.0; items.len()], 0.0));
    }
    if lower_sum - required > -EPSILON {
        return Ok((items.iter().map(|i| i.lower_bound).collect(), min_rel_lower));
    }
    if required - upper_sum > -EPSILON {
        return Ok((items.iter().map(|i| i.upper_bound).collect(), max_rel_upper));
    }
    let target_sum: f64 = targets.iter().sum();
    let mut fair = required / target_sum;
    if !(max_rel_lower <= fair && fair <= min_rel_upper) {
        // Some bounds bind: water-filling over the sorted relative bounds.
        bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut sensitive = 0.0;
        let mut sum = lower_sum;
        fair = min_rel_lower;
        let mut next = 0;
        while next < bounds.len() {
            let value = bounds[next].0;
            while next < bounds.len() && bounds[next].0 == value {
                let (_, is_lower, index) = bounds[next];
                if is_lower {
                    sensitive += targets[index];
                } else {
                    sensitive -= targets[index];
                }
                next += 1;
            }
            fair = value;
            let Some(&(next_bound, _, _)) = bounds.get(next) else {
                break;
            };
            if sensitive <= 0.0 {
                continue;
            }
            let proposed = fair + (required - sum) / sensitive;
            if proposed <= next_bound {
                fair = proposed;
                break;
            }
            sum += (next_bound - fair) * sensitive;
        }
    }
    let allocations = items
        .iter()
        .zip(&targets)
        .map(|(item, target)| (fair * target).min(item.upper_bound).max(item.lower_bound))
        .collect();
    Ok((allocations, fair))
}

/// One level's inputs to an adjustment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelInput {
    /// Whether the level is exempt.
    pub exempt: bool,
    /// Its static limits.
    pub limits: StaticLimits,
    /// Its demand statistics for the period just ended.
    pub stats: DemandStats,
    /// Its current limit before the adjustment.
    pub current: i64,
}

/// Which branch of the adjustment ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// Not even the minimum limits fit: every non-exempt level gets MinCL.
    Minimums,
    /// Levels get part of the way from MinCL to their MinCurrentCL.
    Interpolated,
    /// The fair-allocation solver ran.
    FairAllocation,
}

/// The result of one adjustment.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjustment {
    /// The new current limit of each level, in input order.
    pub current: Vec<i64>,
    /// The branch that ran.
    pub branch: Branch,
    /// The solver's fair fraction, when it ran and succeeded.
    pub fair_fraction: Option<f64>,
}

/// The periodic adjustment of current limits (`updateBorrowingLocked`). `nominal_sum` is Σ NominalCL over all
/// levels. As upstream, the solver's required sum is `nominal_sum`, not what exempt levels leave
/// (divergence D1 from the KEP); if it fails, every level keeps its current limit.
pub fn adjust(levels: &[LevelInput], nominal_sum: i64) -> Adjustment {
    let mut current: Vec<i64> = levels.iter().map(|l| l.current).collect();
    let mut remaining = nominal_sum;
    let mut min_current = vec![0; levels.len()];
    let (mut min_sum, mut min_current_sum) = (0, 0);
    for (i, level) in levels.iter().enumerate() {
        let limits = level.limits;
        if level.exempt {
            min_current[i] = limits.min.max(level.stats.high_watermark);
            current[i] = min_current[i];
            remaining -= min_current[i];
        } else {
            min_current[i] = limits
                .min
                .max(limits.nominal.min(level.stats.high_watermark));
            min_sum += limits.min;
            min_current_sum += min_current[i];
        }
    }
    let non_exempt = || levels.iter().enumerate().filter(|(_, l)| !l.exempt);
    if remaining <= min_sum {
        for (i, level) in non_exempt() {
            current[i] = level.limits.min;
        }
        return Adjustment {
            current,
            branch: Branch::Minimums,
            fair_fraction: None,
        };
    }
    if remaining <= min_current_sum {
        let share = (remaining - min_sum) as f64 / (min_current_sum - min_sum) as f64;
        for (i, level) in non_exempt() {
            current[i] = level.limits.min
                + ((min_current[i] - level.limits.min) as f64 * share).round() as i64;
        }
        return Adjustment {
            current,
            branch: Branch::Interpolated,
            fair_fraction: None,
        };
    }
    let indices: Vec<usize> = non_exempt().map(|(i, _)| i).collect();
    let items: Vec<AllocationItem> = indices
        .iter()
        .map(|&i| AllocationItem {
            target: (min_current[i] as f64).max(levels[i].stats.smoothed),
            lower_bound: min_current[i] as f64,
            upper_bound: levels[i].limits.max as f64,
        })
        .collect();
    match allocate(nominal_sum, &items) {
        Ok((allocations, fair)) => {
            for (&i, allocation) in indices.iter().zip(allocations) {
                current[i] = allocation.round() as i64;
            }
            Adjustment {
                current,
                branch: Branch::FairAllocation,
                fair_fraction: Some(fair),
            }
        }
        Err(_) => Adjustment {
            current,
            branch: Branch::FairAllocation,
            fair_fraction: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrator_measures_time_weighted_mean_and_deviation() {
        let secs = Duration::from_secs;
        let mut integrator = Integrator::new(secs(0), 2.0);
        integrator.set(secs(1), 4.0); // 2 for 1 s, then 4 for 3 s
        let results = integrator.reset(secs(4));
        assert_eq!(results.duration, 4.0);
        assert_eq!(results.average, 3.5);
        assert!((results.deviation - (0.75f64).sqrt()).abs() < 1e-12);
        assert_eq!((results.min, results.max), (2.0, 4.0));
        // After a reset min and max start at the current value.
        let next = integrator.reset(secs(5));
        assert_eq!((next.min, next.max, next.average), (4.0, 4.0, 4.0));
    }
}
