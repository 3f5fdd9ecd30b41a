//! The ledger under concurrency and crashes: the lock is the operating system's, released when
//! its holder dies, waited for by others; concurrent charges all land and add up exactly.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use topos_privacy::ledger::{ledger_path, Ledger};
use topos_privacy::{Epsilon, PrivacyError};

const CHECKSUM: u64 = 0x5eed;

fn e(x: f64) -> Epsilon {
    Epsilon::new(x).unwrap()
}

/// What a child process (this test binary, re-run with `TOPOS_LEDGER_CHILD` set) does.
fn child_mode() -> Option<(String, PathBuf)> {
    let mode = std::env::var("TOPOS_LEDGER_CHILD").ok()?;
    let corpus = PathBuf::from(std::env::var("TOPOS_LEDGER_CORPUS").ok()?);
    Some((mode, corpus))
}

/// Starts this test binary again, running only `test`, as a child in `mode`.
fn spawn_child(test: &str, mode: &str, corpus: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env("TOPOS_LEDGER_CHILD", mode)
        .env("TOPOS_LEDGER_CORPUS", corpus)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// In the child: takes the ledger's lock (inside a charge whose release never returns) and
/// says so by creating `READY`; in the parent: kills it with SIGKILL while it holds the lock,
/// then charges without waiting for a stale lock.
#[test]
fn a_lock_held_by_a_killed_process_does_not_block() {
    if let Some((mode, corpus)) = child_mode() {
        if mode == "hold" {
            let ready = corpus.with_extension("ready");
            let _ = Ledger::charge_with(&corpus, CHECKSUM, "held forever", e(0.5), 0.0, || {
                std::fs::write(&ready, b"1").unwrap();
                std::thread::sleep(Duration::from_secs(3600));
                Ok(())
            });
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    Ledger::set_total(&corpus, CHECKSUM, e(1.0)).unwrap();
    let mut child = spawn_child(
        "a_lock_held_by_a_killed_process_does_not_block",
        "hold",
        &corpus,
    );
    let ready = corpus.with_extension("ready");
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "child never took the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let t = Instant::now();
    let l = Ledger::charge(&corpus, CHECKSUM, "after the crash", e(0.25)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // The killed process charged nothing (it never released); the lock file is still there
    // and harmless.
    assert_eq!(l.charges().len(), 1);
    assert_eq!(l.spent(), 0.25);
    let mut lock = ledger_path(&corpus).into_os_string();
    lock.push(".lock");
    assert!(Path::new(&lock).exists());
}

/// A second process waits for the lock instead of failing at once.
#[test]
fn a_waiting_charge_gets_the_lock_when_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    Ledger::set_total(&corpus, CHECKSUM, e(1.0)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let c = corpus.clone();
        s.spawn(move || {
            Ledger::charge_with(&c, CHECKSUM, "slow", e(0.5), 0.0, || {
                tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(400));
                Ok(())
            })
            .unwrap();
        });
        rx.recv().unwrap();
        let t = Instant::now();
        let l = Ledger::charge(&corpus, CHECKSUM, "waited", e(0.5)).unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(l.charges().len(), 2);
        assert_eq!(l.remaining(), 0.0);
    });
}

/// Many threads and processes charging at once: every charge lands, and the sum is exact.
#[test]
fn concurrent_charges_all_succeed_and_add_up_exactly() {
    const THREADS: usize = 4;
    const PROCESSES: usize = 3;
    const EACH: usize = 15;
    if let Some((mode, corpus)) = child_mode() {
        if mode == "charge" {
            for i in 0..EACH {
                Ledger::charge(
                    &corpus,
                    CHECKSUM,
                    &format!("p{} {i}", std::process::id()),
                    e(0.001),
                )
                .unwrap();
            }
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    Ledger::set_total(&corpus, CHECKSUM, e(1.0)).unwrap();
    let children: Vec<Child> = (0..PROCESSES)
        .map(|_| {
            spawn_child(
                "concurrent_charges_all_succeed_and_add_up_exactly",
                "charge",
                &corpus,
            )
        })
        .collect();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let c = &corpus;
            s.spawn(move || {
                for i in 0..EACH {
                    Ledger::charge(c, CHECKSUM, &format!("t{t} {i}"), e(0.001)).unwrap();
                }
            });
        }
    });
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let l = Ledger::open(&corpus, CHECKSUM).unwrap();
    let n = (THREADS + PROCESSES) * EACH;
    assert_eq!(l.charges().len(), n);
    assert_eq!(l.spent(), n as f64 * 0.001);
    assert_eq!(l.remaining(), 1.0 - n as f64 * 0.001);
}

/// A release that fails is not charged; a refused query is not charged; the totals' changes are
/// entries of the ledger; spent and remaining agree with the listed charges.
#[test]
fn only_releases_are_charged_and_budget_changes_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    Ledger::set_total(&corpus, CHECKSUM, e(1.0)).unwrap();
    let err = Ledger::charge_with(&corpus, CHECKSUM, "fails", e(0.5), 0.0, || {
        Err::<(), _>(PrivacyError::Unsupported("noise too large".into()))
    })
    .unwrap_err();
    assert!(err.to_string().contains("noise too large"));
    assert!(Ledger::open(&corpus, CHECKSUM)
        .unwrap()
        .charges()
        .is_empty());
    assert!(Ledger::charge(&corpus, CHECKSUM, "too much", e(1.5)).is_err());
    assert!(Ledger::check_approx(&corpus, CHECKSUM, e(1.5), 0.0).is_err());
    assert!(Ledger::check_approx(&corpus, CHECKSUM, e(1.0), 0.0).is_ok());
    let (l, answer) = Ledger::charge_with(&corpus, CHECKSUM, "ok", e(0.5), 0.0, || Ok(42)).unwrap();
    assert_eq!(answer, 42);
    assert_eq!(l.charges().len(), 1);
    // A charge far below the accounting unit still costs one unit, never nothing.
    let l = Ledger::charge(&corpus, CHECKSUM, "tiny", e(1e-20)).unwrap();
    assert!(l.spent() > 0.5 && l.remaining() < 0.5, "{}", l.spent());
    // Raising the total is recorded, with its time, after the first setting.
    Ledger::set_budget(&corpus, CHECKSUM, e(2.0), Some(1e-6)).unwrap();
    let l = Ledger::open(&corpus, CHECKSUM).unwrap();
    let totals: Vec<(f64, f64)> = l
        .budget_changes()
        .iter()
        .map(|b| (b.total_epsilon, b.total_delta))
        .collect();
    assert_eq!(totals, [(1.0, 0.0), (2.0, 1e-6)]);
    assert!(l.budget_changes().iter().all(|b| b.time.ends_with('Z')));
    let text = std::fs::read_to_string(ledger_path(&corpus)).unwrap();
    assert!(text.contains("\"version\": 3"), "{text}");
}

/// Ledgers written before budget changes were recorded (versions 1 and 2) are still read, and
/// gain a history from their next change.
#[test]
fn old_ledgers_are_read_and_upgraded_on_the_next_change() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    let v1 = r#"{
  "format": "topos-privacy-ledger",
  "version": 1,
  "corpus_checksum": "0000000000005eed",
  "total_epsilon": 1.0,
  "charges": [
    { "query": "count-docs-with gene", "epsilon": 0.25, "time": "2026-01-01T00:00:00Z" }
  ]
}
"#;
    std::fs::write(ledger_path(&corpus), v1).unwrap();
    let l = Ledger::open(&corpus, CHECKSUM).unwrap();
    assert_eq!((l.total(), l.spent()), (1.0, 0.25));
    assert!(l.budget_changes().is_empty());
    let v2 = v1.replace("\"version\": 1", "\"version\": 2").replace(
        "\"total_epsilon\": 1.0,",
        "\"total_epsilon\": 1.0,\n  \"total_delta\": 1e-6,",
    );
    std::fs::write(ledger_path(&corpus), &v2).unwrap();
    let l = Ledger::charge_approx(&corpus, CHECKSUM, "rdp", e(0.25), 1e-7).unwrap();
    assert_eq!(l.spent(), 0.5);
    assert!(l.budget_changes().is_empty());
    let l = Ledger::set_total(&corpus, CHECKSUM, e(3.0)).unwrap();
    assert_eq!(l.budget_changes().len(), 1);
    assert_eq!(l.charges().len(), 2);
    let future = v1.replace("\"version\": 1", "\"version\": 4");
    std::fs::write(ledger_path(&corpus), future).unwrap();
    let e = Ledger::open(&corpus, CHECKSUM).unwrap_err().to_string();
    assert!(e.contains("version 4") && !e.contains('\n'), "{e}");
}

/// A damaged ledger whose charges are absurdly large (found by the property tests: two charges
/// of 1e300 ε overflowed the sum of spent units) is read, and every further charge is refused
/// as over budget, without a panic.
#[test]
fn absurd_charges_in_a_damaged_ledger_do_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    Ledger::set_total(&corpus, CHECKSUM, e(3.0)).unwrap();
    Ledger::charge(&corpus, CHECKSUM, "q", e(0.5)).unwrap();
    let path = ledger_path(&corpus);
    let text = std::fs::read_to_string(&path).unwrap();
    let charge = "\"epsilon\": 0.5";
    assert!(text.contains(charge), "{text}");
    let huge = text.replace(charge, "\"epsilon\": 1e300");
    let twice = huge.replace(
        "\"charges\": [",
        "\"charges\": [{\"query\": \"x\", \"epsilon\": 1e300, \"time\": \"2026-11-25T00:00:00Z\"},",
    );
    std::fs::write(&path, twice).unwrap();
    let l = Ledger::open(&corpus, CHECKSUM).unwrap();
    assert_eq!(l.remaining(), 0.0);
    let err = Ledger::charge(&corpus, CHECKSUM, "more", e(0.1)).unwrap_err();
    assert!(err.to_string().contains("budget"), "{err}");
}
