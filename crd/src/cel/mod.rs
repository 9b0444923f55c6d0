//! `x-kubernetes-validations`: CEL rules compiled with the `cel` crate (cel-rust) and
//! evaluated as apiextensions-apiserver evaluates them
//! (`pkg/apiserver/schema/cel/validation.go`): `self` (and at the resource's root `apiVersion`,
//! `kind`, `metadata.name` and `metadata.generateName`), `oldSelf` for transition rules (run
//! only on updates, unless `optionalOldSelf`), `message`, `messageExpression`, `reason` and
//! `fieldPath`, the object's runtime cost budget, and the Kubernetes libraries in [`library`].
//!
//! Costs follow kube-apiserver's limits and messages: a rule whose estimated cost times the
//! number of times it can run is over 10,000,000 is refused when the CRD is compiled
//! (`estimated rule cost exceeds budget by factor of ...`), and an object's rules share a
//! runtime budget of 10,000,000. A rule's estimated cost is cel-go's checker's, with the
//! Kubernetes library's estimators and kube-apiserver's sizes of the schema
//! ([`cost::estimate`]); the cost counted while a rule runs is apfkit's model of what cel-go
//! counts (every node, each comprehension's iterations, strings' lengths), not cel-go's exact
//! weights, so a rule near the run-time limits may be judged differently
//! (docs/crd-validation.md).

pub mod cost;
mod declared;
mod estimate;
pub mod library;
pub(crate) mod rule;
mod sizes;
pub(crate) mod total;
mod values;

use std::sync::{Arc, OnceLock};

use apfkit_runtime::field::{BadValue, FieldError, Path};
use cel::{Context, Env, Program};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde_json::Value;

use crate::listtype::OldItems;
use crate::schema::{RuleCompiler, RuleSite, Schema, Type};
use crate::validate::same_value;
pub use rule::{CompiledRule, Reason};
pub use total::STATIC_CRD_COST_LIMIT;

/// kube-apiserver's runtime CEL budget for one object's rules (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// kube-apiserver's limit on one rule's estimated cost (`StaticEstimatedCostLimit`).
pub const STATIC_COST_LIMIT: u64 = 10_000_000;
/// kube-apiserver's limit on one call's cost (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// What kube-apiserver says when an object's rules have spent its runtime budget.
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// kube-apiserver's limit on an evaluated `messageExpression`
/// (`MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The environment rules are compiled and run in: CEL's standard library, its strings
/// extension, optionals, and the Kubernetes libraries.
pub fn environment() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .and_then(|()| env.add_extension(library::extension))
            .expect("the Kubernetes libraries declare no overload twice");
        Arc::new(env)
    })
    .clone()
}

/// The compiler of the rules of a schema's nodes: each node's rules checked with the schema's
/// own errors ([`check_rule_fields`]), then compiled ([`compile_rules`]).
struct Rules;

impl RuleCompiler for Rules {
    fn compile(
        &self,
        rules: &[ValidationRule],
        node: &Schema,
        path: &Path,
        errors: &mut Vec<FieldError>,
        rule_errors: &mut Vec<FieldError>,
        site: RuleSite<'_>,
    ) -> Vec<CompiledRule> {
        let before = errors.len();
        check_rule_fields(rules, node, path, errors);
        // kube-apiserver compiles no rule of a node with a schema error at or below it.
        if site.blocked || errors.len() > before {
            return Vec::new();
        }
        compile_rules(rules, node, path, rule_errors, site)
    }
}

impl Schema {
    /// Compiles a version's `openAPIV3Schema` with its CEL rules; `path` names it in errors
    /// (`spec.validation.openAPIV3Schema` or `spec.versions[0].schema.openAPIV3Schema`).
    /// The errors come in kube-apiserver's order: the schema's own, then its CEL rules' (only
    /// when the schema has none). Whether the schema is structural is a check of the CRD
    /// (`CustomResourceDefinition::from_value`), not of the schema: kube-openapi's validator
    /// takes any schema, as this does.
    ///
    /// # Errors
    ///
    /// The schema's errors, or else its rules', with kube-apiserver's paths and messages.
    pub fn compile(
        props: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
        path: Path,
    ) -> Result<Schema, Vec<FieldError>> {
        Schema::compile_with(props, path, &Rules)
    }

    /// [`Schema::compile`]'s schema of a CRD being written, with its own errors and its
    /// rules' apart, for the checks of a CRD that come between them.
    pub(crate) fn compile_in_parts(
        props: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
        path: Path,
    ) -> (Schema, Vec<FieldError>, Vec<FieldError>) {
        Schema::compile_parts(props, path, &Rules, true)
    }
}

/// Compiles a node's rules; `path` is the node's `x-kubernetes-validations` path, `site` how
/// many times its rules can run for one object, where above it `oldSelf` cannot be used, and
/// the costs so far. Errors go to `errors` with kube-apiserver's paths; a rule that fails to
/// compile is left out.
fn compile_rules(
    rules: &[ValidationRule],
    schema: &Schema,
    path: &Path,
    errors: &mut Vec<FieldError>,
    site: RuleSite<'_>,
) -> Vec<CompiledRule> {
    let RuleSite {
        cardinality,
        uncorrelatable,
        costs,
        resource_root,
        ..
    } = site;
    let env = environment();
    let mut compiled = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let at = path.index(i);
        if rule.rule.trim().is_empty() {
            // Reported with the schema's errors (`check_rule_fields`).
            continue;
        }
        let reason = rule.reason.as_deref().and_then(Reason::parse);
        let program = match env.compile(&rule.rule) {
            Ok(program) => program,
            Err(err) => {
                errors.push(FieldError::invalid(
                    at.child("rule"),
                    rule_value(rule),
                    format!("compilation failed: {}", cel_go_words(&err)),
                ));
                continue;
            }
        };
        if let Some(error) =
            checker_failure(&program, schema, resource_root, at.child("rule"), rule, "")
        {
            errors.push(error);
            continue;
        }
        // kube-apiserver's order: the rule's cost, its `messageExpression` (what does not
        // compile, or its cost), then `optionalOldSelf`.
        let estimated_cost = cost::estimate(program.expression(), schema, resource_root);
        let times = cardinality.unwrap_or_else(|| cost::unbounded_cardinality(schema));
        let total = estimated_cost.saturating_mul(times);
        if total > STATIC_COST_LIMIT {
            errors.push(FieldError::forbidden(
                at.child("rule"),
                cost::over_limit_message("estimated rule cost", total, STATIC_COST_LIMIT),
            ));
        }
        costs.observe(at.child("rule"), total);
        let message_expression = match &rule.message_expression {
            Some(source) if !source.trim().is_empty() => match env.compile(source) {
                Ok(program)
                    if let Some(error) = checker_failure(
                        &program,
                        schema,
                        resource_root,
                        at.child("messageExpression"),
                        rule,
                        "messageExpression ",
                    ) =>
                {
                    errors.push(error);
                    None
                }
                Ok(program) => {
                    // Its cost once, whatever the cardinality.
                    let message_cost = cost::estimate(program.expression(), schema, resource_root);
                    if message_cost > STATIC_COST_LIMIT {
                        errors.push(FieldError::forbidden(
                            at.child("messageExpression"),
                            cost::over_limit_message(
                                "estimated messageExpression cost",
                                message_cost,
                                STATIC_COST_LIMIT,
                            ),
                        ));
                    }
                    costs.observe(at.child("messageExpression"), message_cost);
                    Some((source.clone(), program))
                }
                Err(err) => {
                    errors.push(FieldError::invalid(
                        at.child("messageExpression"),
                        rule_value(rule),
                        format!(
                            "messageExpression compilation failed: {}",
                            cel_go_words(&err)
                        ),
                    ));
                    None
                }
            },
            _ => None,
        };
        let uses_old_self = program.references().has_variable("oldSelf");
        if uses_old_self {
            if let Some(place) = uncorrelatable {
                errors.push(FieldError::invalid(
                    at.child("rule"),
                    BadValue::Str(rule.rule.clone()),
                    format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema \
                         within {place}"
                    ),
                ));
            }
        } else if rule.optional_old_self.is_some() {
            errors.push(FieldError::invalid(
                at.child("optionalOldSelf"),
                BadValue::Go(rule.optional_old_self.unwrap_or(false).to_string()),
                "may not be set if oldSelf is not used in rule",
            ));
        }
        compiled.push(CompiledRule {
            rule: rule.rule.clone(),
            message: rule
                .message
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned),
            message_expression,
            reason,
            field_path: rule.field_path.as_deref().map(normalize_field_path),
            optional_old_self: rule.optional_old_self.unwrap_or(false),
            uses_old_self,
            program,
            estimated_cost,
        });
    }
    compiled
}

/// cel-go's checker's error for `program` at `path` (the rule's or its
/// `messageExpression`'s, `what` leading the message as kube words it): a function or
/// variable the environment does not declare, or a field `schema` does not declare; the
/// first by position, as cel-go prints its errors.
fn checker_failure(
    program: &Program,
    schema: &Schema,
    resource_root: bool,
    path: Path,
    rule: &ValidationRule,
    what: &str,
) -> Option<FieldError> {
    let info = program.source_info();
    let undeclared = declared::undeclared_references(program.expression())
        .into_iter()
        .map(|(id, name)| {
            (
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            )
        });
    let undefined = estimate::undefined_field(program.expression(), schema, resource_root)
        .map(|(id, field)| (id, format!("undefined field '{field}'")));
    let (id, error) = undeclared
        .chain(undefined)
        .min_by_key(|(id, _)| info.offset_for(*id).map_or(0, |(start, _)| start))?;
    Some(FieldError::invalid(
        path,
        rule_value(rule),
        format!(
            "{what}compilation failed: {}",
            checker_error(program, id, &error)
        ),
    ))
}

/// A rule as kube-apiserver prints it in a compilation error: its internal
/// `apiextensions.ValidationRule`, as Go's `json.Marshal` writes it.
fn rule_value(rule: &ValidationRule) -> BadValue {
    let text = |value: &Option<String>| Value::from(value.clone().unwrap_or_default());
    BadValue::go_struct(&[
        ("Rule", Value::from(rule.rule.clone())),
        ("Message", text(&rule.message)),
        ("MessageExpression", text(&rule.message_expression)),
        (
            "Reason",
            rule.reason.clone().map_or(Value::Null, Value::from),
        ),
        ("FieldPath", text(&rule.field_path)),
        (
            "OptionalOldSelf",
            rule.optional_old_self.map_or(Value::Null, Value::from),
        ),
    ])
}

/// A cel-go checker error at the node `id` of `program`, as cel-go prints it: where, what,
/// and the line with a caret under the place.
fn checker_error(program: &Program, id: u64, what: &str) -> String {
    let info = program.source_info();
    let source = &info.source;
    let start = info
        .offset_for(id)
        .map_or(0, |(start, _)| usize::try_from(start).unwrap_or(0));
    let before = source.get(..start).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let text = source.lines().nth(line - 1).unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{column}: {what}\n | {text}\n | {}^",
        ".".repeat(column - 1)
    )
}

/// A compiler's error as cel-go prints its issues: the snippet's lines start with " | ".
fn cel_go_words(error: &impl std::fmt::Display) -> String {
    error.to_string().replace("\n| ", "\n | ")
}

/// A rule's `fieldPath` (`.spec.replicas`, `.spec['a-b']`) as a field path (`spec.replicas`,
/// `spec[a-b]`).
fn normalize_field_path(path: &str) -> String {
    let path = path.strip_prefix('.').unwrap_or(path);
    path.replace("['", "[").replace("']", "]")
}

/// The checks kube-apiserver makes of a node's rules with the schema's own (its
/// `SchemaErrors`, reported before the rules' compilation errors): a rule, a message and a
/// `messageExpression` that are not blank, no line breaks in a message or a field path (and a
/// message for a rule that has some), a known `reason`, a `fieldPath` that names a field of
/// the node.
fn check_rule_fields(
    rules: &[ValidationRule],
    schema: &Schema,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    for (i, rule) in rules.iter().enumerate() {
        let at = path.index(i);
        let trimmed_rule = rule.rule.trim();
        let message = rule.message.as_deref().unwrap_or("");
        let trimmed_message = message.trim();
        if trimmed_rule.is_empty() {
            errors.push(FieldError::required(
                at.child("rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_message.is_empty() {
            errors.push(FieldError::invalid(
                at.child("message"),
                BadValue::Str(message.to_owned()),
                "must be non-empty if specified",
            ));
        } else if trimmed_message.contains(['\n', '\r']) {
            errors.push(FieldError::invalid(
                at.child("message"),
                BadValue::Str(message.to_owned()),
                "must not contain line breaks",
            ));
        } else if trimmed_rule.contains(['\n', '\r']) && trimmed_message.is_empty() {
            errors.push(FieldError::required(
                at.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if let Some(expression) = &rule.message_expression
            && !expression.is_empty()
            && expression.trim().is_empty()
        {
            errors.push(FieldError::required(
                at.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.reason.as_deref()
            && Reason::parse(reason).is_none()
        {
            errors.push(FieldError::not_supported(
                at.child("reason"),
                BadValue::Str(reason.to_owned()),
                &Reason::NAMES,
            ));
        }
        if let Some(field_path) = rule.field_path.as_deref().filter(|p| !p.is_empty()) {
            let invalid = |detail: &str| {
                FieldError::invalid(
                    at.child("fieldPath"),
                    BadValue::Str(field_path.to_owned()),
                    detail,
                )
            };
            if field_path.trim().is_empty() {
                errors.push(invalid("must be non-empty if specified"));
            }
            if field_path.contains(['\n', '\r']) {
                errors.push(invalid("must not contain line breaks"));
            }
            if !field_path.trim().is_empty() && !field_path_resolves(field_path.trim(), schema) {
                errors.push(invalid("must be a valid path"));
            }
        }
    }
}

/// Whether a rule's `fieldPath` (`.a.b`, `.a['b.c']`) names a field under `schema`: each
/// step a declared property, or a key of a map (apiextensions-apiserver's `ValidFieldPath`,
/// without list indexes).
fn field_path_resolves(path: &str, schema: &Schema) -> bool {
    let mut node = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix("['") {
            let Some(end) = after.find("']") else {
                return false;
            };
            name = &after[..end];
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = &after[..end];
            rest = &after[end..];
        } else {
            return false;
        }
        if name.is_empty() {
            return false;
        }
        match node.field(name) {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

/// The message of a rule that does not hold, when it has no `messageExpression` that
/// evaluates: `message`, or `failed rule: <rule>`.
fn message_or_default(rule: &CompiledRule) -> String {
    match &rule.message {
        Some(message) => message.clone(),
        None => format!("failed rule: {}", rule.rule.trim()),
    }
}

/// The rule as errors name it: its message, or its text.
fn rule_error_string(rule: &CompiledRule) -> String {
    rule.message
        .clone()
        .unwrap_or_else(|| rule.rule.trim().to_owned())
}

/// Evaluates every rule of `schema` and below against `value` (`old` for an update, as the
/// old value of transition rules only), appending kube-apiserver's errors; returns the budget
/// left (negative once spent).
pub fn validate(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> i64 {
    let mut walk = Walk {
        budget: RUNTIME_COST_BUDGET as i64,
        errors,
        ratcheting: None,
    };
    walk.node(schema, Path::root(), value, old, true, false);
    walk.budget
}

/// [`validate`] for an update of `old` with validation ratcheting, as a custom resource's
/// update is checked: a rule that does not read `oldSelf` is not enforced on a value equal to
/// the old value it correlates with (or, for a value that correlates with none, on one whose
/// nearest correlated ancestor is unchanged); what it finds there goes to `warnings`.
pub fn validate_update(
    schema: &Schema,
    value: &Value,
    old: &Value,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<FieldError>,
) -> i64 {
    let mut walk = Walk {
        budget: RUNTIME_COST_BUDGET as i64,
        errors,
        ratcheting: Some(warnings),
    };
    walk.node(schema, Path::root(), value, Some(old), true, false);
    walk.budget
}

struct Walk<'e> {
    budget: i64,
    errors: &'e mut Vec<FieldError>,
    /// With [`validate_update`]: where an unchanged value's failed rules go instead.
    ratcheting: Option<&'e mut Vec<FieldError>>,
}

impl Walk<'_> {
    /// `parent_unchanged`: whether the nearest ancestor with an old value to correlate has
    /// not changed, which ratchets this node's errors when it has no old value itself
    /// (apiextensions-apiserver's `ratchetingOptions.shouldRatchetError`).
    fn node(
        &mut self,
        schema: &Schema,
        path: Path,
        value: &Value,
        old: Option<&Value>,
        root: bool,
        parent_unchanged: bool,
    ) {
        if self.budget < 0 || value.is_null() || !schema.has_rules() {
            return;
        }
        // An update leaves an unchanged value's rules unenforced (ratcheting), but for
        // transition rules.
        let unchanged =
            self.ratcheting.is_some() && old.map_or(parent_unchanged, |old| same_value(old, value));
        let old = old.filter(|old| !old.is_null());
        self.expressions(schema, &path, value, old, root, unchanged);
        if self.budget < 0 {
            return;
        }
        for sub in &schema.all_of {
            self.node(sub, path.clone(), value, old, root, parent_unchanged);
            if self.budget < 0 {
                return;
            }
        }
        match value {
            Value::Array(items) => {
                let Some(item_schema) = &schema.items else {
                    return;
                };
                let olds = OldItems::new(schema, old);
                for (i, item) in items.iter().enumerate() {
                    let old_item = olds.get(item);
                    self.node(item_schema, path.index(i), item, old_item, false, unchanged);
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            Value::Object(map) => {
                let correlatable = matches!(
                    schema.map_type.as_deref(),
                    None | Some("granular") | Some("atomic")
                );
                let old_map = old.and_then(Value::as_object).filter(|_| correlatable);
                for (key, item) in map {
                    // A root's `apiVersion` and `kind` are not ratcheted (both objects are read
                    // as one version).
                    let type_meta = root && matches!(key.as_str(), "apiVersion" | "kind");
                    let old_item = old_map.and_then(|m| m.get(key)).filter(|_| !type_meta);
                    let unchanged = unchanged && !type_meta;
                    if let Some(property) = schema.properties.get(key) {
                        let path = path.child_of_root(key);
                        self.node(property, path, item, old_item, false, unchanged);
                    } else if let Some(values) = &schema.additional_properties {
                        self.node(values, path.key(key), item, old_item, false, unchanged);
                    }
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn expressions(
        &mut self,
        schema: &Schema,
        path: &Path,
        value: &Value,
        old: Option<&Value>,
        root: bool,
        unchanged: bool,
    ) {
        if schema.rules.is_empty() {
            return;
        }
        let type_name = schema.kind.unwrap_or(Type::Any).name();
        let invalid =
            |detail: String| FieldError::invalid(path, BadValue::Str(type_name.to_owned()), detail);
        if self.budget <= 0 {
            self.errors.push(invalid(OUT_OF_BUDGET.into()));
            self.budget = -1;
            return;
        }
        let env = environment();
        let self_value = values::to_cel(value, schema, root);
        let old_value = old.map(|old| values::to_cel(old, schema, root));
        let mut plain_context = Context::with_env(env.clone());
        plain_context.add_variable_from_value("self", self_value.clone());
        if let Some(old_value) = &old_value {
            plain_context.add_variable_from_value("oldSelf", old_value.clone());
        }
        let mut optional_context: Option<Context<'_, '_>> = None;
        for rule in &schema.rules {
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            // One context per node (and one more for `optionalOldSelf` rules), not per rule.
            let context: &Context<'_, '_> = if rule.optional_old_self {
                optional_context.get_or_insert_with(|| {
                    let mut context = Context::with_env(env.clone());
                    context.add_variable_from_value("self", self_value.clone());
                    context.add_variable_from_value("oldSelf", values::optional(old_value.clone()));
                    context
                })
            } else {
                &plain_context
            };
            match self.spend(cost::runtime(rule.program.expression(), schema, value)) {
                Ok(()) => {}
                Err(Overrun::Call) => {
                    self.errors.push(invalid(format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule_error_string(rule)
                    )));
                    return;
                }
                Err(Overrun::Budget) => {
                    self.errors.push(invalid(OUT_OF_BUDGET.into()));
                    return;
                }
            }
            let holds = match rule.program.execute(context) {
                Ok(cel::Value::Bool(holds)) => holds,
                Ok(other) => {
                    self.errors.push(invalid(format!(
                        "rule did not evaluate to a bool: {other:?} evaluating rule: {}",
                        rule_error_string(rule)
                    )));
                    continue;
                }
                Err(err) => {
                    let detail = match runtime_error(&err) {
                        RuntimeError::NoSuchOverload => format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule_error_string(rule)
                        ),
                        RuntimeError::Other(text) => {
                            format!("{text} evaluating rule: {}", rule_error_string(rule))
                        }
                    };
                    self.errors.push(invalid(detail));
                    continue;
                }
            };
            if holds {
                continue;
            }
            let at = match &rule.field_path {
                Some(relative) => path.child_of_root(relative),
                None => path.clone(),
            };
            let mut detail = None;
            if let Some((source, program)) = &rule.message_expression {
                let over = match self.spend(cost::runtime(program.expression(), schema, value)) {
                    Ok(()) => None,
                    Err(Overrun::Call) => Some(format!(
                        "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                        apfkit_runtime::field::go_quote(source)
                    )),
                    Err(Overrun::Budget) => Some(
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"
                            .to_owned(),
                    ),
                };
                if let Some(over) = over {
                    self.errors.push(FieldError::invalid(
                        &at,
                        BadValue::Str(type_name.to_owned()),
                        over,
                    ));
                    return;
                }
                // Upstream logs a message expression that fails and falls back to the message.
                detail = evaluate_message(program, context).ok();
            }
            let detail = detail.unwrap_or_else(|| message_or_default(rule));
            let bad = match schema.kind {
                Some(Type::Object) | Some(Type::Array) => None,
                _ => Some(BadValue::from_json(value)),
            };
            let ratcheted = match &mut self.ratcheting {
                Some(warnings) if unchanged && !rule.uses_old_self => warnings,
                _ => &mut *self.errors,
            };
            ratcheted.push(match rule.reason.unwrap_or(Reason::Invalid) {
                Reason::Forbidden => FieldError::forbidden(&at, detail),
                Reason::Required => FieldError::required(&at, detail),
                Reason::Duplicate => FieldError {
                    error_type: apfkit_runtime::field::ErrorType::Duplicate,
                    ..FieldError::invalid_omitted(&at, String::new())
                }
                .with_value(bad),
                Reason::Invalid => FieldError::invalid_omitted(&at, detail).with_value(bad),
            });
        }
    }
}

/// Why a rule (or its message expression) may not run: its cost is over the per-call limit,
/// or over what is left of the object's budget.
enum Overrun {
    Call,
    Budget,
}

impl Walk<'_> {
    /// Takes `cost` from the budget, or says why it cannot; either way over, the budget is
    /// spent (no further rule runs).
    fn spend(&mut self, cost: u64) -> Result<(), Overrun> {
        let overrun = if cost > PER_CALL_LIMIT {
            Overrun::Call
        } else if cost as i64 > self.budget {
            Overrun::Budget
        } else {
            self.budget -= cost as i64;
            return Ok(());
        };
        self.budget = -1;
        Err(overrun)
    }
}

/// A rule's runtime error, in cel-go's words where the `cel` crate's would differ. The
/// crate's messages print the values involved (`Unsupported binary operator 'rem': Int(8),
/// Map(...)`): a whole object in an error, in a map's random order; cel-go names none, and
/// neither does this.
enum RuntimeError {
    /// No operator or function takes these arguments (cel-go's "no such overload").
    NoSuchOverload,
    /// Anything else, as cel-go words it.
    Other(String),
}

#[allow(deprecated)]
fn runtime_error(error: &cel::ExecutionError) -> RuntimeError {
    use cel::ExecutionError as E;
    let other = |text: &str| RuntimeError::Other(text.to_owned());
    match error {
        E::NoSuchOverload(_)
        | E::UnsupportedBinaryOperator(..)
        | E::UnsupportedUnaryOperator(..)
        | E::UnsupportedTargetType { .. }
        | E::NotSupportedAsMethod { .. }
        | E::UnexpectedType { .. }
        | E::ValuesNotComparable(..)
        | E::UnsupportedKeyType(_)
        | E::UnsupportedIndex(..)
        | E::UnsupportedMapIndex(_)
        | E::UnsupportedListIndex(_)
        | E::InvalidArgumentCount { .. } => RuntimeError::NoSuchOverload,
        E::NoSuchKey(key) => RuntimeError::Other(format!("no such key: {key}")),
        E::UndeclaredReference(name) => RuntimeError::Other(format!("no such attribute: {name}")),
        E::DivisionByZero(_) => other("division by zero"),
        E::RemainderByZero(_) => other("modulus by zero"),
        E::Overflow(..) => other("integer overflow"),
        E::IndexOutOfBounds(cel::Value::Int(index)) => {
            RuntimeError::Other(format!("index out of bounds: {index}"))
        }
        E::IndexOutOfBounds(_) => other("index out of bounds"),
        E::DuplicateKey(_) => other("repeated key in a map literal"),
        E::FunctionError { function, message } => {
            RuntimeError::Other(format!("{function}: {message}"))
        }
        _ => other("evaluation error"),
    }
}

/// A `messageExpression`'s message: a non-empty string of one line within 5 KiB, trimmed;
/// otherwise why not, in upstream's words.
fn evaluate_message(program: &Program, context: &Context<'_, '_>) -> Result<String, String> {
    let value = program
        .execute(context)
        .map_err(|err| format!("messageExpression evaluation failed due to: {err}"))?;
    let cel::Value::String(text) = value else {
        return Err("messageExpression failed to convert to string".into());
    };
    let trimmed = text.trim();
    if trimmed.len() > MAX_MESSAGE_EXPRESSION_BYTES {
        return Err(format!(
            "messageExpression beyond allowable length of {MAX_MESSAGE_EXPRESSION_BYTES}"
        ));
    }
    if trimmed.contains('\n') {
        return Err("messageExpression should not contain line breaks".into());
    }
    if trimmed.is_empty() {
        return Err("messageExpression should evaluate to a non-empty string".into());
    }
    Ok(trimmed.to_owned())
}
