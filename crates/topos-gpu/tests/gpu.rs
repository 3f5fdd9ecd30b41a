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

// ---- sparse k-NN (issue 5): the GPU engine against the dense f64 reference that CI checks the
// CPU engine with (topos-distance/tests/support), and against the CPU engine itself.

#[path = "../../topos-distance/tests/support/mod.rs"]
mod reference_support;

mod knn {
    use topos_distance::{
        knn_with, pairwise_distances_with, Backend, CpuBackend, CsrMatrix, KnnOptions, Metric,
    };
    use topos_gpu::distance::CudaBackend;

    // The reference tests' generator, value mix and metric list.
    use super::reference_support::{metrics, value as random_value, Rng};

    /// Rows of the awkward kinds (empty, one non-zero, identical to an earlier row,
    /// near-identical, scaled by 10³ or 10⁻³, full support, constant), the rest sparse with a
    /// Zipf-like column popularity (column 0 in half the rows: long segments next to short).
    fn rows(seed: u64, n: usize, n_cols: usize, signed: bool) -> Vec<Vec<(u32, f32)>> {
        let mut rng = Rng(seed);
        let mut out: Vec<Vec<(u32, f32)>> = Vec::with_capacity(n);
        let value = |rng: &mut Rng| random_value(rng, signed);
        for i in 0..n {
            let mut row: Vec<(u32, f32)> = Vec::new();
            let sparse = |rng: &mut Rng, row: &mut Vec<(u32, f32)>| {
                let len = 1 + rng.below(60);
                let mut cols: Vec<u32> = (0..len)
                    .map(|_| {
                        // Zipf-like: column ~ n_cols^u² (small columns common).
                        let u = rng.unit();
                        ((n_cols as f64).powf(u * u) as usize - 1).min(n_cols - 1) as u32
                    })
                    .collect();
                if rng.below(2) == 0 {
                    cols.push(0);
                }
                cols.sort_unstable();
                cols.dedup();
                row.extend(cols.into_iter().map(|c| (c, value(rng))));
            };
            match i % 12 {
                0 => {}
                1 => row.push((rng.below(n_cols) as u32, value(&mut rng))),
                2 if i > 2 => row = out[rng.below(i)].clone(),
                3 => {
                    sparse(&mut rng, &mut row);
                    row.iter_mut().for_each(|e| e.1 *= 1e3);
                }
                4 => {
                    sparse(&mut rng, &mut row);
                    row.iter_mut().for_each(|e| e.1 *= 1e-3);
                }
                5 if i > 5 => {
                    row = out[rng.below(i)].clone();
                    if let Some(e) = row.first_mut() {
                        e.1 *= 1.0 + 1e-4;
                    }
                }
                6 if i % 120 == 6 => {
                    row = (0..n_cols as u32).map(|c| (c, value(&mut rng))).collect()
                }
                7 if i % 120 == 7 => row = (0..n_cols as u32).map(|c| (c, 2.0)).collect(),
                _ => sparse(&mut rng, &mut row),
            }
            out.push(row);
        }
        out
    }

    fn csr(rows: &[Vec<(u32, f32)>], n_cols: usize) -> CsrMatrix {
        let mut offsets = vec![0u64];
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        for r in rows {
            for &(c, v) in r {
                idx.push(c);
                val.push(v);
            }
            offsets.push(idx.len() as u64);
        }
        CsrMatrix::new(n_cols, offsets, idx, val).unwrap()
    }

    fn same(g: f32, c: f32) -> bool {
        (g.is_nan() && c.is_nan()) || g == c || (g - c).abs() <= 1e-6 * c.abs()
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_knn_and_distances_match_the_dense_reference() {
        let gpu = CudaBackend::open(None).unwrap();
        super::reference_support::check_pairwise(&gpu);
        super::reference_support::check_knn(&gpu);
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_knn_equals_the_cpu_engine_for_every_metric() {
        let gpu = CudaBackend::open(None).unwrap();
        // 2,600 index rows: three tiles of 1,024 (the last one partial).
        let n_cols = 3_000;
        let mut checked = 0usize;
        for metric in metrics() {
            let signed = !metric.requires_non_negative();
            let index_rows = rows(5, 2_600, n_cols, signed);
            let mut query_rows = rows(6, 150, n_cols, signed);
            query_rows.extend(index_rows.iter().step_by(37).cloned());
            let (index, queries) = (csr(&index_rows, n_cols), csr(&query_rows, n_cols));
            for (k, exclude_self, q) in [
                (10, false, &queries),
                (40, false, &queries),
                (7, true, &index),
            ] {
                let opts = KnnOptions {
                    batch_rows: 4096,
                    exclude_self,
                };
                let c = knn_with(&CpuBackend, &index, q, k, metric, &opts).unwrap();
                let g = knn_with(&gpu, &index, q, k, metric, &opts).unwrap();
                assert_eq!(g.len(), c.len());
                for i in 0..c.len() {
                    let ((ci, cd), (gi, gd)) = (c.row(i), g.row(i));
                    for p in 0..k {
                        assert!(
                            same(gd[p], cd[p]),
                            "{metric} k={k} query {i} rank {p}: GPU {} vs CPU {}",
                            gd[p],
                            cd[p]
                        );
                        // Different rows only at a tie (equal distances in f32).
                        assert!(
                            gi[p] == ci[p] || gd[p] == cd[p],
                            "{metric} k={k} query {i} rank {p}: GPU row {} ({}) vs CPU row {} ({})",
                            gi[p],
                            gd[p],
                            ci[p],
                            cd[p]
                        );
                    }
                }
                checked += c.len();
            }
            // Full distance rows (pairwise) on a few queries.
            let few = csr(&query_rows[..20], n_cols);
            let c = pairwise_distances_with(&CpuBackend, &few, &index, metric).unwrap();
            let g = pairwise_distances_with(&gpu, &few, &index, metric).unwrap();
            for (j, (&gv, &cv)) in g.data.iter().zip(&c.data).enumerate() {
                assert!(
                    same(gv, cv),
                    "{metric} pairwise cell {j}: GPU {gv} vs CPU {cv}"
                );
            }
        }
        eprintln!(
            "{checked} query lists equal over {} metrics",
            metrics().len()
        );
        // What the GPU cannot do is refused in one line.
        let index = csr(&rows(7, 300, 50, true), 50);
        let e = gpu
            .prepare(&index, Metric::Cosine)
            .unwrap()
            .knn(&index, 0..10, 257, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 256") && !e.contains('\n'), "{e}");
    }
}
