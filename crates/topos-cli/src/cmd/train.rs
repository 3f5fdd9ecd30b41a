//! `topos train`: corpus file → model file, with progress, evaluation log and checkpoints.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use topos_corpus::Corpus;
use topos_gpu::{DeviceSpec, GpuOptions, GpuSession};
use topos_model::Hyperparameters;
use topos_train::memory::{self, Bytes};
use topos_train::{Algorithm, Checkpoint, Session, TrainOptions, Trainer};

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
    /// Sampler: cgs (sparse collapsed Gibbs, the reference; the default) or esca (SaberLDA's
    /// ESCA: faster, but its model is worse on short documents). A --private run defaults to
    /// esca, the only sampler private training supports.
    #[arg(long, value_parser = ["esca", "cgs"])]
    pub algo: Option<String>,
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
    /// Document partitions (cgs results depend on it; default: about one per 250K tokens, a
    /// multiple of 4, at most 64).
    #[arg(long)]
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
    /// respect to adding or removing one training document.
    ///
    /// Every training document is cut to its first --max-doc-tokens L tokens (in memory; the
    /// corpus file is untouched). The word-topic counts are released --releases R times with
    /// discrete Laplace noise on every count: R − 1 releases spread evenly over the iterations,
    /// which the ESCA sampler reads until the next one, and a last one after the final
    /// iteration, which is the model. Only releases cost privacy, not iterations. The noise
    /// scale is the smaller of basic composition's L·R/ε (pure ε) and what Rényi DP at --delta
    /// needs (it wins for many releases); the model records which. The guarantee is shown by
    /// topics, eval and infer. Requires --epsilon, --max-doc-tokens and --algo esca; refuses
    /// --checkpoint-every, --resume and --doc-topics (they would write per-document private
    /// state). NOT reproducible: noise and the sampling key come from the operating system,
    /// and --seed is ignored. If the corpus has a privacy budget (`topos privacy budget`), ε is
    /// charged to it first and an over-budget run is refused; without one the run is not
    /// charged anywhere. Expect little utility at small ε (see BENCHMARKS.md).
    #[arg(long, verbatim_doc_comment)]
    pub private: bool,
    /// Total ε of a --private run.
    #[arg(long)]
    pub epsilon: Option<f64>,
    /// Per-document token cap L of a --private run (documents keep their first L tokens).
    #[arg(long)]
    pub max_doc_tokens: Option<u32>,
    /// Noisy releases R of a --private run, the final model included (2 to T + 1; default 2,
    /// or 1 for 0 iterations). More releases let the sampler learn from the data more often
    /// but split ε more thinly; on 20 Newsgroups they paid off only at ε ≥ 1,000.
    #[arg(long)]
    pub releases: Option<u32>,
    /// δ a --private run may use when Rényi accounting needs less noise than basic
    /// composition (default 1e-6; 0 for pure ε). A corpus ledger tracks pure ε only, so a run
    /// charged to one must end up pure ε.
    #[arg(long)]
    pub delta: Option<f64>,
    /// Where to train: auto (a GPU when one is usable, the CPU otherwise; it says which), cpu,
    /// cuda (the first GPU) or cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: topos_gpu::DeviceSpec,
    /// Device memory a GPU run may use, e.g. 20GiB (default: all that is free). A corpus that
    /// does not fit beside the model is streamed through the GPU in chunks.
    #[arg(long, value_parser = parse_bytes)]
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

/// Parses a byte size: a number with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB or
/// T/TB/TiB (all binary multiples).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size; write e.g. 20GiB, 512MiB or 1073741824"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?}; use B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    let bytes = value * (1u64 << shift) as f64;
    if !(1.0..1.8e19).contains(&bytes) {
        return Err(format!("{s:?} is not a usable size"));
    }
    Ok(bytes as u64)
}

/// One evaluation point, as written to `--log`.
#[derive(Serialize, Clone, Debug)]
pub struct LogLine {
    pub iteration: u32,
    /// Cumulative training seconds (sampling and count rebuild; evaluation excluded).
    pub seconds: f64,
    pub tokens_per_second: f64,
    pub train_ll: Option<f64>,
    pub heldout_ll: Option<f64>,
}

/// What `train` reports at the end.
#[derive(Serialize, Debug)]
pub struct Summary {
    pub model: String,
    pub algorithm: String,
    pub topics: u32,
    pub alpha: f64,
    pub beta: f64,
    pub iterations: u32,
    pub threads: usize,
    pub partitions: usize,
    pub train_tokens: u64,
    pub seconds: f64,
    pub tokens_per_second: f64,
    /// Training log-likelihood per token (not computed for a private run: it reads the true
    /// assignments).
    pub train_ll: Option<f64>,
    pub heldout_ll: Option<f64>,
    pub heldout_perplexity: Option<f64>,
    pub estimated_memory_bytes: u64,
    /// The guarantee of a `--private` run (`null` otherwise).
    pub privacy: Option<topos_model::Guarantee>,
    /// Noise scale per count of every release of a `--private` run (basic composition: L·R/ε).
    pub noise_scale: Option<f64>,
    /// How a `--private` run was accounted against the corpus's privacy budget.
    pub ledger: Option<LedgerStatus>,
    /// Where the run executed ("cpu (16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)").
    pub device: String,
    /// The GPU memory plan (`null` on the CPU).
    pub gpu_plan: Option<topos_gpu::Plan>,
}

/// Where a private run's ε was charged.
#[derive(Serialize, Debug, Clone)]
pub struct LedgerStatus {
    /// The ledger file, or `null` when the corpus has no budget (nothing was charged).
    pub path: Option<String>,
    pub charged: bool,
    pub spent: Option<f64>,
    pub remaining: Option<f64>,
    pub total: Option<f64>,
}

/// The checked settings of a private run.
struct PrivateRun {
    options: topos_train::PrivateOptions,
}

/// Refuses what a private run cannot do, each with one line.
fn check_private(args: &Args, algorithm: Algorithm) -> Result<Option<PrivateRun>> {
    if !args.private {
        if args.epsilon.is_some()
            || args.max_doc_tokens.is_some()
            || args.releases.is_some()
            || args.delta.is_some()
        {
            bail!("--epsilon, --max-doc-tokens, --releases and --delta belong to --private training; add --private");
        }
        return Ok(None);
    }
    if algorithm != Algorithm::Esca {
        bail!("--private needs --algo esca: cgs changes counts token by token inside a partition, so documents influence each other without a noisy release");
    }
    let Some(eps) = args.epsilon else {
        bail!("--private needs --epsilon (the total privacy budget of the run, e.g. 1.0)");
    };
    let epsilon = topos_privacy::Epsilon::new(eps)
        .map_err(|_| anyhow::anyhow!("--epsilon must be a positive finite number, got {eps}"))?;
    let cap = match args.max_doc_tokens {
        None => bail!("--private needs --max-doc-tokens (the per-document token cap L, e.g. 500)"),
        Some(0) => bail!("--max-doc-tokens must be at least 1, got 0"),
        Some(l) => l,
    };
    if args.checkpoint_every > 0 || args.resume {
        bail!("--private cannot write or resume checkpoints: they hold every token's true topic, which is private data");
    }
    if args.doc_topics {
        bail!("--private cannot write --doc-topics: the training documents' topic counts are private data");
    }
    let releases = args.releases.unwrap_or_else(|| {
        topos_train::private::DEFAULT_RELEASES.min(args.iters.saturating_add(1))
    });
    let delta = args.delta.unwrap_or(topos_train::private::DEFAULT_DELTA);
    if !(0.0..1.0).contains(&delta) {
        bail!("--delta must be in [0, 1), got {delta}");
    }
    let options = topos_train::PrivateOptions {
        epsilon,
        delta,
        max_doc_tokens: cap,
        iterations: args.iters,
        releases,
    };
    // Calibrate now, so bad settings or an ε the exact sampler cannot represent are refused
    // before anything.
    topos_train::Releases::new(options, topos_privacy::NoiseSource::insecure_seeded(0))?;
    Ok(Some(PrivateRun { options }))
}

/// Charges a private run to the corpus's ledger if it has one (refusing an over-budget run);
/// without a ledger nothing is charged. A run calibrated by Rényi DP is (ε, δ)-DP: it spends
/// both ε and δ (basic composition), and is refused when the ledger's δ budget cannot pay.
fn charge_ledger(args: &Args, corpus: &Corpus, run: &PrivateRun) -> Result<LedgerStatus> {
    let path = topos_privacy::ledger::ledger_path(&args.corpus);
    if !path.exists() {
        return Ok(LedgerStatus {
            path: None,
            charged: false,
            spent: None,
            remaining: None,
            total: None,
        });
    }
    let o = &run.options;
    let calibrated =
        topos_train::Releases::new(*o, topos_privacy::NoiseSource::insecure_seeded(0))?;
    let delta = calibrated.guarantee().delta.unwrap_or(0.0);
    let query = format!(
        "train --private -k {} --iters {} --releases {} --epsilon {} --max-doc-tokens {}",
        args.topics,
        o.iterations,
        o.releases,
        o.epsilon.get(),
        o.max_doc_tokens
    );
    let ledger = topos_privacy::Ledger::charge_approx(
        &args.corpus,
        corpus.checksum(),
        &query,
        o.epsilon,
        delta,
    )?;
    Ok(LedgerStatus {
        path: Some(ledger.path().display().to_string()),
        charged: true,
        spent: Some(ledger.spent()),
        remaining: Some(ledger.remaining()),
        total: Some(ledger.total()),
    })
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

    /// The sampler asked for: `--algo`, else `esca` for a private run (the only one it
    /// supports), else `cgs`.
    pub fn algo_name(&self) -> &str {
        match (&self.algo, self.private) {
            (Some(a), _) => a,
            (None, true) => "esca",
            (None, false) => "cgs",
        }
    }

    pub fn output_path(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| self.corpus.with_extension("tmod"))
    }

    pub fn checkpoint_path(&self) -> PathBuf {
        self.checkpoint.clone().unwrap_or_else(|| {
            let mut p = self.output_path().into_os_string();
            p.push(".ckpt");
            PathBuf::from(p)
        })
    }
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let corpus = Corpus::open(&args.corpus)?;
    let summary = train_corpus(&corpus, &args, ui)?;
    ui.result(&summary, || {
        println!(
            "wrote {} ({} topics, {} iterations of {} in {:.1} s, {:.2}M tokens/s)",
            summary.model,
            summary.topics,
            summary.iterations,
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
                println!("noise: discrete Laplace of scale {b:.4} added to every word-topic count of every release");
            }
            match &summary.ledger {
                Some(LedgerStatus {
                    path: Some(p),
                    spent: Some(s),
                    remaining: Some(r),
                    total: Some(t),
                    ..
                }) => println!("charged to {p}: spent ε = {s} of {t}, remaining ε = {r}"),
                _ => println!("no privacy budget is set for this corpus: nothing was charged (set one with `topos privacy budget`)"),
            }
        }
    })
}

/// The session `--device` asks for. `auto` takes a GPU when one answers and the plan fits, and
/// otherwise says why and trains on the CPU; `cuda` fails with the GPU's reason.
fn open_session<'a>(
    args: &Args,
    docs: topos_corpus::Docs<'a>,
    num_words: usize,
    opts: TrainOptions,
    checkpoint: Option<Checkpoint>,
    ui: Ui,
) -> Result<(Box<dyn Session + 'a>, Option<topos_gpu::Plan>)> {
    let cpu =
        |checkpoint: Option<Checkpoint>, opts: TrainOptions| -> Result<Box<dyn Session + 'a>> {
            Ok(match checkpoint {
                Some(c) => Box::new(Trainer::resume(docs, num_words, opts, c)?),
                None => Box::new(Trainer::new(docs, num_words, opts)?),
            })
        };
    let gpu_options = |ordinal| GpuOptions {
        ordinal,
        memory_budget: args.gpu_memory,
        partition_tokens: args.gpu_partition_tokens,
        force_streaming: args.gpu_stream,
        word_topics: None,
        force_wide_rows: false,
    };
    let gpu = |ordinal, checkpoint, opts| {
        GpuSession::new(docs, num_words, opts, gpu_options(ordinal), checkpoint).map(|s| {
            ui.info(format!("GPU plan: {}", s.plan()));
            let plan = s.plan().clone();
            (Box::new(s) as Box<dyn Session + 'a>, Some(plan))
        })
    };
    match args.device {
        DeviceSpec::Cpu => Ok((cpu(checkpoint, opts)?, None)),
        DeviceSpec::Cuda(ordinal) => Ok(gpu(ordinal, checkpoint, opts)?),
        DeviceSpec::Auto => {
            let usable = topos_gpu::device::device_count().is_ok_and(|n| n > 0)
                && topos_gpu::device::nvrtc_present();
            if !usable {
                return Ok((cpu(checkpoint, opts)?, None));
            }
            match gpu(None, checkpoint.clone(), opts.clone()) {
                Ok(s) => Ok(s),
                Err(e) => {
                    ui.info(format!("not using the GPU: {e}"));
                    Ok((cpu(checkpoint, opts)?, None))
                }
            }
        }
    }
}

/// Trains on `corpus` as `args` say and writes the model; shared with `demo`.
pub fn train_corpus(corpus: &Corpus, args: &Args, ui: Ui) -> Result<Summary> {
    let algorithm = Algorithm::from_name(args.algo_name()).context("unknown algorithm")?;
    let hyper = Hyperparameters::new(args.topics, args.alpha, Some(args.beta))?;
    let private = check_private(args, algorithm)?;
    // A private run trains on the documents cut to the cap (built in memory).
    let capped = private
        .as_ref()
        .map(|p| topos_train::private::cap_documents(corpus.train(), p.options.max_doc_tokens));
    let docs = capped.as_ref().map_or_else(|| corpus.train(), |c| c.view());
    let output = args.output_path();
    let threads = if args.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.threads
    };

    let ckpt_path = args.checkpoint_path();
    let checkpoint = if args.resume {
        Some(Checkpoint::read(&ckpt_path).context("cannot resume (no usable checkpoint)")?)
    } else {
        None
    };

    // Memory first: refuse rather than thrash.
    let estimate = memory::estimate(
        algorithm,
        docs.num_tokens(),
        docs.len() as u64,
        corpus.vocab().len() as u64,
        u64::from(args.topics),
        threads as u64,
    );
    ui.info(format!(
        "corpus: {} documents, {} tokens, {} words; K = {}, alpha = {}, beta = {}; {} on {} threads",
        docs.len(),
        docs.num_tokens(),
        corpus.vocab().len(),
        hyper.num_topics,
        hyper.alpha,
        hyper.beta,
        algorithm.name(),
        threads
    ));
    // A private run also holds each release: a dense V × K copy to add noise to (4 bytes a
    // cell) and the noisy counts as sparse rows (6 bytes a non-zero; noise fills most cells).
    let private_bytes = if private.is_some() {
        corpus.vocab().len() as u64 * u64::from(args.topics) * 10
    } else {
        0
    };
    let needed = estimate.total() + private_bytes;
    ui.info(format!(
        "memory needed: about {} ({}{})",
        Bytes(needed),
        estimate.describe(),
        if private_bytes > 0 {
            format!(", noisy releases {}", Bytes(private_bytes))
        } else {
            String::new()
        }
    ));
    if let Some(avail) = topos_model::mem::available_memory() {
        if needed > avail {
            bail!(
                "this run needs about {} but only {} is available; use fewer topics (-k) or a smaller corpus",
                Bytes(needed),
                Bytes(avail)
            );
        }
    }

    let opts = TrainOptions {
        algorithm,
        hyper,
        seed: args.seed,
        threads,
        partitions: args.partitions,
        corpus_checksum: corpus.checksum(),
    };
    let ledger = match &private {
        Some(p) => Some(charge_ledger(args, corpus, p)?),
        None => None,
    };
    let mut noise_scale = None;
    let mut gpu_plan = None;
    let mut trainer: Box<dyn Session + '_> = if let Some(p) = &private {
        if matches!(args.device, DeviceSpec::Cuda(_)) {
            bail!("--private training runs on the CPU only (its noise must come from the CPU's secure generator); use --device cpu or auto");
        }
        let source = topos_privacy::NoiseSource::from_os()?;
        let o = &p.options;
        let t = Trainer::new_private(docs, corpus.vocab().len(), opts, p.options, source)?;
        let r = t.privacy().expect("a private trainer");
        let accountant = match r.calibration().chosen {
            topos_privacy::rdp::Chosen::Basic => "basic composition, pure ε".to_string(),
            topos_privacy::rdp::Chosen::Renyi { order } => {
                format!("Rényi DP at order {order:.3}, δ = {:e}", o.delta)
            }
        };
        ui.info(format!(
            "private: ε = {} over {} releases ({accountant}), documents capped at {} tokens, noise scale {:.3} per count (basic composition would need {:.3}); {}",
            o.epsilon.get(),
            o.releases(),
            o.max_doc_tokens,
            r.scale(),
            f64::from(o.max_doc_tokens) * o.releases() as f64 / o.epsilon.get(),
            match &ledger {
                Some(LedgerStatus { path: Some(path), .. }) => format!("charged to {path}"),
                _ => "no privacy budget set for this corpus, nothing charged".to_string(),
            }
        ));
        noise_scale = Some(r.scale());
        Box::new(t)
    } else {
        let (session, plan) = open_session(args, docs, corpus.vocab().len(), opts, checkpoint, ui)?;
        gpu_plan = plan;
        if args.resume {
            ui.info(format!(
                "resuming from {} at iteration {}",
                ckpt_path.display(),
                session.iteration()
            ));
        }
        session
    };
    ui.info(format!("training on {}", trainer.device()));
    if trainer.iteration() > args.iters {
        bail!(
            "the checkpoint is at iteration {}, beyond --iters {}",
            trainer.iteration(),
            args.iters
        );
    }

    let mut log = match &args.log {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open log file {}", p.display()))?,
        )),
        None => None,
    };
    let heldout_every = args.heldout_every.unwrap_or(if args.log.is_some() {
        args.eval_every
    } else {
        0
    });
    let has_heldout = !corpus.heldout().is_empty() && !args.skip_heldout;

    let bar = ui.bar(
        u64::from(args.iters),
        "{prefix} [{bar:30}] {pos}/{len} iterations {msg} ({elapsed})",
    );
    bar.set_prefix(algorithm.name());
    bar.set_position(u64::from(trainer.iteration()));
    let mut train_seconds = 0.0;
    let mut sampled_tokens = 0u64;
    let mut last_ll = None;
    // Held-out LL of the final iteration, when the schedule already computed it.
    let mut final_heldout = None;
    while trainer.iteration() < args.iters {
        let stats = trainer.step()?;
        train_seconds += stats.seconds;
        sampled_tokens += docs.num_tokens();
        let it = stats.iteration;
        let is_last = it == args.iters;
        let due = |every: u32| every > 0 && it % every == 0;
        // The training log-likelihood reads the true assignments: never for a private run.
        let train_ll =
            if private.is_none() && !args.skip_train_ll && (due(args.eval_every) || is_last) {
                Some(trainer.log_likelihood()?)
            } else {
                None
            };
        let heldout_ll = if has_heldout && due(heldout_every) {
            Some(
                crate::cmd::eval::heldout_ll(
                    &trainer.model(corpus.vocab().clone())?,
                    corpus,
                    args.seed,
                )?
                .0,
            )
        } else {
            None
        };
        if let Some(ll) = train_ll {
            last_ll = Some(ll);
        }
        if is_last {
            final_heldout = heldout_ll;
        }
        bar.set_message(format!(
            "{:.2}M tok/s{}",
            stats.tokens_per_second / 1e6,
            last_ll.map(|l| format!(", LL {l:.4}")).unwrap_or_default()
        ));
        bar.set_position(u64::from(it));
        let log_due = train_ll.is_some() || heldout_ll.is_some() || due(args.eval_every);
        if let (Some(w), true) = (log.as_mut(), log_due) {
            let line = LogLine {
                iteration: it,
                seconds: train_seconds,
                tokens_per_second: stats.tokens_per_second,
                train_ll,
                heldout_ll,
            };
            writeln!(w, "{}", serde_json::to_string(&line)?)?;
            w.flush()?;
        }
        if args.checkpoint_every > 0 && it % args.checkpoint_every == 0 && !is_last {
            trainer.checkpoint()?.write(&ckpt_path)?;
        }
    }
    bar.finish_and_clear();

    let model = trainer.model(corpus.vocab().clone())?;
    model.write(&output)?;
    if args.doc_topics {
        trainer
            .doc_topics()?
            .write(&topos_model::doc_topics_path(&output))?;
    }
    let train_ll = match last_ll {
        Some(l) => Some(l),
        None if private.is_none() && !args.skip_train_ll => Some(trainer.log_likelihood()?),
        None => None,
    };
    let heldout_ll = match final_heldout {
        Some(ll) => Some(ll),
        None if has_heldout => Some(crate::cmd::eval::heldout_ll(&model, corpus, args.seed)?.0),
        None => None,
    };
    let heldout_perplexity = heldout_ll.map(|ll: f64| (-ll).exp());
    Ok(Summary {
        model: output.display().to_string(),
        algorithm: algorithm.name().to_string(),
        topics: hyper.num_topics,
        alpha: hyper.alpha,
        beta: hyper.beta,
        iterations: trainer.iteration(),
        threads: trainer.threads(),
        partitions: trainer.partitions(),
        train_tokens: docs.num_tokens(),
        seconds: train_seconds,
        tokens_per_second: if train_seconds > 0.0 {
            sampled_tokens as f64 / train_seconds
        } else {
            0.0
        },
        train_ll,
        heldout_ll,
        heldout_perplexity,
        estimated_memory_bytes: needed,
        privacy: model.privacy.clone(),
        noise_scale,
        ledger,
        device: trainer.device(),
        gpu_plan,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("20GiB"), Ok(20 << 30));
        assert_eq!(parse_bytes("20G"), Ok(20 << 30));
        assert_eq!(parse_bytes("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5gb"), Ok(3 << 29));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        for bad in ["", "GiB", "0", "-3G", "2 parsecs", "1e400"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
