//! `topos export`: a model's numbers in open formats (θ of the training documents, φ, topic keys
//! as CSV, JSON Lines, `.npy` or Parquet, or Mallet's three files; `topos-report`'s `export`), or
//! a corpus as plain text (one document per line, words separated by spaces), so other LDA
//! systems can be run on exactly the same documents and split for side-by-side benchmarks. The
//! input's magic says which.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use topos_corpus::{Corpus, Docs, Vocabulary};
use topos_model::{DocTopics, TopicModel};
use topos_report::export::{self, Format, Layout, What};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A model file, or a corpus file (written as plain text: train.txt, heldout.txt and
    /// vocab.txt in the output directory).
    pub input: PathBuf,
    /// Output file (a directory for --format mallet and for a corpus).
    #[arg(short, long)]
    pub output: PathBuf,
    /// What of the model: θ of the training documents, φ, or each topic's top words.
    #[arg(long, value_enum, default_value = "doc-topics")]
    pub what: WhatArg,
    /// csv, jsonl, npy, parquet, or mallet (doc-topics.txt, topic-keys.txt and
    /// word-topic-counts.txt in the output directory); default: the output's extension.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// wide: a row per document or topic, a column per topic or word; long: a row per non-zero
    /// count.
    #[arg(long, value_enum, default_value = "wide")]
    pub layout: LayoutArg,
    /// Words per topic of the topic keys.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// The corpus the model was trained on, for the documents' input records: Mallet's document
    /// names, and the `record` column of doc-topics, which keys each row by the number
    /// `similar --doc`, `knn` and the report use (default: the model path with the extension
    /// .tcorp, when it exists; without a corpus the rows are keyed by training position, `doc`).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhatArg {
    DocTopics,
    Phi,
    TopicKeys,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    Csv,
    Jsonl,
    Npy,
    Parquet,
    Mallet,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutArg {
    Wide,
    Long,
}

/// Whether `path` starts with the corpus file's magic.
fn is_corpus(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 8];
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let n = f.read(&mut magic)?;
    Ok(n == 8 && magic == topos_corpus::file::KIND.magic)
}

fn export_model(args: &Args, ui: Ui) -> Result<()> {
    let format = match args.format {
        Some(f) => f,
        None => match args
            .output
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .as_deref()
        {
            Some("csv") => FormatArg::Csv,
            Some("jsonl") => FormatArg::Jsonl,
            Some("npy") => FormatArg::Npy,
            Some("parquet") => FormatArg::Parquet,
            _ => bail!(
                "cannot tell the format of {}: pass --format csv, jsonl, npy, parquet or mallet",
                args.output.display()
            ),
        },
    };
    if args.top == 0 {
        bail!("--top must be at least 1");
    }
    if format != FormatArg::Mallet {
        super::check_output(&args.output, &[])?;
    } else {
        check_directory_output(&args.output, "--format mallet writes Mallet's three files")?;
    }
    let (model, checksum) = TopicModel::read_with_checksum(&args.input)?;
    let side = topos_model::doc_topics_path(&args.input);
    let doc_topics = if side.exists() {
        Some(DocTopics::read_for_model(&args.input, checksum)?)
    } else {
        None
    };
    // The corpus, for the documents' input records (Mallet's names, θ's `record` column).
    let wants_records = format == FormatArg::Mallet || args.what == WhatArg::DocTopics;
    let corpus = match &args.corpus {
        Some(p) if wants_records => Some(super::eval::corpus_for(&args.input, &model, Some(p))?),
        None if wants_records && args.input.with_extension("tcorp").exists() => {
            super::eval::corpus_for(&args.input, &model, None).ok()
        }
        _ => None,
    };
    let names = match (&corpus, &doc_topics) {
        (Some(c), Some(a)) if c.train_ids().len() == a.len() => Some(c.train_ids()),
        _ => None,
    };
    if format == FormatArg::Mallet {
        let written =
            export::write_mallet(&model, doc_topics.as_ref(), names, args.top, &args.output)?;
        ui.written(
            serde_json::json!({
                "output": args.output.display().to_string(),
                "format": "mallet",
                "files": written,
            }),
            format!(
            "wrote {} to {}{}",
            written.join(", "),
            args.output.display(),
            if doc_topics.is_none() {
                " (no doc-topics.txt: the model has no .doctopics side file; train with --doc-topics)"
            } else {
                ""
            }
        ),
        );
        return Ok(());
    }
    let what = match args.what {
        WhatArg::DocTopics => What::DocTopics,
        WhatArg::Phi => What::Phi,
        WhatArg::TopicKeys => What::TopicKeys,
    };
    let fmt = match format {
        FormatArg::Csv => Format::Csv,
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Npy => Format::Npy,
        FormatArg::Parquet => Format::Parquet,
        FormatArg::Mallet => unreachable!("handled above"),
    };
    let layout = match args.layout {
        LayoutArg::Wide => Layout::Wide,
        LayoutArg::Long => Layout::Long,
    };
    export::export(
        &model,
        doc_topics.as_ref().map(|counts| export::DocRows {
            counts,
            records: names,
        }),
        what,
        fmt,
        layout,
        args.top,
        &args.output,
    )?;
    ui.written(
        serde_json::json!({ "output": args.output.display().to_string() }),
        format!("wrote {}", args.output.display()),
    );
    Ok(())
}

fn write_docs(path: &std::path::Path, docs: Docs<'_>, vocab: &Vocabulary) -> Result<()> {
    let mut f = topos_io::AtomicFile::create(path)?;
    let mut line = String::new();
    for doc in docs.iter() {
        line.clear();
        for (i, &w) in doc.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(vocab.word(w));
        }
        line.push('\n');
        f.write_all(line.as_bytes())?;
    }
    f.commit()?;
    Ok(())
}

/// Refuses, before any work, a directory output (`--format mallet`, a corpus) that names an
/// existing file: creating the directory would fail with the OS's bare "File exists".
fn check_directory_output(path: &Path, what: &str) -> Result<()> {
    if path.exists() && !path.is_dir() {
        bail!(
            "-o {} is a file, but {what} into a directory; name a directory (it is created if missing)",
            path.display()
        );
    }
    Ok(())
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    super::refuse_overwriting(
        &args.output,
        &[
            ("the input", Some(&args.input)),
            ("the corpus", args.corpus.as_deref()),
        ],
    )?;
    if !is_corpus(&args.input)? {
        return export_model(&args, ui);
    }
    check_directory_output(
        &args.output,
        "a corpus is exported as train.txt, heldout.txt and vocab.txt",
    )?;
    let corpus = Corpus::open(&args.input)?;
    export::refuse_words_with_white_space(
        corpus.vocab().words().iter().map(String::as_str),
        "the text files of a corpus export",
        "join its parts (e.g. with _) in the input's vocabulary and prepare it again",
    )?;
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    write_docs(
        &args.output.join("train.txt"),
        corpus.train(),
        corpus.vocab(),
    )?;
    write_docs(
        &args.output.join("heldout.txt"),
        corpus.heldout(),
        corpus.vocab(),
    )?;
    let mut vocab = corpus.vocab().words().join("\n");
    vocab.push('\n');
    let mut f = topos_io::AtomicFile::create(&args.output.join("vocab.txt"))?;
    f.write_all(vocab.as_bytes())?;
    f.commit()?;
    ui.written(
        serde_json::json!({
            "output": args.output.display().to_string(),
            "files": ["train.txt", "heldout.txt", "vocab.txt"],
        }),
        format!(
            "wrote train.txt, heldout.txt and vocab.txt to {}",
            args.output.display()
        ),
    );
    Ok(())
}
