//! The CUDA runtime under Topos's GPU engines (the LDA engine in `topos-train`, the k-NN engine
//! in `topos-distance`): what every engine needs and nothing about LDA or distances.
//!
//! * [`device`]: `--device` specs, finding GPUs with the driver loaded at run time.
//! * [`error`]: [`GpuError`], every driver call's result with what was being done.
//! * [`compile`]: NVRTC compilation with an on-disk cache of the PTX.
//! * [`pinned`]: page-locked host memory for streaming, with a pageable fallback.
//! * [`lanes`]: the two streams a streamed corpus's chunks take in turn.
//! * [`nccl`]: sums of device buffers over the GPUs of a run (NCCL, loaded at run time).
//! * [`tuning`]: the `TOPOS_GPU_*` knobs, read once.
//!
//! Nothing here links CUDA at build time: cudarc loads `libcuda` and `libnvrtc` when first asked,
//! and every entry point checks that they load first, so a machine without a GPU gets
//! [`GpuError::NoDriver`], never a panic.

pub mod compile;
pub mod device;
pub mod error;
pub mod lanes;
pub mod nccl;
pub mod pinned;
pub mod tuning;

pub use cudarc;
pub use device::{DeviceInfo, DeviceSpec};
pub use error::{Check, GpuError};
