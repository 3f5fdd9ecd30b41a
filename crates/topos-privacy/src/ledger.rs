//! The privacy ledger of a corpus: its total ε and every charge against it.
//!
//! Every private query on a corpus spends part of one budget (sequential composition across
//! queries, Theorem 3), so the budget must outlive a process: it is a side file next to the
//! corpus, `NAME.tcorp.ledger` (JSON), tied to the corpus by its checksum so that a ledger is
//! never silently reused for different data.
//!
//! A charge is atomic: under an exclusive lock, the ledger is read, the query is checked against
//! the remaining budget, and the ledger with the new charge is written by temp-file-and-rename
//! ([`topos_io::AtomicFile`]). [`Ledger::charge_with`] does the release in the same step: the
//! answer is computed under the lock and handed back only once the charge is on disk, so an
//! answer is never released uncharged and a refused or failed query (over budget, wrong corpus,
//! no budget set, a mechanism that cannot be calibrated) is never charged. A crash after the
//! charge loses that ε without releasing anything, the safe direction.
//!
//! **The lock** is an operating-system advisory lock (`flock`, through `fs4`) on
//! `NAME.tcorp.ledger.lock`, not the existence of that file: the kernel releases it when its
//! holder exits, however it exits (`kill -9` included), so a crash never leaves a stale lock
//! for a user to judge. The file itself stays (removing it would race with a process waiting on
//! it). A second process waits for the lock, up to [`LOCK_TIMEOUT`], then gives up with one line.
//!
//! **Budget changes** (`topos privacy budget`) are entries of the ledger too (`budget`: when,
//! and the new totals), so the file is a complete audit trail: every total the charges were
//! checked against, and every charge. A ledger with that history is version 3; versions 1 and
//! 2 (no history) are still read, and gain one from their next budget change.
//!
//! Amounts are summed in fixed point, in units of 10⁻¹² ε: the total is exact and independent of
//! the order of charges (0.1 + 0.2 fits a budget of 0.3). A charge is rounded *up* to a unit and
//! the total *down*, except that a value within floating-point error of a unit counts as that
//! unit, so a decimal ε with up to 12 places is accounted exactly; a charge costs at least one
//! unit, however small its ε.
//!
//! **δ.** A ledger may also hold a total δ (`privacy budget --total-delta`): an (ε, δ) charge —
//! a private training run calibrated by Rényi DP — then spends both, and (ε, δ) charges compose
//! by adding their ε's and their δ's (basic sequential composition of approximate DP; Dwork &
//! Roth 2014, Theorem 3.16). δ is summed in the same fixed-point units. A ledger with δ spent or
//! budgeted is written as version 2 (an older build refuses it rather than drop the δ charges
//! when it rewrites the file); one without stays version 1.

use crate::{Epsilon, PrivacyError};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use topos_io::{AtomicFile, FormatError};

const FORMAT: &str = "topos-privacy-ledger";
/// Version of a ledger with no δ and no budget history (readable by every build).
const VERSION: u32 = 1;
/// Version of a ledger that budgets or spends δ.
const VERSION_DELTA: u32 = 2;
/// Version of a ledger that records its budget changes (read by this build and later ones).
const VERSION_HISTORY: u32 = 3;
const UNITS_PER_EPSILON: f64 = 1e12;

/// The largest ε a ledger accounts, as a total or as one charge: far beyond any guarantee that
/// means something (e^{10⁹}), and small enough that every sum of charges stays exact in its
/// 10⁻¹² units (a u128 holds 3.4·10²⁶ ε; totals past that once saturated and read back wrong).
pub const MAX_LEDGER_EPSILON: f64 = 1e9;

/// Refuses an ε beyond [`MAX_LEDGER_EPSILON`] (`what`: "a total", "a charge").
fn within_ledger(eps: f64, what: &str) -> Result<(), PrivacyError> {
    if eps > MAX_LEDGER_EPSILON {
        return Err(PrivacyError::Unsupported(format!(
            "{what} of ε = {eps:e} is beyond what a ledger accounts (at most ε = {MAX_LEDGER_EPSILON:e}, already no privacy to speak of)"
        )));
    }
    Ok(())
}

/// How long a process waits for another one's lock on a ledger before giving up. Charges hold
/// it for milliseconds (a read, a small computation, a rename), so waiting this long means the
/// holder is stuck, not busy.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// One charge: what was asked, at which ε, when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Charge {
    /// A description of the query (the command line's query part).
    pub query: String,
    /// The ε spent.
    pub epsilon: f64,
    /// The δ spent (0 for a pure-ε charge).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta: f64,
    /// UTC time, RFC 3339.
    pub time: String,
}

/// One change of the totals (`topos privacy budget`): the totals from then on, and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetChange {
    /// The total ε set.
    pub total_epsilon: f64,
    /// The total δ set (0: pure ε only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_delta: f64,
    /// UTC time, RFC 3339.
    pub time: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LedgerFile {
    format: String,
    version: u32,
    /// Hex, as JSON numbers lose u64 precision in many readers.
    corpus_checksum: String,
    total_epsilon: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    total_delta: f64,
    /// Every change of the totals, oldest first (version 3; absent before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    budget: Vec<BudgetChange>,
    charges: Vec<Charge>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A corpus's ledger as read from (or just written to) its file.
#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
    checksum: u64,
    total: f64,
    total_delta: f64,
    budget: Vec<BudgetChange>,
    charges: Vec<Charge>,
}

/// Where the ledger of `corpus` is: `corpus` + `.ledger` when a ledger (or a link to one) is
/// there, which is where every ledger was kept before links were followed; else, for a corpus
/// named through a symbolic link, beside the file the link names (a link in a fresh directory
/// would otherwise find no ledger and spend freely). A ledger that is itself a link is read and
/// written through it (the rename of a rewrite would otherwise replace the link and leave its
/// target uncharged); a link to nothing stays the path, which [`has_ledger`] counts and reading
/// refuses.
///
/// Found by name, so a *copy* of the corpus, or another hard link to it, has no ledger: the
/// ledger is the data holder's bookkeeping of what was released, not access control over a file
/// anyone who can read can copy (docs/privacy.md).
pub fn ledger_path(corpus: &Path) -> PathBuf {
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let beside = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push(".ledger");
        PathBuf::from(s)
    };
    let named = beside(corpus);
    let at = if std::fs::symlink_metadata(&named).is_ok() || !is_link(corpus) {
        named
    } else {
        std::fs::canonicalize(corpus).map_or(named, |file| beside(&file))
    };
    if is_link(&at) {
        std::fs::canonicalize(&at).unwrap_or(at)
    } else {
        at
    }
}

/// Whether `corpus` has a ledger ([`ledger_path`]): a file, or a link, even one to nothing (so
/// that a broken link is never taken for "no budget": reading it is refused).
pub fn has_ledger(corpus: &Path) -> bool {
    ledger_at(&ledger_path(corpus))
}

/// Whether a ledger is at `path` (as [`ledger_path`] resolved it once): a file or a link.
fn ledger_at(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn units(x: f64, up: bool) -> u128 {
    let v = x * UNITS_PER_EPSILON;
    let r = v.round();
    if (v - r).abs() <= (v.abs() * 4.0 * f64::EPSILON).max(1e-3) {
        r as u128
    } else if up {
        v.ceil() as u128
    } else {
        v.floor() as u128
    }
}

/// Units of an ε charge: rounded up, and never 0 (an ε below one unit still costs one: with
/// `units` alone, anything under 10⁻¹⁵ would round to a free query).
fn charge_units(eps: f64) -> u128 {
    units(eps, true).max(1)
}

/// Units of a δ charge: rounded up, and never 0 for a δ > 0 (a δ below one unit still costs one).
fn delta_units(delta: f64) -> u128 {
    if delta > 0.0 {
        units(delta, true).max(1)
    } else {
        0
    }
}

fn from_units(u: u128) -> f64 {
    u as f64 / UNITS_PER_EPSILON
}

/// `LEDGER.lock`.
fn lock_path(ledger: &Path) -> PathBuf {
    let mut s = ledger.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// An exclusive advisory lock on `LEDGER.lock`, held while this value lives (dropping it, or
/// the process ending in any way, releases it).
struct Lock {
    _file: File,
}

impl Lock {
    /// Takes the lock, waiting up to `timeout` for another holder.
    fn take(ledger: &Path, timeout: Duration) -> Result<Lock, PrivacyError> {
        let path = lock_path(ledger);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| FormatError::io(&path, e))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            // Named through the trait: std's own `File::try_lock` (Rust 1.89) would shadow it.
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => return Ok(Lock { _file: file }),
                Err(fs4::TryLockError::WouldBlock) => {}
                Err(fs4::TryLockError::Error(e)) => return Err(FormatError::io(&path, e).into()),
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(PrivacyError::Locked {
                    path,
                    seconds: timeout.as_secs_f64(),
                });
            }
            std::thread::sleep(pause.min(timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

impl Ledger {
    /// Reads the ledger of `corpus` (whose checksum is `checksum`).
    pub fn open(corpus: &Path, checksum: u64) -> Result<Ledger, PrivacyError> {
        let path = ledger_path(corpus);
        if !ledger_at(&path) {
            return Err(PrivacyError::NoLedger {
                corpus: corpus.display().to_string(),
            });
        }
        Self::read(&path, checksum)
    }

    fn read(path: &Path, checksum: u64) -> Result<Ledger, PrivacyError> {
        let bad = |what: String| PrivacyError::BadLedger {
            path: path.display().to_string(),
            what,
        };
        if !path.exists() && std::fs::symlink_metadata(path).is_ok() {
            return Err(bad(
                "it is a symbolic link to nothing: restore the ledger it named (or remove the link to start a new budget)".into(),
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
        let f: LedgerFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if f.format != FORMAT {
            return Err(bad(format!(
                "format is {:?}, expected {FORMAT:?}",
                f.format
            )));
        }
        if ![VERSION, VERSION_DELTA, VERSION_HISTORY].contains(&f.version) {
            return Err(bad(format!(
                "version {} is not supported by this build (it reads {VERSION} to {VERSION_HISTORY}); upgrade topos",
                f.version
            )));
        }
        let found = u64::from_str_radix(&f.corpus_checksum, 16)
            .map_err(|_| bad(format!("bad corpus checksum {:?}", f.corpus_checksum)))?;
        if found != checksum {
            return Err(PrivacyError::WrongCorpus {
                ledger: path.display().to_string(),
                found,
                expected: checksum,
            });
        }
        if !(f.total_epsilon.is_finite() && f.total_epsilon > 0.0) {
            return Err(bad(format!("total ε {} is not positive", f.total_epsilon)));
        }
        if let Some(c) = f
            .charges
            .iter()
            .find(|c| !(c.epsilon.is_finite() && c.epsilon > 0.0))
        {
            return Err(bad(format!("charge {:?} has ε = {}", c.query, c.epsilon)));
        }
        if !(0.0..1.0).contains(&f.total_delta) {
            return Err(bad(format!("total δ {} is not in [0, 1)", f.total_delta)));
        }
        if let Some(c) = f.charges.iter().find(|c| !(0.0..1.0).contains(&c.delta)) {
            return Err(bad(format!("charge {:?} has δ = {}", c.query, c.delta)));
        }
        if let Some(b) = f.budget.iter().find(|b| {
            !(b.total_epsilon.is_finite()
                && b.total_epsilon > 0.0
                && (0.0..1.0).contains(&b.total_delta))
        }) {
            return Err(bad(format!(
                "budget change at {} sets ε = {}, δ = {}",
                b.time, b.total_epsilon, b.total_delta
            )));
        }
        Ok(Ledger {
            path: path.to_path_buf(),
            checksum,
            total: f.total_epsilon,
            total_delta: f.total_delta,
            budget: f.budget,
            charges: f.charges,
        })
    }

    fn write(&self) -> Result<(), PrivacyError> {
        let has_delta = self.total_delta > 0.0 || self.charges.iter().any(|c| c.delta > 0.0);
        // The lowest version that holds everything, so older builds read what they can and
        // refuse (rather than rewrite without) what they cannot.
        let version = if !self.budget.is_empty() {
            VERSION_HISTORY
        } else if has_delta {
            VERSION_DELTA
        } else {
            VERSION
        };
        let f = LedgerFile {
            format: FORMAT.into(),
            version,
            corpus_checksum: format!("{:016x}", self.checksum),
            total_epsilon: self.total,
            total_delta: self.total_delta,
            budget: self.budget.clone(),
            charges: self.charges.clone(),
        };
        let mut text = serde_json::to_string_pretty(&f).expect("ledger serializes");
        text.push('\n');
        let mut out = AtomicFile::create_ledger(&self.path)?;
        out.write_all(text.as_bytes())?;
        out.commit()?;
        Ok(())
    }

    /// Sets the total ε of `corpus`, creating its ledger if there is none (with no δ). A total
    /// below what is already spent is refused.
    pub fn set_total(corpus: &Path, checksum: u64, total: Epsilon) -> Result<Ledger, PrivacyError> {
        Self::set_budget(corpus, checksum, total, None)
    }

    /// Sets the total ε and, when given, the total δ (in [0, 1)) of `corpus`, creating its ledger
    /// if there is none, and records the change as an entry of the ledger. A total below what is
    /// already spent is refused.
    pub fn set_budget(
        corpus: &Path,
        checksum: u64,
        total: Epsilon,
        total_delta: Option<f64>,
    ) -> Result<Ledger, PrivacyError> {
        if let Some(d) = total_delta {
            if !(0.0..1.0).contains(&d) {
                return Err(PrivacyError::BadDelta(d));
            }
        }
        within_ledger(total.get(), "a total")?;
        let path = ledger_path(corpus);
        let _lock = Lock::take(&path, LOCK_TIMEOUT)?;
        let mut ledger = if ledger_at(&path) {
            Self::read(&path, checksum)?
        } else {
            Ledger {
                path: path.clone(),
                checksum,
                total: total.get(),
                total_delta: 0.0,
                budget: Vec::new(),
                charges: Vec::new(),
            }
        };
        if units(total.get(), false) < ledger.spent_units() {
            return Err(PrivacyError::TotalBelowSpent {
                total: total.get(),
                spent: ledger.spent(),
            });
        }
        if let Some(d) = total_delta {
            if units(d, false) < ledger.spent_delta_units() {
                return Err(PrivacyError::TotalDeltaBelowSpent {
                    total: d,
                    spent: ledger.spent_delta(),
                });
            }
            ledger.total_delta = d;
        }
        ledger.total = total.get();
        ledger.budget.push(BudgetChange {
            total_epsilon: ledger.total,
            total_delta: ledger.total_delta,
            time: rfc3339_now(),
        });
        ledger.write()?;
        Ok(ledger)
    }

    /// Charges `eps` for `query` to the ledger of `corpus`, atomically, or refuses with
    /// [`PrivacyError::OverBudget`] (and changes nothing) when it would exceed the total.
    /// Call it *before* drawing any noise; release the answer only if it returns `Ok`. Prefer
    /// [`Ledger::charge_with`], which computes the answer in the same step.
    pub fn charge(
        corpus: &Path,
        checksum: u64,
        query: &str,
        eps: Epsilon,
    ) -> Result<Ledger, PrivacyError> {
        Self::charge_approx(corpus, checksum, query, eps, 0.0)
    }

    /// [`Ledger::charge`] of an (ε, δ) query: refused with [`PrivacyError::OverBudget`] or
    /// [`PrivacyError::OverDelta`] (changing nothing) when either total would be exceeded.
    pub fn charge_approx(
        corpus: &Path,
        checksum: u64,
        query: &str,
        eps: Epsilon,
        delta: f64,
    ) -> Result<Ledger, PrivacyError> {
        Self::charge_with(corpus, checksum, query, eps, delta, || Ok(())).map(|(ledger, ())| ledger)
    }

    /// Charges (ε, δ) for `query` and computes the answer to release in one step: under the
    /// ledger's lock, the budget is checked, `release` runs, and only if it succeeds is the
    /// charge written; its answer is returned once the charge is on disk. A refusal (over
    /// budget, no budget, wrong corpus) or a failing `release` changes nothing. `release` should
    /// be quick (other processes wait for the lock) and must not publish anything itself: what
    /// it returns is the release.
    pub fn charge_with<T>(
        corpus: &Path,
        checksum: u64,
        query: &str,
        eps: Epsilon,
        delta: f64,
        release: impl FnOnce() -> Result<T, PrivacyError>,
    ) -> Result<(Ledger, T), PrivacyError> {
        Self::charge_within(corpus, checksum, query, eps, delta, LOCK_TIMEOUT, release)
    }

    fn charge_within<T>(
        corpus: &Path,
        checksum: u64,
        query: &str,
        eps: Epsilon,
        delta: f64,
        timeout: Duration,
        release: impl FnOnce() -> Result<T, PrivacyError>,
    ) -> Result<(Ledger, T), PrivacyError> {
        if !(0.0..1.0).contains(&delta) {
            return Err(PrivacyError::BadDelta(delta));
        }
        let path = ledger_path(corpus);
        if !ledger_at(&path) {
            return Err(PrivacyError::NoLedger {
                corpus: corpus.display().to_string(),
            });
        }
        let _lock = Lock::take(&path, timeout)?;
        let mut ledger = Self::read(&path, checksum)?;
        ledger.check(corpus, eps, delta)?;
        let answer = release()?;
        ledger.charges.push(Charge {
            query: query.to_string(),
            epsilon: eps.get(),
            delta,
            time: rfc3339_now(),
        });
        ledger.write()?;
        Ok((ledger, answer))
    }

    /// Whether (ε, δ) would fit the ledger of `corpus` now, charging nothing: for a caller that
    /// must refuse an over-budget request before long work, and charges (with
    /// [`Ledger::charge_approx`]) when it releases. Returns the ledger as read.
    pub fn check_approx(
        corpus: &Path,
        checksum: u64,
        eps: Epsilon,
        delta: f64,
    ) -> Result<Ledger, PrivacyError> {
        if !(0.0..1.0).contains(&delta) {
            return Err(PrivacyError::BadDelta(delta));
        }
        let ledger = Self::open(corpus, checksum)?;
        ledger.check(corpus, eps, delta)?;
        Ok(ledger)
    }

    /// Refuses (ε, δ) when either total would be exceeded.
    fn check(&self, corpus: &Path, eps: Epsilon, delta: f64) -> Result<(), PrivacyError> {
        within_ledger(eps.get(), "a charge")?;
        let asked = charge_units(eps.get());
        if self.spent_units().saturating_add(asked) > self.total_units() {
            return Err(PrivacyError::OverBudget {
                spent: self.spent(),
                remaining: self.remaining(),
                asked: from_units(asked),
                total: self.total,
            });
        }
        let asked_delta = delta_units(delta);
        if self.spent_delta_units().saturating_add(asked_delta) > units(self.total_delta, false) {
            return Err(PrivacyError::OverDelta {
                spent: self.spent_delta(),
                asked: delta,
                total: self.total_delta,
                corpus: corpus.display().to_string(),
            });
        }
        Ok(())
    }

    fn spent_units(&self) -> u128 {
        // Saturating: a damaged ledger's absurd ε must not overflow (it exceeds any total).
        self.charges
            .iter()
            .map(|c| charge_units(c.epsilon))
            .fold(0, u128::saturating_add)
    }

    fn total_units(&self) -> u128 {
        units(self.total, false)
    }

    fn spent_delta_units(&self) -> u128 {
        self.charges
            .iter()
            .map(|c| delta_units(c.delta))
            .fold(0, u128::saturating_add)
    }

    /// The total δ (0: pure-ε charges only).
    pub fn total_delta(&self) -> f64 {
        self.total_delta
    }

    /// δ spent so far.
    pub fn spent_delta(&self) -> f64 {
        from_units(self.spent_delta_units())
    }

    /// δ left.
    pub fn remaining_delta(&self) -> f64 {
        from_units(units(self.total_delta, false).saturating_sub(self.spent_delta_units()))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The total ε.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// ε spent so far.
    pub fn spent(&self) -> f64 {
        from_units(self.spent_units())
    }

    /// ε left.
    pub fn remaining(&self) -> f64 {
        from_units(self.total_units().saturating_sub(self.spent_units()))
    }

    /// Every charge, oldest first.
    pub fn charges(&self) -> &[Charge] {
        &self.charges
    }

    /// Every change of the totals, oldest first (empty for a ledger written before they were
    /// recorded and not changed since).
    pub fn budget_changes(&self) -> &[BudgetChange] {
        &self.budget
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(x: f64) -> Epsilon {
        Epsilon::new(x).unwrap()
    }

    /// A decoder's message that quotes the ledger (a name holding a line break) stays one line.
    #[test]
    fn a_malformed_ledger_is_reported_in_one_line_whatever_it_quotes() {
        let e = PrivacyError::BadLedger {
            path: "c.tcorp.ledger".into(),
            what: "unknown variant `gau\nssian`, expected `laplace`\r\n".into(),
        };
        let msg = e.to_string();
        assert!(!msg.contains('\n') && !msg.contains('\r'), "{msg:?}");
        assert!(msg.contains("`gau ssian`"), "{msg}");
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn totals_and_charges_beyond_the_ledgers_range_are_refused_not_saturated() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.tcorp");
        for total in [1e300, 1e10] {
            let err = Ledger::set_total(&corpus, 1, e(total))
                .unwrap_err()
                .to_string();
            assert!(err.contains("beyond what a ledger accounts"), "{err}");
        }
        assert!(!ledger_path(&corpus).exists());
        Ledger::set_total(&corpus, 1, e(MAX_LEDGER_EPSILON)).unwrap();
        let err = Ledger::charge(&corpus, 1, "q", e(1e28))
            .unwrap_err()
            .to_string();
        assert!(err.contains("beyond what a ledger accounts"), "{err}");
        Ledger::charge(&corpus, 1, "q", e(1e8)).unwrap();
        let l = Ledger::charge(&corpus, 1, "q", e(2e8)).unwrap();
        assert_eq!(l.spent(), 3e8);
        assert_eq!(l.remaining(), 7e8);
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_corpus_shares_the_files_ledger_and_a_linked_ledger_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.tcorp");
        std::fs::write(&corpus, b"corpus").unwrap();
        Ledger::set_total(&corpus, 42, e(1.0)).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = elsewhere.join("link.tcorp");
        std::os::unix::fs::symlink(&corpus, &link).unwrap();
        let l = Ledger::charge(&link, 42, "through the link", e(0.25)).unwrap();
        assert_eq!(l.remaining(), 0.75);
        assert_eq!(Ledger::open(&corpus, 42).unwrap().spent(), 0.25);
        assert!(!ledger_path(&link).starts_with(&elsewhere));
        // A ledger kept elsewhere behind a link: charged through it, the link left a link.
        let shared = dir.path().join("shared.ledger");
        let other = dir.path().join("d.tcorp");
        std::fs::write(&other, b"other").unwrap();
        Ledger::set_total(&other, 7, e(1.0)).unwrap();
        std::fs::rename(ledger_path(&other), &shared).unwrap();
        std::os::unix::fs::symlink(&shared, dir.path().join("d.tcorp.ledger")).unwrap();
        Ledger::charge(&other, 7, "q", e(0.5)).unwrap();
        let named = dir.path().join("d.tcorp.ledger");
        assert!(std::fs::symlink_metadata(&named)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(Ledger::open(&other, 7).unwrap().spent(), 0.5);
        assert!(std::fs::read_to_string(&shared).unwrap().contains("\"q\""));
        // A ledger kept beside the link (where ledgers were found before links were followed)
        // is the one used, not ignored for the file's.
        let store = dir.path().join("store.tcorp");
        std::fs::write(&store, b"store").unwrap();
        let named = elsewhere.join("named.tcorp");
        std::os::unix::fs::symlink(&store, &named).unwrap();
        Ledger::set_total(&store, 9, e(1.0)).unwrap();
        std::fs::rename(ledger_path(&store), elsewhere.join("named.tcorp.ledger")).unwrap();
        assert!(!has_ledger(&store) && has_ledger(&named));
        let err = Ledger::charge(&named, 9, "q", e(2.0)).unwrap_err();
        assert!(matches!(err, PrivacyError::OverBudget { .. }), "{err}");
        // A ledger that is a link to nothing is no "no budget": refused, the link kept.
        let lost = dir.path().join("lost.tcorp");
        std::fs::write(&lost, b"lost").unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("gone"),
            dir.path().join("lost.tcorp.ledger"),
        )
        .unwrap();
        assert!(has_ledger(&lost));
        for err in [
            Ledger::charge(&lost, 1, "q", e(0.1)).unwrap_err(),
            Ledger::set_total(&lost, 1, e(5.0)).unwrap_err(),
        ] {
            assert!(err.to_string().contains("link to nothing"), "{err}");
        }
        let link = std::fs::symlink_metadata(dir.path().join("lost.tcorp.ledger")).unwrap();
        assert!(link.file_type().is_symlink());
    }

    #[test]
    fn decimal_charges_add_up_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.tcorp");
        Ledger::set_total(&corpus, 42, e(0.3)).unwrap();
        Ledger::charge(&corpus, 42, "a", e(0.1)).unwrap();
        let l = Ledger::charge(&corpus, 42, "b", e(0.2)).unwrap();
        assert_eq!(l.remaining(), 0.0);
        assert_eq!(l.spent(), 0.3);
        // Not one unit more.
        let err = Ledger::charge(&corpus, 42, "c", e(1e-12)).unwrap_err();
        assert!(matches!(err, PrivacyError::OverBudget { .. }), "{err}");
    }

    #[test]
    fn over_budget_wrong_corpus_and_lock_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.tcorp");
        let err = Ledger::charge(&corpus, 1, "q", e(0.1)).unwrap_err();
        assert!(matches!(err, PrivacyError::NoLedger { .. }));
        assert!(!ledger_path(&corpus).exists());

        Ledger::set_total(&corpus, 1, e(1.0)).unwrap();
        Ledger::charge(&corpus, 1, "first", e(0.75)).unwrap();
        let before = std::fs::read(ledger_path(&corpus)).unwrap();
        let msg = Ledger::charge(&corpus, 1, "second", e(0.5))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("spent ε = 0.75")
                && msg.contains("remaining ε = 0.25")
                && msg.contains("asks ε = 0.5"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        assert!(Ledger::charge(&corpus, 2, "x", e(0.1))
            .unwrap_err()
            .to_string()
            .contains("different corpus"));
        assert!(Ledger::set_total(&corpus, 1, e(0.5)).is_err());
        let lock = Lock::take(&ledger_path(&corpus), LOCK_TIMEOUT).unwrap();
        let err = Ledger::charge_within(
            &corpus,
            1,
            "y",
            e(0.1),
            0.0,
            Duration::from_millis(50),
            || Ok(()),
        )
        .unwrap_err();
        assert!(matches!(err, PrivacyError::Locked { .. }), "{err}");
        assert!(!err.to_string().contains('\n'));
        drop(lock);
        assert_eq!(std::fs::read(ledger_path(&corpus)).unwrap(), before);
        // Raising the total makes room again; the history is kept.
        Ledger::set_total(&corpus, 1, e(2.0)).unwrap();
        let l = Ledger::charge(&corpus, 1, "second", e(0.5)).unwrap();
        assert_eq!(l.charges().len(), 2);
        assert_eq!(l.remaining(), 0.75);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        // The lock file stays (it is the lock's anchor, not the lock); no temporary file does.
        assert_eq!(names, ["c.tcorp.ledger", "c.tcorp.ledger.lock"]);
    }

    #[test]
    fn delta_is_budgeted_and_charged_by_basic_composition() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("c.tcorp");
        Ledger::set_total(&corpus, 7, e(3.0)).unwrap();
        // No δ budget: an (ε, δ) charge is refused, a pure one is not.
        let err = Ledger::charge_approx(&corpus, 7, "rdp", e(1.0), 1e-6).unwrap_err();
        assert!(matches!(err, PrivacyError::OverDelta { .. }), "{err}");
        assert!(err.to_string().contains("--total-delta"), "{err}");
        assert!(Ledger::open(&corpus, 7).unwrap().charges().is_empty());
        Ledger::charge(&corpus, 7, "pure", e(0.5)).unwrap();
        let text = std::fs::read_to_string(ledger_path(&corpus)).unwrap();
        // Version 3 now that the budget's setting is recorded; no δ written for a pure-ε ledger.
        assert!(
            text.contains("\"version\": 3") && !text.contains("delta"),
            "{text}"
        );

        Ledger::set_budget(&corpus, 7, e(3.0), Some(2e-6)).unwrap();
        let l = Ledger::charge_approx(&corpus, 7, "rdp", e(1.0), 1e-6).unwrap();
        assert_eq!(l.spent(), 1.5);
        assert_eq!(l.spent_delta(), 1e-6);
        assert_eq!(l.remaining_delta(), 1e-6);
        let text = std::fs::read_to_string(ledger_path(&corpus)).unwrap();
        assert!(text.contains("\"version\": 3"), "{text}");
        // Exactly the rest of δ fits; one more does not.
        Ledger::charge_approx(&corpus, 7, "rdp 2", e(1.0), 1e-6).unwrap();
        let err = Ledger::charge_approx(&corpus, 7, "rdp 3", e(0.1), 1e-9).unwrap_err();
        assert!(matches!(err, PrivacyError::OverDelta { .. }), "{err}");
        // Reopened, δ is still counted; a total δ below it is refused.
        let l = Ledger::open(&corpus, 7).unwrap();
        assert_eq!(l.spent_delta(), 2e-6);
        assert_eq!(l.charges()[0].delta, 0.0);
        assert!(matches!(
            Ledger::set_budget(&corpus, 7, e(3.0), Some(1e-6)).unwrap_err(),
            PrivacyError::TotalDeltaBelowSpent { .. }
        ));
        assert!(matches!(
            Ledger::set_budget(&corpus, 7, e(3.0), Some(1.0)).unwrap_err(),
            PrivacyError::BadDelta(_)
        ));
    }
}
