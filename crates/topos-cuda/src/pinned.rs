//! Page-locked host memory, for chunks that stream through the device every iteration, with
//! pageable memory as the fallback where page-locking is refused ([`HostBuffer`]).

use crate::error::{Check, GpuError};
use cudarc::driver::{
    CudaContext, CudaStream, DeviceRepr, HostSlice, PinnedHostSlice, SyncOnDrop, ValidAsZeroBits,
};
use std::sync::Arc;

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

/// Host memory a streamed corpus keeps between its trips to the device: page-locked where the
/// driver grants it, so that copies run beside kernels; ordinary pageable memory where it does
/// not (a host short of memory it can lock, a container or VM that caps page-locked memory, or
/// `TOPOS_GPU_PAGEABLE=1`). With pageable memory the driver stages every copy, and a copy back
/// returns only once it is done, so the run goes on, without the overlap, instead of failing.
pub enum HostBuffer<T> {
    Pinned(PinnedHostSlice<T>),
    Pageable(Vec<T>),
}

/// Whether `TOPOS_GPU_PAGEABLE=1` asks for pageable host memory (tests of the fallback, or a
/// host where page-locking large buffers is unwelcome).
fn pageable_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var("TOPOS_GPU_PAGEABLE").as_deref() == Ok("1"))
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Default> HostBuffer<T> {
    /// `len` elements (at least one), page-locked if the driver grants them, else pageable;
    /// zeroed when pageable, to be filled by the caller either way. An error only when even
    /// pageable memory cannot be had.
    pub fn zeroed(
        ctx: &Arc<CudaContext>,
        len: usize,
        write_combined: bool,
    ) -> Result<Self, GpuError> {
        if !pageable_forced() {
            if let Ok(p) = pinned_zeroed(ctx, len, write_combined) {
                return Ok(HostBuffer::Pinned(p));
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
    /// The elements, once the copies that write them are done.
    pub fn as_slice(&self) -> Result<&[T], cudarc::driver::DriverError> {
        match self {
            HostBuffer::Pinned(p) => p.as_slice(),
            HostBuffer::Pageable(v) => Ok(v),
        }
    }

    /// The elements to write, once the copies that read them are done.
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
    fn pageable_buffers_read_and_write_like_slices() {
        let mut b: HostBuffer<u32> = HostBuffer::Pageable(vec![0; 4]);
        assert!(!b.is_pinned());
        assert_eq!(HostSlice::len(&b), 4);
        b.as_mut_slice().unwrap().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(b.as_slice().unwrap(), &[1, 2, 3, 4]);
    }
}
