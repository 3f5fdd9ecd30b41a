//! The MPI transport in a build without the `mpi` feature: listed, refused with what to rebuild.

use super::{Transport, TransportError, TransportKind};

/// Several processes under `mpirun`/`srun` (not in this build).
pub struct Mpi;

const MISSING: &str = "this build has no MPI support; rebuild with `cargo build --release -p topos-cli --features mpi` (needs Debian's libopenmpi-dev and libclang-dev; README, \"Several processes with MPI\")";

impl TransportKind for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }
    fn summary(&self) -> &'static str {
        "several processes under mpirun or srun, one share of the documents each (not in this build: --features mpi)"
    }
    fn available(&self) -> Result<(), String> {
        Err(MISSING.into())
    }
    fn connect(&self) -> Result<Box<dyn Transport>, TransportError> {
        Err(TransportError {
            transport: "mpi",
            what: MISSING.into(),
        })
    }
}

pub(super) fn abort_if_running(_code: i32) {}

pub(super) fn finalize_if_running() {}
