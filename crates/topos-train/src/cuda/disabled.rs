//! The CUDA device in a build without the `cuda` feature: present in the registry, never usable.

use super::Cuda;
use crate::device::Device;
use crate::engine::{Engine, EngineSetup};
use crate::memory::{MemoryEstimate, RunShape};
use crate::sampler::Sampler;
use crate::TrainError;

const NO_GPU: &str = "this build of topos has no GPU support (built without the `cuda` feature); rebuild with default features (cargo build --release -p topos-cli) or use --device cpu";

impl Device for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn summary(&self) -> &'static str {
        "one NVIDIA GPU (not in this build)"
    }
    fn usable(&self) -> Result<(), String> {
        Err(NO_GPU.into())
    }
    fn present(&self) -> bool {
        false
    }
    fn runs(&self, sampler: &dyn Sampler) -> bool {
        sampler.gpu().is_some()
    }
    fn settings_refusal(
        &self,
        sampler: &dyn Sampler,
        settings: &crate::sampler::SamplerSettings,
    ) -> Option<String> {
        super::settings_refusal(sampler, settings)
    }
    fn open(&self, _: Option<usize>, _: EngineSetup) -> Result<Box<dyn Engine>, TrainError> {
        Err(TrainError::Unsupported(NO_GPU.into()))
    }
    fn host_memory(&self, shape: &RunShape, _sampler: &dyn Sampler) -> MemoryEstimate {
        super::host_memory(shape, false, false)
    }
}
