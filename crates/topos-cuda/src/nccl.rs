//! NCCL between the GPUs of a run: the sum (or maximum) of a device buffer over every GPU, and
//! every GPU's buffer gathered on each, on the GPUs (NVLink or PCIe peer copies), with no copy
//! through the host. `libnccl` is loaded at run time
//! like the driver; where it is missing, [`present`] says so and the engine stages its exchange
//! through the host instead.
//!
//! A communicator is joined by every GPU of the run at once ([`DeviceComm::join`], a collective):
//! the first worker makes the [`Id`] and the host transport carries it to the others (NCCL's
//! usual bootstrap through MPI, or through memory between the threads of one process).

use crate::error::GpuError;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtrMut};
use cudarc::nccl::{Comm, Id, ReduceOp};
use std::sync::Arc;

/// Whether `libnccl` loads.
pub fn present() -> bool {
    crate::device::driver_present()
        // SAFETY: only checks whether the library can be loaded.
        && unsafe { cudarc::nccl::sys::is_culib_present() }
}

fn nccl_error(what: &str, e: cudarc::nccl::result::NcclError) -> GpuError {
    // `NcclError` is not a `std::error::Error`; its Debug names the NCCL status.
    GpuError::Unsupported(format!("NCCL failed {what}: {e:?}"))
}

/// A new communicator's identity, made by the first worker and sent to the others as bytes.
pub fn new_id() -> Result<Vec<u8>, GpuError> {
    let id = Id::new().map_err(|e| nccl_error("making a communicator id", e))?;
    Ok(id.internal().iter().map(|&c| c as u8).collect())
}

/// One GPU's end of a communicator over every GPU of the run.
pub struct DeviceComm {
    comm: Comm,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time; the engine that
// owns it makes every call through `&mut self` or from the one thread that holds it.
unsafe impl Send for DeviceComm {}

impl DeviceComm {
    /// Joins the communicator `id` (from [`new_id`]) as `rank` of `workers`, enqueuing on
    /// `stream` (every collective of the communicator runs there: the caller orders it against
    /// its other streams with events). Every worker must call it at the same time: it waits for all of them.
    pub fn join(
        stream: Arc<CudaStream>,
        rank: usize,
        workers: usize,
        id: &[u8],
    ) -> Result<Self, GpuError> {
        let bytes: [std::ffi::c_char; 128] =
            std::array::from_fn(|i| id.get(i).copied().unwrap_or(0) as std::ffi::c_char);
        if id.len() != 128 {
            return Err(GpuError::Unsupported(format!(
                "an NCCL communicator id has 128 bytes, not {}",
                id.len()
            )));
        }
        stream
            .context()
            .bind_to_thread()
            .map_err(|e| GpuError::Unsupported(format!("binding the GPU to a thread: {e}")))?;
        let comm = Comm::from_rank(stream, rank, workers, Id::uninit(bytes))
            .map_err(|e| nccl_error("joining the communicator", e))?;
        Ok(DeviceComm { comm })
    }

    /// This GPU's rank in the communicator, and the number of GPUs.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }
    pub fn workers(&self) -> usize {
        self.comm.world_size()
    }

    /// `buf` (a buffer or a view of one) summed element-wise over every GPU, in place (enqueued
    /// on the communicator's stream; every worker must call it).
    pub fn sum_u32(&mut self, buf: &mut impl DevicePtrMut<u32>) -> Result<(), GpuError> {
        self.comm
            .all_reduce_in_place(buf, &ReduceOp::Sum)
            .map_err(|e| nccl_error("summing the counts", e))?;
        Ok(())
    }

    /// `buf` summed element-wise over every GPU, in place.
    pub fn sum_u64(&mut self, buf: &mut CudaSlice<u64>) -> Result<(), GpuError> {
        self.comm
            .all_reduce_in_place(buf, &ReduceOp::Sum)
            .map_err(|e| nccl_error("summing the topic totals", e))?;
        Ok(())
    }

    /// `buf` replaced by its element-wise maximum over every GPU, in place.
    pub fn max_u64(&mut self, buf: &mut CudaSlice<u64>) -> Result<(), GpuError> {
        self.comm
            .all_reduce_in_place(buf, &ReduceOp::Max)
            .map_err(|e| nccl_error("finding the largest count", e))?;
        Ok(())
    }

    /// Every GPU's `send` (of the same length on every GPU), one after another in rank order,
    /// into `recv[..workers × send.len()]`.
    pub fn gather_u32(
        &mut self,
        send: &CudaView<'_, u32>,
        recv: &mut CudaViewMut<'_, u32>,
    ) -> Result<(), GpuError> {
        self.comm
            .all_gather(send, recv)
            .map_err(|e| nccl_error("gathering the counts", e))?;
        Ok(())
    }
}
