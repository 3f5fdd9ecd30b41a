//! Errors of the GPU engines. Every CUDA call's result is checked and carries what was being done.

use std::fmt;

/// Why the GPU engine could not run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no NVIDIA driver found (libcuda.so could not be loaded); install the NVIDIA driver or use --device cpu")]
    NoDriver,
    #[error("the NVRTC runtime compiler (libnvrtc.so) could not be loaded; install the CUDA toolkit's NVRTC (CUDA 12 or 13) or use --device cpu")]
    NoNvrtc,
    #[error("no CUDA device found; use --device cpu")]
    NoDevice,
    #[error("CUDA device {ordinal} does not exist ({count} found: cuda:0 to cuda:{last}); see `topos devices`", last = count.saturating_sub(1))]
    NoSuchDevice { ordinal: usize, count: usize },
    #[error("{what}: {source}")]
    Driver {
        what: Context,
        source: cudarc::driver::DriverError,
    },
    #[error("compiling the CUDA kernels with NVRTC failed: {0}")]
    Compile(String),
    /// The memory plan of an engine does not fit (the message says what to do).
    #[error("{0}")]
    Plan(String),
    #[error("{0}")]
    Unsupported(String),
}

/// What the engine was doing when a CUDA call failed.
#[derive(Debug)]
pub struct Context(pub String);

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Adds context to a driver result.
pub trait Check<T> {
    fn check(self, what: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> Check<T> for Result<T, cudarc::driver::DriverError> {
    fn check(self, what: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver {
            what: Context(what()),
            source,
        })
    }
}
