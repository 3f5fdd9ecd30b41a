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
    // On stderr, so the documents' rows on stdout stay one format.
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
    let mut out: Vec<u8> = Vec::new();
    match args.format.as_str() {
        "csv" => {
            let header: Vec<String> = (0..k).map(|t| format!("topic_{t}")).collect();
            writeln!(out, "doc,tokens,{}", header.join(","))?;
            for (d, t) in thetas.iter().enumerate() {
                let row: Vec<String> = t.dense().iter().map(|p| format!("{p:.6}")).collect();
                writeln!(out, "{d},{},{}", t.num_tokens, row.join(","))?;
            }
        }
        "top" => {
            for (d, t) in thetas.iter().enumerate() {
                let list: Vec<String> = t
                    .top_topics(top)
                    .iter()
                    .map(|w| format!("{}:{:.3}", w.topic, w.probability))
                    .collect();
                writeln!(out, "{d}\t{}", list.join(" "))?;
            }
        }
        _ => {
            for (d, t) in thetas.iter().enumerate() {
                let topics = t.top_topics(top);
                let row = Row {
                    doc: d,
                    tokens: t.num_tokens,
                    topics: &topics,
                };
                writeln!(out, "{}", serde_json::to_string(&row)?)?;
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
