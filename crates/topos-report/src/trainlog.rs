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

/// A run's log: its name (the file's stem) and its points in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainLog {
    pub name: String,
    pub points: Vec<LogPoint>,
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
    }
}
