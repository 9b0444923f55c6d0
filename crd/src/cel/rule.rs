//! One compiled rule of `x-kubernetes-validations`, as a schema node keeps it: what the rule
//! says and its CEL programs, which [`super`] compiles and runs.

use cel::Program;

/// The reasons a rule may give (`reason`), as field errors report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `FieldValueInvalid` (the default).
    Invalid,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
}

impl Reason {
    pub(crate) const NAMES: [&'static str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];

    pub(crate) fn parse(name: &str) -> Option<Reason> {
        Some(match name {
            "FieldValueInvalid" => Reason::Invalid,
            "FieldValueForbidden" => Reason::Forbidden,
            "FieldValueRequired" => Reason::Required,
            "FieldValueDuplicate" => Reason::Duplicate,
            _ => return None,
        })
    }
}

/// One compiled rule of `x-kubernetes-validations`.
pub struct CompiledRule {
    /// The rule as written.
    pub rule: String,
    /// `message`, trimmed.
    pub message: Option<String>,
    /// `messageExpression`, compiled.
    pub(crate) message_expression: Option<(String, Program)>,
    /// `reason`.
    pub reason: Option<Reason>,
    /// `fieldPath`, as a path relative to the rule's node (`spec.replicas`).
    pub field_path: Option<String>,
    /// `optionalOldSelf`.
    pub optional_old_self: bool,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    pub(crate) program: Program,
    /// The rule's estimated cost for one evaluation.
    pub estimated_cost: u64,
}

impl std::fmt::Debug for CompiledRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledRule")
            .field("rule", &self.rule)
            .field("estimated_cost", &self.estimated_cost)
            .finish_non_exhaustive()
    }
}
