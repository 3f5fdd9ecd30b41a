//! Finding GPUs: `--device` specs, the driver loaded at run time, and what `topos devices` lists.
//!
//! cudarc loads `libcuda` and `libnvrtc` on first use and panics if they are missing, so every
//! entry point here asks whether the libraries load before touching the driver: a machine without
//! a GPU gets [`GpuError::NoDriver`], never a panic.

use crate::error::{Check, GpuError};
use cudarc::driver::{sys::CUdevice_attribute as Attr, CudaContext};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Where to train (`--device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    /// A GPU when one is usable, the CPU otherwise (the default).
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// A CUDA GPU; `None` is the first.
    Cuda(Option<usize>),
}

impl FromStr for DeviceSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(DeviceSpec::Auto),
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" | "gpu" => Ok(DeviceSpec::Cuda(None)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse::<usize>().ok())
                .map(|n| DeviceSpec::Cuda(Some(n)))
                .ok_or_else(|| format!("unknown device {s:?}: use auto, cpu, cuda or cuda:N")),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Auto => f.write_str("auto"),
            DeviceSpec::Cpu => f.write_str("cpu"),
            DeviceSpec::Cuda(None) => f.write_str("cuda"),
            DeviceSpec::Cuda(Some(n)) => write!(f, "cuda:{n}"),
        }
    }
}

/// One GPU as `topos devices` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// (major, minor).
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: u64,
    /// Largest dynamic shared memory one block may opt into.
    pub max_shared_per_block: u32,
    /// Shared memory of one multiprocessor.
    pub shared_per_multiprocessor: u32,
}

/// Whether the driver library loads (no GPU calls are made).
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether NVRTC loads.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the shared library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Number of CUDA devices (0 when there is no driver).
pub fn device_count() -> Result<usize, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    let n = CudaContext::device_count().check(|| "counting CUDA devices".into())?;
    Ok(n.max(0) as usize)
}

/// A context being opened in the background by [`prewarm`]: its ordinal and the thread.
type Warming = (
    usize,
    std::thread::JoinHandle<Result<Arc<CudaContext>, GpuError>>,
);
static WARMING: std::sync::Mutex<Option<Warming>> = std::sync::Mutex::new(None);

/// Starts opening device `ordinal` (`None`: the first) on a background thread, so that the
/// driver's start (0.1–0.3 s for a context) overlaps the host's own (reading the corpus); the
/// next [`open`] of that device takes the context. Errors wait for that [`open`], which reports
/// them. A second call while one is pending does nothing.
pub fn prewarm(ordinal: Option<usize>) {
    let mut w = WARMING.lock().unwrap_or_else(|e| e.into_inner());
    if w.is_none() {
        let o = ordinal.unwrap_or(0);
        *w = Some((o, std::thread::spawn(move || open_now(Some(o)))));
    }
}

/// Drops a context [`prewarm`] opened that no [`open`] took (the run went to another device or
/// stopped before opening one), so it does not hold the GPU's memory until the process ends.
pub fn abandon_prewarm() {
    let warming = WARMING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((_, thread)) = warming {
        let _ = thread.join();
    }
}

/// Opens the device `spec` names (`Cuda(None)` is device 0); checks driver, NVRTC and ordinal.
/// Takes the context [`prewarm`] opened for the same device.
pub fn open(ordinal: Option<usize>) -> Result<Arc<CudaContext>, GpuError> {
    let warming = WARMING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((o, thread)) = warming {
        let opened = thread.join();
        if o == ordinal.unwrap_or(0) {
            if let Ok(Ok(ctx)) = opened {
                return Ok(ctx);
            }
        }
    }
    open_now(ordinal)
}

fn open_now(ordinal: Option<usize>) -> Result<Arc<CudaContext>, GpuError> {
    let count = device_count()?;
    if count == 0 {
        return Err(GpuError::NoDevice);
    }
    if !nvrtc_present() {
        return Err(GpuError::NoNvrtc);
    }
    let ordinal = ordinal.unwrap_or(0);
    if ordinal >= count {
        return Err(GpuError::NoSuchDevice { ordinal, count });
    }
    CudaContext::new(ordinal).check(|| format!("opening CUDA device {ordinal}"))
}

/// Facts about an open device.
pub fn info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, GpuError> {
    let o = ctx.ordinal();
    let what = |s: &str| format!("reading {s} of CUDA device {o}");
    let (free, total) = ctx.mem_get_info().check(|| what("free memory"))?;
    Ok(DeviceInfo {
        ordinal: o,
        name: ctx.name().check(|| what("the name"))?,
        total_bytes: total as u64,
        free_bytes: free as u64,
        compute_capability: ctx
            .compute_capability()
            .check(|| what("the compute capability"))?,
        multiprocessors: ctx
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .check(|| what("the multiprocessor count"))? as u32,
        l2_bytes: ctx
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .check(|| what("the L2 size"))? as u64,
        max_shared_per_block: ctx
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .check(|| what("the shared-memory limit"))? as u32,
        shared_per_multiprocessor: ctx
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
            .check(|| what("the shared memory per multiprocessor"))?
            as u32,
    })
}

/// Every CUDA device of the machine.
pub fn list() -> Result<Vec<DeviceInfo>, GpuError> {
    let count = device_count()?;
    (0..count)
        .map(|o| {
            let ctx = CudaContext::new(o).check(|| format!("opening CUDA device {o}"))?;
            info(&ctx)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for (s, d) in [
            ("auto", DeviceSpec::Auto),
            ("cpu", DeviceSpec::Cpu),
            ("cuda", DeviceSpec::Cuda(None)),
            ("cuda:3", DeviceSpec::Cuda(Some(3))),
        ] {
            assert_eq!(s.parse::<DeviceSpec>().unwrap(), d);
            assert_eq!(d.to_string(), s);
        }
        for bad in ["cuda:", "cuda:x", "tpu", "cuda:-1", ""] {
            let e = bad.parse::<DeviceSpec>().unwrap_err();
            assert!(e.contains("auto, cpu, cuda or cuda:N"), "{e}");
        }
    }

    /// On a machine without the driver (CI) the answer is an error, never a panic.
    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        if driver_present() {
            return;
        }
        assert!(matches!(device_count(), Err(GpuError::NoDriver)));
        assert!(matches!(open(None), Err(GpuError::NoDriver)));
        assert!(matches!(list(), Err(GpuError::NoDriver)));
    }
}
