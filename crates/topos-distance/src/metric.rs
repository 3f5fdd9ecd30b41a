//! The 15 distances of the paper (Table 1), their names and what inputs they accept.
//!
//! Every distance d(x, y) is between a row x of the first matrix (the query) and a row y of the
//! second (the index); n is the number of columns, and for the set metrics the rows are read as
//! the sets of their non-zero columns (nx = |x|, ny = |y|, c = |x ∩ y|). Definitions follow
//! SciPy (`scipy.spatial.distance`, as `cdist` computes them) wherever SciPy has the distance:
//!
//! | metric | d(x, y) | SciPy | strategy |
//! | --- | --- | --- | --- |
//! | correlation | 1 − (x−x̄)·(y−ȳ) / (‖x−x̄‖₂‖y−ȳ‖₂), x̄ the mean over all n columns; NaN if a row is constant | `correlation` | expanded |
//! | cosine | 1 − x·y / (‖x‖₂‖y‖₂); NaN if a row is zero | `cosine` | expanded |
//! | dice | (nx + ny − 2c) / (nx + ny) on non-zero patterns; NaN if both rows are empty | `dice` (boolean) | expanded (counts) |
//! | dot-product | x·y, a similarity: nearest = largest | — | expanded |
//! | euclidean | (Σ(xᵢ−yᵢ)²)^½ | `euclidean` | expanded |
//! | canberra | Σ \|xᵢ−yᵢ\| / (\|xᵢ\|+\|yᵢ\|), 0/0 terms are 0 | `canberra` | intersection + aggregates |
//! | chebyshev | maxᵢ \|xᵢ−yᵢ\| | `chebyshev` | union (max monoid) |
//! | hamming | #{i : xᵢ ≠ yᵢ} / n | `hamming` | intersection + aggregates |
//! | hellinger | (½ Σ(√xᵢ−√yᵢ)²)^½; = (1 − Σ√(xᵢyᵢ))^½ for probability vectors; non-negative input | — | expanded |
//! | jaccard | (nx + ny − 2c) / (nx + ny − c) on non-zero patterns; 0 if both rows are empty | `jaccard` (boolean) | expanded (counts) |
//! | jensen-shannon | (½ Σ p ln(p/m) + q ln(q/m))^½, p = x/Σx, q = y/Σy, m = (p+q)/2; NaN if a row sums to 0; non-negative input | `jensenshannon` | intersection + aggregates |
//! | kl-divergence | Σ p ln(p/q), p = x/Σx, q = y/Σy; +∞ if some pᵢ > 0 where qᵢ = 0; NaN if a row sums to 0; non-negative input; not symmetric | `scipy.stats.entropy(p, q)` | intersection + aggregates |
//! | manhattan | Σ \|xᵢ−yᵢ\| | `cityblock` | intersection + aggregates |
//! | minkowski | (Σ \|xᵢ−yᵢ\|ᵖ)^(1/p), 1 ≤ p < ∞ | `minkowski` | intersection + aggregates |
//! | russell-rao | (n − c) / n on non-zero patterns; not 0 for x = y | `russellrao` (boolean) | expanded (counts) |
//!
//! "Expanded" means one sparse dot product (the ordinary ⊗ = ×, ⊕ = + semiring over the
//! intersection of non-zero columns) combined with per-row norms by an element-wise expansion
//! (paper §2.2, §3.4). "Intersection + aggregates" is exact algebra for non-annihilating
//! products (§2.2: f(a, 0) ≠ 0): the union of non-zero columns splits into x-only, y-only and
//! the intersection (Eq. 3), and for sums the x-only part equals a per-row aggregate minus the
//! intersection's share of it, e.g. L1 = ‖x‖₁ + ‖y‖₁ − Σ∩(|a|+|b|−|a−b|). Chebyshev's max has no
//! inverse, so it runs over the union itself. Where the subtraction cancels (near-duplicate
//! rows) the value is recomputed by the two-pass union form: see [`crate::kernel`].

use crate::DistanceError;
use std::fmt;
use std::str::FromStr;

/// One of the 15 distances (see the module documentation for the formulas).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    Correlation,
    Cosine,
    Dice,
    DotProduct,
    Euclidean,
    Canberra,
    Chebyshev,
    Hamming,
    Hellinger,
    Jaccard,
    JensenShannon,
    KlDivergence,
    Manhattan,
    /// Minkowski with exponent p (1 ≤ p < ∞); build it with [`Metric::minkowski`].
    Minkowski(f64),
    RussellRao,
}

/// How a metric is computed (paper Table 1, "Expansion" and "NAMM" columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// A dot product (or intersection count) plus row norms, combined element-wise.
    Expanded,
    /// One pass over the intersection plus per-row aggregates (exact algebra for sums).
    IntersectionAggregates,
    /// The non-annihilating monoid over the union of non-zero columns.
    Union,
}

impl Metric {
    /// The accepted names. Minkowski also needs its exponent: `topos` takes it as `--p P`, and
    /// [`Metric::from_str`] as `minkowski:P` (e.g. `minkowski:3`).
    pub const NAMES: [&'static str; 15] = [
        "correlation",
        "cosine",
        "dice",
        "dot-product",
        "euclidean",
        "canberra",
        "chebyshev",
        "hamming",
        "hellinger",
        "jaccard",
        "jensen-shannon",
        "kl-divergence",
        "manhattan",
        "minkowski",
        "russell-rao",
    ];

    /// All 15 metrics, Minkowski with `p` (for tests and benchmarks).
    pub fn all(p: f64) -> [Metric; 15] {
        use Metric::*;
        [
            Correlation,
            Cosine,
            Dice,
            DotProduct,
            Euclidean,
            Canberra,
            Chebyshev,
            Hamming,
            Hellinger,
            Jaccard,
            JensenShannon,
            KlDivergence,
            Manhattan,
            Minkowski(p),
            RussellRao,
        ]
    }

    /// Minkowski with exponent `p`, which must be finite and at least 1 (below 1 it is not a
    /// metric; p = ∞ is [`Metric::Chebyshev`]).
    pub fn minkowski(p: f64) -> Result<Metric, DistanceError> {
        if p.is_finite() && p >= 1.0 {
            Ok(Metric::Minkowski(p))
        } else {
            Err(DistanceError::InvalidMinkowskiP(p))
        }
    }

    /// The metric's name as accepted by [`Metric::from_str`] (without Minkowski's p).
    pub fn name(&self) -> &'static str {
        use Metric::*;
        match self {
            Correlation => "correlation",
            Cosine => "cosine",
            Dice => "dice",
            DotProduct => "dot-product",
            Euclidean => "euclidean",
            Canberra => "canberra",
            Chebyshev => "chebyshev",
            Hamming => "hamming",
            Hellinger => "hellinger",
            Jaccard => "jaccard",
            JensenShannon => "jensen-shannon",
            KlDivergence => "kl-divergence",
            Manhattan => "manhattan",
            Minkowski(_) => "minkowski",
            RussellRao => "russell-rao",
        }
    }

    /// True for the dot product, the one similarity: its nearest neighbours have the largest
    /// value. Every other metric's nearest neighbours have the smallest.
    pub fn is_similarity(&self) -> bool {
        matches!(self, Metric::DotProduct)
    }

    /// True if negative values are outside the metric's domain (they are refused).
    pub fn requires_non_negative(&self) -> bool {
        matches!(
            self,
            Metric::Hellinger | Metric::JensenShannon | Metric::KlDivergence
        )
    }

    /// How the metric is computed.
    pub fn strategy(&self) -> Strategy {
        use Metric::*;
        match self {
            Correlation | Cosine | Dice | DotProduct | Euclidean | Hellinger | Jaccard
            | RussellRao => Strategy::Expanded,
            Canberra | Hamming | JensenShannon | KlDivergence | Manhattan | Minkowski(_) => {
                Strategy::IntersectionAggregates
            }
            Chebyshev => Strategy::Union,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Minkowski(p) => write!(f, "minkowski:{p}"),
            m => f.write_str(m.name()),
        }
    }
}

impl FromStr for Metric {
    type Err = DistanceError;

    /// Parses a name, case-insensitively, with common aliases (`l1`, `cityblock`, `l2`, `js`,
    /// `kl`, `inner-product`, underscores for hyphens). Minkowski is `minkowski:P`.
    fn from_str(s: &str) -> Result<Metric, DistanceError> {
        use Metric::*;
        let lower = s.trim().to_ascii_lowercase().replace('_', "-");
        if let Some(p) = lower.strip_prefix("minkowski:") {
            let p: f64 = p
                .parse()
                .map_err(|_| DistanceError::UnknownMetric(s.to_string()))?;
            return Metric::minkowski(p);
        }
        Ok(match lower.as_str() {
            "correlation" => Correlation,
            "cosine" => Cosine,
            "dice" | "dice-sorensen" | "sorensen" => Dice,
            "dot-product" | "dot" | "inner-product" | "inner" => DotProduct,
            "euclidean" | "l2" => Euclidean,
            "canberra" => Canberra,
            "chebyshev" | "linf" => Chebyshev,
            "hamming" => Hamming,
            "hellinger" => Hellinger,
            "jaccard" => Jaccard,
            "jensen-shannon" | "jensenshannon" | "js" => JensenShannon,
            "kl-divergence" | "kl" | "kullback-leibler" => KlDivergence,
            "manhattan" | "cityblock" | "l1" => Manhattan,
            "minkowski" => return Err(DistanceError::MinkowskiNeedsP),
            "russell-rao" | "russellrao" => RussellRao,
            _ => return Err(DistanceError::UnknownMetric(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Metric::all(3.0) {
            let parsed: Metric = m.to_string().parse().unwrap();
            assert_eq!(parsed, m);
        }
        assert_eq!("L1".parse::<Metric>().unwrap(), Metric::Manhattan);
        assert_eq!(
            "jensen_shannon".parse::<Metric>().unwrap(),
            Metric::JensenShannon
        );
    }

    #[test]
    fn refuses_unknown_names_and_bad_p() {
        assert!("cosinus"
            .parse::<Metric>()
            .unwrap_err()
            .to_string()
            .contains("unknown metric"));
        // The hint names the exponent, not a garbled "unknown metric" quoting itself.
        let e = "minkowski".parse::<Metric>().unwrap_err().to_string();
        assert!(e.contains("exponent") && !e.contains("unknown"), "{e}");
        assert!("minkowski:0.5".parse::<Metric>().is_err());
        assert!("minkowski:inf".parse::<Metric>().is_err());
        assert!(Metric::minkowski(f64::NAN).is_err());
        assert_eq!(Metric::minkowski(1.5).unwrap(), Metric::Minkowski(1.5));
    }

    #[test]
    fn properties() {
        assert!(Metric::DotProduct.is_similarity());
        assert!(!Metric::Cosine.is_similarity());
        assert!(Metric::Hellinger.requires_non_negative());
        assert!(!Metric::Manhattan.requires_non_negative());
        assert_eq!(Metric::Chebyshev.strategy(), Strategy::Union);
        assert_eq!(
            Metric::Manhattan.strategy(),
            Strategy::IntersectionAggregates
        );
        assert_eq!(Metric::Cosine.strategy(), Strategy::Expanded);
    }
}
