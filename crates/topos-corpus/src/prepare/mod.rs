//! `topos prepare`: input → `.tcorp`, in two streaming passes.
//!
//! Pass 1 reads the input and counts, for every distinct token, its corpus frequency and document
//! frequency (memory grows with the vocabulary, not the input). The vocabulary is then pruned and
//! ordered ([`crate::prune`]). Pass 2 reads the input again, tokenizes it the same way and appends
//! word ids to the corpus being built ([`CorpusWriter`]: about 4 bytes per kept token plus 16 bytes
//! per document). Documents are never held in memory beyond a batch of a few MiB; batches are
//! tokenized in parallel and consumed in input order, so the output does not depend on threads.
//!
//! Nothing is written until both passes succeed, and the file is written atomically, so an error
//! never leaves a (partial) output behind.

mod bags;
mod text;

use crate::encoding::Encoding;
use crate::file::CorpusWriter;
use crate::prune::{prune, PruneOptions, TermCount};
use crate::readers::{self, ByteCounter, Decoder, InputFormat, Resolved};
use crate::split::{is_heldout, validate_holdout};
use crate::tokenize::{TokenStats, Tokenizer, TokenizerOptions, TokenizerSpec};
use crate::CorpusError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything `topos prepare` can be told.
#[derive(Clone, Debug, PartialEq)]
pub struct PrepareOptions {
    /// The input format; `None` (default) detects it from the path ([`InputFormat::detect`]).
    pub format: Option<InputFormat>,
    /// The JSONL field holding the document text (default `"text"`).
    pub text_field: String,
    /// The vocabulary file of a UCI or LDA-C input, when it is not beside the data file under its
    /// usual name.
    pub vocab_file: Option<PathBuf>,
    /// How input bytes become text (default: strict UTF-8, an invalid byte is an error). Applies
    /// to the documents of text inputs and to the vocabulary files of bag-of-words inputs.
    pub encoding: Encoding,
    /// Tokenizing (text inputs; only the stop words apply to bag-of-words inputs).
    pub tokenizer: TokenizerOptions,
    /// Vocabulary pruning.
    pub prune: PruneOptions,
    /// Fraction of documents held out for evaluation, in [0, 1) (default 0: all train).
    pub holdout: f64,
    /// Seed of the held-out split (default 0).
    pub seed: u64,
    /// Text read per batch (default 8 MiB): large enough to keep threads busy, small enough to
    /// bound memory.
    pub batch_bytes: usize,
    /// Bytes the corpus being built may take in memory; `None` (default): what the system
    /// still gives this process ([`topos_io::mem::available_memory`], container limits
    /// included). After pass 1 the corpus's size is known from the counts, and a preparation
    /// that would not fit is refused with the numbers before anything is allocated.
    pub memory_limit: Option<u64>,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        Self {
            format: None,
            text_field: "text".to_string(),
            vocab_file: None,
            encoding: Encoding::default(),
            tokenizer: TokenizerOptions::default(),
            prune: PruneOptions::default(),
            holdout: 0.0,
            seed: 0,
            batch_bytes: 8 << 20,
            memory_limit: None,
        }
    }
}

/// Which pass over the input is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    /// Pass 1: counting term and document frequencies.
    Count,
    /// Pass 2: writing word ids.
    Write,
}

impl Pass {
    /// 1 or 2.
    pub fn number(self) -> u32 {
        match self {
            Pass::Count => 1,
            Pass::Write => 2,
        }
    }
}

/// Progress of [`prepare`], reported after each batch: enough for a progress bar per pass with a
/// MB/s rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareProgress {
    /// The pass (there are 2).
    pub pass: Pass,
    /// Bytes of input read from disk so far in this pass (compressed bytes for gzip files).
    pub bytes_read: u64,
    /// Total bytes of input on disk.
    pub bytes_total: u64,
    /// Documents read so far in this pass.
    pub documents: u64,
}

/// What [`prepare`] kept and dropped.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrepareReport {
    pub input: String,
    pub output: String,
    pub format: InputFormat,
    /// Bytes of input on disk.
    pub input_bytes: u64,
    /// Bytes of document text (decompressed; 0 for bag-of-words inputs).
    pub text_bytes: u64,
    /// The encoding the input was read in.
    pub encoding: Encoding,
    /// Bytes that were not valid UTF-8 and were replaced by U+FFFD (`utf-8-lossy` only; under
    /// the strict default such a byte is an error).
    pub invalid_bytes_replaced: u64,
    /// Documents (or vocabulary lines) with at least one replaced byte.
    pub documents_with_invalid_bytes: u64,
    /// A directory input's files that were not read (not `.txt` or `.txt.gz`), by lower-cased
    /// extension ("" for none); empty for other inputs.
    pub input_files_skipped: std::collections::BTreeMap<String, u64>,
    /// Documents in the input.
    pub input_documents: u64,
    /// Documents written (train + held-out).
    pub documents_kept: u64,
    /// Documents dropped because no token was left after tokenizing and pruning.
    pub documents_dropped_empty: u64,
    pub train_documents: u64,
    pub heldout_documents: u64,
    /// Words found in the input (before any filter; for bag-of-words inputs, the sum of counts).
    pub input_words: u64,
    /// Tokens written (train + held-out).
    pub tokens_kept: u64,
    pub train_tokens: u64,
    pub heldout_tokens: u64,
    pub tokens_dropped_stopwords: u64,
    pub tokens_dropped_short: u64,
    /// Of those, pieces of Chinese, Japanese, Thai, … text (scripts written without spaces):
    /// the default tokenizer's single characters (`TokenStats::short_unspaced`).
    pub tokens_dropped_short_unspaced: u64,
    pub tokens_dropped_numbers: u64,
    /// Tokens of words removed by vocabulary pruning.
    pub tokens_dropped_pruned: u64,
    /// Distinct tokens after tokenizing, before pruning.
    pub vocab_before_pruning: u64,
    pub vocab_after_pruning: u64,
    pub words_dropped_min_df: u64,
    pub words_dropped_max_df: u64,
    pub words_dropped_max_vocab: u64,
    /// The tokenizer options recorded in the corpus (what `infer` will cut new text with).
    pub tokenizer: TokenizerSpec,
    /// Payload checksum of the written corpus (hex), as [`crate::Corpus::checksum`].
    pub checksum: String,
    /// Wall-clock time of the whole preparation.
    pub seconds: f64,
}

/// The result of pass 1.
pub(crate) struct Counted {
    /// Distinct tokens with their frequencies, in any order.
    pub terms: Vec<TermCount>,
    /// Documents in the input.
    pub documents: u64,
    /// Documents with at least one token after tokenizing.
    pub nonempty: u64,
    pub stats: TokenStats,
    pub text_bytes: u64,
    /// The document with the most tokens (index, tokens), for bag-of-words inputs (whose
    /// counts can claim anything); (0, 0) for text.
    pub largest: (u64, u64),
}

/// The result of pass 2.
pub(crate) struct Written {
    pub documents: u64,
    pub empty: u64,
    pub tokens: u64,
}

/// Shared state of one preparation, handed to the passes.
pub(crate) struct Ctx<'a> {
    pub input: &'a Resolved,
    pub opts: &'a PrepareOptions,
    pub counter: ByteCounter,
    /// Decodes the input; pass 1's counts what it replaced.
    pub decoder: Decoder,
    pub progress: &'a mut dyn FnMut(PrepareProgress),
}

impl Ctx<'_> {
    pub fn report(&mut self, pass: Pass, documents: u64) {
        (self.progress)(PrepareProgress {
            pass,
            bytes_read: self.counter.get(),
            bytes_total: self.input.bytes,
            documents,
        });
    }

    /// Whether the document at `index` goes to the held-out part.
    pub fn heldout(&self, index: u64) -> bool {
        is_heldout(self.opts.seed, index, self.opts.holdout)
    }

    /// The error for an input that yields a different document stream in pass 2 than in pass 1.
    pub fn changed(&self) -> CorpusError {
        CorpusError::input(
            &self.input.path,
            "changed while it was being prepared (the two passes read different documents); prepare it again when nothing writes to it",
        )
    }
}

/// Prepares the corpus at `input` into the `.tcorp` file `output`, calling `progress` as it goes.
pub fn prepare(
    input: &Path,
    output: &Path,
    opts: &PrepareOptions,
    progress: &mut dyn FnMut(PrepareProgress),
) -> Result<PrepareReport, CorpusError> {
    let start = Instant::now();
    validate_holdout(opts.holdout).map_err(CorpusError::Options)?;
    opts.prune.validate().map_err(CorpusError::Options)?;
    let format = match opts.format {
        Some(f) => f,
        None => InputFormat::detect(input)?,
    };
    let resolved = readers::resolve(input, format, opts.vocab_file.as_deref())?;
    refuse_overwriting_input(&resolved, output)?;
    let tokenizer = Tokenizer::new(&opts.tokenizer)?;
    let spec = TokenizerSpec {
        words_given: format.is_bag_of_words(),
        ..opts.tokenizer.spec()?
    };
    let mut ctx = Ctx {
        input: &resolved,
        opts,
        counter: ByteCounter::default(),
        decoder: Decoder {
            encoding: opts.encoding,
            ..Decoder::default()
        },
        progress,
    };

    // Pass 1.
    ctx.counter = ByteCounter::default();
    let (counted, bag_vocab) = if format.is_bag_of_words() {
        let (c, v) = bags::count(&mut ctx, &tokenizer)?;
        (c, Some(v))
    } else {
        (text::count(&mut ctx, &tokenizer)?, None)
    };
    if counted.documents == 0 {
        return Err(CorpusError::input(
            input,
            format!("has no documents; check the path and the input format ({format})"),
        ));
    }
    let s = counted.stats;
    if counted.nonempty == 0 {
        return Err(CorpusError::input(
            input,
            format!(
                "every one of its {} documents is empty after tokenizing ({} words: {} stop words, {} shorter than {} characters, {} numbers); {}check the input format ({format}){}",
                counted.documents, s.words, s.stopwords, s.short, opts.tokenizer.min_len, s.numbers,
                if s.short_unspaced > 0 && opts.tokenizer.segmenter == crate::tokenize::Segmenter::Words {
                    format!("{} of the short ones are characters of a script written without spaces (Chinese, Japanese, Thai, …), which this tokenizer cannot cut into words: give --tokenizer jieba or segment the text and give --tokenizer whitespace; else ", s.short_unspaced)
                } else {
                    String::new()
                },
                if format == InputFormat::Jsonl { " and --text-field" } else { "" }
            ),
        ));
    }
    let vocab_before = counted.terms.len() as u64;
    let pruned = prune(counted.terms, counted.nonempty, &opts.prune);
    if pruned.words.is_empty() {
        return Err(CorpusError::input(
            input,
            format!(
                "no word survives vocabulary pruning ({vocab_before} words in {} non-empty documents; min_df = {} drops {}, max_df = {} drops {}); lower --min-df or raise --max-df",
                counted.nonempty,
                opts.prune.min_df,
                pruned.dropped_min_df,
                opts.prune.max_df,
                pruned.dropped_max_df
            ),
        ));
    }
    let expected_tokens: u64 = pruned.cf.iter().fold(0, |a, &b| a.saturating_add(b));
    check_memory(
        input,
        opts,
        (counted.nonempty, counted.largest),
        expected_tokens,
        pruned.words.len() as u64,
        pruned.words.iter().map(|w| w.len() as u64).sum(),
    )?;
    // A given vocabulary with capitals: new text lower-cased could never meet those words, so
    // the corpus records that it is matched as written.
    let spec = TokenizerSpec {
        lowercase: spec.lowercase
            && !(spec.words_given
                && pruned
                    .words
                    .iter()
                    .any(|w| w.chars().any(char::is_uppercase))),
        ..spec
    };
    let mut writer = CorpusWriter::new(
        &pruned.words,
        &pruned.cf,
        &pruned.df,
        usize::try_from(expected_tokens).unwrap_or(usize::MAX / 8),
    )
    .with_tokenizer(spec.clone());

    let decoded = ctx.decoder.stats.clone();
    // Pass 2 (reads the same bytes again: its replacements are not counted twice).
    ctx.counter = ByteCounter::default();
    ctx.decoder.stats = Default::default();
    let written = match bag_vocab {
        Some(v) => bags::write(&mut ctx, &v, &pruned.words, &mut writer)?,
        None => text::write(&mut ctx, &tokenizer, &pruned.words, &mut writer)?,
    };
    if written.documents != counted.documents || written.tokens != expected_tokens {
        return Err(ctx.changed());
    }
    if writer.train_docs() == 0 {
        return Err(CorpusError::Options(format!(
            "all {} non-empty documents were held out; lower the held-out fraction ({})",
            writer.heldout_docs(),
            opts.holdout
        )));
    }
    let w = &writer;
    let mut report = PrepareReport {
        input: input.display().to_string(),
        output: output.display().to_string(),
        format,
        input_bytes: resolved.bytes,
        text_bytes: counted.text_bytes,
        encoding: opts.encoding,
        invalid_bytes_replaced: decoded.invalid_bytes(),
        documents_with_invalid_bytes: decoded.units_with_invalid(),
        input_files_skipped: resolved.skipped.clone(),
        input_documents: counted.documents,
        documents_kept: (w.train_docs() + w.heldout_docs()) as u64,
        documents_dropped_empty: written.empty,
        train_documents: w.train_docs() as u64,
        heldout_documents: w.heldout_docs() as u64,
        input_words: s.words,
        tokens_kept: w.train_tokens() + w.heldout_tokens(),
        train_tokens: w.train_tokens(),
        heldout_tokens: w.heldout_tokens(),
        tokens_dropped_stopwords: s.stopwords,
        tokens_dropped_short: s.short,
        tokens_dropped_short_unspaced: s.short_unspaced,
        tokens_dropped_numbers: s.numbers,
        tokens_dropped_pruned: pruned.tokens_dropped,
        vocab_before_pruning: vocab_before,
        vocab_after_pruning: pruned.words.len() as u64,
        words_dropped_min_df: pruned.dropped_min_df,
        words_dropped_max_df: pruned.dropped_max_df,
        words_dropped_max_vocab: pruned.dropped_max_vocab,
        tokenizer: spec,
        checksum: String::new(),
        seconds: 0.0,
    };
    drop(pruned);
    let checksum = writer.write(output)?;
    report.checksum = format!("{checksum:016x}");
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Refuses a corpus that would not fit in memory while it is built (the writer holds it, about
/// 4 bytes per token): a 45-byte UCI file whose one count says 4,000,000,000 asks for 16 GB, and
/// must be refused with the numbers, not killed by the OOM killer with the machine's memory.
fn check_memory(
    input: &Path,
    opts: &PrepareOptions,
    (docs, (doc, largest)): (u64, (u64, u64)),
    tokens: u64,
    words: u64,
    word_bytes: u64,
) -> Result<(), CorpusError> {
    let Some(limit) = opts.memory_limit.or_else(topos_io::mem::available_memory) else {
        return Ok(());
    };
    let needed = CorpusWriter::memory_needed(tokens, docs, words, word_bytes);
    if needed <= limit {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let hint = if largest > tokens / 2 {
        format!(
            "; document {doc} alone has {largest} tokens: if its counts are wrong, fix the input"
        )
    } else {
        "; prepare it on a machine with more memory, or split the input".to_string()
    };
    Err(CorpusError::input(
        input,
        format!(
            "the corpus would hold {tokens} tokens in {docs} documents, which needs {:.2} GiB of memory to build, but only {:.2} GiB is available{hint}",
            gib(needed),
            gib(limit)
        ),
    ))
}

/// A typo like `prepare docs.txt -o docs.txt` would replace the input: refuse it.
fn refuse_overwriting_input(input: &Resolved, output: &Path) -> Result<(), CorpusError> {
    let Ok(out) = output.canonicalize() else {
        return Ok(()); // does not exist yet
    };
    for f in input.files.iter().chain(&input.vocab) {
        if f.canonicalize().is_ok_and(|f| f == out) {
            return Err(CorpusError::Options(format!(
                "the output {} is an input file; choose another output path",
                output.display()
            )));
        }
    }
    Ok(())
}
