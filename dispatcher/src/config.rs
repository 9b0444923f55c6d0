//! A dispatcher configuration built from hub objects, as kube-apiserver's APF controller digests
//! them (`apf_controller.go`'s `digestConfigObjects`): usable priority levels, flow schemas in matching order with the
//! mandatory ones imagined when missing, the `Dangling` condition of each schema, and each
//! level's static concurrency limits.

use std::collections::BTreeMap;

use apfkit_runtime::HubKind;
use apfkit_scheme::scheme::HubObject;
use apfkit_scheme::validation::{self, FieldError, Options};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};

use crate::bootstrap;
use crate::shuffle::{Dealer, DealerError};

/// kube-apiserver's default server concurrency limit: 400 + 200 in-flight requests.
pub const DEFAULT_SERVER_CONCURRENCY_LIMIT: i32 = 600;

/// Default limited shares when unset (v1 defaulting).
const DEFAULT_LIMITED_SHARES: i32 = 30;

/// How a priority level treats requests.
#[derive(Debug, Clone, PartialEq)]
pub enum LevelBehavior {
    /// Never queued, never rejected.
    Exempt,
    /// No queues: admitted if the seats fit now, else rejected.
    Reject,
    /// Shuffle sharding and fair queuing.
    Queue {
        /// Number of queues (the deck).
        queues: i32,
        /// Queues dealt to each flow.
        hand_size: i32,
        /// Requests a queue may hold before new ones are rejected (when the level is full).
        queue_length_limit: i32,
        /// The dealer for `queues` and `hand_size`.
        dealer: Dealer,
    },
}

/// A level's concurrency limits that depend only on the configuration (`apf_controller.go`'s
/// `queueSetCompleterForPL` and `finishQueueSetReconfigsLocked`), in 64 bits
/// as kube-apiserver computes them in Go's `int`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StaticLimits {
    /// `ceil(ServerCL × NCS / shareSum)`.
    pub nominal: i64,
    /// `round(NominalCL × lendablePercent / 100)`.
    pub lendable: i64,
    /// `round(NominalCL × borrowingLimitPercent / 100)`, or ServerCL when unset.
    pub borrowing: i64,
    /// `NominalCL − LendableCL`.
    pub min: i64,
    /// `NominalCL + BorrowingCL`.
    pub max: i64,
}

/// One usable priority level.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityLevel {
    /// The object (from the input, or the built-in one when imagined).
    pub object: PriorityLevelConfiguration,
    /// True when the level is a mandatory one that the input lacked.
    pub imagined: bool,
    /// How requests are treated.
    pub behavior: LevelBehavior,
    /// Nominal concurrency shares.
    pub shares: i32,
    /// Static limits for the configuration's server concurrency limit.
    pub limits: StaticLimits,
    /// True for a level whose object is gone but whose requests still drain (see
    /// [`Configuration::holding_over`]): no schema sends requests to it.
    pub quiescing: bool,
}

impl PriorityLevel {
    /// The level's name.
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }
}

/// One flow schema in matching order.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedFlowSchema {
    /// The object (from the input, or the built-in one when imagined).
    pub object: FlowSchema,
    /// True when the schema is a mandatory one that the input lacked.
    pub imagined: bool,
}

impl OrderedFlowSchema {
    /// The schema's name.
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }

    /// The priority level it sends requests to.
    pub fn priority_level(&self) -> &str {
        &self.object.spec.priority_level_configuration.name
    }
}

/// The `Dangling` condition the APF controller sets on a FlowSchema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DanglingCondition {
    /// The schema.
    pub flow_schema: String,
    /// `"True"` when its priority level does not exist, else `"False"`.
    pub status: &'static str,
    /// `NotFound` or `Found`.
    pub reason: &'static str,
    /// The controller's message.
    pub message: String,
}

impl DanglingCondition {
    /// The condition of `flow_schema`, whose level `level` was `found` or not, with the
    /// messages of `cfgMeal.presyncFlowSchemaStatus` in upstream's `apf_controller.go`.
    fn of(flow_schema: String, level: &str, found: bool) -> Self {
        DanglingCondition {
            flow_schema,
            status: if found { "False" } else { "True" },
            reason: if found { "Found" } else { "NotFound" },
            message: if found {
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"
                )
            } else {
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"
                )
            },
        }
    }
}

/// An input object the configuration left out, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// `FlowSchema` or `PriorityLevelConfiguration`.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// Validation errors with kube-apiserver's paths and messages (queuing parameters the
    /// shuffle-sharding dealer refuses appear at `spec.limited.limitResponse.queuing`).
    pub reasons: Vec<FieldError>,
}

/// Why no configuration could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The server concurrency limit must be positive.
    #[error("the server concurrency limit must be positive, not {0}")]
    ServerConcurrencyLimit(i32),
    /// Two objects of one kind have the same name; a cluster cannot hold both (kube-apiserver's
    /// dispatcher would panic on two FlowSchemas of one name).
    #[error("two {kind} objects are named {name:?}")]
    DuplicateName {
        /// `FlowSchema` or `PriorityLevelConfiguration`.
        kind: &'static str,
        /// The name.
        name: String,
    },
}

/// A digested configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    server_concurrency_limit: i32,
    levels: Vec<PriorityLevel>,
    level_index: BTreeMap<String, usize>,
    schemas: Vec<OrderedFlowSchema>,
    dangling: Vec<DanglingCondition>,
    skipped: Vec<Skipped>,
}

/// A level that passed validation (or was imagined), before its limits are computed.
struct UsableLevel {
    object: PriorityLevelConfiguration,
    imagined: bool,
    behavior: LevelBehavior,
    quiescing: bool,
}

/// The levels that pass `check` and that the dealer accepts, plus the mandatory levels the
/// input lacks (imagined, as `cfgMeal.imaginePL` in upstream `apf_controller.go` does),
/// `digestConfigObjects`), sorted by name. The others go to `skipped`.
fn usable_levels(
    levels: Vec<PriorityLevelConfiguration>,
    check: &impl Fn(HubObject) -> Vec<FieldError>,
    skipped: &mut Vec<Skipped>,
) -> Vec<UsableLevel> {
    let mut usable = Vec::new();
    for level in levels {
        let errors = check(level.clone().wrap());
        if !errors.is_empty() {
            skipped.push(Skipped {
                kind: PriorityLevelConfiguration::KIND,
                name: name_of(&level.metadata),
                reasons: errors,
            });
            continue;
        }
        match behavior(&level) {
            Ok(behavior) => usable.push(UsableLevel {
                object: level,
                imagined: false,
                behavior,
                quiescing: false,
            }),
            Err(err) => skipped.push(Skipped {
                kind: PriorityLevelConfiguration::KIND,
                name: name_of(&level.metadata),
                reasons: vec![FieldError::forbidden(
                    "spec.limited.limitResponse.queuing",
                    err.to_string(),
                )],
            }),
        }
    }
    for name in bootstrap::MANDATORY {
        if !usable
            .iter()
            .any(|level| level.object.metadata.name.as_deref() == Some(name))
            && let Some(builtin) = bootstrap::mandatory_priority_level(name)
        {
            usable.push(UsableLevel {
                object: builtin.clone(),
                imagined: true,
                behavior: behavior(builtin).unwrap_or(LevelBehavior::Reject),
                quiescing: false,
            });
        }
    }
    usable.sort_by(|a, b| a.object.metadata.name.cmp(&b.object.metadata.name));
    usable
}

/// The schemas that pass `check`, with the `Dangling` condition of each; those whose level
/// exists, in matching order (precedence, then name), with the mandatory `exempt` first and
/// `catch-all` last when the input lacks them.
fn ordered_schemas(
    schemas: Vec<FlowSchema>,
    real_levels: &[String],
    check: &impl Fn(HubObject) -> Vec<FieldError>,
    skipped: &mut Vec<Skipped>,
) -> (Vec<OrderedFlowSchema>, Vec<DanglingCondition>) {
    let mut ordered = Vec::new();
    let mut dangling = Vec::new();
    for schema in schemas {
        let name = name_of(&schema.metadata);
        let errors = check(schema.clone().wrap());
        if !errors.is_empty() {
            skipped.push(Skipped {
                kind: FlowSchema::KIND,
                name,
                reasons: errors,
            });
            continue;
        }
        let level = &schema.spec.priority_level_configuration.name;
        let found = real_levels.contains(level);
        dangling.push(DanglingCondition::of(name, level, found));
        if found {
            ordered.push(OrderedFlowSchema {
                object: schema,
                imagined: false,
            });
        }
    }
    ordered.sort_by(|a, b| {
        let precedence =
            |s: &OrderedFlowSchema| s.object.spec.matching_precedence.unwrap_or_default();
        precedence(a)
            .cmp(&precedence(b))
            .then_with(|| a.name().cmp(b.name()))
    });
    let imagined = |name| {
        bootstrap::mandatory_flow_schema(name).map(|builtin| OrderedFlowSchema {
            object: builtin.clone(),
            imagined: true,
        })
    };
    if !ordered.iter().any(|s| s.name() == "exempt")
        && let Some(exempt) = imagined("exempt")
    {
        ordered.insert(0, exempt);
    }
    if !ordered.iter().any(|s| s.name() == "catch-all")
        && let Some(catch_all) = imagined("catch-all")
    {
        ordered.push(catch_all);
    }
    (ordered, dangling)
}

/// The levels with their shares and static limits for `server_concurrency_limit`.
fn digest_levels(usable: Vec<UsableLevel>, server_concurrency_limit: i32) -> Vec<PriorityLevel> {
    let share_sum: f64 = usable.iter().map(|l| f64::from(shares(&l.object))).sum();
    usable
        .into_iter()
        .map(|level| {
            let shares = shares(&level.object);
            let limits = static_limits(&level.object, shares, share_sum, server_concurrency_limit);
            PriorityLevel {
                object: level.object,
                imagined: level.imagined,
                behavior: level.behavior,
                shares,
                limits,
                quiescing: level.quiescing,
            }
        })
        .collect()
}

impl From<PriorityLevel> for UsableLevel {
    fn from(level: PriorityLevel) -> Self {
        UsableLevel {
            object: level.object,
            imagined: level.imagined,
            behavior: level.behavior,
            quiescing: level.quiescing,
        }
    }
}

fn index_by_name(levels: &[PriorityLevel]) -> BTreeMap<String, usize> {
    levels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name().to_owned(), i))
        .collect()
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

impl Configuration {
    /// Digests priority levels and flow schemas (hub objects, already defaulted), for a server
    /// whose concurrency limit is `server_concurrency_limit`. Invalid objects are left out and
    /// reported by [`Configuration::skipped`].
    pub fn new(
        levels: impl IntoIterator<Item = PriorityLevelConfiguration>,
        schemas: impl IntoIterator<Item = FlowSchema>,
        server_concurrency_limit: i32,
    ) -> Result<Self, ConfigError> {
        Self::build(levels, schemas, server_concurrency_limit, true)
    }

    /// Like [`Configuration::new`] but without validation, as kube-apiserver's controller trusts
    /// the objects it reads from storage. For objects known to be valid, or to study how the
    /// matcher treats ones that are not.
    pub fn new_trusted(
        levels: impl IntoIterator<Item = PriorityLevelConfiguration>,
        schemas: impl IntoIterator<Item = FlowSchema>,
        server_concurrency_limit: i32,
    ) -> Result<Self, ConfigError> {
        Self::build(levels, schemas, server_concurrency_limit, false)
    }

    fn build(
        levels: impl IntoIterator<Item = PriorityLevelConfiguration>,
        schemas: impl IntoIterator<Item = FlowSchema>,
        server_concurrency_limit: i32,
        validate: bool,
    ) -> Result<Self, ConfigError> {
        if server_concurrency_limit <= 0 {
            return Err(ConfigError::ServerConcurrencyLimit(
                server_concurrency_limit,
            ));
        }
        let levels: Vec<PriorityLevelConfiguration> = levels.into_iter().collect();
        let schemas: Vec<FlowSchema> = schemas.into_iter().collect();
        unique_names(
            PriorityLevelConfiguration::KIND,
            levels.iter().map(|l| &l.metadata),
        )?;
        unique_names(FlowSchema::KIND, schemas.iter().map(|s| &s.metadata))?;
        let check = |object: HubObject| {
            if validate {
                validation::validate(&object, &Options::default())
            } else {
                Vec::new()
            }
        };
        let mut skipped = Vec::new();
        let usable = usable_levels(levels, &check, &mut skipped);
        let real_levels: Vec<String> = usable
            .iter()
            .filter(|level| !level.imagined)
            .map(|level| name_of(&level.object.metadata))
            .collect();
        let (schemas, dangling) = ordered_schemas(schemas, &real_levels, &check, &mut skipped);
        let levels = digest_levels(usable, server_concurrency_limit);
        let level_index = index_by_name(&levels);
        Ok(Configuration {
            server_concurrency_limit,
            levels,
            level_index,
            schemas,
            dangling,
            skipped,
        })
    }

    /// This configuration with `draining` levels held over: levels of an earlier
    /// configuration that this one lacks but that still have requests waiting or executing.
    /// As kube-apiserver's controller does (`apf_controller.go`, `processOldPLsLocked`), they
    /// keep their behaviour, count in the division of the server's concurrency (so every
    /// level's nominal limit is computed again), and are marked quiescing; no schema sends
    /// requests to them. Levels this configuration has already are not added twice.
    pub fn holding_over(&self, draining: impl IntoIterator<Item = PriorityLevel>) -> Self {
        let mut usable: Vec<UsableLevel> =
            self.levels.iter().cloned().map(UsableLevel::from).collect();
        for level in draining {
            if !self.level_index.contains_key(level.name()) {
                usable.push(UsableLevel {
                    quiescing: true,
                    ..UsableLevel::from(level)
                });
            }
        }
        usable.sort_by(|a, b| a.object.metadata.name.cmp(&b.object.metadata.name));
        let levels = digest_levels(usable, self.server_concurrency_limit);
        Configuration {
            level_index: index_by_name(&levels),
            levels,
            ..self.clone()
        }
    }

    /// The Kubernetes default configuration: the mandatory and suggested objects of upstream's
    /// `bootstrap/default.go`.
    pub fn kubernetes_default(server_concurrency_limit: i32) -> Result<Self, ConfigError> {
        Self::new(
            bootstrap::priority_levels().to_vec(),
            bootstrap::flow_schemas().to_vec(),
            server_concurrency_limit,
        )
    }

    /// The server concurrency limit the static limits were computed for.
    pub fn server_concurrency_limit(&self) -> i32 {
        self.server_concurrency_limit
    }

    /// Usable priority levels, by name.
    pub fn priority_levels(&self) -> &[PriorityLevel] {
        &self.levels
    }

    /// The usable priority level of this name.
    pub fn priority_level(&self, name: &str) -> Option<&PriorityLevel> {
        self.level_index.get(name).map(|&i| &self.levels[i])
    }

    /// The position of the level named `name` in [`Configuration::priority_levels`].
    pub fn priority_level_index(&self, name: &str) -> Option<usize> {
        self.level_index.get(name).copied()
    }

    /// Flow schemas in matching order, dangling ones left out, mandatory ones imagined.
    pub fn flow_schemas(&self) -> &[OrderedFlowSchema] {
        &self.schemas
    }

    /// The `Dangling` condition of every input flow schema.
    pub fn dangling_conditions(&self) -> &[DanglingCondition] {
        &self.dangling
    }

    /// Input objects left out because they are invalid.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }
}

/// Fails on the first name that two objects share.
fn unique_names<'a>(
    kind: &'static str,
    objects: impl Iterator<Item = &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) -> Result<(), ConfigError> {
    let mut seen = std::collections::HashSet::new();
    for metadata in objects {
        let name = name_of(metadata);
        if !seen.insert(name.clone()) {
            return Err(ConfigError::DuplicateName { kind, name });
        }
    }
    Ok(())
}

/// Nominal concurrency shares: limited shares (unset → 30) or exempt shares (unset → 0).
fn shares(level: &PriorityLevelConfiguration) -> i32 {
    match (&level.spec.limited, &level.spec.exempt) {
        (Some(limited), _) => limited
            .nominal_concurrency_shares
            .unwrap_or(DEFAULT_LIMITED_SHARES),
        (None, Some(exempt)) => exempt.nominal_concurrency_shares.unwrap_or(0),
        (None, None) => 0,
    }
}

fn behavior(level: &PriorityLevelConfiguration) -> Result<LevelBehavior, DealerError> {
    let Some(limited) = &level.spec.limited else {
        return Ok(LevelBehavior::Exempt);
    };
    match &limited.limit_response.queuing {
        Some(queuing) if limited.limit_response.type_ == "Queue" => {
            let queues = queuing.queues.unwrap_or_default();
            let hand_size = queuing.hand_size.unwrap_or_default();
            Ok(LevelBehavior::Queue {
                queues,
                hand_size,
                queue_length_limit: queuing.queue_length_limit.unwrap_or_default(),
                dealer: Dealer::new(queues, hand_size)?,
            })
        }
        _ => Ok(LevelBehavior::Reject),
    }
}

/// Static limits (`queueSetCompleterForPL`), in f64 and 64-bit integers with Go's rounding (half away from
/// zero), as kube-apiserver computes them in `float64` and `int`: no overflow for any valid
/// object (shares and percentages are `int32`).
fn static_limits(
    level: &PriorityLevelConfiguration,
    shares: i32,
    share_sum: f64,
    server_cl: i32,
) -> StaticLimits {
    let server = f64::from(server_cl);
    let nominal = if share_sum > 0.0 {
        (server * f64::from(shares) / share_sum).ceil() as i64
    } else {
        0
    };
    let (lendable_percent, borrowing_percent) = match (&level.spec.limited, &level.spec.exempt) {
        (Some(limited), _) => (limited.lendable_percent, limited.borrowing_limit_percent),
        (None, Some(exempt)) => (exempt.lendable_percent, None),
        (None, None) => (None, None),
    };
    let percent_of_nominal = |p: i32| (nominal as f64 * f64::from(p) / 100.0).round() as i64;
    let lendable = lendable_percent.map_or(0, percent_of_nominal);
    let borrowing = borrowing_percent.map_or(i64::from(server_cl), percent_of_nominal);
    StaticLimits {
        nominal,
        lendable,
        borrowing,
        min: nominal - lendable,
        max: nominal + borrowing,
    }
}
