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
