//! End-to-end tests of learned priors (`topos train --optimize-priors`, issue 24 part 1): a known
//! asymmetric α of a synthetic corpus is recovered, the model records it and every reader uses
//! it, the run is as reproducible as one with fixed priors (threads, kill -9 and resume), and what
//! cannot learn priors is refused in one line.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// The generator's α: one common topic, one rare, and three between.
const TRUTH: [f64; 5] = [1.0, 0.5, 0.25, 0.12, 0.06];

fn corpus(dir: &Path) -> PathBuf {
    let c = dir.join("a.tcorp");
    let truth: Vec<String> = TRUTH.iter().map(f64::to_string).collect();
    ok(&[
        "synth",
        "-o",
        s(&c),
        "--docs",
        "2000",
        "--vocab",
        "1500",
        "--topics",
        "5",
        "--doc-len",
        "80",
        "--alpha-values",
        &truth.join(","),
        "--holdout",
        "0.1",
        "--quiet",
    ]);
    c
}

fn train(corpus: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "train",
        s(corpus),
        "-k",
        "5",
        "--device",
        "cpu",
        "-o",
        s(out),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--iters") {
        args.extend_from_slice(&["--iters", "60"]);
    }
    json(&args)
}

#[test]
fn learned_priors_recover_a_known_asymmetric_alpha() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let learned_path = dir.path().join("learned.tmod");
    // From the symmetric default α = 50/K = 10, far from the truth: the topics need ~100
    // iterations to separate before α settles.
    let learned = train(
        &c,
        &learned_path,
        &[
            "--iters",
            "150",
            "--alpha",
            "0.2",
            "--optimize-priors",
            "10",
            "--optimize-burn-in",
            "20",
        ],
    );
    let mut alpha: Vec<f64> = learned["alpha"]
        .as_array()
        .expect("an asymmetric alpha is a list")
        .iter()
        .map(|a| a.as_f64().unwrap())
        .collect();
    // Topics come out in any order: compare the sorted values.
    alpha.sort_by(f64::total_cmp);
    let mut truth = TRUTH.to_vec();
    truth.sort_by(f64::total_cmp);
    for (a, t) in alpha.iter().zip(&truth) {
        assert!(
            (a - t).abs() < 0.2 * t,
            "learned {alpha:?}, truth {truth:?}"
        );
    }
    assert_eq!(learned["optimize_priors"]["every"], 10, "{learned}");
    let beta = learned["beta"].as_f64().unwrap();
    assert!(beta > 0.0 && beta != 0.01, "β was learned: {beta}");

    // The symmetric default (α = 50/K = 10 here) fits the held-out text worse.
    let fixed = train(&c, &dir.path().join("fixed.tmod"), &["--iters", "150"]);
    let (l, f) = (
        learned["heldout_ll"].as_f64().unwrap(),
        fixed["heldout_ll"].as_f64().unwrap(),
    );
    assert!(l > f + 0.02, "learned priors {l} vs fixed {f}");

    // The model file records them (version 4), and eval uses them: the run's held-out value.
    let bytes = std::fs::read(&learned_path).unwrap();
    assert_eq!(bytes[8..12], 4u32.to_le_bytes());
    let eval = json(&["eval", s(&learned_path), "--corpus", s(&c), "--quiet"]);
    assert_eq!(eval["heldout_ll_per_token"].as_f64(), Some(l), "{eval}");
    let topics = ok(&["topics", s(&learned_path)]);
    assert!(topics.contains("alpha = asymmetric"), "{topics}");
    assert!(
        topics.contains("%, alpha 0."),
        "each topic shows its alpha: {topics}"
    );
    // A model with fixed priors is still version 3.
    let fixed_bytes = std::fs::read(dir.path().join("fixed.tmod")).unwrap();
    assert_eq!(fixed_bytes[8..12], 3u32.to_le_bytes());
}

#[test]
fn learned_priors_are_reproducible_across_threads_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    for algo in ["cgs", "fcgs", "esca", "mh", "ezlda"] {
        let one = dir.path().join(format!("{algo}-1.tmod"));
        let two = dir.path().join(format!("{algo}-2.tmod"));
        let opts = ["--optimize-priors", "7", "--optimize-burn-in", "5"];
        let run = |out: &Path, threads: &str, extra: &[&str]| {
            let mut args = vec!["--algo", algo, "--threads", threads];
            args.extend_from_slice(&opts);
            args.extend_from_slice(extra);
            train(&c, out, &args)
        };
        run(&one, "1", &[]);
        run(&two, "2", &[]);
        assert_eq!(
            std::fs::read(&one).unwrap(),
            std::fs::read(&two).unwrap(),
            "{algo}: 1 and 2 threads"
        );

        // Killed after its first checkpoint (iteration 20, priors learned at 7 and 14), then
        // resumed: the uninterrupted run's model, byte for byte.
        let resumed = dir.path().join(format!("{algo}-resumed.tmod"));
        let ckpt = dir.path().join(format!("{algo}.ckpt"));
        let mut args: Vec<&str> = vec![
            "train",
            s(&c),
            "-k",
            "5",
            "--iters",
            "60",
            "--device",
            "cpu",
            "-o",
            s(&resumed),
            "--algo",
            algo,
            "--threads",
            "2",
            "--checkpoint-every",
            "20",
            "--checkpoint",
            s(&ckpt),
            "--quiet",
        ];
        args.extend_from_slice(&opts);
        kill_at_first_checkpoint(&args, &ckpt);
        // Resuming with other prior settings is refused, naming both.
        let mut other = args.clone();
        other.truncate(other.len() - opts.len());
        other.push("--resume");
        fails(&other, "fixed priors");
        args.push("--resume");
        ok(&args);
        assert_eq!(
            std::fs::read(&resumed).unwrap(),
            std::fs::read(&two).unwrap(),
            "{algo}: resumed"
        );
    }
}

#[test]
fn what_cannot_learn_priors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let out = dir.path().join("m.tmod");
    let base = ["train", s(&c), "-k", "5", "--iters", "3", "-o", s(&out)];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
    };
    for (extra, needle) in [
        (&["--optimize-priors", "0"][..], "at least 1 iteration"),
        (
            &["--optimize-priors", "5", "--device", "cuda"][..],
            "runs on cpu only",
        ),
        (
            &[
                "--optimize-priors",
                "5",
                "--private",
                "--epsilon",
                "1",
                "--max-doc-tokens",
                "50",
            ][..],
            "cannot be used with --private",
        ),
        (&["--optimize-burn-in", "5"][..], "--optimize-priors"),
    ] {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out_ = topos(&args);
        assert!(!out_.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out_.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(!out.exists(), "nothing written under the model's name");
}
