//! Multi-process training under `mpirun` (issue 20): built only with `--features mpi`, run by
//! `.ci/run` after it installs Open MPI. Every test starts real processes through `mpirun
//! --oversubscribe` on this machine's cores.
#![cfg(feature = "mpi")]

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// `mpirun -np N topos ARGS` (as root too, oversubscribed, shared memory without the
/// cross-memory-attach that containers forbid), with `env` set for every process.
fn mpirun(np: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_topos"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run mpirun (Open MPI installed?)")
}

fn mpi_ok(np: usize, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let out = mpirun(np, args, env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mpirun -np {np} topos {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One JSON document, from the first process only.
    assert_eq!(stdout.trim().lines().count(), 1, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

const THEMES: [&str; 4] = [
    "apple banana cherry grape lemon mango orange peach plum melon",
    "engine wheel brake clutch piston gear axle tire motor chassis",
    "violin piano cello flute oboe drum harp trumpet viola guitar",
    "granite basalt quartz marble slate shale chalk flint gneiss schist",
];

fn corpus(dir: &Path) -> std::path::PathBuf {
    let txt = write_themes(dir, "themes", &THEMES, 700, 30, 3);
    prepare_text(&txt, &dir.join("themes.tcorp"), "0.1", &[])
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn several_processes_train_the_model_of_one_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    for algo in ["cgs", "fcgs", "esca", "ezlda"] {
        let one = dir.path().join(format!("{algo}-1.tmod"));
        let args = |out: &Path| {
            vec![
                "train".to_string(),
                s(&c).to_string(),
                "-k".into(),
                "6".into(),
                "--iters".into(),
                "8".into(),
                "--eval-every".into(),
                "4".into(),
                "--algo".into(),
                algo.into(),
                "--device".into(),
                "cpu".into(),
                "--threads".into(),
                "1".into(),
                "--doc-topics".into(),
                "-o".into(),
                s(out).to_string(),
                "--json".into(),
            ]
        };
        let a1 = args(&one);
        let single = json(&a1.iter().map(String::as_str).collect::<Vec<_>>()[..a1.len() - 1]);
        assert_eq!(single["workers"], 1);
        // Each way of exchanging the counts (chosen by the bytes it moves, or forced).
        for (np, way) in [(2, "dense"), (2, "sparse"), (3, "auto")] {
            let many = dir.path().join(format!("{algo}-{np}-{way}.tmod"));
            let a = args(&many);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let summary = mpi_ok(np, &a, &[("TOPOS_EXCHANGE", way)]);
            assert_eq!(summary["workers"], np, "{summary}");
            let exchange = &summary["exchange"];
            if way != "auto" {
                // The start's exchange and one an iteration.
                assert_eq!(exchange[way], 9, "{exchange}");
            }
            assert_eq!(summary["transport"], "mpi");
            assert_eq!(
                summary["device"],
                format!("cpu (1 thread) in each of {np} processes")
            );
            assert_eq!(read(&one), read(&many), "{algo}: {np} processes");
            let side = |p: &Path| read(&topos_model::doc_topics_path(p));
            assert_eq!(
                side(&one),
                side(&many),
                "{algo}: doc-topics, {np} processes"
            );
            for key in ["train_ll", "heldout_ll"] {
                assert_eq!(single[key], summary[key], "{algo} {key}, {np} processes");
            }
            if algo == "cgs" {
                // Its model depends on the partitions: the processes share the single
                // process's (ESCA's does not, and each process picks its own).
                assert_eq!(single["partitions"], summary["partitions"]);
            }
            assert!(summary["communicated_bytes"].as_u64().unwrap() > 0);
            assert!(summary["phases"]["communication"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn a_failing_process_ends_the_run_naming_it_and_resume_takes_another_count() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let reference = dir.path().join("ref.tmod");
    let model = dir.path().join("m.tmod");
    let ckpt = dir.path().join("m.tmod.ckpt");
    let base = [
        "train",
        s(&c),
        "-k",
        "5",
        "--iters",
        "7",
        "--algo",
        "cgs",
        "--device",
        "cpu",
        "--threads",
        "1",
        "-q",
    ];
    let mut a = base.to_vec();
    a.extend(["-o", s(&reference)]);
    ok(&a);

    // Process 1 of 2 fails while sampling iteration 4; the checkpoint of iteration 2 stays.
    let mut a = base.to_vec();
    a.extend(["-o", s(&model), "--checkpoint-every", "2"]);
    let started = std::time::Instant::now();
    let out = mpirun(2, &a, &[("TOPOS_FAULT", "1:4")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("error: process 1 of 2: injected fault"),
        "the failing process is named: {err}"
    );
    assert!(started.elapsed().as_secs() < 60, "the run ended promptly");
    assert!(!model.exists(), "no model from a failed run");
    assert!(ckpt.exists(), "the last checkpoint is kept");

    // Resumed with 3 processes: the model of one uninterrupted process.
    let mut a = base.to_vec();
    a.extend(["-o", s(&model), "--checkpoint-every", "2", "--resume"]);
    let out = mpirun(3, &a, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&reference), read(&model));
    assert!(
        !ckpt.exists(),
        "the checkpoint is removed with the model in place"
    );
}

#[test]
fn a_launch_the_build_cannot_share_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let out_path = dir.path().join("x.tmod");
    let args = [
        "train",
        s(&c),
        "-k",
        "3",
        "--iters",
        "2",
        "--transport",
        "local",
        "-o",
        s(&out_path),
    ];
    let out = mpirun(2, &args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("would use one process"), "{err}");
    assert!(!out_path.exists());
    // Private training is one process's.
    let args = [
        "train",
        s(&c),
        "-k",
        "3",
        "--iters",
        "2",
        "--private",
        "--epsilon",
        "5",
        "--max-doc-tokens",
        "50",
        "-o",
        s(&out_path),
    ];
    let out = mpirun(2, &args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--private runs in one process"), "{err}");
}

/// Learned priors (`--optimize-priors`) under several processes: each sends the histograms of
/// its documents' topic counts, and the priors, so the model, are the single process's.
#[test]
fn several_processes_learn_the_priors_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let args = |out: &Path| {
        vec![
            "train".to_string(),
            s(&c).to_string(),
            "-k".into(),
            "6".into(),
            "--iters".into(),
            "12".into(),
            "--alpha".into(),
            "0.3".into(),
            "--optimize-priors".into(),
            "3".into(),
            "--optimize-burn-in".into(),
            "2".into(),
            "--device".into(),
            "cpu".into(),
            "--threads".into(),
            "1".into(),
            "-o".into(),
            s(out).to_string(),
            "--json".into(),
        ]
    };
    let one = dir.path().join("one.tmod");
    let a1 = args(&one);
    let single = json(&a1.iter().map(String::as_str).collect::<Vec<_>>()[..a1.len() - 1]);
    assert!(single["alpha"].is_array(), "{single}");
    let many = dir.path().join("three.tmod");
    let a = args(&many);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let summary = mpi_ok(3, &a, &[]);
    assert_eq!(summary["alpha"], single["alpha"]);
    assert_eq!(summary["beta"], single["beta"]);
    assert_eq!(read(&one), read(&many), "3 processes");
}

#[test]
fn several_processes_train_the_mfm_model_of_one_byte_for_byte() {
    // mfm keeps no assignments: each process keeps its documents' rows and the processes sum
    // the words' exact counts before each rounds them alike (samplers/mfm/cpu.rs).
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    for counters in ["exact", "approx8"] {
        let args = |out: &Path| {
            let mut a: Vec<String> = [
                "train",
                s(&c),
                "-k",
                "6",
                "--iters",
                "8",
                "--eval-every",
                "4",
                "--algo",
                "mfm",
                "--counters",
                counters,
                "--device",
                "cpu",
                "--threads",
                "1",
                "--doc-topics",
            ]
            .map(String::from)
            .into();
            a.extend(["-o".to_string(), s(out).to_string(), "--json".to_string()]);
            a
        };
        let one = dir.path().join(format!("mfm-{counters}-1.tmod"));
        let a1 = args(&one);
        let single = json(&a1.iter().map(String::as_str).collect::<Vec<_>>()[..a1.len() - 1]);
        for np in [2, 3] {
            let many = dir.path().join(format!("mfm-{counters}-{np}.tmod"));
            let a = args(&many);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let summary = mpi_ok(np, &a, &[]);
            assert_eq!(summary["workers"], np, "{summary}");
            assert_eq!(read(&one), read(&many), "mfm {counters}: {np} processes");
            let side = |p: &Path| read(&topos_model::doc_topics_path(p));
            assert_eq!(
                side(&one),
                side(&many),
                "mfm {counters}: doc-topics, {np} processes"
            );
            for key in ["train_ll", "heldout_ll"] {
                assert_eq!(single[key], summary[key], "mfm {key}, {np} processes");
            }
            assert!(summary["communicated_bytes"].as_u64().unwrap() > 0);
        }
    }
}
