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

/// Refuses, before any work, an output path that names one of the command's inputs (`None`s
/// are inputs not given): writing it would destroy what the command reads.
pub fn refuse_overwriting(output: &Path, inputs: &[(&str, Option<&Path>)]) -> anyhow::Result<()> {
    for (what, input) in inputs {
        if let Some(input) = input.filter(|i| topos_io::same_file(output, i)) {
            anyhow::bail!(
                "-o {} is {what} this command reads ({}); write to another path",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}
