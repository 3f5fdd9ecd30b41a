//! End-to-end tests of issue 18 (defects found by trying Topos as a new user would): each test
//! reproduces one row of the table through the binary.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// A small corpus of three themes, one document per line, whose words need stemming to match
/// inflected forms ("rivers", "fishing", ...).
fn write_text_corpus(dir: &Path) -> PathBuf {
    let themes = [
        "river rivers water fishing fished boat boats lake lakes stream flooding rain",
        "stock stocks market markets price pricing trading traded bank banking money",
        "game games team teams player players scoring match season coaching league",
    ];
    write_themes(dir, "docs", &themes, 300, 20, 0)
}

/// Prepares (with `extra` options) and trains a 3-topic model for a few iterations; returns
/// (corpus, model).
fn corpus_and_model(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let corpus = prepare_text(&write_text_corpus(dir), &dir.join("c.tcorp"), "0.2", extra);
    let model = dir.join("c.tmod");
    train_quick(
        &corpus,
        &model,
        "3",
        "20",
        &["--alpha", "0.1", "--doc-topics"],
    );
    (corpus, model)
}

/// Row 13: `--quiet` drops progress and status lines, never results.
#[test]
fn quiet_keeps_every_commands_results() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, model) = corpus_and_model(dir.path(), &[]);
    let topics = topos(&["topics", s(&model), "--quiet"]);
    let out = String::from_utf8(topics.stdout).unwrap();
    assert!(out.contains("topic 0") && out.contains("topic 2"), "{out}");
    assert!(topics.stderr.is_empty());
    let eval = ok(&["eval", s(&model), "-q"]);
    assert!(eval.contains("held-out log-likelihood per token"), "{eval}");
    let prep = ok(&[
        "prepare",
        s(&write_text_corpus(dir.path())),
        "-o",
        s(&dir.path().join("d.tcorp")),
        "--quiet",
    ]);
    assert!(prep.contains("documents: 300 read"), "{prep}");
    // knn's status line goes, its neighbours stay.
    let knn = topos(&["knn", s(&corpus), "-k", "2", "--quiet"]);
    assert!(knn.status.success());
    assert!(
        knn.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&knn.stderr)
    );
    assert!(String::from_utf8(knn.stdout).unwrap().lines().count() > 200);
    let demo = topos(&["demo", "--iters", "5", "-k", "4", "--quiet"]);
    assert!(demo.status.success());
    let out = String::from_utf8(demo.stdout).unwrap();
    assert!(out.contains("topic 3"), "{out}");
}

/// Row 9: `--json` on `knn` and `similar` is one JSON document (results included unless they
/// go to a file); `--format jsonl` stays the streaming format.
#[test]
fn json_is_one_document_for_knn_and_similar() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, model) = corpus_and_model(dir.path(), &[]);
    let v = json(&["knn", s(&corpus), "-k", "3"]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len() as u64, v["queries"].as_u64().unwrap());
    assert_eq!(results[0]["neighbors"].as_array().unwrap().len(), 3);
    assert_eq!(v["metric"], "cosine");
    assert_eq!(v["score"], "distance");
    assert_eq!(v["queries_without_known_words"], 0);
    // With -o the file holds the format asked for and stdout the summary document.
    let out = dir.path().join("nn.jsonl");
    let v = json(&["knn", s(&corpus), "-k", "3", "-o", s(&out)]);
    assert!(v.get("results").is_none());
    let lines = std::fs::read_to_string(&out).unwrap();
    assert_eq!(lines.lines().count() as u64, v["queries"].as_u64().unwrap());
    fails(
        &["knn", s(&corpus), "--format", "csv", "--json"],
        "write the CSV to a file with -o",
    );
    let v = json(&["similar", s(&model), "--doc", "3", "-k", "4"]);
    assert_eq!(v["results"][0]["query"], 3);
    assert_eq!(v["results"][0]["neighbors"].as_array().unwrap().len(), 4);
    // Without --json, JSON Lines as before.
    let text = ok(&[
        "similar",
        s(&model),
        "--doc",
        "3",
        "--doc",
        "4",
        "-k",
        "2",
        "-q",
    ]);
    assert_eq!(text.lines().count(), 2);
}

/// Row 10: KL divergence on bag-of-words rows is refused (it is infinite for nearly every
/// pair); queries with no known word get no neighbours and are counted; dot-product's score is
/// called a similarity.
#[test]
fn knn_metrics_that_cannot_rank_are_refused_or_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = corpus_and_model(dir.path(), &[]);
    let c = s(&corpus);
    fails(
        &["knn", c, "--metric", "kl-divergence"],
        "use jensen-shannon or hellinger",
    );
    // A query corpus half of whose documents share no word with the index.
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(if i % 2 == 0 {
            "zebra yak walrus zebra yak walrus okapi\n"
        } else {
            "river water fishing boat lake zebra\n"
        });
    }
    let qtxt = dir.path().join("q.txt");
    std::fs::write(&qtxt, text).unwrap();
    let q = dir.path().join("q.tcorp");
    ok(&[
        "prepare",
        s(&qtxt),
        "-o",
        s(&q),
        "--min-df",
        "1",
        "--max-df",
        "1.0",
        "-q",
    ]);
    for metric in ["cosine", "jensen-shannon", "euclidean"] {
        let out = topos(&[
            "knn",
            c,
            "--queries",
            s(&q),
            "-k",
            "3",
            "--metric",
            metric,
            "--json",
        ]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["queries_without_known_words"], 20, "{metric}");
        for r in v["results"].as_array().unwrap() {
            let n = r["neighbors"].as_array().unwrap();
            let even = r["query"].as_u64().unwrap() % 2 == 0;
            assert_eq!(n.len(), if even { 0 } else { 3 }, "{metric}: {r}");
            assert!(n
                .iter()
                .all(|x| x["distance"].as_f64().unwrap().is_finite()));
        }
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("20 of 40 queries have no word known"), "{err}");
    }
    let v = json(&["knn", c, "-k", "2", "--metric", "dot-product"]);
    assert_eq!(v["score"], "similarity");
    let n = &v["results"][0]["neighbors"];
    assert!(n[0]["similarity"].as_f64().unwrap() >= n[1]["similarity"].as_f64().unwrap());
    assert!(n[0].get("distance").is_none());
    let csv = ok(&[
        "knn", c, "-k", "2", "--metric", "dot", "--format", "csv", "-q",
    ]);
    assert!(csv.starts_with("query,rank,neighbor,similarity\n"), "{csv}");
}

/// Row 15: `--metric minkowski` without `--p` says what to add, in the docs' syntax.
#[test]
fn minkowski_without_p_names_the_option_to_add() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = corpus_and_model(dir.path(), &[]);
    let out = fails(
        &["knn", s(&corpus), "--metric", "minkowski"],
        "--metric minkowski needs its exponent: add --p P",
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("unknown metric"), "{err}");
    ok(&["knn", s(&corpus), "--metric", "minkowski", "--p", "3", "-q"]);
}

/// Row 14: `infer` and `similar --text` on a model whose corpus was prepared with `--stem` cut
/// new text as prepare did (stemmed), from the options the corpus records.
#[test]
fn infer_and_similar_tokenize_new_text_as_prepare_did() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, model) = corpus_and_model(dir.path(), &["--stem", "--min-df", "1"]);
    let v = json(&["topics", s(&model), "--top", "30"]);
    let vocab: Vec<String> = v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["top_words"].as_array().unwrap().clone())
        .map(|w| w["word"].as_str().unwrap().to_string())
        .collect();
    assert!(vocab.iter().any(|w| w == "fish") && !vocab.iter().any(|w| w == "fishing"));
    // Every word needs stemming to be known: "fishing" → "fish", "rivers" → "river", ...
    let text = dir.path().join("new.txt");
    std::fs::write(&text, "fishing rivers boats lakes flooding\n").unwrap();
    let out = topos(&["infer", s(&model), s(&text), "--format", "jsonl"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 tokens known to the model, 0 unknown"),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["tokens"], 5);
    let v = json(&[
        "similar",
        s(&model),
        "--text",
        "fishing rivers boats",
        "-k",
        "3",
    ]);
    assert_eq!(v["queries_without_known_words"], 0);
    assert_eq!(v["results"][0]["neighbors"].as_array().unwrap().len(), 3);
    // --stem against a corpus that records no stemming is refused; with --stem on the stemmed
    // corpus it is just redundant.
    ok(&["infer", s(&model), s(&text), "--stem", "-q"]);
    let plain_dir = dir.path().join("plain");
    std::fs::create_dir(&plain_dir).unwrap();
    let (_, plain) = corpus_and_model(&plain_dir, &[]);
    fails(
        &["infer", s(&plain), s(&text), "--stem"],
        "prepared without --stem",
    );
    // Without a corpus beside it, the model (file version 3) carries the options itself: the
    // words are still stemmed, with no warning.
    let moved = dir.path().join("elsewhere.tmod");
    std::fs::copy(&model, &moved).unwrap();
    let out = topos(&["infer", s(&moved), s(&text), "-q"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["tokens"], 5);
    // A model that records none (written before version 3) and no corpus: prepare's defaults,
    // said once on stderr.
    let mut old = topos_model::TopicModel::read(&moved).unwrap();
    old.tokenizer = None;
    old.write(&moved).unwrap();
    let out = topos(&["infer", s(&moved), s(&text), "-q"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning").count(), 2, "{err}");
    assert!(err.contains("tokenizer options are unknown"), "{err}");
    // ... and --corpus names it.
    let out = topos(&["infer", s(&moved), s(&text), "--corpus", s(&corpus), "-q"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Row 15: a document with no known word gets no mixture in every format (it used to get a
/// uniform one in CSV and none in JSONL).
#[test]
fn infer_formats_agree_on_documents_without_known_words() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = corpus_and_model(dir.path(), &[]);
    let text = dir.path().join("new.txt");
    std::fs::write(&text, "river water boat\nzebra quokka\n").unwrap();
    let jsonl = ok(&["infer", s(&model), s(&text), "-q"]);
    let rows: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[1]["tokens"], 0);
    assert_eq!(rows[1]["topics"].as_array().unwrap().len(), 0);
    let csv = ok(&["infer", s(&model), s(&text), "--format", "csv", "-q"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[2], "1,0,,,");
    assert!(lines[1].starts_with("0,3,0."), "{csv}");
    let top = ok(&["infer", s(&model), s(&text), "--format", "top", "-q"]);
    assert_eq!(top.lines().nth(1), Some("1\t"));
    let out = topos(&["infer", s(&model), s(&text), "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 of 2 documents have no word known"), "{err}");
}

/// Row 6: Latin-1 input is refused by default with the file, line and what to do, read
/// correctly with `--encoding latin1`, and replaced *and counted* with `--encoding utf-8-lossy`.
#[test]
fn invalid_utf8_input_is_refused_decoded_or_counted() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("latin1.txt");
    let mut bytes = Vec::new();
    for i in 0..40 {
        bytes.extend_from_slice(if i % 2 == 0 {
            b"caf\xe9 na\xefve cr\xe8me br\xfbl\xe9e dessert\n"
        } else {
            b"caf\xe9 cr\xe8me menu dessert table\n"
        });
    }
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.path().join("c.tcorp");
    let args = |enc: &'static str| {
        vec![
            "prepare".to_string(),
            s(&input).to_string(),
            "-o".into(),
            s(&out).to_string(),
            "--min-df".into(),
            "1".into(),
            "--max-df".into(),
            "1.0".into(),
            "--encoding".into(),
            enc.into(),
        ]
    };
    let strict: Vec<String> = args("utf-8");
    let strict: Vec<&str> = strict.iter().map(String::as_str).collect();
    fails(
        &strict[..strict.len() - 2],
        "latin1.txt: line 1: invalid UTF-8 at byte 4 (0xe9)",
    );
    fails(&strict, "--encoding latin1");
    assert!(!out.exists());
    let latin1: Vec<String> = args("latin1");
    let latin1: Vec<&str> = latin1.iter().map(String::as_str).collect();
    let v = json(&latin1);
    assert_eq!(v["encoding"], "latin1");
    assert_eq!(v["invalid_bytes_replaced"], 0);
    let export = dir.path().join("export");
    ok(&["export", s(&out), "-o", s(&export), "-q"]);
    let vocab = std::fs::read_to_string(export.join("vocab.txt")).unwrap();
    for w in ["café", "naïve", "crème", "brûlée"] {
        assert!(vocab.lines().any(|l| l == w), "{w} missing from {vocab}");
    }
    let lossy: Vec<String> = args("utf-8-lossy");
    let lossy: Vec<&str> = lossy.iter().map(String::as_str).collect();
    let v = json(&lossy);
    assert_eq!(v["encoding"], "utf-8-lossy");
    assert_eq!(v["invalid_bytes_replaced"], 20 * 5 + 20 * 2);
    assert_eq!(v["documents_with_invalid_bytes"], 40);
    let human = ok(&lossy);
    assert!(
        human.contains("140 invalid bytes replaced by U+FFFD in 40 documents"),
        "{human}"
    );
}

/// A fifth attack, rows 2 and 3: a UTF-8 byte-order mark starting a stop-word, vocabulary or
/// JSONL file is dropped (it was glued to the first stop word, which never matched, and broke
/// the first JSON object); a UTF-16 file is named as such with the iconv command that converts
/// it, also under `--encoding latin1` (which used to give a vocabulary of single letters).
#[test]
fn byte_order_marks_are_dropped_and_utf16_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "alpha beta gamma\nalpha delta gamma\nbeta delta epsilon\n";
    let input = d.join("t.txt");
    std::fs::write(&input, text).unwrap();
    let stop = d.join("sw.txt");
    std::fs::write(&stop, "\u{feff}alpha\n").unwrap();
    let out = d.join("t.tcorp");
    let base = ["--min-df", "1", "--max-df", "1.0", "--holdout", "0"];
    let mut args = vec!["prepare", s(&input), "-o", s(&out), "--stopwords", s(&stop)];
    args.extend(base);
    let v = json(&args);
    assert_eq!(
        v["tokenizer"]["extra_stopwords"],
        serde_json::json!(["alpha"]),
        "{v}"
    );
    assert_eq!(v["tokens_dropped_stopwords"], 2, "{v}");
    // JSONL whose first line starts with the mark.
    let jsonl = d.join("t.jsonl");
    std::fs::write(
        &jsonl,
        "\u{feff}{\"text\": \"alpha beta\"}\n{\"text\": \"gamma beta\"}\n",
    )
    .unwrap();
    let mut args = vec!["prepare", s(&jsonl), "-o", s(&out)];
    args.extend(base);
    assert_eq!(json(&args)["documents_kept"], 2);
    // A vocabulary file of bag-of-words input.
    let ldac = d.join("c.ldac");
    std::fs::write(&ldac, "2 0:2 1:1\n1 1:3\n").unwrap();
    let vocab = d.join("v.txt");
    std::fs::write(&vocab, "\u{feff}alpha\nbeta\n").unwrap();
    let mut args = vec!["prepare", s(&ldac), "--vocab", s(&vocab), "-o", s(&out)];
    args.extend(base);
    ok(&args);
    let mut words = topos_corpus::Corpus::open(&out)
        .unwrap()
        .vocab()
        .words()
        .to_vec();
    words.sort();
    assert_eq!(words, ["alpha", "beta"]);
    // UTF-16, with its mark: iconv, under every encoding; without one, the zeros tell.
    let u16 = d.join("u16.txt");
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    std::fs::write(&u16, &bytes).unwrap();
    let u16_out = d.join("u.tcorp");
    let convert = format!("iconv -f UTF-16 -t UTF-8 {0} > {0}.utf8", s(&u16));
    for encoding in [None, Some("latin1"), Some("windows-1252")] {
        let mut args = vec!["prepare", s(&u16), "-o", s(&u16_out)];
        args.extend(encoding.iter().flat_map(|e| ["--encoding", e]));
        let out = fails(&args, &convert);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is UTF-16") && !err.contains("--encoding latin1"),
            "{err}"
        );
    }
    std::fs::write(&u16, &bytes[2..]).unwrap();
    fails(
        &["prepare", s(&u16), "-o", s(&u16_out)],
        "iconv -f UTF-16LE",
    );
    assert!(!u16_out.exists());
}

/// Row 5: a tiny UCI file whose counts claim terabytes of tokens is refused at once, with the
/// numbers, by the memory check after pass 1 (it used to be OOM-killed after taking all memory).
#[test]
fn prepare_refuses_counts_that_cannot_fit_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let docword = dir.path().join("docword.huge.txt");
    let mut text = String::from("400\n2\n400\n");
    for d in 1..=400 {
        text.push_str(&format!("{d} 1 4000000000\n"));
    }
    std::fs::write(&docword, text).unwrap();
    std::fs::write(dir.path().join("vocab.huge.txt"), "alpha\nbeta\n").unwrap();
    let out = dir.path().join("huge.tcorp");
    let t = std::time::Instant::now();
    fails(
        &["prepare", s(&docword), "-o", s(&out), "--max-df", "1.0"],
        "the corpus would hold 1600000000000 tokens in 400 documents",
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    assert!(!out.exists());
}

/// Row 15: an OS error appears once in the one-line message (it used to be printed twice:
/// once in the library's message and again as its `source()` in the chain).
#[test]
fn os_errors_are_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let m = s(&missing);
    for args in [
        vec!["prepare", m, "-o", "x.tcorp"],
        vec!["topics", m],
        vec!["eval", m],
        vec!["knn", m],
        vec!["privacy", "ledger", m],
        vec!["infer", m, m],
    ] {
        let out = fails(&args, "No such file or directory");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    }
}

/// Topos's own binary files given where text is read are named as such (not decoded as text and
/// refused with advice about encodings), and a benchmark switch with a typo is refused rather
/// than ignored.
#[test]
fn binary_inputs_and_mistyped_switches_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, model) = corpus_and_model(dir.path(), &[]);
    fails(
        &["infer", s(&model), s(&corpus), "--corpus", s(&corpus)],
        "is a Topos corpus file, already prepared, not text",
    );
    fails(
        &["infer", s(&model), s(&model), "--corpus", s(&corpus)],
        "is a Topos model file, not text",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_topos"))
        .args(["train", s(&corpus), "-k", "3", "--iters", "2", "-q"])
        .arg("-o")
        .arg(dir.path().join("x.tmod"))
        .env("TOPOS_EXCHANGE", "spares")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TOPOS_EXCHANGE=\"spares\""), "{err}");
    assert!(!dir.path().join("x.tmod").exists());
}

/// A second new user's attack (2026-11-27): outputs that name the command's own inputs or each
/// other, a thread count no machine can run, generator settings that never finish, a plan for
/// a run `train` would refuse, and usage errors: each refused in one line before any work,
/// leaving every file as it was.
#[test]
fn outputs_over_inputs_and_impossible_settings_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (corpus, model) = corpus_and_model(d, &[]);
    let c = s(&corpus);
    let corpus_bytes = std::fs::read(&corpus).unwrap();
    let model_bytes = std::fs::read(&model).unwrap();
    let train = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["train", c, "-k", "3", "--iters", "2"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let fails_train = |extra: &[&str], needle: &str| {
        let a = train(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&a, needle);
    };
    let m = s(&model);
    let side = format!("{m}.doctopics");
    // The checkpoint is removed once the outputs are in place: at the model's path it would
    // delete the model.
    fails_train(
        &["-o", m, "--checkpoint-every", "1", "--checkpoint", m],
        "the checkpoint (--checkpoint) and the model (-o) are the same file",
    );
    fails_train(
        &[
            "-o",
            m,
            "--doc-topics",
            "--checkpoint-every",
            "1",
            "--checkpoint",
            &side,
        ],
        "are the same file",
    );
    fails_train(&["-o", c], "would be written over the corpus");
    fails_train(
        &["-o", m, "--log", c],
        "the log (--log) would be written over the corpus",
    );
    fails_train(
        &["-o", m, "--threads", "100000"],
        "the model is the same for any thread count",
    );
    fails(&["infer", m, c, "-o", m], "is the model this command reads");
    fails(&["export", m, "-o", m], "is the input this command reads");
    fails(
        &["report", m, "-o", c, "--corpus", c],
        "is the corpus this command reads",
    );
    // An output whose directory is missing is refused before inference, not after it.
    fails(
        &["infer", m, c, "-o", s(&d.join("missing/mix.jsonl"))],
        "check that the directory exists",
    );
    fails_train(&["-o", m, "--device", "cpu:0"], "the CPU is one device");
    fails(
        &["eval", m, "--top", "100000"],
        "must be between 2 and the model's",
    );
    assert_eq!(std::fs::read(&corpus).unwrap(), corpus_bytes);
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes);

    // synth: non-finite shapes never finish generating; its output is checked first.
    let synth = |extra: &[&str], needle: &str| {
        let mut a = vec![
            "synth",
            "-o",
            "",
            "--docs",
            "10",
            "--vocab",
            "10",
            "--topics",
            "2",
            "--doc-len",
            "5",
        ];
        let out = d.join("z.tcorp");
        a[2] = s(&out);
        a.extend_from_slice(extra);
        fails(&a, needle);
        assert!(!out.exists());
    };
    synth(&["--zipf", "nan"], "--zipf must be a finite number");
    synth(
        &["--concentration", "inf"],
        "--concentration must be a finite positive",
    );
    fails(
        &[
            "synth",
            "-o",
            s(&d.join("big.tcorp")),
            "--docs",
            "10000000000000",
            "--doc-len",
            "1000",
        ],
        "generate fewer or shorter documents",
    );
    fails(
        &[
            "synth",
            "-o",
            s(&d.join("missing/z.tcorp")),
            "--docs",
            "10",
            "--vocab",
            "10",
        ],
        "check that the directory exists",
    );

    // privacy plan: what train would refuse is refused here too.
    fails(
        &[
            "privacy",
            "plan",
            c,
            "-k",
            "3",
            "--epsilon",
            "1",
            "--delta",
            "0.5",
        ],
        "is at least 1/n",
    );
    // An ε too small for the default releases: the smallest that works and what to change.
    fails(
        &["privacy", "plan", c, "-k", "3", "--epsilon", "0.001"],
        "too small for 26 Gaussian releases",
    );

    // Usage errors are one line too, pointing at the subcommand's help.
    let bad = fails(&["train", c, "-k", "-3"], "unexpected argument '-3'");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("see `topos train --help`"),
        "{bad:?}"
    );
    fails(
        &["train", c, "--algo", "mh", "--mh-steps", "0"],
        "--mh-steps must be",
    );
    fails(&["trian"], "unrecognized subcommand");
    fails(
        &["train", c, "--partitions", "0"],
        "--partitions must be a whole number from 1",
    );

    // --json: one document on stdout for the commands that only write files, too.
    let phi = d.join("phi.csv");
    let v = json(&["export", m, "-o", s(&phi), "--what", "phi"]);
    assert_eq!(v["output"], s(&phi), "{v}");
    let page = d.join("r.html");
    let v = json(&["report", m, "-o", s(&page)]);
    assert_eq!(
        (v["format"].as_str(), v["topics"].as_u64()),
        (Some("html"), Some(3)),
        "{v}"
    );
    let text = d.join("text");
    let v = json(&["export", c, "-o", s(&text)]);
    assert_eq!(v["files"].as_array().map(Vec::len), Some(3), "{v}");

    // report --source reads the input as prepare did, gzipped too, and refuses a file that
    // cannot be the corpus's source.
    let input = std::fs::read(d.join("docs.txt")).unwrap();
    let gz = d.join("docs.txt.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &input).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    ok(&[
        "report",
        m,
        "-o",
        s(&page),
        "--corpus",
        c,
        "--source",
        s(&gz),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("river") && !html.contains('\u{fffd}'),
        "the source's lines, decompressed"
    );
    let short = d.join("short.txt");
    std::fs::write(&short, "one line\n").unwrap();
    fails(
        &[
            "report",
            m,
            "-o",
            s(&page),
            "--corpus",
            c,
            "--source",
            s(&short),
        ],
        "give the text file the corpus was prepared from",
    );
}

/// A third attack (RELIABILITY.md): outputs over inputs or special files, a checkpoint a fresh
/// run would have discarded, an update's corpus over another, held-out documents too short to
/// score, `infer --json -o`, priors beyond what the arithmetic holds.
#[test]
fn a_third_attack_loses_nothing_and_says_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (corpus, model) = corpus_and_model(d, &[]);
    let (c, m) = (s(&corpus), s(&model));
    let corpus_bytes = std::fs::read(&corpus).unwrap();
    let model_bytes = std::fs::read(&model).unwrap();
    fails(
        &["knn", c, "-k", "2", "-o", c],
        "is the corpus this command reads",
    );
    fails(
        &["similar", m, "--doc", "1", "-k", "1", "-o", m],
        "is the model this command reads",
    );
    // A directory or a socket (like a device or a pipe) is never renamed over, and is refused
    // before any training.
    fails(
        &["train", c, "-k", "3", "--iters", "2", "-o", s(d)],
        "it is a directory",
    );
    let socket = d.join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    fails(
        &["train", c, "-k", "3", "--iters", "2", "-o", s(&socket)],
        "not a regular file",
    );
    fails(
        &[
            "export",
            m,
            "--what",
            "phi",
            "--format",
            "csv",
            "-o",
            s(&socket),
        ],
        "not a regular file",
    );
    fails(
        &[
            "train",
            c,
            "-k",
            "3",
            "--beta",
            "1e-320",
            "-o",
            s(&d.join("b.tmod")),
        ],
        "beta must be between",
    );
    assert_eq!(std::fs::read(&corpus).unwrap(), corpus_bytes);
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes);

    // A checkpoint left by an unfinished run is not overwritten by a fresh one.
    let r = d.join("r.tmod");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "train",
            c,
            "-k",
            "3",
            "--iters",
            "100000",
            "--checkpoint-every",
            "2",
            "-o",
            s(&r),
            "-q",
        ];
        a.extend_from_slice(extra);
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    let ckpt = d.join("r.tmod.ckpt");
    let args = run(&[]);
    kill_at_first_checkpoint(&args.iter().map(String::as_str).collect::<Vec<_>>(), &ckpt);
    let before = std::fs::read(&ckpt).unwrap();
    let mut fresh = run(&[]);
    fresh[5] = "4".into();
    fails(
        &fresh.iter().map(String::as_str).collect::<Vec<_>>(),
        "holds the checkpoint of an unfinished run (iteration",
    );
    assert_eq!(std::fs::read(&ckpt).unwrap(), before);
    std::fs::remove_file(&ckpt).unwrap();

    // Two runs of one model: the second is refused while the first works (it would have
    // replaced the first's model, and shared its checkpoint).
    let mut first = std::process::Command::new(env!("CARGO_BIN_EXE_topos"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !ckpt.exists() {
        assert!(start.elapsed().as_secs() < 120, "no checkpoint");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let mut second = args.clone();
    second[5] = "4".into();
    second.retain(|a| a != "--checkpoint-every" && a != "2");
    fails(
        &second.iter().map(String::as_str).collect::<Vec<_>>(),
        "another process is writing it now",
    );
    first.kill().unwrap();
    first.wait().unwrap();
    std::fs::remove_file(&ckpt).unwrap();

    // `infer --json -o`: the results in --format in the file, one document on stdout.
    let texts = d.join("new.txt");
    std::fs::write(&texts, "alpha beta\ngamma\n").unwrap();
    let out = d.join("mix.csv");
    let v = json(&["infer", m, s(&texts), "--format", "csv", "-o", s(&out)]);
    assert_eq!(
        (v["output"].as_str(), v["documents"].as_u64()),
        (Some(s(&out)), Some(2)),
        "{v}"
    );
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("doc,tokens,topic_0"));

    // `update -o X.tmod` writes X.tcorp: an unrelated corpus of that name is not replaced, its
    // own earlier output is. (The new documents: the same text split otherwise, since the
    // model's own corpus is refused, sixth attack.)
    let other = d.join("x.tcorp");
    std::fs::copy(&corpus, &other).unwrap();
    let x = d.join("x.tmod");
    let fresh = prepare_text(&write_text_corpus(d), &d.join("fresh.tcorp"), "0.3", &[]);
    let update = |out: &Path| {
        vec![
            "update".to_string(),
            m.to_string(),
            s(&fresh).to_string(),
            "-o".to_string(),
            s(out).to_string(),
            "--iters".to_string(),
            "2".to_string(),
            "-q".to_string(),
        ]
    };
    let a = update(&x);
    fails(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        "exists and is not the corpus of a model at",
    );
    assert_eq!(std::fs::read(&other).unwrap(), corpus_bytes);
    let y = d.join("y.tmod");
    let a = update(&y);
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());

    // Correlation of rows whose values are all equal (one word): said, not silently null.
    let one = d.join("one.tcorp");
    ok(&[
        "synth",
        "-o",
        s(&one),
        "--docs",
        "4",
        "--vocab",
        "1",
        "--topics",
        "2",
        "--doc-len",
        "10",
        "-q",
    ]);
    let out = topos(&["knn", s(&one), "-k", "1", "--metric", "correlation"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("correlation is undefined"),
        "{out:?}"
    );

    // Held-out documents too short for document completion: the run says so and writes its model.
    let short = d.join("short.txt");
    let words = ["apple", "banana", "cherry", "grape", "melon", "peach"];
    let text: String = (0..400).map(|i| format!("{}\n", words[i % 6])).collect();
    std::fs::write(&short, text).unwrap();
    let sc = prepare_text(&short, &d.join("short.tcorp"), "0.1", &["--min-df", "1"]);
    let sm = d.join("short.tmod");
    let out = topos(&["train", s(&sc), "-k", "3", "--iters", "3", "-o", s(&sm)]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no held-out log-likelihood will be reported"),
        "{out:?}"
    );
    assert!(sm.exists());
}

/// The fifth attack (RELIABILITY.md): `eval` of a corpus with nothing held out still gives
/// coherence and the training log-likelihood, and says the held-out score is missing.
#[test]
fn a_fifth_attack_eval_without_held_out_documents() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = prepare_text(
        &write_text_corpus(dir.path()),
        &dir.path().join("c.tcorp"),
        "0",
        &[],
    );
    let model = dir.path().join("c.tmod");
    train_quick(&corpus, &model, "3", "5", &["--doc-topics"]);
    let out = topos(&["eval", s(&model), "--coherence", "umass,npmi", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no held-out documents"), "{err}");
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(e["heldout_ll_per_token"].is_null(), "{e}");
    assert!(e["train_ll_per_token"].as_f64().unwrap() < 0.0, "{e}");
    assert_eq!(e["coherence_per_topic"].as_array().unwrap().len(), 3, "{e}");
    assert_eq!(e["coherence"][0]["measure"], "npmi", "{e}");
    let text = ok(&["eval", s(&model)]);
    assert!(
        text.contains("held-out log-likelihood per token: none"),
        "{text}"
    );
}

/// The fifth attack: `infer` of JSON Lines reads one field's text with `--text-field` (as
/// `prepare` does), and warns when it is given JSON without it (keys would be read as words).
#[test]
fn a_fifth_attack_infer_reads_json_lines_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let (_, model) = corpus_and_model(dir.path(), &[]);
    let jsonl = dir.path().join("new.jsonl");
    std::fs::write(
        &jsonl,
        "{\"title\": \"paper\", \"body\": \"river water fishing boat\"}\n\n{\"body\": null}\n",
    )
    .unwrap();
    let out = topos(&[
        "infer",
        s(&model),
        s(&jsonl),
        "--text-field",
        "body",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs = e["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 3, "{e}");
    assert_eq!(docs[0]["tokens"], 4, "{e}");
    assert_eq!(
        (docs[1]["tokens"].as_u64(), docs[2]["tokens"].as_u64()),
        (Some(0), Some(0))
    );
    // Without the field: a warning, and the keys are read as words.
    let out = topos(&["infer", s(&model), s(&jsonl), "-q"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--text-field"));
    // A byte-order mark starting the file is dropped, as prepare drops it.
    std::fs::write(&jsonl, "\u{feff}{\"body\": \"river water\"}\n").unwrap();
    let e = json(&["infer", s(&model), s(&jsonl), "--text-field", "body", "-q"]);
    assert_eq!(e["documents"][0]["tokens"], 2, "{e}");
    // A line without the field names its line.
    std::fs::write(&jsonl, "{\"body\": \"river\"}\n{\"title\": \"x\"}\n").unwrap();
    fails(
        &["infer", s(&model), s(&jsonl), "--text-field", "body"],
        "line 2: has no field \"body\"",
    );
}

/// The fifth attack: a `.csv` file is read as lines (CSV is not an input format), and `prepare`
/// says so before the work, also with `-q`.
#[test]
fn a_fifth_attack_csv_is_said_to_be_read_as_lines() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let out = dir.path().join("t.tcorp");
    std::fs::write(&csv, "id,text\n1,\"river water\"\n2,\"stock market\"\n").unwrap();
    let args = prepare_every_word(&csv, &out);
    let out = topos(&args);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is read as one document per line") && err.contains("--text-field"),
        "{err}"
    );
    // Named as lines on purpose: no warning.
    let out = topos(&[&args[..], &["--format", "lines"]].concat());
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("is not parsed"));
}

/// The fifth attack: with more topics than the data fills, `topics` lists only words a topic
/// holds tokens of (the JSON keeps the padded list, with counts 0).
#[test]
fn a_fifth_attack_topics_list_only_words_with_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("few.txt");
    std::fs::write(&input, "river water\nstock market\n".repeat(3)).unwrap();
    let corpus = dir.path().join("few.tcorp");
    ok(&prepare_every_word(&input, &corpus));
    let model = dir.path().join("few.tmod");
    train_quick(&corpus, &model, "20", "3", &[]);
    let report = json(&["topics", s(&model), "--top", "4"]);
    let text = ok(&["topics", s(&model), "--top", "4", "-q"]);
    let mut empty = 0;
    for t in report["topics"].as_array().unwrap() {
        let k = t["topic"].as_u64().unwrap();
        let held: Vec<&str> = t["top_words"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["count"].as_u64().unwrap() > 0)
            .map(|w| w["word"].as_str().unwrap())
            .collect();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("topic {k:>2} ")))
            .unwrap_or_else(|| panic!("topic {k} in {text}"));
        let listed = line.split_once("): ").unwrap().1;
        if held.is_empty() {
            empty += 1;
            assert_eq!(listed, "(no tokens)", "{line}");
        } else {
            assert_eq!(listed, held.join(" "), "{line}");
        }
    }
    assert!(empty > 0, "{text}");
    // `--top 0` is every word a topic holds tokens of (the sixth attack: it was refused, where
    // `infer --top 0` means every topic): all four words, in JSON without padding.
    let all = json(&["topics", s(&model), "--top", "0"]);
    let mut words: Vec<&str> = all["topics"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["top_words"].as_array().unwrap())
        .map(|w| {
            assert!(w["count"].as_u64().unwrap() > 0, "{w}");
            w["word"].as_str().unwrap()
        })
        .collect();
    words.sort_unstable();
    words.dedup();
    assert_eq!(words, ["market", "river", "stock", "water"], "{all}");
}

/// `infer -` reads standard input as `infer FILE` reads a file: the same reader, so gzip is
/// recognised, a byte-order mark dropped, UTF-16 refused with its line, and a Topos binary
/// named.
#[test]
fn infer_reads_stdin_as_it_reads_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, model) = corpus_and_model(dir.path(), &[]);
    let text = "river water fishing boat\n\nstock market price\r\n";
    let from_file = dir.path().join("new.txt");
    std::fs::write(&from_file, text).unwrap();
    let want = json(&["infer", s(&model), s(&from_file), "-q"]);
    let stdin_json = |input: &[u8]| {
        let out = topos_with_stdin(&["infer", s(&model), "-", "-q", "--json"], input);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(stdin_json(text.as_bytes())["documents"], want["documents"]);
    assert_eq!(want["documents"].as_array().unwrap().len(), 3, "{want}");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    assert_eq!(
        stdin_json(&gz.finish().unwrap())["documents"],
        want["documents"]
    );
    let with_mark = format!("\u{feff}{text}");
    assert_eq!(
        stdin_json(with_mark.as_bytes())["documents"],
        want["documents"]
    );

    let utf16: Vec<u8> = "river water\n"
        .encode_utf16()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    let out = topos_with_stdin(&["infer", s(&model), "-"], &utf16);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("stdin: line 1: the input is UTF-16") && err.contains("iconv -f UTF-16LE"),
        "{err}"
    );
    let out = topos_with_stdin(&["infer", s(&model), "-"], &std::fs::read(&corpus).unwrap());
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("this is a Topos corpus file"),
        "{out:?}"
    );
}

/// A directory's files other than `.txt` and `.txt.gz` were skipped without a word: their text
/// was missing from the corpus. They are counted by extension in the report and named in a
/// warning that `--quiet` keeps; hidden files stay out silently.
#[test]
fn a_directory_says_which_files_it_did_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    std::fs::write(input.join("a.txt"), "river water fishing boat lake\n").unwrap();
    std::fs::write(input.join("sub/b.TXT"), "stock market price money bank\n").unwrap();
    for name in ["notes.md", "sub/paper.pdf", "README", "c.md", ".hidden"] {
        std::fs::write(input.join(name), "words that are not read\n").unwrap();
    }
    let corpus = dir.path().join("c.tcorp");
    let mut args = prepare_every_word(&input, &corpus);
    args.extend(["--holdout", "0", "--json"]);
    let out = topos(&args);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["input_documents"], 2, "{report}");
    assert_eq!(
        report["input_files_skipped"],
        serde_json::json!({"": 1, "md": 2, "pdf": 1}),
        "{report}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("4 files were not read (1 without an extension, 2 .md, 1 .pdf)"),
        "{err}"
    );
    // Nothing to say when every file is read.
    for name in ["notes.md", "sub/paper.pdf", "README", "c.md"] {
        std::fs::remove_file(input.join(name)).unwrap();
    }
    let out = topos(&args);
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not read"));
}

/// Sixth attack, rows 1–2: learned priors that a run would never learn, and an update with the
/// model's own documents, are refused before any work; `update --algo auto` says why.
#[test]
fn a_sixth_attack_refuses_settings_that_would_do_nothing_or_count_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (corpus, model) = corpus_and_model(d, &[]);
    let (c, m) = (s(&corpus), s(&model));
    // The default burn-in (50) outlasts a 20-iteration run: no update would ever come.
    let out = d.join("p.tmod");
    let train = |extra: &[&'static str]| {
        let mut a = vec!["train", c, "-k", "3", "--iters", "20", "-o", s(&out), "-q"];
        a.extend_from_slice(extra);
        a
    };
    fails(
        &train(&["--optimize-priors", "5"]),
        "would first learn the priors after iteration 55, but the run ends at iteration 20",
    );
    fails(
        &train(&["--optimize-priors", "30", "--optimize-burn-in", "0"]),
        "after iteration 30",
    );
    assert!(!out.exists(), "nothing written under the model's name");
    let learned = json(&train(&[
        "--optimize-priors",
        "5",
        "--optimize-burn-in",
        "15",
    ]));
    assert!(learned["alpha"].is_array(), "learned: {learned}");
    let fresh = prepare_text(&write_text_corpus(d), &d.join("fresh.tcorp"), "0.3", &[]);
    fails(
        &[
            "update",
            m,
            s(&fresh),
            "-o",
            s(&d.join("u5.tmod")),
            "--iters",
            "4",
            "--optimize-priors",
            "5",
        ],
        "the run ends at iteration 4",
    );

    // A log appended to the model or the corpus the update reads destroyed it.
    let model_bytes = std::fs::read(&model).unwrap();
    let fresh_bytes = std::fs::read(&fresh).unwrap();
    for log in [m, s(&fresh)] {
        fails(
            &[
                "update",
                m,
                s(&fresh),
                "-o",
                s(&d.join("l.tmod")),
                "--log",
                log,
            ],
            "this command reads",
        );
    }
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes);
    assert_eq!(std::fs::read(&fresh).unwrap(), fresh_bytes);
    // The same for train's --seed-words file.
    let seeds = d.join("seeds.toml");
    let seeds_text = "[[topic]]\nid = 0\nwords = [\"river\"]\n";
    std::fs::write(&seeds, seeds_text).unwrap();
    let (sw, o) = (s(&seeds), s(&out));
    fails(
        &[
            "train",
            c,
            "-k",
            "3",
            "--iters",
            "2",
            "-o",
            o,
            "--seed-words",
            sw,
            "--log",
            sw,
        ],
        "is the --seed-words file this command reads",
    );
    assert_eq!(std::fs::read_to_string(&seeds).unwrap(), seeds_text);

    // The model's own corpus is not new documents.
    let u = d.join("u.tmod");
    fails(
        &["update", m, c, "-o", s(&u), "--iters", "2"],
        "c.tmod was trained on: an update adds documents",
    );
    assert!(!u.exists() && !d.join("u.tcorp").exists());
    let out = topos(&[
        "update",
        m,
        s(&fresh),
        "-o",
        s(&u),
        "--iters",
        "2",
        "--algo",
        "auto",
    ]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--algo auto: cgs ("), "{err}");
}

/// Sixth attack, rows 3–4: `synth --words` with fewer words than `--vocab` never writes a
/// corpus holding a word twice (which every command refused) and says how it named the rest;
/// `eval` refuses coherence settings that cannot score a pair of words.
#[test]
fn a_sixth_attack_synth_words_and_eval_windows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let words = d.join("words.txt");
    std::fs::write(&words, "w3\nriver\n").unwrap();
    let out = d.join("s.tcorp");
    let synth = |vocab: &str| {
        topos(&[
            "synth",
            "-o",
            s(&out),
            "--docs",
            "20",
            "--vocab",
            vocab,
            "--topics",
            "2",
            "--doc-len",
            "10",
            "--words",
            s(&words),
            "-q",
        ])
    };
    let refused = synth("6");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains("already holds the word w3") && err.contains("--vocab 2"),
        "{err}"
    );
    assert!(!out.exists());
    std::fs::write(&words, "lake\nriver\n").unwrap();
    let named = synth("4");
    assert!(named.status.success(), "{named:?}");
    let err = String::from_utf8_lossy(&named.stderr);
    assert!(
        err.contains("has 2 words for --vocab 4; ids 2 to 3 are named w2 to w3"),
        "{err}"
    );
    let listed = json(&[
        "topics",
        s(&{
            let m = d.join("s.tmod");
            train_quick(&out, &m, "2", "2", &[]);
            m
        }),
    ]);
    assert_eq!(listed["num_words"], 4, "{listed}");
    let one = ok(&[
        "synth",
        "-o",
        s(&d.join("one.tcorp")),
        "--docs",
        "3",
        "--vocab",
        "1",
        "--topics",
        "2",
        "--doc-len",
        "5",
    ]);
    assert!(one.contains(", 1 word, in"), "{one}");
    // A split that holds out every document is refused, as `prepare` refuses it.
    let none = d.join("none.tcorp");
    fails(
        &[
            "synth",
            "-o",
            s(&none),
            "--docs",
            "3",
            "--vocab",
            "5",
            "--topics",
            "2",
            "--holdout",
            "0.999",
        ],
        "holds out all 3 documents",
    );
    assert!(!none.exists());

    let (_, model) = corpus_and_model(d, &[]);
    let m = s(&model);
    fails(
        &["eval", m, "--coherence", "npmi", "--window", "1"],
        "must be at least 2 tokens",
    );
    fails(&["eval", m, "--window", "20"], "add --coherence npmi");
    fails(
        &["eval", m, "--top", "1"],
        "must be between 2 and the model's",
    );
    let e = json(&[
        "eval",
        m,
        "--coherence",
        "npmi",
        "--window",
        "2",
        "--top",
        "2",
    ]);
    assert_eq!(e["coherence"][0]["window"], 2, "{e}");
}

/// Sixth attack, row 5: an output Topos refuses by its own rule (a directory, a ledger) is not
/// followed by advice about its directory, which contradicted it; an OS error still is; a
/// directory output that names a file says so instead of "File exists (os error 17)".
#[test]
fn a_sixth_attack_output_refusals_give_advice_that_fits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (corpus, model) = corpus_and_model(d, &[]);
    let (c, m) = (s(&corpus), s(&model));
    let no_directory_advice = |out: std::process::Output| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("check that the directory exists"), "{err}");
    };
    let train = |o| vec!["train", c, "-k", "3", "--iters", "2", "-o", o, "-q"];
    no_directory_advice(fails(
        &train(s(d)),
        "it is a directory, which is never replaced; name a file",
    ));
    no_directory_advice(fails(
        &["infer", m, c, "-o", s(d)],
        "it is a directory, which is never replaced",
    ));
    ok(&["privacy", "budget", c, "--total", "3", "-q"]);
    let ledger = format!("{c}.ledger");
    no_directory_advice(fails(&train(&ledger), "privacy ledger"));
    no_directory_advice(fails(
        &["infer", m, c, "-o", &ledger],
        "which no output may replace; name another file",
    ));
    fails(
        &train(s(&d.join("missing/m.tmod"))),
        "check that the directory exists and is writable",
    );
    let file = d.join("file.txt");
    std::fs::write(&file, "keep").unwrap();
    fails(
        &["export", m, "--format", "mallet", "-o", s(&file)],
        "is a file, but --format mallet writes Mallet's three files into a directory",
    );
    fails(
        &["export", c, "-o", s(&file)],
        "is a file, but a corpus is exported",
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
}
