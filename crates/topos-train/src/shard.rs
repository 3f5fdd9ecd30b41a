//! One process's share of a multi-process run: whole partitions of the single-process layout,
//! contiguous and balanced by tokens (CuLDA_CGS §4: documents partitioned by token count across
//! workers).
//!
//! Every process computes the same partition ranges from the corpus's document offsets alone
//! (no token is read), takes its run of them, and builds the PDOW layout of its documents only.
//! Its partitions are those a single process would build, keyed by the same global token indices
//! ([`crate::layout::Partition::first_key`]), so a sampler that gives the same model for any
//! number of threads at fixed partitions gives it for any number of processes too.

use crate::engine::TrainDocs;
use crate::layout::partition_ranges;
use crate::TrainError;
use std::ops::Range;
use std::sync::Arc;
use topos_corpus::Docs;

/// This process's share.
#[derive(Clone, Debug)]
pub struct Shard {
    pub rank: usize,
    pub workers: usize,
    /// Global document range.
    pub docs: Range<usize>,
    /// Global token range.
    pub tokens: Range<u64>,
    /// The share's partitions as document ranges relative to `docs.start`.
    pub partitions: Vec<Range<usize>>,
    /// Partitions of the whole run.
    pub total_partitions: usize,
}

impl Shard {
    /// Share `rank` of `workers` of `docs` cut into `num_partitions` partitions (as
    /// [`crate::layout::Layout::build`] would), partitions `rank·P/N .. (rank+1)·P/N`.
    pub fn of(
        docs: Docs<'_>,
        num_partitions: usize,
        rank: usize,
        workers: usize,
    ) -> Result<Shard, TrainError> {
        let all = partition_ranges(docs, num_partitions);
        let p = all.len();
        if p < workers {
            return Err(TrainError::Unsupported(format!(
                "{workers} processes need at least {workers} document partitions, and this run has {p} ({} documents); run fewer processes, or pass --partitions {workers} or more where the sampler allows it",
                docs.len()
            )));
        }
        let mine = &all[rank * p / workers..(rank + 1) * p / workers];
        let d0 = mine[0].start;
        let d1 = mine[mine.len() - 1].end;
        Ok(Shard {
            rank,
            workers,
            docs: d0..d1,
            tokens: docs.doc_start(d0)..docs.doc_start(d1),
            partitions: mine.iter().map(|r| r.start - d0..r.end - d0).collect(),
            total_partitions: p,
        })
    }

    /// The share's documents as their own CSR view over `parent`'s tokens (offsets rebased to
    /// 0: 8 bytes a document; the tokens stay where they are, memory-mapped).
    pub fn docs_of(&self, parent: &TrainDocs) -> TrainDocs {
        let view = parent.view();
        let base = view.doc_start(self.docs.start);
        let offsets: Vec<u64> = view.offsets()[self.docs.start..=self.docs.end]
            .iter()
            .map(|o| o - base)
            .collect();
        TrainDocs::Shard {
            parent: Box::new(parent.clone()),
            offsets: Arc::from(offsets),
            tokens: self.tokens.start as usize..self.tokens.end as usize,
        }
    }

    /// Token range `start..start + len` (global) clipped to this share, relative to the share.
    pub fn overlap(&self, start: u64, len: u64) -> Range<usize> {
        let a = start.clamp(self.tokens.start, self.tokens.end);
        let b = (start + len).clamp(self.tokens.start, self.tokens.end);
        (a - self.tokens.start) as usize..(b - self.tokens.start) as usize
    }
}

/// Tokens `start..start + out.len()` (global) of the run's assignments into `out` on the first
/// worker, collective: every worker reads its part with `read(local start, buffer)` and sends it
/// there (the others' `out` is left as it was).
pub fn gather_assignments(
    shard: &Shard,
    transport: &dyn crate::transport::Transport,
    start: u64,
    out: &mut [u16],
    read: impl FnOnce(u64, &mut [u16]) -> Result<(), TrainError>,
) -> Result<(), TrainError> {
    let mine = shard.overlap(start, out.len() as u64);
    let mut part = vec![0u16; mine.len()];
    if !part.is_empty() {
        read(mine.start as u64, &mut part)?;
    }
    let bytes: Vec<u8> = part.iter().flat_map(|z| z.to_le_bytes()).collect();
    if let Some(parts) = transport.gather_bytes(&bytes)? {
        let all = parts.concat();
        if all.len() != 2 * out.len() {
            return Err(TrainError::Unsupported(format!(
                "the workers sent {} assignments for a piece of {}",
                all.len() / 2,
                out.len()
            )));
        }
        for (o, c) in out.iter_mut().zip(all.chunks_exact(2)) {
            *o = u16::from_le_bytes([c[0], c[1]]);
        }
    }
    Ok(())
}

/// The sum of every worker's share of a fixed-point sum (`i128` bits), collective.
pub fn sum_fixed(
    transport: &dyn crate::transport::Transport,
    mine: i128,
) -> Result<i128, TrainError> {
    let mut total = 0i128;
    for bytes in transport.all_gather_bytes(&mine.to_le_bytes())? {
        let bits: [u8; 16] = bytes
            .try_into()
            .map_err(|_| TrainError::Unsupported("a worker sent a malformed likelihood".into()))?;
        total += i128::from_le_bytes(bits);
    }
    Ok(total)
}

/// Replaces `rows`, this worker's document rows of a range of documents, with every worker's,
/// in rank order (each worker holds a contiguous share, so that is document order): an engine
/// that keeps document rows instead of assignments (`mfm`) answers
/// [`crate::Engine::doc_topic_rows`] with it. A collective: every worker calls it. Nothing to do
/// with one worker.
pub fn gather_doc_rows(
    transport: &dyn crate::transport::Transport,
    rows: &mut topos_model::DocTopics,
) -> Result<(), TrainError> {
    if transport.workers() == 1 {
        return Ok(());
    }
    let n = rows.offsets.len() - 1;
    let mut mine = Vec::with_capacity(8 + 4 * n + 6 * rows.topics.len());
    mine.extend_from_slice(&(n as u64).to_le_bytes());
    for w in rows.offsets.windows(2) {
        mine.extend_from_slice(&((w[1] - w[0]) as u32).to_le_bytes());
    }
    for &t in &rows.topics {
        mine.extend_from_slice(&t.to_le_bytes());
    }
    for &c in &rows.counts {
        mine.extend_from_slice(&c.to_le_bytes());
    }
    let malformed = || TrainError::Unsupported("a worker sent malformed document rows".into());
    rows.offsets.truncate(1);
    rows.topics.clear();
    rows.counts.clear();
    for part in transport.all_gather_bytes(&mine)? {
        let n = u64::from_le_bytes(part.get(..8).ok_or_else(malformed)?.try_into().expect("8"))
            as usize;
        let lens = part.get(8..8 + 4 * n).ok_or_else(malformed)?;
        let mut nnz = 0usize;
        for l in lens.chunks_exact(4) {
            nnz += u32::from_le_bytes(l.try_into().expect("4")) as usize;
            rows.offsets.push(rows.topics.len() as u64 + nnz as u64);
        }
        let at = 8 + 4 * n;
        let topics = part.get(at..at + 2 * nnz).ok_or_else(malformed)?;
        let counts = part.get(at + 2 * nnz..at + 6 * nnz).ok_or_else(malformed)?;
        rows.topics.extend(
            topics
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes(b.try_into().expect("2"))),
        );
        rows.counts.extend(
            counts
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4"))),
        );
    }
    Ok(())
}

/// Contiguous ranges of `n` items, one per worker, balanced by count (the held-out documents'
/// split for evaluation).
pub fn even_ranges(n: usize, workers: usize) -> Vec<Range<usize>> {
    (0..workers)
        .map(|r| r * n / workers..(r + 1) * n / workers)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    fn docs() -> OwnedDocs {
        (0..40u32)
            .map(|d| (0..(d % 7 + 1)).map(|i| (d + i) % 11).collect::<Vec<u32>>())
            .collect::<Vec<_>>()
            .iter()
            .map(|v| v.as_slice())
            .collect()
    }

    #[test]
    fn the_shares_cover_the_corpus_with_the_single_process_partitions() {
        let owned = docs();
        let view = owned.view();
        let whole = partition_ranges(view, 8);
        for workers in 1..=5 {
            let shards: Vec<Shard> = (0..workers)
                .map(|r| Shard::of(view, 8, r, workers).unwrap())
                .collect();
            let mut again = Vec::new();
            let mut next_token = 0;
            for s in &shards {
                assert_eq!(s.tokens.start, next_token);
                next_token = s.tokens.end;
                again.extend(
                    s.partitions
                        .iter()
                        .map(|r| r.start + s.docs.start..r.end + s.docs.start),
                );
                let local = s.docs_of(&TrainDocs::from(owned.clone()));
                assert_eq!(local.view().num_tokens(), s.tokens.end - s.tokens.start);
                assert_eq!(local.view().doc(0), view.doc(s.docs.start));
            }
            assert_eq!(next_token, view.num_tokens());
            assert_eq!(again, whole, "{workers} workers");
        }
        let err = Shard::of(view, 2, 0, 3).unwrap_err().to_string();
        assert!(err.contains("3 processes need at least 3"), "{err}");
    }

    #[test]
    fn overlaps_clip_to_the_share() {
        let owned = docs();
        let s = Shard::of(owned.view(), 8, 1, 2).unwrap();
        let (a, b) = (s.tokens.start, s.tokens.end);
        assert_eq!(s.overlap(0, a), 0..0);
        assert_eq!(s.overlap(a - 1, 3), 0..2);
        assert_eq!(s.overlap(b - 1, 10), (b - a - 1) as usize..(b - a) as usize);
        assert_eq!(even_ranges(5, 2), vec![0..2, 2..5]);
    }
}
