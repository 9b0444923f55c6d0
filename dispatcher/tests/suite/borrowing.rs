//! Borrowing (`apf_controller.go`'s `updateBorrowingLocked`, `conc_alloc.go`): the integrator and smoothing, the fair-allocation solver on
//! 10,000 random problems, the worked examples E1 and E2, and upstream's TestUpdateBorrowing.

use apfkit_dispatcher::borrowing::{
    AllocationItem, Branch, DemandStats, IntegratorResults, LevelInput, adjust, allocate,
};
use apfkit_dispatcher::config::Configuration;

#[test]
fn smoothing_example_6_4() {
    let mut stats = DemandStats::default();
    let mut seen = Vec::new();
    for envelope in [100.0, 100.0, 0.0, 0.0, 0.0, 0.0] {
        stats.update(&IntegratorResults {
            duration: 10.0,
            average: envelope,
            deviation: 0.0,
            min: envelope,
            max: envelope,
        });
        seen.push((stats.smoothed * 10_000.0).round() / 10_000.0);
    }
    assert_eq!(seen, [100.0, 100.0, 97.7, 95.4529, 93.2575, 91.1126]);
    // A period without duration updates only the high watermark.
    stats.update(&IntegratorResults {
        duration: 0.0,
        average: 0.0,
        deviation: 0.0,
        min: 7.0,
        max: 7.4,
    });
    assert_eq!(stats.high_watermark, 7);
    assert_eq!((stats.smoothed * 10_000.0).round() / 10_000.0, 91.1126);
}

#[test]
fn solver_on_10000_random_problems() {
    let mut seed: u64 = 1234567890;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for case in 0..10_000 {
        let n = 1 + (next() * 10.0) as usize;
        let items: Vec<AllocationItem> = (0..n)
            .map(|_| {
                let lower = (next() * 50.0).floor();
                let target =
                    lower + (next() * 100.0).floor() + if next() < 0.1 { 0.0 } else { 1.0 };
                let upper = lower + (next() * 200.0).floor();
                AllocationItem {
                    target,
                    lower_bound: lower,
                    upper_bound: upper,
                }
            })
            .collect();
        let (low, high): (f64, f64) = items.iter().fold((0.0, 0.0), |(l, h), i| {
            (l + i.lower_bound, h + i.upper_bound)
        });
        let required = (low + next() * (high - low)).floor() as i64;
        let (allocations, fair) =
            allocate(required, &items).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let sum: f64 = allocations.iter().sum();
        if required > 0 {
            assert!(
                (sum - required as f64).abs() < 1e-10 * (required as f64).max(1.0),
                "case {case}: sum {sum} vs {required}"
            );
        }
        for (item, allocation) in items.iter().zip(&allocations) {
            let target = item.target.max(0.001);
            let expected = if fair * target <= item.lower_bound {
                item.lower_bound
            } else if fair * target >= item.upper_bound {
                item.upper_bound
            } else {
                fair * target
            };
            if required > 0 {
                assert!(
                    (allocation - expected).abs() < 1e-10 * expected.max(1.0),
                    "case {case}: {allocation} vs {expected}"
                );
            }
        }
    }
}

#[test]
fn solver_errors() {
    let item = |t, l, u| AllocationItem {
        target: t,
        lower_bound: l,
        upper_bound: u,
    };
    assert!(allocate(10, &[item(1.0, -1.0, 5.0)]).is_err());
    assert!(
        allocate(10, &[item(1.0, 2.0, 5.0)]).is_err(),
        "target below lower bound"
    );
    assert!(
        allocate(10, &[item(3.0, 2.0, 1.0)]).is_err(),
        "upper below lower"
    );
    assert_eq!(
        allocate(1, &[item(3.0, 2.0, 5.0)]).unwrap_err().to_string(),
        "sum of lower bounds 2 exceeds required sum 1"
    );
    assert!(
        allocate(10, &[item(3.0, 2.0, 5.0)]).is_err(),
        "upper bounds too small"
    );
    assert_eq!(
        allocate(0, &[item(3.0, 0.0, 5.0)]).unwrap(),
        (vec![0.0], 0.0)
    );
}

fn default_inputs(server: i32, demand: &[(&str, i64, f64)]) -> (Vec<String>, Vec<LevelInput>, i64) {
    let config = Configuration::kubernetes_default(server).unwrap();
    let names: Vec<String> = config
        .priority_levels()
        .iter()
        .map(|l| l.name().to_owned())
        .collect();
    let inputs = config
        .priority_levels()
        .iter()
        .map(|level| {
            let (high_watermark, smoothed) = demand
                .iter()
                .find(|(n, _, _)| *n == level.name())
                .map_or((0, 0.0), |(_, h, s)| (*h, *s));
            LevelInput {
                exempt: level.object.spec.type_ == "Exempt",
                limits: level.limits,
                stats: DemandStats {
                    high_watermark,
                    smoothed,
                },
                current: level.limits.nominal,
            }
        })
        .collect();
    let nominal_sum = config
        .priority_levels()
        .iter()
        .map(|l| l.limits.nominal)
        .sum();
    (names, inputs, nominal_sum)
}

fn by_name(names: &[String], values: &[i64]) -> std::collections::BTreeMap<String, i64> {
    names.iter().cloned().zip(values.iter().copied()).collect()
}

#[test]
fn e1_idle() {
    let (names, inputs, nominal_sum) = default_inputs(600, &[]);
    assert_eq!(nominal_sum, 602);
    let adjustment = adjust(&inputs, nominal_sum);
    assert_eq!(adjustment.branch, Branch::FairAllocation);
    assert!((adjustment.fair_fraction.unwrap() - 602.0 / 258.0).abs() < 1e-12);
    let got = by_name(&names, &adjustment.current);
    let expected = [
        ("catch-all", 30),
        ("system", 117),
        ("node-high", 170),
        ("leader-election", 58),
        ("workload-high", 114),
        ("workload-low", 56),
        ("global-default", 56),
        ("exempt", 0),
    ];
    for (name, value) in expected {
        assert_eq!(got[name], value, "{name}");
    }
    assert_eq!(got.values().sum::<i64>(), 601);
}

#[test]
fn e2_workload_low_and_global_default_busy() {
    let (names, inputs, nominal_sum) = default_inputs(
        600,
        &[("workload-low", 600, 700.0), ("global-default", 60, 80.0)],
    );
    let adjustment = adjust(&inputs, nominal_sum);
    assert!((adjustment.fair_fraction.unwrap() - 0.49).abs() < 1e-12);
    let got = by_name(&names, &adjustment.current);
    let expected = [
        ("workload-low", 343),
        ("global-default", 49),
        ("catch-all", 13),
        ("system", 50),
        ("node-high", 73),
        ("leader-election", 25),
        ("workload-high", 49),
    ];
    for (name, value) in expected {
        assert_eq!(got[name], value, "{name}");
    }
    assert_eq!(got.values().sum::<i64>(), 602);
}

/// Upstream TestUpdateBorrowing: levels exempt, workload-high, workload-low and catch-all, with
/// ServerCL = 6 × the non-exempt shares.
#[test]
fn update_borrowing_upstream() {
    let levels: Vec<_> = apfkit_dispatcher::bootstrap::priority_levels()
        .iter()
        .filter(|l| {
            matches!(
                l.metadata.name.as_deref(),
                Some("exempt" | "workload-high" | "workload-low" | "catch-all")
            )
        })
        .cloned()
        .collect();
    let server: i64 = 6 * (40 + 100 + 5);
    let config = Configuration::new(levels, vec![], server as i32).unwrap();
    let nominal_sum: i64 = config
        .priority_levels()
        .iter()
        .map(|l| l.limits.nominal)
        .sum();
    let run = |demand: &dyn Fn(&str) -> i64| {
        let inputs: Vec<LevelInput> = config
            .priority_levels()
            .iter()
            .map(|level| LevelInput {
                exempt: level.name() == "exempt",
                limits: level.limits,
                stats: DemandStats {
                    high_watermark: demand(level.name()),
                    smoothed: demand(level.name()) as f64,
                },
                current: level.limits.nominal,
            })
            .collect();
        let adjustment = adjust(&inputs, nominal_sum);
        let current: std::collections::BTreeMap<&str, i64> = config
            .priority_levels()
            .iter()
            .map(|l| l.name())
            .zip(adjustment.current.iter().copied())
            .collect();
        (adjustment.branch, current)
    };
    let limits = |name: &str| config.priority_level(name).unwrap().limits;
    // 1. Everyone over-demands: exempt takes its demand, the others get MinCL.
    let (branch, current) = run(&|_| server + 100);
    assert_eq!(branch, Branch::Minimums);
    assert_eq!(current["exempt"], server + 100);
    for name in ["workload-high", "workload-low", "catch-all"] {
        assert_eq!(current[name], limits(name).min, "{name}");
    }
    // 2. Exempt leaves room for each level half way between MinCL and NominalCL.
    let halves: i64 = ["workload-high", "workload-low", "catch-all"]
        .iter()
        .map(|n| (limits(n).nominal + limits(n).min) / 2)
        .sum();
    let (branch, current) = run(&|name| {
        if name == "exempt" {
            server - halves
        } else {
            server + 100
        }
    });
    assert_eq!(branch, Branch::Interpolated);
    for name in ["workload-high", "workload-low", "catch-all"] {
        assert_eq!(
            current[name],
            (limits(name).nominal + limits(name).min) / 2,
            "{name}"
        );
    }
    // 3. workload-low idles; exempt leaves exactly high's and low's nominal and mid's minimum.
    let exempt_demand = server
        - (limits("workload-high").nominal
            + limits("workload-low").min
            + limits("catch-all").nominal);
    let (branch, current) = run(&|name| match name {
        "exempt" => exempt_demand,
        "workload-low" => 1,
        _ => server + 100,
    });
    assert_eq!(branch, Branch::Interpolated);
    assert_eq!(current["workload-high"], limits("workload-high").nominal);
    assert_eq!(current["workload-low"], limits("workload-low").min);
    assert_eq!(current["catch-all"], limits("catch-all").nominal);
    assert_eq!(current["exempt"], exempt_demand);
}
