//! `topos train`: corpus file → model file, with progress, evaluation log and checkpoints.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use topos_corpus::Corpus;
use topos_model::Hyperparameters;
use topos_train::memory::{self, Bytes};
use topos_train::{Algorithm, Checkpoint, TrainOptions, Trainer};

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
    /// Sampler: esca (SaberLDA's ESCA, default) or cgs (sparse collapsed Gibbs, the reference).
    #[arg(long, default_value = "esca", value_parser = ["esca", "cgs"])]
    pub algo: String,
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
    /// Document partitions (cgs results depend on it; default: one per 250K tokens, at most 64).
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
    pub train_ll: f64,
    pub heldout_ll: Option<f64>,
    pub heldout_perplexity: Option<f64>,
    pub estimated_memory_bytes: u64,
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
        print!("training log-likelihood per token {:.4}", summary.train_ll);
        match (summary.heldout_ll, summary.heldout_perplexity) {
            (Some(ll), Some(p)) => println!("; held-out {ll:.4} (perplexity {p:.1})"),
            _ => println!(),
        }
    })
}

/// Trains on `corpus` as `args` say and writes the model; shared with `demo`.
pub fn train_corpus(corpus: &Corpus, args: &Args, ui: Ui) -> Result<Summary> {
    let algorithm = Algorithm::from_name(&args.algo).context("unknown algorithm")?;
    let hyper = Hyperparameters::new(args.topics, args.alpha, Some(args.beta))?;
    let docs = corpus.train();
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
    ui.info(format!(
        "memory needed: about {} ({})",
        Bytes(estimate.total()),
        estimate.describe()
    ));
    if let Some(avail) = topos_model::mem::available_memory() {
        if estimate.total() > avail {
            bail!(
                "this run needs about {} but only {} is available; use fewer topics (-k) or a smaller corpus",
                Bytes(estimate.total()),
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
    let mut trainer = if let Some(ckpt) = checkpoint {
        let t = Trainer::resume(docs, corpus.vocab().len(), opts, ckpt)?;
        ui.info(format!(
            "resuming from {} at iteration {}",
            ckpt_path.display(),
            t.iteration()
        ));
        t
    } else {
        Trainer::new(docs, corpus.vocab().len(), opts)?
    };
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
    let has_heldout = !corpus.heldout().is_empty();

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
        let stats = trainer.step();
        train_seconds += stats.seconds;
        sampled_tokens += docs.num_tokens();
        let it = stats.iteration;
        let is_last = it == args.iters;
        let due = |every: u32| every > 0 && it % every == 0;
        let train_ll = (due(args.eval_every) || is_last).then(|| trainer.log_likelihood());
        let heldout_ll = if has_heldout && due(heldout_every) {
            Some(
                crate::cmd::eval::heldout_ll(
                    &trainer.model(corpus.vocab().clone()),
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
        if let (Some(w), true) = (log.as_mut(), train_ll.is_some() || heldout_ll.is_some()) {
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
            trainer.checkpoint().write(&ckpt_path)?;
        }
    }
    bar.finish_and_clear();

    let model = trainer.model(corpus.vocab().clone());
    model.write(&output)?;
    if args.doc_topics {
        trainer
            .doc_topics()
            .write(&topos_model::doc_topics_path(&output))?;
    }
    let train_ll = match last_ll {
        Some(l) => l,
        None => trainer.log_likelihood(),
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
        estimated_memory_bytes: estimate.total(),
    })
}
