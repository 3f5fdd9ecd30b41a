//! Collapsed Gibbs on the GPU is `fcgs`'s kernel: sequential token-by-token updates do not fit
//! a GPU, so every token sees the previous iteration's counts with its own assignment removed
//! (CuLDA_CGS §6's sampler keeps the token's own count, which biases it towards its old topic).
//! docs/training.md, "How the GPU cgs differs from the CPU's".

pub use crate::samplers::fcgs::gpu::KERNEL;
