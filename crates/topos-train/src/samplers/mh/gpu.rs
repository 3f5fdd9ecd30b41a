//! mhLDA's Metropolis–Hastings sampler on the GPU (thesis ch. 2, §2.2.2–2.2.3, Eq. 2.1–2.2): the
//! kernel `sample_mh` in `cuda/kernels.cu`, derived beside it. Per token, `--mh-steps` pairs of
//! a word proposal and a document proposal against fcgs's target (the token's own assignment
//! removed, the other counts the previous iteration's), as `cpu.rs` does, with two GPU forms:
//!
//! * the word proposal is LightLDA's q_w(k) ∝ (B_wk + β)/(n_k + Vβ), drawn from the word's
//!   32-ary tree that the engine builds in shared memory for every sampler (no alias tables),
//!   so its acceptance is (A_dk + α)/(A_ds + α) away from the old topic;
//! * the document proposal draws a position of the document through its frozen doc-topic row
//!   (the same law as the frozen topic of a random token, WarpLDA's trick: the chunk's
//!   assignments are overwritten as the sweep goes), mixed with α.
//!
//! A_dk is read from the document's row that the engine rebuilds every iteration: held in the
//! warp's registers for rows of at most 32·ROW_REGS non-zeros (short documents, and every row at
//! small K), read from memory 32 entries a load for longer ones. Counter-based numbers keyed by
//! (seed, iteration, token), so the model does not depend on chunking or streaming; it is not
//! the CPU's model token for token (other proposals, other numbers).

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: true,
    three_branch: false,
    metropolis_hastings: true,
};
