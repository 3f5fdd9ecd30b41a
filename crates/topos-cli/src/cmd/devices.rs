//! `topos devices`: the GPUs the engine can use, with memory and compute capability.

use crate::ui::Ui;
use anyhow::Result;
use serde::Serialize;
use topos_cuda::{device, DeviceInfo, GpuError};

#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Report {
    /// Why no GPU is usable (`null` when the driver answered).
    unavailable: Option<String>,
    devices: Vec<DeviceInfo>,
    nvrtc: bool,
}

pub fn run(_args: Args, ui: Ui) -> Result<()> {
    let (devices, unavailable) = match device::list() {
        Ok(d) => (d, None),
        Err(e @ GpuError::NoDriver) => (Vec::new(), Some(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let report = Report {
        unavailable,
        nvrtc: device::nvrtc_present(),
        devices,
    };
    ui.result(&report, || {
        if let Some(why) = &report.unavailable {
            println!("no GPU: {why}");
            return;
        }
        if report.devices.is_empty() {
            println!("the NVIDIA driver is loaded but reports no CUDA device; training runs on the CPU");
            return;
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        for d in &report.devices {
            println!(
                "cuda:{}  {}  {:.1} GiB ({:.1} GiB free)  compute capability {}.{}  {} multiprocessors  {:.0} MiB L2",
                d.ordinal,
                d.name,
                gib(d.total_bytes),
                gib(d.free_bytes),
                d.compute_capability.0,
                d.compute_capability.1,
                d.multiprocessors,
                d.l2_bytes as f64 / (1u64 << 20) as f64
            );
        }
        if !report.nvrtc {
            println!("warning: NVRTC (libnvrtc.so) is missing, so the kernels cannot be compiled; install the CUDA toolkit's NVRTC");
        }
    })
}
