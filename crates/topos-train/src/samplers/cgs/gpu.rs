//! Collapsed Gibbs on the GPU: the shared sampling kernel (`cuda/kernels.cu`) with the token's own
//! assignment removed from its document's, word's and topic's counts, the rest from the previous
//! iteration (CuLDA_CGS §6's sampler keeps it; removing it makes the draw the collapsed Gibbs
//! conditional given stale counts). Drawn exactly: the old topic's reduced weight is its own
//! branch, p₁ skips it, p₂ redraws when its tree lands on it.

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: true,
};
