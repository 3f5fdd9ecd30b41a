//! Where a run can execute: one trait and a registry, one line per device (candle's backends
//! behind one trait, a disabled CUDA stub when the feature is off). A device opens an
//! [`Engine`] (the iteration and reading state back) and says how much host memory a run on it
//! needs; everything else about the run is the same on every device ([`crate::run`]).

use crate::engine::{Engine, EngineSetup};
use crate::memory::{MemoryEstimate, RunShape};
use crate::sampler::Sampler;
use crate::TrainError;
use std::fmt;
use std::str::FromStr;

/// A kind of device a run can use.
pub trait Device: Sync {
    /// The name in `--device` (`cpu`, `cuda`; `cuda:N` picks the N-th of its kind).
    fn name(&self) -> &'static str;
    /// One line for `topos algos` and `topos devices`.
    fn summary(&self) -> &'static str;
    /// Whether this build and this machine can open it; the reason when not (one line: what
    /// is missing and what to do).
    fn usable(&self) -> Result<(), String>;
    /// Whether this machine has the device at all (its driver loads), so that `--device auto`
    /// mentions why it passed over a device only where one is there to be used.
    fn present(&self) -> bool;
    /// Whether `sampler` runs on it.
    fn runs(&self, sampler: &dyn Sampler) -> bool;
    /// Whether private training may run on it: its engine must accept noisy releases
    /// ([`Engine::sample_from_release`]) and draw the noise from the host's secure generator.
    fn supports_private(&self) -> bool {
        false
    }
    /// Whether its engine learns priors (`--optimize-priors`: [`Engine::prior_statistics`] and
    /// [`Engine::set_priors`]).
    fn learns_priors(&self) -> bool {
        false
    }
    /// Whether its engine adds fixed counts to its sampled ones
    /// ([`crate::engine::EngineSetup::fixed_counts`]: `topos update`, `--seed-words`).
    fn takes_fixed_counts(&self) -> bool {
        false
    }
    /// Why its engine cannot run `sampler` with `settings` (one line saying what to use
    /// instead), or `None`: the default runs every setting the sampler takes. The GPU's ezlda
    /// kernel implements the bound depth g = 2 only.
    fn settings_refusal(
        &self,
        sampler: &dyn Sampler,
        settings: &crate::sampler::SamplerSettings,
    ) -> Option<String> {
        let _ = (sampler, settings);
        None
    }
    /// Whether its engine can be one of several workers (processes under MPI), each sampling its
    /// share of the documents and summing counts through the transport.
    fn joins_workers(&self) -> bool {
        false
    }
    /// How many devices of this kind the machine has (`--device NAME:all` opens them all).
    fn count(&self) -> Result<usize, String> {
        Ok(1)
    }
    /// Why `--device NAME:N` and `NAME:all` mean nothing for this kind (one line saying what
    /// to use instead), or `None` (the default): the machine may have several, told apart by
    /// their ordinal.
    fn ordinal_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Starts opening the `ordinal`-th device in the background, if that takes long (a GPU's
    /// driver and context), so that it overlaps the host's reading of the corpus; [`open`]
    /// takes what it prepared. The default does nothing.
    ///
    /// [`open`]: Device::open
    fn prepare(&self, ordinal: Option<usize>) {
        let _ = ordinal;
    }
    /// Lets go of what [`Device::prepare`] started and [`Device::open`] did not take (the run
    /// chose another device or stopped first). The default does nothing.
    fn release_prepared(&self) {}
    /// Opens the `ordinal`-th device of this kind (`None`: the first) for a run.
    fn open(
        &self,
        ordinal: Option<usize>,
        setup: EngineSetup,
    ) -> Result<Box<dyn Engine>, TrainError>;
    /// The host memory a run of `shape` needs on this device, by item (the device's own memory
    /// is planned when it opens).
    fn host_memory(&self, shape: &RunShape, sampler: &dyn Sampler) -> MemoryEstimate;
}

/// Every device, in the order `--device auto` tries them; the last is the fallback, whose
/// refusal ends the run (the others' are reported and passed over).
pub static DEVICES: &[&dyn Device] = &[&crate::cuda::Cuda, &crate::cpu::Cpu];

/// The device named `name`.
pub fn device_named(name: &str) -> Option<&'static dyn Device> {
    DEVICES.iter().copied().find(|d| d.name() == name)
}

/// What `--device` asks for.
#[derive(Clone, Copy, Default)]
pub enum DeviceChoice {
    /// The first device of [`DEVICES`] that is usable, runs the sampler and opens (a GPU when
    /// one answers and the plan fits, else the CPU); the run says which and why.
    #[default]
    Auto,
    /// This device (`ordinal`: which of its kind).
    Named {
        device: &'static dyn Device,
        ordinal: Option<usize>,
    },
    /// Every device of this kind on the machine, one share of the documents each, in one process
    /// (`cuda:all`).
    Every { device: &'static dyn Device },
}

impl DeviceChoice {
    /// The CPU.
    pub fn cpu() -> Self {
        DeviceChoice::Named {
            device: &crate::cpu::Cpu,
            ordinal: None,
        }
    }
}

impl fmt::Debug for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Auto => f.write_str("auto"),
            DeviceChoice::Named {
                device,
                ordinal: None,
            } => f.write_str(device.name()),
            DeviceChoice::Named {
                device,
                ordinal: Some(n),
            } => write!(f, "{}:{n}", device.name()),
            DeviceChoice::Every { device } => write!(f, "{}:all", device.name()),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut names: Vec<&str> = DEVICES.iter().map(|d| d.name()).collect();
        names.sort_unstable();
        let last = names.last().copied().unwrap_or("cpu");
        let unknown = || {
            format!(
                "unknown device {s:?}: use auto, {}, {last}:N or {last}:all",
                names.join(", ")
            )
        };
        if s == "auto" {
            return Ok(DeviceChoice::Auto);
        }
        let no_ordinal = |device: &dyn Device| match device.ordinal_refusal() {
            Some(why) => Err(format!("--device {s}: {why}")),
            None => Ok(()),
        };
        if let Some(name) = s.strip_suffix(":all") {
            let device = device_named(name).ok_or_else(unknown)?;
            no_ordinal(device)?;
            return Ok(DeviceChoice::Every { device });
        }
        let (name, ordinal) = match s.split_once(':') {
            None => (if s == "gpu" { "cuda" } else { s }, None),
            Some((n, o)) => (n, Some(o.parse::<usize>().map_err(|_| unknown())?)),
        };
        let device = device_named(name).ok_or_else(unknown)?;
        if ordinal.is_some() {
            no_ordinal(device)?;
        }
        Ok(DeviceChoice::Named { device, ordinal })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_print() {
        for s in ["auto", "cpu", "cuda", "cuda:3", "cuda:all"] {
            assert_eq!(s.parse::<DeviceChoice>().unwrap().to_string(), s);
        }
        assert_eq!("gpu".parse::<DeviceChoice>().unwrap().to_string(), "cuda");
        for bad in ["cpu:0", "cpu:all"] {
            let e = bad.parse::<DeviceChoice>().unwrap_err();
            assert!(
                e.contains("the CPU is one device") && e.contains("--threads"),
                "{e}"
            );
        }
        for bad in ["cuda:", "cuda:x", "tpu", "cuda:-1", ""] {
            let e = bad.parse::<DeviceChoice>().unwrap_err();
            assert!(e.contains("auto, cpu, cuda, cuda:N or cuda:all"), "{e}");
        }
    }
}
