//! Memory accounting for the large dense arrays of this crate ("Memory is the budget",
//! ARCHITECTURE.md, Principles): say before allocating how much is needed and refuse with a clear message instead of
//! letting the system swap or the allocator abort.

use crate::ModelError;

/// The memory this process may still allocate: the host's available memory or, if smaller, what
/// its memory cgroup (a container's limit) allows. Implemented in [`topos_io::mem`].
pub use topos_io::mem::available_memory;

/// Refuses `needed` bytes for `what` when they exceed `limit` (when given).
pub fn check_budget(
    what: &'static str,
    needed: u64,
    limit: Option<u64>,
    hint: &'static str,
) -> Result<(), ModelError> {
    match limit {
        Some(available) if needed > available => Err(ModelError::Memory {
            what,
            needed,
            available: Some(available),
            hint,
        }),
        _ => Ok(()),
    }
}

/// A zeroed vector of `len` elements, or a [`ModelError::Memory`] when the allocation fails
/// (used where the length comes from a file, so a huge claimed size is an error, not an abort).
pub fn try_zeroed<T: Clone + Default>(
    len: usize,
    what: &'static str,
    hint: &'static str,
) -> Result<Vec<T>, ModelError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| ModelError::Memory {
        what,
        needed: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        available: None,
        hint,
    })?;
    v.resize(len, T::default());
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_over_budget() {
        assert!(check_budget("x", 10, Some(10), "h").is_ok());
        assert!(check_budget("x", 10, None, "h").is_ok());
        let msg = check_budget("phi", 11, Some(10), "use fewer topics")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "phi needs 11 bytes but only 10 are available; use fewer topics"
        );
        let e = try_zeroed::<u64>(usize::MAX / 4, "counts", "h").unwrap_err();
        assert!(e.to_string().contains("allocation failed"), "{e}");
        assert_eq!(try_zeroed::<u32>(3, "c", "h").unwrap(), vec![0, 0, 0]);
    }
}
