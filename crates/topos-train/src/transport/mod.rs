//! How the workers of a run exchange what they must agree on: one collective interface (in the
//! spirit of RAFT's communicator, `core/comms.hpp`) and a registry, one line per transport.
//!
//! Data-parallel training (AD-LDA; CuLDA_CGS §4–5, the thesis §1.5.2) gives each worker a
//! contiguous share of the documents (whole partitions, balanced by tokens), samples every share
//! against the same counts, and sums the workers' new counts before the next iteration; with one
//! worker every collective is the identity. `local` is one process; `mpi` is several processes
//! under `mpirun`/`srun` (`transport/mpi.rs`, behind the `mpi` cargo feature).
//!
//! Every worker calls the same collectives in the same order (the run's schedule is a function
//! of its configuration alone); a worker that fails aborts the whole run ([`abort`]) rather than
//! leave the others waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

mod in_process;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(not(feature = "mpi"))]
#[path = "mpi_disabled.rs"]
mod mpi;

pub use in_process::InProcess;
pub use mpi::Mpi;

/// The collectives of a run's workers. Each call is made by every worker, with buffers of the
/// same length where a length is shared.
pub trait Transport: Send + Sync {
    /// The name (`--transport`).
    fn name(&self) -> &'static str;
    /// This worker's index, 0-based. Worker 0 writes the run's files and reports.
    fn rank(&self) -> usize;
    /// Number of workers.
    fn workers(&self) -> usize;
    /// Element-wise sum of `counts` over every worker (all-reduce).
    fn sum_u32(&self, counts: &mut [u32]) -> Result<(), TransportError>;
    /// Element-wise sum of `values` over every worker (all-reduce).
    fn sum_u64(&self, values: &mut [u64]) -> Result<(), TransportError>;
    /// Every worker's `mine`, in rank order, on every worker (all-gather of varying lengths).
    fn all_gather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError>;
    /// Every worker's `mine`, in rank order, on worker 0 (`None` elsewhere).
    fn gather_bytes(&self, mine: &[u8]) -> Result<Option<Vec<Vec<u8>>>, TransportError>;
    /// `parts[i]` (one per worker) to worker i; returns what every worker sent this one, in
    /// rank order (all-to-all of varying lengths: the reduce-scatter of a sparse exchange).
    fn all_to_all_bytes(&self, parts: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TransportError>;
    /// Seconds this worker has spent in collectives (waiting included).
    fn seconds(&self) -> f64;
    /// Bytes this worker has sent to collectives.
    fn bytes_sent(&self) -> u64;
}

impl dyn Transport {
    /// Whether this worker is the one that writes files and reports.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }
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
    /// Whether this build can connect it (`Err`: what is missing, for people).
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    /// Joins the run's workers.
    fn connect(&self) -> Result<Box<dyn Transport>, TransportError>;
}

impl std::fmt::Debug for dyn TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every transport (`--transport`), the default first.
pub static TRANSPORTS: &[&dyn TransportKind] = &[&Local, &Mpi];

/// The transport named `name`.
pub fn transport_named(name: &str) -> Option<&'static dyn TransportKind> {
    TRANSPORTS.iter().copied().find(|t| t.name() == name)
}

/// The launcher this process runs under, if any: (its rank, the number of processes) from the
/// variables Open MPI, MPICH/PMI and PMIx set (Slurm's srun sets the PMI or PMIx ones). Used to pick `mpi` when no transport is
/// named, and to refuse a launch this build cannot join (N copies training alone would race on
/// one output).
pub fn launched_by() -> Option<(&'static str, usize, usize)> {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let pairs = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"),
        ("PMIX_RANK", "PMIX_SIZE", "PMIx"),
        ("PMI_RANK", "PMI_SIZE", "PMI"),
        // Not Slurm's SLURM_PROCID/SLURM_NTASKS: a batch script of several tasks has them too,
        // outside any launch (srun sets the PMI or PMIx variables above).
    ];
    pairs
        .iter()
        .find_map(|&(r, s, who)| match (var(r), var(s)) {
            (Some(rank), Some(size)) if size > 1 => Some((who, rank, size)),
            _ => None,
        })
}

/// This process's index among the processes of its machine, from the launcher's variables
/// (Open MPI, MPICH, Slurm): a GPU process takes that GPU of its machine.
pub fn local_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "PMI_LOCAL_RANK",
        "SLURM_LOCALID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok().and_then(|v| v.parse().ok()))
}

/// How many processes of the run share this machine, from the launcher's variables.
pub fn local_size() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        "PMI_LOCAL_SIZE",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok().and_then(|v| v.parse().ok()))
}

/// The transport for `name` (`auto`: `mpi` when launched by an MPI launcher with several
/// processes, else `local`), refused with what to do when it cannot work here.
pub fn choose(name: &str) -> Result<&'static dyn TransportKind, String> {
    let kind: &'static dyn TransportKind = match name {
        "auto" => match launched_by() {
            Some(_) => &Mpi,
            None => &Local,
        },
        other => transport_named(other).ok_or_else(|| {
            let names: Vec<&str> = TRANSPORTS.iter().map(|t| t.name()).collect();
            format!(
                "unknown transport {other:?}; the transports are auto, {}",
                names.join(", ")
            )
        })?,
    };
    if let (Some((who, rank, size)), "local") = (launched_by(), kind.name()) {
        let why = match Mpi.available() {
            Ok(()) => "--transport local would train the same corpus in every process, each writing the same output; leave --transport out (auto) or name mpi".to_string(),
            Err(e) => e,
        };
        return Err(format!(
            "this is process {rank} of {size} started by {who}, but the run would use one process: {why}"
        ));
    }
    kind.available()?;
    Ok(kind)
}

/// Ends every worker of a multi-process run now (after a failure on this one), so that none is
/// left waiting in a collective. Returns where there is nothing to abort.
pub fn abort(code: i32) {
    mpi::abort_if_running(code);
}

/// Lets the transport's library go at the end of a successful run (MPI_Finalize).
pub fn finish() {
    mpi::finalize_if_running();
}

/// Time and bytes of a transport's collectives.
#[derive(Default)]
pub(crate) struct Meter {
    nanos: AtomicU64,
    bytes: AtomicU64,
}

impl Meter {
    /// Runs `f`, counting its time and `bytes`.
    pub(crate) fn time<T>(&self, bytes: usize, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        out
    }
    pub(crate) fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// One worker in this process: every collective returns this worker's own data.
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
    fn all_gather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> {
        Ok(vec![mine.to_vec()])
    }
    fn gather_bytes(&self, mine: &[u8]) -> Result<Option<Vec<Vec<u8>>>, TransportError> {
        Ok(Some(vec![mine.to_vec()]))
    }
    fn all_to_all_bytes(&self, parts: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TransportError> {
        Ok(parts.to_vec())
    }
    fn seconds(&self) -> f64 {
        0.0
    }
    fn bytes_sent(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_transport_is_one_worker_whose_collectives_return_its_own_data() {
        let t = transport_named("local").unwrap().connect().unwrap();
        assert_eq!((t.rank(), t.workers()), (0, 1));
        let mut v = vec![3u32, 0, 7];
        t.sum_u32(&mut v).unwrap();
        assert_eq!(v, [3, 0, 7]);
        assert_eq!(t.all_gather_bytes(b"ab").unwrap(), vec![b"ab".to_vec()]);
        assert_eq!(t.gather_bytes(b"c").unwrap(), Some(vec![b"c".to_vec()]));
        assert!(transport_named("carrier-pigeon").is_none());
        assert!(choose("carrier-pigeon")
            .unwrap_err()
            .contains("auto, local, mpi"));
    }
}
