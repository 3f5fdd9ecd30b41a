//! What the user sees: human text and progress bars on stderr, results on stdout (as JSON with
//! `--json`). `--quiet` drops the progress bars and status lines, never a result: a result is
//! what the command was run for (and may have cost privacy budget), so it is always printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// `n` and the noun for it, singular for one: "1 word", "3 words".
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Output settings shared by every command.
#[derive(Clone, Copy, Debug)]
pub struct Ui {
    pub json: bool,
    pub quiet: bool,
}

impl Ui {
    /// A status line on stderr (suppressed by `--quiet`).
    pub fn info(&self, msg: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", msg.as_ref());
        }
    }

    /// What a command that writes files reports when it is done: with `--json` one JSON
    /// document on stdout (`value`: what was written, where), else `human` as a status line on
    /// stderr (dropped by `--quiet`: the files are the result).
    pub fn written(&self, value: serde_json::Value, human: String) {
        if self.json {
            println!("{value}");
        } else {
            self.info(human);
        }
    }

    /// A progress bar on stderr, hidden with `--quiet` or when stderr is not a terminal.
    pub fn bar(&self, len: u64, template: &str) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(
            Some(len),
            if self.quiet {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar
    }

    /// Prints a result on stdout: as JSON with `--json`, else through `human`. `--quiet` does not
    /// suppress it (it only silences [`Ui::info`] and [`Ui::bar`]).
    pub fn result<T: Serialize>(&self, value: &T, human: impl FnOnce()) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(value)?);
        } else {
            human();
        }
        Ok(())
    }
}
