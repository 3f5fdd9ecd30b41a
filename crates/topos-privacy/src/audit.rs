//! A statistical privacy audit in the manner of Google's differential-privacy stochastic
//! tester: run a mechanism many times on two neighbouring inputs A and B, histogram the outputs,
//! and check the definition (Eq. 3.1) on every bin, P_A(bin) ≤ e^ε·P_B(bin) and the other way
//! round, with the sampling error allowed for.
//!
//! Bins are fixed before sampling: the integers `lo..=hi`, with everything below `lo` and above
//! `hi` in two tail bins, so m = hi − lo + 3 events are tested. Each of the 2m empirical
//! frequencies is within t = √(ln(4m/α)/(2n)) of its probability with probability ≥ 1 − α
//! (Hoeffding and a union bound); then P_A ≤ e^ε·P_B implies p̂_A ≤ e^ε·p̂_B + (1 + e^ε)·t, so a
//! private mechanism fails the audit with probability at most α (the false-alarm rate).
//!
//! **(ε, δ) claims** ([`Audit::check_with_delta`], the Gaussian mechanism): (ε, δ)-DP bounds
//! every event, single bins and tails included, by P_A ≤ e^ε·P_B + δ; so the check becomes
//! p̂_A ≤ e^ε·p̂_B + δ + (1 + e^ε)·t, and the lower bound on ε is ln((p̂_X − t − δ)/(p̂_Y + t)),
//! with the same false-alarm rate α. An audit
//! is evidence, not a proof: it catches mechanisms whose privacy loss is clearly above ε (e.g.
//! noise calibrated to 0.8 of the needed scale, see the tests), not arbitrarily small violations.

use crate::NoiseSource;
use serde::Serialize;

/// Audit settings.
#[derive(Clone, Copy, Debug)]
pub struct Audit {
    /// The ε the mechanism claims.
    pub epsilon: f64,
    /// Runs on each input.
    pub samples: usize,
    /// False-alarm rate.
    pub alpha: f64,
    /// Lowest output with its own bin.
    pub lo: i64,
    /// Highest output with its own bin.
    pub hi: i64,
}

/// The outcome of an audit.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    /// Events tested.
    pub bins: usize,
    /// The allowance t for sampling error of one frequency.
    pub slack: f64,
    /// The largest of p̂_X(bin) − e^ε·p̂_Y(bin) − (1 + e^ε)·t over bins and both directions
    /// (≤ 0 passes).
    pub worst_excess: f64,
    /// The bin (output value; `lo − 1` and `hi + 1` stand for the tails) where it occurred.
    pub worst_bin: i64,
    /// The empirical lower bound on the mechanism's ε: the largest ln((p̂_X − t)/(p̂_Y + t)) over
    /// bins and both directions (0 when no bin has p̂_X > t). With probability ≥ 1 − α every
    /// frequency is within t of its probability, and then the true ε is at least this; the
    /// audit passes exactly when it does not exceed the claimed ε.
    pub epsilon_lower_bound: f64,
    /// Whether every bin passed.
    pub passed: bool,
}

impl Audit {
    /// Audits `mechanism`, which maps an input to one integer output, on inputs `a` and `b`.
    pub fn run<I: Copy, F: FnMut(I, &mut NoiseSource) -> i64>(
        &self,
        a: I,
        b: I,
        mut mechanism: F,
        src: &mut NoiseSource,
    ) -> AuditReport {
        let mut outs_a = Vec::with_capacity(self.samples);
        let mut outs_b = Vec::with_capacity(self.samples);
        for _ in 0..self.samples {
            outs_a.push(mechanism(a, src));
            outs_b.push(mechanism(b, src));
        }
        self.check(&outs_a, &outs_b)
    }

    /// Audits outputs already drawn: `a` and `b` hold `samples` independent outputs of the
    /// mechanism on each input (so one set of expensive runs can feed audits of several
    /// statistics of them; each audit's false-alarm rate is `alpha`, and by a union bound a
    /// set of them raises a false alarm with probability at most the sum).
    ///
    /// # Panics
    /// If either slice does not hold exactly `samples` outputs.
    pub fn check(&self, a: &[i64], b: &[i64]) -> AuditReport {
        self.check_with_delta(a, b, 0.0)
    }

    /// [`Audit::check`] for a claim of (ε, δ)-DP: every bin must satisfy
    /// p̂_X ≤ e^ε·p̂_Y + δ + (1 + e^ε)·t, and the lower bound is the largest
    /// ln((p̂_X − t − δ)/(p̂_Y + t)) (see the module documentation); δ = 0 is [`Audit::check`].
    ///
    /// # Panics
    /// As [`Audit::check`], or if δ is not in [0, 1).
    pub fn check_with_delta(&self, a: &[i64], b: &[i64], delta: f64) -> AuditReport {
        assert!((0.0..1.0).contains(&delta), "δ in [0, 1)");
        assert_eq!(a.len(), self.samples, "one output per sample on input a");
        assert_eq!(b.len(), self.samples, "one output per sample on input b");
        let m = (self.hi - self.lo + 3) as usize;
        let bin = |v: i64| (v.clamp(self.lo - 1, self.hi + 1) - (self.lo - 1)) as usize;
        let mut ha = vec![0u64; m];
        let mut hb = vec![0u64; m];
        for (&x, &y) in a.iter().zip(b) {
            ha[bin(x)] += 1;
            hb[bin(y)] += 1;
        }
        let n = self.samples as f64;
        let slack = ((4.0 * m as f64 / self.alpha).ln() / (2.0 * n)).sqrt();
        let e = self.epsilon.exp();
        let mut worst = f64::NEG_INFINITY;
        let mut worst_bin = 0;
        let mut bound: f64 = 0.0;
        for i in 0..m {
            let (pa, pb) = (ha[i] as f64 / n, hb[i] as f64 / n);
            for (x, y) in [(pa, pb), (pb, pa)] {
                if x > slack + delta {
                    bound = bound.max(((x - slack - delta) / (y + slack)).ln());
                }
            }
            let excess = (pa - e * pb).max(pb - e * pa) - delta - (1.0 + e) * slack;
            if excess > worst {
                worst = excess;
                worst_bin = self.lo - 1 + i as i64;
            }
        }
        AuditReport {
            bins: m,
            slack,
            worst_excess: worst,
            worst_bin,
            epsilon_lower_bound: bound,
            passed: worst <= 0.0,
        }
    }
}
