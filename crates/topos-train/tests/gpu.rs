//! GPU tests of the LDA engine: ignored by default (CI has no GPU); `bench/gpu.sh check` runs them
//! on the device machine with `--ignored`.
#![cfg(feature = "cuda")]

use topos_corpus::{Corpus, OwnedDocs, Vocabulary};
use topos_model::{Hyperparameters, TopicModel};
use topos_train::cpu::engine::initial_assignments;
use topos_train::cuda::plan::CountCopies;
use topos_train::cuda::CudaEngine;
use topos_train::engine::read_all_rows;
use topos_train::run::Silent;
use topos_train::sampler::Sampler;
use topos_train::samplers::{cgs::Cgs, esca::Esca, ezlda::Ezlda, fcgs::Fcgs, mh::Mh};
use topos_train::synthetic::{generate, recovery, SyntheticSpec, TopicShape};
use topos_train::transport::Local;
use topos_train::{
    DeviceChoice, DeviceOptions, Engine, EngineSetup, Run, RunConfig, Start, TrainDocs,
    TrainOptions, Trainer,
};

mod conditional;

const SAMPLERS: [&dyn Sampler; 4] = [&Esca, &Cgs, &Ezlda, &Mh];

fn spec(seed: u64, docs: usize) -> SyntheticSpec {
    SyntheticSpec {
        num_docs: docs,
        num_words: 500,
        num_topics: 8,
        mean_doc_len: 80,
        alpha: topos_model::Alpha::symmetric(8, 0.1),
        shape: TopicShape::Dirichlet { beta: 0.05 },
        seed,
    }
}

fn hyper(k: u32) -> Hyperparameters {
    Hyperparameters::new(k, Some(0.1), Some(0.01)).unwrap()
}

fn setup(
    docs: &TrainDocs,
    v: usize,
    sampler: &'static dyn Sampler,
    k: u32,
    device: DeviceOptions,
) -> EngineSetup {
    EngineSetup {
        docs: docs.clone(),
        num_words: v,
        sampler,
        hyper: hyper(k),
        seed: 17,
        threads: 4,
        partitions: None,
        settings: Default::default(),
        start: Start::Fresh,
        device,
        transport: std::sync::Arc::new(Local),
        fixed_counts: None,
    }
}

fn gpu(
    docs: &TrainDocs,
    v: usize,
    sampler: &'static dyn Sampler,
    k: u32,
    device: DeviceOptions,
) -> CudaEngine {
    CudaEngine::open(None, setup(docs, v, sampler, k, device)).unwrap()
}

/// Whole iterations, as the run drives them (an engine group runs them on its crew).
fn step(e: &mut dyn Engine, iterations: u32) {
    for _ in 0..iterations {
        e.iterate(&Local).unwrap();
    }
}

fn topics(e: &mut dyn Engine, tokens: u64) -> Vec<u16> {
    let mut z = vec![0u16; tokens as usize];
    e.assignments(0, &mut z).unwrap();
    z
}

fn cpu(docs: &TrainDocs, v: usize, sampler: &'static dyn Sampler, k: u32) -> Trainer {
    Trainer::new(
        docs.clone(),
        v,
        TrainOptions {
            sampler,
            hyper: hyper(k),
            seed: 17,
            threads: 0,
            partitions: None,
            settings: Default::default(),
        },
    )
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_starts_where_the_cpu_does_and_agrees_on_the_likelihood() {
    let s = spec(2, 700);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let tokens = docs.view().num_tokens();
    for (k, streamed) in [(8, false), (1000, false), (8, true)] {
        let mut g = gpu(
            &docs,
            s.num_words,
            &Esca,
            k,
            DeviceOptions {
                force_streaming: streamed,
                ..Default::default()
            },
        );
        // Initial assignments drawn on the device: the CPU's, token for token.
        assert!(
            topics(&mut g, tokens) == initial_assignments(tokens, k, 17),
            "K={k} streamed={streamed}"
        );
        let mut c = cpu(&docs, s.num_words, &Esca, k);
        // The counts, read back piece by piece, are the CPU's.
        assert_eq!(
            read_all_rows(&mut g, s.num_words).unwrap(),
            *c.word_topics()
        );
        // The training log-likelihood computed on the device agrees with the CPU's.
        let (lg, lc) = (
            g.log_likelihood().unwrap(),
            Engine::log_likelihood(&mut c).unwrap(),
        );
        eprintln!("K={k} streamed={streamed}: LL gpu {lg:.9} cpu {lc:.9}");
        assert!((lg - lc).abs() < 1e-6, "{lg} vs {lc}");
        step(&mut g, 3);
        let z = topics(&mut g, tokens);
        let rows = read_all_rows(&mut g, s.num_words).unwrap();
        // The device's counts are the counts of its assignments.
        let ckpt = topos_train::Checkpoint {
            header: topos_train::CheckpointHeader {
                algorithm: "esca".into(),
                num_topics: k,
                alpha: 0.1,
                beta: 0.01,
                seed: 17,
                partitions: 1,
                corpus_checksum: 0,
                iteration: 3,
                priors: None,
                fixed_counts: None,
                sampler_settings: Default::default(),
            },
            assignments: z,
        };
        let mut from_z = Trainer::open(
            docs.clone(),
            s.num_words,
            TrainOptions {
                sampler: &Esca,
                hyper: hyper(k),
                seed: 17,
                threads: 0,
                partitions: None,
                settings: Default::default(),
            },
            Start::Resume(ckpt),
        )
        .unwrap();
        assert_eq!(rows, *from_z.word_topics());
        let (lg, lc) = (
            g.log_likelihood().unwrap(),
            Engine::log_likelihood(&mut from_z).unwrap(),
        );
        assert!((lg - lc).abs() < 1e-6, "after 3 iterations: {lg} vs {lc}");
    }
}

/// The GPU's fcgs (and cgs, the same kernel) draws each token from the collapsed Gibbs
/// conditional with its own assignment removed, given the previous iteration's state (the CPU
/// twin of this test is `fcgs_draws_each_token_from_the_collapsed_conditional` in
/// tests/samplers.rs). One chain: at each iteration the new topics are independent draws given
/// the previous state, so for every token and topic Σ_t (1[z_t = k] − p_t(k)) is a martingale
/// with variance Σ_t p_t(k)(1 − p_t(k)); |z| < 5 in each of the 27 cells and in the count of draws
/// that keep the old topic (one more unit of
/// variance for the cells of tiny expectation). Two settings: moderate priors, and tiny ones with
/// a lone token of a rare word, where the rejection gives up and the target is drawn directly.
/// ESCA is the control with the moderate priors: it must fail.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fcgs_draws_each_token_from_the_collapsed_conditional() {
    let corpus_docs: [&[u32]; 4] = [&[0, 1, 0], &[1, 2], &[2, 0, 1], &[3]];
    let owned: OwnedDocs = corpus_docs.iter().copied().collect();
    let (v, k) = (4usize, 3usize);
    let n = owned.view().tokens().len();
    let docs = TrainDocs::from(owned);
    let z_max = |algo: &'static dyn Sampler, alpha: f64, beta: f64, steps: usize| -> f64 {
        let setup = EngineSetup {
            hyper: Hyperparameters::new(k as u32, Some(alpha), Some(beta)).unwrap(),
            ..setup(&docs, v, algo, k as u32, DeviceOptions::default())
        };
        let mut e = CudaEngine::open(None, setup).unwrap();
        let mut tally = conditional::Tally::new(&corpus_docs, v, k);
        let mut z0 = topics(&mut e, n as u64);
        for _ in 0..steps {
            step(&mut e, 1);
            let z1 = topics(&mut e, n as u64);
            tally.add(&z0, &z1, &[alpha; 3], beta);
            z0 = z1;
        }
        tally.largest_z()
    };
    for (i, (alpha, beta)) in [(0.5, 0.2), (0.001, 0.001)].into_iter().enumerate() {
        for algo in [&Fcgs as &dyn Sampler, &Cgs] {
            let z = z_max(algo, alpha, beta, 6_000);
            eprintln!("gpu {algo:?} α {alpha} β {beta}: largest |z| {z:.2}");
            assert!(
                z < 5.0,
                "gpu {algo:?} does not draw the conditional: |z| = {z}"
            );
        }
        if i == 0 {
            let esca = z_max(&Esca, alpha, beta, 6_000);
            eprintln!("gpu esca (control) α {alpha} β {beta}: largest |z| {esca:.2}");
            assert!(esca > 8.0, "the control (esca) passed: |z| = {esca}");
        }
    }
}

/// ezlda on the GPU draws each token from the exact collapsed conditional, as fcgs does (the
/// same Tally and bound as the test above), whether it takes the third branch before reading the
/// row (skipped), after it, or draws in full. The corpus has a long document whose tokens settle
/// on one topic, so that the skip is taken often; the test checks that it was, and that tokens
/// were also drawn in full.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_ezlda_draws_each_token_from_the_collapsed_conditional() {
    let corpus_docs: [&[u32]; 5] = [
        &[0, 1, 0],
        &[1, 2],
        &[2, 0, 1],
        &[3],
        &[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0],
    ];
    let owned: OwnedDocs = corpus_docs.iter().copied().collect();
    let (v, k) = (4usize, 3usize);
    let n = owned.view().tokens().len();
    let docs = TrainDocs::from(owned);
    for (alpha, beta) in [(0.5, 0.2), (0.05, 0.05), (0.001, 0.001)] {
        let setup = EngineSetup {
            hyper: Hyperparameters::new(k as u32, Some(alpha), Some(beta)).unwrap(),
            ..setup(&docs, v, &Ezlda, k as u32, DeviceOptions::default())
        };
        let mut e = CudaEngine::open(None, setup).unwrap();
        let mut tally = conditional::Tally::new(&corpus_docs, v, k);
        let mut z0 = topics(&mut e, n as u64);
        let (mut skipped, mut in_m) = (0u64, 0u64);
        let steps = 6_000u64;
        for _ in 0..steps {
            step(&mut e, 1);
            let c = e.sweep_counters().expect("ezlda reports its skips");
            assert_eq!(c.tokens, n as u64);
            skipped += c.skipped_construction;
            in_m += c.skipped_final;
            let z1 = topics(&mut e, n as u64);
            tally.add(&z0, &z1, &[alpha; 3], beta);
            z0 = z1;
        }
        let z = tally.largest_z();
        let total = steps * n as u64;
        eprintln!(
            "gpu ezlda α {alpha} β {beta}: largest |z| {z:.2}; skipped the row {:.1}%, the final draw {:.1}%",
            100.0 * skipped as f64 / total as f64,
            100.0 * in_m as f64 / total as f64
        );
        assert!(
            z < 5.0,
            "gpu ezlda does not draw the conditional: |z| = {z}"
        );
        assert!(skipped > 0 && in_m >= skipped && in_m < total);
    }
}

/// mh on the GPU (`sample_mh`) leaves each token's exact collapsed conditional
/// p(k) ∝ (A⁻_dk + α)(B⁻_wk + β)/(n⁻_k + Vβ) invariant: the device twin of
/// `mh_leaves_the_exact_collapsed_conditional_invariant` in tests/samplers.rs, on the same tiny
/// corpus and state. The counts stay those of the state z0; every trial starts each token's chain
/// from an exact draw of its conditional (`CudaEngine::mh_sweep_from`, the state restored after
/// each sweep), runs one sweep of the default 4 proposal pairs with the trial's own random
/// numbers (the iteration keys them), and the topics it ends on must again follow p. The
/// statistical test is the CPU's: per (token, topic) cell and in the count of draws that equal
/// the token's assignment, observed minus expected over the standard deviation of a sum of
/// independent Bernoulli trials (plus one unit of variance), |z| < 5 over 28 cells per setting, a
/// false alarm about once in 10⁵ runs under the normal approximation. Two symmetric priors (the
/// GPU takes one α): moderate, and small α with tiny β (sparse proposals). The control runs the
/// kernel with Eq. (2.2) for the counts with the token's own assignment kept (WarpLDA's
/// simplification, `own_kept`): its chain targets another distribution and must fail (|z| > 8).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mh_leaves_the_exact_collapsed_conditional_invariant() {
    let corpus_docs: [&[u32]; 4] = [&[0, 1, 0, 3], &[1, 2], &[2, 0, 1], &[3]];
    let owned: OwnedDocs = corpus_docs.iter().copied().collect();
    let docs = TrainDocs::from(owned);
    let (v, k) = (4usize, 3usize);
    let z0: Vec<u16> = vec![0, 1, 1, 2, 0, 2, 1, 0, 2, 1];
    let doc_of: Vec<usize> = vec![0, 0, 0, 0, 1, 1, 2, 2, 2, 3];
    let words: Vec<u32> = corpus_docs.iter().flat_map(|d| d.iter().copied()).collect();
    // The exact conditional of every token given the others (independent of its own topic).
    let conditional = |alpha: f64, beta: f64| -> Vec<Vec<f64>> {
        (0..z0.len())
            .map(|i| {
                let w: Vec<f64> = (0..k)
                    .map(|t| {
                        let (mut a, mut b, mut n) = (0.0, 0.0, 0.0);
                        for j in (0..z0.len()).filter(|&j| j != i && z0[j] as usize == t) {
                            a += f64::from(u8::from(doc_of[j] == doc_of[i]));
                            b += f64::from(u8::from(words[j] == words[i]));
                            n += 1.0;
                        }
                        (a + alpha) * (b + beta) / (n + v as f64 * beta)
                    })
                    .collect();
                let total: f64 = w.iter().sum();
                w.iter().map(|x| x / total).collect()
            })
            .collect()
    };
    let trials = 20_000u32;
    for (alpha, beta) in [(0.3, 0.2), (0.1, 0.01)] {
        let p = conditional(alpha, beta);
        let ckpt = topos_train::Checkpoint {
            header: topos_train::CheckpointHeader {
                algorithm: "mh".into(),
                num_topics: k as u32,
                alpha,
                beta,
                seed: 17,
                partitions: 1,
                corpus_checksum: 0,
                iteration: 0,
                priors: None,
                fixed_counts: None,
                sampler_settings: Default::default(),
            },
            assignments: z0.clone(),
        };
        let setup = EngineSetup {
            hyper: Hyperparameters::new(k as u32, Some(alpha), Some(beta)).unwrap(),
            start: Start::Resume(ckpt),
            ..setup(&docs, v, &Mh, k as u32, DeviceOptions::default())
        };
        let mut e = CudaEngine::open(None, setup).unwrap();
        let mut z_max = |own_kept: bool| -> f64 {
            let mut tally = conditional::Tally::new(&corpus_docs, v, k);
            for trial in 0..trials {
                let starts = conditional::chain_starts(&p, u64::from(trial));
                let z1 = e.mh_sweep_from(&starts, trial + 1, own_kept).unwrap();
                tally.add(&z0, &z1, &[alpha; 3], beta);
            }
            tally.largest_z()
        };
        let exact = z_max(false);
        let control = z_max(true);
        // The state was restored after every trial.
        assert!(topics(&mut e, z0.len() as u64) == z0);
        eprintln!("gpu mh α {alpha} β {beta}: largest |z| exact {exact:.2}, control {control:.2}");
        assert!(
            exact < 5.0,
            "gpu mh's steps do not leave the conditional invariant: |z| = {exact}"
        );
        assert!(
            control > 8.0,
            "the control (own assignment kept) passed: |z| = {control}; the test cannot fail"
        );
    }
}

/// mh on the GPU recovers a synthetic corpus's known topics (as the CPU's does in
/// tests/samplers.rs: the most likely of five chains, since mh's chains stay in a local mode of
/// this corpus more often than cgs's), and its `--mh-steps` reaches the kernel: at 2 pairs a
/// token the model differs from the default 4's, and is the same resident in one chunk, in many
/// partitions, and streamed through the device (`--gpu-memory`'s path).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mh_recovers_known_topics_and_streams_to_the_resident_model() {
    let s = spec(3, 400);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let untrained = cpu(&docs, s.num_words, &Mh, 8);
    let before = recovery(&corpus.topics, untrained.word_topics(), 0.01);
    let ll_before = untrained.log_likelihood();
    let (ll, rows) = (17..22)
        .map(|seed| {
            let mut st = setup(&docs, s.num_words, &Mh, 8, DeviceOptions::default());
            st.seed = seed;
            let mut g = CudaEngine::open(None, st).unwrap();
            step(&mut g, 150);
            let ll = g.log_likelihood().unwrap();
            eprintln!("gpu mh seed {seed}: LL {ll:.4}");
            (ll, read_all_rows(&mut g, s.num_words).unwrap())
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .expect("chains");
    let after = recovery(&corpus.topics, &rows, 0.01);
    eprintln!(
        "gpu mh: JS before {:.3}, after mean {:.4} worst {:.4}; LL {ll_before:.3} -> {ll:.3}",
        before.mean, after.mean, after.worst
    );
    assert!(before.mean > 0.2);
    after.assert_recovered("gpu mh");
    assert!(ll > ll_before + 0.5);

    let s = spec(7, 3000);
    let docs = TrainDocs::from(generate(&s).docs);
    let tokens = docs.view().num_tokens();
    let run = |steps: u32, device: DeviceOptions| {
        let mut st = setup(&docs, s.num_words, &Mh, 20, device);
        st.settings
            .set(&topos_train::samplers::mh::MH_STEPS_SETTING, steps)
            .unwrap();
        let mut g = CudaEngine::open(None, st).unwrap();
        step(&mut g, 8);
        let streamed = g.plan().unwrap()["streamed"].as_bool().unwrap();
        (topics(&mut g, tokens), g.partitions(), streamed)
    };
    let (one, c1, s1) = run(2, DeviceOptions::default());
    let (many, c2, s2) = run(
        2,
        DeviceOptions {
            partition_tokens: Some(20_000),
            ..Default::default()
        },
    );
    let (streamed, c3, s3) = run(
        2,
        DeviceOptions {
            force_streaming: true,
            ..Default::default()
        },
    );
    let (four, _, _) = run(4, DeviceOptions::default());
    eprintln!("gpu mh --mh-steps 2: resident {c1} chunk(s), {c2} partitions, streamed {c3} chunks");
    assert_eq!((c1, s1, s2, s3), (1, false, false, true));
    assert!(c2 > 4 && c3 >= 2);
    assert!(one == many, "partitioning changed mh's assignments");
    assert!(one == streamed, "streaming changed mh's assignments");
    assert!(one != four, "--mh-steps did not reach the kernel");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn both_gpu_samplers_recover_known_topics() {
    let s = spec(3, 400);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    // mh: `gpu_mh_recovers_known_topics_and_streams_to_the_resident_model` (best of five chains,
    // as its CPU test).
    for algo in SAMPLERS.into_iter().filter(|a| a.name() != "mh") {
        let untrained = cpu(&docs, s.num_words, algo, 8);
        let before = recovery(&corpus.topics, untrained.word_topics(), 0.01);
        let ll_before = untrained.log_likelihood();
        let mut g = gpu(&docs, s.num_words, algo, 8, DeviceOptions::default());
        step(&mut g, 150);
        let ll = g.log_likelihood().unwrap();
        let rows = read_all_rows(&mut g, s.num_words).unwrap();
        let after = recovery(&corpus.topics, &rows, 0.01);
        eprintln!(
            "gpu {algo:?}: JS before {:.3}, after mean {:.4} worst {:.4}; LL {ll_before:.3} -> {ll:.3}",
            before.mean, after.mean, after.worst
        );
        assert!(before.mean > 0.2);
        after.assert_recovered(&format!("gpu {algo:?}"));
        assert!(ll > ll_before + 0.5);
        // The GPU reaches at least the CPU sampler's quality from the same start.
        let mut c = cpu(&docs, s.num_words, algo, 8);
        for _ in 0..150 {
            c.step();
        }
        let cpu_ll = c.log_likelihood();
        eprintln!("gpu {algo:?} LL {ll:.4}, cpu {cpu_ll:.4}");
        assert!(ll > cpu_ll - 0.02, "gpu {ll} vs cpu {cpu_ll}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streamed_and_partitioned_runs_equal_the_resident_run() {
    let s = spec(7, 3000);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let tokens = docs.view().num_tokens();
    for algo in SAMPLERS {
        let run = |device: DeviceOptions| {
            let mut g = gpu(&docs, s.num_words, algo, 20, device);
            step(&mut g, 8);
            let chunks = g.partitions();
            let streamed = g.plan().unwrap()["streamed"].as_bool().unwrap();
            (
                topics(&mut g, tokens),
                chunks,
                streamed,
                g.log_likelihood().unwrap(),
            )
        };
        let (one, c1, s1, l1) = run(DeviceOptions::default());
        let (many, c2, s2, l2) = run(DeviceOptions {
            partition_tokens: Some(20_000),
            ..Default::default()
        });
        let (streamed, c3, s3, l3) = run(DeviceOptions {
            force_streaming: true,
            ..Default::default()
        });
        eprintln!("{algo:?}: resident {c1} chunk(s), {c2} partitions, streamed {c3} chunks; LL {l1} {l2} {l3}");
        assert_eq!((c1, s1, s2, s3), (1, false, false, true));
        assert!(c2 > 4 && c3 >= 2);
        assert!(
            one == many,
            "{algo:?}: partitioning changed the assignments"
        );
        assert!(
            one == streamed,
            "{algo:?}: streaming changed the assignments"
        );
        assert_eq!((l1.to_bits(), l1.to_bits()), (l2.to_bits(), l3.to_bits()));
    }
}

/// What 8 iterations at K = 512 leave under `device`: every token's topic, the log-likelihood,
/// every word's counts and the memory plan. The tests that compare ways of storing the same run
/// (formats, row widths, copies of the counts) run each way through it and compare.
struct Stored {
    z: Vec<u16>,
    ll: f64,
    rows: topos_train::counts::WordTopics,
    plan: topos_train::cuda::plan::Plan,
}

fn stored(docs: &TrainDocs, v: usize, algo: &'static dyn Sampler, device: DeviceOptions) -> Stored {
    let mut g = gpu(docs, v, algo, 512, device);
    let plan = g.memory_plan().clone();
    step(&mut g, 8);
    let rows = read_all_rows(&mut g, v).unwrap();
    let tokens = docs.view().num_tokens();
    Stored {
        z: topics(&mut g, tokens),
        ll: g.log_likelihood().unwrap(),
        rows,
        plan,
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
    let docs = TrainDocs::from(corpus.docs.clone());
    for algo in SAMPLERS {
        let run = |device: DeviceOptions| {
            let r = stored(&docs, s.num_words, algo, device);
            assert_eq!(r.plan.format.to_string(), device.word_topics.unwrap());
            r
        };
        let format = |f| DeviceOptions {
            word_topics: Some(f),
            ..Default::default()
        };
        let dense = run(format("dense"));
        let hybrid = run(format("hybrid"));
        let streamed = run(DeviceOptions {
            force_streaming: true,
            ..format("hybrid")
        });
        // 64-bit doc-topic row entries (documents of 65,536 tokens or more) draw the same.
        let wide = run(DeviceOptions {
            wide_rows: true,
            ..format("dense")
        });
        assert!(
            dense.z == wide.z,
            "{algo:?}: 64-bit row entries changed the draws"
        );
        eprintln!(
            "{algo:?} K=512: LL dense {:.6}, hybrid {:.6}",
            dense.ll, hybrid.ll
        );
        assert!(
            dense.z == hybrid.z,
            "{algo:?}: hybrid rows changed the draws"
        );
        assert!(
            dense.z == streamed.z,
            "{algo:?}: streamed hybrid rows changed the draws"
        );
        // Rows read back from either format are the same counts.
        assert_eq!(dense.rows, hybrid.rows);
        assert!((dense.ll - hybrid.ll).abs() < 1e-9);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_copy_of_the_counts_gives_the_two_copy_runs_model() {
    // With one copy the sweep writes no counts and B is recounted from the new assignments
    // after it (plan.rs, CountCopies::One): the same integer sums, so the same draws bit for
    // bit, resident or streamed (a second trip through the slots), dense or hybrid.
    let s = spec(17, 2000);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    for algo in SAMPLERS {
        let one = |d: DeviceOptions| DeviceOptions {
            one_count_copy: true,
            ..d
        };
        let dense = DeviceOptions {
            word_topics: Some("dense"),
            ..Default::default()
        };
        let hybrid = DeviceOptions {
            word_topics: Some("hybrid"),
            ..Default::default()
        };
        let streamed = |d: DeviceOptions| DeviceOptions {
            force_streaming: true,
            ..d
        };
        let two = stored(&docs, s.num_words, algo, dense);
        assert_eq!(two.plan.copies, CountCopies::Two);
        for (what, device) in [
            ("resident dense", one(dense)),
            ("streamed dense", one(streamed(dense))),
            ("resident hybrid", one(hybrid)),
            ("streamed hybrid", one(streamed(hybrid))),
        ] {
            let r = stored(&docs, s.num_words, algo, device);
            assert_eq!(r.plan.copies, CountCopies::One, "{algo:?} {what}");
            assert!(
                r.z == two.z,
                "{algo:?}: one copy ({what}) changed the draws"
            );
            assert_eq!(
                r.rows, two.rows,
                "{algo:?}: one copy ({what}) changed the counts"
            );
            assert_eq!(r.ll.to_bits(), two.ll.to_bits(), "{algo:?} {what}");
        }
        eprintln!("{algo:?}: one copy equals two, LL {:.6}", two.ll);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn same_seed_same_assignments() {
    let s = spec(9, 500);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let tokens = docs.view().num_tokens();
    let run = || {
        let mut g = gpu(&docs, s.num_words, &Esca, 8, DeviceOptions::default());
        step(&mut g, 5);
        topics(&mut g, tokens)
    };
    assert!(run() == run());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_k_runs() {
    // K = 32,768 needs 128 KiB of shared memory per block for the tree.
    let s = spec(11, 300);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    for (k, format) in [(10_000u32, "dense"), (32_768, "dense"), (32_768, "hybrid")] {
        let mut g = gpu(
            &docs,
            s.num_words,
            &Esca,
            k,
            DeviceOptions {
                word_topics: Some(format),
                ..Default::default()
            },
        );
        let ll0 = g.log_likelihood().unwrap();
        step(&mut g, 20);
        let ll = g.log_likelihood().unwrap();
        eprintln!("K={k} {format}: LL {ll0:.3} -> {ll:.3}");
        assert!(ll > ll0, "K={k}: {ll0} -> {ll}");
    }
}

/// A corpus file of the synthetic documents, 10% held out.
fn corpus_file(dir: &std::path::Path, s: &SyntheticSpec) -> std::path::PathBuf {
    let corpus = generate(s);
    let mut train = OwnedDocs::new();
    let mut heldout = OwnedDocs::new();
    for (d, doc) in corpus.docs.view().iter().enumerate() {
        if d % 10 == 0 {
            heldout.push(doc)
        } else {
            train.push(doc)
        }
    }
    let vocab = Vocabulary::new((0..s.num_words).map(|i| format!("w{i}")).collect());
    let c = Corpus::from_parts(vocab, train, heldout);
    let path = dir.join("c.tcorp");
    c.write(&path).unwrap();
    path
}

fn config(
    corpus: &std::path::Path,
    out: &std::path::Path,
    device: DeviceChoice,
    iterations: u32,
) -> RunConfig {
    let mut c = RunConfig::new(corpus, out, hyper(20));
    c.iterations = iterations;
    c.device = device;
    c.doc_topics = true;
    c
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn runs_on_the_gpu_write_the_model_resume_after_a_kill_and_match_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let path = corpus_file(dir.path(), &spec(21, 1500));
    let cuda: DeviceChoice = "cuda".parse().unwrap();
    for algo in SAMPLERS {
        let name = |what: &str| dir.path().join(format!("{}-{what}.tmod", algo.name()));
        let whole = name("whole");
        let mut c = config(&path, &whole, cuda, 30);
        c.sampler = algo;
        let sw = Run::start(c.clone(), &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        assert!(sw.device.starts_with("cuda"), "{}", sw.device);
        // The model file and its side file, from device state read back in pieces, are those
        // the counts of the downloaded assignments give.
        let (m, sum) = TopicModel::read_with_checksum(&whole).unwrap();
        let a = topos_model::DocTopics::read_for_model(&whole, sum).unwrap();
        assert_eq!(a.len(), Corpus::open(&path).unwrap().train().len());
        assert_eq!(m.topic_totals.iter().sum::<u64>(), sw.train_tokens);

        // Streamed: the same model file.
        let streamed = name("streamed");
        let mut cs = config(&path, &streamed, cuda, 30);
        cs.sampler = algo;
        cs.device_options.force_streaming = true;
        Run::start(cs, &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&streamed).unwrap(),
            "{algo:?}: streamed"
        );

        // Interrupted after the checkpoint of iteration 12 (the run is dropped, as a killed
        // process would be), then resumed: the uninterrupted model, byte for byte.
        let resumed = name("resumed");
        let mut ck = config(&path, &resumed, cuda, 30);
        ck.sampler = algo;
        ck.checkpoint_every = 12;
        let mut run = Run::start(ck.clone(), &mut Silent).unwrap();
        while run.iteration() < 13 {
            run.step(&mut Silent).unwrap();
        }
        drop(run);
        assert!(!resumed.exists());
        ck.resume = true;
        Run::start(ck, &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&resumed).unwrap(),
            "{algo:?}: resumed"
        );

        // The CPU's model of the same run is as good (not bit-identical: float sums differ).
        let on_cpu = name("cpu");
        let mut cc = config(&path, &on_cpu, DeviceChoice::cpu(), 30);
        cc.sampler = algo;
        let sc = Run::start(cc, &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        eprintln!(
            "{algo:?}: held-out gpu {:?} cpu {:?}",
            sw.heldout_ll, sc.heldout_ll
        );
        // mh's GPU chain has other proposals than its CPU chain (LightLDA's word proposal):
        // not the same chain, so only printed; its quality is in BENCHMARKS.md.
        if algo.name() != "mh" {
            assert!((sw.heldout_ll.unwrap() - sc.heldout_ll.unwrap()).abs() < 0.05);
        }
    }
}

/// The device's radix sort builds each resident partition's PDOW arrays entry for entry as the
/// host's stable counting sort does: one, two and three 9-bit passes (word ids below 2⁹, 2¹⁸
/// and above), one partition and many, empty documents included.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_sort_builds_the_hosts_pdow_arrays() {
    use topos_train::layout::Layout;
    for (max_word, seed) in [(400u32, 1u64), (5_000, 2), (300_000, 3)] {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        let docs: Vec<Vec<u32>> = (0..3_000)
            .map(|d| {
                let len = if d % 97 == 0 { 0 } else { 5 + next() % 120 };
                // A frequent word, then a spread over the whole range.
                (0..len)
                    .map(|_| {
                        if next() % 4 == 0 {
                            7
                        } else {
                            next() % max_word
                        }
                    })
                    .collect()
            })
            .collect();
        let owned: OwnedDocs = docs.iter().map(|d| d.as_slice()).collect();
        let train = TrainDocs::from(owned);
        for partition_tokens in [None, Some(20_000u64)] {
            let mut g = gpu(
                &train,
                max_word as usize,
                &Esca,
                16,
                DeviceOptions {
                    partition_tokens,
                    ..Default::default()
                },
            );
            let device = g.pdow_arrays().unwrap().expect("a resident corpus");
            let host = Layout::build(train.view(), device.len());
            assert_eq!(host.partitions.len(), device.len());
            for (i, (p, (src, doc))) in host.partitions.iter().zip(&device).enumerate() {
                assert_eq!(*src, p.token_src, "V {max_word}, partition {i}: positions");
                assert_eq!(*doc, p.token_doc, "V {max_word}, partition {i}: documents");
            }
            eprintln!(
                "V {max_word}: {} partition(s) sorted on the device as on the host",
                device.len()
            );
        }
    }
}

/// Held-out document completion on the device gives the host's numbers bit for bit (φ, the
/// fold-in's random numbers and arithmetic, the scored arguments), at K with one, two and three
/// levels of the smoothing branch's sampling tree, resident and streamed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn heldout_on_the_device_is_the_hosts_bit_for_bit() {
    use topos_model::{heldout_from_arguments, heldout_log_likelihood, FoldInOptions, Phi};
    let s = spec(5, 600);
    let train = TrainDocs::from(generate(&s).docs);
    let heldout = generate(&spec(6, 150)).docs;
    for (k, streamed) in [(8u32, false), (1000, false), (2000, true)] {
        let mut g = gpu(
            &train,
            s.num_words,
            &Esca,
            k,
            DeviceOptions {
                force_streaming: streamed,
                ..Default::default()
            },
        );
        step(&mut g, 5);
        let opts = FoldInOptions {
            seed: 9,
            ..FoldInOptions::default()
        };
        let args = Engine::heldout_arguments(&mut g, heldout.view(), &opts)
            .unwrap()
            .expect("a dense φ is evaluated on the device");
        let on_device = heldout_from_arguments(&hyper(k), heldout.view(), &args).unwrap();
        // The host: φ of every word from the counts read back.
        let rows = read_all_rows(&mut g, s.num_words).unwrap();
        let words: Vec<u32> = (0..s.num_words as u32).collect();
        let mut b = Phi::builder_for_words(s.num_words, 0.01, &rows.totals, &words, None).unwrap();
        for w in 0..s.num_words as u32 {
            let (t, c) = rows.row(w);
            b.push_row(w, t, c);
        }
        let on_host =
            heldout_log_likelihood(&b.finish(), &hyper(k), heldout.view(), &opts).unwrap();
        eprintln!(
            "K={k}: held-out {} on the device, {} on the host",
            on_device.ll_per_token, on_host.ll_per_token
        );
        assert_eq!(on_device, on_host, "K={k} streamed={streamed}");
    }
}

/// With a sparse φ (the host's SparseLDA buckets, K x V above 2^28 in real runs; forced sparse
/// here), held-out document completion on the device is the host's bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sparse_heldout_on_the_device_is_the_hosts_bit_for_bit() {
    use topos_model::{heldout_from_arguments, heldout_log_likelihood, FoldInOptions, Phi};
    let s = spec(7, 600);
    let train = TrainDocs::from(generate(&s).docs);
    let heldout = generate(&spec(8, 150)).docs;
    for k in [8u32, 300, 2000] {
        let mut g = gpu(&train, s.num_words, &Esca, k, DeviceOptions::default());
        step(&mut g, 5);
        let opts = FoldInOptions {
            seed: 4,
            ..FoldInOptions::default()
        };
        let rows = read_all_rows(&mut g, s.num_words).unwrap();
        let words: Vec<u32> = (0..s.num_words as u32).collect();
        let mut b = Phi::builder_for_words(s.num_words, 0.01, &rows.totals, &words, None).unwrap();
        for w in 0..s.num_words as u32 {
            let (t, c) = rows.row(w);
            b.push_row(w, t, c);
        }
        let phi = b.finish_sparse_for_tests();
        let args = Engine::heldout_arguments_with_phi(&mut g, heldout.view(), &phi, &opts)
            .unwrap()
            .expect("a sparse φ is evaluated on the device");
        let on_device = heldout_from_arguments(&hyper(k), heldout.view(), &args).unwrap();
        let on_host = heldout_log_likelihood(&phi, &hyper(k), heldout.view(), &opts).unwrap();
        eprintln!(
            "K={k}: sparse held-out {} on the device, {} on the host",
            on_device.ll_per_token, on_host.ll_per_token
        );
        assert_eq!(on_device, on_host, "K={k}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_engines_sharing_the_documents_train_one_engines_model() {
    use std::sync::Arc;
    use topos_train::engine_group::EngineGroup;
    use topos_train::transport::{InProcess, Transport};
    let s = spec(9, 2000);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let tokens = docs.view().num_tokens();
    let count = topos_cuda::device::device_count().unwrap();
    for algo in SAMPLERS {
        let mut one = gpu(&docs, s.num_words, algo, 12, DeviceOptions::default());
        step(&mut one, 6);
        for (n, streamed) in [(2usize, true), (3, true), (2, false), (3, false)] {
            // Members on every GPU of the machine in turn (all on one where there is one), one
            // streamed, so each path of the engine takes part; or all resident, so that over
            // NCCL the sweep runs in slices exchanged while the next slices sample.
            let transports: Vec<Arc<InProcess>> =
                InProcess::group(n).into_iter().map(Arc::new).collect();
            // Opened at once: joining the group (and NCCL) is collective.
            let members: Vec<Box<dyn Engine>> = std::thread::scope(|scope| {
                let handles: Vec<_> = transports
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let mut st = setup(
                            &docs,
                            s.num_words,
                            algo,
                            12,
                            DeviceOptions {
                                force_streaming: streamed && i == 1,
                                ..Default::default()
                            },
                        );
                        st.transport = t.clone() as Arc<dyn Transport>;
                        scope.spawn(move || {
                            Box::new(CudaEngine::open(Some(i % count), st).unwrap())
                                as Box<dyn Engine>
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut group = EngineGroup::new(members, transports);
            step(&mut group, 6);
            let (a, b) = (topics(&mut one, tokens), topics(&mut group, tokens));
            let (la, lb) = (
                one.log_likelihood().unwrap(),
                group.log_likelihood().unwrap(),
            );
            let report = group.exchange_report().unwrap();
            eprintln!(
                "{algo:?}: {n} engines on {count} GPU(s), one streamed: {streamed}: LL {lb} (one engine {la}); exchanges: {} by NCCL's all-reduce, {} by NCCL sparse, {} through the host; the sweep in {} slice(s)",
                report.nccl, report.nccl_sparse, report.dense, report.slices
            );
            assert!(a == b, "{algo:?}: {n} engines changed the assignments");
            assert_eq!(la.to_bits(), lb.to_bits());
            let (ra, rb) = (
                read_all_rows(&mut one, s.num_words).unwrap(),
                read_all_rows(&mut group, s.num_words).unwrap(),
            );
            assert_eq!(
                (ra.offsets, ra.topics, ra.counts),
                (rb.offsets, rb.topics, rb.counts)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// mfm: an engine of its own on the GPU (samplers/mfm/gpu.rs).

/// An `mfm` engine on the GPU (`gpu`) or the CPU, `iters` iterations in.
fn mfm_engine(
    docs: &TrainDocs,
    v: usize,
    width: topos_train::sampler::CounterWidth,
    seed: u64,
    on_gpu: bool,
    device: DeviceOptions,
    iters: u32,
) -> Box<dyn Engine> {
    use topos_train::sampler::{CpuImplementation, GpuImplementation};
    let mfm: &'static dyn Sampler = &topos_train::samplers::mfm::Mfm;
    let setup = EngineSetup {
        settings: topos_train::SamplerSettings::default()
            .with(&topos_train::samplers::mfm::COUNTERS, width.bits())
            .unwrap(),
        device,
        ..EngineSetup::fresh(docs.clone(), v, mfm, hyper(8), seed, 4)
    };
    let mut e = if on_gpu {
        match mfm.gpu() {
            Some(GpuImplementation::Engine(open)) => open(None, setup).unwrap(),
            _ => unreachable!("mfm opens an engine of its own on the GPU"),
        }
    } else {
        match mfm.cpu() {
            CpuImplementation::Engine(open) => open(setup).unwrap(),
            CpuImplementation::Sweep(_) => unreachable!("mfm opens an engine of its own"),
        }
    };
    for _ in 0..iters {
        e.iterate(&Local).unwrap();
    }
    e
}

/// [`mfm_engine`] with the device's default options.
fn mfm_on(
    docs: &TrainDocs,
    v: usize,
    width: topos_train::sampler::CounterWidth,
    seed: u64,
    on_gpu: bool,
    iters: u32,
) -> Box<dyn Engine> {
    mfm_engine(
        docs,
        v,
        width,
        seed,
        on_gpu,
        DeviceOptions::default(),
        iters,
    )
}

fn mfm_state(
    e: &mut dyn Engine,
    v: usize,
    docs: usize,
) -> (topos_train::counts::WordTopics, topos_model::DocTopics) {
    let mut d = topos_model::DocTopics {
        num_topics: 0,
        offsets: Vec::new(),
        topics: Vec::new(),
        counts: Vec::new(),
    };
    assert!(e.doc_topic_rows(0..docs, &mut d).unwrap());
    (read_all_rows(e, v).unwrap(), d)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mfm_starts_with_the_cpus_counts_for_every_counter_width() {
    use topos_train::sampler::CounterWidth;
    let s = spec(4, 600);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    for width in CounterWidth::ALL {
        // The start draws and rounds with the CPU's keys: the same counts, bit for bit.
        let mut g = mfm_on(&docs, s.num_words, width, 17, true, 0);
        let mut c = mfm_on(&docs, s.num_words, width, 17, false, 0);
        let (gw, gd) = mfm_state(g.as_mut(), s.num_words, s.num_docs);
        let (cw, cd) = mfm_state(c.as_mut(), s.num_words, s.num_docs);
        assert_eq!(
            (&gw.offsets, &gw.topics, &gw.counts),
            (&cw.offsets, &cw.topics, &cw.counts),
            "{width:?}"
        );
        assert_eq!(gw.totals, cw.totals, "{width:?}");
        assert_eq!(
            (&gd.offsets, &gd.topics, &gd.counts),
            (&cd.offsets, &cd.topics, &cd.counts),
            "{width:?}"
        );
        // The same formula for the likelihood, summed in another order.
        let (gl, cl) = (g.log_likelihood().unwrap(), c.log_likelihood().unwrap());
        eprintln!("mfm {width:?} start: LL gpu {gl:.6} cpu {cl:.6}");
        assert!((gl - cl).abs() < 1e-5, "{width:?}: gpu {gl} cpu {cl}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mfm_recovers_known_topics_and_trains_as_the_cpu_does() {
    use topos_train::sampler::CounterWidth;
    let s = spec(3, 400);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    for width in CounterWidth::ALL {
        // Best of five chains: at 150 iterations about 30% of chains on this corpus end with two
        // topics merged, on the CPU as on the GPU, with any --own-draw (6, 6 and 7 of 20 CPU
        // chains for removed, document and kept), so three chains all stuck was a 3% chance a
        // width.
        let best = |on_gpu: bool| {
            (17..22)
                .map(|seed| mfm_on(&docs, s.num_words, width, seed, on_gpu, 150))
                .map(|mut e| (e.log_likelihood().unwrap(), e))
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .expect("chains")
        };
        let (ll, mut g) = best(true);
        let (cpu_ll, _) = best(false);
        let rows = read_all_rows(g.as_mut(), s.num_words).unwrap();
        let after = recovery(&corpus.topics, &rows, 0.01);
        eprintln!(
            "gpu mfm {width:?}: JS mean {:.4} worst {:.4}; LL gpu {ll:.4} cpu {cpu_ll:.4}",
            after.mean, after.worst
        );
        if width == CounterWidth::Approx4 {
            assert!(after.mean < 0.06, "{:?}", after.per_topic);
            assert!(
                after.worst < topos_train::synthetic::Recovery::WORST_BOUND,
                "{:?}",
                after.per_topic
            );
        } else {
            after.assert_recovered(&format!("gpu mfm {width:?}"));
        }
        // The same distribution drawn another way: the same quality.
        assert!(
            (ll - cpu_ll).abs() < 0.02,
            "{width:?}: gpu {ll} cpu {cpu_ll}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mfm_gives_the_same_model_for_any_chunking_and_run() {
    // A budget with no room for the corpus beside the counts: refused, with what it needs.
    {
        let s = spec(5, 900);
        let docs = TrainDocs::from(generate(&s).docs);
        let mfm: &'static dyn Sampler = &topos_train::samplers::mfm::Mfm;
        let setup = EngineSetup {
            device: DeviceOptions {
                memory_budget: Some(1),
                ..Default::default()
            },
            ..EngineSetup::fresh(docs, s.num_words, mfm, hyper(8), 17, 4)
        };
        let Some(topos_train::sampler::GpuImplementation::Engine(open)) = mfm.gpu() else {
            unreachable!("mfm opens an engine of its own on the GPU")
        };
        let err = open(None, setup).err().expect("refused").to_string();
        assert!(err.contains("room for two documents"), "{err}");
    }
    use topos_train::sampler::CounterWidth;
    let s = spec(5, 900);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let tokens = docs.view().num_tokens();
    for width in CounterWidth::ALL {
        let (w1, d1) = mfm_state(
            mfm_on(&docs, s.num_words, width, 17, true, 6).as_mut(),
            s.num_words,
            s.num_docs,
        );
        // Resident in 1, 3 or 7 launches, or streamed through the device a chunk at a time
        // (its tokens and rows uploaded, its rows read back): one model.
        for (parts, force_streaming) in [1, 3, 7].into_iter().flat_map(|p| [(p, false), (p, true)])
        {
            let device = DeviceOptions {
                partition_tokens: Some(tokens.div_ceil(parts)),
                force_streaming,
                ..Default::default()
            };
            let mut e = mfm_engine(&docs, s.num_words, width, 17, true, device, 6);
            assert_eq!(e.partitions() as u64, parts);
            let mode = if force_streaming {
                "streamed"
            } else {
                "resident"
            };
            assert_eq!(e.plan().unwrap()["mode"], mode);
            let (w, d) = mfm_state(e.as_mut(), s.num_words, s.num_docs);
            assert_eq!(
                (&w.topics, &w.counts, &w.totals),
                (&w1.topics, &w1.counts, &w1.totals),
                "{width:?} {parts} {mode}"
            );
            assert_eq!(
                (&d.topics, &d.counts),
                (&d1.topics, &d1.counts),
                "{width:?} {parts} {mode}"
            );
            let ll = e.log_likelihood().unwrap();
            eprintln!("mfm {width:?} {parts} {mode}: LL {ll}");
        }
        // A device budget with room for about three of the longest documents in each of the
        // two slots beside the counts and the second lane's histograms (the engine keeps 512
        // MiB aside): streamed in chunks that each fit, the same model.
        let resident = mfm_on(&docs, s.num_words, width, 17, true, 0);
        let view = docs.view();
        let longest = (0..view.len())
            .map(|d| view.doc(d).len() as u64)
            .max()
            .unwrap();
        let rows: u64 = (0..view.len())
            .map(|d| (view.doc(d).len() as u64).min(8))
            .sum();
        let all = resident.plan().unwrap()["device_bytes"].as_u64().unwrap();
        let fixed = all - 4 * tokens - 4 * rows;
        let budget = (512 << 20) + fixed + 2 * 8 * 3 * longest;
        let device = DeviceOptions {
            memory_budget: Some(budget),
            ..Default::default()
        };
        let mut e = mfm_engine(&docs, s.num_words, width, 17, true, device, 6);
        let plan = e.plan().unwrap();
        assert_eq!(plan["mode"], "streamed", "{plan}");
        assert!(e.partitions() >= 3, "{plan}");
        assert!(
            plan["device_bytes"].as_u64().unwrap() + (512 << 20) <= budget,
            "{plan} over {budget}"
        );
        let (w, d) = mfm_state(e.as_mut(), s.num_words, s.num_docs);
        assert_eq!(
            (&w.counts, &d.counts),
            (&w1.counts, &d1.counts),
            "{width:?}"
        );
        // Another seed, another model (the test can fail).
        let (w2, _) = mfm_state(
            mfm_on(&docs, s.num_words, width, 18, true, 6).as_mut(),
            s.num_words,
            s.num_docs,
        );
        assert_ne!(w2.counts, w1.counts);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_mfm_engines_sharing_the_documents_train_one_engines_model() {
    use std::sync::Arc;
    use topos_train::engine_group::EngineGroup;
    use topos_train::sampler::{CounterWidth, GpuImplementation};
    use topos_train::transport::{InProcess, Transport};
    // More documents than the grid has warps, so that warps take several documents in turn
    // (the likelihood once raced there: a lane refilled the next document's stage while
    // another still read this one's).
    let s = spec(9, 40_000);
    let corpus = generate(&s);
    let docs = TrainDocs::from(corpus.docs.clone());
    let count = topos_cuda::device::device_count().unwrap();
    let open = match topos_train::samplers::mfm::Mfm.gpu() {
        Some(GpuImplementation::Engine(open)) => open,
        _ => unreachable!("mfm opens an engine of its own on the GPU"),
    };
    for width in [CounterWidth::Exact, CounterWidth::Approx8] {
        let mut one = mfm_on(&docs, s.num_words, width, 17, true, 6);
        let want = mfm_state(one.as_mut(), s.num_words, s.num_docs);
        let want_ll = one.log_likelihood().unwrap();
        for n in [2usize, 3] {
            // Members on every GPU in turn: NCCL where each has its own, else through the host.
            let transports: Vec<Arc<InProcess>> =
                InProcess::group(n).into_iter().map(Arc::new).collect();
            let members: Vec<Box<dyn Engine>> = std::thread::scope(|scope| {
                let handles: Vec<_> = transports
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let mfm: &'static dyn Sampler = &topos_train::samplers::mfm::Mfm;
                        let st = EngineSetup {
                            settings: topos_train::SamplerSettings::default()
                                .with(&topos_train::samplers::mfm::COUNTERS, width.bits())
                                .unwrap(),
                            transport: t.clone() as Arc<dyn Transport>,
                            ..EngineSetup::fresh(docs.clone(), s.num_words, mfm, hyper(8), 17, 4)
                        };
                        scope.spawn(move || open(Some(i % count), st).unwrap())
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut group = EngineGroup::new(members, transports);
            step(&mut group, 6);
            let got = mfm_state(&mut group, s.num_words, s.num_docs);
            let ll = group.log_likelihood().unwrap();
            eprintln!(
                "mfm {width:?}: {n} engines on {count} GPU(s): LL {ll} (one engine {want_ll})"
            );
            assert_eq!(
                (&got.0.offsets, &got.0.topics, &got.0.counts, &got.0.totals),
                (
                    &want.0.offsets,
                    &want.0.topics,
                    &want.0.counts,
                    &want.0.totals
                ),
                "{width:?}, {n} engines"
            );
            assert_eq!(
                (&got.1.offsets, &got.1.topics, &got.1.counts),
                (&want.1.offsets, &want.1.topics, &want.1.counts),
                "{width:?}, {n} engines"
            );
            assert_eq!(ll.to_bits(), want_ll.to_bits());
        }
    }
}
