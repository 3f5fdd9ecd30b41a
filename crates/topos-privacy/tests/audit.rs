//! Statistical privacy audits (Google's stochastic-tester approach, [`topos_privacy::audit`]):
//! outputs on neighbouring inputs satisfy P_A(bin) ≤ e^ε·P_B(bin) + slack on every bin.
//!
//! Fixed seeds; each audit's false-alarm rate is α = 1e-6 (Hoeffding + union bound over the
//! bins). Negative controls — the same mechanisms with noise 0.8 of the needed scale — must fail,
//! which shows the audit can detect a privacy loss 25% above the claim.

use topos_corpus::OwnedDocs;
use topos_privacy::audit::Audit;
use topos_privacy::query::{release, split, CountQuery};
use topos_privacy::{DiscreteLaplace, Epsilon, LaplaceMechanism, NoiseSource, Sensitivity};

const ALPHA: f64 = 1e-6;
const SAMPLES: usize = 200_000;

fn audit(eps: f64, lo: i64, hi: i64) -> Audit {
    Audit {
        epsilon: eps,
        samples: SAMPLES,
        alpha: ALPHA,
        lo,
        hi,
    }
}

#[test]
fn count_mechanism_is_private_and_a_weakened_one_is_caught() {
    for (i, eps) in [0.5, 1.0, 2.0].into_iter().enumerate() {
        let good = DiscreteLaplace::calibrated(1, Epsilon::new(eps).unwrap()).unwrap();
        // Neighbouring counts: 10 and 11 (one document more).
        let r = audit(eps, 0, 21).run(
            10i64,
            11i64,
            |x, s| x + good.sample(s),
            &mut NoiseSource::insecure_seeded(300 + i as u64),
        );
        assert!(r.passed, "ε = {eps}: {r:?}");
        let weak = DiscreteLaplace::calibrated(1, Epsilon::new(eps * 1.25).unwrap()).unwrap();
        let r = audit(eps, 0, 21).run(
            10i64,
            11i64,
            |x, s| x + weak.sample(s),
            &mut NoiseSource::insecure_seeded(310 + i as u64),
        );
        assert!(!r.passed, "ε = {eps}: weakened mechanism passed: {r:?}");
    }
}

#[test]
fn snapped_laplace_is_private() {
    let eps = 1.0;
    let m = LaplaceMechanism::new(
        Sensitivity::new(1.0).unwrap(),
        Epsilon::new(eps).unwrap(),
        1,
    )
    .unwrap();
    // Real answers 0.3 and 1.3, outputs binned by their floor.
    let r = audit(eps, -8, 10).run(
        0.3f64,
        1.3f64,
        |x, s| m.release(&[x], s).unwrap()[0].floor() as i64,
        &mut NoiseSource::insecure_seeded(320),
    );
    assert!(r.passed, "{r:?}");
}

/// Two corpora that differ by one document (which contains "river" and has 60 tokens).
fn neighbours() -> (OwnedDocs, OwnedDocs) {
    let mut a = OwnedDocs::new();
    for i in 0..300u32 {
        let len = 10 + (i * 37) % 250;
        let doc: Vec<u32> = (0..len).map(|t| (t * 7 + i) % 50).collect();
        a.push(&doc);
    }
    let mut b = OwnedDocs::from_parts(a.view().offsets().to_vec(), a.view().tokens().to_vec());
    b.push(&[3u32; 60]);
    (a, b)
}

/// The whole `topos privacy query` computation — ε split over a word count and a length
/// histogram, noise on both — audited on neighbouring corpora: the word count and the bin the
/// extra document falls in at their shares ε/2, and their sum (a function of the whole output,
/// which moves by 2) at ε.
#[test]
fn query_call_is_private_end_to_end() {
    let (a, b) = neighbours();
    let queries = vec![
        CountQuery::DocsWithWord {
            word: "river".into(),
            id: 3,
        },
        CountQuery::histogram("doc-length:0,50,200").unwrap(),
    ];
    let exact_a = [queries[0].exact(&[a.view()]), queries[1].exact(&[a.view()])];
    let exact_b = [queries[0].exact(&[b.view()]), queries[1].exact(&[b.view()])];
    assert_eq!(exact_b[0][0], exact_a[0][0] + 1);
    assert_eq!(exact_b[1][1], exact_a[1][1] + 1);
    let (count, bin) = (exact_a[0][0] as i64, exact_a[1][1] as i64);
    let eps = 1.0;
    let shares = split(Epsilon::new(eps).unwrap(), &queries).unwrap();
    let run = |shares: &[Epsilon], e: &[Vec<u64>; 2], s: &mut NoiseSource| {
        let ans = release(&queries, shares, e, s).unwrap();
        (ans[0].values[0].value, ans[1].values[1].value)
    };
    let mut seed = 330;
    let mut check =
        |claim: f64, centre: i64, pick: &dyn Fn((i64, i64)) -> i64, shares: &[Epsilon]| {
            seed += 1;
            let a = Audit {
                samples: SAMPLES / 2,
                ..audit(claim, centre - 14, centre + 14)
            };
            a.run(
                &exact_a,
                &exact_b,
                |e, s| pick(run(shares, e, s)),
                &mut NoiseSource::insecure_seeded(seed),
            )
        };
    let r = check(eps / 2.0, count, &|(c, _)| c, &shares);
    assert!(r.passed, "word count: {r:?}");
    let r = check(eps / 2.0, bin, &|(_, h)| h, &shares);
    assert!(r.passed, "histogram bin: {r:?}");
    let r = check(eps, count + bin, &|(c, h)| c + h, &shares);
    assert!(r.passed, "sum: {r:?}");
    // Negative control: a call that forgot to split ε (each sub-query noised at the whole ε)
    // is caught on the word count, which it claims is ε/2-private.
    let unsplit = vec![Epsilon::new(eps).unwrap(); 2];
    let r = check(eps / 2.0, count, &|(c, _)| c, &unsplit);
    assert!(!r.passed, "unsplit: {r:?}");
}

/// The discrete Gaussian (issue 25) against an (ε, δ) claim: answers 0 and Δ = 2 (a query of L2
/// sensitivity 2 moved by all of it in one coordinate, the worst case: the privacy loss depends
/// on the shift's L2 norm only), σ² = Δ²/(2ρ) with ρ the largest that converts to (1, 10⁻⁶);
/// outputs binned by ⌊y/4⌋. It must pass (false-alarm rate α); noise at a quarter of that σ
/// (16ρ ≈ 0.39-zCDP, i.e. ε ≈ 4.5 at δ = 10⁻⁶ in truth) must fail. This audit only detects
/// errors of about 10× in ρ; the calibration chain is checked with power by the exact-divergence
/// test in `topos-train` (`the_calibrated_sigma_meets_epsilon_by_the_exact_discrete_gaussian_divergence`).
#[test]
fn discrete_gaussian_meets_its_epsilon_delta_and_a_weakened_one_is_caught() {
    use topos_privacy::{zcdp, DiscreteGaussian};
    let (eps, delta, l2) = (1.0, 1e-6, 2.0);
    let rho = zcdp::rho_for(eps, delta).unwrap();
    let good = DiscreteGaussian::calibrated(l2, rho).unwrap();
    assert!(zcdp::epsilon(good.rho_for(l2), delta) <= eps);
    let a = audit(eps, -12, 12);
    let draw = |g: &DiscreteGaussian, seed: u64| {
        let mut src = NoiseSource::insecure_seeded(seed);
        let xa: Vec<i64> = (0..SAMPLES)
            .map(|_| g.sample(&mut src).div_euclid(4))
            .collect();
        let xb: Vec<i64> = (0..SAMPLES)
            .map(|_| (2 + g.sample(&mut src)).div_euclid(4))
            .collect();
        (xa, xb)
    };
    let (xa, xb) = draw(&good, 330);
    let r = a.check_with_delta(&xa, &xb, delta);
    eprintln!(
        "discrete Gaussian σ = {:.2}: empirical lower bound {:.4} on a claim of ε = {eps}",
        good.sigma(),
        r.epsilon_lower_bound
    );
    assert!(r.passed && r.epsilon_lower_bound <= eps, "{r:?}");
    // What the weakened noise is in truth (the number the comment above states).
    let weak_eps = zcdp::epsilon(16.0 * rho, delta);
    assert!((4.0..5.0).contains(&weak_eps), "{weak_eps}");
    let weak = DiscreteGaussian::calibrated(l2, 16.0 * rho).unwrap();
    let (xa, xb) = draw(&weak, 331);
    let r = a.check_with_delta(&xa, &xb, delta);
    assert!(!r.passed, "σ/4 passed a claim of ε = {eps}: {r:?}");
}
