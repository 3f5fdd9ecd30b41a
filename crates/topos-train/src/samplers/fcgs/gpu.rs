//! Frozen-count collapsed Gibbs on the GPU: the shared sampling kernel (`cuda/kernels.cu`,
//! `sample_body<1, 0>`) with the token's own assignment removed from its document's, word's and
//! topic's counts, the rest from the previous iteration, drawn exactly: the old topic's weight
//! without the token first, then the document row and the word's tree with the old topic left
//! out (derived beside the kernel; the CPU's rejection form is in `samplers/esca/cpu.rs`).

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: true,
    three_branch: false,
    metropolis_hastings: false,
};
