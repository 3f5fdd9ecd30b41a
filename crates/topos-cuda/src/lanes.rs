//! Two streams that carry a streamed corpus's chunks in turn (chunk i on lane i % 2, in device
//! slot i % 2), so that one chunk's copies run beside the other's kernels (CuLDA_CGS's
//! WorkSchedule2), ordered against the stream that holds the model with events. The LDA engine
//! and `mfm`'s engine stream through the same pair.

use crate::error::{Check, GpuError};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// The two chunk streams of an engine.
pub struct Lanes {
    lanes: [Arc<CudaStream>; 2],
}

impl Lanes {
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self, GpuError> {
        let lane = || ctx.new_stream().check(|| "creating a CUDA stream".into());
        Ok(Lanes {
            lanes: [lane()?, lane()?],
        })
    }

    /// The lane of chunk `i` (and of its device slot, `i % 2`).
    pub fn of(&self, i: usize) -> &Arc<CudaStream> {
        &self.lanes[i % 2]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<CudaStream>> {
        self.lanes.iter()
    }

    /// Both lanes begin after the work queued on `main` so far.
    pub fn follow(&self, main: &CudaStream) -> Result<(), GpuError> {
        let ready = main
            .record_event(None)
            .check(|| "recording a CUDA event".into())?;
        for l in &self.lanes {
            l.wait(&ready).check(|| "ordering streams".into())?;
        }
        Ok(())
    }

    /// `main` continues after the work queued on both lanes so far.
    pub fn join(&self, main: &CudaStream) -> Result<(), GpuError> {
        for l in &self.lanes {
            let done = l
                .record_event(None)
                .check(|| "recording a CUDA event".into())?;
            main.wait(&done).check(|| "ordering streams".into())?;
        }
        Ok(())
    }

    /// Waits on the host for the work queued on both lanes.
    pub fn synchronize(&self, what: impl Fn() -> String) -> Result<(), GpuError> {
        for l in &self.lanes {
            l.synchronize().check(&what)?;
        }
        Ok(())
    }
}
