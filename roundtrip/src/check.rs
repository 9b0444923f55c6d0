//! The check: objects generated for each served version, admitted by it as kube-apiserver
//! admits a create, sent to every other version and back, and what came back compared with
//! what was sent; each loss shrunk to the smallest object that still shows it.

use std::time::{Duration, Instant};

use apfkit_crd::{CustomResourceDefinition, Version};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

use crate::convert::Converter;
use crate::diff::{Change, Difference, differences};
use crate::report::{Finding, Problem, Report};

/// The uid every generated object carries (a webhook must give it back unchanged).
const UID: &str = "0d4f1c2e-7a4b-4c1d-9e2f-3a5b6c7d8e9f";
/// The most shrinking steps for one finding.
const MAX_SHRINK_STEPS: usize = 512;

/// A check of one CRD's conversions: which objects, how many, for how long.
#[derive(Debug)]
pub struct Check {
    crd: CustomResourceDefinition,
    seed: u64,
    cases: usize,
    per_review: usize,
    time_limit: Option<Duration>,
}

impl Check {
    /// A check of `crd`'s served versions, 64 objects per version, seed 0, four objects per
    /// review, no time limit.
    pub fn new(crd: CustomResourceDefinition) -> Self {
        Check {
            crd,
            seed: 0,
            cases: 64,
            per_review: 4,
            time_limit: None,
        }
    }

    /// The seed objects are generated from: the same seed, the same objects.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many objects are generated for each version (those its schema refuses are not
    /// sent).
    pub fn cases(mut self, cases: usize) -> Self {
        self.cases = cases;
        self
    }

    /// How many objects each review carries (at least one).
    pub fn per_review(mut self, objects: usize) -> Self {
        self.per_review = objects.max(1);
        self
    }

    /// Stop sending once this long has passed; the report says it stopped.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// The definition checked.
    pub fn crd(&self) -> &CustomResourceDefinition {
        &self.crd
    }

    /// Runs the check with `converter`.
    pub fn run(&self, converter: &dyn Converter) -> Report {
        let mut run = Run {
            check: self,
            converter,
            started: Instant::now(),
            report: Report::new(&self.crd, self.seed),
            last_exchange: None,
        };
        let served: Vec<&Version> = self.crd.versions.iter().filter(|v| v.served).collect();
        for (index, from) in served.iter().enumerate() {
            if run.out_of_time() {
                break;
            }
            let generated = run.generate(from, index);
            for via in served.iter().filter(|v| v.name != from.name) {
                run.round_trips(from, via, &generated);
                for to in served
                    .iter()
                    .filter(|v| v.name != from.name && v.name != via.name)
                {
                    run.paths(from, via, to, &generated);
                }
            }
        }
        run.report
    }
}

/// Objects of one version: each with the state of the generator that made it, which makes
/// it again for shrinking.
struct Generated {
    rngs: Vec<TestRng>,
    objects: Vec<Value>,
}

struct Run<'a> {
    check: &'a Check,
    converter: &'a dyn Converter,
    started: Instant,
    report: Report,
    /// The review and answer of the last conversion, when the converter shows them.
    last_exchange: Option<apfkit_apiextensions::webhook::Exchange>,
}

impl Run<'_> {
    fn out_of_time(&mut self) -> bool {
        let over = self
            .check
            .time_limit
            .is_some_and(|limit| self.started.elapsed() > limit);
        self.report.timed_out |= over;
        over
    }

    fn api_version(&self, version: &Version) -> String {
        format!("{}/{}", self.check.crd.group, version.name)
    }

    /// `cases` objects for `version`, those it admits kept as admitted (pruned, defaulted).
    fn generate(&mut self, version: &Version, index: usize) -> Generated {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.check.seed.to_le_bytes());
        seed[8..16].copy_from_slice(&(index as u64).to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
        );
        let strategy = crate::generate::value(&version.schema);
        let mut generated = Generated {
            rngs: Vec::new(),
            objects: Vec::new(),
        };
        for case in 0..self.check.cases {
            let rng = runner.rng().clone();
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            match self.admitted(version, tree.current(), case) {
                Some(object) => {
                    generated.objects.push(object);
                    generated.rngs.push(rng);
                }
                None => self.report.refused_by_schema += 1,
            }
        }
        self.report.generated += generated.objects.len();
        generated
    }

    /// A generated body made an object of `version` and admitted as a create is, or `None`
    /// when the version refuses it.
    fn admitted(&self, version: &Version, body: Value, case: usize) -> Option<Value> {
        let crd = &self.check.crd;
        let mut object = match body {
            Value::Object(map) => map,
            _ => return None,
        };
        let mut metadata = json!({"name": format!("roundtrip-{case}"), "uid": UID});
        if crd.namespaced {
            metadata["namespace"] = json!("default");
        }
        object.insert("apiVersion".into(), json!(self.api_version(version)));
        object.insert("kind".into(), json!(crd.kind));
        object.insert("metadata".into(), metadata);
        let mut object = Value::Object(object);
        version
            .admit(&mut object, None)
            .errors
            .is_empty()
            .then_some(object)
    }

    /// `objects` converted to `to` and read there (pruned and defaulted), a review per
    /// `per_review` objects; `None` for each object whose review was refused, noted.
    fn convert_all(
        &mut self,
        from: &Version,
        objects: &[Value],
        to: &Version,
    ) -> Vec<Option<Value>> {
        let mut out = Vec::with_capacity(objects.len());
        for chunk in objects.chunks(self.check.per_review) {
            if self.out_of_time() {
                out.extend(chunk.iter().map(|_| None));
                continue;
            }
            match self.convert(chunk.to_vec(), to) {
                Ok(converted) => out.extend(converted.into_iter().map(Some)),
                Err(refused) => {
                    self.report.findings.push(Finding {
                        from: from.name.clone(),
                        via: to.name.clone(),
                        to: to.name.clone(),
                        problem: Problem::Refused,
                        difference: None,
                        message: refused.why,
                        object: chunk[0].clone(),
                        exchange: refused.exchange,
                    });
                    out.extend(chunk.iter().map(|_| None));
                }
            }
        }
        out
    }

    /// One conversion, counted, each object then read in `to` as its storage would read it.
    fn convert(
        &mut self,
        objects: Vec<Value>,
        to: &Version,
    ) -> Result<Vec<Value>, apfkit_apiextensions::webhook::Refused> {
        self.report.reviews += 1;
        self.report.objects_sent += objects.len();
        let api_version = self.api_version(to);
        let converted = self.converter.convert(objects, &api_version)?;
        self.last_exchange = converted.exchange.clone();
        Ok(converted
            .objects
            .into_iter()
            .map(|mut object| {
                to.prune_and_default(&mut object);
                object
            })
            .collect())
    }

    /// Every object of `from` sent to `via` and back: what `via` refuses of it, and what
    /// differs once back, each shrunk.
    fn round_trips(&mut self, from: &Version, via: &Version, generated: &Generated) {
        let there = self.convert_all(from, &generated.objects, via);
        let sendable: Vec<(usize, Value)> = there
            .into_iter()
            .enumerate()
            .filter_map(|(i, object)| object.map(|o| (i, o)))
            .collect();
        let mut back_in: Vec<Value> = Vec::new();
        for (i, object) in &sendable {
            let errors = via.validate(object, None);
            if let Some(error) = errors.first() {
                self.note_once(Finding {
                    from: from.name.clone(),
                    via: via.name.clone(),
                    to: via.name.clone(),
                    problem: Problem::Invalid,
                    difference: None,
                    message: error.to_string(),
                    object: generated.objects[*i].clone(),
                    exchange: None,
                });
            }
            back_in.push(object.clone());
        }
        let back = self.convert_all(via, &back_in, from);
        for ((i, _), object) in sendable.iter().zip(back) {
            let Some(object) = object else { continue };
            let original = &generated.objects[*i];
            let found = differences(original, &object);
            if let Some(first) = found.first()
                && !self.reported(from, via, from, &first.path, first.change)
            {
                let route = Route {
                    from,
                    via,
                    to: from,
                };
                self.shrink(&route, &generated.rngs[*i], first.clone());
            }
        }
    }

    /// With three versions or more: `from` → `via` → `to` against `from` → `to`.
    fn paths(&mut self, from: &Version, via: &Version, to: &Version, generated: &Generated) {
        let direct = self.convert_all(from, &generated.objects, to);
        let there = self.convert_all(from, &generated.objects, via);
        let indirect_in: Vec<(usize, Value)> = there
            .into_iter()
            .enumerate()
            .filter_map(|(i, o)| o.map(|o| (i, o)))
            .collect();
        let objects: Vec<Value> = indirect_in.iter().map(|(_, o)| o.clone()).collect();
        let indirect = self.convert_all(via, &objects, to);
        for ((i, _), indirect) in indirect_in.iter().zip(indirect) {
            let (Some(indirect), Some(direct)) = (indirect, direct[*i].as_ref()) else {
                continue;
            };
            if let Some(first) = differences(direct, &indirect).first()
                && !self.reported(from, via, to, &first.path, first.change)
            {
                let route = Route { from, via, to };
                self.shrink(&route, &generated.rngs[*i], first.clone());
            }
        }
    }

    fn reported(
        &self,
        from: &Version,
        via: &Version,
        to: &Version,
        path: &str,
        change: Change,
    ) -> bool {
        self.report.findings.iter().any(|f| {
            f.from == from.name
                && f.via == via.name
                && f.to == to.name
                && f.difference
                    .as_ref()
                    .is_some_and(|d| d.path == path && d.change == change)
        })
    }

    fn note_once(&mut self, finding: Finding) {
        let same = self.report.findings.iter().any(|f| {
            f.from == finding.from
                && f.via == finding.via
                && f.to == finding.to
                && f.problem == finding.problem
                && f.message == finding.message
        });
        if !same {
            self.report.findings.push(finding);
        }
    }

    /// What differs for one object on `route`, one review per conversion: the object as
    /// admitted and the differences; `None` when a conversion was refused or the version
    /// refuses the object.
    fn one_object(&mut self, route: &Route<'_>, body: Value) -> Option<(Value, Vec<Difference>)> {
        let original = self.admitted(route.from, body, 0)?;
        let there = self
            .convert(vec![original.clone()], route.via)
            .ok()?
            .pop()?;
        let found = if route.to.name == route.from.name {
            let back = self.convert(vec![there], route.from).ok()?.pop()?;
            differences(&original, &back)
        } else {
            // The indirect way last: its exchange is the one a finding shows.
            let direct = self.convert(vec![original.clone()], route.to).ok()?.pop()?;
            let indirect = self.convert(vec![there], route.to).ok()?.pop()?;
            differences(&direct, &indirect)
        };
        Some((original, found))
    }

    /// Shrinks the object the generator makes from `rng` to the smallest that still differs
    /// on `route` at `first`'s path in the same way, and notes it.
    fn shrink(&mut self, route: &Route<'_>, rng: &TestRng, first: Difference) {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng.clone());
        let Ok(mut tree) = crate::generate::value(&route.from.schema).new_tree(&mut runner) else {
            return;
        };
        let shows = |found: &[Difference]| {
            found
                .iter()
                .find(|d| d.path == first.path && d.change == first.change)
                .cloned()
        };
        let mut smallest = self
            .one_object(route, tree.current())
            .and_then(|(object, found)| {
                shows(&found).map(|d| (object, d, self.last_exchange.clone()))
            });
        let mut steps = 0;
        if smallest.is_some() && tree.simplify() {
            loop {
                steps += 1;
                if steps > MAX_SHRINK_STEPS || self.out_of_time() {
                    break;
                }
                let still = self
                    .one_object(route, tree.current())
                    .and_then(|(object, found)| {
                        shows(&found).map(|d| (object, d, self.last_exchange.clone()))
                    });
                let more = match still {
                    Some(found) => {
                        smallest = Some(found);
                        tree.simplify()
                    }
                    None => tree.complicate(),
                };
                if !more {
                    break;
                }
            }
        }
        let (object, difference, exchange) = smallest.unwrap_or((Value::Null, first, None));
        let (from, via, to) = (&route.from.name, &route.via.name, &route.to.name);
        let (problem, message) = if from == to {
            let message = format!(
                "{from} → {via} → {from} {} {}",
                difference.change.word(),
                difference.path
            );
            (Problem::Loss, message)
        } else {
            let message = format!(
                "{from} → {via} → {to} differs from {from} → {to} at {}",
                difference.path
            );
            (Problem::Path, message)
        };
        self.report.findings.push(Finding {
            from: from.clone(),
            via: via.clone(),
            to: to.clone(),
            problem,
            difference: Some(difference),
            message,
            object,
            exchange,
        });
    }
}

/// Where an object goes: `from` → `via` → `to`, compared with the original when `to` is
/// `from` (a round trip), else with `from` → `to`.
struct Route<'a> {
    from: &'a Version,
    via: &'a Version,
    to: &'a Version,
}
