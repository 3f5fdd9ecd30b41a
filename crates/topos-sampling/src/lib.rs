//! Sampling primitives shared by every Topos sampler, on the CPU and (with the same arithmetic)
//! in the CUDA kernels:
//!
//! * [`rng`]: the counter-based Philox4x32-10 generator. Every random number Topos draws is a pure
//!   function of `(seed, stream, iteration, index)`, which is what makes training bit-identical for
//!   any number of threads (ARCHITECTURE.md, Principles: "Deterministic by design").
//! * [`wary_tree`]: SaberLDA's W-ary sampling tree (§3.2.4, Fig. 6) with W = 32: built once per word
//!   per iteration, sampled in O(log₃₂ K).
//! * [`blocked_sums`]: weights in blocks of 32 with running sums: O(1) updates and
//!   O(K/32 + 32) draws, for branches that change on every token but are drawn from rarely.
//! * [`alias`]: Walker/Vose alias tables, O(1) sampling after an O(K) build.
//! * [`discrete`]: linear search in a small prefix-sum array (the sparse doc-topic branch).

pub mod alias;
pub mod blocked_sums;
pub mod discrete;
pub mod rng;
pub mod wary_tree;

pub use alias::AliasTable;
pub use blocked_sums::BlockedSums;
pub use rng::{CounterRng, Philox4x32, Stream};
pub use wary_tree::WaryTree;
