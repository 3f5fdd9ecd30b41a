//! `topos privacy`: differential privacy on a corpus (thesis chapter 3, `topos-privacy`).
//!
//! * `budget CORPUS --total E` sets the total ε of a corpus (its ledger, `CORPUS.ledger`);
//! * `ledger CORPUS` shows what is spent and left;
//! * `query CORPUS --epsilon E --count-docs-with WORD --histogram doc-length:0,50,200` answers
//!   count queries with discrete Laplace noise, charging E to the ledger in the same step as the
//!   answer is drawn (refused, with nothing charged or released, when it would exceed the total
//!   or when the noise cannot be calibrated);
//! * `allocate budget.toml` prints the optimal split of an ε across sub-queries (MDMM);
//! * `plan CORPUS -k K --epsilon E [--max-doc-tokens L]` prints the settings and noise a
//!   `train --private` run would use (the cap it would choose when L is left out), what they
//!   imply for this corpus and the held-out log-likelihood per token to expect, with its band
//!   (spending nothing; computed from the corpus's exact counts: advice for the data holder,
//!   not covered by any guarantee).

use crate::ui::Ui;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use topos_corpus::Corpus;
use topos_privacy::allocate::{Allocation, Problem};
use topos_privacy::ledger::{BudgetChange, Charge, Ledger};
use topos_privacy::mdmm::MdmmOptions;
use topos_privacy::query::{self, Answer, CountQuery};
use topos_privacy::{Composition, Epsilon, Guarantee, NoiseSource};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Set the total privacy budget ε of a corpus (creates its ledger, CORPUS.ledger).
    Budget(BudgetArgs),
    /// Show a corpus's privacy budget: total, spent, remaining, and every charge.
    Ledger(LedgerArgs),
    /// Answer count queries with differential privacy, charging the corpus's budget.
    Query(QueryArgs),
    /// Optimal split of ε across sub-queries, with constraints (MDMM), from a budget.toml.
    Allocate(AllocateArgs),
    /// The settings and noise `train --private` would use, what they imply for this corpus
    /// (the vocabulary the word release is expected to keep) and the held-out log-likelihood
    /// to expect; spends no budget (reads the corpus's exact counts: advice, not private).
    Plan(PlanArgs),
}

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// Corpus file.
    pub corpus: PathBuf,
    /// Number of topics K.
    #[arg(short = 'k', long = "topics", default_value_t = 100)]
    pub topics: u32,
    /// Training iterations T (as `train --iters`).
    #[arg(long, default_value_t = 200)]
    pub iters: u32,
    /// Total ε of the run.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// δ the Rényi accountant may use (as `train --delta`; default 1e-6, 0 for pure ε).
    #[arg(long, allow_negative_numbers = true)]
    pub delta: Option<f64>,
    /// Per-document token cap L (as `train --max-doc-tokens`; default: what training would aim
    /// at, the lower quartile of the document lengths, which it chooses privately).
    #[arg(long)]
    pub max_doc_tokens: Option<u32>,
    /// Noisy releases R, the model included (as `train --releases`; default as training
    /// chooses: for the Gaussian mechanism T/2 + 1 kept between 11 and 26, at most T + 1; for
    /// the Laplace mechanism 2).
    #[arg(long)]
    pub releases: Option<u32>,
    /// Plan a run without the word release (as `train --no-word-release`).
    #[arg(long)]
    pub no_word_release: bool,
    /// The noise mechanism (as `train --mechanism`; the same default: gaussian unless --delta
    /// 0, --max-doc-tokens or a corpus privacy budget ask for laplace). The utility prediction
    /// models the Laplace mechanism only: for gaussian the plan gives the settings, σ and the
    /// guarantee, and says that it does not predict utility.
    #[arg(long, value_enum)]
    pub mechanism: Option<crate::cmd::train::Mechanism>,
    /// L2 clipping norm C of the Gaussian mechanism (as `train --l2-clip`; default 12).
    #[arg(long)]
    pub l2_clip: Option<u32>,
}

#[derive(clap::Args, Debug)]
pub struct BudgetArgs {
    /// Corpus file.
    pub corpus: PathBuf,
    /// Total ε every query on this corpus together may spend.
    #[arg(long, allow_negative_numbers = true)]
    pub total: f64,
    /// Total δ the (ε, δ) queries on this corpus together may spend (private training calibrated
    /// by Rényi DP, whose --delta is charged); default: unchanged, 0 for a new ledger (pure ε only).
    #[arg(long, allow_negative_numbers = true)]
    pub total_delta: Option<f64>,
}

#[derive(clap::Args, Debug)]
pub struct LedgerArgs {
    /// Corpus file.
    pub corpus: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// Corpus file.
    pub corpus: PathBuf,
    /// ε of this call, split evenly over its sub-queries and charged to the ledger.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// Number of documents containing WORD (repeatable).
    #[arg(long = "count-docs-with", value_name = "WORD")]
    pub count_docs_with: Vec<String>,
    /// Histogram of document lengths in tokens: doc-length:E0,E1,... gives bins [E0,E1), ...,
    /// [last, ∞) (repeatable).
    #[arg(long, value_name = "doc-length:EDGES")]
    pub histogram: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct AllocateArgs {
    /// Budget file (TOML): epsilon, composition, constraints, [[query]] or sensitivities.
    pub budget: PathBuf,
    /// MDMM iteration cap.
    #[arg(long, default_value_t = 200_000)]
    pub max_iters: usize,
    /// Sub-queries listed in the human output (all with --json).
    #[arg(long, default_value_t = 20)]
    pub show: usize,
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    match args.command {
        Sub::Budget(a) => budget(a, ui),
        Sub::Ledger(a) => ledger(a, ui),
        Sub::Query(a) => query(a, ui),
        Sub::Allocate(a) => allocate(a, ui),
        Sub::Plan(a) => plan(a, ui),
    }
}

fn open_corpus(path: &Path) -> Result<Corpus> {
    Corpus::open(path).with_context(|| format!("cannot open the corpus {}", path.display()))
}

fn epsilon(value: f64, flag: &str) -> Result<Epsilon> {
    Epsilon::new(value).with_context(|| flag.to_string())
}

#[derive(Serialize)]
struct LedgerView<'a> {
    corpus: String,
    ledger: String,
    total_epsilon: f64,
    spent_epsilon: f64,
    remaining_epsilon: f64,
    total_delta: f64,
    spent_delta: f64,
    remaining_delta: f64,
    /// Every change of the totals (`privacy budget`), oldest first.
    budget_changes: &'a [BudgetChange],
    charges: &'a [Charge],
}

fn view<'a>(corpus: &Path, l: &'a Ledger) -> LedgerView<'a> {
    LedgerView {
        corpus: corpus.display().to_string(),
        ledger: l.path().display().to_string(),
        total_epsilon: l.total(),
        spent_epsilon: l.spent(),
        remaining_epsilon: l.remaining(),
        total_delta: l.total_delta(),
        spent_delta: l.spent_delta(),
        remaining_delta: l.remaining_delta(),
        budget_changes: l.budget_changes(),
        charges: l.charges(),
    }
}

/// "; total δ = …, spent …, remaining …" when the ledger has a δ budget or δ charges.
fn delta_line(v: &LedgerView<'_>) -> String {
    if v.total_delta > 0.0 || v.spent_delta > 0.0 {
        // 0 as "0", not "0e0".
        let d = |x: f64| {
            if x == 0.0 {
                "0".to_string()
            } else {
                format!("{x:e}")
            }
        };
        format!(
            "; total δ = {}, spent {}, remaining {}",
            d(v.total_delta),
            d(v.spent_delta),
            d(v.remaining_delta)
        )
    } else {
        String::new()
    }
}

fn budget(a: BudgetArgs, ui: Ui) -> Result<()> {
    let total = epsilon(a.total, "--total")?;
    let corpus = open_corpus(&a.corpus)?;
    let l = Ledger::set_budget(&a.corpus, corpus.checksum(), total, a.total_delta)?;
    let v = view(&a.corpus, &l);
    ui.result(&v, || {
        println!(
            "privacy budget of {}: total ε = {}, spent {}, remaining {}{} (ledger {})",
            v.corpus,
            v.total_epsilon,
            v.spent_epsilon,
            v.remaining_epsilon,
            delta_line(&v),
            v.ledger
        );
    })
}

fn ledger(a: LedgerArgs, ui: Ui) -> Result<()> {
    let corpus = open_corpus(&a.corpus)?;
    let l = Ledger::open(&a.corpus, corpus.checksum())?;
    let v = view(&a.corpus, &l);
    ui.result(&v, || {
        println!(
            "{}: total ε = {}, spent {}, remaining {}{}",
            v.corpus,
            v.total_epsilon,
            v.spent_epsilon,
            v.remaining_epsilon,
            delta_line(&v)
        );
        // Budget changes and charges in the order they happened (a change first on a tie: the
        // charges after it were checked against it).
        let (mut b, mut c) = (
            v.budget_changes.iter().peekable(),
            v.charges.iter().peekable(),
        );
        loop {
            let budget_next = match (b.peek(), c.peek()) {
                (Some(x), Some(y)) => x.time <= y.time,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if budget_next {
                let x = b.next().expect("peeked");
                let delta = if x.total_delta > 0.0 {
                    format!(", total δ = {:e}", x.total_delta)
                } else {
                    String::new()
                };
                println!(
                    "  {}  budget set: total ε = {}{delta}",
                    x.time, x.total_epsilon
                );
            } else {
                let y = c.next().expect("peeked");
                let delta = if y.delta > 0.0 {
                    format!(" δ = {:e}", y.delta)
                } else {
                    String::new()
                };
                println!("  {}  ε = {:<10}{delta} {}", y.time, y.epsilon, y.query);
            }
        }
        if v.charges.is_empty() {
            println!("  (no queries yet)");
        }
    })
}

#[derive(Serialize)]
struct QueryOutput<'a> {
    corpus: String,
    epsilon: f64,
    answers: &'a [Answer],
    guarantee: Guarantee,
    ledger: LedgerView<'a>,
}

fn query(a: QueryArgs, ui: Ui) -> Result<()> {
    let eps = epsilon(a.epsilon, "--epsilon")?;
    let corpus = open_corpus(&a.corpus)?;
    // Everything that can fail is checked before the budget is charged.
    let mut queries = Vec::new();
    for w in &a.count_docs_with {
        queries.push(CountQuery::docs_with(w, corpus.vocab())?);
    }
    for h in &a.histogram {
        queries.push(CountQuery::histogram(h)?);
    }
    let shares = query::split(eps, &queries)?;
    // The noise is calibrated now: an ε the exact sampler cannot represent, or noise too large
    // for the counts, is refused before anything is charged.
    let mechanisms = query::calibrate(&queries, &shares)?;
    let parts = [corpus.train(), corpus.heldout()];
    let exact: Vec<Vec<u64>> = queries.iter().map(|q| q.exact(&parts)).collect();
    let mut src = NoiseSource::from_os()?;
    let description = queries
        .iter()
        .map(|q| q.describe())
        .collect::<Vec<_>>()
        .join("; ");
    // Charge and release in one step: the answer exists only once its charge is on disk, and a
    // refusal charges and releases nothing.
    let (l, answers) =
        Ledger::charge_with(&a.corpus, corpus.checksum(), &description, eps, 0.0, || {
            Ok(query::release_calibrated(
                &queries,
                &shares,
                &mechanisms,
                &exact,
                &mut src,
            ))
        })?;
    let out = QueryOutput {
        corpus: a.corpus.display().to_string(),
        epsilon: eps.get(),
        guarantee: Guarantee::discrete_laplace(
            eps.get(),
            Composition::Sequential,
            answers.len() as u64,
            1.0,
        ),
        answers: &answers,
        ledger: view(&a.corpus, &l),
    };
    ui.result(&out, || {
        for ans in out.answers {
            if let [v] = ans.values.as_slice() {
                println!(
                    "{} (ε = {:.4}): {} ± {} (95%)",
                    ans.query, ans.epsilon, v.value, ans.ci95_half_width
                );
            } else {
                println!(
                    "{} (ε = {:.4}, ± {} per bin at 95%):",
                    ans.query, ans.epsilon, ans.ci95_half_width
                );
                for v in &ans.values {
                    println!("  {:<14} {}", v.label, v.value);
                }
            }
        }
        println!("{}", out.guarantee);
        println!(
            "charged ε = {} to {}: spent {} of {}, remaining {}",
            out.epsilon,
            out.ledger.ledger,
            out.ledger.spent_epsilon,
            out.ledger.total_epsilon,
            out.ledger.remaining_epsilon
        );
    })
}

fn allocate(a: AllocateArgs, ui: Ui) -> Result<()> {
    let text = std::fs::read_to_string(&a.budget)
        .with_context(|| format!("cannot read {}", a.budget.display()))?;
    let problem = Problem::from_toml(&text).with_context(|| a.budget.display().to_string())?;
    let opts = MdmmOptions {
        max_iters: a.max_iters,
        ..MdmmOptions::default()
    };
    let alloc = problem.solve(&opts)?;
    ui.result(&alloc, || print_allocation(&alloc, a.show))
}

fn print_allocation(a: &Allocation, show: usize) {
    println!(
        "split of ε = {} over {} sub-queries, {} composition{}",
        a.total,
        a.queries.len(),
        match a.composition {
            Composition::Sequential => "sequential (Σ ε_i ≤ ε)",
            Composition::Parallel => "parallel (max ε_i ≤ ε)",
        },
        if a.constraints.is_empty() {
            String::new()
        } else {
            format!(", constraints: {}", a.constraints.join(", "))
        }
    );
    let width = a
        .queries
        .iter()
        .take(show)
        .map(|q| q.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "  {:>5}  {:<width$}  {:>11}  {:>12}  {:>7}",
        "#", "name", "sensitivity", "ε_i", "share"
    );
    for (i, q) in a.queries.iter().enumerate().take(show) {
        println!(
            "  {:>5}  {:<width$}  {:>11}  {:>12.6}  {:>6.2}%",
            i,
            q.name,
            q.sensitivity,
            q.epsilon,
            100.0 * q.share
        );
    }
    if a.queries.len() > show {
        println!(
            "  … {} more (--show N, or --json for all)",
            a.queries.len() - show
        );
    }
    println!(
        "objective Σ S_i²/ε_i² = {:.6} (Eq. 3.6); total Laplace variance 2·Σ S_i²/ε_i² = {:.6}",
        a.objective, a.total_variance
    );
    if let Some(c) = a.closed_form_objective {
        println!(
            "closed form {:.6} (relative gap {:.1e}); equal split {:.6}",
            c,
            (a.objective - c).abs() / c,
            a.equal_split_objective
        );
    } else {
        println!("equal split {:.6}", a.equal_split_objective);
    }
    println!(
        "MDMM: {} iterations, {:.1} ms, largest constraint violation {:.1e} of ε",
        a.iterations,
        a.seconds * 1e3,
        a.max_violation
    );
}

/// What `privacy plan` prints: the run's settings and noise (public: functions of the flags
/// only), and what they imply for this corpus (computed from its exact counts: advice for the
/// data holder, not covered by any guarantee).
#[derive(Serialize)]
struct Plan {
    corpus: String,
    topics: u32,
    iterations: u32,
    epsilon: f64,
    delta: f64,
    max_doc_tokens: u32,
    releases: u32,
    word_release: bool,
    /// The noise scale b of every release (after the exact sampler's rounding).
    noise_scale: f64,
    /// ε each release spends on its own (L/b).
    epsilon_per_release: f64,
    /// "basic" (pure ε) or "renyi".
    accountant: String,
    renyi_order: Option<f64>,
    /// The guarantee the model would record.
    guarantee: Guarantee,
    /// The word release's threshold K·b on a word's noisy count (`null` without it).
    vocabulary_threshold: Option<f64>,
    /// Computed from the corpus's exact counts.
    non_private: CorpusAdvice,
    /// Whether L was left to the run (chosen privately there; the exact target here).
    cap_chosen: bool,
    /// ε the run would spend choosing L (0 when given).
    cap_epsilon: f64,
    /// The expected held-out log-likelihood per token, its band, and the references.
    utility: Utility,
}

/// What `privacy plan` predicts ([`topos_train::private::simulated_unigram_ll`] plus the
/// calibrated offset; computed from exact counts, so not private).
#[derive(Serialize)]
struct Utility {
    /// Expected held-out log-likelihood per token of the private model (`null` when the plan
    /// is outside what the prediction was calibrated for).
    predicted_heldout_ll: Option<f64>,
    /// Half-width of the band around it.
    band: f64,
    /// The simulated noisy unigram model's held-out log-likelihood.
    simulated_unigram_ll: f64,
    /// A unigram model of all training tokens, no noise (a non-private reference).
    unigram_heldout_ll: f64,
    /// Uniform topics: −ln V.
    uniform_ll: f64,
    /// Which tokens were scored: "held-out" or "training" (no held-out part).
    scored: &'static str,
    /// How the prediction is made.
    model: &'static str,
    /// What it read: the corpus's exact counts (not private).
    reads: &'static str,
}

#[derive(Serialize)]
struct CorpusAdvice {
    documents: u64,
    tokens: u64,
    /// Tokens the releases count (Σ_d min(|d|, L)).
    counted_tokens: u64,
    /// Distinct words with at least one counted token.
    words_counted: u64,
    /// Expected |H|: Σ_w P(u_w + Z ≥ K·b), Z discrete Laplace of scale b (`null` without the
    /// word release).
    expected_vocabulary: Option<f64>,
    /// Expected share of the counted tokens whose word is in H.
    expected_counted_share_in_vocabulary: Option<f64>,
    /// Mean counted tokens per cell (word, topic) of the words expected in H, against b.
    mean_count_per_vocabulary_cell: Option<f64>,
}

const UTILITY_MODEL: &str = "simulated noisy unigram model (the word release and a final release spread evenly over the topics, drawn once from this corpus's exact counts) plus an offset calibrated on measured runs (BENCHMARKS.md, \"Private training, issue 25: utility against corpus size\"); for the default mechanism (word release, R = 2) only";

/// P(u + Z ≥ t) for Z discrete Laplace of scale b (P(Z = z) ∝ e^{−|z|/b}).
fn passes(u: u64, t: f64, b: f64) -> f64 {
    let p = (-1.0 / b).exp();
    let m = (t - u as f64).ceil();
    if m >= 1.0 {
        p.powf(m) / (1.0 + p)
    } else {
        1.0 - p.powf(1.0 - m) / (1.0 + p)
    }
}

/// What `train --private` checks of the corpus and δ before it plans anything, so that a plan
/// is never made for a run that would be refused: a training set with tokens, and δ against the
/// number of training documents (refused at 1/n or more; a warning above 1/(100·n), printed
/// even with `--quiet`). Returns the number of training documents.
fn check_as_train_would(corpus: &Corpus, delta: f64) -> Result<u64> {
    let docs = corpus.train();
    if docs.iter().all(<[u32]>::is_empty) {
        anyhow::bail!("the training set has no tokens; prepare the corpus with a smaller --holdout or looser pruning");
    }
    let n = docs.len() as u64;
    if delta > 0.0 {
        match topos_train::private::delta_against_documents(delta, n) {
            topos_train::private::DeltaCheck::Refuse(why) => anyhow::bail!(why),
            topos_train::private::DeltaCheck::Warn(why) => eprintln!("{why}"),
            topos_train::private::DeltaCheck::Fine => {}
        }
    }
    Ok(n)
}

fn plan(a: PlanArgs, ui: Ui) -> Result<()> {
    let epsilon = epsilon(a.epsilon, "--epsilon")?;
    // The mechanism train would use (its default rule, `train --help`).
    let gaussian = match a.mechanism {
        Some(m) => m == crate::cmd::train::Mechanism::Gaussian,
        None => {
            a.delta != Some(0.0)
                && a.max_doc_tokens.is_none()
                && !topos_privacy::ledger::has_ledger(&a.corpus)
        }
    };
    if gaussian {
        return plan_gaussian(a, epsilon, ui);
    }
    if a.l2_clip.is_some() {
        anyhow::bail!("--l2-clip belongs to --mechanism gaussian");
    }
    if a.max_doc_tokens == Some(0) {
        anyhow::bail!("--max-doc-tokens must be at least 1, got 0");
    }
    if a.topics < 2 {
        anyhow::bail!("-k must be at least 2, got {}", a.topics);
    }
    let corpus = open_corpus(&a.corpus)?;
    check_as_train_would(
        &corpus,
        a.delta.unwrap_or(topos_train::private::DEFAULT_DELTA),
    )?;
    let docs = corpus.train();
    // Without L: the cap the run's private choice aims at (its exact target here), and the ε
    // that choice would spend (rounded down as the mechanism rounds it).
    let (cap, cap_epsilon) = match a.max_doc_tokens {
        Some(l) => (l, 0.0),
        None => (
            topos_train::private::cap_target(docs.iter().map(<[u32]>::len)),
            (topos_train::private::CAP_EPSILON_SHARE * epsilon.get() * 2f64.powi(32)).floor()
                / 2f64.powi(32),
        ),
    };
    let options = topos_train::PrivateOptions {
        epsilon,
        delta: a.delta.unwrap_or(topos_train::private::DEFAULT_DELTA),
        max_doc_tokens: cap,
        iterations: a.iters,
        releases: a
            .releases
            .unwrap_or(topos_train::private::DEFAULT_RELEASES.min(a.iters.saturating_add(1))),
        word_release: !a.no_word_release && a.iters > 0,
        cap_epsilon,
        mechanism: topos_train::PrivateMechanism::Laplace,
    };
    // Calibrated exactly as a run is; this draws no noise (the source is never read).
    let releases = topos_train::Releases::new(options, NoiseSource::insecure_seeded(0))?;
    let b = releases.scale();
    let mut u = vec![0u64; corpus.vocab().len()];
    let mut all = vec![0u64; corpus.vocab().len()];
    let mut counted_tokens = 0u64;
    for d in docs.iter() {
        for (i, &w) in d.iter().enumerate() {
            all[w as usize] += 1;
            if topos_train::private::counted(i, d.len(), cap) {
                u[w as usize] += 1;
                counted_tokens += 1;
            }
        }
    }
    let threshold = options.word_release.then(|| f64::from(a.topics) * b);
    let (expected_vocabulary, share, per_cell) = match threshold {
        None => (None, None, None),
        Some(t) => {
            let (mut h, mut mass) = (0.0, 0.0);
            for &c in &u {
                let p = passes(c, t, b);
                h += p;
                mass += p * c as f64;
            }
            let share = (counted_tokens > 0).then(|| mass / counted_tokens as f64);
            let per_cell = (h > 0.0).then(|| mass / (h * f64::from(a.topics)));
            (Some(h), share, per_cell)
        }
    };
    let utility = predict(&corpus, &u, &all, &options, a.topics, b)?;
    let calibration = releases.calibration();
    let (accountant, renyi_order) = match calibration.chosen {
        topos_privacy::rdp::Chosen::Basic => ("basic".to_string(), None),
        topos_privacy::rdp::Chosen::Renyi { order } => ("renyi".to_string(), Some(order)),
        topos_privacy::rdp::Chosen::Zcdp { .. } => {
            unreachable!("the plan is of the Laplace mechanism")
        }
    };
    let out = Plan {
        corpus: a.corpus.display().to_string(),
        topics: a.topics,
        iterations: a.iters,
        epsilon: epsilon.get(),
        delta: options.delta,
        max_doc_tokens: cap,
        releases: options.releases,
        word_release: options.word_release,
        noise_scale: b,
        epsilon_per_release: f64::from(cap) / b,
        accountant,
        renyi_order,
        guarantee: releases.guarantee(),
        vocabulary_threshold: threshold,
        non_private: CorpusAdvice {
            documents: docs.len() as u64,
            tokens: docs.num_tokens(),
            counted_tokens,
            words_counted: u.iter().filter(|&&c| c > 0).count() as u64,
            expected_vocabulary,
            expected_counted_share_in_vocabulary: share,
            mean_count_per_vocabulary_cell: per_cell,
        },
        cap_chosen: a.max_doc_tokens.is_none(),
        cap_epsilon,
        utility,
    };
    ui.result(&out, || {
        println!(
            "settings: K = {}, T = {}, L = {} tokens per document, R = {} releases{}",
            out.topics,
            out.iterations,
            out.max_doc_tokens,
            out.releases,
            if out.word_release {
                " (the first of the word counts)"
            } else {
                ""
            }
        );
        if out.cap_chosen {
            println!(
                "  L: --max-doc-tokens not given, so the run chooses it privately (ε = {:.4} of the total) near the lower quartile of the document lengths, here exactly {}",
                out.cap_epsilon, out.max_doc_tokens
            );
        }
        println!(
            "noise: discrete Laplace of scale b = {:.3} per count in every release (ε = {:.4} each, {} accountant)",
            out.noise_scale, out.epsilon_per_release, out.accountant
        );
        println!("{}", out.guarantee);
        if let Some(t) = out.vocabulary_threshold {
            println!("vocabulary: the words whose noisy count is at least K·b = {t:.1}");
        }
        let n = &out.non_private;
        println!("from this corpus's exact counts (advice for the data holder, not private: sharing these figures is not covered by the guarantee):");
        println!(
            "  {} documents, {} tokens, {} counted by the releases ({:.1}%), {} distinct words counted",
            n.documents,
            n.tokens,
            n.counted_tokens,
            100.0 * n.counted_tokens as f64 / (n.tokens.max(1) as f64),
            n.words_counted
        );
        if let Some(h) = n.expected_vocabulary {
            println!(
                "  expected vocabulary kept by the word release: {h:.0} words, holding {:.1}% of the counted tokens",
                100.0 * n.expected_counted_share_in_vocabulary.unwrap_or(0.0)
            );
        }
        if let Some(c) = n.mean_count_per_vocabulary_cell {
            println!(
                "  mean counted tokens per (word, topic) cell of that vocabulary: {c:.1}, against noise of scale {:.1}",
                out.noise_scale
            );
        }
        let u = &out.utility;
        match u.predicted_heldout_ll {
            Some(p) => println!(
                "expected held-out log-likelihood per token of the private model: {p:.2} ± {:.2} (scored on the {} documents)",
                u.band, u.scored
            ),
            None => println!("expected held-out log-likelihood: not predicted (the prediction is calibrated for the word release with R = 2 only)"),
        }
        println!(
            "  references: a unigram model of all training tokens without noise {:.2}, uniform topics {:.2}; the non-private topic model is better than the unigram model by what the topics are worth (not predicted)",
            u.unigram_heldout_ll, u.uniform_ll
        );
        println!("  how: {}", u.model);
    })
}

/// The plan of a Gaussian run: its settings, σ, ρ and guarantee; no utility prediction (the
/// prediction model is calibrated for the Laplace mechanism only).
#[derive(Serialize)]
struct GaussianPlan {
    corpus: String,
    mechanism: &'static str,
    topics: u32,
    iterations: u32,
    epsilon: f64,
    delta: f64,
    l2_clip: u32,
    releases: u32,
    /// How R was set: given, or the default.
    releases_chosen: String,
    /// How ρ is split over the releases: "focused" or "equal".
    budget_split: &'static str,
    /// n·C·√ρ/K, the public statistic the split follows.
    release_signal: f64,
    word_release: bool,
    /// σ of the model's release, per count.
    noise_sigma: f64,
    /// σ of every release, per count, in release order.
    release_sigmas: Vec<f64>,
    #[serde(skip)]
    noise_summary: String,
    zcdp_rho: f64,
    guarantee: Guarantee,
    /// Expected held-out log-likelihood per token (`null` outside what it was calibrated for:
    /// a word release and the default releases).
    predicted_heldout_ll: Option<f64>,
    /// Half-width of the band around it.
    band: f64,
    /// The simulated model's unigram margin
    /// ([`topos_train::private::simulated_gaussian_unigram_ll`]).
    simulated_unigram_ll: f64,
    /// The clipped word counts without noise
    /// ([`topos_train::private::clipped_unigram_ll`]): the margin's ceiling at any ε.
    clipped_unigram_ll: f64,
    /// A unigram model of all training tokens, no noise (a non-private reference).
    unigram_heldout_ll: f64,
    /// Uniform topics: −ln V.
    uniform_ll: f64,
    /// Which tokens were scored: "held-out" or "training" (no held-out part).
    scored: &'static str,
    utility: &'static str,
}

fn plan_gaussian(a: PlanArgs, epsilon: topos_privacy::Epsilon, ui: Ui) -> Result<()> {
    if a.max_doc_tokens.is_some() {
        anyhow::bail!("--max-doc-tokens belongs to --mechanism laplace; the Gaussian mechanism clips each document in L2 norm (--l2-clip)");
    }
    // As `topos train` resolves them: δ and the budget split follow the number of training
    // documents (treated as public), the releases T.
    let corpus = open_corpus(&a.corpus)?;
    let documents = corpus.train().len() as u64;
    let delta = match a.delta {
        Some(d) => d,
        None => topos_train::private::default_delta(documents),
    };
    if delta == 0.0 {
        anyhow::bail!(
            "--mechanism gaussian is (ε, δ)-private: it needs --delta > 0 (default 1e-6, less for more than 10⁴ documents), not 0"
        );
    }
    check_as_train_would(&corpus, delta)?;
    let l2_clip = a.l2_clip.unwrap_or(topos_train::private::DEFAULT_L2_CLIP);
    let auto_releases = topos_train::private::gaussian_releases(a.iters);
    let (split, signal) =
        topos_train::private::gaussian_split(epsilon.get(), delta, documents, a.topics, l2_clip)?;
    let releases_chosen = match a.releases {
        Some(_) => "given (--releases)".to_string(),
        None => format!(
            "chosen: {auto_releases} (the word counts, the releases the sampler reads, the model; at most T + 1; BENCHMARKS.md, issue 25)"
        ),
    };
    let options = topos_train::PrivateOptions {
        epsilon,
        delta,
        max_doc_tokens: 0,
        iterations: a.iters,
        releases: a.releases.unwrap_or(auto_releases),
        word_release: !a.no_word_release && a.iters > 0,
        cap_epsilon: 0.0,
        mechanism: topos_train::PrivateMechanism::Gaussian { l2_clip, split },
    };
    let releases = topos_train::Releases::new(options, NoiseSource::insecure_seeded(0))?;
    let guarantee = releases.guarantee();
    // The prediction: the simulated model's unigram margin plus the calibrated offset, for the
    // default settings it was calibrated on. One draw, fixed seed: the plan is deterministic.
    let mut all = vec![0u64; corpus.vocab().len()];
    for d in corpus.train().iter() {
        for &w in d {
            all[w as usize] += 1;
        }
    }
    let beta = 0.01;
    let scoring = scoring(&corpus, &all, beta);
    let scales = releases.scales();
    // One pass over the corpus for both scores that read the clipped counts.
    let clipped_counts =
        topos_train::private::clipped_word_units(corpus.train(), all.len(), l2_clip);
    let simulated = topos_train::private::simulated_gaussian_unigram_ll(
        &clipped_counts,
        &scoring.held,
        a.topics,
        l2_clip,
        (scales[0], releases.scale()),
        beta,
        &mut NoiseSource::insecure_seeded(1),
    )?;
    let clipped = topos_train::private::clipped_unigram_ll(&clipped_counts, &scoring.held, beta);
    let calibrated = options.word_release
        && a.releases.is_none()
        && a.iters >= 10
        && signal < topos_train::private::GAUSSIAN_PREDICTION_MAX_SIGNAL;
    let out = GaussianPlan {
        corpus: a.corpus.display().to_string(),
        mechanism: "gaussian",
        topics: a.topics,
        iterations: a.iters,
        epsilon: epsilon.get(),
        delta,
        l2_clip,
        releases: options.releases,
        releases_chosen,
        budget_split: split.name(),
        release_signal: signal,
        word_release: options.word_release,
        noise_sigma: releases.scale(),
        release_sigmas: releases.scales(),
        noise_summary: releases.noise_summary(),
        zcdp_rho: guarantee.accountant.zcdp_rho.unwrap_or(0.0),
        guarantee,
        predicted_heldout_ll: calibrated
            .then_some(simulated + topos_train::private::GAUSSIAN_PREDICTION_OFFSET),
        band: topos_train::private::GAUSSIAN_PREDICTION_BAND,
        simulated_unigram_ll: simulated,
        clipped_unigram_ll: clipped,
        unigram_heldout_ll: scoring.unigram,
        uniform_ll: -(scoring.held.len().max(1) as f64).ln(),
        scored: scoring.scored,
        utility: GAUSSIAN_UTILITY_MODEL,
    };
    ui.result(&out, || {
        println!(
            "settings: K = {}, T = {}, Gaussian mechanism, documents clipped to L2 norm C = {}, R = {} releases{}",
            out.topics,
            out.iterations,
            out.l2_clip,
            out.releases,
            if out.word_release {
                " (the first of the word counts)"
            } else {
                ""
            }
        );
        println!("releases: {}", out.releases_chosen);
        println!(
            "budget split: {} (signal n·C·√ρ/K = {:.0}, n treated as public; equal from {:.0})",
            out.budget_split,
            out.release_signal,
            topos_train::private::EQUAL_SPLIT_SIGNAL
        );
        println!(
            "noise: discrete Gaussian, {} (per count; ρ = {:.6} zCDP in all)",
            out.noise_summary, out.zcdp_rho
        );
        println!("{}", out.guarantee);
        match out.predicted_heldout_ll {
            Some(p) => println!(
                "expected held-out log-likelihood per token: {p:.3} ± {:.2} (its unigram margin simulated: {:.3}; the non-private unigram model {:.3}, uniform {:.3}; {} tokens)",
                out.band, out.simulated_unigram_ll, out.unigram_heldout_ll, out.uniform_ll, out.scored
            ),
            None => println!(
                "expected held-out log-likelihood per token: not predicted for these settings (calibrated for the default releases with a word release, T ≥ 10 and a signal below {:.0}, where the topics add less than the band); its unigram margin simulated: {:.3} (measured runs with a larger signal scored from about 0.03 below it to 0.3 and more above it), the non-private unigram model {:.3}",
                topos_train::private::GAUSSIAN_PREDICTION_MAX_SIGNAL,
                out.simulated_unigram_ll,
                out.unigram_heldout_ll
            ),
        }
        println!(
            "clipping alone (no noise) leaves the word counts at {:.3} against the unigram model's {:.3}: {}",
            out.clipped_unigram_ll,
            out.unigram_heldout_ll,
            // 0.02 nats: about a draw's spread of a private run's score (BENCHMARKS.md).
            if out.clipped_unigram_ll < out.unigram_heldout_ll - 0.02 {
                "a private model beats the unigram model here only through its topics"
            } else {
                "clipping costs the word counts little here"
            }
        );
        println!("how: {}", out.utility);
    })
}

const GAUSSIAN_UTILITY_MODEL: &str = "the model's unigram margin simulated once from this corpus's exact counts (√-weighted, clipped, the word release's noise and empirical Bayes, the model's row totals), plus an offset calibrated on measured runs for what the topics add (BENCHMARKS.md, \"Private training, issue 25: the budget where it buys the most\"); reads the corpus's exact counts: advice for the data holder, not private";

/// What a plan's prediction is scored on: held-out word counts (the training counts when the
/// corpus holds no held-out part), and the non-private unigram model's score on them.
struct Scoring {
    held: Vec<u64>,
    scored: &'static str,
    unigram: f64,
}

fn scoring(corpus: &Corpus, all: &[u64], beta: f64) -> Scoring {
    let (held, scored) =
        topos_train::private::scored_word_counts(corpus.heldout(), corpus.train(), all.len());
    let mass: Vec<f64> = all.iter().map(|&c| c as f64).collect();
    let unigram = topos_train::private::unigram_ll(&held, &mass, beta);
    Scoring {
        held,
        scored: scored.name(),
        unigram,
    }
}

/// The utility prediction of a plan (see [`Utility`]).
fn predict(
    corpus: &Corpus,
    counted: &[u64],
    all: &[u64],
    options: &topos_train::PrivateOptions,
    topics: u32,
    scale: f64,
) -> Result<Utility> {
    let v = counted.len();
    let beta = 0.01;
    let Scoring {
        held,
        scored,
        unigram,
    } = scoring(corpus, all, beta);
    // One simulated draw, fixed seed: the plan is deterministic (nothing here is released).
    let simulated = topos_train::private::simulated_unigram_ll(
        counted,
        &held,
        topics,
        scale,
        beta,
        &mut NoiseSource::insecure_seeded(1),
    )?;
    let calibrated = options.word_release && options.releases == 2;
    Ok(Utility {
        predicted_heldout_ll: calibrated
            .then_some(simulated + topos_train::private::PREDICTION_OFFSET),
        band: topos_train::private::PREDICTION_BAND,
        simulated_unigram_ll: simulated,
        unigram_heldout_ll: unigram,
        uniform_ll: -(v.max(1) as f64).ln(),
        scored,
        model: UTILITY_MODEL,
        reads: "the corpus's exact counts and held-out documents: advice for the data holder, not private (sharing it is not covered by any guarantee)",
    })
}
