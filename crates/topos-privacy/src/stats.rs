//! Goodness-of-fit statistics for testing samplers against their distributions: the
//! Kolmogorov–Smirnov statistic for continuous laws and Pearson's chi-square for discrete ones.

/// The KS statistic sup_x |F̂_n(x) − F(x)| of `samples` (sorted in place) against `cdf`.
pub fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in samples.iter().enumerate() {
        let f = cdf(x);
        d = d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n);
    }
    d
}

/// The KS critical value at false-alarm rate `alpha` for `n` samples (asymptotic Kolmogorov
/// distribution, accurate for n ≳ 100): reject when D > √(−ln(α/2)/2)/√n.
pub fn ks_critical(n: usize, alpha: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt() / (n as f64).sqrt()
}

/// Pearson's statistic Σ (O − E)²/E and its degrees of freedom (bins − 1).
pub fn chi_square(observed: &[u64], expected: &[f64]) -> (f64, usize) {
    assert_eq!(observed.len(), expected.len());
    let stat = observed
        .iter()
        .zip(expected)
        .map(|(&o, &e)| (o as f64 - e).powi(2) / e)
        .sum();
    (stat, observed.len() - 1)
}

/// P(χ²_df ≥ stat): the upper regularised incomplete gamma Q(df/2, stat/2).
pub fn chi_square_pvalue(stat: f64, df: usize) -> f64 {
    gamma_q(df as f64 / 2.0, stat / 2.0)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9), |error| < 1e-14 for x > 0.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Q(a, x) = Γ(a, x)/Γ(a), by the series for x < a + 1 and Lentz's continued fraction beyond.
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let lead = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let mut sum = 1.0 / a;
        let mut term = sum;
        let mut ap = a;
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * lead
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        lead * h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // χ²: P(χ²_1 ≥ 3.841) ≈ 0.05, P(χ²_10 ≥ 18.307) ≈ 0.05, P(χ²_2 ≥ x) = e^{−x/2}.
        assert!((chi_square_pvalue(3.841_458_8, 1) - 0.05).abs() < 1e-6);
        assert!((chi_square_pvalue(18.307_038, 10) - 0.05).abs() < 1e-6);
        assert!((chi_square_pvalue(7.0, 2) - (-3.5f64).exp()).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ks_critical(10_000, 0.05) - 0.013_581).abs() < 1e-5);
        let mut u: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        assert!(ks_statistic(&mut u, |x| x) <= 0.000_5 + 1e-12);
    }
}
