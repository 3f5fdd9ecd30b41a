//! Frozen-count collapsed Gibbs on the GPU: the shared sampling kernel (`cuda/kernels.cu`) with
//! the token's own assignment removed from its document's, word's and topic's counts, the rest
//! from the previous iteration. ESCA's draw is the proposal and a rejection step corrects it
//! (derived beside the kernel and in `samplers/esca/cpu.rs`): the cost over ESCA is one lookup of
//! the document's count of the old topic, only when the draw lands on it.

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: true,
};
