//! Page-locked host memory, for chunks that stream through the device every iteration, with
//! pageable memory as the fallback where page-locking is refused ([`HostBuffer`]).

use crate::error::{Check, GpuError};
use cudarc::driver::{
    CudaContext, CudaStream, DeviceRepr, HostSlice, PinnedHostSlice, SyncOnDrop, ValidAsZeroBits,
};
use std::sync::Arc;

/// `len` elements of page-locked host memory (at least one), to be filled by the caller.
fn pinned_zeroed<T: DeviceRepr + ValidAsZeroBits>(
    ctx: &Arc<CudaContext>,
    len: usize,
    write_combined: bool,
) -> Result<PinnedHostSlice<T>, GpuError> {
    let flags = if write_combined {
        cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED
    } else {
        0
    };
    let bytes = len * std::mem::size_of::<T>();
    // SAFETY: ValidAsZeroBits: the caller fills it before reading; reading it unfilled reads
    // whatever the allocator returned, which is a valid T.
    unsafe { ctx.alloc_pinned_with_flags::<T>(len.max(1), flags) }
        .check(|| format!("allocating {bytes} bytes of page-locked host memory for streaming"))
}

/// Host memory a streamed corpus keeps between its trips to the device: page-locked where the
/// driver grants it, so that copies run beside kernels; ordinary pageable memory where it does
/// not (a host short of memory it can lock, a container or VM that caps page-locked memory, or
/// `TOPOS_GPU_PAGEABLE=1`). With pageable memory the driver stages the copies through its own
/// buffers, so they mostly do not overlap kernels, and the run goes on instead of failing. Either
/// way the caller orders host reads and writes after the copies with the stream (synchronizing
/// it, or an event), as for any host memory.
pub enum HostBuffer<T> {
    Pinned(PinnedHostSlice<T>),
    Pageable(Vec<T>),
}

/// Set at the first refusal: the process's later buffers go pageable without asking again, so
/// that small buffers do not take the last memory the host could lock while the large ones go
/// pageable.
static REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a failed page-locked allocation is the driver refusing the memory (then pageable
/// memory may serve) rather than another failure (a broken context, say), which must surface.
fn refusal(e: &GpuError) -> bool {
    use cudarc::driver::sys::cudaError_enum as E;
    matches!(
        e,
        GpuError::Driver { source, .. } if matches!(
            source.0,
            E::CUDA_ERROR_OUT_OF_MEMORY
                | E::CUDA_ERROR_NOT_PERMITTED
                | E::CUDA_ERROR_NOT_SUPPORTED
                | E::CUDA_ERROR_OPERATING_SYSTEM
        )
    )
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Default> HostBuffer<T> {
    /// `len` elements (at least one), page-locked if the driver grants them, else pageable;
    /// zeroed when pageable, to be filled by the caller either way. An error when the driver
    /// fails for another reason than refusing the memory, or when even pageable memory cannot
    /// be had.
    pub fn zeroed(
        ctx: &Arc<CudaContext>,
        len: usize,
        write_combined: bool,
    ) -> Result<Self, GpuError> {
        use std::sync::atomic::Ordering;
        if !crate::tuning::Tuning::get().pageable && !REFUSED.load(Ordering::Relaxed) {
            match pinned_zeroed(ctx, len, write_combined) {
                Ok(p) => return Ok(HostBuffer::Pinned(p)),
                Err(e) if refusal(&e) => REFUSED.store(true, Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        let n = len.max(1);
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| {
            GpuError::Unsupported(format!(
                "allocating {} bytes of host memory for streaming failed; free host memory or stream fewer tokens at once (--gpu-memory)",
                n * std::mem::size_of::<T>()
            ))
        })?;
        v.resize(n, T::default());
        Ok(HostBuffer::Pageable(v))
    }

    /// The buffer in `slot` if it holds at least `len` elements, else a new one of `len` put
    /// there (the old one freed first): host memory reused across copies of varying size, so
    /// that each copy does not fault in fresh pages.
    pub fn at_least<'a>(
        slot: &'a mut Option<Self>,
        ctx: &Arc<CudaContext>,
        len: usize,
    ) -> Result<&'a mut Self, GpuError> {
        if slot.as_ref().is_none_or(|b| b.len() < len) {
            *slot = None;
            *slot = Some(Self::zeroed(ctx, len, false)?);
        }
        Ok(slot.as_mut().expect("filled above"))
    }

    /// A copy of `src`, page-locked if the driver grants it, else pageable.
    pub fn copy_of(
        ctx: &Arc<CudaContext>,
        src: &[T],
        write_combined: bool,
    ) -> Result<Self, GpuError> {
        let mut b = Self::zeroed(ctx, src.len(), write_combined)?;
        b.as_mut_slice()
            .check(|| "filling host memory for streaming".into())?[..src.len()]
            .copy_from_slice(src);
        Ok(b)
    }
}

impl<T> HostBuffer<T> {
    /// Whether the memory is page-locked (copies overlap kernels).
    pub fn is_pinned(&self) -> bool {
        matches!(self, HostBuffer::Pinned(_))
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        HostSlice::len(self)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: ValidAsZeroBits> HostBuffer<T> {
    /// The elements (page-locked: after the copies cudarc tracked on them; the caller orders
    /// the others).
    pub fn as_slice(&self) -> Result<&[T], cudarc::driver::DriverError> {
        match self {
            HostBuffer::Pinned(p) => p.as_slice(),
            HostBuffer::Pageable(v) => Ok(v),
        }
    }

    /// The elements to write (as [`HostBuffer::as_slice`]).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], cudarc::driver::DriverError> {
        match self {
            HostBuffer::Pinned(p) => p.as_mut_slice(),
            HostBuffer::Pageable(v) => Ok(v),
        }
    }
}

impl<T> HostSlice<T> for HostBuffer<T> {
    fn len(&self) -> usize {
        match self {
            HostBuffer::Pinned(p) => HostSlice::len(p),
            HostBuffer::Pageable(v) => v.len(),
        }
    }
    unsafe fn stream_synced_slice<'a>(
        &'a self,
        stream: &'a CudaStream,
    ) -> (&'a [T], SyncOnDrop<'a>) {
        // SAFETY: the caller's contract, passed on to the buffer it holds.
        unsafe {
            match self {
                HostBuffer::Pinned(p) => p.stream_synced_slice(stream),
                HostBuffer::Pageable(v) => v.stream_synced_slice(stream),
            }
        }
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        // SAFETY: as above.
        unsafe {
            match self {
                HostBuffer::Pinned(p) => p.stream_synced_mut_slice(stream),
                HostBuffer::Pageable(v) => v.stream_synced_mut_slice(stream),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refused_allocation_falls_back_to_pageable_memory() {
        use cudarc::driver::{sys::cudaError_enum as E, DriverError};
        let failed = |code| {
            Err::<(), _>(DriverError(code))
                .check(|| "allocating page-locked memory".into())
                .unwrap_err()
        };
        assert!(refusal(&failed(E::CUDA_ERROR_OUT_OF_MEMORY)));
        assert!(refusal(&failed(E::CUDA_ERROR_NOT_PERMITTED)));
        // A broken context is the run's error, not a reason to go on pageable.
        assert!(!refusal(&failed(E::CUDA_ERROR_ILLEGAL_ADDRESS)));
        assert!(!refusal(&failed(E::CUDA_ERROR_INVALID_CONTEXT)));
        assert!(!refusal(&GpuError::NoDriver));
    }

    #[test]
    fn pageable_buffers_read_and_write_like_slices() {
        let mut b: HostBuffer<u32> = HostBuffer::Pageable(vec![0; 4]);
        assert!(!b.is_pinned());
        assert_eq!(HostSlice::len(&b), 4);
        b.as_mut_slice().unwrap().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(b.as_slice().unwrap(), &[1, 2, 3, 4]);
    }
}
