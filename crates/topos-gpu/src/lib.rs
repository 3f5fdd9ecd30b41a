//! Topos's GPU engines (one NVIDIA GPU): LDA training, and sparse k-nearest neighbours.
//!
//! * [`device`]: `--device` specs, finding GPUs with the driver loaded at run time.
//! * [`plan`]: the memory planner (resident or streamed in chunks), printed before a run.
//! * [`word_topics`]: the word-topic counts dense or in ezLDA's hybrid dense/hashed format.
//! * [`chunks`]: the PDOW chunk arrays and work items the kernels read.
//! * [`engine`]: the kernels (CUDA C in `kernels.cu`, compiled by NVRTC for the device) and one
//!   iteration on the device: ESCA (SaberLDA Alg. 1–2) or the stale-count collapsed Gibbs
//!   sampler (CuLDA_CGS §6 with the token's own assignment removed).
//! * [`session`]: a run behind `topos_train::Session`, so the binary drives CPU and GPU alike.
//! * [`distance`]: `topos_distance`'s `Backend` on the GPU (CUDA C in `knn.cu`): k-NN and
//!   distance rows for all 15 metrics, the CPU engine's numbers.
//!
//! Nothing here links CUDA at build time: the workspace builds and its CPU tests run on machines
//! without a GPU, where every entry point returns [`GpuError::NoDriver`].

pub mod chunks;
pub mod device;
pub mod distance;
pub mod engine;
pub mod error;
pub mod plan;
pub mod session;
pub mod word_topics;

pub use device::{DeviceInfo, DeviceSpec};
pub use error::GpuError;
pub use plan::{Plan, PlanError};
pub use session::{GpuOptions, GpuSession};
