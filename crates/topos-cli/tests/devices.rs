//! The GPU-facing commands on a machine without a GPU (CI): a one-line reason, a non-zero exit
//! for `--device cuda`, nothing written, and `auto` training on the CPU.

mod common;
use common::*;

fn has_gpu() -> bool {
    topos_cuda::device::device_count().is_ok_and(|n| n > 0)
}

fn small_corpus(dir: &std::path::Path) -> std::path::PathBuf {
    let corpus = dir.join("c.tcorp");
    ok(&[
        "synth",
        "-o",
        s(&corpus),
        "--docs",
        "60",
        "--vocab",
        "80",
        "--topics",
        "3",
        "--doc-len",
        "20",
        "--quiet",
    ]);
    corpus
}

#[test]
fn devices_reports_the_missing_driver() {
    if has_gpu() {
        return;
    }
    let j = json(&["devices"]);
    assert!(j["devices"].as_array().unwrap().is_empty());
    assert!(j["unavailable"].as_str().unwrap().contains("NVIDIA driver"));
    let text = ok(&["devices"]);
    assert!(text.starts_with("no GPU:"), "{text}");
}

#[test]
fn cuda_without_a_gpu_fails_fast_and_writes_nothing() {
    if has_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    let model = dir.path().join("m.tmod");
    for device in ["cuda", "cuda:1"] {
        fails(
            &[
                "train",
                s(&corpus),
                "--device",
                device,
                "--iters",
                "2",
                "-o",
                s(&model),
            ],
            "no NVIDIA driver found",
        );
        assert!(!model.exists());
    }
    // auto trains on the CPU and says so.
    let j = json(&[
        "train",
        s(&corpus),
        "--iters",
        "2",
        "-k",
        "3",
        "-o",
        s(&model),
        "--quiet",
    ]);
    assert!(j["device"].as_str().unwrap().starts_with("cpu"), "{j}");
    assert!(j["gpu_plan"].is_null());
    assert!(model.exists());
}

#[test]
fn bad_device_and_memory_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    // Argument errors come from clap: its one error line, then its "--help" hint.
    for (args, needle) in [
        (["--device", "tpu"], "auto, cpu, cuda, cuda:N or cuda:all"),
        (["--gpu-memory", "lots"], "not a size"),
        (["--gpu-memory", "3 parsecs"], "unknown size unit"),
    ] {
        let out = topos(&["train", s(&corpus), args[0], args[1]]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.lines().next().unwrap().contains(needle), "{err}");
    }
    fails(
        &[
            "train",
            s(&corpus),
            "--device",
            "cuda",
            "--private",
            "--epsilon",
            "1",
            "--max-doc-tokens",
            "10",
        ],
        "CPU only",
    );
}
