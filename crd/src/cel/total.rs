//! The estimated costs of a schema's rules added up, for kube-apiserver's limit on a whole
//! schema (apiextensions-apiserver's `TotalCost`), and the words of every cost limit.

use apfkit_runtime::field::{FieldError, Path};

/// kube-apiserver's limit on the estimated cost of all the rules of one schema
/// (`StaticEstimatedCRDCostLimit`).
pub const STATIC_CRD_COST_LIMIT: u64 = 100_000_000;

/// The estimated costs of a schema's rules and `messageExpression`s, added up as
/// apiextensions-apiserver's `TotalCost` adds them: the total, and the four dearest of those
/// that cost at least 1% of the limit, dearest first.
#[derive(Debug, Default)]
pub(crate) struct TotalCost {
    total: u64,
    dearest: Vec<(Path, u64)>,
}

impl TotalCost {
    /// Adds the cost of the expression at `path` (`ObserveExpressionCost`).
    pub(crate) fn observe(&mut self, path: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_CRD_COST_LIMIT / 100 {
            return;
        }
        // After those that cost as much or more, as Go's sort.Slice leaves equal costs of
        // a list kept in order.
        let at = self.dearest.partition_point(|(_, c)| *c >= cost);
        self.dearest.insert(at, (path, cost));
        self.dearest.truncate(4);
    }

    /// The errors of a total over the limit: each of the dearest named, then the schema at
    /// `root`.
    pub(crate) fn errors(&self, root: &Path) -> Vec<FieldError> {
        if self.total <= STATIC_CRD_COST_LIMIT {
            return Vec::new();
        }
        let mut errors: Vec<FieldError> = self
            .dearest
            .iter()
            .map(|(path, _)| {
                FieldError::forbidden(
                    path.clone(),
                    "contributed to estimated rule cost total exceeding cost limit for entire \
                     OpenAPIv3 schema",
                )
            })
            .collect();
        errors.push(FieldError::forbidden(
            root.clone(),
            over_limit_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total,
                STATIC_CRD_COST_LIMIT,
            ),
        ));
        errors
    }
}

/// kube-apiserver's message for a cost over its limit (`getCostErrorMessage`).
pub fn over_limit_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
