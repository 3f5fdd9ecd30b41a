//! `topos topics`: the top words of every topic.

use crate::ui::Ui;
use anyhow::Result;
use std::path::PathBuf;
use topos_model::{summarize, TopicModel, TopicsReport};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// Words per topic (0: every word the topic holds tokens of, as `infer --top 0` lists every
    /// topic).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Order topics by size (share of tokens) instead of by number.
    #[arg(long)]
    pub by_size: bool,
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let model = TopicModel::read(&args.model)?;
    let mut report = summarize(
        &model,
        if args.top == 0 {
            model.num_words()
        } else {
            args.top
        },
    );
    if args.top == 0 {
        // "Every word" means the words the topic is about, not the vocabulary padded with
        // counts of 0.
        for t in &mut report.topics {
            t.top_words.retain(|w| w.count > 0);
        }
    }
    if args.by_size {
        report
            .topics
            .sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.topic.cmp(&b.topic)));
    }
    ui.result(&report, || {
        let p = &report.provenance;
        // The settings that changed the model ("mh (--mh-steps 8)", "mfm (--counters approx8)").
        let algorithm =
            match topos_train::SamplerSettings::describe_recorded(&p.sampler_settings, "") {
                s if s.is_empty() => p.algorithm.clone(),
                s => format!("{} ({s})", p.algorithm),
            };
        let run = if report.privacy.is_some() {
            // A private model withholds its seed (secret) and the corpus's sizes (data).
            format!(
                "{algorithm} for {} iterations (secret seed; document and token counts withheld)",
                p.iterations
            )
        } else {
            format!(
                "{algorithm} for {} (seed {}) on {}, {}",
                crate::ui::count(p.iterations, "iteration", "iterations"),
                p.seed,
                crate::ui::count(p.num_docs, "document", "documents"),
                crate::ui::count(p.num_tokens, "token", "tokens")
            )
        };
        println!(
            "{}: {} topics over {} words; {run}; alpha = {}, beta = {}",
            args.model.display(),
            report.hyperparameters.num_topics,
            report.num_words,
            report.hyperparameters.alpha,
            report.hyperparameters.beta
        );
        println!("{}", topos_model::privacy_line(report.privacy.as_ref()));
        print_report(&report);
    })
}

/// One line per topic: number, share of tokens (and its α_k when α was learned), top words.
/// Words the topic holds no token of are left out of the line: they tie at the smallest φ, so
/// listing them (as `--json` does, with their count 0) would read as words the topic is about.
pub fn print_report(report: &TopicsReport) {
    let width = report.topics.len().saturating_sub(1).to_string().len();
    let alpha = &report.hyperparameters.alpha;
    for t in &report.topics {
        let mut words: Vec<&str> = t
            .top_words
            .iter()
            .filter(|w| w.count > 0)
            .map(|w| w.word.as_str())
            .collect();
        if words.is_empty() {
            words.push("(no tokens)");
        }
        let prior = match alpha.symmetric_value() {
            Some(_) => String::new(),
            None => format!(", alpha {:.4}", alpha.get(t.topic as usize)),
        };
        println!(
            "topic {:>width$} ({:>5.2}%{prior}): {}",
            t.topic,
            100.0 * t.share,
            words.join(" ")
        );
    }
}
