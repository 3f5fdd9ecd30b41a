//! The fold-in options that `eval`, `infer` and `similar` share (Gibbs sweeps with φ fixed).

use topos_model::FoldInOptions;

/// `--sweeps`, `--burn-in` and `--seed` of a fold-in chain; defaults are [`FoldInOptions`]'s.
#[derive(clap::Args, Debug)]
pub struct FoldInArgs {
    /// Fold-in Gibbs sweeps per document.
    #[arg(long, default_value_t = FoldInOptions::default().sweeps)]
    pub sweeps: u32,
    /// Sweeps discarded before averaging θ.
    #[arg(long, default_value_t = FoldInOptions::default().burn_in)]
    pub burn_in: u32,
    /// Seed of the fold-in chains.
    #[arg(long, default_value_t = FoldInOptions::default().seed)]
    pub seed: u64,
}

impl FoldInArgs {
    /// The options, checked: commands call this before reading their input, so that a bad
    /// `--sweeps`/`--burn-in` is refused before any work.
    pub fn checked(&self) -> anyhow::Result<FoldInOptions> {
        let o = self.options();
        o.validate()?;
        Ok(o)
    }

    pub fn options(&self) -> FoldInOptions {
        FoldInOptions {
            sweeps: self.sweeps,
            burn_in: self.burn_in,
            seed: self.seed,
        }
    }
}
