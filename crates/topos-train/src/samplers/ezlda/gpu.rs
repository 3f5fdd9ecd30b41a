//! ezLDA's three-branch sampling on the GPU (thesis §1.3.2-1.3.3): the shared sampling kernel's
//! `sample_ezlda` (`cuda/kernels.cu`, `sample_body<1, 1>`), fcgs's exact draw with each word's
//! most likely topic K1 as a third branch. Per iteration `word_top2` picks every word's K1/K2 from
//! the frozen counts, the rebuild of the document rows writes each token's C1/C2 pair (its
//! document's counts of K1 and K2: ezLDA's "processing by document", with each token's word
//! from the work items), and the sampler lets a token whose random number falls in K1's branch
//! under the bound S_est of Eq. (1.10) take K1 without reading its document's row. The derivation
//! is beside the kernel; the draw is the exact collapsed conditional, as fcgs's.

use crate::sampler::GpuKernelSpec;

pub const KERNEL: GpuKernelSpec = GpuKernelSpec {
    exclude_own_assignment: true,
    three_branch: true,
    metropolis_hastings: false,
};
