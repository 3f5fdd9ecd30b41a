//! `prepare` end to end on small inputs of every format, written to a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use topos_corpus::split::is_heldout;
use topos_corpus::{
    prepare, Corpus, InputFormat, Pass, PrepareOptions, PrepareReport, PruneOptions,
    TokenizerOptions,
};

const DOCS: &[&str] = &[
    "The cat sat on the mat with another cat.",
    "Dogs and cats: a 2024 study of 3 dogs, 1,000 cats.",
    "",
    "the and of", // only stop words: empty after tokenizing
    "Zebras graze; zebras roam. Cats watch zebras.",
    "Über-cool café owners' coffee — café au lait!",
];

/// Keeps every word so that the expected corpus is easy to write down.
fn keep_all() -> PrepareOptions {
    PrepareOptions {
        prune: PruneOptions {
            min_df: 1,
            max_df: 1.0,
            max_vocab: None,
        },
        ..Default::default()
    }
}

fn run(input: &Path, out: &Path, opts: &PrepareOptions) -> PrepareReport {
    prepare(input, out, opts, &mut |_| {}).unwrap()
}

fn write_lines(path: &Path, docs: &[&str]) {
    std::fs::write(path, docs.join("\n") + "\n").unwrap();
}

fn gzip(path: &Path, bytes: &[u8]) {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    std::fs::write(path, enc.finish().unwrap()).unwrap();
}

fn doc_words(c: &Corpus, heldout: bool, d: usize) -> Vec<&str> {
    let part = if heldout { c.heldout() } else { c.train() };
    part.doc(d).iter().map(|&w| c.vocab().word(w)).collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn lines_corpus_contents_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    write_lines(&input, DOCS);
    let out = dir.path().join("docs.tcorp");
    let rep = run(&input, &out, &keep_all());
    let c = Corpus::open(&out).unwrap();

    // Descending corpus frequency, ties by word ("cat" and "cats" differ without stemming).
    let words = c.vocab().words();
    let wf = c.word_frequencies();
    assert!(wf.windows(2).all(|w| w[0] >= w[1]), "descending: {wf:?}");
    for i in 1..words.len() {
        if wf[i - 1] == wf[i] {
            assert!(words[i - 1] < words[i], "ties by word: {words:?}");
        }
    }
    assert_eq!(&words[..4], ["cats", "zebras", "café", "cat"]); // "caf" < "cat"
    assert_eq!(&wf[..4], [3, 3, 2, 2]);
    assert_eq!(c.document_frequencies()[0], 2);

    // Documents 2 (blank) and 3 (stop words only) are dropped; the others keep their line index.
    assert_eq!(c.train_ids(), [0, 1, 4, 5]);
    assert!(c.heldout().is_empty());
    assert_eq!(doc_words(&c, false, 0), ["cat", "sat", "mat", "cat"]);
    assert_eq!(
        doc_words(&c, false, 1),
        ["dogs", "cats", "study", "dogs", "cats"]
    );
    assert_eq!(
        doc_words(&c, false, 3),
        ["über", "cool", "café", "owners", "coffee", "café", "lait"]
    );

    assert_eq!(rep.format, InputFormat::Lines);
    assert_eq!(rep.input_documents, 6);
    assert_eq!(rep.documents_kept, 4);
    assert_eq!(rep.documents_dropped_empty, 2);
    assert_eq!((rep.train_documents, rep.heldout_documents), (4, 0));
    assert_eq!(rep.tokens_dropped_numbers, 3);
    assert_eq!(rep.tokens_dropped_short, 1); // "au"
    assert_eq!(rep.tokens_dropped_pruned, 0);
    assert_eq!(rep.tokens_kept, c.train().num_tokens());
    assert_eq!(
        rep.input_words,
        rep.tokens_kept
            + rep.tokens_dropped_stopwords
            + rep.tokens_dropped_short
            + rep.tokens_dropped_numbers
            + rep.tokens_dropped_pruned
    );
    assert_eq!(rep.vocab_before_pruning, rep.vocab_after_pruning);
    assert_eq!(rep.vocab_after_pruning, c.vocab().len() as u64);
    assert_eq!(rep.checksum, format!("{:016x}", c.checksum()));
    assert_eq!(rep.input_bytes, std::fs::metadata(&input).unwrap().len());
    let json = serde_json::to_string(&rep).unwrap();
    assert!(json.contains("\"format\":\"lines\""), "{json}");
}

#[test]
fn every_text_format_gives_the_same_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let opts = keep_all();

    let lines = d.join("docs.txt");
    write_lines(&lines, DOCS);
    let gz = d.join("docs.txt.gz");
    gzip(&gz, (DOCS.join("\n") + "\n").as_bytes());
    let jsonl = d.join("docs.jsonl.gz");
    let body: String = DOCS
        .iter()
        .map(|t| {
            serde_json::json!({"id": 7, "body": t, "extra": [1, {"a": null}]}).to_string() + "\n"
        })
        .collect();
    gzip(&jsonl, body.as_bytes());
    let txt = d.join("txt");
    for (i, t) in DOCS.iter().enumerate() {
        // Nested folders; sorted path order is document order.
        let sub = txt.join(format!("part{}", i / 3));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("doc{i:02}.txt")), t).unwrap();
    }

    let sums: Vec<(InputFormat, String)> = [
        (&lines, &opts),
        (&gz, &opts),
        (
            &jsonl,
            &PrepareOptions {
                text_field: "body".into(),
                ..opts.clone()
            },
        ),
        (&txt, &opts),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (input, o))| {
        let r = run(input, &d.join(format!("{i}.tcorp")), o);
        (r.format, r.checksum)
    })
    .collect();
    assert_eq!(
        sums.iter().map(|s| s.0).collect::<Vec<_>>(),
        [
            InputFormat::Lines,
            InputFormat::Lines,
            InputFormat::Jsonl,
            InputFormat::Dir
        ]
    );
    assert!(sums.iter().all(|s| s.1 == sums[0].1), "{sums:?}");
    let a = std::fs::read(d.join("0.tcorp")).unwrap();
    assert_eq!(a, std::fs::read(d.join("3.tcorp")).unwrap());
}

#[test]
fn uci_and_ldac_give_the_same_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 4 documents over 5 words; document 3 (1-based) is empty; "the" is a stop word.
    std::fs::write(d.join("vocab.t.txt"), "apple\nthe\ncherry\ndate\nelder\n").unwrap();
    gzip(
        &d.join("docword.t.txt.gz"),
        b"4\n5\n7\n1 1 2\n1 2 5\n1 3 1\n2 3 4\n2 4 1\n4 1 1\n4 5 3\n",
    );
    std::fs::write(d.join("t.tokens"), "apple\nthe\ncherry\ndate\nelder\n").unwrap();
    std::fs::write(d.join("t.ldac"), "3 0:2 1:5 2:1\n2 2:4 3:1\n0\n2 0:1 4:3\n").unwrap();
    let opts = keep_all();

    let uci = run(d, &d.join("u.tcorp"), &opts); // the directory is detected as UCI
    let ldac = run(&d.join("t.ldac"), &d.join("l.tcorp"), &opts);
    assert_eq!(
        (uci.format, ldac.format),
        (InputFormat::Uci, InputFormat::Ldac)
    );
    assert_eq!(uci.checksum, ldac.checksum);

    let c = Corpus::open(&d.join("u.tcorp")).unwrap();
    assert_eq!(c.vocab().words(), ["cherry", "apple", "elder", "date"]);
    assert_eq!(c.word_frequencies(), [5, 3, 3, 1]);
    assert_eq!(c.document_frequencies(), [2, 2, 1, 1]);
    assert_eq!(c.train_ids(), [0, 1, 3]);
    assert_eq!(doc_words(&c, false, 0), ["apple", "apple", "cherry"]);
    assert_eq!(
        doc_words(&c, false, 2),
        ["apple", "elder", "elder", "elder"]
    );
    assert_eq!(uci.tokens_dropped_stopwords, 5);
    assert_eq!(uci.input_words, 17);
    assert_eq!(uci.documents_dropped_empty, 1);
    assert_eq!(uci.vocab_before_pruning, 4);

    // Without stop words "the" is kept; with pruning, rare words go.
    let no_stop = PrepareOptions {
        tokenizer: TokenizerOptions {
            english_stopwords: false,
            ..Default::default()
        },
        ..opts.clone()
    };
    let r = run(d, &d.join("u2.tcorp"), &no_stop);
    let c2 = Corpus::open(&d.join("u2.tcorp")).unwrap();
    // "the" ties with "cherry" at 5 occurrences and comes second.
    assert_eq!(&c2.vocab().words()[..2], ["cherry", "the"]);
    assert_eq!(r.tokens_kept, 17);
    let pruned = PrepareOptions {
        prune: PruneOptions {
            min_df: 2,
            ..opts.prune.clone()
        },
        ..opts
    };
    let r = run(d, &d.join("u3.tcorp"), &pruned);
    assert_eq!(r.words_dropped_min_df, 2);
    assert_eq!(r.tokens_dropped_pruned, 4);
    assert_eq!(
        Corpus::open(&d.join("u3.tcorp")).unwrap().vocab().words(),
        ["cherry", "apple"]
    );
}

#[test]
fn pruning_options_apply() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    // "common" is in every document, "rare" in one, "mid" in three of six.
    let docs: Vec<String> = (0..6)
        .map(|i| {
            let mut s = String::from("common common");
            if i < 3 {
                s += " mid";
            }
            if i == 0 {
                s += " rare rare rare rare";
            }
            s += &format!(" filler{}", i % 2);
            s
        })
        .collect();
    write_lines(&input, &docs.iter().map(String::as_str).collect::<Vec<_>>());
    let out = dir.path().join("o.tcorp");
    let rep = run(
        &input,
        &out,
        &PrepareOptions {
            prune: PruneOptions {
                min_df: 2,
                max_df: 0.5,
                max_vocab: Some(2),
            },
            ..Default::default()
        },
    );
    let c = Corpus::open(&out).unwrap();
    // common: df 6 > 3 → max_df; rare: df 1 → min_df; filler0/filler1: df 3 each, cf 3;
    // mid: df 3 cf 3; cap 2 keeps the first two by (cf desc, word).
    assert_eq!(c.vocab().words(), ["filler0", "filler1"]);
    assert_eq!(
        (
            rep.words_dropped_max_df,
            rep.words_dropped_min_df,
            rep.words_dropped_max_vocab
        ),
        (1, 1, 1)
    );
    assert_eq!(rep.tokens_dropped_pruned, 12 + 4 + 3);
    assert_eq!(rep.vocab_before_pruning, 5);
}

#[test]
fn stemming_merges_inflections() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    write_lines(&input, &["models modeling modeled", "running runner runs"]);
    let out = dir.path().join("o.tcorp");
    let mut opts = keep_all();
    opts.tokenizer.stem = true;
    run(&input, &out, &opts);
    let c = Corpus::open(&out).unwrap();
    assert_eq!(c.vocab().words(), ["model", "run", "runner"]);
    assert_eq!(c.word_frequencies(), [3, 2, 1]);
}

fn numbered_docs(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("word{} shared topic{} extra{}", i % 7, i % 3, i % 11))
        .collect()
}

#[test]
fn split_is_deterministic_and_follows_the_input_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    let docs = numbered_docs(2000);
    write_lines(&input, &docs.iter().map(String::as_str).collect::<Vec<_>>());
    let opts = PrepareOptions {
        holdout: 0.25,
        seed: 11,
        ..keep_all()
    };
    let a = run(&input, &dir.path().join("a.tcorp"), &opts);
    // Tiny batches (one document each) and the same seed: the same bytes.
    let b = run(
        &input,
        &dir.path().join("b.tcorp"),
        &PrepareOptions {
            batch_bytes: 1,
            ..opts.clone()
        },
    );
    assert_eq!(a.checksum, b.checksum);
    assert_eq!(
        std::fs::read(dir.path().join("a.tcorp")).unwrap(),
        std::fs::read(dir.path().join("b.tcorp")).unwrap()
    );
    let c = Corpus::open(&dir.path().join("a.tcorp")).unwrap();
    let held: Vec<u64> = (0..2000).filter(|&i| is_heldout(11, i, 0.25)).collect();
    assert_eq!(c.heldout_ids(), held.as_slice());
    let frac = c.heldout().len() as f64 / 2000.0;
    assert!((frac - 0.25).abs() < 0.04, "{frac}");
    assert_eq!(
        c.train().len() + c.heldout().len(),
        2000,
        "no document is lost or duplicated"
    );
    // The documents are the right ones: document i mentions word{i % 7}.
    for (d, &i) in c.heldout_ids().iter().enumerate() {
        let words: Vec<&str> = doc_words(&c, true, d);
        assert!(words.contains(&format!("word{}", i % 7).as_str()));
    }
    // Another seed, another split.
    let other = run(
        &input,
        &dir.path().join("c.tcorp"),
        &PrepareOptions { seed: 12, ..opts },
    );
    assert_ne!(a.checksum, other.checksum);
}

#[test]
fn progress_reports_both_passes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.txt");
    let docs = numbered_docs(5000);
    write_lines(&input, &docs.iter().map(String::as_str).collect::<Vec<_>>());
    let mut seen = vec![];
    let opts = PrepareOptions {
        batch_bytes: 10_000,
        ..keep_all()
    };
    prepare(&input, &dir.path().join("o.tcorp"), &opts, &mut |p| {
        seen.push(p)
    })
    .unwrap();
    let total = std::fs::metadata(&input).unwrap().len();
    for pass in [Pass::Count, Pass::Write] {
        let ps: Vec<_> = seen.iter().filter(|p| p.pass == pass).collect();
        assert!(ps.len() > 5, "{pass:?}: {}", ps.len());
        assert!(ps.windows(2).all(|w| w[0].bytes_read <= w[1].bytes_read));
        let last = ps.last().unwrap();
        assert_eq!(
            (last.bytes_read, last.bytes_total, last.documents),
            (total, total, 5000)
        );
    }
    assert_eq!(seen[0].pass, Pass::Count);
    assert_eq!(seen.last().unwrap().pass, Pass::Write);
}

/// Runs `prepare` expecting an error, and checks that no file was left in `dir`.
fn fails(dir: &Path, input: &Path, opts: &PrepareOptions) -> String {
    let before = files_in(dir);
    let out = dir.join("out.tcorp");
    let e = prepare(input, &out, opts, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert_eq!(files_in(dir), before, "no output or temporary left behind");
    e
}

#[test]
fn errors_are_clear_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = |n: &str| -> PathBuf { d.join(n) };

    std::fs::write(p("empty.txt"), "").unwrap();
    let e = fails(d, &p("empty.txt"), &keep_all());
    assert!(
        e.contains("empty.txt") && e.contains("has no documents"),
        "{e}"
    );

    write_lines(&p("stop.txt"), &["the and of", "a 12 an"]);
    let e = fails(d, &p("stop.txt"), &keep_all());
    assert!(
        e.contains("empty after tokenizing") && e.contains("2 documents"),
        "{e}"
    );

    write_lines(&p("few.txt"), &["alpha beta", "gamma delta"]);
    let e = fails(d, &p("few.txt"), &PrepareOptions::default());
    assert!(
        e.contains("no word survives") && e.contains("--min-df"),
        "{e}"
    );

    let e = fails(d, &p("missing.txt"), &keep_all());
    assert!(e.contains("missing.txt"), "{e}");

    std::fs::write(
        p("bad.jsonl"),
        "{\"text\": \"fine words here\"}\n{\"txt\": \"x\"}\n",
    )
    .unwrap();
    let e = fails(d, &p("bad.jsonl"), &keep_all());
    assert!(
        e.contains("bad.jsonl: line 2") && e.contains("--text-field"),
        "{e}"
    );

    std::fs::write(
        p("bad.txt.gz"),
        b"\x1f\x8b\x08\x00garbage that is not deflate",
    )
    .unwrap();
    let e = fails(d, &p("bad.txt.gz"), &keep_all());
    assert!(e.contains("gzip"), "{e}");

    let e = fails(
        d,
        &p("few.txt"),
        &PrepareOptions {
            holdout: 1.0,
            ..keep_all()
        },
    );
    assert!(e.contains("holdout"), "{e}");

    // Everything held out: nothing to train on.
    write_lines(&p("one.txt"), &["lonely document words"]);
    let seed = (0..).find(|&s| is_heldout(s, 0, 0.9)).unwrap();
    let e = fails(
        d,
        &p("one.txt"),
        &PrepareOptions {
            holdout: 0.9,
            seed,
            ..keep_all()
        },
    );
    assert!(e.contains("held out"), "{e}");

    // The output may not be the input.
    let e = prepare(&p("few.txt"), &p("few.txt"), &keep_all(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("is an input file"), "{e}");
    assert_eq!(
        std::fs::read_to_string(p("few.txt")).unwrap(),
        "alpha beta\ngamma delta\n"
    );

    // An existing output survives a failed preparation untouched.
    std::fs::write(p("out.tcorp"), "previous").unwrap();
    fails(d, &p("stop.txt"), &keep_all());
    assert_eq!(std::fs::read(p("out.tcorp")).unwrap(), b"previous");
}

#[test]
fn explicit_format_overrides_detection() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.csv");
    std::fs::write(&input, "{\"text\": \"hello world topic\"}\n").unwrap();
    let out = dir.path().join("o.tcorp");
    let r = run(
        &input,
        &out,
        &PrepareOptions {
            format: Some(InputFormat::Jsonl),
            ..keep_all()
        },
    );
    assert_eq!(r.format, InputFormat::Jsonl);
    assert_eq!(
        Corpus::open(&out).unwrap().vocab().words(),
        ["hello", "topic", "world"]
    );
}

/// Issue 18, row 5: a 45-byte UCI file whose one count is 4,000,000,000 took all the machine's
/// memory (16 GB for the corpus, 16 GB more for the document). With a memory ceiling it is
/// refused after pass 1, at once, with the numbers; and a document's counts are written
/// straight into the corpus, never expanded into a copy.
#[test]
fn huge_counts_are_refused_within_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let docword = dir.path().join("docword.big.txt");
    std::fs::write(&docword, "2\n2\n2\n1 1 4000000000\n2 2 3\n").unwrap();
    std::fs::write(dir.path().join("vocab.big.txt"), "alpha\nbeta\n").unwrap();
    let out = dir.path().join("big.tcorp");
    let opts = PrepareOptions {
        memory_limit: Some(1 << 30),
        ..keep_all()
    };
    let t = std::time::Instant::now();
    let e = prepare(&docword, &out, &opts, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        e.contains("4000000003 tokens in 2 documents")
            && e.contains("14.90 GiB")
            && e.contains("only 1.00 GiB is available")
            && e.contains("document 0 alone has 4000000000 tokens"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    assert!(!out.exists());
    // Large but fitting counts are written as runs, held-out documents included.
    std::fs::write(&docword, "2\n2\n2\n1 1 100000\n2 2 3\n").unwrap();
    // A seed that holds out the large document and trains on the other.
    let seed = (0..)
        .find(|&s| is_heldout(s, 0, 0.5) && !is_heldout(s, 1, 0.5))
        .unwrap();
    let opts = PrepareOptions {
        holdout: 0.5,
        seed,
        ..opts
    };
    let r = prepare(&docword, &out, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.tokens_kept, 100_003);
    let c = Corpus::open(&out).unwrap();
    let all: u64 = c.word_frequencies().iter().sum();
    assert_eq!(all, 100_003);
    assert_eq!(c.heldout().num_tokens(), 100_000);
    assert_eq!(c.train().doc(0), [c.vocab().id("beta").unwrap(); 3]);
}
