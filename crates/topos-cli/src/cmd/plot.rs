//! `topos plot`: the convergence of one or more training runs (their `--log` files), or with
//! `--prevalence` the topic sizes of a model, as SVG or PNG (by the output's extension).

use super::check_output;
use super::report::write_atomic;
use crate::ui::Ui;
use anyhow::{bail, Result};
use std::path::PathBuf;
use topos_model::TopicModel;
use topos_report::{plot, read_log, TrainLog};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Training logs (topos train --log), overlaid one colour each; a log that holds several
    /// runs (--log appends) draws each as its own line.
    pub logs: Vec<PathBuf>,
    /// Plot the topic prevalence of this model instead.
    #[arg(long, conflicts_with = "logs")]
    pub prevalence: Option<PathBuf>,
    /// Output file: .svg or .png.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Bars at most in the prevalence plot (the rest are summed in one bar).
    #[arg(long, default_value_t = 50)]
    pub max_bars: usize,
}

/// Reads training logs for the convergence figure (`plot`, `report --log`), warning on stderr
/// (whatever `--quiet` says: the figure is not what the user may expect) of a file that holds
/// several runs, which the figure draws as separate lines.
pub(super) fn read_logs(paths: &[PathBuf]) -> Result<Vec<TrainLog>> {
    let mut logs = Vec::with_capacity(paths.len());
    for p in paths {
        let log = read_log(p).map_err(anyhow::Error::msg)?;
        if let Some(w) = log.several_runs_warning(&p.display().to_string()) {
            eprintln!("warning: {w}");
        }
        logs.push(log);
    }
    Ok(logs)
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let inputs: Vec<_> = args
        .logs
        .iter()
        .map(|l| ("a log", Some(l.as_path())))
        .collect();
    check_output(&args.output, &inputs)?;
    let ext = args
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let png = match ext.as_deref() {
        Some("svg") => false,
        Some("png") => true,
        _ => bail!(
            "cannot tell the format of {}: name it .svg or .png",
            args.output.display()
        ),
    };
    let svg = if let Some(model) = &args.prevalence {
        let model = TopicModel::read(model)?;
        plot::prevalence_svg(&topos_model::topic_sizes(&model), args.max_bars)
    } else {
        if args.logs.is_empty() {
            bail!("give one or more training logs (topos train --log), or --prevalence MODEL");
        }
        plot::convergence_svg(&read_logs(&args.logs)?)
    };
    let bytes = if png {
        plot::svg_to_png(&svg).map_err(anyhow::Error::msg)?
    } else {
        svg.into_bytes()
    };
    write_atomic(&args.output, &bytes)?;
    ui.written(
        serde_json::json!({ "output": args.output.display().to_string() }),
        format!("wrote {}", args.output.display()),
    );
    Ok(())
}
