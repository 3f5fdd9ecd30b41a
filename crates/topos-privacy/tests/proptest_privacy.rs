//! Property tests of the privacy crate's parsers (issue 18, part 6): the ledger file, the
//! budget TOML of `privacy allocate` and its constraints, and the histogram spec of `privacy
//! query`. On arbitrary input and on structured mutations of valid input: no panic, no
//! allocation beyond a bound set by the input's size, and one-line errors. A ledger that reads
//! can be charged, and the charge adds up exactly.

use proptest::prelude::*;
use topos_privacy::allocate::Problem;
use topos_privacy::ledger::{ledger_path, Ledger};
use topos_privacy::mdmm::MdmmOptions;
use topos_privacy::query::CountQuery;
use topos_privacy::Epsilon;
use topos_testkit::{
    assert_one_line, config, mutated, text_bytes, within_allocation, CountingAlloc,
};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const CHECKSUM: u64 = 0x5eed;

fn bound(len: usize) -> usize {
    (1 << 20) + 64 * len
}

const LEDGER: &str = r#"{
  "format": "topos-privacy-ledger",
  "version": 3,
  "corpus_checksum": "0000000000005eed",
  "total_epsilon": 2.5,
  "total_delta": 1e-5,
  "budget": [
    { "total_epsilon": 1.0, "time": "2026-01-01T00:00:00Z" },
    { "total_epsilon": 2.5, "total_delta": 1e-5, "time": "2026-01-02T00:00:00Z" }
  ],
  "charges": [
    { "query": "count-docs-with gene", "epsilon": 0.25, "time": "2026-01-01T00:00:01Z" },
    { "query": "train --private", "epsilon": 1.0, "delta": 1e-6, "time": "2026-01-03T00:00:00Z" }
  ]
}
"#;

const BUDGET: &str = r#"epsilon = 1.0
composition = "sequential"
constraints = ["eps[0] <= 0.5 * eps[2]", "eps[1] >= 0.1 * total"]

[[query]]
name = "ages 0-18"
sensitivity = 1.0

[[query]]
sensitivity = 2.0
stability = 2.0

[[query]]
name = "rest"
sensitivity = 4.0
"#;

/// Opens `text` as a ledger; if it reads, a small charge lands exactly.
fn ledger_case(text: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.tcorp");
    std::fs::write(ledger_path(&corpus), text).unwrap();
    within_allocation(bound(text.len()), "ledger", || {
        match Ledger::open(&corpus, CHECKSUM) {
            Ok(l) => {
                let eps = Epsilon::new(1e-3).unwrap();
                match Ledger::charge(&corpus, CHECKSUM, "probe", eps) {
                    Ok(after) => {
                        assert_eq!(after.charges().len(), l.charges().len() + 1);
                        assert!(after.spent() >= l.spent());
                        let again = Ledger::open(&corpus, CHECKSUM).unwrap();
                        assert_eq!(again.spent(), after.spent());
                    }
                    Err(e) => assert_one_line(&e.to_string()),
                }
            }
            Err(e) => assert_one_line(&e.to_string()),
        }
    });
}

/// Parses `text` as a budget file and solves it (with a bounded number of iterations).
fn budget_case(text: &[u8]) {
    let Ok(text) = std::str::from_utf8(text) else {
        return; // the command reads the file as UTF-8 first (a one-line error of its own)
    };
    within_allocation(bound(text.len()), "budget", || {
        match Problem::from_toml(text) {
            Ok(p) => {
                if p.sensitivities.len() <= 64 {
                    let opts = MdmmOptions {
                        max_iters: 2_000,
                        ..MdmmOptions::default()
                    };
                    if let Err(e) = p.solve(&opts) {
                        assert_one_line(&e.to_string());
                    }
                }
            }
            Err(e) => assert_one_line(&e.to_string()),
        }
    });
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn ledger_any_bytes(data in text_bytes(400)) {
        ledger_case(&data);
    }

    #[test]
    fn ledger_mutated(data in mutated(LEDGER.as_bytes().to_vec())) {
        ledger_case(&data);
    }

    #[test]
    fn budget_toml_any_text(data in text_bytes(300)) {
        budget_case(&data);
    }

    #[test]
    fn budget_toml_mutated(data in mutated(BUDGET.as_bytes().to_vec())) {
        budget_case(&data);
    }

    #[test]
    fn constraints_and_histograms_any_text(s in "[ -~]{0,60}", t in any::<String>()) {
        let p = Problem::from_toml("epsilon = 1.0\nsensitivities = [1.0, 2.0, 3.0]\n").unwrap();
        for spec in [&s, &t] {
            if let Err(e) = p.clone().with_constraint(spec) {
                assert_one_line(&e.to_string());
            }
            let hist = format!("doc-length:{spec}");
            for h in [spec.as_str(), hist.as_str()] {
                if let Err(e) = CountQuery::histogram(h) {
                    assert_one_line(&e.to_string());
                }
            }
        }
    }

    #[test]
    fn constraints_mutated(data in mutated(b"eps[0] <= 0.5 * eps[2] + 0.25 * total".to_vec())) {
        let p = Problem::from_toml("epsilon = 1.0\nsensitivities = [1.0, 2.0, 3.0]\n").unwrap();
        let text = String::from_utf8_lossy(&data);
        if let Err(e) = p.with_constraint(&text) {
            assert_one_line(&e.to_string());
        }
    }
}
