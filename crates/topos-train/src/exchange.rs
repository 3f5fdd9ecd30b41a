//! The exchange of data-parallel LDA: every worker's word-topic counts (of its share of the
//! documents) summed, on every worker (AD-LDA; CuLDA_CGS §5.2 sums the replicas' counts every
//! iteration). The sums are of integers, so the result is exactly what one process would count,
//! whichever way the bytes travel; the way is chosen by the bytes it moves:
//!
//! * **dense**: blocks of up to 2²² cells of dense rows, each summed by an all-reduce and made
//!   sparse again: about 2 · 4·V·K bytes through each worker (a ring all-reduce), whatever the
//!   sparsity.
//! * **sparse**: a reduce-scatter then an all-gather of sparse rows. The words are cut into one
//!   contiguous range per worker (balanced by the previous counts' non-zeros); every worker sends
//!   its rows of each range to that range's owner (all-to-all), the owner adds them, and the
//!   owners' summed rows are gathered by everyone: 6 bytes a non-zero (a 2-byte topic, a 4-byte
//!   count) plus 4 bytes a word of row lengths, each way.
//!
//! With S the sum of the workers' non-zeros (one 8-byte all-reduce finds it), the sparse way
//! moves at most about 2 · (6·S + 4·V) bytes through a worker, so it is taken when that is less
//! than the dense 2 · 4·V·K.
//!
//! The host work around the sparse collectives (encoding each owner's rows, decoding what came,
//! adding the owner's rows, decoding the gathered sums) runs on the calling thread pool, split by
//! owner and by blocks of words, each piece written to its own place: a process of several
//! threads under MPI spends a quarter of the time here that it would on one thread, and the result
//! does not depend on the number of threads.

use crate::counts::WordTopics;
use crate::transport::{Transport, TransportError};
use rayon::prelude::*;
use std::ops::Range;

/// Word rows summed per collective of the dense way: at most 2²² cells (16 MiB).
const DENSE_CELLS: usize = 1 << 22;

/// How an exchange moved its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    Dense,
    Sparse,
    /// Summed on the GPUs by NCCL's all-reduce of the dense counts, no copy through the host.
    Nccl,
    /// On the GPUs, sparse: every GPU's non-zero cells gathered by NCCL and added on each.
    #[serde(rename = "nccl-sparse")]
    NcclSparse,
}

/// The exchanges of a run, for its summary.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ExchangeReport {
    /// Exchanges made each way.
    pub dense: u32,
    pub sparse: u32,
    pub nccl: u32,
    pub nccl_sparse: u32,
    /// The way of the last one.
    pub last: Option<Way>,
    /// Seconds spent summing, from the moment this worker's counts were ready (a GPU's
    /// exchange waits for its sweep to finish first: that wait is sampling, not counted here).
    pub seconds: f64,
    /// Of `seconds`, those spent in the first collective of each exchange (the totals and
    /// non-zeros, 8·(K + 2) bytes): waiting there is waiting for the slowest worker to finish its
    /// sweep, the run's imbalance rather than the cost of moving counts.
    pub waiting_seconds: f64,
    /// Slices of the vocabulary a GPU's sweep ran in, each exchanged while the next sampled
    /// (GPUs over NCCL; 1: the whole sweep, then the exchange; 0: not a GPU run).
    pub slices: u32,
}

impl ExchangeReport {
    /// Counts one exchange made `way`.
    pub fn count(&mut self, way: Way) {
        match way {
            Way::Dense => self.dense += 1,
            Way::Sparse => self.sparse += 1,
            Way::Nccl => self.nccl += 1,
            Way::NcclSparse => self.nccl_sparse += 1,
        }
        self.last = Some(way);
    }
}

/// The sum of every worker's `local` counts, on every worker (`local` itself with one worker).
/// `previous`: the summed counts of the last exchange, the same on every worker (balances the
/// sparse way's word ranges; `None`: equal numbers of words).
pub fn sum_across_workers(
    local: WordTopics,
    previous: Option<&WordTopics>,
    transport: &dyn Transport,
    report: &mut ExchangeReport,
) -> Result<WordTopics, TransportError> {
    if transport.workers() == 1 {
        return Ok(local);
    }
    let v = local.num_words() as u64;
    let k = u64::from(local.num_topics);
    // One sum carries the totals, the non-zeros and each worker's forced way (so that workers
    // told different ways, `TOPOS_EXCHANGE` set for some only, agree on none rather than call
    // different collectives).
    let forced_code = |w: Option<Way>| match w {
        None => 0u64,
        Some(Way::Dense) | Some(Way::Nccl) => 1,
        Some(Way::Sparse) | Some(Way::NcclSparse) => 2,
    };
    let mut head = local.totals.clone();
    head.push(local.topics.len() as u64);
    head.push(forced_code(forced_way()));
    let waited = std::time::Instant::now();
    transport.sum_u64(&mut head)?;
    let waited = waited.elapsed().as_secs_f64();
    report.waiting_seconds += waited;
    report.seconds += waited;
    let forced_sum = head.pop().expect("the forced way was appended");
    let nnz_sum = head.pop().expect("the non-zeros were appended");
    let totals = head;
    let workers = transport.workers() as u64;
    let forced = match forced_sum {
        s if s == workers => Some(Way::Dense),
        s if s == 2 * workers => Some(Way::Sparse),
        _ => None,
    };
    let way = match forced {
        Some(w) => w,
        None if 6 * nnz_sum + 4 * v < 4 * v * k => Way::Sparse,
        None => Way::Dense,
    };
    report.count(way);
    let started = std::time::Instant::now();
    let mut out = match way {
        Way::Sparse => sum_sparse(&local, previous, transport)?,
        Way::Dense | Way::Nccl | Way::NcclSparse => sum_dense(&local, transport)?,
    };
    out.totals = totals;
    report.seconds += started.elapsed().as_secs_f64();
    Ok(out)
}

/// `TOPOS_EXCHANGE=dense|sparse` forces a way (tests and benchmarks; read once). Between GPUs,
/// `dense` (or `nccl`) forces NCCL's all-reduce and `sparse` the sparse gather whenever it fits;
/// `auto` (or unset) chooses by the bytes moved. A value that names no way is refused at the
/// start of a run ([`check_forced_way`]) and chooses by the bytes here.
pub(crate) fn forced_way() -> Option<Way> {
    static FORCED: std::sync::OnceLock<Option<Way>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| {
        parse_forced_way(std::env::var("TOPOS_EXCHANGE").ok().as_deref()).unwrap_or(None)
    })
}

/// An error for a `TOPOS_EXCHANGE` that names no way to exchange counts.
pub(crate) fn check_forced_way() -> Result<(), String> {
    parse_forced_way(std::env::var("TOPOS_EXCHANGE").ok().as_deref()).map(|_| ())
}

/// `TOPOS_EXCHANGE`'s value (`None`: unset) as a forced way, `Ok(None)` for the automatic choice.
fn parse_forced_way(value: Option<&str>) -> Result<Option<Way>, String> {
    match value {
        Some("dense") => Ok(Some(Way::Dense)),
        Some("sparse") => Ok(Some(Way::Sparse)),
        Some("nccl") => Ok(Some(Way::Nccl)),
        None | Some("auto" | "") => Ok(None),
        Some(v) => Err(format!(
            "TOPOS_EXCHANGE={v:?} is not a way to exchange counts: use dense, sparse, nccl or auto (chosen by the bytes it moves, as when unset)"
        )),
    }
}

fn empty_like(local: &WordTopics) -> WordTopics {
    WordTopics {
        num_topics: local.num_topics,
        offsets: vec![0],
        topics: Vec::new(),
        counts: Vec::new(),
        totals: Vec::new(),
    }
}

fn sum_dense(local: &WordTopics, transport: &dyn Transport) -> Result<WordTopics, TransportError> {
    let k = local.num_topics as usize;
    let v = local.num_words();
    let block = (DENSE_CELLS / k.max(1)).max(1);
    let mut dense = vec![0u32; block.min(v.max(1)) * k];
    let mut out = empty_like(local);
    out.offsets.reserve(v);
    let mut w0 = 0usize;
    while w0 < v {
        let w1 = (w0 + block).min(v);
        let cells = &mut dense[..(w1 - w0) * k];
        cells.fill(0);
        for w in w0..w1 {
            let (t, c) = local.row(w as u32);
            let row = &mut cells[(w - w0) * k..(w - w0 + 1) * k];
            for (&t, &c) in t.iter().zip(c) {
                row[t as usize] = c;
            }
        }
        transport.sum_u32(cells)?;
        for row in cells.chunks_exact(k) {
            for (t, &c) in row.iter().enumerate() {
                if c > 0 {
                    out.topics.push(t as u16);
                    out.counts.push(c);
                }
            }
            out.offsets.push(out.topics.len() as u64);
        }
        w0 = w1;
    }
    Ok(out)
}

/// One contiguous range of words per worker, balanced by `previous`'s non-zeros (plus one per
/// word), or by words.
pub fn owner_ranges(v: usize, workers: usize, previous: Option<&WordTopics>) -> Vec<Range<usize>> {
    let Some(p) = previous.filter(|p| p.num_words() == v) else {
        return crate::shard::even_ranges(v, workers);
    };
    let weight = |w: usize| p.offsets[w] + w as u64;
    let total = weight(v);
    let mut out = Vec::with_capacity(workers);
    let mut start = 0usize;
    for r in 1..=workers {
        let end = if r == workers {
            v
        } else {
            let target = total * r as u64 / workers as u64;
            // First word boundary at or after `start` whose weight reaches the r-th share.
            let (mut lo, mut hi) = (start, v);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if weight(mid) < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        out.push(start..end);
        start = end;
    }
    out
}

/// Rows `words` of `rows` (whose row 0 is word `first`) as bytes: every row's length (u32), then
/// every topic (u16), then every count (u32), little-endian.
fn encode(rows: &WordTopics, first: usize, words: Range<usize>) -> Vec<u8> {
    let (a, b) = (
        rows.offsets[words.start - first] as usize,
        rows.offsets[words.end - first] as usize,
    );
    let mut out = Vec::with_capacity(4 * words.len() + 6 * (b - a));
    for w in words.clone() {
        let len = rows.offsets[w + 1 - first] - rows.offsets[w - first];
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    for t in &rows.topics[a..b] {
        out.extend_from_slice(&t.to_le_bytes());
    }
    for c in &rows.counts[a..b] {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out
}

/// Appends the `words` rows of `bytes` (from [`encode`]) to `out`.
fn decode_into(bytes: &[u8], words: usize, out: &mut WordTopics) -> Result<(), TransportError> {
    let bad = || TransportError {
        transport: "exchange",
        what: "a worker sent malformed rows".into(),
    };
    let lens = bytes.get(..4 * words).ok_or_else(bad)?;
    let nnz: u64 = lens
        .chunks_exact(4)
        .map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap())))
        .sum();
    let n = nnz as usize;
    if bytes.len() != 4 * words + 6 * n {
        return Err(bad());
    }
    let mut at = *out.offsets.last().expect("offsets start with 0");
    for c in lens.chunks_exact(4) {
        at += u64::from(u32::from_le_bytes(c.try_into().unwrap()));
        out.offsets.push(at);
    }
    let topics = &bytes[4 * words..4 * words + 2 * n];
    out.topics.extend(
        topics
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]])),
    );
    let counts = &bytes[4 * words + 2 * n..];
    out.counts.extend(
        counts
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
    );
    Ok(())
}

fn sum_sparse(
    local: &WordTopics,
    previous: Option<&WordTopics>,
    transport: &dyn Transport,
) -> Result<WordTopics, TransportError> {
    let v = local.num_words();
    let k = local.num_topics as usize;
    let ranges = owner_ranges(v, transport.workers(), previous);
    let parts: Vec<Vec<u8>> = ranges
        .par_iter()
        .map(|r| encode(local, 0, r.clone()))
        .collect();
    let received = transport.all_to_all_bytes(&parts)?;
    drop(parts);
    // The rows of this worker's words, from every worker, added.
    let mine = ranges[transport.rank()].clone();
    let theirs = received
        .par_iter()
        .map(|bytes| {
            let mut rows = empty_like(local);
            decode_into(bytes, mine.len(), &mut rows)?;
            Ok(rows)
        })
        .collect::<Result<Vec<_>, TransportError>>()?;
    drop(received);
    let summed = add_rows(&theirs, mine.len(), k);
    drop(theirs);
    let gathered = transport.all_gather_bytes(&encode(&summed, mine.start, mine.clone()))?;
    drop(summed);
    let pieces = gathered
        .par_iter()
        .zip(&ranges)
        .map(|(bytes, r)| {
            let mut rows = empty_like(local);
            decode_into(bytes, r.len(), &mut rows)?;
            Ok(rows)
        })
        .collect::<Result<Vec<_>, TransportError>>()?;
    drop(gathered);
    Ok(concat_rows(local.num_topics, pieces))
}

/// Words added per task of [`add_rows`]: enough work to be worth a task, few enough that every
/// thread gets some.
const WORDS_PER_TASK: usize = 4096;

/// The cell-by-cell sum of `theirs` (each with `words` rows), rows sorted by topic. Blocks of
/// words are added in parallel, each into rows of its own, and joined in word order.
fn add_rows(theirs: &[WordTopics], words: usize, k: usize) -> WordTopics {
    let num_topics = k as u32;
    let blocks: Vec<Range<usize>> = (0..words)
        .step_by(WORDS_PER_TASK)
        .map(|a| a..(a + WORDS_PER_TASK).min(words))
        .collect();
    let pieces: Vec<WordTopics> = blocks
        .into_par_iter()
        .map_init(
            || (vec![0u32; k], Vec::<u16>::new()),
            |(scratch, touched), block| {
                let mut out = WordTopics {
                    num_topics,
                    offsets: vec![0],
                    topics: Vec::new(),
                    counts: Vec::new(),
                    totals: Vec::new(),
                };
                for i in block {
                    for rows in theirs {
                        let (t, c) = rows.row(i as u32);
                        for (&t, &c) in t.iter().zip(c) {
                            if scratch[t as usize] == 0 {
                                touched.push(t);
                            }
                            scratch[t as usize] += c;
                        }
                    }
                    touched.sort_unstable();
                    for &t in touched.iter() {
                        out.topics.push(t);
                        out.counts.push(std::mem::take(&mut scratch[t as usize]));
                    }
                    touched.clear();
                    out.offsets.push(out.topics.len() as u64);
                }
                out
            },
        )
        .collect();
    concat_rows(num_topics, pieces)
}

/// The rows of `pieces`, one after another (totals left empty).
fn concat_rows(num_topics: u32, pieces: Vec<WordTopics>) -> WordTopics {
    let words: usize = pieces.iter().map(WordTopics::num_words).sum();
    let nnz: usize = pieces.iter().map(|p| p.topics.len()).sum();
    let mut out = WordTopics {
        num_topics,
        offsets: Vec::with_capacity(words + 1),
        topics: Vec::with_capacity(nnz),
        counts: Vec::with_capacity(nnz),
        totals: Vec::new(),
    };
    out.offsets.push(0);
    for p in pieces {
        let base = *out.offsets.last().expect("offsets start with 0");
        out.offsets.extend(p.offsets[1..].iter().map(|&o| base + o));
        out.topics.extend_from_slice(&p.topics);
        out.counts.extend_from_slice(&p.counts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topos_exchange_values_parse_to_a_way_or_are_refused() {
        assert_eq!(parse_forced_way(Some("dense")), Ok(Some(Way::Dense)));
        assert_eq!(parse_forced_way(Some("sparse")), Ok(Some(Way::Sparse)));
        assert_eq!(parse_forced_way(Some("nccl")), Ok(Some(Way::Nccl)));
        for automatic in [None, Some("auto"), Some("")] {
            assert_eq!(parse_forced_way(automatic), Ok(None));
        }
        let refused = parse_forced_way(Some("spares")).unwrap_err();
        assert!(
            refused.contains("\"spares\"") && refused.contains("use dense, sparse, nccl or auto")
        );
    }

    fn rows(k: u32, dense: &[&[u32]]) -> WordTopics {
        let mut w = WordTopics {
            num_topics: k,
            offsets: vec![0],
            topics: Vec::new(),
            counts: Vec::new(),
            totals: vec![0; k as usize],
        };
        for row in dense {
            for (t, &c) in row.iter().enumerate() {
                if c > 0 {
                    w.topics.push(t as u16);
                    w.counts.push(c);
                    w.totals[t] += u64::from(c);
                }
            }
            w.offsets.push(w.topics.len() as u64);
        }
        w
    }

    /// The sum of `parts` (each `v` rows of `k` topics), added cell by cell in dense rows.
    fn cell_by_cell(parts: &[WordTopics], v: usize, k: u32) -> WordTopics {
        let mut dense = vec![vec![0u32; k as usize]; v];
        for p in parts {
            for (w, row) in dense.iter_mut().enumerate() {
                let (t, c) = p.row(w as u32);
                t.iter().zip(c).for_each(|(&t, &c)| row[t as usize] += c);
            }
        }
        rows(k, &dense.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    #[test]
    fn both_ways_give_the_exact_sum_on_every_worker() {
        use topos_sampling::{CounterRng, Stream};
        let (v, k) = (57usize, 9u32);
        for n in [2usize, 3, 5] {
            // Worker i's counts: sparse random rows, some words empty everywhere.
            let local: Vec<WordTopics> = (0..n)
                .map(|i| {
                    let mut rng = CounterRng::new(7, Stream::Synthetic, i as u32, 0);
                    let dense: Vec<Vec<u32>> = (0..v)
                        .map(|w| {
                            (0..k)
                                .map(|_| {
                                    if w % 7 == 3 || rng.below(3) > 0 {
                                        0
                                    } else {
                                        1 + rng.below(50)
                                    }
                                })
                                .collect()
                        })
                        .collect();
                    rows(k, &dense.iter().map(Vec::as_slice).collect::<Vec<_>>())
                })
                .collect();
            let expected = cell_by_cell(&local, v, k);
            for way in [Way::Dense, Way::Sparse] {
                let group = crate::transport::InProcess::group(n);
                let results: Vec<WordTopics> = std::thread::scope(|scope| {
                    let handles: Vec<_> = local
                        .iter()
                        .zip(group)
                        .map(|(l, t)| {
                            let l = l.clone();
                            let prev = expected.clone();
                            scope.spawn(move || {
                                let mut out = match way {
                                    Way::Sparse => sum_sparse(&l, Some(&prev), &t).unwrap(),
                                    Way::Dense | Way::Nccl | Way::NcclSparse => {
                                        sum_dense(&l, &t).unwrap()
                                    }
                                };
                                let mut totals = l.totals.clone();
                                t.sum_u64(&mut totals).unwrap();
                                out.totals = totals;
                                out
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                for r in &results {
                    assert_eq!(
                        (&r.offsets, &r.topics, &r.counts, &r.totals),
                        (
                            &expected.offsets,
                            &expected.topics,
                            &expected.counts,
                            &expected.totals
                        ),
                        "{n} workers, {way:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn adding_by_blocks_of_words_equals_adding_word_by_word() {
        use topos_sampling::{CounterRng, Stream};
        // Several blocks of `WORDS_PER_TASK` words and a partial one, on pools of 1 and 3
        // threads: the same rows, in word order, as a plain cell-by-cell sum.
        let (v, k) = (3 * WORDS_PER_TASK + 17, 40u32);
        let mut rng = CounterRng::new(3, Stream::Synthetic, 0, 0);
        let theirs: Vec<WordTopics> = (0..3)
            .map(|_| {
                let dense: Vec<Vec<u32>> = (0..v)
                    .map(|_| {
                        (0..k)
                            .map(|_| {
                                if rng.below(8) == 0 {
                                    1 + rng.below(9)
                                } else {
                                    0
                                }
                            })
                            .collect()
                    })
                    .collect();
                rows(k, &dense.iter().map(Vec::as_slice).collect::<Vec<_>>())
            })
            .collect();
        let expected = cell_by_cell(&theirs, v, k);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| add_rows(&theirs, v, k as usize));
            assert_eq!(
                (&got.offsets, &got.topics, &got.counts),
                (&expected.offsets, &expected.topics, &expected.counts),
                "{threads} threads"
            );
        }
    }

    #[test]
    fn rows_survive_encoding_and_owner_ranges_cover_the_words() {
        let a = rows(3, &[&[1, 0, 2], &[0, 0, 0], &[0, 5, 0], &[7, 7, 7]]);
        let mut out = empty_like(&a);
        decode_into(&encode(&a, 0, 0..2), 2, &mut out).unwrap();
        decode_into(&encode(&a, 0, 2..4), 2, &mut out).unwrap();
        assert_eq!(
            (out.offsets, out.topics, out.counts),
            (a.offsets.clone(), a.topics.clone(), a.counts.clone())
        );
        for workers in 1..=5 {
            for prev in [None, Some(&a)] {
                let r = owner_ranges(4, workers, prev);
                assert_eq!(r.len(), workers);
                assert_eq!(r[0].start, 0);
                assert_eq!(r[workers - 1].end, 4);
                assert!(r.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
        // The heavy last word gets a worker of its own.
        assert_eq!(owner_ranges(4, 2, Some(&a)), vec![0..3, 3..4]);
    }
}
