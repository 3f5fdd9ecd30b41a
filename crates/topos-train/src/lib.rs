//! LDA training on the CPU.
//!
//! * [`layout`]: the PDOW layout (partition by document, order by word), SaberLDA §3.1.4.
//! * [`esca`]: the ESCA sampler (SaberLDA Alg. 1–2), the default: fast and bit-identical for any
//!   number of threads.
//! * [`cgs`]: the sparse collapsed Gibbs sampler (SparseLDA / CuLDA_CGS §6.1), exact within a
//!   partition, AD-LDA across partitions: the reference.
//! * [`counts`]: the M-step, counts rebuilt from the assignments.
//! * [`trainer`]: the loop that ties them together; [`checkpoint`]: resumable state.
//! * [`private`]: differentially private training (`--private`): capped documents, every
//!   iteration sampling from a noisy release of the word-topic counts; proof sketch there.
//! * [`session`]: the trait the binary drives, implemented by [`Trainer`] here and by the GPU
//!   engine of `topos-gpu`.
//! * [`synthetic`]: corpora drawn from the LDA generative model with known topics.

pub mod cgs;
pub mod checkpoint;
pub mod counts;
pub mod esca;
pub mod fixed_sum;
pub mod layout;
pub mod loglik;
pub mod memory;
pub mod private;
pub mod session;
pub mod synthetic;
pub mod trainer;

pub use checkpoint::Checkpoint;
pub use private::{PrivateOptions, Releases};
pub use session::Session;
pub use trainer::{
    default_partitions, Algorithm, IterationStats, TrainError, TrainOptions, Trainer,
};
