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
    /// The iteration the process that logged this point started from (0 fresh, the
    /// checkpoint's when resumed); absent in logs written before it was recorded.
    #[serde(default)]
    pub run_started_at: Option<u32>,
    /// The logging process's random tag; absent in older logs.
    #[serde(default)]
    pub process: Option<String>,
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
    /// The runs the file holds, in file order (`topos train --log` appends). Each process tags
    /// its lines (`process`) and says where it started (`run_started_at`). A process that
    /// started at iteration 0 is a new run; one that started from a checkpoint is a resume of
    /// the run before it, and its points replace those its killed predecessor had logged after
    /// the checkpoint. Drawn as one line, the runs would zig-zag back to the start. Logs
    /// written before the tags fall back to the iterations alone: a point at or below the
    /// current run's first iteration starts a run, and one above it is a resume (so there a
    /// second run whose first evaluation comes later than the first run's reads as a resume).
    pub fn runs(&self) -> Vec<Vec<LogPoint>> {
        let mut runs: Vec<Vec<LogPoint>> = Vec::new();
        let mut previous: Option<&LogPoint> = None;
        for p in &self.points {
            let process_starts = previous.is_none_or(|q| {
                p.iteration <= q.iteration
                    || p.process != q.process
                    || p.run_started_at != q.run_started_at
            });
            let resumes_from = match p.run_started_at {
                Some(0) => None,
                Some(start) => process_starts.then_some(start),
                // An older log: a resume is recognised by its iterations alone.
                None => runs
                    .last()
                    .filter(|run| p.iteration > run[0].iteration)
                    .map(|_| p.iteration - 1),
            };
            previous = Some(p);
            match (runs.last_mut(), resumes_from) {
                (Some(run), Some(start)) => {
                    let kept = run.partition_point(|q| q.iteration <= start);
                    run.truncate(kept);
                    run.push(p.clone());
                }
                (Some(run), None) if !process_starts => run.push(p.clone()),
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
    fn tagged_runs_are_told_apart_by_process_and_start() {
        let line = |it: u32, start: u32, process: &str| {
            format!("{{\"iteration\":{it},\"run_started_at\":{start},\"process\":\"{process}\",\"seconds\":{it},\"tokens_per_second\":1e6,\"train_ll\":-{it}}}\n")
        };
        let iterations = |runs: &[Vec<LogPoint>]| -> Vec<Vec<u32>> {
            runs.iter()
                .map(|r| r.iter().map(|p| p.iteration).collect())
                .collect()
        };
        // A second fresh run evaluated every 50 after a first of 30 iterations: by iterations
        // alone a resume; its tag and start make it a run of its own.
        let text = [
            (10, 0, "a"),
            (20, 0, "a"),
            (30, 0, "a"),
            (50, 0, "b"),
            (100, 0, "b"),
        ]
        .iter()
        .map(|&(it, start, p)| line(it, start, p))
        .collect::<String>();
        let log = parse_log("l", &text).unwrap();
        assert_eq!(iterations(&log.runs()), [vec![10, 20, 30], vec![50, 100]]);
        // Killed after 40, resumed from its checkpoint at 20, killed again after 30 and resumed
        // from 20 again: one run whose points after 20 are the last process's.
        let text = [
            (10, 0, "a"),
            (20, 0, "a"),
            (30, 0, "a"),
            (40, 0, "a"),
            (30, 20, "b"),
            (30, 20, "c"),
            (40, 20, "c"),
            (50, 20, "c"),
        ]
        .iter()
        .map(|&(it, start, p)| line(it, start, p))
        .collect::<String>();
        let log = parse_log("l", &text).unwrap();
        let runs = log.runs();
        assert_eq!(iterations(&runs), [vec![10, 20, 30, 40, 50]]);
        assert!(runs[0][2..]
            .iter()
            .all(|p| p.process.as_deref() == Some("c")));
        assert_eq!(log.several_runs_warning("l.log"), None);
        // A fresh run after it starts over, even at a later first evaluation.
        let text = format!("{text}{}", line(60, 0, "d"));
        let log = parse_log("l", &text).unwrap();
        assert_eq!(
            iterations(&log.runs()),
            [vec![10, 20, 30, 40, 50], vec![60]]
        );
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
