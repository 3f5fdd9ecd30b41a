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
    let mut text = String::new();
    for i in 0..300 {
        let words: Vec<&str> = themes[i % 3].split(' ').collect();
        let doc: Vec<&str> = (0..20)
            .map(|j| words[(i * 7 + j * 5) % words.len()])
            .collect();
        text.push_str(&doc.join(" "));
        text.push('\n');
    }
    let p = dir.join("docs.txt");
    std::fs::write(&p, text).unwrap();
    p
}

/// Prepares (with `extra` options) and trains a 3-topic model for a few iterations; returns
/// (corpus, model).
fn corpus_and_model(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let input = write_text_corpus(dir);
    let corpus = dir.join("c.tcorp");
    let mut args = vec![
        "prepare",
        s(&input),
        "-o",
        s(&corpus),
        "--holdout",
        "0.2",
        "--max-df",
        "0.9",
        "-q",
    ];
    args.extend_from_slice(extra);
    ok(&args);
    let model = dir.join("c.tmod");
    ok(&[
        "train",
        s(&corpus),
        "-k",
        "3",
        "--alpha",
        "0.1",
        "--iters",
        "20",
        "--doc-topics",
        "-q",
    ]);
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
