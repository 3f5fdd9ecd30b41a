//! `topos`: topic modeling from raw text to trained, evaluated LDA models.
//!
//! The binary is thin: it parses arguments, calls the library crates and prints. Every error
//! ends as one line on stderr and a non-zero exit status.

mod cmd;
mod ui;

use clap::{Parser, Subcommand};
use ui::Ui;

#[derive(Parser)]
#[command(name = "topos", version, about = "Fast, reproducible LDA topic models", long_about = None)]
struct Cli {
    /// Machine-readable output: one JSON document on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// No progress bars or status lines on stderr; results (and errors) are still printed.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Turn raw text (or a bag-of-words file) into a corpus file, with an optional held-out split.
    Prepare(cmd::prepare::Args),
    /// Train an LDA model on a corpus file.
    Train(cmd::train::Args),
    /// Continue training a model on new documents (new words are added to its vocabulary).
    Update(cmd::update::Args),
    /// List the samplers (--algo), devices and transports, with their properties.
    Algos(cmd::algos::Args),
    /// Show the top words of every topic of a model.
    Topics(cmd::topics::Args),
    /// Evaluate a model: held-out log-likelihood per token, perplexity, topic coherence.
    Eval(cmd::eval::Args),
    /// Infer the topic mixtures of unseen documents.
    Infer(cmd::infer::Args),
    /// What a model learned as one self-contained HTML page (or the LDAvis data format).
    Report(cmd::report::Args),
    /// Plot the convergence of training runs, or a model's topic prevalence (SVG or PNG).
    Plot(cmd::plot::Args),
    /// Train on a small corpus built into the binary and print its topics.
    Demo(cmd::demo::Args),
    /// Generate a corpus from the LDA generative model (benchmarks at NYTimes/PubMed scale).
    Synth(cmd::synth::Args),
    /// Export a model (θ, φ, topic keys as CSV, JSON Lines, .npy, Parquet; Mallet files), or a corpus as plain text.
    Export(cmd::export::Args),
    /// Turn another system's word-topic counts into a model file (for evaluating it like ours).
    Import(cmd::import::Args),
    /// The k nearest documents of every document over bag-of-words rows (15 distances).
    Knn(cmd::knn::Args),
    /// The training documents nearest to a document or a text by topic mixture.
    Similar(cmd::similar::Args),
    /// Differential privacy: budgets, private count queries, optimal budget allocation.
    Privacy(cmd::privacy::Args),
    /// List the GPUs training can use (memory, compute capability).
    Devices(cmd::devices::Args),
}

/// A usage error (a bad or missing argument) as one line, like every other error: clap's
/// message and tip on one line, then where to read the options (the subcommand's help when
/// the arguments name one) instead of clap's usage block, which for a value checked after
/// parsing shows the top-level usage rather than the subcommand's.
fn usage_error_line(e: &clap::Error, args: impl Iterator<Item = String>) -> String {
    let text = e.render().to_string();
    let mut line = String::new();
    for part in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if part.starts_with("Usage:") || part.starts_with("For more information") {
            continue;
        }
        if let Some(tip) = part.strip_prefix("tip: ") {
            line.push_str(&format!(" ({tip})"));
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(part);
        }
    }
    use clap::CommandFactory;
    let sub = args
        .into_iter()
        .find(|a| !a.starts_with('-'))
        .filter(|a| Cli::command().get_subcommands().any(|c| c.get_name() == a));
    match sub {
        Some(name) => format!("{line}; see `topos {name} --help`"),
        None => format!("{line}; see `topos --help`"),
    }
}

fn main() {
    // A closed stdout (`topos eval … | head`) ends the process quietly, as for other Unix tools,
    // instead of a panic in `println!`. Rust ignores SIGPIPE by default.
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("{}", usage_error_line(&e, std::env::args().skip(1)));
            std::process::exit(2);
        }
    };
    let ui = Ui {
        json: cli.json,
        quiet: cli.quiet,
    };
    let result = match cli.command {
        Command::Prepare(a) => cmd::prepare::run(a, ui),
        Command::Train(a) => cmd::train::run(a, ui),
        Command::Update(a) => cmd::update::run(a, ui),
        Command::Algos(a) => cmd::algos::run(a, ui),
        Command::Topics(a) => cmd::topics::run(a, ui),
        Command::Eval(a) => cmd::eval::run(a, ui),
        Command::Infer(a) => cmd::infer::run(a, ui),
        Command::Report(a) => cmd::report::run(a, ui),
        Command::Plot(a) => cmd::plot::run(a, ui),
        Command::Demo(a) => cmd::demo::run(a, ui),
        Command::Synth(a) => cmd::synth::run(a, ui),
        Command::Export(a) => cmd::export::run(a, ui),
        Command::Import(a) => cmd::import::run(a, ui),
        Command::Knn(a) => cmd::knn::run(a, ui),
        Command::Similar(a) => cmd::similar::run(a, ui),
        Command::Privacy(a) => cmd::privacy::run(a, ui),
        Command::Devices(a) => cmd::devices::run(a, ui),
    };
    if let Err(e) = result {
        match topos_train::transport::launched_by() {
            // One process of several: name it, and end the others rather than leave them
            // waiting for it in a collective.
            Some((_, rank, size)) => {
                eprintln!("error: process {rank} of {size}: {}", one_line(&e));
                topos_train::transport::abort(1);
            }
            None => eprintln!("error: {}", one_line(&e)),
        }
        std::process::exit(1);
    }
    topos_train::transport::finish();
}

/// The error and its causes in one line (`topos_io::one_line`, shared with the Python package so
/// both say the same words).
fn one_line(e: &anyhow::Error) -> String {
    topos_io::one_line(e.as_ref())
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Doubled {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(Doubled {
            path: "x.tcorp".into(),
            source: io,
        });
        assert_eq!(one_line(&e), "x.tcorp: entity not found");
        let e = e.context("cannot open the corpus x.tcorp");
        assert_eq!(
            one_line(&e),
            "cannot open the corpus x.tcorp: x.tcorp: entity not found"
        );
        let e = anyhow::anyhow!("two\nlines");
        assert_eq!(one_line(&e), "two lines");
    }
}
