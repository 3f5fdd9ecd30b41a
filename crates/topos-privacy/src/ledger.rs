//! The privacy ledger of a corpus: its total ε and every charge against it.
//!
//! Every private query on a corpus spends part of one budget (sequential composition across
//! queries, Theorem 3), so the budget must outlive a process: it is a side file next to the
//! corpus, `NAME.tcorp.ledger` (JSON), tied to the corpus by its checksum so that a ledger is
//! never silently reused for different data.
//!
//! A charge is atomic: under an exclusive lock file (`NAME.tcorp.ledger.lock`), the ledger is
//! read, the query is checked against the remaining budget, and the ledger with the new charge is
//! written by temp-file-and-rename ([`topos_io::AtomicFile`]); only after [`Ledger::charge`]
//! returns may the caller draw noise and release the answer. A refused query (over budget, wrong
//! corpus, no budget set) leaves the ledger as it was and releases nothing. A crash after the
//! charge loses that ε without releasing anything, the safe direction.
//!
//! Amounts are summed in fixed point, in units of 10⁻¹² ε: the total is exact and independent of
//! the order of charges (0.1 + 0.2 fits a budget of 0.3). A charge is rounded *up* to a unit and
//! the total *down*, except that a value within floating-point error of a unit counts as that
//! unit, so a decimal ε with up to 12 places is accounted exactly.
//!
//! **δ.** A ledger may also hold a total δ (`privacy budget --total-delta`): an (ε, δ) charge —
//! a private training run calibrated by Rényi DP — then spends both, and (ε, δ) charges compose
//! by adding their ε's and their δ's (basic sequential composition of approximate DP; Dwork &
//! Roth 2014, Theorem 3.16). δ is summed in the same fixed-point units. A ledger with δ spent or
//! budgeted is written as version 2 (an older build refuses it rather than drop the δ charges
//! when it rewrites the file); one without stays version 1.

use crate::{Epsilon, PrivacyError};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use topos_io::{AtomicFile, FormatError};

const FORMAT: &str = "topos-privacy-ledger";
/// Version of a ledger with no δ (readable by every build).
const VERSION: u32 = 1;
/// Version of a ledger that budgets or spends δ.
const VERSION_DELTA: u32 = 2;
const UNITS_PER_EPSILON: f64 = 1e12;

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

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LedgerFile {
    format: String,
    version: u32,
    /// Hex, as JSON numbers lose u64 precision in many readers.
    corpus_checksum: String,
    total_epsilon: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    total_delta: f64,
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
    charges: Vec<Charge>,
}

/// `corpus` + `.ledger`.
pub fn ledger_path(corpus: &Path) -> PathBuf {
    let mut s = corpus.as_os_str().to_owned();
    s.push(".ledger");
    PathBuf::from(s)
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

/// Holds `LEDGER.lock` while alive.
struct Lock(PathBuf);

impl Lock {
    fn take(ledger: &Path) -> Result<Lock, PrivacyError> {
        let mut s = ledger.as_os_str().to_owned();
        s.push(".lock");
        let path = PathBuf::from(s);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                Ok(Lock(path))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(PrivacyError::Locked(path))
            }
            Err(e) => Err(FormatError::io(&path, e).into()),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Ledger {
    /// Reads the ledger of `corpus` (whose checksum is `checksum`).
    pub fn open(corpus: &Path, checksum: u64) -> Result<Ledger, PrivacyError> {
        let path = ledger_path(corpus);
        if !path.exists() {
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
        let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
        let f: LedgerFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if f.format != FORMAT {
            return Err(bad(format!(
                "format is {:?}, expected {FORMAT:?}",
                f.format
            )));
        }
        if f.version != VERSION && f.version != VERSION_DELTA {
            return Err(bad(format!(
                "version {} is not supported by this build (it reads {VERSION} and {VERSION_DELTA})",
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
        Ok(Ledger {
            path: path.to_path_buf(),
            checksum,
            total: f.total_epsilon,
            total_delta: f.total_delta,
            charges: f.charges,
        })
    }

    fn write(&self) -> Result<(), PrivacyError> {
        let has_delta = self.total_delta > 0.0 || self.charges.iter().any(|c| c.delta > 0.0);
        let f = LedgerFile {
            format: FORMAT.into(),
            version: if has_delta { VERSION_DELTA } else { VERSION },
            corpus_checksum: format!("{:016x}", self.checksum),
            total_epsilon: self.total,
            total_delta: self.total_delta,
            charges: self.charges.clone(),
        };
        let mut text = serde_json::to_string_pretty(&f).expect("ledger serializes");
        text.push('\n');
        let mut out = AtomicFile::create(&self.path)?;
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
    /// if there is none. A total below what is already spent is refused.
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
        let path = ledger_path(corpus);
        let _lock = Lock::take(&path)?;
        let mut ledger = if path.exists() {
            Self::read(&path, checksum)?
        } else {
            Ledger {
                path: path.clone(),
                checksum,
                total: total.get(),
                total_delta: 0.0,
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
        ledger.write()?;
        Ok(ledger)
    }

    /// Charges `eps` for `query` to the ledger of `corpus`, atomically, or refuses with
    /// [`PrivacyError::OverBudget`] (and changes nothing) when it would exceed the total.
    /// Call it *before* drawing any noise; release the answer only if it returns `Ok`.
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
        if !(0.0..1.0).contains(&delta) {
            return Err(PrivacyError::BadDelta(delta));
        }
        let path = ledger_path(corpus);
        if !path.exists() {
            return Err(PrivacyError::NoLedger {
                corpus: corpus.display().to_string(),
            });
        }
        let _lock = Lock::take(&path)?;
        let mut ledger = Self::read(&path, checksum)?;
        let asked = units(eps.get(), true);
        if ledger.spent_units() + asked > ledger.total_units() {
            return Err(PrivacyError::OverBudget {
                spent: ledger.spent(),
                remaining: ledger.remaining(),
                asked: from_units(asked),
                total: ledger.total,
            });
        }
        let asked_delta = delta_units(delta);
        if ledger.spent_delta_units() + asked_delta > units(ledger.total_delta, false) {
            return Err(PrivacyError::OverDelta {
                spent: ledger.spent_delta(),
                asked: delta,
                total: ledger.total_delta,
                corpus: corpus.display().to_string(),
            });
        }
        ledger.charges.push(Charge {
            query: query.to_string(),
            epsilon: eps.get(),
            delta,
            time: rfc3339_now(),
        });
        ledger.write()?;
        Ok(ledger)
    }

    fn spent_units(&self) -> u128 {
        self.charges.iter().map(|c| units(c.epsilon, true)).sum()
    }

    fn total_units(&self) -> u128 {
        units(self.total, false)
    }

    fn spent_delta_units(&self) -> u128 {
        self.charges.iter().map(|c| delta_units(c.delta)).sum()
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

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
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
        let lock = Lock::take(&ledger_path(&corpus)).unwrap();
        assert!(matches!(
            Ledger::charge(&corpus, 1, "y", e(0.1)),
            Err(PrivacyError::Locked(_))
        ));
        drop(lock);
        assert_eq!(std::fs::read(ledger_path(&corpus)).unwrap(), before);
        // Raising the total makes room again; the history is kept.
        Ledger::set_total(&corpus, 1, e(2.0)).unwrap();
        let l = Ledger::charge(&corpus, 1, "second", e(0.5)).unwrap();
        assert_eq!(l.charges().len(), 2);
        assert_eq!(l.remaining(), 0.75);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["c.tcorp.ledger".to_string()]);
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
        assert!(
            text.contains("\"version\": 1") && !text.contains("delta"),
            "{text}"
        );

        Ledger::set_budget(&corpus, 7, e(3.0), Some(2e-6)).unwrap();
        let l = Ledger::charge_approx(&corpus, 7, "rdp", e(1.0), 1e-6).unwrap();
        assert_eq!(l.spent(), 1.5);
        assert_eq!(l.spent_delta(), 1e-6);
        assert_eq!(l.remaining_delta(), 1e-6);
        let text = std::fs::read_to_string(ledger_path(&corpus)).unwrap();
        assert!(text.contains("\"version\": 2"), "{text}");
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
