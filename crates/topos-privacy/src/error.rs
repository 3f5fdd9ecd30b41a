//! Why a privacy operation was refused. Every message is one line, fit to print as the whole error.

use std::path::PathBuf;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum PrivacyError {
    /// A privacy parameter (ε, a sensitivity, a stability constant) that is not a positive,
    /// finite number.
    #[error("{what} must be a positive finite number, got {value}")]
    NotPositive { what: &'static str, value: f64 },

    /// A noise scale outside what the exact samplers represent (integers below 2^100).
    #[error("{0}")]
    Unsupported(String),

    /// No ledger yet: queries need a total budget set first.
    #[error("no privacy budget is set for {corpus}; set one with `topos privacy budget {corpus} --total EPSILON`")]
    NoLedger { corpus: String },

    /// The ledger is for another corpus (same file name, different content).
    #[error("{ledger} belongs to a different corpus (checksum {found:016x}, this corpus is {expected:016x}); a ledger is never reused for other data: move it away deliberately if the corpus was replaced")]
    WrongCorpus {
        ledger: String,
        found: u64,
        expected: u64,
    },

    /// The query would exceed the total budget; nothing was charged or released.
    #[error("privacy budget exceeded: spent ε = {spent}, remaining ε = {remaining}, this query asks ε = {asked} (total ε = {total}); nothing was released")]
    OverBudget {
        spent: f64,
        remaining: f64,
        asked: f64,
        total: f64,
    },

    /// A new total below what is already spent.
    #[error("cannot set the total to ε = {total}: ε = {spent} is already spent")]
    TotalBelowSpent { total: f64, spent: f64 },

    /// The (ε, δ) query would exceed the ledger's total δ; nothing was charged or released.
    #[error("the ledger's δ budget would be exceeded: spent δ = {spent}, this query asks δ = {asked} (total δ = {total}); raise it with `topos privacy budget {corpus} --total E --total-delta D`, or use a pure-ε query (train with --delta 0); nothing was released")]
    OverDelta {
        spent: f64,
        asked: f64,
        total: f64,
        corpus: String,
    },

    /// A new total δ below what is already spent.
    #[error("cannot set the total to δ = {total}: δ = {spent} is already spent")]
    TotalDeltaBelowSpent { total: f64, spent: f64 },

    /// A δ outside [0, 1).
    #[error("δ must be in [0, 1), got {0}")]
    BadDelta(f64),

    /// Another process held the ledger's lock for longer than the wait allows.
    #[error("{}: another topos process has held the privacy ledger's lock for {seconds} s; wait for it to finish and try again (the lock is released by the system when that process exits, so a crashed one never leaves it behind)", path.display())]
    Locked { path: PathBuf, seconds: f64 },

    /// An unreadable ledger file. `what` may quote the file (serde_json's message about a field
    /// name in it), so its line breaks are printed as spaces: the message stays one line.
    #[error("{path}: malformed privacy ledger: {}", what.replace(['\r', '\n'], " "))]
    BadLedger { path: String, what: String },

    /// A malformed `budget.toml` or constraint.
    #[error("{0}")]
    BadSpec(String),

    /// The allocation problem has no solution the solver could find.
    #[error("{0}")]
    Infeasible(String),

    /// A malformed query.
    #[error("{0}")]
    BadQuery(String),

    /// The operating system's random source failed.
    #[error("the operating system's random number source failed: {0}")]
    Entropy(String),

    /// File I/O.
    #[error(transparent)]
    Io(#[from] topos_io::FormatError),
}
