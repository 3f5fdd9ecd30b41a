//! Training logs read back: the JSON Lines file of `topos train --log`, one object per evaluation
//! (`iteration`, `seconds` of training so far, `tokens_per_second`, `train_ll`, `heldout_ll`;
//! `crates/topos-train/src/run.rs`, `LogLine`). Unknown fields are ignored, so logs of later
//! versions still plot.

use serde::Deserialize;
use std::path::Path;

/// One evaluation of a run.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct LogPoint {
    pub iteration: u32,
    pub seconds: f64,
    pub tokens_per_second: f64,
    #[serde(default)]
    pub train_ll: Option<f64>,
    #[serde(default)]
    pub heldout_ll: Option<f64>,
}

/// A log file: its name (the file's stem) and its points in file order. `topos train --log`
/// appends, so one file may hold several runs one after another ([`TrainLog::runs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainLog {
    pub name: String,
    pub points: Vec<LogPoint>,
}

impl TrainLog {
    /// The runs the file holds, in file order: a run's evaluations have increasing iterations,
    /// so a point at or below the current run's first iteration starts another run (a second
    /// `train --log` to the same file). A point below the one before but above the run's first
    /// is a resumed run logging again from its checkpoint: its points replace those its killed
    /// predecessor had logged from there on, and the run goes on as one. Drawn as one line, the
    /// runs would zig-zag back to the start. (A second run whose first evaluation comes later
    /// than the first run's, with another `--eval-every`, reads as a resume.)
    pub fn runs(&self) -> Vec<Vec<LogPoint>> {
        let mut runs: Vec<Vec<LogPoint>> = Vec::new();
        for p in &self.points {
            match runs.last_mut() {
                Some(run) if p.iteration > run[0].iteration => {
                    let kept = run.partition_point(|q| q.iteration < p.iteration);
                    run.truncate(kept);
                    run.push(p.clone());
                }
                _ => runs.push(vec![p.clone()]),
            }
        }
        runs
    }

    /// What to warn about a file of several runs ([`TrainLog::runs`]), naming it as `shown`;
    /// none for a file of one run.
    pub fn several_runs_warning(&self, shown: &str) -> Option<String> {
        let n = self.runs().len();
        (n > 1).then(|| {
            format!(
                "{shown} holds {n} training runs (topos train --log appends; the iteration starts over where a run begins): each is drawn as its own line, \"run 1\" to \"run {n}\""
            )
        })
    }
}

/// The lines a figure draws for `logs`: a log of one run is one line named as the log; a log of
/// several runs ([`TrainLog::runs`]) is a line per run, named "run 1", "run 2", … (prefixed by
/// the log's name when several logs are drawn together, so the legend tells them apart).
pub fn series_of(logs: &[TrainLog]) -> Vec<TrainLog> {
    let mut out = Vec::new();
    for log in logs {
        let runs = log.runs();
        if runs.len() <= 1 {
            out.push(log.clone());
            continue;
        }
        for (i, run) in runs.into_iter().enumerate() {
            out.push(TrainLog {
                name: if logs.len() == 1 {
                    format!("run {}", i + 1)
                } else {
                    format!("{}: run {}", log.name, i + 1)
                },
                points: run,
            });
        }
    }
    out
}

/// Reads a training log; an unreadable file, a line that is not a log object, or a file with no
/// line is an error that names the file and the line.
pub fn read_log(path: &Path) -> Result<TrainLog, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the training log {}: {e}", path.display()))?;
    if bytes.starts_with(b"TOPOSMOD") {
        return Err(format!(
            "{} is a model file, not a training log (`topos train --log FILE` writes one); for a model's topic prevalence give --prevalence {}",
            path.display(),
            path.display()
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "{} is not a training log: it is not text (`topos train --log FILE` writes one JSON object a line)",
            path.display()
        )
    })?;
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    parse_log(&name, &text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the text of a training log ([`read_log`]).
pub fn parse_log(name: &str, text: &str) -> Result<TrainLog, String> {
    let mut points = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: LogPoint = serde_json::from_str(line).map_err(|e| {
            format!(
                "line {} is not a training log line (topos train --log): {e}",
                i + 1
            )
        })?;
        if !(p.seconds.is_finite() && p.tokens_per_second.is_finite()) {
            return Err(format!("line {} has a non-finite time or speed", i + 1));
        }
        points.push(p);
    }
    if points.is_empty() {
        return Err("no training log lines (topos train --log writes them)".into());
    }
    Ok(TrainLog {
        name: name.to_string(),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_or_binary_file_is_named_not_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.tmod");
        std::fs::write(&model, b"TOPOSMOD\x05\x00\xff\xfe").unwrap();
        let e = read_log(&model).unwrap_err();
        assert!(
            e.contains("is a model file") && e.contains("--prevalence"),
            "{e}"
        );
        let binary = dir.path().join("b.bin");
        std::fs::write(&binary, [0xffu8, 0xfe, 0x00]).unwrap();
        let e = read_log(&binary).unwrap_err();
        assert!(e.contains("is not a training log"), "{e}");
    }

    #[test]
    fn parses_the_lines_of_a_run() {
        let text = r#"{"iteration":10,"seconds":0.5,"tokens_per_second":1e6,"train_ll":-7.1,"heldout_ll":-7.5}
{"iteration":20,"seconds":1.0,"tokens_per_second":2e6,"train_ll":null,"heldout_ll":-7.2,"communication_seconds":0.1}

"#;
        let log = parse_log("a", text).unwrap();
        assert_eq!(log.points.len(), 2);
        assert_eq!(log.points[1].heldout_ll, Some(-7.2));
        assert_eq!(log.points[1].train_ll, None);
        assert!(parse_log("a", "").unwrap_err().contains("no training log"));
        assert!(parse_log("a", "{\"iteration\":1}\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_log("a", "not json").is_err());
        assert_eq!(log.runs().len(), 1);
        assert_eq!(log.several_runs_warning("a.log"), None);
    }

    #[test]
    fn runs_appended_to_one_log_are_split_where_the_iteration_starts_over() {
        let line = |it: u32, ll: f64| {
            format!("{{\"iteration\":{it},\"seconds\":{it},\"tokens_per_second\":1e6,\"train_ll\":{ll}}}\n")
        };
        // Two runs of 30 iterations, then a third that logged one evaluation.
        let text: String = [(10, -8.0), (20, -7.5), (30, -7.4)]
            .iter()
            .chain(&[(10, -8.1), (20, -7.6), (30, -7.3), (10, -8.2)])
            .map(|&(it, ll)| line(it, ll))
            .collect();
        let log = parse_log("run", &text).unwrap();
        let runs = log.runs();
        assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), [3, 3, 1]);
        assert_eq!(runs[1][0].train_ll, Some(-8.1));
        // A repeated first iteration starts a run too (never one line going back).
        let repeated = parse_log("r", &format!("{}{}", line(10, -8.0), line(10, -7.9))).unwrap();
        assert_eq!(repeated.runs().len(), 2);
        // A resumed run (killed after 30, resumed from its checkpoint at 20) is one run: the
        // points it logs again replace the killed run's.
        let resumed: String = [(10, -8.0), (20, -7.5), (30, -7.4), (30, -7.35), (40, -7.3)]
            .iter()
            .map(|&(it, ll)| line(it, ll))
            .collect();
        let resumed = parse_log("r", &resumed).unwrap();
        let runs = resumed.runs();
        assert_eq!(runs.len(), 1);
        let points: Vec<(u32, Option<f64>)> =
            runs[0].iter().map(|p| (p.iteration, p.train_ll)).collect();
        assert_eq!(
            points,
            [
                (10, Some(-8.0)),
                (20, Some(-7.5)),
                (30, Some(-7.35)),
                (40, Some(-7.3))
            ]
        );
        assert_eq!(resumed.several_runs_warning("r.log"), None);
        let w = log.several_runs_warning("run.log").unwrap();
        assert!(
            w.contains("run.log holds 3 training runs") && !w.contains('\n'),
            "{w}"
        );
        // Series: one log of several runs is "run 1", "run 2", …; beside another log, prefixed.
        let series = series_of(std::slice::from_ref(&log));
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["run 1", "run 2", "run 3"]);
        assert!(series
            .iter()
            .all(|s| s.points.windows(2).all(|w| w[0].iteration < w[1].iteration)));
        let other = parse_log("b", &line(5, -9.0)).unwrap();
        let series = series_of(&[log, other]);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["run: run 1", "run: run 2", "run: run 3", "b"]);
    }
}
