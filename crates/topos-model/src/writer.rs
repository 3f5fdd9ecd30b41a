//! Piecewise writers of the model file and its document-topic side file: the bytes of
//! [`TopicModel::write`] and [`DocTopics::write`] without a dense V × K matrix or the whole
//! document-topic table in memory, so a training run can write them from a device's state
//! streamed back a piece at a time (issue 16: the host memory of a run does not grow with
//! V × K).
//!
//! Both stage their file under a temporary name ([`topos_io::Staged`]) and return the payload
//! checksum: the run renames the model and its side file into place together, and the side file
//! records the checksum of the model it belongs to.

use crate::file::{DOC_TOPICS_KIND, DOC_TOPICS_VERSION, MODEL_KIND};
use crate::model::{Hyperparameters, Provenance};
use crate::ModelError;
use std::path::Path;
use topos_corpus::Vocabulary;
use topos_io::{ByteWriter, Staged, StreamingFile};

/// Bytes buffered before a write to the file.
const FLUSH_BYTES: usize = 1 << 20;

fn inconsistent(what: &'static str) -> impl Fn(String) -> ModelError {
    move |why| ModelError::Inconsistent { what, why }
}

/// Writes a `.tmod` file word by word: the header fields, then one sparse row per word in word
/// order ([`ModelWriter::push_word`]), then the privacy section.
pub struct ModelWriter {
    file: StreamingFile,
    buf: ByteWriter,
    num_topics: usize,
    num_words: usize,
    /// For the priors and sampler settings sections at the end.
    hyper: Hyperparameters,
    provenance: Provenance,
    words_written: usize,
    /// The topic totals promised at the start, and the column sums of the rows written.
    expected_totals: Vec<u64>,
    column_sums: Vec<u64>,
    privacy: Option<topos_privacy::Guarantee>,
    tokenizer: Option<topos_corpus::TokenizerSpec>,
}

impl ModelWriter {
    /// Starts the model file at `path` for a model of `vocab` whose word-topic counts have the
    /// column sums `topic_totals` (checked against the rows at the end).
    pub fn create(
        path: &Path,
        vocab: &Vocabulary,
        hyper: Hyperparameters,
        provenance: &Provenance,
        topic_totals: &[u64],
        privacy: Option<topos_privacy::Guarantee>,
        tokenizer: Option<topos_corpus::TokenizerSpec>,
    ) -> Result<Self, ModelError> {
        let bad = inconsistent("model");
        Hyperparameters::with_alpha(hyper.alpha.clone(), Some(hyper.beta))
            .map_err(|e| bad(e.to_string()))?;
        crate::file::validate_vocabulary(vocab).map_err(&bad)?;
        if topic_totals.len() != hyper.k() {
            return Err(bad(format!(
                "{} topic totals for K = {}",
                topic_totals.len(),
                hyper.k()
            )));
        }
        if let Some(g) = &privacy {
            crate::file::validate_guarantee(g).map_err(&bad)?;
        }
        crate::file::validate_sampler_settings(&provenance.sampler_settings).map_err(&bad)?;
        let version = crate::file::model_version(&hyper, provenance);
        let mut file = StreamingFile::create(&MODEL_KIND, version, path)?;
        let mut w = ByteWriter::new();
        crate::file::encode_head(&mut w, &hyper, provenance, vocab);
        w.u64(topic_totals.iter().sum());
        file.write(&w.buf)?;
        Ok(Self {
            file,
            buf: ByteWriter::new(),
            num_topics: hyper.k(),
            num_words: vocab.len(),
            hyper: hyper.clone(),
            provenance: provenance.clone(),
            words_written: 0,
            expected_totals: topic_totals.to_vec(),
            column_sums: vec![0; hyper.k()],
            privacy,
            tokenizer,
        })
    }

    /// Appends the next word's non-zero (topic, count) pairs, topics strictly increasing.
    pub fn push_word(&mut self, topics: &[u16], counts: &[u32]) -> Result<(), ModelError> {
        let bad = inconsistent("model");
        let word = self.words_written;
        if word >= self.num_words {
            return Err(bad(format!("more than V = {} word rows", self.num_words)));
        }
        if topics.len() != counts.len() {
            return Err(bad(format!(
                "word {word}: topics and counts differ in length"
            )));
        }
        // One pass appends the row's bytes (its length, then 6 bytes a pair) and adds its column
        // sums, with the checks folded into one flag; a bad row's bytes are taken back, and its
        // sums do not matter (the writer is abandoned with the error).
        let n = topics.len();
        let start = self.buf.buf.len();
        self.buf.buf.resize(start + 4 + 6 * n, 0);
        let out = &mut self.buf.buf[start..];
        out[..4].copy_from_slice(&(n as u32).to_le_bytes());
        let mut previous = -1i32;
        let mut wrong = false;
        for ((&t, &c), pair) in topics.iter().zip(counts).zip(out[4..].chunks_exact_mut(6)) {
            wrong |= (usize::from(t) >= self.num_topics) | (i32::from(t) <= previous) | (c == 0);
            previous = i32::from(t);
            if let Some(sum) = self.column_sums.get_mut(usize::from(t)) {
                *sum += u64::from(c);
            }
            pair[..2].copy_from_slice(&t.to_le_bytes());
            pair[2..].copy_from_slice(&c.to_le_bytes());
        }
        if wrong {
            self.buf.buf.truncate(start);
            let mut previous: Option<u16> = None;
            for (&t, &c) in topics.iter().zip(counts) {
                if usize::from(t) >= self.num_topics || previous.is_some_and(|p| p >= t) || c == 0 {
                    return Err(bad(format!(
                        "word {word}: pair ({t}, {c}) is out of order, out of range or zero"
                    )));
                }
                previous = Some(t);
            }
        }
        self.words_written += 1;
        if self.buf.len() >= FLUSH_BYTES {
            self.file.write(&self.buf.buf)?;
            self.buf.buf.clear();
        }
        Ok(())
    }

    /// Completes the file under its temporary name; returns it and the payload checksum (the
    /// one [`crate::TopicModel::read_with_checksum`] reports).
    pub fn stage(mut self) -> Result<(Staged, u64), ModelError> {
        let bad = inconsistent("model");
        if self.words_written != self.num_words {
            return Err(bad(format!(
                "{} word rows written for V = {}",
                self.words_written, self.num_words
            )));
        }
        if self.column_sums != self.expected_totals {
            return Err(bad(
                "the word-topic rows do not sum to the topic totals given at the start".into(),
            ));
        }
        crate::file::encode_privacy(&mut self.buf, self.privacy.as_ref());
        crate::file::encode_tokenizer(&mut self.buf, self.tokenizer.as_ref());
        crate::file::encode_tail(&mut self.buf, &self.hyper, &self.provenance);
        self.file.write(&self.buf.buf)?;
        Ok(self.file.stage()?)
    }
}

/// Writes a `.doctopics` file (version 2: it records the checksum of the model it belongs to) in
/// three passes over the documents, as the format lays them out: every document's row length
/// ([`DocTopicsWriter::push_lengths`]), then the topics of every row, then the counts.
pub struct DocTopicsWriter {
    file: StreamingFile,
    buf: ByteWriter,
    docs: u64,
    nnz: u64,
    offsets: Vec<u64>,
    /// Entries written in the current pass.
    written: u64,
    pass: Pass,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pass {
    Lengths,
    Topics,
    Counts,
}

impl DocTopicsWriter {
    /// Starts the side file at `path` for `docs` documents and `nnz` non-zeros in all, belonging
    /// to the model whose payload checksum is `model_checksum`.
    pub fn create(
        path: &Path,
        model_checksum: u64,
        num_topics: u32,
        docs: u64,
        nnz: u64,
    ) -> Result<Self, ModelError> {
        let mut file = StreamingFile::create(&DOC_TOPICS_KIND, DOC_TOPICS_VERSION, path)?;
        let mut w = ByteWriter::new();
        w.u64(model_checksum);
        w.u32(num_topics);
        w.u64(docs);
        w.u64(nnz);
        w.u64(0);
        file.write(&w.buf)?;
        let mut offsets = Vec::with_capacity(docs as usize + 1);
        offsets.push(0);
        Ok(Self {
            file,
            buf: ByteWriter::new(),
            docs,
            nnz,
            offsets,
            written: 0,
            pass: Pass::Lengths,
        })
    }

    fn flush(&mut self, force: bool) -> Result<(), ModelError> {
        if force || self.buf.len() >= FLUSH_BYTES {
            self.file.write(&self.buf.buf)?;
            self.buf.buf.clear();
        }
        Ok(())
    }

    fn next_pass(&mut self, from: Pass, to: Pass) -> Result<(), ModelError> {
        let bad = inconsistent("document-topic counts");
        if self.pass == from {
            let done = match from {
                Pass::Lengths => self.offsets.len() as u64 - 1 == self.docs,
                _ => self.written == self.nnz,
            };
            if !done || self.offsets.last() != Some(&self.nnz) {
                return Err(bad(format!("the {from:?} pass is incomplete")));
            }
            self.pass = to;
            self.written = 0;
        }
        if self.pass != to {
            return Err(bad(format!("{to:?} written out of order")));
        }
        Ok(())
    }

    /// First pass: the number of non-zeros of the next documents.
    pub fn push_lengths(
        &mut self,
        lengths: impl IntoIterator<Item = u64>,
    ) -> Result<(), ModelError> {
        let bad = inconsistent("document-topic counts");
        if self.pass != Pass::Lengths {
            return Err(bad("row lengths after the topics".into()));
        }
        for len in lengths {
            let end = self.offsets.last().copied().unwrap_or(0) + len;
            if self.offsets.len() as u64 > self.docs || end > self.nnz {
                return Err(bad("more rows or entries than announced".into()));
            }
            self.offsets.push(end);
            self.buf.u64(end);
            self.flush(false)?;
        }
        Ok(())
    }

    /// Second pass: the topics of the next rows (whole rows, increasing within each).
    pub fn push_topics(&mut self, topics: &[u16]) -> Result<(), ModelError> {
        self.next_pass(Pass::Lengths, Pass::Topics)?;
        let bad = inconsistent("document-topic counts");
        if self.written + topics.len() as u64 > self.nnz {
            return Err(bad("more topics than announced".into()));
        }
        for (i, &t) in topics.iter().enumerate() {
            let at = self.written + i as u64;
            // A row boundary at `at` allows any topic; inside a row topics increase.
            let starts_row = self.offsets.binary_search(&at).is_ok();
            if !starts_row && topics.get(i.wrapping_sub(1)).is_some_and(|&p| p >= t) {
                return Err(bad(format!("topics not increasing at entry {at}")));
            }
            self.buf.u16(t);
        }
        self.written += topics.len() as u64;
        self.flush(false)
    }

    /// Third pass: the counts (positive) beside the topics.
    pub fn push_counts(&mut self, counts: &[u32]) -> Result<(), ModelError> {
        self.next_pass(Pass::Topics, Pass::Counts)?;
        let bad = inconsistent("document-topic counts");
        if self.written + counts.len() as u64 > self.nnz {
            return Err(bad("more counts than announced".into()));
        }
        if counts.contains(&0) {
            return Err(bad("a zero count".into()));
        }
        for &c in counts {
            self.buf.u32(c);
        }
        self.written += counts.len() as u64;
        self.flush(false)
    }

    /// Completes the file under its temporary name.
    pub fn stage(mut self) -> Result<Staged, ModelError> {
        if self.nnz == 0 {
            // Passes with no entries have nothing to push.
            let _ = self.next_pass(Pass::Lengths, Pass::Topics);
        }
        if self.nnz == 0 || self.pass == Pass::Topics {
            let _ = self.next_pass(Pass::Topics, Pass::Counts);
        }
        if self.pass != Pass::Counts || self.written != self.nnz {
            return Err(ModelError::Inconsistent {
                what: "document-topic counts",
                why: "the counts pass is incomplete".into(),
            });
        }
        self.flush(true)?;
        Ok(self.file.stage()?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DocTopics, TopicModel};
    use topos_sampling::{CounterRng, Stream};

    /// A model of `v` words and `k` topics with about `density` of its cells non-zero.
    fn random_model(v: usize, k: u32, density: f64, seed: u64) -> TopicModel {
        let cells = (0..v * k as usize)
            .map(|i| {
                let mut r = CounterRng::new(seed, Stream::Init, 0, i as u64);
                if r.next_f64() < density {
                    1 + r.below(1000)
                } else {
                    0
                }
            })
            .collect();
        let vocab = Vocabulary::new((0..v).map(|i| format!("w{i}")).collect());
        let hyper = Hyperparameters::new(k, Some(0.3), Some(0.02)).unwrap();
        let provenance = Provenance {
            algorithm: "cgs".into(),
            iterations: 7,
            seed,
            corpus_checksum: 99,
            num_docs: 10,
            num_tokens: 1234,
            sampler_settings: Default::default(),
        };
        TopicModel::from_counts(vocab, hyper, cells, provenance)
    }

    fn write_piecewise(m: &TopicModel, path: &Path) -> Result<u64, ModelError> {
        let mut w = ModelWriter::create(
            path,
            &m.vocab,
            m.hyper.clone(),
            &m.provenance,
            &m.topic_totals,
            m.privacy.clone(),
            m.tokenizer.clone(),
        )?;
        for v in 0..m.num_words() {
            let row = m.word_row(v as u32);
            let topics: Vec<u16> = (0..row.len())
                .filter(|&t| row[t] > 0)
                .map(|t| t as u16)
                .collect();
            let counts: Vec<u32> = row.iter().copied().filter(|&c| c > 0).collect();
            w.push_word(&topics, &counts)?;
        }
        let (staged, sum) = w.stage()?;
        staged.persist()?;
        Ok(sum)
    }

    #[test]
    fn the_piecewise_model_writer_equals_the_whole_model_writer() {
        let dir = tempfile::tempdir().unwrap();
        for (v, k, density) in [
            (3, 2, 0.5),
            (500, 64, 0.05),
            (2000, 300, 0.01),
            (50, 3000, 0.3),
        ] {
            let m = random_model(v, k, density, v as u64);
            let path = dir.path().join("m.tmod");
            let sum = write_piecewise(&m, &path).unwrap();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                m.to_file_bytes().unwrap(),
                "V {v} K {k}"
            );
            let (back, read_sum) = TopicModel::read_with_checksum(&path).unwrap();
            assert_eq!(back, m);
            assert_eq!(read_sum, sum);
        }
    }

    /// A writer of `m`'s vocabulary and priors at `path`, promising the column sums `totals`.
    fn writer_of(m: &TopicModel, path: &Path, totals: &[u64]) -> ModelWriter {
        ModelWriter::create(
            path,
            &m.vocab,
            m.hyper.clone(),
            &m.provenance,
            totals,
            None,
            None,
        )
        .unwrap()
    }

    #[test]
    fn the_model_writer_refuses_a_row_out_of_order_out_of_range_or_with_a_zero() {
        let dir = tempfile::tempdir().unwrap();
        let m = random_model(3, 5, 0.5, 1);
        for (topics, counts) in [
            (&[1u16, 1][..], &[2u32, 3][..]),
            (&[3, 2], &[1, 1]),
            (&[0, 5], &[1, 1]),
            (&[0, 2], &[1, 0]),
        ] {
            let path = dir.path().join("m.tmod");
            let mut w = writer_of(&m, &path, &m.topic_totals);
            w.push_word(&[0, 4], &[1, 2]).unwrap();
            let e = w.push_word(topics, counts).unwrap_err().to_string();
            assert!(
                e.contains("word 1: pair") && e.contains("out of order, out of range or zero"),
                "{topics:?} {counts:?}: {e}"
            );
        }
    }

    #[test]
    fn the_model_writer_refuses_rows_that_do_not_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.tmod");
        let m = random_model(20, 5, 0.5, 1);
        let mut totals = m.topic_totals.clone();
        totals[0] += 1;
        let mut w = writer_of(&m, &path, &totals);
        for v in 0..20 {
            let row = m.word_row(v);
            let topics: Vec<u16> = (0..5).filter(|&t| row[t] > 0).map(|t| t as u16).collect();
            let counts: Vec<u32> = row.iter().copied().filter(|&c| c > 0).collect();
            w.push_word(&topics, &counts).unwrap();
        }
        assert!(w.stage().unwrap_err().to_string().contains("topic totals"));
        assert!(!path.exists());
        let mut w = writer_of(&m, &path, &m.topic_totals);
        assert!(w.push_word(&[3, 1], &[1, 1]).is_err());
        assert!(w.push_word(&[5], &[1]).is_err());
        assert!(w.push_word(&[1], &[0]).is_err());
        assert!(w.stage().is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_piecewise_side_file_writer_equals_the_whole_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.tmod.doctopics");
        let mut a = DocTopics::new(4);
        for d in 0..300u32 {
            let row: Vec<u32> = (0..4).map(|k| (d * 7 + k * 3) % 5 / 2).collect();
            a.push_dense(&row);
        }
        let mut w =
            DocTopicsWriter::create(&path, 42, 4, a.len() as u64, a.topics.len() as u64).unwrap();
        for piece in (0..a.len()).collect::<Vec<_>>().chunks(37) {
            w.push_lengths(piece.iter().map(|&d| a.offsets[d + 1] - a.offsets[d]))
                .unwrap();
        }
        for piece in (0..a.len()).collect::<Vec<_>>().chunks(37) {
            let (s, e) = (
                a.offsets[piece[0]] as usize,
                a.offsets[piece[piece.len() - 1] + 1] as usize,
            );
            w.push_topics(&a.topics[s..e]).unwrap();
        }
        for piece in a.counts.chunks(101) {
            w.push_counts(piece).unwrap();
        }
        w.stage().unwrap().persist().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), a.to_file_bytes(42).unwrap());

        // No documents at all, and documents without entries.
        for docs in [0u64, 3] {
            let mut w = DocTopicsWriter::create(&path, 1, 4, docs, 0).unwrap();
            w.push_lengths((0..docs).map(|_| 0)).unwrap();
            w.stage().unwrap().persist().unwrap();
            let mut e = DocTopics::new(4);
            for _ in 0..docs {
                e.push_dense(&[0, 0, 0, 0]);
            }
            assert_eq!(std::fs::read(&path).unwrap(), e.to_file_bytes(1).unwrap());
        }
    }
}
