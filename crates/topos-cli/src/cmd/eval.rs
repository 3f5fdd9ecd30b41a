//! `topos eval`: held-out log-likelihood per token (document completion), perplexity and UMass
//! coherence of a model on the corpus it was trained on.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use topos_corpus::Corpus;
use topos_model::{evaluate, DocTopics, EvalOptions, Phi, TopicModel};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// The corpus the model was trained on (default: the model path with the extension .tcorp).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Top words per topic for coherence.
    #[arg(long, default_value_t = 10)]
    pub coherence_words: usize,
    #[command(flatten)]
    pub foldin: super::foldin::FoldInArgs,
}

/// Opens the corpus a model was trained on and checks that it is that corpus.
pub fn corpus_for(model_path: &Path, model: &TopicModel, corpus: Option<&Path>) -> Result<Corpus> {
    let path = corpus.map_or_else(|| model_path.with_extension("tcorp"), Path::to_path_buf);
    if !path.exists() {
        bail!(
            "{} not found; pass the corpus the model was trained on with --corpus",
            path.display()
        );
    }
    let c = Corpus::open(&path)?;
    let expected = model.provenance.corpus_checksum;
    if expected != 0 && c.checksum() != expected {
        bail!(
            "{} is not the corpus {} was trained on (checksum {:016x}, model expects {:016x}); pass the right one with --corpus",
            path.display(),
            model_path.display(),
            c.checksum(),
            expected
        );
    }
    if c.vocab().len() != model.num_words() {
        bail!(
            "{} has {} words but the model has {}",
            path.display(),
            c.vocab().len(),
            model.num_words()
        );
    }
    Ok(c)
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let (model, model_checksum) = TopicModel::read_with_checksum(&args.model)?;
    let corpus = corpus_for(&args.model, &model, args.corpus.as_deref())?;
    if corpus.heldout().is_empty() {
        bail!("the corpus has no held-out documents; prepare it with --holdout (e.g. 0.1)");
    }
    let phi = Phi::from_model(&model)?;
    // A private model never has the side file (it is per-document private state); without it
    // the training log-likelihood is simply not reported.
    let doc_topics_file = topos_model::doc_topics_path(&args.model);
    let doc_topics = if doc_topics_file.exists() {
        Some(DocTopics::read_for_model(&args.model, model_checksum)?)
    } else {
        None
    };
    let opts = EvalOptions {
        foldin: args.foldin.options(),
        coherence_top_words: args.coherence_words,
    };
    let e = evaluate(
        &model,
        &phi,
        corpus.heldout(),
        corpus.train(),
        doc_topics.as_ref(),
        &opts,
    )
    .context("evaluation failed")?;
    ui.result(&e, || {
        println!("{}", topos_model::privacy_line(e.privacy.as_ref()));
        println!(
            "held-out log-likelihood per token: {:.4} (perplexity {:.1}) over {} documents, {} scored tokens",
            e.heldout_ll_per_token, e.perplexity, e.heldout_docs, e.heldout_tokens_scored
        );
        if let Some(t) = e.train_ll_per_token {
            println!("training log-likelihood per token: {t:.4}");
        }
        println!("UMass coherence (top {} words): mean {:.3}", e.coherence_top_words, e.coherence_mean);
        let mut worst: Vec<(usize, f64)> = e.coherence_per_topic.iter().copied().enumerate().collect();
        worst.sort_by(|a, b| a.1.total_cmp(&b.1));
        let list: Vec<String> = worst.iter().take(5).map(|(k, c)| format!("{k} ({c:.1})")).collect();
        println!("least coherent topics: {}", list.join(", "));
    })
}
