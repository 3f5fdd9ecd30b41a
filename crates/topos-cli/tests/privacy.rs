//! End-to-end tests of `topos privacy`: budgets, charged queries, refusals that release nothing,
//! and the allocator on the thesis's worked examples.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// 400 documents; "climate" in exactly the 200 with an even index; lengths 5..245.
fn corpus(dir: &Path, name: &str, docs: usize) -> PathBuf {
    let words = [
        "river", "water", "fish", "boat", "lake", "stock", "market", "price", "trade", "bank",
    ];
    let mut text = String::new();
    for i in 0..docs {
        let len = 5 + (i * 37) % 240;
        let mut doc: Vec<&str> = (0..len)
            .map(|j| words[(i * 3 + j * 7) % words.len()])
            .collect();
        if i % 2 == 0 {
            doc[0] = "climate";
        }
        text.push_str(&doc.join(" "));
        text.push('\n');
    }
    let input = dir.join(format!("{name}.txt"));
    std::fs::write(&input, text).unwrap();
    let out = dir.join(format!("{name}.tcorp"));
    ok(&[
        "prepare",
        s(&input),
        "-o",
        s(&out),
        "--holdout",
        "0.1",
        "--max-df",
        "1.0",
        "-q",
    ]);
    out
}

fn ledger_of(c: &Path) -> PathBuf {
    PathBuf::from(format!("{}.ledger", c.display()))
}

#[test]
fn budget_query_ledger_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), "news", 400);
    let cs = s(&c);

    // No budget yet: refused, and no ledger appears.
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "0.5",
            "--count-docs-with",
            "climate",
        ],
        "no privacy budget is set",
    );
    assert!(!ledger_of(&c).exists());

    let b = json(&["privacy", "budget", cs, "--total", "1.0"]);
    assert_eq!(b["total_epsilon"], 1.0);
    assert_eq!(b["remaining_epsilon"], 1.0);

    let q = json(&[
        "privacy",
        "query",
        cs,
        "--epsilon",
        "0.5",
        "--count-docs-with",
        "Climate",
        "--histogram",
        "doc-length:0,50,200",
    ]);
    let answers = q["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 2);
    // Each sub-query gets ε/2 = 0.25: noise scale 4, |noise| > 60 has probability ~1e-7.
    assert_eq!(answers[0]["query"], "count-docs-with climate");
    assert_eq!(answers[0]["epsilon"], 0.25);
    assert_eq!(answers[0]["noise_scale"], 4.0);
    let count = answers[0]["values"][0]["value"].as_i64().unwrap();
    assert!((count - 200).abs() < 60, "{count}");
    let bins = answers[1]["values"].as_array().unwrap();
    let labels: Vec<&str> = bins.iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["0-49", "50-199", "200+"]);
    // Lengths 5 + 37i mod 240: exact bin sizes, each answer within the noise.
    let mut exact = [0i64; 3];
    for i in 0..400 {
        let len = 5 + (i * 37) % 240;
        exact[if len < 50 {
            0
        } else if len < 200 {
            1
        } else {
            2
        }] += 1;
    }
    for (b, e) in bins.iter().zip(exact) {
        assert!((b["value"].as_i64().unwrap() - e).abs() < 60, "{b} vs {e}");
    }
    assert_eq!(q["guarantee"]["epsilon"], 0.5);
    assert_eq!(q["guarantee"]["mechanism"], "discrete-laplace");
    assert_eq!(q["ledger"]["spent_epsilon"], 0.5);
    assert_eq!(q["ledger"]["remaining_epsilon"], 0.5);

    // Over budget: one line naming spent, remaining and asked; nothing released or charged.
    let before = std::fs::read(ledger_of(&c)).unwrap();
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "0.6",
            "--count-docs-with",
            "climate",
        ],
        "spent ε = 0.5, remaining ε = 0.5, this query asks ε = 0.6",
    );
    // Queries that cannot be answered are refused before anything is charged.
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "0.1",
            "--count-docs-with",
            "zebra",
        ],
        "not in the corpus vocabulary",
    );
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "0.1",
            "--histogram",
            "doc-length:50,10",
        ],
        "strictly increasing",
    );
    fails_releasing_nothing(&["privacy", "query", cs, "--epsilon", "0.1"], "no query");
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "-1",
            "--count-docs-with",
            "climate",
        ],
        "--epsilon",
    );
    fails_releasing_nothing(
        &["privacy", "budget", cs, "--total", "0.2"],
        "already spent",
    );
    assert_eq!(std::fs::read(ledger_of(&c)).unwrap(), before);

    // The rest of the budget can be spent exactly, and then nothing more.
    json(&[
        "privacy",
        "query",
        cs,
        "--epsilon",
        "0.3",
        "--count-docs-with",
        "climate",
    ]);
    json(&[
        "privacy",
        "query",
        cs,
        "--epsilon",
        "0.2",
        "--histogram",
        "doc-length:0,100",
    ]);
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            cs,
            "--epsilon",
            "0.001",
            "--count-docs-with",
            "climate",
        ],
        "budget exceeded",
    );
    let l = json(&["privacy", "ledger", cs]);
    assert_eq!(l["spent_epsilon"], 1.0);
    assert_eq!(l["remaining_epsilon"], 0.0);
    let charges = l["charges"].as_array().unwrap();
    assert_eq!(charges.len(), 3);
    assert_eq!(
        charges[0]["query"],
        "count-docs-with climate; histogram doc-length:0,50,200"
    );
    let human = ok(&["privacy", "ledger", cs]);
    assert!(
        human.contains("total ε = 1, spent 1, remaining 0"),
        "{human}"
    );
}

#[test]
fn a_ledger_is_never_reused_for_another_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus(dir.path(), "a", 300);
    let b = corpus(dir.path(), "b", 320);
    ok(&["privacy", "budget", s(&a), "--total", "1"]);
    std::fs::copy(ledger_of(&a), ledger_of(&b)).unwrap();
    fails_releasing_nothing(
        &[
            "privacy",
            "query",
            s(&b),
            "--epsilon",
            "0.1",
            "--count-docs-with",
            "climate",
        ],
        "belongs to a different corpus",
    );
    fails_releasing_nothing(
        &["privacy", "ledger", s(&b)],
        "belongs to a different corpus",
    );
}

#[test]
fn allocate_reproduces_the_thesis_examples() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let cases = [
        ("disjoint.toml", "epsilon = 1.0\ncomposition = \"parallel\"\nsensitivities = [1, 1, 1]\n", 3.0),
        ("overlap.toml", "epsilon = 1.0\nsensitivities = [1, 1, 1]\n", 27.0),
        (
            "juveniles.toml",
            "epsilon = 1.0\nsensitivities = [1, 1, 1]\nconstraints = [\"eps[0] <= 0.5 * eps[2]\", \"eps[1] <= 0.5 * eps[2]\"]\n",
            36.0,
        ),
    ];
    for (name, text, want) in cases {
        let p = write(name, text);
        let a = json(&["privacy", "allocate", s(&p)]);
        let got = a["objective"].as_f64().unwrap();
        assert!((got - want).abs() / want < 1e-3, "{name}: {got} vs {want}");
        assert_eq!(a["total_variance"].as_f64().unwrap(), 2.0 * got);
        let human = ok(&["privacy", "allocate", s(&p)]);
        assert!(human.contains("objective Σ S_i²/ε_i² ="), "{human}");
    }
    let p = write(
        "bad.toml",
        "epsilon = 1.0\nsensitivities = [1, 1]\nconstraints = [\"eps[5] <= eps[0]\"]\n",
    );
    fails_releasing_nothing(&["privacy", "allocate", s(&p)], "only 2 sub-queries");
    let p = write("broken.toml", "epsilon = [\n");
    fails_releasing_nothing(&["privacy", "allocate", s(&p)], "broken.toml");
    fails_releasing_nothing(
        &["privacy", "allocate", "/nonexistent/budget.toml"],
        "cannot read",
    );
}

/// Issue 18, row 8: a query refused after its charge used to stay charged (ε out of the exact
/// sampler's range, noise too large for the counts); `query` and `ledger` must agree on what is
/// left; raising the total is an entry of the ledger.
#[test]
fn refused_queries_are_not_charged_and_budget_changes_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), "news", 300);
    let cs = s(&c);
    ok(&["privacy", "budget", cs, "--total", "1.0"]);
    let before = std::fs::read(ledger_of(&c)).unwrap();
    for (eps, needle) in [
        ("1e-40", "outside the exact sampler's range"),
        ("1e-17", "too large"),
    ] {
        fails_releasing_nothing(
            &[
                "privacy",
                "query",
                cs,
                "--epsilon",
                eps,
                "--count-docs-with",
                "climate",
            ],
            needle,
        );
    }
    assert_eq!(std::fs::read(ledger_of(&c)).unwrap(), before);
    // A tiny ε is answered (with huge noise) and costs at least one accounting unit; what
    // `query` says is left is what `ledger` says.
    for eps in ["1e-14", "0.1", "0.2"] {
        let q = json(&[
            "privacy",
            "query",
            cs,
            "--epsilon",
            eps,
            "--count-docs-with",
            "climate",
        ]);
        let l = json(&["privacy", "ledger", cs]);
        assert_eq!(q["ledger"]["spent_epsilon"], l["spent_epsilon"]);
        assert_eq!(q["ledger"]["remaining_epsilon"], l["remaining_epsilon"]);
    }
    let l = json(&["privacy", "ledger", cs]);
    assert!(l["spent_epsilon"].as_f64().unwrap() > 0.3);
    ok(&["privacy", "budget", cs, "--total", "2.5"]);
    let l = json(&["privacy", "ledger", cs]);
    let changes = l["budget_changes"].as_array().unwrap();
    let totals: Vec<f64> = changes
        .iter()
        .map(|b| b["total_epsilon"].as_f64().unwrap())
        .collect();
    assert_eq!(totals, [1.0, 2.5]);
    assert_eq!(l["charges"].as_array().unwrap().len(), 3);
    let human = ok(&["privacy", "ledger", cs]);
    assert!(human.contains("budget set: total ε = 2.5"), "{human}");
}

/// Issue 18, row 7: a lock file left by an older build, or by a killed process, does not block;
/// several queries at once all succeed and the ledger adds up.
#[test]
fn leftover_lock_files_do_not_block_and_concurrent_queries_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), "news", 300);
    let cs = s(&c).to_string();
    ok(&["privacy", "budget", &cs, "--total", "1.0"]);
    // What an older build's killed query left: a lock file with a dead process id.
    std::fs::write(format!("{cs}.ledger.lock"), "999999\n").unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let cs = cs.clone();
            std::thread::spawn(move || {
                topos(&[
                    "privacy",
                    "query",
                    &cs,
                    "--epsilon",
                    "0.05",
                    "--count-docs-with",
                    "climate",
                    "--json",
                ])
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let l = json(&["privacy", "ledger", &cs]);
    assert_eq!(l["charges"].as_array().unwrap().len(), 6);
    assert_eq!(l["spent_epsilon"], 0.3);
    assert_eq!(l["remaining_epsilon"], 0.7);
}

/// Issue 18, row 13: `--quiet` drops status lines, never results; a query's noisy answer (whose
/// ε is spent) is printed.
#[test]
fn quiet_still_prints_privacy_results() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), "news", 300);
    let cs = s(&c);
    let b = ok(&["privacy", "budget", cs, "--total", "1.0", "--quiet"]);
    assert!(b.contains("total ε = 1"), "{b}");
    let q = ok(&[
        "privacy",
        "query",
        cs,
        "--epsilon",
        "0.5",
        "--count-docs-with",
        "climate",
        "--quiet",
    ]);
    assert!(
        q.contains("count-docs-with climate") && q.contains("charged ε = 0.5"),
        "{q}"
    );
    let l = ok(&["--quiet", "privacy", "ledger", cs]);
    assert!(
        l.contains("spent 0.5") && l.contains("count-docs-with climate"),
        "{l}"
    );
    let budget = dir.path().join("budget.toml");
    std::fs::write(&budget, "epsilon = 1.0\nsensitivities = [1.0, 2.0]\n").unwrap();
    let a = ok(&["privacy", "allocate", s(&budget), "-q"]);
    assert!(a.contains("split of ε = 1"), "{a}");
}

/// `privacy plan` says what `train --private` would do (its calibration, from the flags alone)
/// and what that means for this corpus, and spends nothing: no ledger is written.
#[test]
fn plan_reports_the_runs_calibration_and_spends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), "plan", 400);
    let v = json(&[
        "privacy",
        "plan",
        s(&c),
        "-k",
        "5",
        "--epsilon",
        "1",
        "--max-doc-tokens",
        "50",
        "-q",
    ]);
    // Two releases (the word counts, the model) of sensitivity L = 50 at ε/2 each: b = 100.
    assert_eq!(v["releases"], 2, "{v}");
    assert_eq!(v["word_release"], true, "{v}");
    assert!(
        (v["epsilon_per_release"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{v}"
    );
    let b = v["noise_scale"].as_f64().unwrap();
    assert!((b - 100.0).abs() < 1e-6, "{v}");
    assert!(
        (v["vocabulary_threshold"].as_f64().unwrap() - 5.0 * b).abs() < 1e-6,
        "{v}"
    );
    // The counted tokens are Σ_d min(|d|, L) over the training documents.
    let corpus = topos_corpus::Corpus::open(&c).unwrap();
    let counted: u64 = corpus.train().iter().map(|d| d.len().min(50) as u64).sum();
    let advice = &v["non_private"];
    assert_eq!(advice["counted_tokens"].as_u64(), Some(counted), "{v}");
    let kept = advice["expected_vocabulary"].as_f64().unwrap();
    assert!(
        kept >= 0.0 && kept <= advice["words_counted"].as_f64().unwrap(),
        "{v}"
    );
    assert!(!ledger_of(&c).exists(), "a plan charged the ledger");
    fails(
        &[
            "privacy",
            "plan",
            s(&c),
            "-k",
            "5",
            "--epsilon",
            "0",
            "--max-doc-tokens",
            "50",
        ],
        "epsilon",
    );
}

/// `privacy plan` predicts the held-out log-likelihood of the Laplace private run (word release,
/// R = 2) with a band, and a run on the same corpus lands inside it (issue 25 part 3). A small
/// synthetic corpus (K = 5 true topics, 3,000 documents of ~40 tokens, V = 2,000) at ε = 1 and
/// ε = 10; a few seconds.
#[test]
fn plan_predicts_a_private_run_within_its_band() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("syn.tcorp");
    ok(&[
        "synth",
        "-o",
        s(&c),
        "--docs",
        "3000",
        "--vocab",
        "2000",
        "--topics",
        "5",
        "--doc-len",
        "40",
        "--holdout",
        "0.1",
        "-q",
    ]);
    let m = dir.path().join("p.tmod");
    for eps in ["1", "10"] {
        let plan = json(&[
            "privacy",
            "plan",
            s(&c),
            "-k",
            "5",
            "--iters",
            "10",
            "--epsilon",
            eps,
            "--mechanism",
            "laplace",
            "-q",
        ]);
        let u = &plan["utility"];
        let (p, band) = (
            u["predicted_heldout_ll"].as_f64().unwrap(),
            u["band"].as_f64().unwrap(),
        );
        assert!(plan["cap_chosen"].as_bool().unwrap(), "{plan}");
        assert!(p < 0.0 && band > 0.0 && band < 0.5, "{plan}");
        assert!(u["uniform_ll"].as_f64().unwrap() < p, "{plan}");
        json(&[
            "train",
            s(&c),
            "-k",
            "5",
            "--iters",
            "10",
            "--private",
            "--epsilon",
            eps,
            "--mechanism",
            "laplace",
            "-o",
            s(&m),
            "-q",
        ]);
        let e = json(&["eval", s(&m), "--corpus", s(&c), "-q"]);
        let got = e["heldout_ll_per_token"].as_f64().unwrap();
        assert!(
            (got - p).abs() <= band,
            "ε = {eps}: measured {got:.3}, predicted {p:.3} ± {band:.3}"
        );
    }
    assert!(!ledger_of(&c).exists(), "a plan charged the ledger");
}
