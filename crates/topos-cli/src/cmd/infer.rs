//! `topos infer`: topic mixtures of unseen documents by Gibbs fold-in with the topics fixed.

use crate::ui::Ui;
use anyhow::Result;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use topos_corpus::encoding::DecodeStats;
use topos_corpus::readers::{ByteCounter, LineReader};
use topos_corpus::Encoding;
use topos_corpus::{Corpus, OwnedDocs, Tokenizer};
use topos_model::{doc_to_ids, infer, Phi, TopicModel, TopicWeight};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// Documents: a text file with one document per line (.gz allowed), or - for stdin; with
    /// --text-field, one JSON object per line.
    pub input: PathBuf,
    /// Read the documents as JSON Lines, each document the string in this field (as `prepare
    /// --text-field` reads them; a blank line or null is an empty document).
    #[arg(long)]
    pub text_field: Option<String>,
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
    /// The corpus the model was trained on (default: the model path with the extension
    /// .tcorp), whose recorded tokenizer options cut the new text as prepare cut the corpus.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Encoding of the documents: utf-8 (invalid bytes are an error), utf-8-lossy (replaced by
    /// U+FFFD, counted), latin1, windows-1252, or another label of the Encoding Standard (gbk,
    /// big5, shift_jis, euc-kr, windows-1251, ...; malformed bytes replaced, counted).
    #[arg(long, default_value = "utf-8")]
    pub encoding: topos_corpus::Encoding,
    /// Stem words: only for a corpus that does not record its options (prepared by an older
    /// topos with --stem); a corpus that records them is followed without it.
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

/// The documents of `input`, one per line, decoded with `encoding`; `-` reads stdin. Both go
/// through the corpus crate's line reader (gzip recognised by its magic bytes, line numbers in
/// errors, UTF-16 refused, a byte-order mark dropped, as for `prepare`). Returns the lines and the
/// bytes `utf-8-lossy` replaced.
fn read_lines(input: &Path, encoding: Encoding) -> Result<(Vec<String>, u64)> {
    let stats = DecodeStats::default();
    let mut lines = Vec::new();
    let mut reader = if input.as_os_str() == "-" {
        LineReader::stdin(&ByteCounter::default())?
    } else {
        LineReader::open(input, &ByteCounter::default())?
    };
    let mut buf = Vec::new();
    while reader.next_line(&mut buf)? {
        let line = encoding
            .decode(std::mem::take(&mut buf), &stats)
            .map_err(|e| reader.error(e.describe()))?;
        lines.push(line);
    }
    Ok((lines, stats.invalid_bytes()))
}

/// The tokenizer that cuts new text for `model` as `prepare` cut its corpus: from the options
/// the model records (model files since version 3, trained from a corpus that recorded them),
/// else those the corpus records (`corpus`, else MODEL.tcorp, if there is one: `infer` works
/// without).
pub fn text_tokenizer(
    model_path: &Path,
    model: &TopicModel,
    corpus: Option<&Path>,
    stem: bool,
    ui: Ui,
) -> Result<Tokenizer> {
    if let Some(spec) = &model.tokenizer {
        return follow_spec(spec, model_path, stem, ui);
    }
    let path = corpus.map_or_else(|| model_path.with_extension("tcorp"), Path::to_path_buf);
    let opened = if corpus.is_some() || path.exists() {
        Some(super::eval::corpus_for(model_path, model, Some(&path))?)
    } else {
        None
    };
    tokenizer_of(opened.as_ref(), &path, stem, ui)
}

/// The tokenizer `corpus` (opened from `path`; `None`: there is none) records. A corpus that
/// records none (prepared by an older build), or no corpus, gives prepare's defaults (with
/// `--stem` if asked), and a warning on stderr says so once: with other options, words would be
/// dropped as unknown without a word said.
pub fn tokenizer_of(corpus: Option<&Corpus>, path: &Path, stem: bool, ui: Ui) -> Result<Tokenizer> {
    let fallback = |why: String| -> Result<Tokenizer> {
        // By the rules of the builds whose corpora recorded nothing (version 1).
        let spec = topos_corpus::TokenizerSpec {
            stem,
            ..topos_corpus::TokenizerSpec::defaults()
        };
        eprintln!(
            "warning: {why}; tokenizing new text with prepare's defaults ({}); if the corpus was prepared with other options, words may be dropped as unknown (re-prepare it with this version of topos to record them)",
            spec.describe()
        );
        Tokenizer::from_spec(&spec).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    };
    let Some(corpus) = corpus else {
        return fallback(format!(
            "{} not found (name the corpus the model was trained on with --corpus), so its tokenizer options are unknown",
            path.display()
        ));
    };
    let Some(spec) = corpus.tokenizer() else {
        return fallback(format!(
            "{} does not record its tokenizer options (prepared by an older topos)",
            path.display()
        ));
    };
    follow_spec(spec, path, stem, ui)
}

/// The tokenizer of `spec`, recorded in the file `path` (a model or a corpus); `--stem` against
/// unstemmed options is refused.
pub fn follow_spec(
    spec: &topos_corpus::TokenizerSpec,
    path: &Path,
    stem: bool,
    ui: Ui,
) -> Result<Tokenizer> {
    spec.check()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if stem && !spec.stem {
        anyhow::bail!(
            "{} was prepared without --stem, so its words are not stemmed; drop --stem (the recorded options are followed: {})",
            path.display(),
            spec.describe()
        );
    }
    ui.info(format!(
        "tokenizing new text as {} records: {}",
        path.display(),
        spec.describe()
    ));
    Tokenizer::from_spec(spec).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    if let Some(out) = &args.output {
        super::check_output(
            out,
            &[
                ("the model", Some(&args.model)),
                ("the input", Some(&args.input)),
                ("the corpus", args.corpus.as_deref()),
            ],
        )?;
    }
    args.foldin.checked()?;
    let model = TopicModel::read(&args.model)?;
    // Always on stderr; for a private model also in the output itself (below), because the
    // mixtures are derived from the model's noisy release and the guarantee travels with them.
    ui.info(topos_model::privacy_line(model.privacy.as_ref()));
    let tokenizer = text_tokenizer(&args.model, &model, args.corpus.as_deref(), args.stem, ui)?;
    let (mut lines, replaced) = read_lines(&args.input, args.encoding)?;
    if replaced > 0 {
        eprintln!(
            "warning: {replaced} invalid bytes replaced by U+FFFD (--encoding {})",
            args.encoding
        );
    }
    match &args.text_field {
        Some(field) => {
            let mut text = String::new();
            for (i, line) in lines.iter_mut().enumerate() {
                if line.trim().is_empty() {
                    line.clear();
                    continue;
                }
                topos_corpus::readers::text::json_text_field(line, field, &mut text).map_err(
                    |e| anyhow::anyhow!("{}: line {}: {e}", args.input.display(), i + 1),
                )?;
                std::mem::swap(line, &mut text);
            }
        }
        None => {
            // JSON's keys and punctuation would be read as the documents' words.
            let first = lines.iter().map(|l| l.trim()).find(|l| !l.is_empty());
            if first.is_some_and(topos_corpus::readers::text::looks_like_json_object) {
                eprintln!(
                    "warning: {} looks like JSON Lines; its lines are read as plain text, keys and all: give --text-field NAME to read one field's text",
                    args.input.display()
                );
            }
        }
    }
    let mut docs = OwnedDocs::new();
    let mut unknown = 0usize;
    for line in &lines {
        let toks = tokenizer.tokens(line);
        let refs: Vec<&str> = toks.iter().map(String::as_str).collect();
        let ids = doc_to_ids(&model.vocab, &refs);
        unknown += refs.len() - ids.len();
        docs.push(&ids);
    }
    let no_known = docs.view().iter().filter(|d| d.is_empty()).count();
    ui.info(format!(
        "{} documents; {} tokens known to the model, {} unknown tokens dropped",
        docs.len(),
        docs.view().num_tokens(),
        unknown
    ));
    if no_known > 0 {
        // Their mixture would be the prior alone (uniform), which says nothing about them: they
        // get none, in every format.
        eprintln!(
            "warning: {no_known} of {} documents have no word known to the model: they get no topic mixture (tokens 0, no topics; empty cells in csv)",
            docs.len()
        );
    }
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
    // `--json` with `-o`: the results go to the file in --format, as with knn and similar, and
    // stdout gets one document saying what was written.
    if ui.json && args.output.is_none() {
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
                    // No known word, no mixture: empty cells, as jsonl lists no topic.
                    let row: Vec<String> = if t.num_tokens == 0 {
                        vec![String::new(); k]
                    } else {
                        t.dense().iter().map(|p| format!("{p:.6}")).collect()
                    };
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
            ui.written(
                serde_json::json!({
                    "output": p.display().to_string(),
                    "format": args.format,
                    "documents": thetas.len(),
                    "documents_without_known_words": no_known,
                }),
                format!("wrote {}", p.display()),
            );
        }
        None => std::io::stdout().write_all(&out)?,
    }
    Ok(())
}
