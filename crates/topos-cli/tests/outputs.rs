//! A run's outputs are one unit (issue 18, rows 1–4 and 11): every path is checked before any
//! work, the model and its `.doctopics` replace the old pair together or not at all, a side file
//! belongs to one model (its checksum), and a private model never has true per-document counts
//! beside it.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn corpus(dir: &Path) -> PathBuf {
    let themes = [
        "river water fish boat lake stream bank flood rain",
        "stock market price trade bank money invest profit share",
        "game team player score match season coach league win",
    ];
    let input = write_themes(dir, "docs", &themes, 240, 16, 0);
    prepare_text(&input, &dir.join("c.tcorp"), "0.2", &[])
}

fn train(c: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "train",
        s(c),
        "-k",
        "3",
        "--iters",
        "10",
        "-o",
        s(out),
        "-q",
    ];
    a.extend_from_slice(extra);
    topos(&a)
}

/// Every file name in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_bad_output_path_is_refused_before_any_training_and_charges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let missing = dir.path().join("missing-dir").join("m.tmod");
    // A run that would take a long time is refused at once.
    let t = Instant::now();
    fails(
        &[
            "train",
            s(&c),
            "-k",
            "3",
            "--iters",
            "1000000",
            "-o",
            s(&missing),
        ],
        "cannot write",
    );
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "refused only after {:?}",
        t.elapsed()
    );
    // A private run with a budget: refused before training, and nothing is charged.
    ok(&["privacy", "budget", s(&c), "--total", "5"]);
    let ledger = std::fs::read_to_string(format!("{}.ledger", s(&c))).unwrap();
    fails(
        &[
            "train",
            s(&c),
            "-k",
            "3",
            "--iters",
            "5",
            "-o",
            s(&missing),
            "--private",
            "--epsilon",
            "1",
            "--max-doc-tokens",
            "10",
        ],
        "cannot write",
    );
    assert_eq!(
        std::fs::read_to_string(format!("{}.ledger", s(&c))).unwrap(),
        ledger
    );
    // The side file's and the checkpoint's places are checked too.
    let out = dir.path().join("m.tmod");
    let blocked = dir.path().join("m.tmod.doctopics.dir");
    std::fs::create_dir(&blocked).unwrap();
    fails(
        &[
            "train",
            s(&c),
            "-k",
            "3",
            "--iters",
            "5",
            "-o",
            s(&out),
            "--checkpoint-every",
            "1",
            "--checkpoint",
            &format!("{}/no/such/dir/x.ckpt", s(&blocked)),
        ],
        "cannot write",
    );
    assert!(!out.exists());
}

#[test]
fn a_retrained_model_never_sits_beside_another_runs_doc_topics() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let m = dir.path().join("m.tmod");
    let side = dir.path().join("m.tmod.doctopics");
    assert!(train(&c, &m, &["--doc-topics"]).status.success());
    assert!(side.exists());
    ok(&["similar", s(&m), "--corpus", s(&c), "--doc", "0", "-k", "2"]);
    // Retrained without --doc-topics: the old side file goes.
    assert!(train(&c, &m, &["--seed", "2"]).status.success());
    assert!(
        !side.exists(),
        "the old .doctopics stayed beside the new model"
    );
    fails(
        &["similar", s(&m), "--corpus", s(&c), "--doc", "0"],
        "--doc-topics",
    );

    // A side file copied beside another model is refused by checksum, by eval and similar.
    let a = dir.path().join("a.tmod");
    assert!(train(&c, &a, &["--doc-topics"]).status.success());
    std::fs::copy(dir.path().join("a.tmod.doctopics"), &side).unwrap();
    fails(
        &["similar", s(&m), "--corpus", s(&c), "--doc", "0"],
        "another model",
    );
    fails(&["eval", s(&m), "--corpus", s(&c)], "another model");

    // --doc-topics, then --private to the same -o: the true counts are gone before the private
    // model appears.
    assert!(train(&c, &a, &["--doc-topics"]).status.success());
    let p = train(
        &c,
        &a,
        &["--private", "--epsilon", "100", "--max-doc-tokens", "16"],
    );
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    assert!(!dir.path().join("a.tmod.doctopics").exists());
}

#[test]
fn a_failure_while_writing_the_outputs_replaces_neither_file() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let m = dir.path().join("m.tmod");
    assert!(train(&c, &m, &["--doc-topics"]).status.success());
    let model = std::fs::read(&m).unwrap();
    // The side file's name is taken by a non-empty directory: staging works, the rename fails
    // (an injected write error at the last step). Neither the model nor the side file changes,
    // and no temporary is left.
    let side_path = dir.path().join("m.tmod.doctopics");
    std::fs::remove_file(&side_path).unwrap();
    std::fs::create_dir(&side_path).unwrap();
    std::fs::write(side_path.join("keep"), b"x").unwrap();
    let out = train(&c, &m, &["--doc-topics", "--seed", "9"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
    assert_eq!(std::fs::read(&m).unwrap(), model, "the model was replaced");
    assert!(side_path.join("keep").exists());
    assert!(
        !names(dir.path()).iter().any(|n| n.ends_with(".tmp")),
        "{:?}",
        names(dir.path())
    );
}
