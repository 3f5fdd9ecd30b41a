//! The noise samplers against their distributions: chi-square for the discrete Laplace
//! (two-sided geometric), Kolmogorov–Smirnov for the snapped Laplace, at several scales.
//!
//! Every test uses a fixed seed, so CI is deterministic; the thresholds are set for a false-alarm
//! rate of α = 1e-4 per check (a correct sampler would fail a check with a fresh seed with
//! probability 1e-4). Each test also shows the check has power: the same samples against a
//! distribution with a 10% different scale are rejected.

use topos_privacy::stats::{chi_square, chi_square_pvalue, ks_critical, ks_statistic};
use topos_privacy::{DiscreteLaplace, Epsilon, LaplaceMechanism, NoiseSource, Sensitivity};

const ALPHA: f64 = 1e-4;
const N: usize = 100_000;

/// Observed and expected counts over bins of z with expected count ≥ 5, plus the two tails.
fn binned(samples: &[i64], pmf: impl Fn(i64) -> f64) -> (Vec<u64>, Vec<f64>) {
    let n = samples.len() as f64;
    let mut k = 0i64;
    while n * pmf(k + 1) >= 5.0 && k < 100_000 {
        k += 1;
    }
    let centre: f64 = (-k..=k).map(&pmf).sum();
    let tail = (1.0 - centre) / 2.0;
    let mut obs = vec![0u64; (2 * k + 3) as usize];
    for &z in samples {
        let i = (z.clamp(-k - 1, k + 1) + k + 1) as usize;
        obs[i] += 1;
    }
    let mut exp = vec![n * tail];
    exp.extend((-k..=k).map(|z| n * pmf(z)));
    exp.push(n * tail);
    (obs, exp)
}

#[test]
fn discrete_laplace_chi_square_at_several_scales() {
    // (sensitivity, ε): scales 0.5, 1, 3.33…, 10, 100 and 2000.
    let cases = [
        (1u64, 2.0),
        (1, 1.0),
        (1, 0.3),
        (1, 0.1),
        (1, 0.01),
        (500, 0.25),
    ];
    for (i, &(delta, eps)) in cases.iter().enumerate() {
        let d = DiscreteLaplace::calibrated(delta, Epsilon::new(eps).unwrap()).unwrap();
        let mut src = NoiseSource::insecure_seeded(100 + i as u64);
        let samples: Vec<i64> = (0..N).map(|_| d.sample(&mut src)).collect();
        let (obs, exp) = binned(&samples, |z| d.pmf(z));
        let (stat, df) = chi_square(&obs, &exp);
        let p = chi_square_pvalue(stat, df);
        assert!(
            p > ALPHA,
            "scale {}: χ² = {stat:.1}, df = {df}, p = {p:.2e}",
            d.scale()
        );
        // Moments, as a readable cross-check.
        let mean = samples.iter().sum::<i64>() as f64 / N as f64;
        let var = samples
            .iter()
            .map(|&z| (z as f64 - mean).powi(2))
            .sum::<f64>()
            / N as f64;
        assert!(
            mean.abs() < 6.0 * (d.variance() / N as f64).sqrt(),
            "mean {mean}"
        );
        assert!(
            (var / d.variance() - 1.0).abs() < 0.05,
            "var {var} vs {}",
            d.variance()
        );

        // Power: the same samples against a 10% larger scale.
        let wrong =
            DiscreteLaplace::with_scale_ratio((d.scale() * 1.1 * 1e6).round() as u128, 1_000_000)
                .unwrap();
        let (obs, exp) = binned(&samples, |z| wrong.pmf(z));
        let (stat, df) = chi_square(&obs, &exp);
        assert!(
            chi_square_pvalue(stat, df) < ALPHA,
            "scale {}: a 10% wrong scale was not detected",
            d.scale()
        );
    }
}

fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 {
        0.5 * (x / b).exp()
    } else {
        1.0 - 0.5 * (-x / b).exp()
    }
}

#[test]
fn snapped_laplace_kolmogorov_smirnov_at_several_scales() {
    let n = 50_000;
    // (sensitivity, ε, true answer)
    let cases = [
        (1.0, 10.0, 0.0),
        (1.0, 1.0, 2.5),
        (1.0, 0.3, -7.25),
        (3.5, 0.07, 1e6 + 0.1),
        (0.001, 1.0, 0.123_456),
    ];
    for (i, &(s, eps, x)) in cases.iter().enumerate() {
        let m = LaplaceMechanism::new(Sensitivity::new(s).unwrap(), Epsilon::new(eps).unwrap(), 1)
            .unwrap();
        let b = m.scale();
        assert!(b >= s / eps && b < s / eps * (1.0 + 1e-8), "{b}");
        let mut src = NoiseSource::insecure_seeded(200 + i as u64);
        // The answer snapped to the lattice is the centre of the noise.
        let centre = (x / m.granularity()).round() * m.granularity();
        let mut noise: Vec<f64> = (0..n)
            .map(|_| m.release(&[x], &mut src).unwrap()[0] - centre)
            .collect();
        let d = ks_statistic(&mut noise, |z| laplace_cdf(z, b));
        let crit = ks_critical(n, ALPHA);
        assert!(d < crit, "b = {b}: D = {d:.5} ≥ {crit:.5}");
        let d_wrong = ks_statistic(&mut noise, |z| laplace_cdf(z, 1.1 * b));
        assert!(
            d_wrong > crit,
            "b = {b}: a 10% wrong scale was not detected"
        );
    }
}
