//! `topos update`: continue training a model on new documents (new words appended to its
//! vocabulary), with the model's counts held fixed beside theirs (`topos_train::update`).

use crate::cmd::train;
use crate::ui::Ui;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use topos_model::TopicModel;
use topos_train::run::CorpusSource;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model to update.
    pub model: PathBuf,
    /// A corpus of new documents (prepared with the same options as the model's corpus; its
    /// held-out documents are what the updated model is evaluated on).
    pub corpus: PathBuf,
    /// The updated model file (may not be the model being updated). Its corpus, the new
    /// documents over the updated vocabulary, is written beside it with the extension .tcorp,
    /// where `eval` and `similar` look for it.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Iterations over the new documents.
    #[arg(long, default_value_t = 50)]
    pub iters: u32,
    // The help is the registry's, so a new sampler needs no edit here.
    #[arg(long, value_parser = train::algo_names(), help = train::algo_help())]
    pub algo: Option<String>,
    /// Worker threads (0 = all cores). The model does not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Seed of the counter-based random numbers (also of the held-out fold-in, as in `train`, so
    /// `eval` with its default seed gives the run's held-out value).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compute the training log-likelihood every N iterations (0: only at the end).
    #[arg(long, default_value_t = 10)]
    pub eval_every: u32,
    /// Compute the held-out log-likelihood every N iterations (default: with --log, as
    /// --eval-every; otherwise only at the end).
    #[arg(long)]
    pub heldout_every: Option<u32>,
    /// Append one JSON line per evaluation.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Keep learning the priors (see `topos train --optimize-priors`), from the model's.
    #[arg(long, value_name = "N")]
    pub optimize_priors: Option<u32>,
    /// Iterations before the first --optimize-priors update.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "optimize_priors"
    )]
    pub optimize_burn_in: u32,
    /// Also save the new documents' topic counts beside the model.
    #[arg(long)]
    pub doc_topics: bool,
    /// Where to train: auto or cpu (an update runs on the CPU for now).
    #[arg(long, default_value = "auto")]
    pub device: topos_train::DeviceChoice,
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    anyhow::ensure!(
        !topos_io::same_file(&args.model, &args.output),
        "-o {} is the model being updated: write the update to another file, so the model stays as it was if anything goes wrong",
        args.output.display()
    );
    // The run checks its log against the corpus it trains on, which for an update is the
    // updated corpus: the files the update reads are checked here (a log appended to either
    // made it unreadable).
    if let Some(log) = &args.log {
        super::refuse_writing_over(
            "--log",
            log,
            &[
                ("the model", Some(&args.model)),
                ("the corpus of new documents", Some(&args.corpus)),
            ],
        )?;
    }
    let union_path = args.output.with_extension("tcorp");
    let same = topos_io::same_file;
    anyhow::ensure!(
        !same(&union_path, &args.corpus) && !same(&union_path, &args.model.with_extension("tcorp")),
        "-o {} would write the updated corpus over {}: choose another output name",
        args.output.display(),
        union_path.display()
    );
    // The updated corpus goes beside the new model under the same name: a file already there is
    // replaced only when it is the corpus of the model already at -o (an earlier update or
    // training written to the same name), never another corpus that happens to share the name.
    if union_path.exists() {
        let pair = || -> Option<bool> {
            let old = TopicModel::read(&args.output).ok()?;
            let corpus = topos_corpus::Corpus::open(&union_path).ok()?;
            Some(old.provenance.corpus_checksum == corpus.checksum())
        };
        anyhow::ensure!(
            pair() == Some(true),
            "-o {} would write the updated corpus to {}, which exists and is not the corpus of a model at {}; choose another -o, or move {} away",
            args.output.display(),
            union_path.display(),
            args.output.display(),
            union_path.display()
        );
    }
    let model = TopicModel::read(&args.model)?;
    let corpus = topos_corpus::Corpus::open(&args.corpus)?;
    // The model's own documents again: held fixed in its counts and sampled anew beside them,
    // every one would count twice, without a word (a private model records no checksum: 0).
    anyhow::ensure!(
        model.provenance.corpus_checksum == 0
            || model.provenance.corpus_checksum != corpus.checksum(),
        "{} is the corpus {} was trained on: an update adds documents to the model's, so each of these would count twice; give a corpus of new documents, or train again (`topos train`, more --iters) to continue on the same ones",
        args.corpus.display(),
        args.model.display()
    );
    let input = topos_train::update::prepare(&model, &corpus)
        .with_context(|| format!("cannot update {}", args.model.display()))?;
    ui.info(format!(
        "updating {} ({} topics, {} words) with {} documents ({} tokens, {} new words)",
        args.model.display(),
        model.hyper.num_topics,
        model.vocab.len(),
        input.corpus.train().len(),
        input.corpus.train().num_tokens(),
        input.new_words
    ));
    let targs = train::Args {
        topics: model.hyper.num_topics,
        iters: args.iters,
        output: Some(args.output.clone()),
        algo: args.algo.clone(),
        threads: args.threads,
        seed: args.seed,
        beta: model.hyper.beta,
        eval_every: args.eval_every,
        heldout_every: args.heldout_every,
        log: args.log.clone(),
        optimize_priors: args.optimize_priors,
        optimize_burn_in: args.optimize_burn_in,
        doc_topics: args.doc_topics,
        device: args.device,
        ..train::Args::for_corpus(args.corpus.clone())
    };
    let mut config = targs.config()?;
    // `--algo auto` says what it chose and why, as `train` does.
    if let (_, Some(reason)) = targs.sampler_choice()? {
        ui.info(format!("--algo auto: {} ({reason})", config.sampler.name()));
    }
    // The model's priors, learned or not, are where the update starts.
    config.hyper = model.hyper.clone();
    // The corpus of the updated model (new documents, union vocabulary): the model records its
    // checksum, and `eval`/`similar` find it beside the model. Staged (complete under a
    // temporary name) and trained from there, it takes its real name only after the model is
    // written: an update that fails or is interrupted replaces neither file.
    let staged = input
        .corpus
        .stage(&union_path)
        .with_context(|| format!("cannot write the updated corpus {}", union_path.display()))?;
    let corpus = topos_corpus::Corpus::open(staged.temp_path())?;
    config.corpus = CorpusSource::Loaded {
        corpus: Arc::new(corpus),
        path: Some(union_path.clone()),
    };
    config.fixed_counts = Some(Arc::new(input.fixed_counts));
    let summary = train::train_config(config, ui)?;
    staged
        .persist()
        .with_context(|| format!("cannot write the updated corpus {}", union_path.display()))?;
    ui.result(&summary, || train::print_summary(&summary))
}
