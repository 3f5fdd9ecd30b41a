//! How privacy losses add up (thesis §3.3.1, after PINQ, McSherry 2009).
//!
//! * [`Composition::Sequential`], Theorem 3: mechanisms with losses ε_i run on the *same* data
//!   cost Σ ε_i together.
//! * [`Composition::Parallel`], Theorem 4: mechanisms run on *disjoint* parts of the data (one
//!   document can be in only one part) cost max ε_i together.
//! * [`Stable`], Theorem 2 **as corrected**: a mechanism that is ε-private run on the output of a
//!   c-stable transformation T (Definition 3.3.4, |T(A) ⊕ T(B)| ≤ c·|A ⊕ B|) is **c·ε**-private
//!   with respect to the original data (PINQ, Theorem 2). The thesis's statement prints "ε × ε";
//!   c·ε is what the proof gives: one record changes at most c records of T's output, and each
//!   costs ε. Equivalently the query F∘T has sensitivity at most c·S(F).

use crate::{Epsilon, PrivacyError, Sensitivity};
use serde::{Deserialize, Serialize};

/// How the losses of several sub-queries combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Composition {
    /// Sub-queries over the same data: the total is the sum (Theorem 3).
    Sequential,
    /// Sub-queries over disjoint parts: the total is the maximum (Theorem 4).
    Parallel,
}

impl Composition {
    /// The total loss of sub-queries with losses `parts` (None for no parts).
    pub fn total(self, parts: &[Epsilon]) -> Option<Epsilon> {
        let it = parts.iter().map(|e| e.get());
        let v = match self {
            Composition::Sequential => it.sum::<f64>(),
            Composition::Parallel => it.fold(0.0, f64::max),
        };
        Epsilon::new(v).ok()
    }

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Composition::Sequential => "sequential (sum, Theorem 3)",
            Composition::Parallel => "parallel over disjoint parts (max, Theorem 4)",
        }
    }
}

/// A c-stable transformation (Definition 3.3.4): one record in changes at most c records out.
/// `WHERE` and `SELECT` are 1-stable, `GROUP BY` is 2-stable (§3.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stable {
    c: f64,
}

impl Stable {
    /// A c-stable transformation, c > 0 finite.
    pub fn new(c: f64) -> Result<Self, PrivacyError> {
        if c.is_finite() && c > 0.0 {
            Ok(Stable { c })
        } else {
            Err(PrivacyError::NotPositive {
                what: "stability constant c",
                value: c,
            })
        }
    }

    /// The identity (1-stable).
    pub const IDENTITY: Stable = Stable { c: 1.0 };

    /// The constant c.
    pub fn c(self) -> f64 {
        self.c
    }

    /// Theorem 2, corrected: an ε-private mechanism applied after this transformation is
    /// c·ε-private for the original data.
    pub fn privacy_of(self, eps: Epsilon) -> Epsilon {
        Epsilon::new(self.c * eps.get()).expect("c·ε of positive finite numbers")
    }

    /// The sensitivity of F∘T given F's: at most c·S(F). Calibrating noise to this gives ε
    /// for the original data directly.
    pub fn sensitivity(self, s: Sensitivity) -> Sensitivity {
        Sensitivity::new(self.c * s.get()).expect("c·S of positive finite numbers")
    }

    /// T₂∘T₁ is (c₁·c₂)-stable.
    pub fn then(self, next: Stable) -> Stable {
        Stable { c: self.c * next.c }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(x: f64) -> Epsilon {
        Epsilon::new(x).unwrap()
    }

    #[test]
    fn theorems_2_3_4() {
        let parts = [e(0.1), e(0.2), e(0.5)];
        assert!((Composition::Sequential.total(&parts).unwrap().get() - 0.8).abs() < 1e-15);
        assert_eq!(Composition::Parallel.total(&parts).unwrap().get(), 0.5);
        assert!(Composition::Sequential.total(&[]).is_none());
        // GROUP BY (2-stable) then WHERE (1-stable) then an ε = 0.5 mechanism: ε = 1.0, not 0.25.
        let t = Stable::new(2.0).unwrap().then(Stable::IDENTITY);
        assert_eq!(t.privacy_of(e(0.5)).get(), 1.0);
        assert_eq!(t.sensitivity(Sensitivity::COUNT).get(), 2.0);
        assert!(Stable::new(0.0).is_err() && Stable::new(f64::NAN).is_err());
    }
}
