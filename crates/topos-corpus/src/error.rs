//! Errors of corpus preparation and corpus files. Every message is one line that names the file
//! (and line, where there is one), says what is wrong and, where it helps, what to do about it: the
//! CLI prints these verbatim.

use std::path::Path;
use topos_io::FormatError;

/// Why a corpus could not be prepared, read or written.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The `.tcorp` file is foreign, truncated, corrupted, too new or structurally invalid.
    #[error(transparent)]
    Format(#[from] FormatError),

    /// The operating system refused (missing file, permission, disk full, ...). The OS error is
    /// in the message and not also exposed as `source()`, which would print it twice in a
    /// chain (`{:#}`).
    #[error("{path}: cannot {action}: {cause}")]
    Io {
        path: String,
        action: &'static str,
        cause: std::io::Error,
    },

    /// A gzip-compressed input could not be decompressed.
    #[error("{path}: not a valid gzip stream ({cause}); re-download or re-compress the file")]
    Gzip { path: String, cause: std::io::Error },

    /// A line of an input file does not parse (JSONL, UCI, LDA-C, vocabulary files).
    #[error("{path}: line {line}: {what}")]
    Line {
        path: String,
        line: u64,
        what: String,
    },

    /// The input as a whole is unusable (header mismatch, no documents, nothing left after
    /// pruning, unknown format).
    #[error("{path}: {what}")]
    Input { path: String, what: String },

    /// Options that cannot work together or are out of range.
    #[error("invalid option: {0}")]
    Options(String),

    /// `.tcorp` arrays are little-endian and read in place, which a big-endian host cannot do.
    #[error("this host is big-endian; Topos corpus files are little-endian and read in place, so only little-endian hosts (x86-64, aarch64) are supported")]
    BigEndian,
}

impl CorpusError {
    pub(crate) fn io(path: &Path, action: &'static str, cause: std::io::Error) -> Self {
        CorpusError::Io {
            path: path.display().to_string(),
            action,
            cause,
        }
    }

    pub(crate) fn line(path: &Path, line: u64, what: impl Into<String>) -> Self {
        CorpusError::Line {
            path: path.display().to_string(),
            line,
            what: what.into(),
        }
    }

    pub(crate) fn input(path: &Path, what: impl Into<String>) -> Self {
        CorpusError::Input {
            path: path.display().to_string(),
            what: what.into(),
        }
    }
}
