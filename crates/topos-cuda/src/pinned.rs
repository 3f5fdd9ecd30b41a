//! Page-locked host memory, for chunks that stream through the device every iteration.

use crate::error::{Check, GpuError};
use cudarc::driver::{CudaContext, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use std::sync::Arc;

/// Page-locked host memory holding a copy of `src`. Write-combined memory is fast for the device
/// to read and slow for the host to read back: use it only for data that only flows to the
/// device (cudarc's default is write-combined).
pub fn pinned_copy<T: DeviceRepr + ValidAsZeroBits + Copy>(
    ctx: &Arc<CudaContext>,
    src: &[T],
    write_combined: bool,
) -> Result<PinnedHostSlice<T>, GpuError> {
    let mut p = pinned_zeroed(ctx, src.len(), write_combined)?;
    p.as_mut_slice()
        .check(|| "filling page-locked host memory".into())?[..src.len()]
        .copy_from_slice(src);
    Ok(p)
}

/// `len` elements of page-locked host memory (at least one), to be filled by the caller.
pub fn pinned_zeroed<T: DeviceRepr + ValidAsZeroBits>(
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
