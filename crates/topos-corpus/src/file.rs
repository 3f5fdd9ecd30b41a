//! The `.tcorp` corpus file and [`Corpus`], its in-memory or memory-mapped form.
//!
//! A corpus is read far more often than written (every training run, every evaluation), and can be
//! larger than memory would like to copy, so the file is laid out to be used *in place*: its
//! arrays are little-endian, 8-byte aligned, and are cast directly from the memory map to
//! `&[u64]`/`&[u32]`. Opening costs one pass of validation, no parsing into new arrays.
//!
//! File = `topos_io` header (magic `TOPOSCRP`, version 1 or 2, payload length, XXH3 checksum) ‖
//! payload. Payload, version 1 (little-endian; "pad" = zeros up to a multiple of 8 bytes from the
//! payload start, which is itself 8-aligned in the file):
//!
//! | field | type |
//! | --- | --- |
//! | V, train docs, held-out docs, train tokens, held-out tokens | 5 × u64 |
//! | corpus frequency of each word | V × u64 |
//! | document frequency of each word | V × u64 |
//! | words, in id order | V × (u32 byte length, UTF-8 bytes) |
//! | pad, train tokens (word ids) | u32 each |
//! | pad, train offsets | (train docs + 1) × u64 |
//! | train original indices | train docs × u64 |
//! | held-out tokens | u32 each |
//! | pad, held-out offsets | (held-out docs + 1) × u64 |
//! | held-out original indices | held-out docs × u64 |
//!
//! Train tokens come right after the vocabulary so that [`CorpusWriter`] can append them as
//! documents stream in, without knowing their number in advance.
//!
//! Version 2 appends the tokenizer options `prepare` used ([`TokenizerSpec`], JSON, as u32 byte
//! length + UTF-8 bytes), so that `infer` and `similar --text` cut new text into the same tokens
//! as the corpus. A corpus with no options to record (built in memory, synthetic) is still
//! written as version 1, byte for byte as before; version 1 files read as "options unknown".

use crate::{CorpusError, Docs, OwnedDocs, TokenizerSpec, Vocabulary};
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use topos_io::{ByteReader, FormatError, Kind, HEADER_LEN};

/// The corpus file kind.
pub const KIND: Kind = Kind {
    name: "Topos corpus",
    magic: *b"TOPOSCRP",
    supported: &[VERSION, VERSION_TOKENIZER],
    version_hint:
        "upgrade topos to read it, or re-create the corpus with this build's `topos prepare`",
};

/// The version of a corpus that records no tokenizer options.
pub const VERSION: u32 = 1;

/// The version of a corpus that records its tokenizer options (what `prepare` writes).
pub const VERSION_TOKENIZER: u32 = 2;

/// Bytes of the fixed-size fields at the start of the payload.
const SIZES_LEN: usize = 5 * 8;

/// A prepared corpus: vocabulary with frequencies, training documents and held-out documents,
/// each document with its index in the original input. Either memory-mapped from a `.tcorp` file
/// ([`Corpus::open`]) or held in memory ([`Corpus::from_parts`]); the API is the same.
pub struct Corpus {
    vocab: Vocabulary,
    tokenizer: Option<TokenizerSpec>,
    checksum: OnceLock<u64>,
    data: Data,
}

enum Data {
    Mapped { map: memmap2::Mmap, s: Sections },
    Owned(Box<Owned>),
}

struct Owned {
    wf: Vec<u64>,
    df: Vec<u64>,
    train: OwnedDocs,
    heldout: OwnedDocs,
    train_ids: Vec<u64>,
    heldout_ids: Vec<u64>,
}

/// Byte ranges of the arrays in the mapped file (validated, 8-aligned).
#[derive(Clone, Debug)]
struct Sections {
    wf: Range<usize>,
    df: Range<usize>,
    train: PartRanges,
    heldout: PartRanges,
}

#[derive(Clone, Debug)]
struct PartRanges {
    offsets: Range<usize>,
    tokens: Range<usize>,
    ids: Range<usize>,
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Corpus")
            .field("words", &self.vocab.len())
            .field("train_docs", &self.train().len())
            .field("heldout_docs", &self.heldout().len())
            .field("train_tokens", &self.train().num_tokens())
            .field("heldout_tokens", &self.heldout().num_tokens())
            .field("mapped", &matches!(self.data, Data::Mapped { .. }))
            .finish()
    }
}

impl Corpus {
    /// Maps the `.tcorp` file at `path` and validates it: header (magic, version, length,
    /// checksum), then every structural invariant (sizes, offsets, word ids, frequencies), so that
    /// the accessors cannot fail later. A bad file gives a one-line error, never a panic.
    ///
    /// The file must not be modified in place while the corpus is open (Topos only ever replaces
    /// files by renaming, which does not affect an open mapping).
    pub fn open(path: &Path) -> Result<Corpus, CorpusError> {
        Self::open_checked(path, true)
    }

    /// [`Corpus::open`] for a process that will read only a share of the training tokens (one
    /// worker of a multi-process run): everything is checked as by `open` except the payload's
    /// checksum and the training tokens' word ids, which would read the whole file. The first
    /// worker opens with `open` and checks everything; the others compare their file's recorded
    /// checksum with its, and each checks the word ids of the share it reads.
    pub fn open_share(path: &Path) -> Result<Corpus, CorpusError> {
        Self::open_checked(path, false)
    }

    fn open_checked(path: &Path, whole: bool) -> Result<Corpus, CorpusError> {
        if cfg!(target_endian = "big") {
            return Err(CorpusError::BigEndian);
        }
        let file = File::open(path).map_err(|e| FormatError::io(path, e))?;
        let len = file.metadata().map_err(|e| FormatError::io(path, e))?.len();
        if len == 0 {
            return Err(FormatError::Truncated {
                path: path.display().to_string(),
                kind: KIND.name,
                actual: 0,
                expected: HEADER_LEN as u64,
            }
            .into());
        }
        // SAFETY: the mapping is read-only and private to this process; the file is not modified
        // in place by Topos (writers rename a new file over it). See the doc comment.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| FormatError::io(path, e))?;
        let checked = if whole {
            topos_io::check(&KIND, path, &map)?
        } else {
            topos_io::check_header(&KIND, path, &map)?
        };
        let checksum = checked.checksum;
        let malformed = |what: String| FormatError::Malformed {
            path: path.display().to_string(),
            kind: KIND.name,
            what,
        };
        let (vocab, s, tokenizer) = parse(checked.payload, checked.version).map_err(malformed)?;
        let s = s.shifted(HEADER_LEN);
        validate(&map, &vocab, &s, whole).map_err(malformed)?;
        Ok(Corpus {
            vocab,
            tokenizer,
            checksum: OnceLock::from(checksum),
            data: Data::Mapped { map, s },
        })
    }

    /// An in-memory corpus. Original indices are `0..train.len()` for the training documents and
    /// continue with `train.len()..` for the held-out ones; corpus and document frequencies are
    /// counted over both parts.
    ///
    /// # Panics
    /// If a word id is not below `vocab.len()`.
    pub fn from_parts(vocab: Vocabulary, train: OwnedDocs, heldout: OwnedDocs) -> Corpus {
        let v = vocab.len();
        let mut wf = vec![0u64; v];
        let mut df = vec![0u64; v];
        let mut last_doc = vec![u64::MAX; v];
        let mut n = 0u64;
        for part in [train.view(), heldout.view()] {
            for doc in part.iter() {
                for &w in doc {
                    let w = w as usize;
                    assert!(w < v, "word id {w} is not below the vocabulary size {v}");
                    wf[w] += 1;
                    if last_doc[w] != n {
                        last_doc[w] = n;
                        df[w] += 1;
                    }
                }
                n += 1;
            }
        }
        let nt = train.len() as u64;
        let nh = heldout.len() as u64;
        Corpus {
            vocab,
            tokenizer: None,
            checksum: OnceLock::new(),
            data: Data::Owned(Box::new(Owned {
                wf,
                df,
                train,
                heldout,
                train_ids: (0..nt).collect(),
                heldout_ids: (nt..nt + nh).collect(),
            })),
        }
    }

    /// The corpus with `spec` recorded as the tokenizer options its documents were cut with.
    pub fn with_tokenizer(mut self, spec: TokenizerSpec) -> Corpus {
        self.tokenizer = Some(spec);
        self.checksum = OnceLock::new();
        self
    }

    /// The tokenizer options the corpus was prepared with, or `None` when it does not record
    /// them (a version 1 file, or a corpus built in memory).
    pub fn tokenizer(&self) -> Option<&TokenizerSpec> {
        self.tokenizer.as_ref()
    }

    /// Writes the corpus to `path` atomically (temporary file + rename).
    pub fn write(&self, path: &Path) -> Result<(), CorpusError> {
        let sum = self.writer().write(path)?;
        let _ = self.checksum.set(sum);
        Ok(())
    }

    /// Writes the corpus complete and synced under a temporary name beside `path`, to be renamed
    /// into place with [`topos_io::Staged::persist`] once the work that needs it has succeeded
    /// (dropped unpersisted, the temporary is deleted): a command whose outputs are a corpus and
    /// a model replaces both or neither.
    pub fn stage(&self, path: &Path) -> Result<topos_io::Staged, CorpusError> {
        let (staged, sum) = self.writer().stage(path)?;
        let _ = self.checksum.set(sum);
        Ok(staged)
    }

    fn writer(&self) -> CorpusWriter {
        let (train, heldout) = (self.train(), self.heldout());
        let mut w = CorpusWriter::new(
            self.vocab.words(),
            self.word_frequencies(),
            self.document_frequencies(),
            train.tokens().len(),
        );
        if let Some(spec) = &self.tokenizer {
            w = w.with_tokenizer(spec.clone());
        }
        for (part, ids, held) in [
            (train, self.train_ids(), false),
            (heldout, self.heldout_ids(), true),
        ] {
            for (d, &id) in ids.iter().enumerate() {
                w.push(held, id, part.doc(d));
            }
        }
        w
    }

    /// The vocabulary (word ids by descending corpus frequency for prepared corpora).
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// The training documents.
    pub fn train(&self) -> Docs<'_> {
        match &self.data {
            Data::Mapped { map, s } => docs(map, &s.train),
            Data::Owned(o) => o.train.view(),
        }
    }

    /// The held-out documents (for evaluation).
    pub fn heldout(&self) -> Docs<'_> {
        match &self.data {
            Data::Mapped { map, s } => docs(map, &s.heldout),
            Data::Owned(o) => o.heldout.view(),
        }
    }

    /// The input index of each training document (strictly increasing).
    pub fn train_ids(&self) -> &[u64] {
        match &self.data {
            Data::Mapped { map, s } => u64s(map, &s.train.ids),
            Data::Owned(o) => &o.train_ids,
        }
    }

    /// The input index of each held-out document (strictly increasing).
    pub fn heldout_ids(&self) -> &[u64] {
        match &self.data {
            Data::Mapped { map, s } => u64s(map, &s.heldout.ids),
            Data::Owned(o) => &o.heldout_ids,
        }
    }

    /// Occurrences of each word in the corpus (training and held-out documents).
    pub fn word_frequencies(&self) -> &[u64] {
        match &self.data {
            Data::Mapped { map, s } => u64s(map, &s.wf),
            Data::Owned(o) => &o.wf,
        }
    }

    /// Number of documents (training and held-out) each word occurs in.
    pub fn document_frequencies(&self) -> &[u64] {
        match &self.data {
            Data::Mapped { map, s } => u64s(map, &s.df),
            Data::Owned(o) => &o.df,
        }
    }

    /// The payload checksum of the corpus file (XXH3-64, as in the header): it identifies the
    /// corpus, so a model can record which corpus it was trained on. For an in-memory corpus it is
    /// the checksum its file would have (computed on first use).
    pub fn checksum(&self) -> u64 {
        *self
            .checksum
            .get_or_init(|| topos_io::checksum(&self.writer().finish()))
    }

    /// Whether the corpus is memory-mapped from a file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, Data::Mapped { .. })
    }
}

fn u64s<'a>(map: &'a [u8], r: &Range<usize>) -> &'a [u64] {
    bytemuck::cast_slice(&map[r.clone()])
}

fn u32s<'a>(map: &'a [u8], r: &Range<usize>) -> &'a [u32] {
    bytemuck::cast_slice(&map[r.clone()])
}

fn docs<'a>(map: &'a [u8], p: &PartRanges) -> Docs<'a> {
    Docs::new(u64s(map, &p.offsets), u32s(map, &p.tokens))
}

impl Sections {
    fn shifted(self, by: usize) -> Sections {
        let sh = |r: Range<usize>| r.start + by..r.end + by;
        let part = |p: PartRanges| PartRanges {
            offsets: sh(p.offsets),
            tokens: sh(p.tokens),
            ids: sh(p.ids),
        };
        Sections {
            wf: sh(self.wf),
            df: sh(self.df),
            train: part(self.train),
            heldout: part(self.heldout),
        }
    }
}

/// What [`parse`] finds: the vocabulary, the arrays' byte ranges, the tokenizer options.
type Parsed = (Vocabulary, Sections, Option<TokenizerSpec>);

/// Reads the layout of a payload of `version`: sizes, vocabulary and the byte ranges of the
/// arrays (relative to the payload), and (version 2) the tokenizer options. Every size is checked
/// against the bytes present before use, and nothing is allocated for a size before that check
/// (a header claiming 2^40 words fails on the bytes, not in the allocator).
fn parse(payload: &[u8], version: u32) -> Result<Parsed, String> {
    let mut r = ByteReader::new(payload);
    let v = r.u64("the vocabulary size")?;
    let nt = r.u64("the number of training documents")?;
    let nh = r.u64("the number of held-out documents")?;
    let tt = r.u64("the number of training tokens")?;
    let ht = r.u64("the number of held-out tokens")?;
    if v > u64::from(u32::MAX) {
        return Err(format!("vocabulary size {v} exceeds 2^32 - 1"));
    }
    let wf = array(&mut r, v, 8, "the word frequencies")?;
    let df = array(&mut r, v, 8, "the document frequencies")?;
    let mut words = Vec::with_capacity((v as usize).min(r.remaining() / 4));
    for i in 0..v {
        words.push(r.str(&format!("word {i}"))?.to_string());
    }
    let vocab = Vocabulary::new(words);
    if let Some(dup) = vocab.first_duplicate() {
        return Err(format!(
            "word {dup} ('{}') repeats an earlier word",
            vocab.word(dup)
        ));
    }
    r.align(8, "padding before the training tokens")?;
    let train_tokens = array(&mut r, tt, 4, "the training tokens")?;
    r.align(8, "padding before the training offsets")?;
    let train = PartRanges {
        tokens: train_tokens,
        offsets: array(
            &mut r,
            nt.saturating_add(1),
            8,
            "the training document offsets",
        )?,
        ids: array(&mut r, nt, 8, "the training document indices")?,
    };
    let heldout_tokens = array(&mut r, ht, 4, "the held-out tokens")?;
    r.align(8, "padding before the held-out offsets")?;
    let heldout = PartRanges {
        tokens: heldout_tokens,
        offsets: array(
            &mut r,
            nh.saturating_add(1),
            8,
            "the held-out document offsets",
        )?,
        ids: array(&mut r, nh, 8, "the held-out document indices")?,
    };
    let tokenizer = if version >= VERSION_TOKENIZER {
        let json = r.str("the tokenizer options")?;
        // Parsed for its structure only: a newer tokenizer version keeps the corpus usable for
        // training, and is refused by whatever needs to tokenize (see `TokenizerSpec::check`).
        let spec: TokenizerSpec = serde_json::from_str(json)
            .map_err(|e| format!("the tokenizer options do not parse ({e})"))?;
        Some(spec)
    } else {
        None
    };
    if r.remaining() != 0 {
        return Err(format!(
            "{} unexpected bytes after the {}",
            r.remaining(),
            if tokenizer.is_some() {
                "tokenizer options"
            } else {
                "held-out document indices"
            }
        ));
    }
    Ok((
        vocab,
        Sections {
            wf,
            df,
            train,
            heldout,
        },
        tokenizer,
    ))
}

/// The byte range of `n` values of `size` bytes at the reader's position.
fn array(r: &mut ByteReader, n: u64, size: usize, what: &str) -> Result<Range<usize>, String> {
    let bytes = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| format!("{what}: size {n} is too large"))?;
    let start = r.position();
    r.take(bytes, what)?;
    Ok(start..start + bytes)
}

/// Checks every invariant the accessors rely on (alignment, CSR offsets, word ids) and those a
/// consumer may assume (frequencies add up, original indices increase).
/// Checks every structural invariant; the training tokens' word ids only with `train_tokens`.
fn validate(
    map: &[u8],
    vocab: &Vocabulary,
    s: &Sections,
    train_tokens: bool,
) -> Result<(), String> {
    let v = vocab.len() as u64;
    let u64s = |r: &Range<usize>, what: &str| {
        bytemuck::try_cast_slice::<u8, u64>(&map[r.clone()])
            .map_err(|e| format!("{what} cannot be read in place ({e:?})"))
    };
    let u32s = |r: &Range<usize>, what: &str| {
        bytemuck::try_cast_slice::<u8, u32>(&map[r.clone()])
            .map_err(|e| format!("{what} cannot be read in place ({e:?})"))
    };
    let mut n_docs = 0u64;
    let mut n_tokens = 0u64;
    for (p, name) in [(&s.train, "training"), (&s.heldout, "held-out")] {
        let offsets = u64s(&p.offsets, "offsets")?;
        let tokens = u32s(&p.tokens, "tokens")?;
        let ids = u64s(&p.ids, "indices")?;
        if offsets[0] != 0 {
            return Err(format!(
                "{name} offsets start at {} instead of 0",
                offsets[0]
            ));
        }
        if let Some(d) = offsets.windows(2).position(|w| w[0] > w[1]) {
            return Err(format!(
                "{name} offsets decrease at document {d} ({} then {})",
                offsets[d],
                offsets[d + 1]
            ));
        }
        let last = *offsets.last().unwrap_or(&0);
        if last != tokens.len() as u64 {
            return Err(format!(
                "{name} offsets end at {last} but there are {} {name} tokens",
                tokens.len()
            ));
        }
        let scan = train_tokens || !std::ptr::eq(p, &s.train);
        if scan
            && tokens
                .iter()
                .copied()
                .max()
                .is_some_and(|m| u64::from(m) >= v)
        {
            let i = tokens.iter().position(|&w| u64::from(w) >= v).unwrap_or(0);
            return Err(format!(
                "{name} token {i} has word id {} but the vocabulary has {v} words",
                tokens[i]
            ));
        }
        if let Some(d) = ids.windows(2).position(|w| w[0] >= w[1]) {
            return Err(format!(
                "{name} document indices do not increase at document {} ({} then {})",
                d + 1,
                ids[d],
                ids[d + 1]
            ));
        }
        n_docs += ids.len() as u64;
        n_tokens += tokens.len() as u64;
    }
    let wf = u64s(&s.wf, "word frequencies")?;
    let df = u64s(&s.df, "document frequencies")?;
    let mut sum = 0u64;
    for (w, (&f, &d)) in wf.iter().zip(df).enumerate() {
        if d > f || d > n_docs {
            return Err(format!(
                "word {w} has document frequency {d} but corpus frequency {f} and {n_docs} documents"
            ));
        }
        sum = sum.saturating_add(f);
    }
    if sum != n_tokens {
        return Err(format!(
            "word frequencies add up to {sum} but the corpus has {n_tokens} tokens"
        ));
    }
    Ok(())
}

/// Builds a `.tcorp` payload as documents stream in: training tokens are appended in place to the
/// payload buffer (about 4 bytes per token, no second copy), held-out documents are kept aside
/// until [`CorpusWriter::finish`].
pub struct CorpusWriter {
    buf: Vec<u8>,
    v: u32,
    tokenizer: Option<TokenizerSpec>,
    train_offsets: Vec<u64>,
    train_ids: Vec<u64>,
    train_tokens: u64,
    heldout: OwnedDocs,
    heldout_ids: Vec<u64>,
}

impl CorpusWriter {
    /// Starts a payload over the vocabulary `words` with corpus frequencies `wf` and document
    /// frequencies `df`; `train_capacity` is the expected number of training tokens (a hint).
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn new(words: &[String], wf: &[u64], df: &[u64], train_capacity: usize) -> Self {
        assert_eq!(words.len(), wf.len());
        assert_eq!(words.len(), df.len());
        let text: usize = words.iter().map(|w| 4 + w.len()).sum();
        let mut buf =
            Vec::with_capacity(SIZES_LEN + 16 * words.len() + text + 8 + 4 * train_capacity);
        buf.resize(SIZES_LEN, 0);
        extend_u64s(&mut buf, wf);
        extend_u64s(&mut buf, df);
        for w in words {
            buf.extend_from_slice(&(w.len() as u32).to_le_bytes());
            buf.extend_from_slice(w.as_bytes());
        }
        pad8(&mut buf);
        Self {
            buf,
            v: words.len() as u32,
            tokenizer: None,
            train_offsets: vec![0],
            train_ids: Vec::new(),
            train_tokens: 0,
            heldout: OwnedDocs::new(),
            heldout_ids: Vec::new(),
        }
    }

    /// Records the tokenizer options the documents were cut with (the file becomes version 2).
    pub fn with_tokenizer(mut self, spec: TokenizerSpec) -> Self {
        self.tokenizer = Some(spec);
        self
    }

    /// The file version [`CorpusWriter::write`] will write.
    pub fn version(&self) -> u32 {
        if self.tokenizer.is_some() {
            VERSION_TOKENIZER
        } else {
            VERSION
        }
    }

    /// Appends a document, to the held-out part if `heldout`, with its input index (indices must
    /// increase within each part).
    pub fn push(&mut self, heldout: bool, original_index: u64, words: &[u32]) {
        debug_assert!(words.iter().all(|&w| w < self.v));
        if heldout {
            debug_assert!(self.heldout_ids.last().is_none_or(|&l| l < original_index));
            self.heldout.push(words);
            self.heldout_ids.push(original_index);
        } else {
            debug_assert!(self.train_ids.last().is_none_or(|&l| l < original_index));
            extend_u32s(&mut self.buf, words);
            self.train_tokens += words.len() as u64;
            self.train_offsets.push(self.train_tokens);
            self.train_ids.push(original_index);
        }
    }

    /// [`CorpusWriter::push`] of a document given as runs (word, count), written straight into
    /// the corpus: a bag-of-words document whose counts say billions is never copied.
    pub fn push_runs(&mut self, heldout: bool, original_index: u64, runs: &[(u32, u32)]) {
        debug_assert!(runs.iter().all(|&(w, _)| w < self.v));
        let runs = runs.iter().copied();
        if heldout {
            debug_assert!(self.heldout_ids.last().is_none_or(|&l| l < original_index));
            self.heldout.push_runs(runs);
            self.heldout_ids.push(original_index);
        } else {
            debug_assert!(self.train_ids.last().is_none_or(|&l| l < original_index));
            for (w, c) in runs {
                let bytes = w.to_le_bytes();
                for _ in 0..c {
                    self.buf.extend_from_slice(&bytes);
                }
                self.train_tokens += u64::from(c);
            }
            self.train_offsets.push(self.train_tokens);
            self.train_ids.push(original_index);
        }
    }

    /// Bytes of memory a corpus of `tokens` tokens in `docs` documents over a vocabulary of
    /// `words` words (`word_bytes` of text) takes while it is built (the payload of 4 bytes per
    /// token, offsets and indices of 16 bytes per document for each part, the held-out part
    /// held aside until [`CorpusWriter::finish`] appends it, and the frequencies), so that a
    /// preparation that cannot fit is refused before it starts.
    pub fn memory_needed(tokens: u64, docs: u64, words: u64, word_bytes: u64) -> u64 {
        tokens
            .saturating_mul(4)
            .saturating_add(docs.saturating_mul(32))
            .saturating_add(words.saturating_mul(20))
            .saturating_add(word_bytes)
            .saturating_add(SIZES_LEN as u64 + 64)
    }

    /// Training documents so far.
    pub fn train_docs(&self) -> usize {
        self.train_ids.len()
    }

    /// Held-out documents so far.
    pub fn heldout_docs(&self) -> usize {
        self.heldout_ids.len()
    }

    /// Training tokens so far.
    pub fn train_tokens(&self) -> u64 {
        self.train_tokens
    }

    /// Held-out tokens so far.
    pub fn heldout_tokens(&self) -> u64 {
        self.heldout.view().num_tokens()
    }

    /// The complete payload.
    pub fn finish(self) -> Vec<u8> {
        let Self {
            mut buf,
            v,
            tokenizer,
            train_offsets,
            train_ids,
            train_tokens,
            heldout,
            heldout_ids,
        } = self;
        let (h_offsets, h_tokens) = heldout.into_parts();
        pad8(&mut buf);
        buf.reserve_exact(
            8 * (train_offsets.len() + train_ids.len() + h_offsets.len() + heldout_ids.len())
                + 4 * h_tokens.len()
                + 8,
        );
        extend_u64s(&mut buf, &train_offsets);
        extend_u64s(&mut buf, &train_ids);
        extend_u32s(&mut buf, &h_tokens);
        pad8(&mut buf);
        extend_u64s(&mut buf, &h_offsets);
        extend_u64s(&mut buf, &heldout_ids);
        if let Some(spec) = tokenizer {
            let json = spec.encode();
            buf.extend_from_slice(&(json.len() as u32).to_le_bytes());
            buf.extend_from_slice(&json);
        }
        let sizes = [
            u64::from(v),
            train_ids.len() as u64,
            heldout_ids.len() as u64,
            train_tokens,
            h_tokens.len() as u64,
        ];
        for (i, x) in sizes.iter().enumerate() {
            buf[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
        }
        buf
    }

    /// Writes the file atomically and returns its payload checksum.
    pub fn write(self, path: &Path) -> Result<u64, CorpusError> {
        let (staged, sum) = self.stage(path)?;
        staged.persist()?;
        Ok(sum)
    }

    /// The file complete under its temporary name, and its checksum (see [`Corpus::stage`]).
    pub fn stage(self, path: &Path) -> Result<(topos_io::Staged, u64), CorpusError> {
        let version = self.version();
        let payload = self.finish();
        let header = topos_io::header(&KIND, version, &payload);
        let mut f = topos_io::AtomicFile::create(path)?;
        f.write_all(&header)?;
        f.write_all(&payload)?;
        let staged = f.stage()?;
        Ok((
            staged,
            u64::from_le_bytes(header[24..32].try_into().unwrap()),
        ))
    }
}

fn pad8(buf: &mut Vec<u8>) {
    buf.resize(buf.len().next_multiple_of(8), 0);
}

fn extend_u64s(buf: &mut Vec<u8>, v: &[u64]) {
    if cfg!(target_endian = "little") {
        buf.extend_from_slice(bytemuck::cast_slice(v));
    } else {
        v.iter()
            .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
    }
}

fn extend_u32s(buf: &mut Vec<u8>, v: &[u32]) {
    if cfg!(target_endian = "little") {
        buf.extend_from_slice(bytemuck::cast_slice(v));
    } else {
        v.iter()
            .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Corpus {
        let vocab = Vocabulary::new(
            ["apple", "banana", "cherry", "date"]
                .map(String::from)
                .into(),
        );
        let train: OwnedDocs = [&[0u32, 1, 0][..], &[2], &[0, 3, 3, 1]]
            .into_iter()
            .collect();
        let heldout: OwnedDocs = [&[1u32, 0][..], &[]].into_iter().collect();
        Corpus::from_parts(vocab, train, heldout)
    }

    fn assert_same(a: &Corpus, b: &Corpus) {
        assert_eq!(a.vocab(), b.vocab());
        assert_eq!(a.train().offsets(), b.train().offsets());
        assert_eq!(a.train().tokens(), b.train().tokens());
        assert_eq!(a.heldout().offsets(), b.heldout().offsets());
        assert_eq!(a.heldout().tokens(), b.heldout().tokens());
        assert_eq!(a.train_ids(), b.train_ids());
        assert_eq!(a.heldout_ids(), b.heldout_ids());
        assert_eq!(a.word_frequencies(), b.word_frequencies());
        assert_eq!(a.document_frequencies(), b.document_frequencies());
        assert_eq!(a.checksum(), b.checksum());
    }

    #[test]
    fn corpus_is_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Corpus>();
        let c = sample();
        let n: u64 = std::thread::scope(|s| {
            let h: Vec<_> = (0..2).map(|_| s.spawn(|| c.train().num_tokens())).collect();
            h.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(n, 16);
    }

    #[test]
    fn from_parts_counts_frequencies() {
        let c = sample();
        assert_eq!(c.word_frequencies(), [4, 3, 1, 2]);
        assert_eq!(c.document_frequencies(), [3, 3, 1, 1]);
        assert_eq!(c.train_ids(), [0, 1, 2]);
        assert_eq!(c.heldout_ids(), [3, 4]);
        assert!(!c.is_mapped());
    }

    #[test]
    fn roundtrip_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.tcorp");
        let c = sample();
        let sum = c.checksum();
        c.write(&p).unwrap();
        let o = Corpus::open(&p).unwrap();
        assert!(o.is_mapped());
        assert_same(&c, &o);
        assert_eq!(o.checksum(), sum);
        // The arrays are views into the mapping, not copies.
        let addr = o.train().tokens().as_ptr() as usize;
        assert_eq!(addr % 4, 0);
        assert_eq!(o.train().offsets().as_ptr() as usize % 8, 0);
        // Writing a mapped corpus gives the same bytes.
        let p2 = dir.path().join("d.tcorp");
        o.write(&p2).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&p2).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_share_is_opened_without_reading_every_training_token() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.tcorp");
        let c = sample();
        c.write(&p).unwrap();
        assert_same(&c, &Corpus::open_share(&p).unwrap());
        // A training token out of the vocabulary, the checksum left as it was: `open` refuses
        // the file (its checksum), `open_share` leaves the word ids to the share's reader.
        let mut bytes = std::fs::read(&p).unwrap();
        let train: Vec<u8> = [0u32, 1, 0, 2, 0, 3, 3, 1]
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .collect();
        let at = bytes
            .windows(train.len())
            .position(|w| w == train.as_slice())
            .unwrap();
        bytes[at + 20] = 9;
        std::fs::write(&p, &bytes).unwrap();
        assert!(Corpus::open(&p).is_err());
        let share = Corpus::open_share(&p).unwrap();
        assert_eq!(share.train().max_word_id_bound(), 10);
        assert_eq!(share.checksum(), c.checksum());
        // The held-out part and the structure are still checked: its first token's place in the
        // file, from where a pristine copy maps its tokens.
        let pristine = dir.path().join("d.tcorp");
        c.write(&pristine).unwrap();
        let o = Corpus::open(&pristine).unwrap();
        let base = o.train().tokens().as_ptr() as usize - at;
        let h = o.heldout().tokens().as_ptr() as usize - base;
        bytes[at + 20] = 3;
        bytes[h] = 7;
        std::fs::write(&p, &bytes).unwrap();
        let e = Corpus::open_share(&p).unwrap_err().to_string();
        assert!(e.contains("word id 7"), "{e}");
    }

    #[test]
    fn tokenizer_options_roundtrip_and_version_1_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (p1, p2) = (dir.path().join("v1.tcorp"), dir.path().join("v2.tcorp"));
        sample().write(&p1).unwrap();
        let spec = crate::TokenizerOptions {
            stem: true,
            ..Default::default()
        }
        .spec()
        .unwrap();
        let c = sample().with_tokenizer(spec.clone());
        let sum = c.checksum();
        c.write(&p2).unwrap();
        let (o1, o2) = (Corpus::open(&p1).unwrap(), Corpus::open(&p2).unwrap());
        assert_eq!(o1.tokenizer(), None);
        assert_eq!(o2.tokenizer(), Some(&spec));
        assert_eq!(o2.checksum(), sum);
        assert_ne!(o1.checksum(), o2.checksum());
        assert_same(&o1, &sample());
        let bytes = std::fs::read(&p2).unwrap();
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2);
        assert_eq!(
            u32::from_le_bytes(std::fs::read(&p1).unwrap()[8..12].try_into().unwrap()),
            1
        );
        // Rewriting a mapped v2 corpus keeps its options, byte for byte.
        let p3 = dir.path().join("v2b.tcorp");
        o2.write(&p3).unwrap();
        assert_eq!(std::fs::read(&p3).unwrap(), bytes);
    }

    #[test]
    fn empty_parts_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.tcorp");
        let c = Corpus::from_parts(Vocabulary::default(), OwnedDocs::new(), OwnedDocs::new());
        c.write(&p).unwrap();
        let o = Corpus::open(&p).unwrap();
        assert_same(&c, &o);
        assert!(o.train().is_empty() && o.vocab().is_empty());
    }

    #[test]
    #[should_panic(expected = "word id 4")]
    fn from_parts_rejects_unknown_word_ids() {
        let vocab = Vocabulary::new(["x", "y", "z", "w"].map(String::from).into());
        let train: OwnedDocs = [&[4u32][..]].into_iter().collect();
        Corpus::from_parts(vocab, train, OwnedDocs::new());
    }
}
