//! The model file `.tmod` and its side file of training document-topic counts `.doctopics`.
//!
//! Both are `topos_io` files (magic, version, payload length, XXH3 checksum; written atomically).
//! All integers are little-endian.
//!
//! **`.tmod`, version 4** (magic `TOPOSMOD`), written for a model with an asymmetric α (learned
//! by `topos train --optimize-priors`), payload:
//!
//! ```text
//! hyperparameters  u32 K, f64 α (the mean α_k when asymmetric), f64 β
//! provenance       str algorithm, u32 iterations, u64 seed, u64 corpus checksum,
//!                  u64 documents, u64 tokens
//! vocabulary       u32 V, then V × str                    (str = u32 byte length ‖ UTF-8)
//! word-topic B     u64 Σ_vk B_vk, then for each word v = 0..V:
//!                  u32 nnz, then nnz × (u16 topic, u32 count), topics strictly increasing
//! privacy          u8 0 (no guarantee) or 1, then str: the differential-privacy
//!                  guarantee (`topos_privacy::Guarantee`) as compact JSON
//! tokenizer        u8 0 (unknown) or 1, then str: the corpus's tokenizer options
//!                  (`topos_corpus::TokenizerSpec`) as compact JSON (version 3)
//! priors           u8 1, then K × f64 α_k, not all equal (version 4); in version 5 u8 0
//!                  (a symmetric α) or 1 and the α_k
//! sampler settings u32 n ≥ 1, then n × (str name, u32 value), names strictly increasing
//!                  (version 5)
//! ```
//!
//! **Version 5** adds the sampler settings that change the model (`mh_steps`, from `topos train
//! --mh-steps`) where they differ from their defaults, and is written only for such a model:
//! every other model keeps the bytes of version 3 or 4, and a build that cannot read the
//! settings refuses only a model trained with them (instead of reading it as a model of the
//! default settings).
//!
//! **Version 3** is the same without the priors section, and is what a model with a symmetric α
//! still writes (every α_k is the header's α): a model trained without `--optimize-priors` gets
//! the bytes it got before priors could be learned, and only a model that needs the new section
//! is refused by a build that cannot read it (instead of being read with the wrong α).
//!
//! **Version 2** is the same without the tokenizer section (`tests/fixtures/v2*.tmod`): read as a
//! model whose tokenizer is unknown, so `infer` falls back on the corpus beside it. Version 3
//! lets `infer` and `similar --text` cut new text as `prepare` cut the corpus with the model file
//! alone (issue 18, row 14); the options are public facts about the preparation (no data), so a
//! private model carries them too.
//!
//! **Version 1** is the same without the privacy section; it is still read (as a model without
//! a guarantee), and `tests/fixtures/v1.tmod` keeps it so. The guarantee is JSON because it is
//! a small record of named fields and enums that will grow (δ, other accountants); it must be
//! exactly what `serde_json` writes for the parsed value (a canonical form), so that the file
//! stays a pure function of the model, and it is validated like the rest (ε positive and
//! finite, δ in [0, 1), at least one release, a positive token cap, a Rényi order above 1 only
//! with a positive δ, a positive noise scale). The guarantee's JSON grew two optional fields
//! without a version bump (the Rényi order of the accountant and the noise scale, issue 3
//! follow-up): they are omitted when absent, so every guarantee written before them reads and
//! re-encodes unchanged (`tests/fixtures/v2-private.tmod`); a binary older than them refuses a
//! model that has them, with "not in its canonical encoding", rather than misreading it.
//!
//! A private model's counts are the last noisy release of training (`topos train --private`),
//! never the training counts, and the file holds no per-document state (no assignments, no
//! document-topic counts); its provenance withholds what would identify the data: seed, corpus
//! checksum, and document and token counts are 0.
//!
//! B is stored sparsely because at large K most of V × K is zero (a word occurs in few topics;
//! CuLDA_CGS §6.1.3 and EZLDA's hybrid storage make the same observation). The stored total lets
//! the reader check the counts as a whole, the checksum guards against corruption, and the
//! structural checks (K in range, α, β positive, topics below K and increasing, counts positive,
//! no duplicate words) guard against files that were written wrong. The topic totals n_k are
//! recomputed on reading, never stored, so they cannot disagree with B.
//!
//! The bytes are a pure function of the model — no timestamps, thread counts or host names — so
//! the same training run gives a byte-identical file.
//!
//! **`.doctopics`, version 2** (magic `TOPOSDTC`), the document-topic counts A of the training
//! documents, in CSR form, after the payload checksum of the model file they belong to:
//!
//! ```text
//! u64 model checksum, u32 K, u64 D, u64 nnz, (D + 1) × u64 offsets, nnz × u16 topics,
//! nnz × u32 counts
//! ```
//!
//! A side file whose recorded checksum is not its model's is refused
//! ([`DocTopics::read_for_model`]): a model retrained to the same path, or a crash between the
//! renames of the two files, can no longer pair one run's model with another's document counts
//! (issue 18). Version 1 (no checksum) is still read.
//!
//! It lives beside the model as `<model path>.doctopics` ([`doc_topics_path`]), so a model can be
//! shipped without it (inference and held-out evaluation need only B).

use crate::mem::{available_memory, check_budget, try_zeroed};
use crate::model::{DocTopics, Hyperparameters, Provenance, TopicModel};
use crate::ModelError;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use topos_corpus::Vocabulary;
use topos_io::{ByteReader, ByteWriter, FormatError, Kind};

/// The model file's newest format version (5: the sampler settings section). A model with a
/// symmetric α and default sampler settings is written as version 3 ([`model_version`]).
pub const MODEL_VERSION: u32 = 5;

/// The version a model with hyperparameters `hyper` and provenance `provenance` is written as:
/// 5 with sampler settings, else 4 with an asymmetric α, else 3 (see the module documentation).
pub fn model_version(hyper: &Hyperparameters, provenance: &Provenance) -> u32 {
    if !provenance.sampler_settings.is_empty() {
        5
    } else if hyper.alpha.symmetric_value().is_some() {
        3
    } else {
        4
    }
}

/// The most sampler settings a model file may record (a sanity bound for the reader).
const MAX_SAMPLER_SETTINGS: usize = 64;

/// The model file kind.
pub const MODEL_KIND: Kind = Kind {
    name: "Topos model",
    magic: *b"TOPOSMOD",
    supported: &[1, 2, 3, 4, 5],
    version_hint: "read it with the topos release that wrote it, or re-train the model",
};

/// The document-topic side file's current format version (2: it records the checksum of the
/// model it belongs to).
pub const DOC_TOPICS_VERSION: u32 = 2;

/// The document-topic side file kind.
pub const DOC_TOPICS_KIND: Kind = Kind {
    name: "Topos document-topic",
    magic: *b"TOPOSDTC",
    supported: &[1, 2],
    version_hint: "read it with the topos release that wrote it, or re-train the model",
};

/// Extension appended to a model's path to name its document-topic side file.
pub const DOC_TOPICS_EXTENSION: &str = "doctopics";

/// The side file of the model at `model`: the model's path with `.doctopics` appended
/// (`run/news.tmod` → `run/news.tmod.doctopics`), so two models in one directory never share one.
pub fn doc_topics_path(model: &Path) -> PathBuf {
    let mut name = model.as_os_str().to_owned();
    name.push(".");
    name.push(DOC_TOPICS_EXTENSION);
    PathBuf::from(name)
}

/// Words encoded per parallel task when writing; fixed, so the output never depends on threads.
const ENCODE_CHUNK_WORDS: usize = 4096;

const MEMORY_HINT: &str = "read the model on a machine with more memory";

impl TopicModel {
    /// Checks the invariants a model file must satisfy; a one-line description of the first
    /// violation otherwise.
    pub fn validate(&self) -> Result<(), String> {
        Hyperparameters::with_alpha(self.hyper.alpha.clone(), Some(self.hyper.beta))
            .map_err(|e| e.to_string())?;
        if self.hyper.alpha.len() != self.hyper.k() {
            return Err(format!(
                "{} values of alpha for K = {}",
                self.hyper.alpha.len(),
                self.hyper.k()
            ));
        }
        let v = self.vocab.len();
        if Some(self.word_topic.len()) != v.checked_mul(self.num_topics()) {
            return Err(format!(
                "word-topic matrix has {} entries, expected V × K = {v} × {}",
                self.word_topic.len(),
                self.num_topics()
            ));
        }
        validate_vocabulary(&self.vocab)?;
        if let Some(g) = &self.privacy {
            validate_guarantee(g)?;
        }
        validate_sampler_settings(&self.provenance.sampler_settings)?;
        Ok(())
    }

    /// The file payload (see the module documentation).
    fn encode(&self) -> Result<Vec<u8>, ModelError> {
        self.validate()
            .map_err(|why| ModelError::Inconsistent { what: "model", why })?;
        let k = self.num_topics();
        let mut w = ByteWriter::new();
        encode_head(&mut w, &self.hyper, &self.provenance, &self.vocab);
        let total: u64 = self
            .word_topic
            .par_iter()
            .with_min_len(1 << 16)
            .map(|&c| u64::from(c))
            .sum();
        w.u64(total);
        let chunks: Vec<Vec<u8>> = self
            .word_topic
            .par_chunks(ENCODE_CHUNK_WORDS * k)
            .map(|rows| {
                let mut cw = ByteWriter::new();
                for row in rows.chunks_exact(k) {
                    cw.u32(row.iter().filter(|&&c| c > 0).count() as u32);
                    for (t, &c) in row.iter().enumerate() {
                        if c > 0 {
                            cw.u16(t as u16);
                            cw.u32(c);
                        }
                    }
                }
                cw.buf
            })
            .collect();
        w.buf.reserve(chunks.iter().map(Vec::len).sum());
        for c in chunks {
            w.buf.extend_from_slice(&c);
        }
        encode_privacy(&mut w, self.privacy.as_ref());
        encode_tokenizer(&mut w, self.tokenizer.as_ref());
        encode_tail(&mut w, &self.hyper, &self.provenance);
        Ok(w.buf)
    }

    /// The whole file: header and payload. A pure function of the model.
    pub fn to_file_bytes(&self) -> Result<Vec<u8>, ModelError> {
        let payload = self.encode()?;
        let version = model_version(&self.hyper, &self.provenance);
        let mut bytes = topos_io::header(&MODEL_KIND, version, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }

    /// Writes the model to `path` atomically (a temporary file renamed into place).
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        let payload = self.encode()?;
        let version = model_version(&self.hyper, &self.provenance);
        topos_io::write_file(&MODEL_KIND, version, path, &payload)?;
        Ok(())
    }

    /// Reads and validates the model at `path`.
    pub fn read(path: &Path) -> Result<TopicModel, ModelError> {
        Ok(Self::read_with_checksum(path)?.0)
    }

    /// Reads the model at `path` with its payload checksum, which identifies this model file
    /// (its `.doctopics` side file records it, [`DocTopics::read_for_model`]).
    pub fn read_with_checksum(path: &Path) -> Result<(TopicModel, u64), ModelError> {
        let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
        let model = Self::from_file_bytes(&bytes, path)?;
        let sum = u64::from_le_bytes(bytes[24..32].try_into().expect("a checked header"));
        Ok((model, sum))
    }

    /// Parses a whole model file already in memory; `path` only names it in messages.
    pub fn from_file_bytes(bytes: &[u8], path: &Path) -> Result<TopicModel, ModelError> {
        let checked = topos_io::check(&MODEL_KIND, path, bytes)?;
        let malformed = |what: String| FormatError::Malformed {
            path: path.display().to_string(),
            kind: MODEL_KIND.name,
            what,
        };
        match checked.version {
            v @ (1..=5) => decode_model(checked.payload, v, &malformed),
            v => Err(malformed(format!("no decoder for version {v}")).into()),
        }
    }
}

/// Hyperparameters, provenance and vocabulary: the payload up to the word-topic counts.
pub(crate) fn encode_head(
    w: &mut ByteWriter,
    hyper: &Hyperparameters,
    p: &Provenance,
    vocab: &Vocabulary,
) {
    w.u32(hyper.num_topics);
    w.f64(match hyper.alpha.symmetric_value() {
        Some(a) => a,
        None => hyper.alpha.mean(),
    });
    w.f64(hyper.beta);
    w.str(&p.algorithm);
    w.u32(p.iterations);
    w.u64(p.seed);
    w.u64(p.corpus_checksum);
    w.u64(p.num_docs);
    w.u64(p.num_tokens);
    w.u32(vocab.len() as u32);
    for word in vocab.words() {
        w.str(word);
    }
}

/// The privacy section: the payload after the word-topic counts.
pub(crate) fn encode_privacy(w: &mut ByteWriter, privacy: Option<&topos_privacy::Guarantee>) {
    match privacy {
        None => w.u8(0),
        Some(g) => {
            w.u8(1);
            w.str(&serde_json::to_string(g).expect("a guarantee serializes"));
        }
    }
}

/// The tokenizer section (version 3): the payload after the privacy section.
pub(crate) fn encode_tokenizer(
    w: &mut ByteWriter,
    tokenizer: Option<&topos_corpus::TokenizerSpec>,
) {
    match tokenizer {
        None => w.u8(0),
        Some(t) => {
            w.u8(1);
            w.str(&String::from_utf8(t.encode()).expect("a tokenizer spec is UTF-8 JSON"));
        }
    }
}

/// The payload's end: the priors section (version 4: written only for an asymmetric α; version
/// 5: a flag byte either way) and the sampler settings section (version 5).
pub(crate) fn encode_tail(w: &mut ByteWriter, hyper: &Hyperparameters, p: &Provenance) {
    let version = model_version(hyper, p);
    match hyper.alpha.symmetric_value() {
        None => {
            w.u8(1);
            for &a in hyper.alpha.values() {
                w.f64(a);
            }
        }
        Some(_) if version >= 5 => w.u8(0),
        Some(_) => {}
    }
    if version >= 5 {
        w.u32(p.sampler_settings.len() as u32);
        for (name, &value) in &p.sampler_settings {
            w.str(name);
            w.u32(value);
        }
    }
}

/// The rules recorded sampler settings satisfy: at most [`MAX_SAMPLER_SETTINGS`], names of
/// lower-case ASCII letters, digits and `_`.
pub(crate) fn validate_sampler_settings(
    settings: &std::collections::BTreeMap<String, u32>,
) -> Result<(), String> {
    if settings.len() > MAX_SAMPLER_SETTINGS {
        return Err(format!(
            "{} sampler settings, at most {MAX_SAMPLER_SETTINGS} are allowed",
            settings.len()
        ));
    }
    for name in settings.keys() {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(format!(
                "sampler setting name {name:?} is not lower-case letters, digits and _"
            ));
        }
    }
    Ok(())
}

/// A vocabulary a model file can hold: not empty, 32-bit ids, no word twice.
pub(crate) fn validate_vocabulary(vocab: &Vocabulary) -> Result<(), String> {
    let v = vocab.len();
    if v == 0 {
        return Err("the vocabulary is empty".into());
    }
    if v > u32::MAX as usize {
        return Err(format!("{v} words do not fit 32-bit word ids"));
    }
    for (i, w) in vocab.words().iter().enumerate() {
        if vocab.id(w) != Some(i as u32) {
            return Err(format!(
                "word {w:?} appears twice in the vocabulary (id {i})"
            ));
        }
    }
    Ok(())
}

/// The rules a recorded guarantee must satisfy, on writing and on reading.
pub(crate) fn validate_guarantee(g: &topos_privacy::Guarantee) -> Result<(), String> {
    if !(g.epsilon.is_finite() && g.epsilon > 0.0) {
        return Err(format!(
            "privacy guarantee: ε = {} is not a positive finite number",
            g.epsilon
        ));
    }
    if let Some(d) = g.delta {
        if !(0.0..1.0).contains(&d) {
            return Err(format!("privacy guarantee: δ = {d} is not in [0, 1)"));
        }
    }
    if g.accountant.releases == 0 {
        return Err("privacy guarantee: zero releases".into());
    }
    if let Some(s) = g.sensitivity {
        if !(s.is_finite() && s > 0.0) {
            return Err(format!(
                "privacy guarantee: sensitivity {s} is not a positive finite number"
            ));
        }
    }
    if g.max_doc_tokens == Some(0) {
        return Err("privacy guarantee: documents capped at 0 tokens".into());
    }
    if let Some(rho) = g.accountant.zcdp_rho {
        if !(rho.is_finite() && rho > 0.0) {
            return Err(format!(
                "privacy guarantee: zCDP ρ = {rho} is not a positive finite number"
            ));
        }
        if !g.delta.is_some_and(|d| d > 0.0) {
            return Err("privacy guarantee: a zCDP accountant without a positive δ".into());
        }
    }
    if let Some(s) = g.l2_sensitivity {
        if !(s.is_finite() && s > 0.0) {
            return Err(format!(
                "privacy guarantee: L2 sensitivity {s} is not a positive finite number"
            ));
        }
    }
    // A discrete-Gaussian guarantee: its fields, and its ε consistent with its ρ and δ (the
    // conversion of `topos_privacy::zcdp`, which training used; a relative 10⁻⁹ for rounding).
    if g.mechanism == topos_privacy::Mechanism::DiscreteGaussian {
        let (Some(rho), Some(_)) = (g.accountant.zcdp_rho, g.l2_sensitivity) else {
            return Err(
                "privacy guarantee: a discrete Gaussian guarantee without its zCDP ρ and L2 sensitivity"
                    .into(),
            );
        };
        if g.sensitivity.is_some()
            || g.max_doc_tokens.is_some()
            || g.accountant.renyi_order.is_some()
        {
            return Err("privacy guarantee: a discrete Gaussian guarantee with an L1 sensitivity, a token cap or a Rényi order (those are the Laplace mechanism's)".into());
        }
        let delta = g.delta.unwrap_or(0.0);
        if !(delta > 0.0 && delta < 1.0) {
            return Err(format!(
                "privacy guarantee: a discrete Gaussian guarantee needs δ in (0, 1), got {delta}"
            ));
        }
        let implied = topos_privacy::zcdp::epsilon(rho, delta);
        if implied > g.epsilon * (1.0 + 1e-9) {
            return Err(format!(
                "privacy guarantee: ε = {} is less than ε = {implied} that ρ = {rho} gives at δ = {delta}",
                g.epsilon
            ));
        }
    }
    if let Some(a) = g.accountant.renyi_order {
        if !(a.is_finite() && a > 1.0) {
            return Err(format!(
                "privacy guarantee: Rényi order {a} is not a finite number above 1"
            ));
        }
        if !g.delta.is_some_and(|d| d > 0.0) {
            return Err("privacy guarantee: a Rényi accountant without a positive δ".into());
        }
    }
    if let Some(b) = g.noise_scale {
        if !(b.is_finite() && b > 0.0) {
            return Err(format!(
                "privacy guarantee: noise scale {b} is not a positive finite number"
            ));
        }
    }
    Ok(())
}

/// Decodes a version-1 or version-2 model payload (version 2 adds the privacy section).
fn decode_model(
    payload: &[u8],
    version: u32,
    malformed: &dyn Fn(String) -> FormatError,
) -> Result<TopicModel, ModelError> {
    let mut r = ByteReader::new(payload);
    let bad = |e: String| ModelError::from(malformed(e));

    let num_topics = r.u32("number of topics").map_err(bad)?;
    let alpha = r.f64("alpha").map_err(bad)?;
    let beta = r.f64("beta").map_err(bad)?;
    let mut hyper = Hyperparameters::new(num_topics, Some(alpha), Some(beta))
        .map_err(|e| bad(e.to_string()))?;
    let k = hyper.k();

    let mut provenance = Provenance {
        algorithm: r.str("algorithm name").map_err(bad)?.to_owned(),
        iterations: r.u32("iterations").map_err(bad)?,
        seed: r.u64("seed").map_err(bad)?,
        corpus_checksum: r.u64("corpus checksum").map_err(bad)?,
        num_docs: r.u64("number of documents").map_err(bad)?,
        num_tokens: r.u64("number of tokens").map_err(bad)?,
        sampler_settings: Default::default(),
    };

    let v = r.u32("vocabulary size").map_err(bad)? as usize;
    if v == 0 {
        return Err(bad("the vocabulary is empty".into()));
    }
    // Each word takes at least its 4-byte length and its 4-byte non-zero count: a size claim the
    // payload cannot hold is refused before anything is allocated for it.
    if v > r.remaining() / 8 {
        return Err(bad(format!(
            "vocabulary size {v} does not fit in the {} remaining bytes",
            r.remaining()
        )));
    }
    let mut words = Vec::with_capacity(v);
    for i in 0..v {
        let word = r
            .str("vocabulary word")
            .map_err(|e| bad(format!("word {i}: {e}")))?;
        words.push(word.to_owned());
    }
    let vocab = Vocabulary::new(words);
    for (i, w) in vocab.words().iter().enumerate() {
        if vocab.id(w) != Some(i as u32) {
            return Err(bad(format!(
                "word {w:?} appears twice in the vocabulary (ids {} and {i})",
                vocab.id(w).unwrap_or_default()
            )));
        }
    }

    let stored_total = r.u64("total count").map_err(bad)?;
    let cells = v
        .checked_mul(k)
        .ok_or_else(|| bad(format!("V × K = {v} × {k} overflows")))?;
    // The matrix is dense, so a small file can describe a large one (V words of K topics with
    // few counts): what it needs is checked against the memory available before allocating,
    // so a damaged or hostile header is refused instead of taking the machine's memory.
    check_budget(
        "the word-topic matrix",
        (cells as u64).saturating_mul(4),
        available_memory(),
        MEMORY_HINT,
    )?;
    let mut word_topic: Vec<u32> = try_zeroed(cells, "the word-topic matrix", MEMORY_HINT)?;
    let mut topic_totals = vec![0u64; k];
    let mut total = 0u64;
    for (word, row) in word_topic.chunks_exact_mut(k).enumerate() {
        let nnz = r.u32("non-zero count").map_err(bad)? as usize;
        if nnz > k {
            return Err(bad(format!(
                "word {word} has {nnz} non-zero topics but K = {k}"
            )));
        }
        let pairs = r
            .take(nnz * 6, "topic-count pairs")
            .map_err(|e| bad(format!("word {word}: {e}")))?;
        let mut previous: Option<u16> = None;
        for pair in pairs.chunks_exact(6) {
            let t = u16::from_le_bytes([pair[0], pair[1]]);
            let c = u32::from_le_bytes([pair[2], pair[3], pair[4], pair[5]]);
            if usize::from(t) >= k {
                return Err(bad(format!("word {word}: topic {t} is not below K = {k}")));
            }
            if previous.is_some_and(|p| p >= t) {
                return Err(bad(format!(
                    "word {word}: topics not strictly increasing ({} then {t})",
                    previous.unwrap_or_default()
                )));
            }
            if c == 0 {
                return Err(bad(format!("word {word}: zero count stored for topic {t}")));
            }
            previous = Some(t);
            row[usize::from(t)] = c;
            topic_totals[usize::from(t)] += u64::from(c);
            total = total
                .checked_add(u64::from(c))
                .ok_or_else(|| bad("total count overflows 64 bits".into()))?;
        }
    }
    if total != stored_total {
        return Err(bad(format!(
            "word-topic counts sum to {total} but the file records {stored_total}"
        )));
    }
    let privacy = if version >= 2 {
        match r.u8("privacy section flag").map_err(bad)? {
            0 => None,
            1 => {
                let json = r.str("privacy guarantee").map_err(bad)?;
                let g: topos_privacy::Guarantee = serde_json::from_str(json)
                    .map_err(|e| bad(format!("privacy guarantee: {e}")))?;
                if serde_json::to_string(&g).ok().as_deref() != Some(json) {
                    return Err(bad(
                        "privacy guarantee is not in its canonical encoding".into()
                    ));
                }
                validate_guarantee(&g).map_err(bad)?;
                Some(g)
            }
            f => return Err(bad(format!("privacy section flag is {f}, expected 0 or 1"))),
        }
    } else {
        None
    };
    let tokenizer = if version >= 3 {
        match r.u8("tokenizer section flag").map_err(bad)? {
            0 => None,
            1 => {
                let json = r.str("tokenizer options").map_err(bad)?;
                let t = topos_corpus::TokenizerSpec::decode(json.as_bytes())
                    .map_err(|e| bad(format!("tokenizer options: {e}")))?;
                if t.encode() != json.as_bytes() {
                    return Err(bad(
                        "tokenizer options are not in their canonical encoding".into()
                    ));
                }
                Some(t)
            }
            f => {
                return Err(bad(format!(
                    "tokenizer section flag is {f}, expected 0 or 1"
                )))
            }
        }
    } else {
        None
    };
    if version >= 4 {
        match r.u8("priors section flag").map_err(bad)? {
            0 if version >= 5 => {}
            1 => {
                let mut values = Vec::with_capacity(k);
                for _ in 0..k {
                    values.push(r.f64("alpha of a topic").map_err(bad)?);
                }
                let learned = crate::Alpha::from_values(values).map_err(|e| bad(e.to_string()))?;
                if learned.symmetric_value().is_some() {
                    return Err(bad(
                        "priors section holds a symmetric alpha (written as version 3)".into(),
                    ));
                }
                hyper.alpha = learned;
            }
            f if version >= 5 => {
                return Err(bad(format!("priors section flag is {f}, expected 0 or 1")))
            }
            f => return Err(bad(format!("priors section flag is {f}, expected 1"))),
        }
    }
    let mut sampler_settings = std::collections::BTreeMap::new();
    if version >= 5 {
        let n = r.u32("number of sampler settings").map_err(bad)? as usize;
        if n == 0 || n > MAX_SAMPLER_SETTINGS {
            return Err(bad(format!(
                "{n} sampler settings, expected 1 to {MAX_SAMPLER_SETTINGS} (a model without any is version 3 or 4)"
            )));
        }
        let mut previous: Option<String> = None;
        for _ in 0..n {
            let name = r.str("sampler setting name").map_err(bad)?.to_owned();
            let value = r.u32("sampler setting value").map_err(bad)?;
            if previous.as_ref().is_some_and(|p| *p >= name) {
                return Err(bad(format!(
                    "sampler settings not in strictly increasing order of name ({name:?})"
                )));
            }
            previous = Some(name.clone());
            sampler_settings.insert(name, value);
        }
        validate_sampler_settings(&sampler_settings).map_err(bad)?;
    }
    provenance.sampler_settings = sampler_settings;
    if r.remaining() != 0 {
        return Err(bad(format!(
            "{} unexpected bytes after the {}",
            r.remaining(),
            match version {
                1 => "word-topic counts",
                2 => "privacy section",
                3 => "tokenizer section",
                4 => "priors section",
                _ => "sampler settings section",
            }
        )));
    }
    Ok(TopicModel {
        vocab,
        hyper,
        word_topic,
        topic_totals,
        provenance,
        privacy,
        tokenizer,
    })
}

impl DocTopics {
    /// The file payload (see the module documentation).
    fn encode(&self, model_checksum: u64) -> Result<Vec<u8>, ModelError> {
        // `DocTopics::default()` has no leading offset; with no entries it means "no documents".
        let normalized;
        let a = if self.offsets.is_empty() && self.topics.is_empty() && self.counts.is_empty() {
            normalized = DocTopics::new(self.num_topics);
            &normalized
        } else {
            self
        };
        a.validate().map_err(|why| ModelError::Inconsistent {
            what: "document-topic counts",
            why,
        })?;
        let mut w = ByteWriter::new();
        w.u64(model_checksum);
        w.u32(a.num_topics);
        w.u64(a.len() as u64);
        w.u64(a.topics.len() as u64);
        w.u64s(&a.offsets);
        w.u16s(&a.topics);
        w.u32s(&a.counts);
        Ok(w.buf)
    }

    /// Writes the counts to `path` atomically, recording that they belong to the model whose
    /// payload checksum is `model_checksum` ([`TopicModel::read_with_checksum`]).
    pub fn write(&self, path: &Path, model_checksum: u64) -> Result<(), ModelError> {
        let payload = self.encode(model_checksum)?;
        topos_io::write_file(&DOC_TOPICS_KIND, DOC_TOPICS_VERSION, path, &payload)?;
        Ok(())
    }

    /// The whole file: header and payload.
    pub fn to_file_bytes(&self, model_checksum: u64) -> Result<Vec<u8>, ModelError> {
        let payload = self.encode(model_checksum)?;
        let mut bytes = topos_io::header(&DOC_TOPICS_KIND, DOC_TOPICS_VERSION, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }

    /// Reads and validates the counts at `path`, whatever model they belong to.
    pub fn read(path: &Path) -> Result<DocTopics, ModelError> {
        Ok(Self::read_file(path)?.0)
    }

    /// Reads the counts at `path` and the checksum of the model they were written with
    /// (`None` for a version-1 file, which did not record it).
    pub fn read_file(path: &Path) -> Result<(DocTopics, Option<u64>), ModelError> {
        let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
        Self::from_file_bytes(&bytes, path)
    }

    /// Reads the side file of the model at `model_path` whose payload checksum is
    /// `model_checksum`, refusing one written beside another model (a retrained model, or a
    /// crash between renaming the two files of a run: issue 18, rows 2–4). A version-1 side file
    /// records no model and is accepted as before.
    pub fn read_for_model(model_path: &Path, model_checksum: u64) -> Result<DocTopics, ModelError> {
        let path = doc_topics_path(model_path);
        let (a, recorded) = Self::read_file(&path)?;
        match recorded {
            Some(sum) if sum != model_checksum => Err(ModelError::Mismatch(format!(
                "{} was written with another model than {} (a later run replaced the model); train again with --doc-topics",
                path.display(),
                model_path.display()
            ))),
            _ => Ok(a),
        }
    }

    /// Parses a whole side file already in memory; `path` only names it in messages. Returns
    /// the counts and the model checksum the file records (version 2).
    pub fn from_file_bytes(
        bytes: &[u8],
        path: &Path,
    ) -> Result<(DocTopics, Option<u64>), ModelError> {
        let checked = topos_io::check(&DOC_TOPICS_KIND, path, bytes)?;
        let bad = |what: String| {
            ModelError::from(FormatError::Malformed {
                path: path.display().to_string(),
                kind: DOC_TOPICS_KIND.name,
                what,
            })
        };
        let mut r = ByteReader::new(checked.payload);
        let model_checksum = match checked.version {
            1 => None,
            2 => Some(r.u64("model checksum").map_err(bad)?),
            v => return Err(bad(format!("no decoder for version {v}"))),
        };
        let num_topics = r.u32("number of topics").map_err(bad)?;
        let docs = r.u64("number of documents").map_err(bad)?;
        let nnz = r.u64("number of entries").map_err(bad)?;
        // Sizes are checked against the payload before anything is allocated for them.
        let need = docs
            .checked_add(1)
            .and_then(|n| n.checked_mul(8))
            .and_then(|o| nnz.checked_mul(6).and_then(|e| o.checked_add(e)));
        if need != Some(r.remaining() as u64) {
            return Err(bad(format!(
                "{docs} documents and {nnz} entries do not match the {} payload bytes left",
                r.remaining()
            )));
        }
        let offsets = r.u64s(docs as usize + 1, "offsets").map_err(bad)?;
        let topics = r.u16s(nnz as usize, "topics").map_err(bad)?;
        let counts = r.u32s(nnz as usize, "counts").map_err(bad)?;
        let a = DocTopics {
            num_topics,
            offsets,
            topics,
            counts,
        };
        a.validate().map_err(bad)?;
        Ok((a, model_checksum))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> TopicModel {
        let vocab = Vocabulary::new(["alpha", "beta", "gamma", "delta"].map(String::from).into());
        let hyper = Hyperparameters::new(3, Some(0.1), Some(0.01)).unwrap();
        let counts = vec![5, 0, 1, 0, 0, 0, 2, 7, 0, 0, 0, 3];
        let provenance = Provenance {
            algorithm: "cgs".into(),
            iterations: 10,
            seed: 42,
            corpus_checksum: 0xdead_beef,
            num_docs: 3,
            num_tokens: 18,
            sampler_settings: Default::default(),
        };
        TopicModel::from_counts(vocab, hyper, counts, provenance)
    }

    #[test]
    fn side_file_name_appends_extension() {
        assert_eq!(
            doc_topics_path(Path::new("run/news.tmod")),
            PathBuf::from("run/news.tmod.doctopics")
        );
    }

    #[test]
    fn model_roundtrips_and_rewrites_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.tmod");
        let m = model();
        m.write(&path).unwrap();
        let back = TopicModel::read(&path).unwrap();
        assert_eq!(back, m);
        let first = std::fs::read(&path).unwrap();
        back.write(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first);
        assert_eq!(m.to_file_bytes().unwrap(), first);
        // Sparse: 4 words × (4-byte nnz) + 5 non-zeros × 6 bytes, after the fixed part, then
        // the privacy and tokenizer flags.
        let fixed = 32 + 4 + 8 + 8 + (4 + 3) + 4 + 8 * 4 + 4 + (4 * 4 + 5 + 4 + 5 + 5) + 8;
        assert_eq!(first.len(), fixed + 4 * 4 + 5 * 6 + 1 + 1);
    }

    #[test]
    fn refuses_to_write_what_it_could_not_read() {
        let mut m = model();
        m.word_topic.pop();
        let e = m.to_file_bytes().unwrap_err().to_string();
        assert!(e.contains("V × K"), "{e}");
        let mut m = model();
        m.vocab = Vocabulary::new(["a", "b", "a", "c"].map(String::from).into());
        let e = m.to_file_bytes().unwrap_err().to_string();
        assert!(e.contains("appears twice"), "{e}");
        let mut m = model();
        m.hyper.alpha = crate::Alpha::symmetric(m.hyper.num_topics, 0.0);
        assert!(m.to_file_bytes().unwrap_err().to_string().contains("alpha"));
    }

    #[test]
    fn doc_topics_roundtrip_and_validation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.tmod.doctopics");
        let mut a = DocTopics::new(3);
        a.push_dense(&[2, 0, 1]);
        a.push_dense(&[0, 0, 0]);
        a.push_dense(&[0, 4, 0]);
        a.write(&path, 7).unwrap();
        assert_eq!(DocTopics::read_file(&path).unwrap(), (a.clone(), Some(7)));
        assert_eq!(std::fs::read(&path).unwrap(), a.to_file_bytes(7).unwrap());
        let model = dir.path().join("m.tmod");
        assert_eq!(DocTopics::read_for_model(&model, 7).unwrap(), a);
        let e = DocTopics::read_for_model(&model, 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("another model"), "{e}");

        let empty = DocTopics {
            num_topics: 3,
            ..Default::default()
        };
        empty.write(&path, 7).unwrap();
        assert_eq!(DocTopics::read(&path).unwrap(), DocTopics::new(3));

        a.counts[0] = 0;
        let e = a.write(&path, 7).unwrap_err().to_string();
        assert!(e.contains("zero count"), "{e}");
    }
}
