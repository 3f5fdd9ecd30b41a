//! The two passes over a text input: batches of documents are read on the calling thread and
//! tokenized in parallel (rayon); results are consumed in input order.

use super::{Counted, Ctx, Pass, Written};
use crate::file::CorpusWriter;
use crate::prune::TermCount;
use crate::readers::text::{self as reader, TextSource};
use crate::tokenize::{TokenStats, Tokenizer};
use crate::CorpusError;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Frequencies of one token within a chunk of documents; `last` is the chunk-local index of the
/// last document counted in `df`.
#[derive(Clone, Copy)]
struct Tf {
    cf: u64,
    df: u64,
    last: usize,
}

/// Counts of one chunk of a batch.
#[derive(Default)]
struct Chunk {
    map: FxHashMap<Box<str>, Tf>,
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

/// Drops the buffers of unusually large documents so that one huge document does not pin its
/// memory for the rest of the run.
fn trim(batch: &mut [String]) {
    for s in batch {
        if s.capacity() > 1 << 20 {
            *s = String::new();
        }
    }
}

fn chunk_len(n: usize) -> usize {
    n.div_ceil(2 * rayon::current_num_threads()).max(1)
}

/// Pass 1.
pub(super) fn count(ctx: &mut Ctx, tok: &Tokenizer) -> Result<Counted, CorpusError> {
    let mut src = reader::open(ctx.input, &ctx.opts.text_field, &ctx.counter)?;
    let mut total: FxHashMap<Box<str>, (u64, u64)> = FxHashMap::default();
    let mut stats = TokenStats::default();
    let (mut documents, mut nonempty, mut text_bytes) = (0u64, 0u64, 0u64);
    let mut batch = Vec::new();
    ctx.report(Pass::Count, 0);
    loop {
        let n = fill(src.as_mut(), &mut batch, ctx.opts.batch_bytes)?;
        if n == 0 {
            break;
        }
        let chunks: Vec<Chunk> = batch[..n]
            .par_chunks(chunk_len(n))
            .map(|docs| count_chunk(tok, docs))
            .collect();
        for c in chunks {
            stats.add(&c.stats);
            nonempty += c.nonempty;
            text_bytes += c.bytes;
            for (word, tf) in c.map {
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
        documents += n as u64;
        trim(&mut batch[..n]);
        ctx.report(Pass::Count, documents);
    }
    let terms = total
        .into_iter()
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
    })
}

fn count_chunk(tok: &Tokenizer, docs: &[String]) -> Chunk {
    let mut c = Chunk::default();
    let mut scratch = String::new();
    for (i, doc) in docs.iter().enumerate() {
        c.bytes += doc.len() as u64;
        let before = c.stats.kept;
        let map = &mut c.map;
        tok.tokenize_with(doc, &mut scratch, &mut c.stats, |t| match map.get_mut(t) {
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
    let mut src = reader::open(ctx.input, &ctx.opts.text_field, &ctx.counter)?;
    let mut out = Written {
        documents: 0,
        empty: 0,
        tokens: 0,
    };
    let mut batch = Vec::new();
    ctx.report(Pass::Write, 0);
    loop {
        let n = fill(src.as_mut(), &mut batch, ctx.opts.batch_bytes)?;
        if n == 0 {
            break;
        }
        let docs: Vec<Vec<u32>> = batch[..n]
            .par_iter()
            .with_min_len(16)
            .map_init(String::new, |scratch, doc| {
                let mut v = Vec::new();
                tok.tokenize_with(doc, scratch, &mut TokenStats::default(), |t| {
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
        trim(&mut batch[..n]);
        ctx.report(Pass::Write, out.documents);
    }
    Ok(out)
}
