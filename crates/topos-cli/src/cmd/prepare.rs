//! `topos prepare`: raw text → corpus file.

use crate::ui::Ui;
use anyhow::Result;
use std::path::PathBuf;
use topos_corpus::{
    prepare, Encoding, InputFormat, Language, Pass, PrepareOptions, PrepareReport, PruneOptions,
    Segmenter, TokenizerOptions,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input: a text file (one document per line, .gz allowed), a directory of .txt (or .txt.gz) files,
    /// a JSONL file, a UCI docword.*.txt[.gz] file, or an LDA-C file.
    pub input: PathBuf,
    /// Output corpus file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Input format (detected from the path when omitted).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<InputFormat>,
    /// JSON field that holds the document text (JSONL input).
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// Encoding of the input text (and of a bag-of-words vocabulary file): utf-8 (invalid bytes
    /// are an error naming the file and line), utf-8-lossy (invalid bytes become U+FFFD and are
    /// counted in the summary), latin1 (ISO-8859-1), windows-1252, or another label of the
    /// Encoding Standard (gbk, gb18030, big5, shift_jis, euc-jp, euc-kr, windows-1251, koi8-r,
    /// iso-8859-2, ...; malformed bytes become U+FFFD and are counted in the summary).
    #[arg(long, default_value = "utf-8")]
    pub encoding: Encoding,
    /// Vocabulary file for UCI / LDA-C input (found beside the input when omitted).
    #[arg(long)]
    pub vocab: Option<PathBuf>,
    /// Fraction of documents held out for evaluation, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    pub holdout: f64,
    /// Seed of the held-out split.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Keep words that occur in at least this many documents.
    #[arg(long, default_value_t = 5)]
    pub min_df: u64,
    /// Drop words that occur in more than this fraction of documents.
    #[arg(long, default_value_t = 0.5)]
    pub max_df: f64,
    /// Keep at most this many (most frequent) words.
    #[arg(long)]
    pub max_vocab: Option<usize>,
    /// How text is cut into words: `words` (Unicode word segmentation), `whitespace`
    /// (pre-tokenized text, e.g. segmented Chinese: split at white space only, tokens kept as
    /// written apart from lower-casing) or `jieba` (Chinese word segmentation; builds with the
    /// `jieba` feature). Recorded in the corpus, so `infer` and `similar --text` cut new text the
    /// same way.
    #[arg(long, default_value = "words", value_parser = parse_segmenter)]
    pub tokenizer: Segmenter,
    /// Language of the stop words and of the `--stem` stemmer (name or ISO 639-1 code): arabic,
    /// chinese (stop words only, no stemmer), danish, dutch, english, finnish, french, german,
    /// greek, hungarian, italian, norwegian, portuguese, romanian, russian, spanish, swedish,
    /// tamil, turkish.
    #[arg(long, default_value = "english", value_parser = parse_language)]
    pub language: Language,
    /// Minimum token length in characters [default: 3 with `--tokenizer words`, 1 with
    /// `--tokenizer whitespace`, whose tokens are the input's words as given, 2 with `--tokenizer
    /// jieba`, whose one-character words are mostly function words].
    #[arg(long)]
    pub min_len: Option<usize>,
    /// Extra stop words, one per line.
    #[arg(long)]
    pub stopwords: Option<PathBuf>,
    /// Keep the built-in stop words of the language.
    #[arg(long)]
    pub keep_stopwords: bool,
    /// Snowball stemming in the language of `--language`.
    #[arg(long)]
    pub stem: bool,
    /// Keep tokens that contain no letter (numbers).
    #[arg(long)]
    pub keep_numbers: bool,
    /// Do not lower-case tokens.
    #[arg(long)]
    pub keep_case: bool,
}

fn parse_segmenter(s: &str) -> Result<Segmenter, String> {
    s.parse()
}

fn parse_language(s: &str) -> Result<Language, String> {
    s.parse()
}

fn parse_format(s: &str) -> Result<InputFormat, String> {
    match s {
        "lines" | "text" => Ok(InputFormat::Lines),
        "dir" => Ok(InputFormat::Dir),
        "jsonl" => Ok(InputFormat::Jsonl),
        "uci" => Ok(InputFormat::Uci),
        "ldac" => Ok(InputFormat::Ldac),
        _ => Err(format!(
            "unknown format {s:?}; use lines, dir, jsonl, uci or ldac"
        )),
    }
}

impl Args {
    pub fn options(&self) -> PrepareOptions {
        PrepareOptions {
            format: self.format,
            text_field: self.text_field.clone(),
            vocab_file: self.vocab.clone(),
            encoding: self.encoding,
            tokenizer: TokenizerOptions {
                segmenter: self.tokenizer,
                language: self.language,
                lowercase: !self.keep_case,
                english_stopwords: !self.keep_stopwords,
                stopword_file: self.stopwords.clone(),
                min_len: self
                    .min_len
                    .unwrap_or_else(|| self.tokenizer.default_min_len()),
                stem: self.stem,
                drop_numbers: !self.keep_numbers,
            },
            prune: PruneOptions {
                min_df: self.min_df,
                max_df: self.max_df,
                max_vocab: self.max_vocab,
            },
            holdout: self.holdout,
            seed: self.seed,
            ..PrepareOptions::default()
        }
    }
}

/// Runs the preparation with a progress bar; shared with `demo`.
pub fn prepare_with_progress(
    input: &std::path::Path,
    output: &std::path::Path,
    opts: &PrepareOptions,
    ui: Ui,
) -> Result<PrepareReport> {
    let bar = ui.bar(
        0,
        "{prefix} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}) {msg}",
    );
    let report = prepare(input, output, opts, &mut |p| {
        bar.set_length(p.bytes_total);
        bar.set_position(p.bytes_read);
        bar.set_prefix(match p.pass {
            Pass::Count => "pass 1/2 counting",
            Pass::Write => "pass 2/2 writing ",
        });
        bar.set_message(format!("{} docs", p.documents));
    });
    bar.finish_and_clear();
    Ok(report?)
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    super::refuse_overwriting(
        &args.output,
        &[
            ("the input", Some(&args.input)),
            ("the vocabulary", args.vocab.as_deref()),
        ],
    )?;
    warn_about_tables(&args);
    let opts = args.options();
    let r = prepare_with_progress(&args.input, &args.output, &opts, ui)?;
    if let Some(w) = skipped_files_warning(&args.input, &r.input_files_skipped) {
        eprintln!("{w}");
    }
    // Only the default tokenizer cuts such text into characters (jieba's one-character words
    // are dropped by choice).
    if r.tokens_dropped_short_unspaced > 0 && r.tokenizer.tokenizer == "words" {
        // A warning, so that --quiet keeps it: the words of such text are lost.
        eprintln!(
            "warning: {} tokens of Chinese, Japanese, Thai or another script written without spaces were dropped as too short: the default tokenizer (Unicode words) cuts such text into single characters; give --tokenizer jieba (Chinese, in builds with the jieba feature), or segment the text beforehand and give --tokenizer whitespace",
            r.tokens_dropped_short_unspaced
        );
    }
    ui.result(&r, || print_report(&r))
}

/// A directory's files that `prepare` did not read (a warning, kept by `--quiet`: their text is
/// missing from the corpus), by extension; none when every file was read.
fn skipped_files_warning(
    input: &std::path::Path,
    skipped: &std::collections::BTreeMap<String, u64>,
) -> Option<String> {
    let total: u64 = skipped.values().sum();
    if total == 0 {
        return None;
    }
    let kinds: Vec<String> = skipped
        .iter()
        .map(|(ext, n)| match ext.as_str() {
            "" => format!("{n} without an extension"),
            ext => format!("{n} .{ext}"),
        })
        .collect();
    Some(format!(
        "warning: {}: {total} file{} not read ({}): a directory's documents are its .txt and .txt.gz files; rename or convert the others to have them read",
        input.display(),
        if total == 1 { " was" } else { "s were" },
        kinds.join(", ")
    ))
}

/// A `.csv` or `.tsv` file is not an input format: read as lines (detected so), its header
/// becomes a document and a quoted field's line breaks split documents. Said before the work (a
/// warning, kept by `--quiet`), with what to give instead.
fn warn_about_tables(args: &Args) {
    let name = args
        .input
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let base = name.strip_suffix(".gz").unwrap_or(&name);
    let table = [".csv", ".tsv"].into_iter().find(|e| base.ends_with(e));
    // Not when the format is named: `--format lines` is a choice.
    if let (Some(ext), None) = (table, args.format) {
        eprintln!(
            "warning: {} is read as one document per line: {ext} is not parsed (its header becomes a document, and a quoted field's line breaks split documents); convert it to JSON Lines and give --text-field, or to one document per line",
            args.input.display()
        );
    }
}

pub fn print_report(r: &PrepareReport) {
    let mb = r.input_bytes as f64 / 1e6;
    println!(
        "wrote {} ({:?} input, {:.1} MB in {:.1} s, {:.1} MB/s)",
        r.output,
        r.format,
        mb,
        r.seconds,
        mb / r.seconds.max(1e-9)
    );
    println!(
        "documents: {} read, {} kept ({} train, {} held out), {} dropped as empty",
        r.input_documents,
        r.documents_kept,
        r.train_documents,
        r.heldout_documents,
        r.documents_dropped_empty
    );
    println!(
        "tokens:    {} read, {} kept ({} train, {} held out); dropped {} stop words, {} too short, {} numbers, {} pruned",
        r.input_words, r.tokens_kept, r.train_tokens, r.heldout_tokens, r.tokens_dropped_stopwords, r.tokens_dropped_short, r.tokens_dropped_numbers, r.tokens_dropped_pruned
    );
    println!("tokenizer: {}", r.tokenizer.describe());
    match r.encoding {
        Encoding::Utf8 => {}
        e if e.replaces_invalid() => println!(
            "encoding:  {e}: {} invalid bytes replaced by U+FFFD in {} documents",
            r.invalid_bytes_replaced, r.documents_with_invalid_bytes
        ),
        e => println!("encoding:  {e}"),
    }
    println!(
        "vocabulary: {} kept of {} ({} below min-df, {} above max-df, {} beyond max-vocab)",
        crate::ui::count(r.vocab_after_pruning, "word", "words"),
        r.vocab_before_pruning,
        r.words_dropped_min_df,
        r.words_dropped_max_df,
        r.words_dropped_max_vocab
    );
}
