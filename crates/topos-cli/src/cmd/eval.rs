//! `topos eval`: held-out log-likelihood per token (document completion), perplexity and topic
//! coherence (UMass, and with `--coherence` NPMI, UCI and C_V over sliding windows) of a model on
//! the corpus it was trained on.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use topos_corpus::Corpus;
use topos_model::{
    evaluate, window_coherence, DocTopics, EvalOptions, Evaluation, Phi, TopicModel,
    WindowCoherence, WindowCounting, WindowMeasure,
};

/// The evaluation with the sliding-window coherences asked for (`coherence`, absent when none).
#[derive(Serialize)]
struct Report {
    #[serde(flatten)]
    evaluation: Evaluation,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    coherence: Vec<WindowCoherence>,
}

/// The sliding-window measures named in `--coherence` (`umass` is always computed).
fn measures(names: &[String]) -> Result<Vec<WindowMeasure>> {
    let mut out = Vec::new();
    for name in names {
        let name = name.trim();
        if name.eq_ignore_ascii_case("umass") || name.eq_ignore_ascii_case("u_mass") {
            continue;
        }
        let Some(m) = WindowMeasure::parse(name) else {
            bail!("unknown coherence measure {name:?}; use umass, npmi, uci or c_v");
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// The corpus the model was trained on (default: the model path with the extension .tcorp).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Top words per topic for coherence.
    #[arg(long, visible_alias = "top", default_value_t = 10)]
    pub coherence_words: usize,
    /// Coherence measures, comma-separated: umass (document co-occurrence, always computed), npmi,
    /// uci, c_v (sliding windows over the training documents; Röder et al. 2015, as gensim).
    #[arg(long, value_delimiter = ',', default_value = "umass")]
    pub coherence: Vec<String>,
    /// Tokens per sliding window for npmi, uci and c_v (default: 10 for npmi and uci, 110 for c_v).
    #[arg(long)]
    pub window: Option<usize>,
    /// How a window's words are counted for npmi, uci and c_v: gensim (as gensim's
    /// CoherenceModel, whose numbers people compare: a word is forgotten when one of its
    /// occurrences leaves the window) or exact (a window holds every word with an occurrence
    /// inside, as Röder et al. and Palmetto define it). They differ only where a word repeats
    /// within a window's reach (docs/report.md, "Coherence").
    #[arg(long, default_value = "gensim")]
    pub window_counting: String,
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
    args.foldin.checked()?;
    let measures = measures(&args.coherence)?;
    let Some(counting) = WindowCounting::parse(&args.window_counting) else {
        bail!(
            "--window-counting {:?} is not gensim or exact",
            args.window_counting
        );
    };
    match args.window {
        // A window of one token never holds two words: every pair of top words would score as
        // never co-occurring, a number that means nothing.
        Some(w) if w < 2 => bail!(
            "--window {w} must be at least 2 tokens: a window of one token never holds two words, so no pair of top words could co-occur in it"
        ),
        Some(w) if measures.is_empty() => bail!(
            "--window {w} sets the sliding windows of npmi, uci and c_v, and none is asked for (UMass counts whole documents); add --coherence npmi (or uci, c_v), or leave --window out"
        ),
        _ => {}
    }
    let (model, model_checksum) = TopicModel::read_with_checksum(&args.model)?;
    // Coherence over more words than the vocabulary holds would score every topic on the whole
    // vocabulary in some order, a number that means nothing.
    if args.coherence_words < 2 || args.coherence_words > model.num_words() {
        bail!(
            "--top {} must be between 2 and the model's {} words (coherence is scored over the pairs of each topic's top words)",
            args.coherence_words,
            model.num_words()
        );
    }
    let corpus = corpus_for(&args.model, &model, args.corpus.as_deref())?;
    // Without held-out documents the rest of the evaluation (coherence, the training
    // log-likelihood) still stands; the held-out score is said to be missing, and why.
    if corpus.heldout().is_empty() {
        eprintln!(
            "warning: the corpus has no held-out documents, so there is no held-out log-likelihood; prepare it with --holdout (e.g. 0.1) for one"
        );
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
    let coherence = measures
        .iter()
        .map(|&m| {
            window_coherence(
                &model,
                corpus.train(),
                m,
                args.coherence_words,
                args.window.unwrap_or(m.default_window()),
                counting,
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .context("coherence failed")?;
    let report = Report {
        evaluation: e,
        coherence,
    };
    let e = &report.evaluation;
    ui.result(&report, || {
        println!("{}", topos_model::privacy_line(e.privacy.as_ref()));
        match (e.heldout_ll_per_token, e.perplexity) {
            (Some(ll), Some(perplexity)) => println!(
                "held-out log-likelihood per token: {ll:.4} (perplexity {perplexity:.1}) over {} documents, {} scored tokens",
                e.heldout_docs, e.heldout_tokens_scored
            ),
            _ => println!("held-out log-likelihood per token: none (no held-out documents)"),
        }
        if let Some(t) = e.train_ll_per_token {
            println!("training log-likelihood per token: {t:.4}");
        }
        println!("UMass coherence (top {} words): mean {:.3}", e.coherence_top_words, e.coherence_mean);
        let mut worst: Vec<(usize, f64)> = e.coherence_per_topic.iter().copied().enumerate().collect();
        worst.sort_by(|a, b| a.1.total_cmp(&b.1));
        let list: Vec<String> = worst.iter().take(5).map(|(k, c)| format!("{k} ({c:.1})")).collect();
        println!("least coherent topics: {}", list.join(", "));
        for c in &report.coherence {
            println!(
                "{} coherence (top {} words, windows of {} tokens counted as {}): mean {:.4}",
                match c.measure {
                    WindowMeasure::Npmi => "NPMI",
                    WindowMeasure::Uci => "UCI",
                    WindowMeasure::CV => "C_V",
                },
                c.top_words,
                c.window,
                c.counting.name(),
                c.mean
            );
        }
    })
}
