//! GPU tests: ignored by default (CI has no GPU); `bench/gpu.sh` runs them on the device machine
//! with `--ignored`.

use topos_gpu::word_topics::WordTopicFormat;
use topos_gpu::{GpuOptions, GpuSession};
use topos_model::Hyperparameters;
use topos_train::synthetic::{generate, recovery, SyntheticSpec, TopicShape};
use topos_train::{Algorithm, Session, TrainOptions, Trainer};

fn spec(seed: u64, docs: usize) -> SyntheticSpec {
    SyntheticSpec {
        num_docs: docs,
        num_words: 500,
        num_topics: 8,
        mean_doc_len: 80,
        alpha: 0.1,
        shape: TopicShape::Dirichlet { beta: 0.05 },
        seed,
    }
}

fn options(algorithm: Algorithm, k: u32) -> TrainOptions {
    TrainOptions {
        algorithm,
        hyper: Hyperparameters::new(k, Some(0.1), Some(0.01)).unwrap(),
        seed: 17,
        threads: 0,
        partitions: None,
        corpus_checksum: 1,
    }
}

fn assignments(s: &mut GpuSession<'_>) -> Vec<u16> {
    s.checkpoint().unwrap().assignments
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn both_gpu_samplers_recover_known_topics() {
    let s = spec(3, 400);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let untrained = Trainer::new(docs, s.num_words, options(algo, 8)).unwrap();
        let before = recovery(&corpus.topics, untrained.word_topics(), 0.01);
        let ll_before = untrained.log_likelihood();
        let mut g = GpuSession::new(
            docs,
            s.num_words,
            options(algo, 8),
            GpuOptions::default(),
            None,
        )
        .unwrap();
        for _ in 0..150 {
            g.step().unwrap();
        }
        let ll = g.log_likelihood().unwrap();
        let model = g.checkpoint().unwrap();
        let host = Trainer::resume(docs, s.num_words, options(algo, 8), model).unwrap();
        let after = recovery(&corpus.topics, host.word_topics(), 0.01);
        eprintln!(
            "gpu {algo:?}: JS before {:.3}, after mean {:.4} worst {:.4}; LL {ll_before:.3} -> {ll:.3}",
            before.mean, after.mean, after.worst
        );
        assert!(before.mean > 0.2);
        after.assert_recovered(&format!("gpu {algo:?}"));
        assert!(ll > ll_before + 0.5);
        // The GPU reaches at least the CPU sampler's quality from the same start (the GPU cgs,
        // all tokens against the previous iteration's counts, often ends higher than the CPU's
        // AD-LDA partitions on this small corpus).
        let mut cpu = Trainer::new(docs, s.num_words, options(algo, 8)).unwrap();
        for _ in 0..150 {
            cpu.step();
        }
        let cpu_ll = cpu.log_likelihood();
        eprintln!("gpu {algo:?} LL {ll:.4}, cpu {cpu_ll:.4}");
        assert!(ll > cpu_ll - 0.02, "gpu {ll} vs cpu {cpu_ll}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streamed_and_partitioned_runs_equal_the_resident_run() {
    let s = spec(7, 3000);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let run = |gpu: GpuOptions| {
            let mut g = GpuSession::new(docs, s.num_words, options(algo, 20), gpu, None).unwrap();
            for _ in 0..8 {
                g.step().unwrap();
            }
            let chunks = g.partitions();
            (assignments(&mut g), chunks, g.plan().mode)
        };
        let (one, c1, m1) = run(GpuOptions::default());
        let (many, c2, m2) = run(GpuOptions {
            partition_tokens: Some(20_000),
            ..Default::default()
        });
        let (streamed, c3, m3) = run(GpuOptions {
            force_streaming: true,
            ..Default::default()
        });
        eprintln!("{algo:?}: resident {c1} chunk(s) {m1:?}, {c2} partitions {m2:?}, streamed {c3} chunks {m3:?}");
        assert_eq!(c1, 1);
        assert!(c2 > 4);
        assert_eq!(m3, topos_gpu::plan::Mode::Streamed);
        assert!(c3 >= 2);
        assert!(
            one == many,
            "{algo:?}: partitioning changed the assignments"
        );
        assert!(
            one == streamed,
            "{algo:?}: streaming changed the assignments"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hybrid_word_topics_give_the_dense_runs_assignments() {
    // K = 512 over 500 words of about 320 tokens each: most rows are hashed (fewer than 256
    // tokens), the frequent ones dense. The hashed rows are scattered into the same leaves, so
    // every draw is the dense run's, bit for bit, resident or streamed.
    let s = spec(13, 2000);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let run = |gpu: GpuOptions| {
            let mut g = GpuSession::new(docs, s.num_words, options(algo, 512), gpu, None).unwrap();
            assert_eq!(Some(g.plan().format), gpu.word_topics);
            for _ in 0..8 {
                g.step().unwrap();
            }
            (assignments(&mut g), g.log_likelihood().unwrap())
        };
        let format = |f| GpuOptions {
            word_topics: Some(f),
            ..Default::default()
        };
        let (dense, ll_dense) = run(format(WordTopicFormat::Dense));
        let (hybrid, ll_hybrid) = run(format(WordTopicFormat::Hybrid));
        let (streamed, _) = run(GpuOptions {
            force_streaming: true,
            ..format(WordTopicFormat::Hybrid)
        });
        // 64-bit doc-topic row entries (documents of 65,536 tokens or more) draw the same.
        let (wide, _) = run(GpuOptions {
            force_wide_rows: true,
            ..format(WordTopicFormat::Dense)
        });
        assert!(
            dense == wide,
            "{algo:?}: 64-bit row entries changed the draws"
        );
        eprintln!("{algo:?} K=512: LL dense {ll_dense:.4}, hybrid {ll_hybrid:.4}");
        assert!(dense == hybrid, "{algo:?}: hybrid rows changed the draws");
        assert!(
            dense == streamed,
            "{algo:?}: streamed hybrid rows changed the draws"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn same_seed_same_assignments_and_a_model_file_that_evaluates() {
    let s = spec(9, 500);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    let run = || {
        let mut g = GpuSession::new(
            docs,
            s.num_words,
            options(Algorithm::Esca, 8),
            GpuOptions::default(),
            None,
        )
        .unwrap();
        for _ in 0..5 {
            g.step().unwrap();
        }
        assignments(&mut g)
    };
    assert!(run() == run());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_k_runs() {
    // K = 32,768 needs 128 KiB of shared memory per block for the tree.
    let s = spec(11, 300);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for (k, format) in [
        (10_000u32, WordTopicFormat::Dense),
        (32_768, WordTopicFormat::Dense),
        (32_768, WordTopicFormat::Hybrid),
    ] {
        let gpu = GpuOptions {
            word_topics: Some(format),
            ..Default::default()
        };
        let mut g =
            GpuSession::new(docs, s.num_words, options(Algorithm::Esca, k), gpu, None).unwrap();
        let ll0 = g.log_likelihood().unwrap();
        for _ in 0..20 {
            g.step().unwrap();
        }
        let ll = g.log_likelihood().unwrap();
        eprintln!("K={k} {format}: LL {ll0:.3} -> {ll:.3}");
        assert!(ll > ll0, "K={k}: {ll0} -> {ll}");
    }
}
