//! Optimal split of a total ε across sub-queries (thesis §3.3.2–3.3.4).
//!
//! Sub-query i, with (L1) sensitivity S_i, answered by the Laplace mechanism at ε_i, carries
//! noise of variance 2·S_i²/ε_i² (Definition 3.3.2). The split minimises the total variance
//!
//! ```text
//!     minimise 2·Σ S_i²/ε_i²   subject to   Σ ε_i = E   (sequential, Theorem 3; Eq. 3.6, 3.8)
//!                                    or    max ε_i = E  (disjoint parts, Theorem 4; Eq. 3.7)
//!                                    and   extra linear constraints (Eq. 3.9)
//! ```
//!
//! The thesis's Eq. 3.6 omits the factor 2 of the Laplace variance; it does not move the
//! minimiser, and [`Allocation::objective`] reports Eq. 3.6 as printed (so the worked examples read
//! 3/ε², 27/ε², 36/ε²) next to [`Allocation::total_variance`], the true variance.
//!
//! Without extra constraints the optimum is closed-form: by Lagrange, S_i²/ε_i³ is the same for
//! all i, so ε_i = E·S_i^{2/3}/Σ_j S_j^{2/3} with objective (Σ_j S_j^{2/3})³/E² (sequential), and
//! ε_i = E (parallel). With constraints it is found by [`crate::mdmm`], which the closed form
//! checks. A c-stable transformation before a sub-query (Theorem 2, corrected) multiplies its
//! sensitivity by c.
//!
//! `budget.toml`:
//!
//! ```toml
//! epsilon = 1.0                      # total ε
//! composition = "sequential"         # or "parallel": sub-queries over disjoint parts
//! constraints = ["eps[0] <= 0.5 * eps[2]", "eps[1] <= 0.5 * eps[2]"]
//!
//! [[query]]
//! name = "ages 0-18"
//! sensitivity = 1.0
//! stability = 1.0                    # optional: c of a c-stable transformation before it
//! ```
//!
//! or, for many sub-queries, `sensitivities = [1.0, 2.0, ...]` instead of `[[query]]` tables.

use crate::constraint::{LinearConstraint, Relation};
use crate::mdmm::{self, MdmmOptions, Row};
use crate::{Composition, Epsilon, PrivacyError, Sensitivity, Stable};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// One sub-query of a budget file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySpec {
    /// A label.
    #[serde(default)]
    pub name: Option<String>,
    /// Its sensitivity.
    pub sensitivity: f64,
    /// c of a c-stable transformation applied before it (default 1).
    #[serde(default)]
    pub stability: Option<f64>,
}

/// A `budget.toml` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetFile {
    /// The total ε.
    pub epsilon: f64,
    /// `sequential` (default) or `parallel`.
    #[serde(default)]
    pub composition: Option<Composition>,
    /// Extra linear constraints.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Sub-queries.
    #[serde(default)]
    pub query: Vec<QuerySpec>,
    /// Shorthand: sensitivities only.
    #[serde(default)]
    pub sensitivities: Vec<f64>,
}

/// A validated allocation problem.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The total ε, E.
    pub total: Epsilon,
    /// Sum or max.
    pub composition: Composition,
    /// Effective sensitivity of each sub-query (stability applied).
    pub sensitivities: Vec<Sensitivity>,
    /// Labels.
    pub names: Vec<String>,
    /// Extra constraints.
    pub constraints: Vec<LinearConstraint>,
}

impl Problem {
    /// A problem without extra constraints.
    pub fn new(total: Epsilon, composition: Composition, sensitivities: Vec<Sensitivity>) -> Self {
        let names = (0..sensitivities.len()).map(|i| format!("q{i}")).collect();
        Problem {
            total,
            composition,
            sensitivities,
            names,
            constraints: Vec::new(),
        }
    }

    /// Adds a constraint (checked against the number of sub-queries).
    pub fn with_constraint(mut self, text: &str) -> Result<Self, PrivacyError> {
        let c = LinearConstraint::parse(text)?;
        if let Some(&(j, _)) = c.terms.iter().find(|(j, _)| *j >= self.sensitivities.len()) {
            return Err(PrivacyError::BadSpec(format!(
                "constraint {text:?} names eps[{j}] but there are only {} sub-queries (eps[0] to eps[{}])",
                self.sensitivities.len(),
                self.sensitivities.len().saturating_sub(1)
            )));
        }
        self.constraints.push(c);
        Ok(self)
    }

    /// Parses and validates a `budget.toml` text.
    pub fn from_toml(text: &str) -> Result<Self, PrivacyError> {
        let f: BudgetFile =
            toml::from_str(text).map_err(|e| PrivacyError::BadSpec(one_line(&e.to_string())))?;
        let total = Epsilon::new(f.epsilon)?;
        let composition = f.composition.unwrap_or(Composition::Sequential);
        let mut sens = Vec::new();
        let mut names = Vec::new();
        match (f.query.is_empty(), f.sensitivities.is_empty()) {
            (true, true) => {
                return Err(PrivacyError::BadSpec(
                    "no sub-queries: add [[query]] tables or a sensitivities = [...] list".into(),
                ))
            }
            (false, false) => {
                return Err(PrivacyError::BadSpec(
                    "give either [[query]] tables or a sensitivities list, not both".into(),
                ))
            }
            (false, true) => {
                for (i, q) in f.query.iter().enumerate() {
                    let s = Sensitivity::new(q.sensitivity).map_err(|_| {
                        PrivacyError::BadSpec(format!(
                            "query {i}: sensitivity must be a positive finite number, got {}",
                            q.sensitivity
                        ))
                    })?;
                    let c = Stable::new(q.stability.unwrap_or(1.0)).map_err(|_| {
                        PrivacyError::BadSpec(format!(
                            "query {i}: stability must be a positive finite number"
                        ))
                    })?;
                    sens.push(c.sensitivity(s));
                    names.push(q.name.clone().unwrap_or_else(|| format!("q{i}")));
                }
            }
            (true, false) => {
                for (i, &v) in f.sensitivities.iter().enumerate() {
                    sens.push(Sensitivity::new(v).map_err(|_| {
                        PrivacyError::BadSpec(format!(
                            "sensitivities[{i}] must be a positive finite number, got {v}"
                        ))
                    })?);
                    names.push(format!("q{i}"));
                }
            }
        }
        let mut p = Problem {
            total,
            composition,
            sensitivities: sens,
            names,
            constraints: Vec::new(),
        };
        for c in &f.constraints {
            p = p.with_constraint(c)?;
        }
        Ok(p)
    }

    /// The objective of Eq. 3.6 at `eps`: Σ S_i²/ε_i².
    pub fn objective(&self, eps: &[f64]) -> f64 {
        self.sensitivities
            .iter()
            .zip(eps)
            .map(|(s, e)| (s.get() / e).powi(2))
            .sum()
    }

    /// The closed-form optimum without extra constraints: (split, objective).
    pub fn closed_form(&self) -> (Vec<f64>, f64) {
        let e = self.total.get();
        let eps: Vec<f64> = match self.composition {
            Composition::Parallel => vec![e; self.sensitivities.len()],
            Composition::Sequential => {
                let w: Vec<f64> = self
                    .sensitivities
                    .iter()
                    .map(|s| s.get().powf(2.0 / 3.0))
                    .collect();
                let sum: f64 = w.iter().sum();
                w.iter().map(|wi| e * wi / sum).collect()
            }
        };
        let obj = self.objective(&eps);
        (eps, obj)
    }

    /// The closed-form split without extra constraints, with the composition bound enforced
    /// exactly (Σ ε_i ≤ E, or ε_i ≤ E). Extra constraints are ignored.
    pub fn optimal_closed_form(&self) -> Vec<f64> {
        let mut eps = self.closed_form().0;
        enforce_composition(&mut eps, self.composition, self.total.get());
        eps
    }

    /// The objective of the naive equal split (ε/N each for sequential composition, §3.3.2).
    pub fn equal_split_objective(&self) -> f64 {
        let n = self.sensitivities.len() as f64;
        let each = match self.composition {
            Composition::Sequential => self.total.get() / n,
            Composition::Parallel => self.total.get(),
        };
        self.objective(&vec![each; self.sensitivities.len()])
    }

    /// Solves the problem with MDMM.
    pub fn solve(&self, opts: &MdmmOptions) -> Result<Allocation, PrivacyError> {
        let start = Instant::now();
        let n = self.sensitivities.len();
        if n == 0 {
            return Err(PrivacyError::BadSpec("no sub-queries".into()));
        }
        let e = self.total.get();
        // Sensitivities relative to the largest: the log objective does not care, and the
        // squares stay far from overflow.
        let smax = self
            .sensitivities
            .iter()
            .map(|s| s.get())
            .fold(0.0, f64::max);
        let s2: Vec<f64> = self
            .sensitivities
            .iter()
            .map(|s| (s.get() / smax).powi(2))
            .collect();
        let mut rows = Vec::with_capacity(self.constraints.len() + 1);
        if self.composition == Composition::Sequential {
            rows.push(Row {
                terms: (0..n).map(|j| (j, 1.0)).collect(),
                b: -1.0,
                equality: false,
            });
        }
        for c in &self.constraints {
            // In units of E, each row scaled to unit largest coefficient.
            let norm = c.terms.iter().map(|t| t.1.abs()).fold(0.0, f64::max);
            rows.push(Row {
                terms: c.terms.iter().map(|&(j, a)| (j, a / norm)).collect(),
                b: (c.per_total + c.constant / e) / norm,
                equality: c.relation == Relation::Equal,
            });
        }
        let x0 = match self.composition {
            Composition::Sequential => vec![1.0 / n as f64; n],
            Composition::Parallel => vec![1.0; n],
        };
        let r = mdmm::solve(
            &s2,
            &rows,
            self.composition == Composition::Parallel,
            &x0,
            opts,
        );
        let mut eps: Vec<f64> = r.x.iter().map(|x| x * e).collect();
        enforce_composition(&mut eps, self.composition, e);
        let max_violation = self
            .constraints
            .iter()
            .map(|c| c.violation(&eps, e) / e)
            .fold(0.0, f64::max);
        if !r.converged || max_violation > 1e-6 {
            return Err(PrivacyError::Infeasible(format!(
                "the allocation did not converge in {} iterations (largest constraint violation {:.2e} of ε); are the constraints satisfiable together?",
                r.iterations, max_violation
            )));
        }
        // Every query needs some budget (its variance 2·S²/ε² is unbounded at ε = 0): constraints
        // that hold together only as ε → 0 (eps[0] >= 2 eps[1] and eps[1] >= 2 eps[0]) have
        // converged to no allocation at all.
        if let Some(i) = eps.iter().position(|&x| x.is_nan() || x <= 1e-9 * e) {
            return Err(PrivacyError::Infeasible(format!(
                "the constraints leave `{}` no budget (under 10⁻⁹ of ε, its variance without bound): together they hold only at ε = 0 or next to it; relax them",
                self.names[i]
            )));
        }
        let objective = self.objective(&eps);
        let closed_form_objective = self.constraints.is_empty().then(|| self.closed_form().1);
        let queries = eps
            .iter()
            .zip(&self.sensitivities)
            .zip(&self.names)
            .map(|((&eps, s), name)| AllocatedQuery {
                name: name.clone(),
                sensitivity: s.get(),
                epsilon: eps,
                share: eps / e,
                variance: 2.0 * (s.get() / eps).powi(2),
            })
            .collect();
        Ok(Allocation {
            total: e,
            composition: self.composition,
            queries,
            objective,
            total_variance: 2.0 * objective,
            closed_form_objective,
            equal_split_objective: self.equal_split_objective(),
            constraints: self.constraints.iter().map(|c| c.text.clone()).collect(),
            max_violation,
            iterations: r.iterations,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}

/// One sub-query's share of the budget.
#[derive(Clone, Debug, Serialize)]
pub struct AllocatedQuery {
    /// Label.
    pub name: String,
    /// Effective sensitivity.
    pub sensitivity: f64,
    /// Its ε_i.
    pub epsilon: f64,
    /// ε_i / E.
    pub share: f64,
    /// Laplace noise variance 2·S_i²/ε_i².
    pub variance: f64,
}

/// A solved split.
#[derive(Clone, Debug, Serialize)]
pub struct Allocation {
    /// The total ε, E.
    pub total: f64,
    /// Sum or max.
    pub composition: Composition,
    /// Per sub-query.
    pub queries: Vec<AllocatedQuery>,
    /// Σ S_i²/ε_i² (Eq. 3.6 as printed in the thesis).
    pub objective: f64,
    /// 2·objective: the total variance of the Laplace noise.
    pub total_variance: f64,
    /// The closed-form optimum, when there are no extra constraints.
    pub closed_form_objective: Option<f64>,
    /// The objective of the equal split ε/N.
    pub equal_split_objective: f64,
    /// The extra constraints.
    pub constraints: Vec<String>,
    /// Largest extra-constraint violation, relative to E.
    pub max_violation: f64,
    /// MDMM iterations.
    pub iterations: usize,
    /// Solver time.
    pub seconds: f64,
}

impl Allocation {
    /// The ε_i.
    pub fn epsilons(&self) -> Vec<f64> {
        self.queries.iter().map(|q| q.epsilon).collect()
    }
}

/// The composition bound is the privacy guarantee: enforce it exactly, not to a tolerance.
fn enforce_composition(eps: &mut [f64], composition: Composition, e: f64) {
    match composition {
        Composition::Sequential => {
            let sum: f64 = eps.iter().sum();
            if sum > e {
                let f = e / sum;
                for v in eps.iter_mut() {
                    *v *= f;
                }
                // Rounding of the rescale itself.
                while eps.iter().sum::<f64>() > e {
                    for v in eps.iter_mut() {
                        *v *= 1.0 - f64::EPSILON;
                    }
                }
            }
        }
        Composition::Parallel => {
            for v in eps.iter_mut() {
                *v = v.min(e);
            }
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
