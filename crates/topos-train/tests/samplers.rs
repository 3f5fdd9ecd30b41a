//! End-to-end checks of both samplers on corpora with known topics.

use topos_corpus::Docs;
use topos_model::Hyperparameters;
use topos_train::synthetic::{generate, learned_topics, match_topics, SyntheticSpec, TopicShape};
use topos_train::{Algorithm, TrainOptions, Trainer};

fn spec(seed: u64) -> SyntheticSpec {
    SyntheticSpec {
        num_docs: 400,
        num_words: 500,
        num_topics: 8,
        mean_doc_len: 80,
        alpha: 0.1,
        shape: TopicShape::Dirichlet { beta: 0.05 },
        seed,
    }
}

fn options(
    algorithm: Algorithm,
    k: u32,
    threads: usize,
    partitions: Option<usize>,
) -> TrainOptions {
    TrainOptions {
        algorithm,
        hyper: Hyperparameters::new(k, Some(0.1), Some(0.01)).unwrap(),
        seed: 17,
        threads,
        partitions,
        corpus_checksum: 1,
    }
}

fn train(docs: Docs<'_>, v: usize, opts: TrainOptions, iters: u32) -> Trainer<'_> {
    let mut t = Trainer::new(docs, v, opts).unwrap();
    for _ in 0..iters {
        t.step();
    }
    t
}

#[test]
fn both_samplers_recover_known_topics() {
    let s = spec(3);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let untrained = Trainer::new(docs, s.num_words, options(algo, 8, 2, Some(3))).unwrap();
        let before = match_topics(
            &corpus.topics,
            &learned_topics(untrained.word_topics(), 0.01),
            s.num_words,
        );
        let ll_before = untrained.log_likelihood();
        let t = train(docs, s.num_words, options(algo, 8, 2, Some(3)), 150);
        let after = match_topics(
            &corpus.topics,
            &learned_topics(t.word_topics(), 0.01),
            s.num_words,
        );
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let worst = after.iter().cloned().fold(0.0, f64::max);
        eprintln!(
            "{algo:?}: JS before {:.3}, after mean {:.4} worst {:.4}; LL {:.3} -> {:.3}",
            mean(&before),
            mean(&after),
            worst,
            ll_before,
            t.log_likelihood()
        );
        // A sampler that learns nothing stays where it started (mean JS ≈ 0.3 here).
        assert!(mean(&before) > 0.2);
        assert!(
            mean(&after) < 0.03,
            "{algo:?} did not recover the topics: {after:?}"
        );
        assert!(worst < 0.08, "{algo:?} missed a topic: {after:?}");
        assert!(t.log_likelihood() > ll_before + 0.5);
    }
}

#[test]
fn esca_is_bit_identical_for_any_thread_count() {
    let s = spec(4);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    // ESCA: the thread count also changes the partition count, and neither may matter.
    let one = train(docs, s.num_words, options(Algorithm::Esca, 8, 1, None), 12);
    let three = train(docs, s.num_words, options(Algorithm::Esca, 8, 3, None), 12);
    assert_ne!(one.partitions(), three.partitions());
    assert_eq!(one.assignments(), three.assignments());
    assert_eq!(one.word_topics(), three.word_topics());
    assert_eq!(
        one.log_likelihood().to_bits(),
        three.log_likelihood().to_bits()
    );
}

#[test]
fn cgs_is_bit_identical_for_any_thread_count_at_fixed_partitions() {
    let s = spec(5);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    let one = train(docs, s.num_words, options(Algorithm::Cgs, 8, 1, Some(4)), 8);
    let two = train(docs, s.num_words, options(Algorithm::Cgs, 8, 2, Some(4)), 8);
    assert_eq!(one.assignments(), two.assignments());
    assert_eq!(
        one.log_likelihood().to_bits(),
        two.log_likelihood().to_bits()
    );
}

#[test]
fn resume_equals_uninterrupted() {
    let s = spec(6);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let full = train(docs, s.num_words, options(algo, 8, 2, None), 10);
        let half = train(docs, s.num_words, options(algo, 8, 2, None), 4);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ckpt");
        half.checkpoint().write(&path).unwrap();
        let ckpt = topos_train::Checkpoint::read(&path).unwrap();
        let mut resumed =
            Trainer::resume(docs, s.num_words, options(algo, 8, 1, None), ckpt).unwrap();
        for _ in 4..10 {
            resumed.step();
        }
        assert_eq!(resumed.iteration(), 10);
        assert_eq!(full.assignments(), resumed.assignments(), "{algo:?}");
    }
}

#[test]
fn resume_refuses_a_mismatched_checkpoint() {
    let s = spec(7);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    let t = train(docs, s.num_words, options(Algorithm::Esca, 8, 1, None), 1);
    let ckpt = t.checkpoint();
    let err = |o: TrainOptions| {
        Trainer::resume(docs, s.num_words, o, ckpt.clone())
            .err()
            .unwrap()
            .to_string()
    };
    assert!(err(options(Algorithm::Cgs, 8, 1, None)).contains("algorithm"));
    assert!(err(options(Algorithm::Esca, 9, 1, None)).contains("K=8"));
    let mut other = options(Algorithm::Esca, 8, 1, None);
    other.corpus_checksum = 2;
    assert!(err(other).contains("different corpus"));
}

#[test]
fn large_k_runs_with_sparse_counts() {
    // K = 65,535 topics on a small corpus: memory stays O(non-zeros), both samplers run.
    let s = SyntheticSpec {
        num_docs: 30,
        num_words: 100,
        num_topics: 3,
        mean_doc_len: 20,
        alpha: 0.5,
        shape: TopicShape::Dirichlet { beta: 0.1 },
        seed: 8,
    };
    let corpus = generate(&s);
    for algo in [Algorithm::Esca, Algorithm::Cgs] {
        let mut o = options(algo, 65_535, 2, Some(2));
        o.hyper = Hyperparameters::new(65_535, None, None).unwrap();
        let t = train(corpus.docs.view(), 100, o, 2);
        let b = t.word_topics();
        assert_eq!(
            b.totals.iter().sum::<u64>(),
            corpus.docs.view().num_tokens()
        );
        assert!(t.log_likelihood().is_finite());
    }
}

#[test]
fn training_likelihood_matches_the_model_crates_dense_computation() {
    // The trainer's sparse, PDOW-ordered log-likelihood and topos-model's dense one over φ must
    // be the same quantity (they differ only by f32 rounding of φ).
    let s = spec(9);
    let corpus = generate(&s);
    let docs = corpus.docs.view();
    let t = train(docs, s.num_words, options(Algorithm::Esca, 8, 2, None), 5);
    let vocab = topos_corpus::Vocabulary::new((0..s.num_words).map(|i| format!("w{i}")).collect());
    let model = t.model(vocab);
    let phi = topos_model::Phi::from_model(&model).unwrap();
    let dense =
        topos_model::log_likelihood_per_token(&phi, &model.hyper, docs, t.doc_topics()).unwrap();
    let sparse = t.log_likelihood();
    assert!(
        (dense - sparse).abs() < 1e-4,
        "dense {dense} vs sparse {sparse}"
    );
}
