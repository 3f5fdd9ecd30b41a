//! One module per subcommand.

pub mod demo;
pub mod eval;
pub mod infer;
pub mod prepare;
pub mod topics;
pub mod train;
