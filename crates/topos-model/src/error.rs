//! Why a model operation failed. Every message is one line and names what was wrong, so the CLI can
//! print it as is.

use topos_io::FormatError;

/// Errors of reading, writing and using topic models.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read or written, or is foreign, too new, truncated, corrupted or
    /// malformed (see [`FormatError`]).
    #[error(transparent)]
    Format(#[from] FormatError),
    /// An in-memory model or document-topic table that breaks its own invariants (so writing it
    /// would produce a file that cannot be read back).
    #[error("inconsistent {what}: {why}")]
    Inconsistent { what: &'static str, why: String },
    /// Not enough memory for a dense array; refused up front rather than thrashing.
    #[error("{what} needs {needed} bytes but {}; {hint}", describe_available(*.available))]
    Memory {
        what: &'static str,
        needed: u64,
        /// Memory the system reported as available, if it reports it.
        available: Option<u64>,
        hint: &'static str,
    },
    /// Documents, document-topic counts and model do not belong together.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// Invalid options (sweeps, burn-in, number of top words ...).
    #[error("invalid option: {0}")]
    Options(String),
}

fn describe_available(available: Option<u64>) -> String {
    match available {
        Some(a) => format!("only {a} are available"),
        None => "the allocation failed".to_string(),
    }
}
