//! How the workers of a run sum their counts: one trait (in the spirit of RAFT's communicator
//! interface, `core/comms.hpp`) and a registry, one line per transport. Data-parallel training
//! (AD-LDA, CuLDA_CGS §5 multi-GPU) samples each worker's share of the documents against the
//! same counts and sums the workers' new counts before the next iteration; with one worker the
//! sum is the identity. MPI and NCCL transports come with the scale-out issues; `local` (one
//! process, one device) is the only one here.

/// Sums buffers element-wise across all workers of a run (every worker calls it with a buffer
/// of the same length; on return each holds the sum).
pub trait Transport: Send + Sync {
    /// The name (`--transport`).
    fn name(&self) -> &'static str;
    /// This worker's index, 0-based.
    fn rank(&self) -> usize;
    /// Number of workers.
    fn workers(&self) -> usize;
    /// Element-wise sum of `counts` over every worker.
    fn sum_u32(&self, counts: &mut [u32]) -> Result<(), TransportError>;
    /// Element-wise sum of `values` over every worker.
    fn sum_u64(&self, values: &mut [u64]) -> Result<(), TransportError>;
}

/// A transport failed (a peer died, a network error).
#[derive(Debug, thiserror::Error)]
#[error("{transport} transport: {what}")]
pub struct TransportError {
    pub transport: &'static str,
    pub what: String,
}

/// A registry entry: how to connect a run's transport.
pub trait TransportKind: Sync {
    fn name(&self) -> &'static str;
    /// One line for `topos algos`.
    fn summary(&self) -> &'static str;
    /// Joins the run's workers.
    fn connect(&self) -> Result<Box<dyn Transport>, TransportError>;
}

/// Every transport (`--transport`), the default first.
pub static TRANSPORTS: &[&dyn TransportKind] = &[&Local];

/// The transport named `name`.
pub fn transport_named(name: &str) -> Option<&'static dyn TransportKind> {
    TRANSPORTS.iter().copied().find(|t| t.name() == name)
}

/// One worker in this process: the sums are the worker's own counts.
pub struct Local;

impl TransportKind for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn summary(&self) -> &'static str {
        "one process on one device: nothing to exchange"
    }
    fn connect(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Local))
    }
}

impl Transport for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn rank(&self) -> usize {
        0
    }
    fn workers(&self) -> usize {
        1
    }
    fn sum_u32(&self, _counts: &mut [u32]) -> Result<(), TransportError> {
        Ok(())
    }
    fn sum_u64(&self, _values: &mut [u64]) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_transport_is_one_worker_whose_sums_are_its_own() {
        let t = transport_named("local").unwrap().connect().unwrap();
        assert_eq!((t.rank(), t.workers()), (0, 1));
        let mut v = vec![3u32, 0, 7];
        t.sum_u32(&mut v).unwrap();
        assert_eq!(v, [3, 0, 7]);
        assert!(transport_named("carrier-pigeon").is_none());
    }
}
