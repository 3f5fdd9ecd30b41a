//! The two passes over a text input: batches of documents are read on a reader thread and
//! tokenized in parallel (rayon); results are consumed in input order.

use super::{Counted, Ctx, Pass, Written};
use crate::file::CorpusWriter;
use crate::prune::TermCount;
use crate::readers::text::{self as reader, TextSource};
use crate::tokenize::{Scratch, TokenStats, Tokenizer};
use crate::CorpusError;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::hash::Hasher;
use std::sync::mpsc;

/// The counting maps are split into this many shards by a hash of the word, so that the counts
/// of a batch are merged into the totals in parallel (one task per shard).
const SHARDS: usize = 64;

/// Frequencies of one token within a chunk of documents; `last` is the chunk-local index of the
/// last document counted in `df`.
#[derive(Clone, Copy)]
struct Tf {
    cf: u64,
    df: u64,
    last: usize,
}

type Shard<V> = FxHashMap<Box<str>, V>;

/// Which shard `word` belongs to. The hash is mixed again so that the shard does not fix the
/// top bits that the map itself uses to probe.
#[inline]
fn shard_of(word: &str) -> usize {
    let mut h = rustc_hash::FxHasher::default();
    h.write(word.as_bytes());
    (h.finish().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % SHARDS
}

/// Counts of one chunk of a batch.
struct Chunk {
    shards: Vec<Shard<Tf>>,
    stats: TokenStats,
    nonempty: u64,
    bytes: u64,
}

/// Reads up to `batch_bytes` of text (at least one document) into `batch`, reusing its strings.
/// Returns the number of documents read (0 at the end).
fn fill(
    src: &mut dyn TextSource,
    batch: &mut Vec<String>,
    batch_bytes: usize,
) -> Result<usize, CorpusError> {
    let mut n = 0;
    let mut bytes = 0;
    while bytes < batch_bytes {
        if n == batch.len() {
            batch.push(String::new());
        }
        if !src.next_doc(&mut batch[n])? {
            break;
        }
        bytes += batch[n].len() + 1;
        n += 1;
    }
    Ok(n)
}

/// Reads the input on a thread of its own (decompressing, splitting documents) while `each`
/// processes the previous batch, in input order. Batches are recycled to reuse their strings.
fn for_each_batch(
    ctx: &mut Ctx,
    mut each: impl FnMut(&mut Ctx, &[String]) -> Result<(), CorpusError>,
) -> Result<(), CorpusError> {
    let src = reader::open(ctx.input, &ctx.opts.text_field, &ctx.counter, &ctx.decoder)?;
    let batch_bytes = ctx.opts.batch_bytes;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<Result<Vec<String>, CorpusError>>(1);
        let (recycle, recycled) = mpsc::channel::<Vec<String>>();
        scope.spawn(move || {
            let mut src = src;
            loop {
                let mut batch = recycled.try_recv().unwrap_or_default();
                match fill(src.as_mut(), &mut batch, batch_bytes) {
                    Ok(0) => break,
                    Ok(n) => {
                        batch.truncate(n);
                        if tx.send(Ok(batch)).is_err() {
                            break; // the consumer stopped (on an error)
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        for batch in rx {
            let mut batch = batch?;
            each(ctx, &batch)?;
            // One huge document should not pin its memory for the rest of the run.
            for s in &mut batch {
                if s.capacity() > 1 << 20 {
                    *s = String::new();
                }
            }
            let _ = recycle.send(batch);
        }
        Ok(())
    })
}

fn chunk_len(n: usize) -> usize {
    n.div_ceil(2 * rayon::current_num_threads()).max(1)
}

/// Pass 1.
pub(super) fn count(ctx: &mut Ctx, tok: &Tokenizer) -> Result<Counted, CorpusError> {
    let mut total: Vec<Shard<(u64, u64)>> = (0..SHARDS).map(|_| Shard::default()).collect();
    let mut stats = TokenStats::default();
    let (mut documents, mut nonempty, mut text_bytes) = (0u64, 0u64, 0u64);
    ctx.report(Pass::Count, 0);
    for_each_batch(ctx, |ctx, batch| {
        let chunks: Vec<Chunk> = batch
            .par_chunks(chunk_len(batch.len()))
            .map(|docs| count_chunk(tok, docs))
            .collect();
        let mut by_shard: Vec<Vec<Shard<Tf>>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for c in chunks {
            stats.add(&c.stats);
            nonempty += c.nonempty;
            text_bytes += c.bytes;
            for (s, m) in c.shards.into_iter().enumerate() {
                by_shard[s].push(m);
            }
        }
        total
            .par_iter_mut()
            .zip(by_shard)
            .for_each(|(total, maps)| {
                for m in maps {
                    for (word, tf) in m {
                        match total.get_mut(&word) {
                            Some(t) => {
                                t.0 += tf.cf;
                                t.1 += tf.df;
                            }
                            None => {
                                total.insert(word, (tf.cf, tf.df));
                            }
                        }
                    }
                }
            });
        documents += batch.len() as u64;
        ctx.report(Pass::Count, documents);
        Ok(())
    })?;
    let terms = total
        .into_iter()
        .flatten()
        .map(|(w, (cf, df))| TermCount {
            word: w.into_string(),
            cf,
            df,
        })
        .collect();
    Ok(Counted {
        terms,
        documents,
        nonempty,
        stats,
        text_bytes,
        largest: (0, 0),
    })
}

fn count_chunk(tok: &Tokenizer, docs: &[String]) -> Chunk {
    let mut c = Chunk {
        shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        stats: TokenStats::default(),
        nonempty: 0,
        bytes: 0,
    };
    let mut scratch = Scratch::default();
    for (i, doc) in docs.iter().enumerate() {
        c.bytes += doc.len() as u64;
        let before = c.stats.kept;
        let shards = &mut c.shards;
        tok.tokenize_with(doc, &mut scratch, &mut c.stats, |t| {
            let map = &mut shards[shard_of(t)];
            match map.get_mut(t) {
                Some(tf) => {
                    tf.cf += 1;
                    if tf.last != i {
                        tf.last = i;
                        tf.df += 1;
                    }
                }
                None => {
                    map.insert(
                        t.into(),
                        Tf {
                            cf: 1,
                            df: 1,
                            last: i,
                        },
                    );
                }
            }
        });
        if c.stats.kept > before {
            c.nonempty += 1;
        }
    }
    c
}

/// Pass 2.
pub(super) fn write(
    ctx: &mut Ctx,
    tok: &Tokenizer,
    words: &[String],
    writer: &mut CorpusWriter,
) -> Result<Written, CorpusError> {
    let ids: FxHashMap<&str, u32> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_str(), i as u32))
        .collect();
    let mut out = Written {
        documents: 0,
        empty: 0,
        tokens: 0,
    };
    ctx.report(Pass::Write, 0);
    for_each_batch(ctx, |ctx, batch| {
        let docs: Vec<Vec<u32>> = batch
            .par_iter()
            .with_min_len(16)
            .map_init(Scratch::default, |scratch, doc| {
                let mut v = Vec::new();
                tok.lookup_tokens_with(doc, scratch, |t| {
                    if let Some(&id) = ids.get(t) {
                        v.push(id);
                    }
                });
                v
            })
            .collect();
        for doc in docs {
            let index = out.documents;
            out.documents += 1;
            if doc.is_empty() {
                out.empty += 1;
            } else {
                out.tokens += doc.len() as u64;
                writer.push(ctx.heldout(index), index, &doc);
            }
        }
        ctx.report(Pass::Write, out.documents);
        Ok(())
    })?;
    Ok(out)
}
