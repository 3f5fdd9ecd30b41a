//! `prepare` on the real corpora of `shared/data` (read in place). Each test is skipped, with a
//! note, where the data folder is absent.

use std::path::PathBuf;
use topos_corpus::{prepare, Corpus, InputFormat, PrepareOptions, PruneOptions, TokenizerOptions};

fn data(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("note: {} is absent; test skipped", p.display());
        None
    }
}

/// No filter at all: the prepared corpus must hold exactly the input's tokens.
fn verbatim() -> PrepareOptions {
    PrepareOptions {
        tokenizer: TokenizerOptions {
            english_stopwords: false,
            ..Default::default()
        },
        prune: PruneOptions {
            min_df: 1,
            max_df: 1.0,
            max_vocab: None,
        },
        ..Default::default()
    }
}

#[test]
fn kos_uci_bag_of_words() {
    let Some(kos) = data("kos") else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kos.tcorp");
    let r = prepare(&kos, &out, &verbatim(), &mut |_| {}).unwrap();
    // The published statistics: 3,430 documents, 6,906 words, 467,714 tokens.
    assert_eq!(r.format, InputFormat::Uci);
    assert_eq!(r.input_documents, 3430);
    assert_eq!(r.documents_kept, 3430);
    assert_eq!(r.tokens_kept, 467_714);
    assert_eq!(r.vocab_after_pruning, 6906);
    let c = Corpus::open(&out).unwrap();
    assert_eq!(c.train().num_tokens(), 467_714);
    assert_eq!(c.word_frequencies().iter().sum::<u64>(), 467_714);
    // Id 0 is the most frequent word; frequencies never increase with the id.
    assert!(c.word_frequencies().windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(c.train_ids(), (0..3430).collect::<Vec<u64>>());

    // Defaults with a held-out tenth.
    let out2 = dir.path().join("kos2.tcorp");
    let r = prepare(
        &kos,
        &out2,
        &PrepareOptions {
            holdout: 0.1,
            ..Default::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let frac = r.heldout_documents as f64 / r.documents_kept as f64;
    assert!((0.08..0.12).contains(&frac), "{frac}");
    assert!(
        r.vocab_after_pruning > 5000 && r.vocab_after_pruning < 6906,
        "{r:?}"
    );
    let c = Corpus::open(&out2).unwrap();
    assert_eq!(c.heldout().len() as u64, r.heldout_documents);
    // "bush" is in 2,123 of 3,430 documents: above max_df = 0.5; "senate" (974) stays.
    assert!(c.vocab().id("senate").is_some() && c.vocab().id("bush").is_none());
}

#[test]
fn lda_reuters_ldac() {
    let Some(dir_in) = data("lda-reuters") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.tcorp");
    let r = prepare(&dir_in.join("reuters.ldac"), &out, &verbatim(), &mut |_| {}).unwrap();
    assert_eq!(r.format, InputFormat::Ldac);
    assert_eq!(r.input_documents, 395);
    assert_eq!(r.tokens_kept, 84_010);
    let c = Corpus::open(&out).unwrap();
    assert!(c.vocab().len() <= 4258);
    assert_eq!(c.train().len() + c.heldout().len(), 395);
}

#[test]
fn arxiv_abstracts_lines() {
    let Some(path) = data("arxiv-abstracts/abstracts.txt.gz") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.tcorp");
    let opts = PrepareOptions {
        holdout: 0.1,
        seed: 3,
        ..Default::default()
    };
    let r = prepare(&path, &out, &opts, &mut |_| {}).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r).unwrap());
    assert_eq!(r.format, InputFormat::Lines);
    assert_eq!(r.input_documents, 2000);
    assert_eq!(r.documents_dropped_empty, 0);
    assert!(
        r.vocab_after_pruning > 2000 && r.vocab_after_pruning < 13_640,
        "{r:?}"
    );
    assert!(r.tokens_kept > 100_000, "{r:?}");
    let c = Corpus::open(&out).unwrap();
    for w in ["quantum", "galaxies", "graph"] {
        assert!(c.vocab().id(w).is_some(), "{w}");
    }
    for w in ["the", "of", "we"] {
        assert!(c.vocab().id(w).is_none(), "{w}");
    }
    let frac = c.heldout().len() as f64 / 2000.0;
    assert!((0.08..0.12).contains(&frac), "{frac}");
    // Same input and options: the same file.
    let out2 = dir.path().join("b.tcorp");
    let r2 = prepare(&path, &out2, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.checksum, r2.checksum);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&out2).unwrap());
}
