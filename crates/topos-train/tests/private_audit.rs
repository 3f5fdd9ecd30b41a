//! A statistical privacy audit of private training end to end (issue 25, part 4): the real
//! mechanism of `train --private` ([`topos_train::private::train_in_memory`]: ESCA reading whole
//! documents, at most L counted tokens per document per release, the word release and its
//! vocabulary H, the model as the last release) run many times on two neighbouring tiny corpora
//! A and B = A + d*, one statistic of the output histogrammed per corpus, and the empirical lower
//! bound on ε ([`topos_privacy::audit`]: fixed integer bins plus two tails, Hoeffding and a union
//! bound over the bins) checked against the ε the run claims for what that statistic reads.
//!
//! Each audit's false-alarm rate is α = 1e-6; 6 of them must pass, so a private mechanism
//! fails this test with probability at most 6e-6 (fixed seeds: the outcome is the same on every
//! machine). The added document d* is chosen to move the audited statistic as much as the cap
//! allows: L tokens of a word no other document holds (the word release's cell of that word),
//! L tokens of a frequent word (the model's row of it, a row of H), and a long document of 8·L
//! tokens of that word, of which only L are counted. Negative controls that must fail: the same
//! long document counted uncapped with the noise the capped run uses, and noise at half the
//! needed scale.

use std::sync::Arc;
use topos_corpus::OwnedDocs;
use topos_model::Hyperparameters;
use topos_privacy::audit::{Audit, AuditReport};
use topos_privacy::{Epsilon, NoiseSource};
use topos_train::private::{
    cap_candidates, choose_cap, contribution_counts, train_in_memory, PrivateMechanism,
    PrivateOptions,
};

const ALPHA: f64 = 1e-6;
const SAMPLES: usize = 10_000;
const K: u32 = 2;
const V: usize = 5;
/// The rare word (in no document of A) and the frequent one.
const RARE: u32 = 0;
const FREQUENT: u32 = 1;
/// The cap L.
const CAP: u32 = 3;

/// A: 40 documents of L = 3 tokens (all counted, under any cap ≥ L) over words 1..4, word 1
/// twice in each.
fn base() -> OwnedDocs {
    let mut a = OwnedDocs::new();
    for d in 0..40u32 {
        let doc: Vec<u32> = (0..CAP)
            .map(|i| if i != 1 { FREQUENT } else { 2 + d % 3 })
            .collect();
        a.push(&doc);
    }
    a
}

fn with(a: &OwnedDocs, extra: &[u32]) -> OwnedDocs {
    let mut b = OwnedDocs::from_parts(a.view().offsets().to_vec(), a.view().tokens().to_vec());
    b.push(extra);
    b
}

/// The settings `train --private` uses by default (the word release and the model, R = 2),
/// one iteration, pure ε (δ = 0: basic composition, b = R·L/ε).
fn options(epsilon: f64, cap: u32) -> PrivateOptions {
    PrivateOptions {
        epsilon: Epsilon::new(epsilon).unwrap(),
        delta: 0.0,
        max_doc_tokens: cap,
        iterations: 1,
        releases: 2,
        word_release: true,
        cap_epsilon: 0.0,
        mechanism: PrivateMechanism::Laplace,
    }
}

/// What one run releases about `word`: its noisy word count ũ (release 1) and its row total
/// in the model divided by S = K (release 2; Σ_k B̃_wk for a word of H).
fn run(docs: &Arc<OwnedDocs>, opts: PrivateOptions, word: u32, seed: u64) -> (i64, i64) {
    let hyper = Hyperparameters::new(K, Some(0.5), Some(0.1)).unwrap();
    let r = train_in_memory(
        docs.clone(),
        V,
        hyper,
        opts,
        NoiseSource::insecure_seeded(seed),
    )
    .unwrap();
    let noisy = i64::from(r.words().unwrap().noisy[word as usize]);
    let (_, counts) = r.latest().unwrap().row(word);
    let row: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    (noisy, (row as f64 / f64::from(K)).round() as i64)
}

/// What one run releases about the audited word: (ũ_word, model row total).
type Released = (i64, i64);

/// `SAMPLES` runs on each corpus.
type Outputs = (Vec<Released>, Vec<Released>);

fn sample(a: &OwnedDocs, b: &OwnedDocs, opts: PrivateOptions, word: u32, seed: u64) -> Outputs {
    let (a, b) = (Arc::new(a.clone()), Arc::new(b.clone()));
    // Run i is seeded from (seed, i) alone, so the outputs do not depend on the threads.
    let one = |i: usize| {
        let mut seeds = NoiseSource::insecure_seeded(seed ^ ((i as u64) << 20));
        let (sa, sb) = (seeds.next_u64(), seeds.next_u64());
        (run(&a, opts, word, sa), run(&b, opts, word, sb))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = SAMPLES.div_ceil(threads);
    let parts: Vec<Vec<(Released, Released)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..SAMPLES)
            .step_by(chunk)
            .map(|start| {
                let one = &one;
                s.spawn(move || (start..(start + chunk).min(SAMPLES)).map(one).collect())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    parts.into_iter().flatten().unzip()
}

/// The true counted tokens of `word` in `docs` (the centre of the bins, public here because the
/// test made the corpus).
fn counted(docs: &OwnedDocs, word: u32) -> i64 {
    let z = vec![0u16; docs.view().tokens().len()];
    let dense = contribution_counts(docs.view(), &z, V, K, CAP);
    let k = K as usize;
    i64::from(
        dense[word as usize * k..(word as usize + 1) * k]
            .iter()
            .sum::<u32>(),
    )
}

/// Audits one statistic of the outputs at the claimed ε. The statistic x is binned by
/// ⌊(x − centre)/w⌋ with w = ⌈b/2⌉ (a function of the output, so as private as x) over
/// −8..=9 + ⌊L/w⌋, everything beyond in the two tails: bins fixed before sampling.
fn audit(
    claim: f64,
    centre: i64,
    b: f64,
    pick: impl Fn((i64, i64)) -> i64,
    out: &Outputs,
) -> AuditReport {
    let w = (b / 2.0).ceil() as i64;
    let audit = Audit {
        epsilon: claim,
        samples: SAMPLES,
        alpha: ALPHA,
        lo: -8,
        hi: 8 + i64::from(CAP).div_euclid(w) + 1,
    };
    let bin = |o| (pick(o) - centre).div_euclid(w);
    let a: Vec<i64> = out.0.iter().map(|&o| bin(o)).collect();
    let b: Vec<i64> = out.1.iter().map(|&o| bin(o)).collect();
    let r = audit.check(&a, &b);
    eprintln!(
        "claim {claim:.4}: empirical lower bound {:.4} ({} bins, t = {:.4}, passed {})",
        r.epsilon_lower_bound, r.bins, r.slack, r.passed
    );
    r
}

#[test]
fn private_training_is_private_end_to_end_and_weakened_runs_are_caught() {
    let eps = 1.0;
    let opts = options(eps, CAP);
    // What the run claims: each release L/b (the exact sampler's rounding), ε in all.
    let a = Arc::new(base());
    let probe = train_in_memory(
        a.clone(),
        V,
        Hyperparameters::new(K, Some(0.5), Some(0.1)).unwrap(),
        opts,
        NoiseSource::insecure_seeded(1),
    )
    .unwrap();
    let (b, spent, total) = (
        probe.scale(),
        probe.spent().to_vec(),
        probe.guarantee().epsilon,
    );
    assert_eq!(spent.len(), 2);
    assert!((b - 2.0 * f64::from(CAP) / eps).abs() < 1e-6, "scale {b}");
    let (word_release, model) = (spent[0], spent[1]);

    // 1. d* = L tokens of a word no other document holds: the word release's cell of it.
    let rare = with(&a, &[RARE; CAP as usize]);
    let out = sample(&a, &rare, opts, RARE, 11);
    let r = audit(word_release, 0, b, |(u, _)| u, &out);
    assert!(r.passed, "rare word, word release: {r:?}");
    // Everything the run released about that word (both releases), against the whole ε.
    let r = audit(total, 0, 2.0 * b, |(u, m)| u + m, &out);
    assert!(r.passed, "rare word, whole run: {r:?}");

    // 2. d* = L tokens of a frequent word (in H): the model's row of it.
    let frequent = with(&a, &[FREQUENT; CAP as usize]);
    let centre = counted(&a, FREQUENT);
    let out = sample(&a, &frequent, opts, FREQUENT, 12);
    let r = audit(model, centre, b, |(_, m)| m, &out);
    assert!(r.passed, "frequent word, model row: {r:?}");
    let r = audit(total, 2 * centre, 2.0 * b, |(u, m)| u + m, &out);
    assert!(r.passed, "frequent word, whole run: {r:?}");

    // 3. A long d*: 8·L tokens of the frequent word, only L of them counted; the sampler reads
    // all of them.
    let long = with(&a, &[FREQUENT; 8 * CAP as usize]);
    assert_eq!(counted(&long, FREQUENT), centre + i64::from(CAP));
    let out = sample(&a, &long, opts, FREQUENT, 13);
    let r = audit(word_release, centre, b, |(u, _)| u, &out);
    assert!(r.passed, "long document, word release: {r:?}");
    let r = audit(total, 2 * centre, 2.0 * b, |(u, m)| u + m, &out);
    assert!(r.passed, "long document, whole run: {r:?}");

    // Negative control 1: the long document counted uncapped (a cap of 8·L) with the noise
    // the capped run uses (ε scaled by 8 keeps b), audited against the capped run's claim.
    let uncapped = options(8.0 * eps, 8 * CAP);
    let out = sample(&a, &long, uncapped, FREQUENT, 14);
    let r = audit(word_release, centre, b, |(u, _)| u, &out);
    assert!(!r.passed, "uncapped contributions passed: {r:?}");

    // Negative control 2: noise at half the needed scale (a run calibrated to 2ε), audited
    // against the claim of ε, on the rare word's word release.
    let weak = options(2.0 * eps, CAP);
    let out = sample(&a, &rare, weak, RARE, 15);
    let r = audit(word_release, 0, b, |(u, _)| u, &out);
    assert!(!r.passed, "noise at half the scale passed: {r:?}");
}

/// The automatic cap (`train --private` without `--max-doc-tokens`): the exponential mechanism
/// on the lower quartile of the lengths, audited on neighbouring length lists whose added
/// document moves every score but the best bucket's by the sensitivity (a document of 1 token:
/// every count of shorter documents and n grow by one, so the buckets' distances move by 3, up
/// on one side of the quartile and down on the other), and weakened (run at 6ε, claimed ε, on a
/// pair whose best bucket moves) as a negative control.
#[test]
fn the_private_cap_choice_is_private() {
    let grid = cap_candidates();
    // A: 40 documents of lengths 8..=47 (the quartile between the candidates 16 and 19); B adds
    // one of 1 token.
    let a: Vec<usize> = (8..=47).collect();
    let mut b = a.clone();
    b.push(1);
    let index = |c: u32| grid.iter().position(|&g| g == c).unwrap() as i64;
    let draw = |lens: &[usize], e: f64, src: &mut NoiseSource| {
        index(
            choose_cap(lens.iter().copied(), Epsilon::new(e).unwrap(), src)
                .unwrap()
                .cap,
        )
    };
    let eps = 1.0;
    let audit = Audit {
        epsilon: eps,
        samples: 40_000,
        alpha: ALPHA,
        // The grid's indices of 8 to 38 (below and above, the edge bins).
        lo: index(8),
        hi: index(38),
    };
    let mut src = NoiseSource::insecure_seeded(41);
    let sa: Vec<i64> = (0..audit.samples)
        .map(|_| draw(&a, eps, &mut src))
        .collect();
    let sb: Vec<i64> = (0..audit.samples)
        .map(|_| draw(&b, eps, &mut src))
        .collect();
    let r = audit.check(&sa, &sb);
    eprintln!(
        "cap choice, claim {eps}: empirical lower bound {:.4} (passed {})",
        r.epsilon_lower_bound, r.passed
    );
    assert!(r.passed, "cap choice: {r:?}");
    assert!(r.epsilon_lower_bound > 0.1, "the audit sees nothing: {r:?}");
    // The negative control needs neighbours whose best bucket moves (the score of the rank's
    // bucket, [`topos_train::private::choose_cap`], holds most of the mass where it is 0): A has
    // its quartile on the boundary of [16, 19) and [19, 23) (10 documents of 17 tokens, 30 of
    // 20: both score 0), and B's extra short document leaves [16, 19) alone at 0 and [19, 23)
    // at 3. At 6ε the mass of [19, 23) falls from 1/2 to 1/(1 + e³), far past what ε allows.
    let a: Vec<usize> = std::iter::repeat_n(17, 10)
        .chain(std::iter::repeat_n(20, 30))
        .collect();
    let mut b = a.clone();
    b.push(1);
    let sa: Vec<i64> = (0..audit.samples)
        .map(|_| draw(&a, 6.0 * eps, &mut src))
        .collect();
    let sb: Vec<i64> = (0..audit.samples)
        .map(|_| draw(&b, 6.0 * eps, &mut src))
        .collect();
    let r = audit.check(&sa, &sb);
    assert!(!r.passed, "a cap choice at 6ε passed a claim of ε: {r:?}");
}

/// The Gaussian mechanism (`--mechanism gaussian`): documents clipped to L2 norm C = 3, the
/// default R = 2 (word release, model), (ε, δ) = (1, 10⁻⁶), one iteration.
fn gaussian(epsilon: f64, clip: u32) -> PrivateOptions {
    PrivateOptions {
        epsilon: Epsilon::new(epsilon).unwrap(),
        delta: 1e-6,
        max_doc_tokens: 0,
        iterations: 1,
        releases: 2,
        word_release: true,
        cap_epsilon: 0.0,
        mechanism: PrivateMechanism::Gaussian {
            l2_clip: clip,
            split: topos_train::BudgetSplit::Focused,
        },
    }
}

/// End to end, the Gaussian mechanism against its (ε, δ) claims ([`Audit::check_with_delta`]):
/// d* = (8·C)² tokens of a word no other document holds, which the √-weighted clipping scales
/// to C tokens (C·G units, less at most one unit a topic for the floor; `l2_contribution`). The
/// word release of that word (its empirical-Bayes posterior mean, ≥ 0: post-processing) is
/// audited against the (ε, δ) its own ρ converts to, in bins of half its σ from 0 (the shrunk
/// means sit there; a finer grid than σ gives the negative control its margin), and both
/// releases together (ũ in tokens + model row) against the run's (ε, δ), in bins of the root of
/// both releases' variances. Bins fixed before sampling.
/// Negative control that must fail: the same document clipped at 8·C (it then contributes 8·C
/// tokens; ρ 64 times larger, so the same σ), against the clipped run's claim. False-alarm rate
/// α = 1e-6 each (3 audits).
#[test]
fn the_gaussian_mechanism_is_private_end_to_end_and_unclipped_runs_are_caught() {
    use topos_privacy::zcdp;
    use topos_train::private::CONTRIBUTION_UNITS;
    let (eps, clip) = (1.0, CAP);
    let opts = gaussian(eps, clip);
    let a = Arc::new(base());
    let probe = train_in_memory(
        a.clone(),
        V,
        Hyperparameters::new(K, Some(0.5), Some(0.1)).unwrap(),
        opts,
        NoiseSource::insecure_seeded(1),
    )
    .unwrap();
    let (sigmas, spent, g) = (probe.scales(), probe.spent().to_vec(), probe.guarantee());
    assert_eq!((spent.len(), sigmas.len()), (2, 2));
    let rho: f64 = spent.iter().sum();
    assert!(rho <= g.accountant.zcdp_rho.unwrap() * (1.0 + 1e-12));
    assert!(zcdp::epsilon(rho, 1e-6) <= eps);
    let word_claim = zcdp::epsilon(spent[0], 1e-6);
    let side = 8 * CAP as usize;
    let long = with(&a, &vec![RARE; side * side]);
    let units = i64::from(CONTRIBUTION_UNITS);
    // ũ in units (the word release), as tokens for the sum with the model's row.
    let in_tokens = |u: i64| (u + units / 2).div_euclid(units);
    let word_width = (sigmas[0] * units as f64 / 2.0).round() as i64;
    let run_width = (sigmas[0].hypot(sigmas[1])).round() as i64;
    let check = |claim: f64,
                 width: i64,
                 (lo, hi): (i64, i64),
                 pick: &dyn Fn((i64, i64)) -> i64,
                 out: &Outputs| {
        let audit = Audit {
            epsilon: claim,
            samples: SAMPLES,
            alpha: ALPHA,
            lo,
            hi,
        };
        let xa: Vec<i64> = out.0.iter().map(|&o| pick(o).div_euclid(width)).collect();
        let xb: Vec<i64> = out.1.iter().map(|&o| pick(o).div_euclid(width)).collect();
        let r = audit.check_with_delta(&xa, &xb, 1e-6);
        eprintln!(
            "gaussian claim ({claim:.4}, 1e-6): empirical lower bound {:.4} (passed {})",
            r.epsilon_lower_bound, r.passed
        );
        r
    };
    let out = sample(&a, &long, opts, RARE, 21);
    let r = check(word_claim, word_width, (0, 4), &|(u, _)| u, &out);
    assert!(r.passed, "gaussian, word release: {r:?}");
    let r = check(
        g.epsilon,
        run_width,
        (-3, 1),
        &|(u, m)| in_tokens(u) + m,
        &out,
    );
    assert!(r.passed, "gaussian, whole run: {r:?}");
    // Negative control: clipped at 8·C (d* then counts 8·C tokens), ε raised so that every σ is
    // the same, audited against the clipped run's word-release claim.
    let unclipped = gaussian(zcdp::epsilon(64.0 * rho, 1e-6), 8 * CAP);
    let out = sample(&a, &long, unclipped, RARE, 22);
    let r = check(word_claim, word_width, (0, 4), &|(u, _)| u, &out);
    assert!(!r.passed, "unclipped contributions passed: {r:?}");
}
