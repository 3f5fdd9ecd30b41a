//! The sampler registry: one line per sampler, the default first. Each sampler is a folder:
//! `mod.rs` (what it is: the [`Sampler`] registry entry), `cpu.rs` (its CPU sweep), `gpu.rs`
//! (what the GPU kernel must do for it).

use crate::sampler::Sampler;

pub mod cgs;
pub mod esca;
pub mod ezlda;
pub mod fcgs;
pub mod mfm;
pub mod mh;

/// Every sampler, the default first (`--algo`, `topos algos`).
pub static SAMPLERS: &[&dyn Sampler] = &[
    &cgs::Cgs,
    &fcgs::Fcgs,
    &esca::Esca,
    &mh::Mh,
    &ezlda::Ezlda,
    &mfm::Mfm,
];
