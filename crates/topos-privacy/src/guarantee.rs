//! What a private release promises, in a form a model file can record and commands can print.

use crate::Composition;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How the noise was drawn.
pub const SAMPLER: &str = "exact discrete Laplace (Canonne-Kamath-Steinke 2020, Alg. 1-2) on integer counts and on a 2^k lattice for reals, ChaCha20 keyed from the OS";

/// How the noise of the Gaussian mechanism was drawn.
pub const GAUSSIAN_SAMPLER: &str = "exact discrete Gaussian (Canonne-Kamath-Steinke 2020, Alg. 3, by rejection from the exact discrete Laplace) on integer counts, ChaCha20 keyed from the OS";

/// The noise distribution of a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Two-sided geometric noise on integers ([`crate::DiscreteLaplace`]).
    DiscreteLaplace,
    /// Laplace noise for reals, snapped to a power-of-two lattice ([`crate::LaplaceMechanism`]).
    SnappedLaplace,
    /// Discrete Gaussian noise on integers ([`crate::DiscreteGaussian`]), calibrated to an L2
    /// sensitivity and accounted in zCDP ([`crate::zcdp`]).
    DiscreteGaussian,
}

/// Which inputs count as neighbours (Definition 3.2.1, d(A, B) = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Neighbours {
    /// A and B differ by one whole document added or removed: what one person's document
    /// reveals is protected.
    AddRemoveDocument,
}

/// How the total ε was accounted over the releases it covers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accountant {
    /// Sum (Theorem 3) or max over disjoint parts (Theorem 4).
    pub composition: Composition,
    /// Number of noisy releases composed (e.g. the noisy word-topic counts of private training).
    pub releases: u64,
    /// `None`: basic composition of pure-ε releases (ε adds up; δ = 0). `Some(α)`: the releases
    /// were composed as Rényi DP of order α (Mironov 2017, Proposition 1) and converted to
    /// (ε, δ) with the guarantee's δ (Canonne–Kamath–Steinke 2020, Proposition 12; see
    /// [`crate::rdp`]). Absent from the JSON when `None`, so guarantees recorded before this
    /// field existed read and re-encode unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renyi_order: Option<f64>,
    /// `Some(ρ)`: the releases were composed in zero-concentrated DP (Bun & Steinke 2016,
    /// Lemma 2.3: ρ adds up) to ρ in total and converted to (ε, δ) with the guarantee's δ
    /// ([`crate::zcdp::epsilon`]). Absent from the JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zcdp_rho: Option<f64>,
}

/// A differential-privacy guarantee: (ε, δ) over `neighbours`, how it was obtained, and the
/// contribution bound it depends on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guarantee {
    /// The total ε of everything released.
    pub epsilon: f64,
    /// δ of (ε, δ)-privacy; `None` for pure ε-privacy (all mechanisms of this crate).
    pub delta: Option<f64>,
    /// The noise distribution.
    pub mechanism: Mechanism,
    /// How the releases compose into `epsilon`.
    pub accountant: Accountant,
    /// The neighbouring relation the guarantee is over.
    pub neighbours: Neighbours,
    /// The L1 sensitivity each release was calibrated to, when there is one.
    pub sensitivity: Option<f64>,
    /// The L2 sensitivity each release was calibrated to (the Gaussian mechanism: every
    /// document's contribution clipped to this L2 norm); absent from the JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_sensitivity: Option<f64>,
    /// Documents were truncated to at most this many tokens, which is what bounds a document's
    /// influence on word-topic counts (the sensitivity of private training).
    pub max_doc_tokens: Option<u32>,
    /// How the noise was drawn ([`SAMPLER`]).
    pub sampler: String,
    /// The noise scale of the model's release, when recorded (absent from the JSON when `None`,
    /// as in guarantees written before it was): b of every release of the Laplace mechanisms
    /// (P(z) ∝ e^{−|z|/b}); σ of the last release, the model, for the discrete Gaussian, whose
    /// releases split ρ unevenly since issue 25 (the word counts and the model take most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_scale: Option<f64>,
    /// The part of `epsilon` spent choosing `max_doc_tokens` privately (a private quantile of
    /// the documents' lengths, before the releases, which share the rest); `None` when the cap
    /// was given by the user (absent from the JSON then, as in guarantees written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_epsilon: Option<f64>,
}

impl Guarantee {
    /// Pure ε-privacy by discrete Laplace noise over `releases` releases of sensitivity
    /// `sensitivity` each, composed by `composition`.
    pub fn discrete_laplace(
        epsilon: f64,
        composition: Composition,
        releases: u64,
        sensitivity: f64,
    ) -> Self {
        Guarantee {
            epsilon,
            delta: None,
            mechanism: Mechanism::DiscreteLaplace,
            accountant: Accountant {
                composition,
                releases,
                renyi_order: None,
                zcdp_rho: None,
            },
            neighbours: Neighbours::AddRemoveDocument,
            sensitivity: Some(sensitivity),
            l2_sensitivity: None,
            max_doc_tokens: None,
            sampler: SAMPLER.to_string(),
            noise_scale: None,
            cap_epsilon: None,
        }
    }

    /// (ε, δ)-privacy by discrete Gaussian noise over `releases` releases of L2 sensitivity
    /// `l2_sensitivity` each, composed sequentially in zCDP to `rho` in total and converted to
    /// (`epsilon`, `delta`) ([`crate::zcdp`]).
    pub fn discrete_gaussian(
        epsilon: f64,
        delta: f64,
        releases: u64,
        l2_sensitivity: f64,
        rho: f64,
    ) -> Self {
        Guarantee {
            epsilon,
            delta: Some(delta),
            mechanism: Mechanism::DiscreteGaussian,
            accountant: Accountant {
                composition: Composition::Sequential,
                releases,
                renyi_order: None,
                zcdp_rho: Some(rho),
            },
            neighbours: Neighbours::AddRemoveDocument,
            sensitivity: None,
            l2_sensitivity: Some(l2_sensitivity),
            max_doc_tokens: None,
            sampler: GAUSSIAN_SAMPLER.to_string(),
            noise_scale: None,
            cap_epsilon: None,
        }
    }

    /// The same guarantee accounted by Rényi DP of order `order`, converted to (ε, δ).
    pub fn with_renyi(mut self, order: f64, delta: f64) -> Self {
        self.accountant.renyi_order = Some(order);
        self.delta = Some(delta);
        self
    }

    /// The same guarantee recording the noise scale b of every release.
    pub fn with_noise_scale(mut self, scale: f64) -> Self {
        self.noise_scale = Some(scale);
        self
    }

    /// The same guarantee recording that `epsilon` of its total chose the cap privately.
    pub fn with_cap_epsilon(mut self, epsilon: f64) -> Self {
        self.cap_epsilon = Some(epsilon);
        self
    }

    /// The same guarantee with documents capped at `tokens` tokens.
    pub fn with_max_doc_tokens(mut self, tokens: u32) -> Self {
        self.max_doc_tokens = Some(tokens);
        self
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.delta {
            None | Some(0.0) => write!(f, "ε = {}-differential privacy", self.epsilon)?,
            Some(d) => write!(f, "(ε = {}, δ = {d:e})-differential privacy", self.epsilon)?,
        }
        f.write_str(match self.neighbours {
            Neighbours::AddRemoveDocument => " per document (added or removed)",
        })?;
        f.write_str(match self.mechanism {
            Mechanism::DiscreteLaplace => ", discrete Laplace noise",
            Mechanism::SnappedLaplace => ", snapped Laplace noise",
            Mechanism::DiscreteGaussian => ", discrete Gaussian noise",
        })?;
        let a = &self.accountant;
        write!(
            f,
            ", {} release{} composed {}",
            a.releases,
            if a.releases == 1 { "" } else { "s" },
            match a.composition {
                Composition::Sequential => "sequentially",
                Composition::Parallel => "in parallel (disjoint parts)",
            }
        )?;
        if let Some(rho) = a.zcdp_rho {
            write!(f, " in zCDP (ρ = {rho:.6} in all)")?;
        } else if let Some(alpha) = a.renyi_order {
            write!(f, " by Rényi DP (order {alpha:.3})")?;
        } else if a.composition == Composition::Sequential && a.releases > 1 {
            f.write_str(" (basic composition)")?;
        }
        if let Some(s) = self.sensitivity {
            write!(f, ", sensitivity {s} each")?;
        }
        if let Some(s) = self.l2_sensitivity {
            write!(
                f,
                ", L2 sensitivity {s} each (every document's contribution clipped to L2 norm {s})"
            )?;
        }
        if let Some(b) = self.noise_scale {
            match self.mechanism {
                Mechanism::DiscreteGaussian => write!(f, ", noise σ {b:.4} on the model")?,
                _ => write!(f, ", noise scale {b:.4}")?,
            }
        }
        if let Some(t) = self.max_doc_tokens {
            write!(f, ", documents capped at {t} tokens")?;
        }
        if let Some(e) = self.cap_epsilon {
            write!(f, " (cap chosen privately with ε = {e:.4} of the total)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_well() {
        let g = Guarantee::discrete_laplace(1.0, Composition::Sequential, 200, 500.0)
            .with_max_doc_tokens(500);
        let json = serde_json::to_string(&g).unwrap();
        assert!(
            json.contains("\"mechanism\":\"discrete-laplace\""),
            "{json}"
        );
        assert!(
            json.contains("\"neighbours\":\"add-remove-document\""),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Guarantee>(&json).unwrap(), g);
        let s = g.to_string();
        assert!(
            s.starts_with("ε = 1-differential privacy per document"),
            "{s}"
        );
        assert!(
            s.contains("200 releases composed sequentially (basic composition)")
                && s.contains("capped at 500"),
            "{s}"
        );
        // The fields added with the Rényi accountant are absent when unset, so guarantees
        // recorded before them re-encode byte for byte.
        assert!(
            !json.contains("renyi_order") && !json.contains("noise_scale"),
            "{json}"
        );
        let r = g.clone().with_renyi(12.5, 1e-6).with_noise_scale(2500.0);
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("\"renyi_order\":12.5") && json.contains("\"delta\":1e-6"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Guarantee>(&json).unwrap(), r);
        let s = r.to_string();
        assert!(
            s.starts_with("(ε = 1, δ = 1e-6)-differential privacy"),
            "{s}"
        );
        assert!(
            s.contains("by Rényi DP (order 12.500)") && s.contains("noise scale 2500.0000"),
            "{s}"
        );
        assert!(!json.contains("cap_epsilon"), "{json}");
        let c = r.clone().with_cap_epsilon(0.05);
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"cap_epsilon\":0.05"), "{json}");
        assert_eq!(serde_json::from_str::<Guarantee>(&json).unwrap(), c);
        assert!(c
            .to_string()
            .contains("cap chosen privately with ε = 0.0500"));
        assert!(!json.contains("zcdp_rho") && !json.contains("l2_sensitivity"));
        let g = Guarantee::discrete_gaussian(1.0, 1e-6, 2, 12.0, 0.02).with_noise_scale(84.9);
        let json = serde_json::to_string(&g).unwrap();
        assert!(
            json.contains("\"mechanism\":\"discrete-gaussian\"")
                && json.contains("\"zcdp_rho\":0.02")
                && json.contains("\"l2_sensitivity\":12.0"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Guarantee>(&json).unwrap(), g);
        let s = g.to_string();
        assert!(
            s.starts_with("(ε = 1, δ = 1e-6)-differential privacy")
                && s.contains("discrete Gaussian noise")
                && s.contains("in zCDP (ρ = 0.020000 in all)")
                && s.contains("L2 sensitivity 12 each")
                && s.contains("noise σ 84.9000"),
            "{s}"
        );
    }
}
