//! `topos synth`: a corpus drawn from the LDA generative model, for benchmarks at the scale of
//! corpora that are not at hand (NYTimes: 300K documents, 100K words, ~100M tokens; PubMed: 8.2M
//! documents, 141K words, ~740M tokens). Topics are distinct (each a Dirichlet around its own
//! permutation of a Zipf profile), so a sampler that learns nothing cannot look good on it.

use crate::ui::Ui;
use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;
use topos_corpus::{Corpus, OwnedDocs, Vocabulary};
use topos_train::synthetic::{generate_parallel, SyntheticSpec, TopicShape};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output corpus file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Documents.
    #[arg(long, default_value_t = 300_000)]
    pub docs: usize,
    /// Vocabulary size.
    #[arg(long, default_value_t = 100_000)]
    pub vocab: usize,
    /// True topics.
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Mean document length in tokens.
    #[arg(long, default_value_t = 332)]
    pub doc_len: usize,
    /// Document-topic prior of the generator (symmetric).
    #[arg(long, default_value_t = 0.1)]
    pub alpha: f64,
    /// An asymmetric document-topic prior instead: one α_k per topic, comma-separated (as many
    /// as --topics), for checking that `topos train --optimize-priors` recovers it.
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with = "alpha", value_name = "A1,A2,…")]
    pub alpha_values: Vec<f64>,
    /// Zipf exponent of the word profile.
    #[arg(long, default_value_t = 1.07)]
    pub zipf: f64,
    /// Concentration of each topic's Dirichlet around its profile.
    #[arg(long, default_value_t = 5000.0)]
    pub concentration: f64,
    /// Fraction of documents held out.
    #[arg(long, default_value_t = 0.01)]
    pub holdout: f64,
    /// Words file (one per line, e.g. the NYTimes vocabulary) to name word ids; default w0, w1, …
    /// (ids beyond a shorter file are named so too, with a warning; a file holding such a name
    /// is then refused).
    #[arg(long)]
    pub words: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Serialize)]
struct Report {
    output: String,
    train_docs: usize,
    heldout_docs: usize,
    train_tokens: u64,
    heldout_tokens: u64,
    vocab: usize,
    seconds: f64,
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    anyhow::ensure!(
        args.docs > 0 && args.vocab > 0 && args.topics > 0 && args.doc_len > 0,
        "--docs, --vocab, --topics and --doc-len must be positive"
    );
    anyhow::ensure!(
        (0.0..1.0).contains(&args.holdout),
        "--holdout must be in [0, 1)"
    );
    let alpha = if args.alpha_values.is_empty() {
        topos_model::Alpha::symmetric(args.topics as u32, args.alpha)
    } else {
        anyhow::ensure!(
            args.alpha_values.len() == args.topics,
            "--alpha-values has {} values for --topics {}: give one per topic",
            args.alpha_values.len(),
            args.topics
        );
        topos_model::Alpha::from_values(args.alpha_values.clone())?
    };
    anyhow::ensure!(
        alpha.values().iter().all(|a| a.is_finite() && *a > 0.0),
        "--alpha must be a positive number"
    );
    anyhow::ensure!(
        args.zipf.is_finite() && args.zipf >= 0.0,
        "--zipf must be a finite number ≥ 0 (0: every word equally frequent; 1.07 by default), got {}",
        args.zipf
    );
    anyhow::ensure!(
        args.concentration.is_finite() && args.concentration > 0.0,
        "--concentration must be a finite positive number (5000 by default), got {}",
        args.concentration
    );
    // What the corpus will hold before generating it: its tokens twice (as generated, then
    // split into training and held-out documents) and the file's buffer, 4 bytes a token each.
    // A bound: measured, the peak grows by 8 bytes a token (`/usr/bin/time`, 2M and 20M tokens
    // of 100-token documents: 38.5 and 182.8 MB maximum resident, 2026-11-29).
    let tokens = (args.docs as u128) * (args.doc_len as u128);
    let needed = tokens.saturating_mul(12);
    if let Some(available) = topos_io::mem::available_memory() {
        anyhow::ensure!(
            needed <= u128::from(available),
            "--docs {} × --doc-len {} is about {tokens} tokens, which need about {:.1} GiB of memory to generate but {:.1} GiB is available; generate fewer or shorter documents",
            args.docs,
            args.doc_len,
            needed as f64 / f64::from(1u32 << 30),
            available as f64 / f64::from(1u32 << 30)
        );
    }
    // The output's directory must accept the file before any work.
    super::check_output(&args.output, &[])?;
    let start = std::time::Instant::now();
    let spec = SyntheticSpec {
        num_docs: args.docs,
        num_words: args.vocab,
        num_topics: args.topics,
        mean_doc_len: args.doc_len,
        alpha,
        shape: TopicShape::PermutedZipf {
            exponent: args.zipf,
            concentration: args.concentration,
        },
        seed: args.seed,
    };
    // A split that holds every document out gives a corpus `train` refuses; `prepare` refuses
    // it too. The split depends on the seed and the document number only: known before any work.
    anyhow::ensure!(
        (0..args.docs as u64)
            .any(|d| !topos_corpus::split::is_heldout(args.seed, d, args.holdout)),
        "--holdout {} holds out all {} documents, which leaves nothing to train on; lower --holdout or raise --docs",
        args.holdout,
        args.docs
    );
    let (words, named) = vocabulary(args.words.as_deref(), args.vocab)?;
    if let Some(p) = args.words.as_ref().filter(|_| named < args.vocab) {
        // Said even with --quiet: the corpus holds words the file did not give.
        eprintln!(
            "warning: {} has {} for --vocab {}; ids {named} to {} are named w{named} to w{}",
            p.display(),
            crate::ui::count(named as u64, "word", "words"),
            args.vocab,
            args.vocab - 1,
            args.vocab - 1
        );
    }
    ui.info(format!(
        "generating {} documents of ~{} tokens over {} words from {} topics",
        args.docs, args.doc_len, args.vocab, args.topics
    ));
    let docs = generate_parallel(&spec);
    let mut train = OwnedDocs::new();
    let mut heldout = OwnedDocs::new();
    for (d, doc) in docs.view().iter().enumerate() {
        if topos_corpus::split::is_heldout(args.seed, d as u64, args.holdout) {
            heldout.push(doc);
        } else {
            train.push(doc);
        }
    }
    drop(docs);
    let corpus = Corpus::from_parts(Vocabulary::new(words), train, heldout);
    corpus.write(&args.output)?;
    let r = Report {
        output: args.output.display().to_string(),
        train_docs: corpus.train().len(),
        heldout_docs: corpus.heldout().len(),
        train_tokens: corpus.train().num_tokens(),
        heldout_tokens: corpus.heldout().num_tokens(),
        vocab: corpus.vocab().len(),
        seconds: start.elapsed().as_secs_f64(),
    };
    ui.result(&r, || {
        use crate::ui::count;
        println!(
            "wrote {}: {} ({}), {} held out ({}), {}, in {:.1} s",
            r.output,
            count(r.train_docs as u64, "train document", "train documents"),
            count(r.train_tokens, "token", "tokens"),
            r.heldout_docs,
            count(r.heldout_tokens, "token", "tokens"),
            count(r.vocab as u64, "word", "words"),
            r.seconds
        )
    })
}

/// The words of a synthetic corpus: the first `vocab` of the words file, read before any
/// generating (a bad file costs nothing), then `w{i}` for the ids it does not name. A filler may
/// not repeat a word of the file (`w5` given, then generated for id 5): the corpus would hold a
/// word twice and every command would refuse it as malformed.
fn vocabulary(file: Option<&std::path::Path>, vocab: usize) -> Result<(Vec<String>, usize)> {
    let mut words = match file {
        Some(p) => {
            let mut w = topos_corpus::readers::read_vocab_file(p)?;
            w.truncate(vocab);
            w
        }
        None => Vec::new(),
    };
    let named = words.len();
    if let Some(p) = file {
        let given: std::collections::HashSet<&str> = words.iter().map(String::as_str).collect();
        if let Some(clash) = (named..vocab)
            .map(|i| format!("w{i}"))
            .find(|w| given.contains(w.as_str()))
        {
            anyhow::bail!(
                "{} has {} for --vocab {vocab}, and the ids it does not name are named w{named} to w{}, but it already holds the word {clash}; give a words file with at least {vocab} words, or --vocab {named}",
                p.display(),
                crate::ui::count(named as u64, "word", "words"),
                vocab - 1
            );
        }
    }
    words.extend((named..vocab).map(|i| format!("w{i}")));
    Ok((words, named))
}
