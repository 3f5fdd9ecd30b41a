//! `topos infer`: topic mixtures of unseen documents by Gibbs fold-in with the topics fixed.

use crate::ui::Ui;
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use topos_corpus::readers::{ByteCounter, LineReader};
use topos_corpus::{OwnedDocs, Tokenizer, TokenizerOptions};
use topos_model::{doc_to_ids, infer, Phi, TopicModel, TopicWeight};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// Documents: a text file with one document per line (.gz allowed), or - for stdin.
    pub input: PathBuf,
    /// Output format: jsonl (top topics per document), csv (every topic), or top (plain text).
    /// For a model trained with --private the output starts with its guarantee: a
    /// {"privacy": ...} line in jsonl, a "# privacy: ..." line in csv and top. With --json the
    /// whole result is one JSON document {"model", "privacy", "documents"} instead.
    #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "csv", "top"])]
    pub format: String,
    /// Topics listed per document in jsonl and top output (0: all).
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Write here (atomically) instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Stem words (use it if the corpus was prepared with --stem).
    #[arg(long)]
    pub stem: bool,
    #[command(flatten)]
    pub foldin: super::foldin::FoldInArgs,
}

#[derive(Serialize)]
struct Row<'a> {
    doc: usize,
    tokens: u64,
    topics: &'a [TopicWeight],
}

/// The first line of jsonl output for a private model.
#[derive(Serialize)]
struct PrivacyHeader<'a> {
    privacy: &'a topos_model::Guarantee,
}

/// `--json`: the whole result as one document.
#[derive(Serialize)]
struct Report<'a> {
    model: String,
    /// The guarantee of a private model (`null` otherwise).
    privacy: Option<&'a topos_model::Guarantee>,
    documents: Vec<Row<'a>>,
}

/// The documents of `input`, one per line; `-` reads stdin. Files go through the corpus
/// crate's line reader (gzip recognised by its magic bytes, line numbers in errors).
fn read_lines(input: &Path) -> Result<Vec<String>> {
    if input.as_os_str() == "-" {
        return std::io::stdin()
            .lock()
            .lines()
            .enumerate()
            .map(|(i, l)| {
                l.with_context(|| format!("stdin: cannot read line {} (is it UTF-8 text?)", i + 1))
            })
            .collect();
    }
    let mut reader = LineReader::open(input, &ByteCounter::default())?;
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    while reader.next_line(&mut buf)? {
        let line = String::from_utf8(std::mem::take(&mut buf))
            .map_err(|_| reader.error("is not valid UTF-8"))?;
        lines.push(line);
    }
    Ok(lines)
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let model = TopicModel::read(&args.model)?;
    // Always on stderr; for a private model also in the output itself (below), because the
    // mixtures are derived from the model's noisy release and the guarantee travels with them.
    ui.info(topos_model::privacy_line(model.privacy.as_ref()));
    let tokenizer = Tokenizer::new(&TokenizerOptions {
        stem: args.stem,
        ..TokenizerOptions::default()
    })?;
    let lines = read_lines(&args.input)?;
    let mut docs = OwnedDocs::new();
    let mut unknown = 0usize;
    for line in &lines {
        let toks = tokenizer.tokens(line);
        let refs: Vec<&str> = toks.iter().map(String::as_str).collect();
        let ids = doc_to_ids(&model.vocab, &refs);
        unknown += refs.len() - ids.len();
        docs.push(&ids);
    }
    ui.info(format!(
        "{} documents; {} tokens known to the model, {} unknown tokens dropped",
        docs.len(),
        docs.view().num_tokens(),
        unknown
    ));
    let phi = Phi::from_model(&model)?;
    let thetas = infer(&phi, &model.hyper, docs.view(), &args.foldin.options())?;
    let k = model.num_topics();
    let top = if args.top == 0 { k } else { args.top };
    let tops: Vec<Vec<TopicWeight>> = thetas.iter().map(|t| t.top_topics(top)).collect();
    let mut out: Vec<u8> = Vec::new();
    // A private model's guarantee heads the output: a `{"privacy": …}` line in jsonl, a `#`
    // comment line in csv and top. Output of a model without one is unchanged.
    let guarantee_comment = model
        .privacy
        .as_ref()
        .map(|g| format!("# {}", topos_model::privacy_line(Some(g))));
    if ui.json {
        let report = Report {
            model: args.model.display().to_string(),
            privacy: model.privacy.as_ref(),
            documents: thetas
                .iter()
                .zip(&tops)
                .enumerate()
                .map(|(d, (t, topics))| Row {
                    doc: d,
                    tokens: t.num_tokens,
                    topics,
                })
                .collect(),
        };
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        match args.format.as_str() {
            "csv" => {
                if let Some(c) = &guarantee_comment {
                    writeln!(out, "{c}")?;
                }
                let header: Vec<String> = (0..k).map(|t| format!("topic_{t}")).collect();
                writeln!(out, "doc,tokens,{}", header.join(","))?;
                for (d, t) in thetas.iter().enumerate() {
                    let row: Vec<String> = t.dense().iter().map(|p| format!("{p:.6}")).collect();
                    writeln!(out, "{d},{},{}", t.num_tokens, row.join(","))?;
                }
            }
            "top" => {
                if let Some(c) = &guarantee_comment {
                    writeln!(out, "{c}")?;
                }
                for (d, topics) in tops.iter().enumerate() {
                    let list: Vec<String> = topics
                        .iter()
                        .map(|w| format!("{}:{:.3}", w.topic, w.probability))
                        .collect();
                    writeln!(out, "{d}\t{}", list.join(" "))?;
                }
            }
            _ => {
                if let Some(g) = &model.privacy {
                    let header = PrivacyHeader { privacy: g };
                    writeln!(out, "{}", serde_json::to_string(&header)?)?;
                }
                for (d, (t, topics)) in thetas.iter().zip(&tops).enumerate() {
                    let row = Row {
                        doc: d,
                        tokens: t.num_tokens,
                        topics,
                    };
                    writeln!(out, "{}", serde_json::to_string(&row)?)?;
                }
            }
        }
    }
    match &args.output {
        Some(p) => {
            let mut f = topos_io::AtomicFile::create(p)?;
            f.write_all(&out)?;
            f.commit()?;
            ui.info(format!("wrote {}", p.display()));
        }
        None => std::io::stdout().write_all(&out)?,
    }
    Ok(())
}
