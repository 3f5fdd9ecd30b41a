//! One module per subcommand.

pub mod algos;
pub mod demo;
pub mod devices;
pub mod eval;
pub mod export;
pub mod foldin;
pub mod import;
pub mod infer;
pub mod knn;
pub mod plot;
pub mod prepare;
pub mod privacy;
pub mod report;
pub mod similar;
pub mod synth;
pub mod topics;
pub mod train;
pub mod update;

use std::path::Path;

/// Fails before any work, in one line, when `path` cannot be written (its directory is missing
/// or refuses a new file, or it is a directory) or names one of the command's inputs (see
/// [`refuse_overwriting`]): the check every command makes of an output file (`train`'s run makes
/// the same ones, `topos_io::AtomicFile::check_creatable` and `same_file`).
pub fn check_output(path: &Path, inputs: &[(&str, Option<&Path>)]) -> anyhow::Result<()> {
    refuse_overwriting(path, inputs)?;
    topos_io::AtomicFile::check_creatable(path).map_err(|e| {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        const ADVICE: &str = "; check that the directory exists and is writable";
        let why = match &e {
            _ if !dir.is_dir() => format!("the directory {} does not exist{ADVICE}", dir.display()),
            topos_io::FormatError::Io { cause, .. } => {
                format!("{cause}{}", topos_io::output_advice(cause))
            }
            other => format!("{}{ADVICE}", topos_io::one_line(other)),
        };
        anyhow::anyhow!("cannot write {}: {why}", path.display())
    })
}

/// Refuses, before any work, an output path that names one of the command's inputs (`None`s
/// are inputs not given): writing it would destroy what the command reads.
pub fn refuse_overwriting(output: &Path, inputs: &[(&str, Option<&Path>)]) -> anyhow::Result<()> {
    refuse_writing_over("-o", output, inputs)
}

/// [`refuse_overwriting`] for the output given by option `flag` (`-o`, `--log`, …).
pub fn refuse_writing_over(
    flag: &str,
    output: &Path,
    inputs: &[(&str, Option<&Path>)],
) -> anyhow::Result<()> {
    for (what, input) in inputs {
        if let Some(input) = input.filter(|i| topos_io::same_file(output, i)) {
            anyhow::bail!(
                "{flag} {} is {what} this command reads ({}); write to another path",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}
