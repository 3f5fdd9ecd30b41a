//! `topos train`: corpus file → model file, with progress, evaluation log and checkpoints.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use std::path::PathBuf;
use topos_model::Hyperparameters;
use topos_train::run::{LedgerStatus, Observer, Progress};
use topos_train::{DeviceChoice, DeviceOptions, RunConfig, Summary};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Corpus file made by `topos prepare`.
    pub corpus: PathBuf,
    /// Number of topics K (2 to 65,535).
    #[arg(short = 'k', long = "topics", default_value_t = 100)]
    pub topics: u32,
    /// Training iterations (the total, also when resuming).
    #[arg(long, default_value_t = 200)]
    pub iters: u32,
    /// Output model file (default: the corpus path with the extension .tmod).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    // The help is the registry's, so a new sampler needs no edit here.
    #[arg(long, value_parser = algo_names(), help = algo_help())]
    pub algo: Option<String>,
    // Each sampler's own settings (`--ezlda-g`, `--mh-steps`, `--counters`): one flag per
    // declaration in the sampler registry, so a new setting needs no edit here.
    #[command(flatten)]
    pub sampler_flags: SamplerFlags,
    /// Worker threads (0 = all cores). The model does not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Seed of the counter-based random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Document-topic prior α (default 50/K).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Topic-word prior β.
    #[arg(long, default_value_t = 0.01)]
    pub beta: f64,
    /// Learn the priors from the data every N iterations: an asymmetric document prior α (one
    /// α_k per topic, so common topics can be common and rare ones rare) and a symmetric β, by
    /// Minka's fixed-point iteration on the current topic counts, as Mallet's
    /// --optimize-interval does (Wallach, Mimno & McCallum 2009, "Rethinking LDA: why priors
    /// matter"). --alpha and --beta are then where they start. The model records the learned
    /// priors, and eval, infer and similar use them. CPU only for now.
    #[arg(long, value_name = "N", verbatim_doc_comment)]
    pub optimize_priors: Option<u32>,
    /// Iterations before the first --optimize-priors update, while the topics form.
    #[arg(long, value_name = "N", default_value_t = topos_train::priors::DEFAULT_BURN_IN, requires = "optimize_priors")]
    pub optimize_burn_in: u32,
    /// Topics nudged towards given words: a TOML file of [[topic]] tables (id = topic, words =
    /// [...], optional weight = pseudo-tokens per word, default the word's count in the corpus).
    /// Each seed adds that many tokens of the word to the topic at every iteration, i.e. a prior
    /// β + weight on that cell (tomotopy's set_word_prior, in whole pseudo-counts); the model
    /// keeps them, so eval and infer see the prior training used. CPU only for now.
    #[arg(long, value_name = "FILE", verbatim_doc_comment)]
    pub seed_words: Option<PathBuf>,
    /// Document partitions (cgs results depend on it; default: about one per 250K tokens, a
    /// multiple of 4, at most 64).
    #[arg(long, value_parser = at_least_one_partition)]
    pub partitions: Option<usize>,
    /// Compute the training log-likelihood every N iterations (0: only at the end).
    #[arg(long, default_value_t = 10)]
    pub eval_every: u32,
    /// Compute the held-out log-likelihood every N iterations (default: with --log, as
    /// --eval-every; otherwise only at the end).
    #[arg(long)]
    pub heldout_every: Option<u32>,
    /// Append one JSON line per evaluation (iteration, seconds, tokens/s, train and held-out LL).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Save a checkpoint every N iterations (0: never).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_every: u32,
    /// Checkpoint file (default: the output path with .ckpt appended).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Continue from the checkpoint.
    #[arg(long)]
    pub resume: bool,
    /// Also save the training documents' topic counts beside the model.
    #[arg(long)]
    pub doc_topics: bool,
    /// Differentially private training: the model file is (ε, δ)-differentially private with
    /// respect to adding or removing one training document (by default δ = 1e-6, not pure ε;
    /// --mechanism laplace or --delta 0 gives pure ε).
    ///
    /// The sampler reads whole documents; what each training document contributes to the
    /// released word-topic counts is bounded. By default (--mechanism gaussian) each of a
    /// document's tokens weighs 1/√n_w (n_w: its word's count in the document) and the whole
    /// document is scaled down to L2 norm C when it is longer (--l2-clip C, default 12), and
    /// every release gets exact discrete Gaussian noise of σ
    /// calibrated in zCDP to (ε, δ) (--delta, default 1e-6, less for > 10⁴ documents): on 20 Newsgroups (K = 20) this
    /// scored −9.27 at ε = 1 and −8.97 at ε = 10 against −9.72 and −9.05 for laplace.
    /// With --mechanism laplace (chosen by default when --delta is 0, --max-doc-tokens is
    /// given, or the corpus has a privacy budget) each training document contributes at most
    /// --max-doc-tokens L of its tokens (spread evenly over it) to the word-topic counts, which
    /// are released --releases R times with
    /// discrete Laplace noise (the first of the word counts, picking the vocabulary whose counts
    /// the later ones noise; see --no-word-release): R − 1 releases spread evenly over the iterations,
    /// which the ESCA sampler reads until the next one, and a last one after the final
    /// iteration, which is the model. Only releases cost privacy, not iterations. The noise
    /// scale is the smaller of basic composition's L·R/ε (pure ε) and what Rényi DP at --delta
    /// needs (it wins for many releases); the model records which. The guarantee is shown by
    /// topics, eval and infer. Without --max-doc-tokens the run chooses L privately (the lower
    /// quartile of the document lengths, exponential mechanism, ε/20 of the run's ε, recorded
    /// in the guarantee) and says so. Requires --epsilon and a sampler that supports it
    /// (`topos algos`; without --algo, the first that does); refuses
    /// --checkpoint-every, --resume and --doc-topics (they would write per-document private
    /// state). NOT reproducible: noise and the sampling key come from the operating system,
    /// and --seed is ignored. If the corpus has a privacy budget (`topos privacy budget`), ε is
    /// charged to it when the run starts to use the data (after every check that could refuse
    /// it), so a run that fails or is stopped later has spent it; an over-budget run is refused
    /// and charged nothing. Without one the run is not charged anywhere. Expect little utility at small ε (see BENCHMARKS.md); `topos privacy
    /// plan` predicts it before anything is spent.
    #[arg(long, verbatim_doc_comment)]
    pub private: bool,
    /// Total ε of a --private run.
    #[arg(long)]
    pub epsilon: Option<f64>,
    /// Per-document token cap L of a --private run (each document contributes at most L tokens, spread evenly over it, to every release). Default: chosen privately near the lower quartile of the document lengths, spending ε/20.
    #[arg(long)]
    pub max_doc_tokens: Option<u32>,
    /// Noisy releases R of a --private run, the final model included (2 to T + 1). More
    /// releases let the sampler learn from the data more often but split ε more thinly. The
    /// Gaussian mechanism's default is T/2 + 1 (a release every other iteration up to T = 50),
    /// kept between 11 and 26 and at most T + 1 (26 for T = 50: 0.14–0.39 nats/token better
    /// than 11 on synthetic corpora of 10M and 100M tokens, a tie on 20 Newsgroups); the
    /// Laplace mechanism's is 2 (1 for 0 iterations). The run prints its choice.
    #[arg(long)]
    pub releases: Option<u32>,
    /// Release the word-topic counts of every word in every release (V × K noisy cells), as
    /// before issue 25. By default (T ≥ 1) the first of the R releases is of the word counts
    /// (V noisy cells) and picks the vocabulary the later releases noise; the other words get
    /// the noisy word frequencies, shared among the topics. Same ε and the same kind of
    /// guarantee either way; the default is 0.1 to 0.5 nats/token better on 20 Newsgroups.
    #[arg(long)]
    pub no_word_release: bool,
    /// Noise mechanism of a --private run: gaussian (every document's word counts clipped to
    /// L2 norm --l2-clip, exact discrete Gaussian noise, accounted in zCDP and converted to
    /// (ε, δ): needs --delta > 0, default 1e-6) or laplace (documents capped at
    /// --max-doc-tokens tokens, discrete Laplace noise, pure ε unless Rényi accounting wins).
    /// Default: gaussian, unless --delta 0, --max-doc-tokens or a corpus privacy budget ask
    /// for laplace (the run says which and why).
    #[arg(long, value_enum)]
    pub mechanism: Option<Mechanism>,
    /// L2 clipping norm C of --mechanism gaussian: each token weighs 1/√n_w (n_w: its word's
    /// count in its document), and a document whose weights exceed L2 norm C (more than C²
    /// tokens) is scaled down to it (default 12).
    #[arg(long)]
    pub l2_clip: Option<u32>,
    /// δ of a --private run's (ε, δ) guarantee (default 1e-6, or the largest power of ten at
    /// most 1/(100·n) for n > 10⁴ training documents; 0 for pure ε, which selects
    /// --mechanism laplace). The default mechanism, gaussian, is always (ε, δ) with this δ;
    /// laplace uses it only when Rényi accounting needs less noise than basic composition
    /// (many releases), else its guarantee is pure ε. δ is checked against the number n of
    /// training documents (treated as public for this check): δ ≥ 1/n is refused, δ above
    /// 1/(100·n) is warned about. A corpus ledger charges δ only against a δ budget
    /// (`topos privacy budget --total-delta`); without one a run charged to it must be pure ε.
    #[arg(long)]
    pub delta: Option<f64>,
    /// Where to train: auto (a GPU when one is usable, the CPU otherwise; it says which), cpu,
    /// cuda (the first GPU) or cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: DeviceChoice,
    /// How workers sum their counts (see `topos algos`): auto (mpi when started by mpirun or
    /// srun with several processes, else local), local (one process), mpi.
    #[arg(long, default_value = "auto", value_parser = transport_names())]
    pub transport: String,
    /// Device memory a GPU run may use, e.g. 20GiB (default: all that is free). A corpus that
    /// does not fit beside the model is streamed through the GPU in chunks, and the word-topic
    /// counts are kept once instead of twice where that is what fits (the same model).
    #[arg(long, value_parser = topos_train::memory::parse_bytes)]
    pub gpu_memory: Option<u64>,
    /// Tokens per partition of a GPU-resident corpus (tuning; default 16M up to K = 2,048, one
    /// partition above).
    #[arg(long, hide = true)]
    pub gpu_partition_tokens: Option<u64>,
    /// No held-out evaluation at all, not even at the end (speed runs on large corpora, where the
    /// CPU evaluation takes longer than the GPU training).
    #[arg(long, hide = true)]
    pub skip_heldout: bool,
    /// No training log-likelihood either; `--log` still gets a line (times and tokens/s) every
    /// `--eval-every` iterations (speed runs at large K, where each evaluation copies the
    /// assignments back and recounts them on the CPU).
    #[arg(long, hide = true)]
    pub skip_train_ll: bool,
    /// Stream the corpus through the GPU even when it fits (tests the streaming path).
    #[arg(long, hide = true)]
    pub gpu_stream: bool,
}

/// The noise mechanism of a private run, as `--mechanism` names it (`train`, `privacy plan`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Discrete Laplace noise on contributions capped at --max-doc-tokens tokens.
    Laplace,
    /// Discrete Gaussian noise on contributions clipped in L2 norm (--l2-clip).
    Gaussian,
}

/// `--algo`'s help: every registered sampler's name and summary, and the defaults.
pub fn algo_help() -> String {
    let names: Vec<String> = topos_train::SAMPLERS
        .iter()
        .map(|s| format!("{}: {}", s.name(), s.summary()))
        .collect();
    format!(
        "Sampler (see `topos algos`). {}; auto: chosen by device, K and document length, and the reason printed. Default: {}; a --private run: {}",
        names.join("; "),
        topos_train::sampler::default_sampler().name(),
        topos_train::sampler::default_private_sampler().name()
    )
}

pub fn algo_names() -> clap::builder::PossibleValuesParser {
    let mut names = topos_train::sampler::sampler_names();
    names.push("auto");
    clap::builder::PossibleValuesParser::new(names)
}

fn transport_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        std::iter::once("auto")
            .chain(topos_train::TRANSPORTS.iter().map(|t| t.name()))
            .collect::<Vec<_>>(),
    )
}

impl Args {
    /// What `topos train CORPUS` gets: clap's declared defaults are the only copy of them.
    pub fn for_corpus(corpus: PathBuf) -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            args: Args,
        }
        Command::try_parse_from([std::ffi::OsString::from("train"), corpus.into_os_string()])
            .expect("train's defaults parse")
            .args
    }

    /// The sampler asked for: `--algo`, else the registry's default for a private run (the
    /// first that supports it) or an ordinary one.
    pub fn sampler(&self) -> Result<&'static dyn topos_train::Sampler> {
        Ok(self.sampler_choice()?.0)
    }

    /// [`Args::sampler`], and for `--algo auto` why it chose it ([`topos_train::sampler::auto_sampler`],
    /// from the device asked for, K and the corpus's mean document length).
    pub fn sampler_choice(
        &self,
    ) -> Result<(&'static dyn topos_train::Sampler, Option<&'static str>)> {
        Ok(match self.algo.as_deref() {
            Some("auto") => {
                let corpus = topos_corpus::Corpus::open(&self.corpus)?;
                let train = corpus.train();
                let mean = train.num_tokens() as f64 / (train.len().max(1) as f64);
                let c = topos_train::sampler::auto_sampler(
                    self.private,
                    self.device,
                    self.topics,
                    mean,
                );
                (c.sampler, Some(c.reason))
            }
            Some(a) => (topos_train::sampler_named(a)?, None),
            None if self.private => (topos_train::sampler::default_private_sampler(), None),
            None => (topos_train::sampler::default_sampler(), None),
        })
    }

    /// The per-sampler settings given (`--ezlda-g`, `--mh-steps`, `--counters`); which sampler
    /// they go with is checked by [`topos_train::SamplerSettings::check_for`].
    pub fn sampler_settings(&self) -> topos_train::SamplerSettings {
        self.sampler_flags.0.clone()
    }

    pub fn output_path(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| self.corpus.with_extension("tmod"))
    }

    /// The private settings, checked (one line each for what a private run cannot do), and
    /// what was chosen for the user and why (lines for stderr). Without --max-doc-tokens the
    /// Laplace mechanism's cap is left for the run to choose (it **spends** ε/20 of the run's ε
    /// on it, [`topos_train::private::choose_cap`], after charging the budget); the guarantee
    /// the model records includes it. Nothing here reads the documents.
    fn private_options(&self) -> Result<Option<(topos_train::PrivateOptions, Vec<String>)>> {
        if !self.private {
            if self.epsilon.is_some()
                || self.max_doc_tokens.is_some()
                || self.releases.is_some()
                || self.delta.is_some()
                || self.mechanism.is_some()
                || self.l2_clip.is_some()
            {
                bail!("--epsilon, --max-doc-tokens, --releases, --delta, --mechanism and --l2-clip belong to --private training; add --private");
            }
            return Ok(None);
        }
        let Some(eps) = self.epsilon else {
            bail!("--private needs --epsilon (the total privacy budget of the run, e.g. 1.0)");
        };
        let epsilon = topos_privacy::Epsilon::new(eps).map_err(|_| {
            anyhow::anyhow!("--epsilon must be a positive finite number, got {eps}")
        })?;
        // The number of training documents, treated as public (as the run's check of δ treats
        // it): the default δ and the Gaussian budget split follow it.
        let documents = topos_corpus::Corpus::open_share(&self.corpus)
            .with_context(|| format!("cannot open the corpus {}", self.corpus.display()))?
            .train()
            .len() as u64;
        let delta = match self.delta {
            Some(d) => d,
            // 10⁻⁶, or less for more than 10⁴ documents.
            None => topos_train::private::default_delta(documents),
        };
        if !(0.0..1.0).contains(&delta) {
            bail!("--delta must be in [0, 1), got {delta}");
        }
        let mut notes = Vec::new();
        if self.seed != 1 {
            notes.push(format!(
                "--seed {} is ignored: a private run draws its noise and its sampling key from the operating system and records neither",
                self.seed
            ));
        }
        // The default mechanism (issue 25): gaussian, which scored better on 20 Newsgroups at
        // ε = 1 and 10 (BENCHMARKS.md), unless the settings ask for pure ε or for Laplace's
        // token cap: --delta 0, --max-doc-tokens, or a corpus privacy budget (ledgers track
        // pure ε unless given a δ budget).
        let gaussian = match self.mechanism {
            Some(m) => m == Mechanism::Gaussian,
            None => {
                let ledger = topos_privacy::ledger::has_ledger(&self.corpus);
                let why_laplace = if self.delta == Some(0.0) {
                    Some("--delta 0 asks for pure ε")
                } else if self.max_doc_tokens.is_some() {
                    Some("--max-doc-tokens is the Laplace mechanism's cap")
                } else if ledger {
                    Some("the corpus has a privacy budget, which tracks pure ε by default")
                } else {
                    None
                };
                match why_laplace {
                    Some(why) => {
                        notes.push(format!("--mechanism not given: laplace ({why})"));
                        false
                    }
                    None => {
                        notes.push(format!(
                            "--mechanism not given: gaussian, (ε, δ) with δ = {delta:e} (better than laplace on 20 Newsgroups at ε = 1 and 10, BENCHMARKS.md; --mechanism laplace for pure ε)"
                        ));
                        true
                    }
                }
            }
        };
        if gaussian && delta == 0.0 {
            bail!("--mechanism gaussian is (ε, δ)-private: it needs --delta > 0 (default 1e-6), not 0");
        }
        if gaussian && self.max_doc_tokens.is_some() {
            bail!("--max-doc-tokens belongs to --mechanism laplace; the Gaussian mechanism clips each document in L2 norm (--l2-clip)");
        }
        if !gaussian && self.l2_clip.is_some() {
            bail!("--l2-clip belongs to --mechanism gaussian");
        }
        if self.l2_clip == Some(0) {
            bail!("--l2-clip must be at least 1, got 0");
        }
        let releases = self.releases.unwrap_or_else(|| {
            topos_train::private::DEFAULT_RELEASES.min(self.iters.saturating_add(1))
        });
        if gaussian {
            let clip = self
                .l2_clip
                .unwrap_or(topos_train::private::DEFAULT_L2_CLIP);
            let (split, signal) = topos_train::private::gaussian_split(
                epsilon.get(),
                delta,
                documents,
                self.topics,
                clip,
            )?;
            notes.push(format!(
                "budget split: {} (signal n·C·√ρ/K = {signal:.0} {} {:.0}: {}; BENCHMARKS.md, issue 25)",
                split.name(),
                if signal >= topos_train::private::EQUAL_SPLIT_SIGNAL { "≥" } else { "<" },
                topos_train::private::EQUAL_SPLIT_SIGNAL,
                match split {
                    topos_train::BudgetSplit::Equal => "every release the same share of ρ",
                    topos_train::BudgetSplit::Focused => "most of ρ to the word counts and the model",
                }
            ));
            let releases = match self.releases {
                Some(r) => r,
                None => {
                    let r = topos_train::private::gaussian_releases(self.iters);
                    notes.push(format!(
                        "--releases not given: R = {r} for the Gaussian mechanism ({}; BENCHMARKS.md, issue 25)",
                        self.what_is_released(r)
                    ));
                    r
                }
            };
            return Ok(Some((
                topos_train::PrivateOptions {
                    epsilon,
                    delta,
                    max_doc_tokens: 0,
                    iterations: self.iters,
                    releases,
                    word_release: !self.no_word_release && self.iters > 0,
                    cap_epsilon: 0.0,
                    mechanism: topos_train::PrivateMechanism::Gaussian {
                        l2_clip: clip,
                        split,
                    },
                },
                notes,
            )));
        }
        // Without --max-doc-tokens the run chooses L privately with ε/20, once its budget is
        // charged (`PrivateOptions::cap_to_choose`): nothing of the data is read here.
        let (cap, cap_epsilon) = match self.max_doc_tokens {
            Some(0) => bail!("--max-doc-tokens must be at least 1, got 0"),
            Some(l) => (l, 0.0),
            None => (0, topos_train::private::CAP_EPSILON_SHARE * eps),
        };
        if self.releases.is_none() {
            notes.push(format!(
                "--releases not given: R = {releases} ({}; two releases were best at every ε ≤ 100 measured, BENCHMARKS.md)",
                self.what_is_released(releases)
            ));
        }
        Ok(Some((
            topos_train::PrivateOptions {
                epsilon,
                delta,
                max_doc_tokens: cap,
                iterations: self.iters,
                releases,
                word_release: !self.no_word_release && self.iters > 0,
                cap_epsilon,
                mechanism: topos_train::PrivateMechanism::Laplace,
            },
            notes,
        )))
    }

    /// What R releases of a private run are, in words: the word counts (when the run releases
    /// them first: T ≥ 1 and not --no-word-release), the releases the sampler reads, the model.
    fn what_is_released(&self, releases: u32) -> String {
        let words = !self.no_word_release && self.iters > 0;
        let read = releases.saturating_sub(1 + u32::from(words));
        let mut parts = Vec::new();
        if words {
            parts.push("the word counts".to_string());
        }
        if read > 0 {
            parts.push(format!("{read} the sampler reads"));
        }
        parts.push("the model".to_string());
        parts.join(", ")
    }

    /// The run these arguments ask for.
    pub fn config(&self) -> Result<RunConfig> {
        Ok(self.config_and_notes()?.0)
    }

    /// The run these arguments ask for, and what was chosen for the user (lines for stderr).
    pub fn config_and_notes(&self) -> Result<(RunConfig, Vec<String>)> {
        let sampler = self.sampler()?;
        let settings = self.sampler_settings();
        settings
            .check_for(sampler)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let hyper = Hyperparameters::new(self.topics, self.alpha, Some(self.beta))?;
        let mut c = RunConfig::new(self.corpus.clone(), self.output_path(), hyper);
        c.sampler = sampler;
        c.sampler_settings = settings;
        c.iterations = self.iters;
        c.seed = self.seed;
        c.threads = self.threads;
        c.partitions = self.partitions;
        c.device = self.device;
        c.device_options = DeviceOptions {
            memory_budget: self.gpu_memory,
            partition_tokens: self.gpu_partition_tokens,
            force_streaming: self.gpu_stream,
            ..DeviceOptions::default()
        };
        c.transport =
            topos_train::transport::choose(&self.transport).map_err(anyhow::Error::msg)?;
        c.eval_every = self.eval_every;
        c.heldout_every = self.heldout_every;
        c.log = self.log.clone();
        c.checkpoint_every = self.checkpoint_every;
        c.checkpoint = self.checkpoint.clone();
        c.resume = self.resume;
        c.doc_topics = self.doc_topics;
        let (private, notes) = match self.private_options()? {
            Some((p, n)) => (Some(p), n),
            None => (None, Vec::new()),
        };
        c.private = private;
        c.skip_heldout = self.skip_heldout;
        c.skip_train_ll = self.skip_train_ll;
        if let Some(path) = &self.seed_words {
            // The run checks its outputs against its corpus only: the seed-word file is read
            // here, and a log appended to it would make it unreadable.
            if let Some(log) = &self.log {
                super::refuse_writing_over("--log", log, &[("the --seed-words file", Some(path))])?;
            }
            // β is learned from every count the run holds, and seeds are not data: learning it
            // from their pseudo-counts would bias it (an update's old counts are data, and may).
            anyhow::ensure!(
                self.optimize_priors.is_none(),
                "--seed-words cannot be combined with --optimize-priors yet (the seeds' pseudo-counts would bias the learned beta); drop one of them"
            );
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the seed words {}", path.display()))?;
            let seeds = topos_train::seeds::SeedWords::parse(&text)
                .with_context(|| path.display().to_string())?;
            let corpus = std::sync::Arc::new(topos_corpus::Corpus::open(&self.corpus)?);
            let mut counts = vec![0u64; corpus.vocab().len()];
            for &w in corpus.train().tokens() {
                counts[w as usize] += 1;
            }
            let fixed = seeds
                .fixed_counts(corpus.vocab(), self.topics, &counts)
                .with_context(|| path.display().to_string())?;
            c.corpus = topos_train::run::CorpusSource::Loaded {
                corpus,
                path: Some(self.corpus.clone()),
            };
            c.fixed_counts = Some(std::sync::Arc::new(fixed));
        }
        c.optimize_priors = match self.optimize_priors {
            Some(0) => anyhow::bail!(
                "--optimize-priors needs an interval of at least 1 iteration (or leave it out to keep the priors fixed)"
            ),
            Some(every) => Some(topos_train::priors::PriorSchedule {
                every,
                burn_in: self.optimize_burn_in,
            }),
            None => None,
        };
        Ok((c, notes))
    }
}

/// The terminal's view of a run: status lines and a progress bar on stderr (none with
/// `--quiet`), with throughput, ETA and the latest log-likelihoods.
pub struct TerminalObserver {
    ui: Ui,
    bar: Option<ProgressBar>,
    algorithm: &'static str,
}

impl TerminalObserver {
    pub fn new(ui: Ui, algorithm: &'static str) -> Self {
        Self {
            ui,
            bar: None,
            algorithm,
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Observer for TerminalObserver {
    fn info(&mut self, message: &str) {
        match &self.bar {
            Some(b) if !self.ui.quiet => b.println(message),
            _ => self.ui.info(message),
        }
    }
    fn warn(&mut self, message: &str) {
        match &self.bar {
            Some(b) if !self.ui.quiet => b.println(message),
            _ => eprintln!("{message}"),
        }
    }
    fn progress(&mut self, p: &Progress) {
        let ui = self.ui;
        let algorithm = self.algorithm;
        let bar = self.bar.get_or_insert_with(|| {
            let b = ui.bar(
                u64::from(p.iterations),
                "{prefix} [{bar:30}] {pos}/{len} iterations {msg}",
            );
            b.set_prefix(algorithm);
            b
        });
        let mut msg = format!("{:.2}M tok/s", p.tokens_per_second / 1e6);
        if let Some(l) = p.train_ll {
            msg.push_str(&format!(", LL {l:.4}"));
        }
        if let Some(l) = p.heldout_ll {
            msg.push_str(&format!(", held-out {l:.4}"));
        }
        if let Some(c) = p.skipped {
            // ezlda: tokens settled in the max-topic branch (no final sampling), and of them
            // those settled before their document branch was built.
            msg.push_str(&format!(
                ", skipped final {:.0}% / S' {:.0}%",
                100.0 * c.skipped_final_fraction(),
                100.0 * c.skipped_construction_fraction()
            ));
        }
        msg.push_str(&format!(
            " ({:.0} s, ETA {:.0} s)",
            p.elapsed_seconds, p.eta_seconds
        ));
        bar.set_message(msg);
        bar.set_position(u64::from(p.iteration));
    }
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let summary = train(&args, ui)?;
    if summary.rank > 0 {
        // One of several processes: the first reports.
        return Ok(());
    }
    ui.result(&summary, || print_summary(&summary))
}

/// Runs the training `args` ask for; shared with `demo`.
pub fn train(args: &Args, ui: Ui) -> Result<Summary> {
    let (config, notes) = args.config_and_notes()?;
    if let (_, Some(reason)) = args.sampler_choice()? {
        ui.info(format!("--algo auto: {} ({reason})", config.sampler.name()));
    }
    for n in notes {
        ui.info(n);
    }
    train_config(config, ui)
}

/// Runs `config` with the terminal's observer; shared with `update`.
pub fn train_config(config: RunConfig, ui: Ui) -> Result<Summary> {
    let mut observer = TerminalObserver::new(ui, config.sampler.name());
    let result =
        topos_train::Run::start(config, &mut observer).and_then(|r| r.run_to_end(&mut observer));
    observer.finish();
    Ok(result?)
}

pub fn print_summary(summary: &Summary) {
    let settings: String = summary
        .sampler_settings
        .iter()
        .map(|(k, v)| match topos_train::Setting::from_key(k) {
            Some(s) => format!(" ({} {})", s.flag(), s.show(*v)),
            None => format!(" ({k} {v})"),
        })
        .collect();
    println!(
        "wrote {} ({} topics, {} iteration{} of {}{settings} in {:.1} s, {:.2}M tokens/s)",
        summary.model,
        summary.topics,
        summary.iterations,
        if summary.iterations == 1 { "" } else { "s" },
        summary.algorithm,
        summary.seconds,
        summary.tokens_per_second / 1e6
    );
    let mut parts = Vec::new();
    if let Some(ll) = summary.train_ll {
        parts.push(format!("training log-likelihood per token {ll:.4}"));
    }
    if let (Some(ll), Some(p)) = (summary.heldout_ll, summary.heldout_perplexity) {
        parts.push(format!("held-out {ll:.4} (perplexity {p:.1})"));
    }
    if !parts.is_empty() {
        println!("{}", parts.join("; "));
    }
    if let Some(g) = &summary.privacy {
        println!("{}", topos_model::privacy_line(Some(g)));
        if let Some(b) = summary.noise_scale {
            if g.mechanism == topos_privacy::Mechanism::DiscreteGaussian {
                let summary = summary.noise_summary.as_deref().unwrap_or_default();
                println!(
                    "noise: discrete Gaussian, {summary} (per count; the model's σ is {b:.4})"
                );
            } else {
                println!("noise: discrete Laplace of scale {b:.4} added to every released count of every release");
            }
        }
        match &summary.ledger {
            Some(LedgerStatus {
                path: Some(p),
                spent: Some(s),
                remaining: Some(r),
                total: Some(t),
                spent_delta,
                total_delta,
                ..
            }) => println!(
                "charged to {p}: spent ε = {s} of {t}, remaining ε = {r}{}",
                match (spent_delta, total_delta) {
                    (Some(sd), Some(td)) => format!(
                        "; spent δ = {} of {td:e}",
                        if *sd == 0.0 { "0".to_string() } else { format!("{sd:e}") }
                    ),
                    _ => String::new(),
                }
            ),
            _ => println!("no privacy budget is set for this corpus: nothing was charged (set one with `topos privacy budget`)"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn defaults_parse() {
        let a = super::Args::for_corpus("x.tcorp".into());
        assert_eq!(a.sampler().unwrap().name(), "cgs");
        assert_eq!(a.transport, "auto");
    }
}

/// `--partitions`: a whole number from 1 (0 is no partition at all, not "the default": that is
/// leaving the flag out).
fn at_least_one_partition(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "--partitions must be a whole number from 1, got {text} (leave it out for the default)"
        )),
    }
}

/// The flags of every sampler setting the registry declares ([`topos_train::Setting::all`]),
/// each with its declaration's help, parsed and checked by it.
#[derive(Clone, Debug, Default)]
pub struct SamplerFlags(pub topos_train::SamplerSettings);

impl clap::FromArgMatches for SamplerFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut settings = topos_train::SamplerSettings::default();
        for setting in topos_train::Setting::all() {
            if let Some(text) = m.get_one::<String>(setting.key) {
                setting
                    .parse(text)
                    .and_then(|v| settings.set(setting, v))
                    .map_err(|e| {
                        clap::Error::raw(clap::error::ErrorKind::ValueValidation, e.to_string())
                    })?;
            }
        }
        Ok(SamplerFlags(settings))
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for SamplerFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.args(topos_train::Setting::all().into_iter().map(|s| {
            clap::Arg::new(s.key)
                .long(s.flag.trim_start_matches("--"))
                .value_name(s.value_name)
                .help(s.help())
        }))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}
