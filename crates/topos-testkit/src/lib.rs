//! Test support for the property tests of every parser and file reader (issue 18, part 6).
//!
//! * [`config`]: a proptest configuration with an explicit number of cases, so the campaign run
//!   by `cargo test` stays bounded (all property tests together well under a minute on two
//!   cores), overridden by `PROPTEST_CASES` for a longer campaign.
//! * [`mutated`]: structured mutations of a valid file — flipped bytes, truncation, spliced-in
//!   bytes, duplicated or deleted ranges, and integers overwritten with extreme values (a length
//!   field claiming 2^40 entries) — which reach far deeper into a parser than random bytes.
//! * [`CountingAlloc`] and [`allocated_during`]: a global allocator for test binaries that
//!   records, per thread, the largest single allocation a call *asks for* (even one that would
//!   fail), so a test can require that no input makes a reader allocate beyond a bound.
//! * [`assert_one_line`]: the error-message convention.

use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// `default` cases, or `PROPTEST_CASES` when set (the long campaign).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A proptest configuration running [`cases`]`(default)` cases, with shrinking bounded so a
/// failure is reported in seconds.
pub fn config(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default),
        max_shrink_iters: 2048,
        // Failures become named regression tests beside the code they fixed, rather than
        // files of seeds.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Values that break careless length and count arithmetic.
pub const EXTREME_U64: [u64; 10] = [
    0,
    1,
    0xff,
    0xffff,
    0xffff_ffff,
    1 << 32,
    1 << 40,
    (1 << 62) + 3,
    u64::MAX - 1,
    u64::MAX,
];

/// Numbers written as text that break careless parsing (for text formats).
pub const EXTREME_NUMBERS: [&str; 10] = [
    "0",
    "-1",
    "4000000000",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1099511627776",
    "1e9",
    "NaN",
    "",
];

/// One edit of a byte string.
#[derive(Clone, Debug)]
pub enum Edit {
    /// XOR the byte at (position mod length) with a non-zero mask.
    Flip(usize, u8),
    /// Keep the first (position mod (length + 1)) bytes.
    Truncate(usize),
    /// Insert bytes at a position.
    Splice(usize, Vec<u8>),
    /// Remove a range (start, length).
    Delete(usize, usize),
    /// Repeat a range (start, length) in place.
    Duplicate(usize, usize),
    /// Overwrite 8 (or 4) little-endian bytes at a position with an extreme value.
    Int(usize, u64, bool),
    /// Replace the run of ASCII digits at or after a position with a number as text.
    Number(usize, &'static str),
}

/// The edits [`mutated`] draws.
pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 1..=255u8).prop_map(|(p, m)| Edit::Flip(p, m)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(p, b)| Edit::Splice(p, b)),
        1 => (any::<usize>(), 1..64usize).prop_map(|(p, n)| Edit::Delete(p, n)),
        1 => (any::<usize>(), 1..64usize).prop_map(|(p, n)| Edit::Duplicate(p, n)),
        3 => (any::<usize>(), prop::sample::select(EXTREME_U64.to_vec()), any::<bool>())
            .prop_map(|(p, v, wide)| Edit::Int(p, v, wide)),
        3 => (any::<usize>(), prop::sample::select(EXTREME_NUMBERS.to_vec()))
            .prop_map(|(p, s)| Edit::Number(p, s)),
    ]
}

/// Applies `e` to `bytes`.
pub fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    let n = bytes.len();
    match e {
        Edit::Flip(p, m) if n > 0 => bytes[p % n] ^= m,
        Edit::Truncate(p) => bytes.truncate(p % (n + 1)),
        Edit::Splice(p, b) => {
            let at = p % (n + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Edit::Delete(p, len) if n > 0 => {
            let at = p % n;
            bytes.drain(at..(at + len).min(n));
        }
        Edit::Duplicate(p, len) if n > 0 => {
            let at = p % n;
            let chunk: Vec<u8> = bytes[at..(at + len).min(n)].to_vec();
            bytes.splice(at..at, chunk);
        }
        Edit::Int(p, v, wide) => {
            let w = if *wide { 8 } else { 4 };
            if n >= w {
                let at = p % (n - w + 1);
                bytes[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
        }
        Edit::Number(p, s) if n > 0 => {
            let from = p % n;
            if let Some(start) = bytes[from..].iter().position(u8::is_ascii_digit) {
                let start = from + start;
                let end = bytes[start..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(n, |e| start + e);
                bytes.splice(start..end, s.bytes());
            }
        }
        _ => {}
    }
}

/// `valid` changed by one to four [`edit`]s.
pub fn mutated(valid: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(edit(), 1..=4).prop_map(move |edits| {
        let mut b = valid.clone();
        for e in &edits {
            apply(&mut b, e);
        }
        b
    })
}

/// Arbitrary bytes, up to `max` of them.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=max)
}

/// Arbitrary bytes biased towards text: mostly printable ASCII, digits, separators and line
/// breaks, some UTF-8 and some raw bytes.
pub fn text_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let unit = prop_oneof![
        6 => prop::sample::select(b"abcxyz019 :,\n\t\"{}[]-.".to_vec()).prop_map(|b| vec![b]),
        2 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    proptest::collection::vec(unit, 0..=max).prop_map(|v| v.concat())
}

/// Panics unless `msg` is one line (the error-message convention).
pub fn assert_one_line(msg: &str) {
    assert!(!msg.is_empty(), "an empty error message");
    assert!(
        !msg.contains('\n') && !msg.contains('\r'),
        "not one line: {msg:?}"
    );
}

thread_local! {
    /// The largest single allocation asked for on this thread since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// A global allocator for test binaries (`#[global_allocator] static A: CountingAlloc =
/// CountingAlloc;`): the system's, recording per thread the largest allocation asked for.
pub struct CountingAlloc;

fn note(size: usize) {
    // `try_with`: the thread-local may be gone while a thread is being torn down.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping touches
// only a const-initialised thread-local without a destructor (it never allocates).
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns its result with the largest single allocation it asked for on this
/// thread (meaningful when the test binary installs [`CountingAlloc`]).
pub fn allocated_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(Cell::get))
}

/// Panics if `f` asks for a single allocation above `limit` bytes; returns its result.
pub fn within_allocation<T>(limit: usize, what: &str, f: impl FnOnce() -> T) -> T {
    let (out, largest) = allocated_during(f);
    assert!(
        largest <= limit,
        "{what}: one allocation of {largest} bytes, above the bound of {limit}"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_stay_in_bounds() {
        let mut b = b"12 abc 345".to_vec();
        apply(&mut b, &Edit::Number(3, "4000000000"));
        assert_eq!(b, b"12 abc 4000000000");
        let end = b.len() - 8;
        apply(&mut b, &Edit::Int(end, u64::MAX, true));
        assert_eq!(&b[b.len() - 8..], &[0xff; 8]);
        apply(&mut b, &Edit::Truncate(3));
        assert_eq!(b, b"12 ");
        for e in [
            Edit::Flip(7, 1),
            Edit::Delete(0, 100),
            Edit::Duplicate(5, 3),
            Edit::Splice(99, vec![1]),
        ] {
            apply(&mut b, &e);
        }
        let mut empty = Vec::new();
        for e in [Edit::Flip(1, 1), Edit::Delete(0, 1), Edit::Number(0, "1")] {
            apply(&mut empty, &e);
        }
        assert!(empty.is_empty());
        assert_eq!(
            cases(7),
            std::env::var("PROPTEST_CASES").map_or(7, |v| v.parse().unwrap())
        );
    }
}
