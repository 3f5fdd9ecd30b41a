//! End-to-end tests of the per-sampler settings (issue 19): `topos train --ezlda-g` is a speed
//! knob (the same model for every g), `--mh-steps` changes the chain (the model and checkpoints
//! record it, and a resume with another value is refused), and a setting given to a sampler
//! that does not take it, or out of its range, is refused in one line.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn corpus(dir: &Path) -> PathBuf {
    let c = dir.join("s.tcorp");
    ok(&[
        "synth",
        "-o",
        s(&c),
        "--docs",
        "500",
        "--vocab",
        "300",
        "--topics",
        "6",
        "--doc-len",
        "40",
        "--holdout",
        "0.1",
        "--quiet",
    ]);
    c
}

/// `topos train CORPUS -k 6 --device cpu -o OUT --quiet EXTRA... --json`.
fn train(corpus: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "train",
        s(corpus),
        "-k",
        "6",
        "--device",
        "cpu",
        "-o",
        s(out),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--iters") {
        args.extend_from_slice(&["--iters", "15"]);
    }
    json(&args)
}

/// A failure with `needle` in its stderr (clap's own errors add a usage hint after the line).
fn refused(args: &[&str], needle: &str) {
    let out = topos(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "topos {args:?} should fail");
    assert!(
        err.contains(needle),
        "error for {args:?} should say {needle:?}: {err}"
    );
}

#[test]
fn ezlda_gives_the_same_model_file_for_every_g() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let default = dir.path().join("default.tmod");
    let summary = train(&c, &default, &["--algo", "ezlda", "--threads", "2"]);
    assert_eq!(summary["sampler_settings"]["ezlda_g"], 2);
    let bytes = std::fs::read(&default).unwrap();
    for g in ["1", "2", "3"] {
        let out = dir.path().join(format!("g{g}.tmod"));
        let summary = train(
            &c,
            &out,
            &["--algo", "ezlda", "--threads", "2", "--ezlda-g", g],
        );
        // The summary says which g ran; the model is the same.
        assert_eq!(summary["sampler_settings"]["ezlda_g"].to_string(), g);
        assert!(
            std::fs::read(&out).unwrap() == bytes,
            "--ezlda-g {g}: another model file"
        );
    }
    // g is not part of the model: its provenance records no setting.
    let topics = json(&["topics", s(&default)]);
    assert!(
        topics["provenance"].get("sampler_settings").is_none(),
        "{}",
        topics["provenance"]
    );
}

#[test]
fn settings_are_refused_where_they_do_not_apply_or_are_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let out = dir.path().join("m.tmod");
    let train = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["train", s(&c), "-k", "6", "-o", s(&out), "--iters", "2"]
            .map(String::from)
            .into();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let args = train(&["--algo", "cgs", "--mh-steps", "8"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails(
        &args,
        "--mh-steps applies to --algo mh only, and this run uses cgs",
    );
    let args = train(&["--mh-steps", "8"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails(&args, "--mh-steps applies to --algo mh only");
    let args = train(&["--algo", "mh", "--ezlda-g", "3"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails(
        &args,
        "--ezlda-g applies to --algo ezlda only, and this run uses mh",
    );
    for (flag, bad, range) in [
        ("--ezlda-g", "0", "from 1 to 16, got 0"),
        ("--ezlda-g", "17", "from 1 to 16, got 17"),
        ("--mh-steps", "0", "from 1 to 64, got 0"),
        ("--mh-steps", "x", "from 1 to 64, got \"x\""),
    ] {
        let args = train(&[flag, bad]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, &format!("{flag} must be a whole number {range}"));
    }
    // The GPU kernel implements g = 2: another g on a named GPU is refused (before any GPU is
    // looked for), and says what to do.
    let args = train(&["--algo", "ezlda", "--ezlda-g", "3", "--device", "cuda"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails(&args, "the GPU kernel implements g = 2");
    assert!(!out.exists(), "a refused run wrote a model");
    // `topos algos` lists each sampler's settings.
    let algos = json(&["algos"]);
    let settings = |name: &str| {
        algos["samplers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap()["settings"]
            .clone()
    };
    assert_eq!(settings("mh")[0]["flag"], "--mh-steps");
    assert_eq!(settings("mh")[0]["default"], 4);
    assert_eq!(settings("mh")[0]["cpu_default"], 2);
    assert_eq!(settings("ezlda")[0]["flag"], "--ezlda-g");
    assert_eq!(settings("ezlda")[0]["default"], 2);
    assert_eq!(settings("cgs"), serde_json::json!([]));
    let text = ok(&["algos"]);
    assert!(
        text.contains("setting --mh-steps 1..64 (default 2 on the CPU, 4 on the GPU)"),
        "{text}"
    );
}

#[test]
fn mh_steps_are_recorded_and_a_resume_with_others_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let four = dir.path().join("four.tmod");
    let eight = dir.path().join("eight.tmod");
    let default = train(&c, &four, &["--algo", "mh", "--iters", "30"]);
    // The summary says what ran: the CPU's default, not the GPU's.
    assert_eq!(default["sampler_settings"]["mh_steps"], 2, "{default}");
    let summary = train(
        &c,
        &eight,
        &["--algo", "mh", "--iters", "30", "--mh-steps", "8"],
    );
    assert_eq!(summary["sampler_settings"]["mh_steps"], 8);
    assert_ne!(
        std::fs::read(&four).unwrap(),
        std::fs::read(&eight).unwrap()
    );
    // The model records 8 (not the default, none given, which leaves the file as before).
    let p = &json(&["topics", s(&eight)])["provenance"];
    assert_eq!(p["sampler_settings"]["mh_steps"], 8, "{p}");
    let p = &json(&["topics", s(&four)])["provenance"];
    assert!(p.get("sampler_settings").is_none(), "{p}");
    // Every reader takes it.
    ok(&["eval", s(&eight), "--corpus", s(&c), "--quiet"]);

    // Killed after its first checkpoint, resumed: refused with the default or another value,
    // and with the checkpoint's value it gives the uninterrupted run's model byte for byte.
    let resumed = dir.path().join("resumed.tmod");
    let ckpt = dir.path().join("mh.ckpt");
    let base: Vec<&str> = vec![
        "train",
        s(&c),
        "-k",
        "6",
        "--iters",
        "30",
        "--device",
        "cpu",
        "-o",
        s(&resumed),
        "--algo",
        "mh",
        "--checkpoint-every",
        "3",
        "--checkpoint",
        s(&ckpt),
        "--quiet",
    ];
    let with = |extra: &[&'static str]| {
        let mut a = base.clone();
        a.extend_from_slice(extra);
        a
    };
    kill_at_first_checkpoint(&with(&["--mh-steps", "8"]), &ckpt);
    fails(
        &with(&["--resume"]),
        "it was made with --mh-steps 8, and this run samples with --mh-steps 2; the chain depends on it, so resume with --mh-steps 8",
    );
    fails(
        &with(&["--resume", "--mh-steps", "2"]),
        "resume with --mh-steps 8",
    );
    ok(&with(&["--resume", "--mh-steps", "8"]));
    assert!(
        std::fs::read(&resumed).unwrap() == std::fs::read(&eight).unwrap(),
        "resumed with --mh-steps 8: not the uninterrupted model"
    );

    // A checkpoint of the CPU's default resumes with that value given (the second attack's row
    // left open), to the model of a run given it throughout; another value is refused.
    kill_at_first_checkpoint(&with(&[]), &ckpt);
    fails(
        &with(&["--resume", "--mh-steps", "3"]),
        "it was made with --mh-steps 2, and this run samples with --mh-steps 3",
    );
    ok(&with(&["--resume", "--mh-steps", "2"]));
    let given = dir.path().join("given.tmod");
    let mut throughout = with(&["--mh-steps", "2"]);
    let at = throughout.iter().position(|a| *a == s(&resumed)).unwrap();
    throughout[at] = s(&given);
    ok(&throughout);
    assert!(
        std::fs::read(&resumed).unwrap() == std::fs::read(&given).unwrap(),
        "resumed with the default given: not the uninterrupted model"
    );
}

/// `--algo mfm` (issue 17 part 3): it trains, the model records its counter width, the same
/// seed gives the same file for any thread count, `--doc-topics` comes from the rows it keeps,
/// and what needs assignments (checkpoints) is refused in one line before anything is written.
#[test]
fn mfm_trains_records_its_counters_and_refuses_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let exact = dir.path().join("exact.tmod");
    let summary = train(
        &c,
        &exact,
        &["--algo", "mfm", "--threads", "1", "--doc-topics"],
    );
    assert_eq!(summary["algorithm"], "mfm");
    assert_eq!(summary["sampler_settings"]["counter_bits"], 32, "{summary}");
    // Exact counters at the default are not recorded; the rows kept are the documents' counts.
    let p = &json(&["topics", s(&exact)])["provenance"];
    assert!(p.get("sampler_settings").is_none(), "{p}");
    let theta = topos_model::DocTopics::read(&topos_model::doc_topics_path(&exact)).unwrap();
    let train_docs = topos_corpus::Corpus::open(&c).unwrap();
    assert_eq!(theta.len(), train_docs.train().len());
    for d in 0..theta.len() {
        let (_, counts) = theta.row(d);
        let n: u32 = counts.iter().sum();
        assert_eq!(n as usize, train_docs.train().doc(d).len(), "document {d}");
    }
    // Two threads: the same model.
    let two = dir.path().join("two.tmod");
    train(&c, &two, &["--algo", "mfm", "--threads", "2"]);
    assert_eq!(std::fs::read(&exact).unwrap(), std::fs::read(&two).unwrap());
    // 8-bit counters: another model, which records them.
    let approx = dir.path().join("approx8.tmod");
    let summary = train(&c, &approx, &["--algo", "mfm", "--counters", "approx8"]);
    assert_eq!(summary["sampler_settings"]["counter_bits"], 8);
    let p = &json(&["topics", s(&approx)])["provenance"];
    assert_eq!(p["sampler_settings"]["counter_bits"], 8, "{p}");
    assert!(ok(&["topics", s(&approx)]).contains("--counters approx8"));
    ok(&["eval", s(&approx), "--corpus", s(&c), "--quiet"]);
    // Every other conditional (the default is `balanced`): a model that records its value and
    // names it, and differs from the default's and from each other's. The paper's draw (kept);
    // the document-only removal (the default until the word's count was corrected too); each
    // token's posterior alone (the default until the balanced one).
    let mut models = vec![std::fs::read(&exact).unwrap()];
    for (own, code) in [("kept", 0), ("document", 1), ("removed", 2)] {
        let path = dir.path().join(format!("{own}.tmod"));
        let summary = train(
            &c,
            &path,
            &["--algo", "mfm", "--threads", "1", "--own-draw", own],
        );
        assert_eq!(summary["sampler_settings"]["own_draw"], code, "{summary}");
        assert!(ok(&["topics", s(&path)]).contains(&format!("--own-draw {own}")));
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !models.contains(&bytes),
            "{own} wrote another value's model"
        );
        models.push(bytes);
    }

    let out = dir.path().join("refused.tmod");
    let base = ["train", s(&c), "-k", "6", "-o", s(&out), "--iters", "4"];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    fails_releasing_nothing(
        &with(&["--algo", "mfm", "--checkpoint-every", "2"]),
        "--algo mfm keeps no topic assignments between iterations",
    );
    fails_releasing_nothing(
        &with(&["--algo", "mfm", "--optimize-priors", "2"]),
        "cannot learn priors",
    );
    fails(
        &with(&["--counters", "approx8"]),
        "--counters applies to --algo mfm only",
    );
    refused(
        &with(&["--algo", "mfm", "--counters", "approx2"]),
        "--counters must be exact, approx8 or approx4",
    );
    fails(
        &with(&["--algo", "cgs", "--own-draw", "kept"]),
        "--own-draw applies to --algo mfm only",
    );
    refused(
        &with(&["--algo", "mfm", "--own-draw", "maybe"]),
        "--own-draw must be balanced, removed, document or kept",
    );
    assert!(!out.exists(), "a refused run wrote a model");
    let text = ok(&["algos"]);
    assert!(
        text.contains("setting --counters exact|approx8|approx4 (default exact)"),
        "{text}"
    );
    assert!(
        text.contains("setting --own-draw balanced|removed|document|kept (default balanced)"),
        "{text}"
    );
}
