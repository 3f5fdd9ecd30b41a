//! ESCA on the GPU: the shared sampling kernel (`cuda/kernels.cu`, SaberLDA §3.2) with every
//! count of the previous iteration as it is, the token's own assignment included (Eq. 1).

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: false,
    three_branch: false,
    metropolis_hastings: false,
};
