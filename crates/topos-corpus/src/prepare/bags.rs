//! The two passes over a bag-of-words input (UCI, LDA-C). The words are given, so the tokenizer is
//! not applied; only its stop words are (matched on the lower-cased word). Each
//! document's tokens are its word ids repeated by their counts, grouped by word in input order
//! (the order of tokens within a document does not matter to LDA).

use super::{Counted, Ctx, Pass, Written};
use crate::file::CorpusWriter;
use crate::prune::TermCount;
use crate::readers::bags;
use crate::tokenize::{TokenStats, Tokenizer};
use crate::CorpusError;
use rustc_hash::FxHashMap;

/// Documents between progress reports.
const REPORT_EVERY: u64 = 4096;

/// Pass 1; also returns the input vocabulary.
pub(super) fn count(ctx: &mut Ctx, tok: &Tokenizer) -> Result<(Counted, Vec<String>), CorpusError> {
    let (mut src, vocab) = bags::open(ctx.input, &ctx.counter, &ctx.decoder)?;
    let stop: Vec<bool> = vocab
        .iter()
        .map(|w| {
            let stop = tok.stop_words();
            // Matched on the lower-cased word, as the tokenizer matches text (whatever the case
            // the vocabulary keeps).
            !stop.is_empty() && stop.contains(&w.to_lowercase())
        })
        .collect();
    let mut cf = vec![0u64; vocab.len()];
    let mut df = vec![0u64; vocab.len()];
    let mut stats = TokenStats::default();
    let (mut documents, mut nonempty) = (0u64, 0u64);
    let mut doc = Vec::new();
    let mut largest = (0u64, 0u64);
    ctx.report(Pass::Count, 0);
    while src.next_doc(&mut doc)? {
        let size: u64 = doc.iter().map(|&(_, c)| u64::from(c)).sum();
        if size > largest.1 {
            largest = (documents, size);
        }
        let mut kept = false;
        for &(w, c) in &doc {
            let (w, c) = (w as usize, u64::from(c));
            stats.words += c;
            if stop[w] {
                stats.stopwords += c;
            } else {
                stats.kept += c;
                cf[w] += c;
                df[w] += 1; // ids may repeat within a document; counted below
                kept = true;
            }
        }
        // A word listed twice in one document counts once in its document frequency.
        if doc.windows(2).any(|p| p[0].0 >= p[1].0) {
            let mut ids: Vec<u32> = doc.iter().map(|p| p.0).collect();
            ids.sort_unstable();
            for p in ids.windows(2) {
                if p[0] == p[1] && !stop[p[0] as usize] {
                    df[p[0] as usize] -= 1;
                }
            }
        }
        nonempty += u64::from(kept);
        documents += 1;
        if documents.is_multiple_of(REPORT_EVERY) {
            ctx.report(Pass::Count, documents);
        }
    }
    ctx.report(Pass::Count, documents);
    let terms = vocab
        .iter()
        .zip(cf.iter().zip(&df))
        .filter(|(_, (&cf, _))| cf > 0)
        .map(|(w, (&cf, &df))| TermCount {
            word: w.clone(),
            cf,
            df,
        })
        .collect();
    Ok((
        Counted {
            terms,
            documents,
            nonempty,
            stats,
            text_bytes: 0,
            largest,
        },
        vocab,
    ))
}

/// Pass 2: `vocab` is the input vocabulary, `words` the kept words in id order.
pub(super) fn write(
    ctx: &mut Ctx,
    vocab: &[String],
    words: &[String],
    writer: &mut CorpusWriter,
) -> Result<Written, CorpusError> {
    let new_id: FxHashMap<&str, u32> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_str(), i as u32))
        .collect();
    let remap: Vec<Option<u32>> = vocab
        .iter()
        .map(|w| new_id.get(w.as_str()).copied())
        .collect();
    let (mut src, _) = bags::open(ctx.input, &ctx.counter, &ctx.decoder)?;
    let mut out = Written {
        documents: 0,
        empty: 0,
        tokens: 0,
    };
    let mut doc = Vec::new();
    let mut runs = Vec::new();
    ctx.report(Pass::Write, 0);
    while src.next_doc(&mut doc)? {
        // Runs (word, count), written straight into the corpus: a document is never expanded
        // into a token array of its own (its counts may say billions).
        runs.clear();
        runs.extend(
            doc.iter()
                .filter_map(|&(w, c)| remap[w as usize].map(|id| (id, c))),
        );
        let n: u64 = runs.iter().map(|&(_, c)| u64::from(c)).sum();
        let index = out.documents;
        out.documents += 1;
        if n == 0 {
            out.empty += 1;
        } else {
            out.tokens += n;
            writer.push_runs(ctx.heldout(index), index, &runs);
        }
        if out.documents.is_multiple_of(REPORT_EVERY) {
            ctx.report(Pass::Write, out.documents);
        }
    }
    ctx.report(Pass::Write, out.documents);
    Ok(out)
}
