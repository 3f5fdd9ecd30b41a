//! Memory accounting for the large dense arrays of this crate ("Memory is the budget",
//! DESIGN.md): say before allocating how much is needed and refuse with a clear message instead of
//! letting the system swap or the allocator abort.

use crate::ModelError;

/// Bytes the operating system says can be allocated without swapping (`MemAvailable` of
/// `/proc/meminfo`), or `None` where that is not known (non-Linux systems).
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&info)
}

fn parse_mem_available(info: &str) -> Option<u64> {
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

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
    fn parses_meminfo_and_refuses_over_budget() {
        let info = "MemTotal:  100 kB\nMemFree:   10 kB\nMemAvailable:   50 kB\n";
        assert_eq!(parse_mem_available(info), Some(50 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
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
