//! End-to-end tests of `topos knn` and `topos similar`: results that make sense on a corpus of
//! three themes, output formats, thread independence, and bad inputs (one-line error, non-zero
//! exit, nothing written under the real name).

mod common;
use common::*;

use std::path::{Path, PathBuf};

const THEMES: [&str; 3] = [
    "river water fish boat lake stream bank flood rain water river fish",
    "stock market price trade bank money invest profit share market price",
    "game team player score match season coach league win team game",
];

/// Document i (line i) is about theme i % 3.
fn write_corpus(dir: &Path, name: &str, docs: usize, salt: usize) -> PathBuf {
    let input = write_themes(dir, name, &THEMES, docs, 15, salt);
    prepare_text(&input, &dir.join(format!("{name}.tcorp")), "0.2", &[])
}

fn jsonl(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn knn_finds_documents_of_the_same_theme_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), "c", 150, 0);
    for (metric, weighting) in [
        ("cosine", "tfidf"),
        ("euclidean", "counts"),
        ("manhattan", "counts"),
        ("jensen-shannon", "counts"),
        ("jaccard", "binary"),
    ] {
        let out = ok(&[
            "knn",
            s(&corpus),
            "-k",
            "5",
            "--metric",
            metric,
            "--weighting",
            weighting,
            "-q",
        ]);
        let lines = jsonl(&out);
        assert!(lines.len() > 100, "one line per training document");
        for l in &lines {
            let q = l["query"].as_u64().unwrap();
            let nb = l["neighbors"].as_array().unwrap();
            assert_eq!(nb.len(), 5);
            let mut last = f64::NEG_INFINITY;
            for n in nb {
                let d = n["doc"].as_u64().unwrap();
                assert_ne!(d, q, "{metric}: a document is not its own neighbour");
                assert_eq!(
                    d % 3,
                    q % 3,
                    "{metric}: document {q}'s neighbour {d} is off-theme"
                );
                let dist = n["distance"].as_f64().unwrap();
                assert!(dist >= last, "{metric}: neighbours sorted by distance");
                last = dist;
            }
        }
    }
    // CSV: one line per neighbour, the same neighbours as JSONL.
    let csv = ok(&["knn", s(&corpus), "-k", "3", "--format", "csv", "-q"]);
    let js = jsonl(&ok(&["knn", s(&corpus), "-k", "3", "-q"]));
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "query,rank,neighbor,distance");
    assert_eq!(rows.len(), 1 + 3 * js.len());
    let first: Vec<&str> = rows[1].split(',').collect();
    assert_eq!(first[0], js[0]["query"].to_string());
    assert_eq!(first[1], "1");
    assert_eq!(first[2], js[0]["neighbors"][0]["doc"].to_string());
    // --include-self: with cosine a document is at distance 0 from itself, so it comes first.
    let incl = jsonl(&ok(&["knn", s(&corpus), "-k", "1", "--include-self", "-q"]));
    assert!(incl
        .iter()
        .all(|l| l["neighbors"][0]["distance"].as_f64().unwrap() < 1e-6));
}

#[test]
fn knn_output_file_is_identical_for_any_thread_count_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), "c", 120, 0);
    let mut outputs = Vec::new();
    for (threads, batch) in [("1", "1024"), ("2", "7"), ("3", "1")] {
        let out = dir.path().join(format!("nn-{threads}.jsonl"));
        let summary = ok(&[
            "knn",
            s(&corpus),
            "-k",
            "4",
            "--metric",
            "manhattan",
            "--threads",
            threads,
            "--batch",
            batch,
            "-o",
            s(&out),
            "--json",
            "-q",
        ]);
        let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(v["k"], 4);
        outputs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

#[test]
fn knn_queries_from_another_corpus_and_heldout_documents() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_corpus(dir.path(), "a", 150, 0);
    let b = write_corpus(dir.path(), "b", 60, 3);
    // b's words get a's ids by spelling; themes still match.
    for extra in [
        vec!["--queries", s(&b)],
        vec!["--queries", s(&b), "--heldout"],
        vec!["--heldout"],
    ] {
        let mut args = vec![
            "knn",
            s(&a),
            "-k",
            "3",
            "--metric",
            "hellinger",
            "--norm",
            "l1",
            "-q",
        ];
        args.extend(&extra);
        let lines = jsonl(&ok(&args));
        assert!(!lines.is_empty());
        for l in &lines {
            let q = l["query"].as_u64().unwrap();
            for n in l["neighbors"].as_array().unwrap() {
                assert_eq!(n["doc"].as_u64().unwrap() % 3, q % 3, "{extra:?}");
            }
        }
    }
}

#[test]
fn knn_bad_inputs_get_one_line_errors_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), "c", 60, 0);
    let c = s(&corpus);
    let out = dir.path().join("out.jsonl");
    let o = s(&out);
    fails(&["knn", c, "-k", "0", "-o", o], "-k must be at least 1");
    fails(&["knn", c, "-k", "100000", "-o", o], "candidate documents");
    fails(
        &["knn", c, "--metric", "cosinus", "-o", o],
        "unknown metric",
    );
    fails(
        &["knn", c, "--metric", "minkowski", "-o", o],
        "needs its exponent: add --p P",
    );
    fails(
        &["knn", c, "--metric", "minkowski", "--p", "0.5", "-o", o],
        "p >= 1",
    );
    fails(
        &["knn", c, "--metric", "cosine", "--p", "3", "-o", o],
        "--p",
    );
    if !topos_cuda::device::device_count().is_ok_and(|n| n > 0) {
        fails(&["knn", c, "--device", "cuda", "-o", o], "--device cpu");
    }
    // Argument errors come from clap: its one error line, then its "--help" hint.
    for (args, needle) in [
        (["--device", "tpu"], "auto, cpu, cuda or cuda:N"),
        (["--gpu-memory", "lots"], "not a size"),
    ] {
        let bad = topos(&["knn", c, args[0], args[1], "-o", o]);
        assert_eq!(bad.status.code(), Some(2));
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.lines().next().unwrap().contains(needle), "{err}");
    }
    fails(&["knn", c, "--batch", "0", "-o", o], "--batch");
    fails(&["knn", "/nonexistent/x.tcorp", "-o", o], "x.tcorp");
    fails(
        &["knn", c, "--queries", "/nonexistent/q.tcorp", "-o", o],
        "q.tcorp",
    );
    assert!(
        !out.exists(),
        "nothing is written under the real name after an error"
    );
}

#[test]
fn similar_by_document_text_and_heldout() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), "c", 150, 0);
    let model = dir.path().join("c.tmod");
    let bare = dir.path().join("bare.tmod");
    train_quick(
        &corpus,
        &model,
        "3",
        "30",
        &["--alpha", "0.1", "--doc-topics"],
    );
    let m = s(&model);
    // A training document: its neighbours share its theme and exclude it.
    let lines = jsonl(&ok(&["similar", m, "--doc", "3", "-k", "5", "-q"]));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["query"], 3);
    for n in lines[0]["neighbors"].as_array().unwrap() {
        let d = n["doc"].as_u64().unwrap();
        assert_ne!(d, 3);
        assert_eq!(d % 3, 0);
    }
    // Free text about the second theme.
    let lines = jsonl(&ok(&[
        "similar",
        m,
        "--text",
        "stock market price money",
        "-k",
        "5",
        "--metric",
        "hellinger",
        "-q",
    ]));
    assert_eq!(lines[0]["query"], "stock market price money");
    for n in lines[0]["neighbors"].as_array().unwrap() {
        assert_eq!(n["doc"].as_u64().unwrap() % 3, 1);
    }
    // Every held-out document, as CSV.
    let csv = ok(&[
        "similar",
        m,
        "--heldout",
        "-k",
        "2",
        "--format",
        "csv",
        "-q",
    ]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(!rows.is_empty());
    for r in rows {
        let f: Vec<&str> = r.split(',').collect();
        let (q, n): (u64, u64) = (f[0].parse().unwrap(), f[2].parse().unwrap());
        assert_eq!(q % 3, n % 3, "{r}");
    }
    // Errors.
    fails(&["similar", m, "-k", "3"], "exactly one kind of query");
    fails(
        &["similar", m, "--doc", "999999"],
        "the input's last document is record",
    );
    // A text without a known word has no neighbours (an empty list, counted), not an error
    // for the whole call and not arbitrary documents.
    let out = topos(&[
        "similar",
        m,
        "--text",
        "zzzz qqqq",
        "--text",
        "stock market",
    ]);
    assert!(out.status.success());
    let lines = jsonl(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(lines[0]["neighbors"].as_array().unwrap().len(), 0);
    assert_eq!(lines[1]["neighbors"].as_array().unwrap().len(), 10);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("1 of 2 queries have no word known"), "{err}");
    if !topos_cuda::device::device_count().is_ok_and(|n| n > 0) {
        fails(
            &["similar", m, "--doc", "3", "--device", "cuda"],
            "--device cpu",
        );
    }
    fails(&["similar", m, "--doc", "3", "-k", "100000"], "candidate");
    train_quick(&corpus, &bare, "3", "5", &[]);
    fails(
        &["similar", s(&bare), "--doc", "3", "--corpus", s(&corpus)],
        "--doc-topics",
    );
}
