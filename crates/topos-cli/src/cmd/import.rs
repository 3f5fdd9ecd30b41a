//! `topos import`: word-topic counts from another LDA system (lines `word<TAB>topic<TAB>count`)
//! as a Topos model of a given corpus, so `topos eval` scores every system in the same way.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::io::BufRead;
use std::path::PathBuf;
use topos_corpus::Corpus;
use topos_model::{Hyperparameters, Provenance, TopicModel};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Counts file: `word<TAB>topic<TAB>count` per line (topics 0-based).
    pub counts: PathBuf,
    /// The corpus the counts were trained on (its vocabulary names the words).
    #[arg(long)]
    pub corpus: PathBuf,
    /// Number of topics.
    #[arg(short = 'k', long = "topics")]
    pub topics: u32,
    /// α the other system used (symmetric).
    #[arg(long, required_unless_present = "alpha_values")]
    pub alpha: Option<f64>,
    /// The asymmetric α the other system learned instead: one α_k per topic, comma-separated
    /// (e.g. the `#alpha :` line of Mallet's --output-state after --optimize-interval).
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with = "alpha", value_name = "A1,A2,…")]
    pub alpha_values: Vec<f64>,
    /// β the other system used.
    #[arg(long)]
    pub beta: f64,
    /// Name of the system (recorded as the model's algorithm).
    #[arg(long, default_value = "imported")]
    pub name: String,
    /// Output model file.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let corpus = Corpus::open(&args.corpus)?;
    let hyper = match args.alpha {
        Some(a) => Hyperparameters::new(args.topics, Some(a), Some(args.beta))?,
        None => {
            anyhow::ensure!(
                args.alpha_values.len() == args.topics as usize,
                "--alpha-values has {} values for {} topics: give one per topic",
                args.alpha_values.len(),
                args.topics
            );
            Hyperparameters::with_alpha(
                topos_model::Alpha::from_values(args.alpha_values.clone())?,
                Some(args.beta),
            )?
        }
    };
    let k = hyper.k();
    let vocab = corpus.vocab().clone();
    let mut counts = vec![0u32; vocab.len() * k];
    let f = std::fs::File::open(&args.counts)
        .with_context(|| format!("cannot open {}", args.counts.display()))?;
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: cannot read line {}", args.counts.display(), i + 1))?;
        if line.is_empty() || line.starts_with("word\t") {
            continue;
        }
        let mut parts = line.split('\t');
        let (Some(word), Some(topic), Some(count), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            bail!(
                "{}: line {} is not word<TAB>topic<TAB>count",
                args.counts.display(),
                i + 1
            );
        };
        let Some(w) = vocab.id(word) else {
            bail!(
                "{}: line {}: word {word:?} is not in the corpus vocabulary",
                args.counts.display(),
                i + 1
            );
        };
        let t: usize = topic.parse().ok().filter(|&t| t < k).with_context(|| {
            format!(
                "{}: line {}: topic {topic:?} is not below K = {k}",
                args.counts.display(),
                i + 1
            )
        })?;
        let c: u32 = count.parse().with_context(|| {
            format!(
                "{}: line {}: count {count:?} is not a non-negative integer",
                args.counts.display(),
                i + 1
            )
        })?;
        counts[w as usize * k + t] += c;
    }
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let model = TopicModel::from_counts(
        vocab,
        hyper,
        counts,
        Provenance {
            algorithm: args.name.clone(),
            iterations: 0,
            seed: 0,
            corpus_checksum: corpus.checksum(),
            num_docs: corpus.train().len() as u64,
            num_tokens: total,
        },
    );
    model.write(&args.output)?;
    ui.info(format!(
        "wrote {} ({} tokens over {} topics)",
        args.output.display(),
        total,
        k
    ));
    Ok(())
}
