//! The MPI transport: several processes, on one machine or many, started by `mpirun` or `srun`,
//! one worker per process.
//!
//! Data-parallel LDA (AD-LDA; CuLDA_CGS §5) gives every process a share of the documents and
//! samples every share against the same word–topic and topic counts; after each iteration the
//! processes' counts are summed (`MPI_Allreduce`), so each one starts the next iteration from
//! the counts of the whole corpus. The other collectives move what only some ranks hold: the
//! per-share statistics and the pieces that worker 0 writes.
//!
//! MPI is initialized once per process, by the first [`Mpi::connect`], with at least
//! `MPI_THREAD_SERIALIZED` (the run calls the transport from whichever thread holds it, never
//! from two at once: every MPI call of this module is made under one process-wide lock). The
//! `Universe` lives in a process-global, not in the transport, so that dropping a transport does
//! not finalize MPI under the other workers' feet: [`finalize_if_running`] (`transport::finish`)
//! ends it after a successful run and [`abort_if_running`] (`transport::abort`) ends the whole
//! job after a failure.
//!
//! Errors: the world communicator keeps MPI's default handler, `MPI_ERRORS_ARE_FATAL`, so a peer
//! that dies or a network failure ends every process of the job (what `transport::abort` would
//! do) rather than coming back as a [`TransportError`]; the errors returned here are the ones
//! this module detects itself (MPI already finalized, too weak a threading level).

use std::sync::{Mutex, MutexGuard};

use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::{self, Threading, Universe};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use mpi::Count;

use super::{Meter, Transport, TransportError, TransportKind};

/// Several processes under `mpirun`/`srun`, one share of the documents each.
pub struct Mpi;

const NAME: &str = "mpi";

/// The process's MPI universe once [`Mpi::connect`] has initialized MPI; taken out and dropped
/// (`MPI_Finalize`) by [`finalize_if_running`]. A `static` is never dropped, so MPI is not
/// finalized behind the run's back when a transport goes.
static UNIVERSE: Mutex<Option<Universe>> = Mutex::new(None);

/// Held across every MPI call this module makes (but `MPI_Abort`): MPI is initialized with
/// `MPI_THREAD_SERIALIZED`, which lets any thread call MPI but never two at once. One lock for
/// the process, not one per transport, since every transport of the process shares the world
/// communicator.
static CALLS: Mutex<()> = Mutex::new(());

/// Elements per `MPI_Allreduce`: MPI counts are `int`, and each chunk is copied to a send buffer
/// first (rsmpi has no `MPI_IN_PLACE`), so the chunk is also the scratch memory: 64 MiB of
/// `u32`, 128 MiB of `u64`.
const SUM_CHUNK: usize = 1 << 24;

/// The most bytes one `MPI_Allgatherv`/`MPI_Gatherv` receives, or one `MPI_Alltoallv` sends or
/// receives: counts and displacements are `int`.
const MAX_ROUND_BYTES: usize = i32::MAX as usize;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic under the lock leaves nothing half-updated that a later call could trip on (the
    // guarded state is MPI's), so a poisoned lock is still good to take.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn error(what: impl Into<String>) -> TransportError {
    TransportError {
        transport: NAME,
        what: what.into(),
    }
}

fn check_threading(provided: Threading) -> Result<(), TransportError> {
    if provided >= Threading::Serialized {
        Ok(())
    } else {
        Err(error(format!(
            "the MPI library grants thread level {provided:?}, and the run needs at least \
             Serialized (MPI_THREAD_SERIALIZED): its collectives are called from worker threads; \
             use an MPI built with thread support (Open MPI and MPICH are, by default)"
        )))
    }
}

impl TransportKind for Mpi {
    fn name(&self) -> &'static str {
        NAME
    }
    fn summary(&self) -> &'static str {
        "several processes under mpirun or srun (one share of the documents each, counts summed by MPI_Allreduce)"
    }
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    /// Initializes MPI the first time in the process (the world communicator afterwards: MPI
    /// cannot be initialized twice) and joins the job's other processes. Launched without
    /// `mpirun`, this is a job of one process (an MPI singleton).
    fn connect(&self) -> Result<Box<dyn Transport>, TransportError> {
        let mut universe = lock(&UNIVERSE);
        let _calls = lock(&CALLS);
        if universe.is_none() {
            if environment::is_finalized() {
                return Err(error(
                    "MPI was finalized in this process (transport::finish); it cannot be started again",
                ));
            }
            match environment::initialize_with_threading(Threading::Serialized) {
                Some((u, provided)) => {
                    // Kept even when refused, so that `finish` still finalizes it.
                    *universe = Some(u);
                    check_threading(provided)?;
                }
                // Initialized by other code of this process: check what it asked for.
                None => check_threading(environment::threading_support())?,
            }
        } else {
            check_threading(environment::threading_support())?;
        }
        let world = SimpleCommunicator::world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        Ok(Box::new(MpiTransport {
            world,
            rank,
            size,
            meter: Meter::default(),
        }))
    }
}

/// One process's end of the job: the world communicator, its rank and size.
struct MpiTransport {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    meter: Meter,
}

// SAFETY: `SimpleCommunicator` is neither `Send` nor `Sync` because an MPI handle may only be
// used from threads the MPI library allows. Here it is always the world communicator (a
// constant handle, never freed), MPI was initialized with at least MPI_THREAD_SERIALIZED
// (`connect` refuses a lower level), which allows calls from any thread as long as no two are
// concurrent, and every MPI call of this module is made while holding the process-wide `CALLS`
// lock, which serializes them across threads and across transport objects.
unsafe impl Send for MpiTransport {}
// SAFETY: as for `Send`: `&MpiTransport` only reaches MPI under the `CALLS` lock.
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Runs `f` holding the MPI lock, timed and counting `bytes` sent; refused once MPI is
    /// finalized (an MPI call then would end the process).
    fn collective<T>(
        &self,
        bytes: usize,
        f: impl FnOnce(&SimpleCommunicator) -> Result<T, TransportError>,
    ) -> Result<T, TransportError> {
        self.meter.time(bytes, || {
            let _calls = lock(&CALLS);
            if environment::is_finalized() {
                return Err(error(
                    "MPI was finalized (transport::finish) while the transport was still in use",
                ));
            }
            f(&self.world)
        })
    }

    /// Every rank's length, in rank order, on every rank.
    fn all_lengths(&self, world: &SimpleCommunicator, mine: usize) -> Vec<usize> {
        let mut lens = vec![0u64; self.size];
        world.all_gather_into(&[mine as u64][..], &mut lens[..]);
        lens.into_iter().map(|l| l as usize).collect()
    }

    /// The all-to-all's lengths: sends every rank a [`Header`] (the length of its part, and this
    /// rank's total and longest part); returns the length of what each rank sends this one, in
    /// rank order, and the plan of rounds, the same on every rank.
    fn all_to_all_lengths(
        &self,
        world: &SimpleCommunicator,
        send_lens: &[usize],
    ) -> (Vec<usize>, Rounds) {
        let mut recv = vec![0u64; HEADER * self.size];
        world.all_to_all_into(&headers(send_lens)[..], &mut recv[..]);
        plan_all_to_all(&recv)
    }
}

/// `u64`s per destination in the all-to-all's exchange of lengths: the length of the part for
/// that destination, then the sender's total and its longest part (the same to every
/// destination). Every rank thus learns every rank's total and longest part, which is what it
/// needs to agree with the others on the number of rounds, without another collective.
const HEADER: usize = 3;

/// This rank's headers for the all-to-all, destination after destination.
fn headers(send_lens: &[usize]) -> Vec<u64> {
    let total = send_lens.iter().sum::<usize>() as u64;
    let longest = send_lens.iter().copied().max().unwrap_or(0) as u64;
    send_lens
        .iter()
        .flat_map(|&l| [l as u64, total, longest])
        .collect()
}

/// From the headers every rank sent this one (rank after rank): the length of each rank's part
/// for this one, and the plan of rounds. The plan depends only on the sum of the totals and the
/// longest of the longest parts, which every rank receives alike, so every rank computes the
/// same one.
fn plan_all_to_all(recv: &[u64]) -> (Vec<usize>, Rounds) {
    let from = recv.chunks_exact(HEADER);
    let recv_lens = from.clone().map(|h| h[0] as usize).collect();
    let total = from.clone().map(|h| h[1] as usize).sum();
    let longest = from.clone().map(|h| h[2] as usize).max().unwrap_or(0);
    (recv_lens, Rounds::of(total, longest, from.len()))
}

/// Element-wise sum over every rank, in place, `SUM_CHUNK` elements per `MPI_Allreduce`.
fn sum_in_place<T: Equivalence + Copy + Default>(world: &SimpleCommunicator, values: &mut [T]) {
    let mut send = vec![T::default(); values.len().min(SUM_CHUNK)];
    for chunk in values.chunks_mut(SUM_CHUNK) {
        let send = &mut send[..chunk.len()];
        send.copy_from_slice(chunk);
        world.all_reduce_into(&send[..], chunk, mpi::collective::SystemOperation::sum());
    }
}

/// How the variable-length collectives split their data into rounds whose buffers fit an MPI
/// `int` count: all at once when the total over every rank does, else at most
/// `MAX_ROUND_BYTES / ranks` bytes of each contribution (a gather's rank, an all-to-all's pair)
/// per round, so that no rank sends or receives more than `MAX_ROUND_BYTES` in a round. Every
/// rank computes the same plan from the same total and longest contribution.
struct Rounds {
    /// Bytes of each contribution per round.
    cap: usize,
    rounds: usize,
}

impl Rounds {
    /// The plan of a gather of `lens` (one per rank).
    fn new(lens: &[usize]) -> Rounds {
        let total: usize = lens.iter().sum();
        let longest = lens.iter().copied().max().unwrap_or(0);
        Rounds::of(total, longest, lens.len())
    }

    /// The plan for `total` bytes over every rank, the longest contribution `longest` bytes,
    /// where a rank sends or receives at most one contribution from or to each of `ranks`.
    fn of(total: usize, longest: usize, ranks: usize) -> Rounds {
        let cap = if total <= MAX_ROUND_BYTES {
            longest.max(1)
        } else {
            MAX_ROUND_BYTES / ranks
        };
        Rounds {
            cap,
            rounds: longest.div_ceil(cap),
        }
    }

    /// Round `r`'s range of a contribution of `len` bytes.
    fn range(&self, r: usize, len: usize) -> std::ops::Range<usize> {
        let start = (r * self.cap).min(len);
        start..(start + self.cap).min(len)
    }

    /// Round `r`'s counts and displacements for contributions of `lens` bytes (each fits an
    /// `int` by construction).
    fn partition(&self, r: usize, lens: &[usize]) -> (Vec<Count>, Vec<Count>) {
        let counts: Vec<Count> = lens
            .iter()
            .map(|&l| self.range(r, l).len() as Count)
            .collect();
        let displs = counts
            .iter()
            .scan(0 as Count, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        (counts, displs)
    }
}

/// `piece`, or an empty slice at a real address when `piece` is empty. An empty Rust slice
/// points at its alignment (`0x1` for bytes), and Open MPI's `MPI_IN_PLACE` is `(void *) 1`:
/// handed to `MPI_Gatherv` as is, an empty contribution reads as "in place" (refused on a
/// non-root rank with MPI_ERR_ARG, which ends the job); to `MPI_Alltoallv`, an empty send buffer
/// would make the call in place, reading what this rank sends from its receive buffer.
fn send_buffer(piece: &[u8]) -> &[u8] {
    static SOMEWHERE: [u8; 1] = [0];
    if piece.is_empty() {
        &SOMEWHERE[..0]
    } else {
        piece
    }
}

/// Appends a round's receive buffer, split by `counts`, to each rank's output.
fn scatter_round(out: &mut [Vec<u8>], recv: &[u8], counts: &[Count]) {
    let mut at = 0;
    for (o, &c) in out.iter_mut().zip(counts) {
        o.extend_from_slice(&recv[at..at + c as usize]);
        at += c as usize;
    }
}

impl Transport for MpiTransport {
    fn name(&self) -> &'static str {
        NAME
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn workers(&self) -> usize {
        self.size
    }
    fn sum_u32(&self, counts: &mut [u32]) -> Result<(), TransportError> {
        self.collective(std::mem::size_of_val(counts), |world| {
            sum_in_place(world, counts);
            Ok(())
        })
    }
    fn sum_u64(&self, values: &mut [u64]) -> Result<(), TransportError> {
        self.collective(std::mem::size_of_val(values), |world| {
            sum_in_place(world, values);
            Ok(())
        })
    }
    fn all_gather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> {
        self.collective(mine.len() + 8, |world| {
            let lens = self.all_lengths(world, mine.len());
            let plan = Rounds::new(&lens);
            let mut out: Vec<Vec<u8>> = lens.iter().map(|&l| Vec::with_capacity(l)).collect();
            for r in 0..plan.rounds {
                let (counts, displs) = plan.partition(r, &lens);
                let mut recv = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
                {
                    let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
                    world.all_gather_varcount_into(
                        send_buffer(&mine[plan.range(r, mine.len())]),
                        &mut part,
                    );
                }
                scatter_round(&mut out, &recv, &counts);
            }
            Ok(out)
        })
    }
    /// The lengths are all-gathered (not only gathered to rank 0): every rank needs them to
    /// take part in the same number of rounds.
    fn gather_bytes(&self, mine: &[u8]) -> Result<Option<Vec<Vec<u8>>>, TransportError> {
        self.collective(mine.len() + 8, |world| {
            let lens = self.all_lengths(world, mine.len());
            let plan = Rounds::new(&lens);
            let root = world.process_at_rank(0);
            if self.rank != 0 {
                for r in 0..plan.rounds {
                    root.gather_varcount_into(send_buffer(&mine[plan.range(r, mine.len())]));
                }
                return Ok(None);
            }
            let mut out: Vec<Vec<u8>> = lens.iter().map(|&l| Vec::with_capacity(l)).collect();
            for r in 0..plan.rounds {
                let (counts, displs) = plan.partition(r, &lens);
                let mut recv = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
                {
                    let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
                    root.gather_varcount_into_root(
                        send_buffer(&mine[plan.range(r, mine.len())]),
                        &mut part,
                    );
                }
                scatter_round(&mut out, &recv, &counts);
            }
            Ok(Some(out))
        })
    }
    /// Lengths first (one `MPI_Alltoall` of [`HEADER`] `u64`s per destination), then the bytes
    /// (`MPI_Alltoallv`), in as many rounds as [`Rounds`] needs for every rank's send and
    /// receive buffers to fit an `int` count; a rank with nothing left to move still takes part
    /// in every round, with zero counts.
    fn all_to_all_bytes(&self, parts: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TransportError> {
        if parts.len() != self.size {
            return Err(error(format!(
                "all_to_all_bytes takes one part per worker: {} parts for {} workers",
                parts.len(),
                self.size
            )));
        }
        let send_lens: Vec<usize> = parts.iter().map(Vec::len).collect();
        let sent: usize = send_lens.iter().sum();
        self.collective(sent + 8 * HEADER * self.size, |world| {
            let (recv_lens, plan) = self.all_to_all_lengths(world, &send_lens);
            let mut out: Vec<Vec<u8>> = recv_lens.iter().map(|&l| Vec::with_capacity(l)).collect();
            let mut send = Vec::with_capacity(sent.min(MAX_ROUND_BYTES));
            for r in 0..plan.rounds {
                let (send_counts, send_displs) = plan.partition(r, &send_lens);
                let (recv_counts, recv_displs) = plan.partition(r, &recv_lens);
                send.clear();
                for part in parts {
                    send.extend_from_slice(&part[plan.range(r, part.len())]);
                }
                // One byte when nothing comes: an empty Vec's pointer is `0x1`, MPI_IN_PLACE,
                // which Open MPI refuses as a receive buffer (MPI_ERR_ARG, ending the job).
                let received: usize = recv_counts.iter().map(|&c| c as usize).sum();
                let mut recv = vec![0u8; received.max(1)];
                {
                    let from =
                        Partition::new(send_buffer(&send), &send_counts[..], &send_displs[..]);
                    let mut into =
                        PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
                    world.all_to_all_varcount_into(&from, &mut into);
                }
                scatter_round(&mut out, &recv, &recv_counts);
            }
            Ok(out)
        })
    }
    fn seconds(&self) -> f64 {
        self.meter.seconds()
    }
    /// The bytes this rank hands to MPI (its buffers, and 8 per length exchanged), not what the
    /// library's algorithms put on the wire.
    fn bytes_sent(&self) -> u64 {
        self.meter.bytes()
    }
}

/// Ends every process of the job (`MPI_Abort` on the world communicator, which does not return)
/// if MPI is running in this process; returns otherwise. Deliberately without the `CALLS` lock:
/// another thread may be stuck in a collective waiting for this very process, and aborting is
/// what frees it.
pub(super) fn abort_if_running(code: i32) {
    if environment::is_initialized() && !environment::is_finalized() {
        SimpleCommunicator::world().abort(code);
    }
}

/// Finalizes MPI (`MPI_Finalize`, collective: every process of the job calls it) if this module
/// initialized it and it is still running.
pub(super) fn finalize_if_running() {
    let universe = lock(&UNIVERSE).take();
    if let Some(universe) = universe {
        let _calls = lock(&CALLS);
        drop(universe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_take_everything_at_once_when_it_fits_an_int() {
        let plan = Rounds::new(&[5, 0, 3]);
        assert_eq!((plan.cap, plan.rounds), (5, 1));
        assert_eq!(
            plan.partition(0, &[5, 0, 3]),
            (vec![5, 0, 3], vec![0, 5, 5])
        );
        let none = Rounds::new(&[0, 0]);
        assert_eq!(none.rounds, 0);
    }

    #[test]
    fn rounds_split_what_does_not_fit_an_int() {
        let lens = [2_000_000_000, 10, 1_500_000_000];
        let plan = Rounds::new(&lens);
        assert_eq!(plan.cap, MAX_ROUND_BYTES / 3);
        assert_eq!(plan.rounds, 3);
        let mut seen = [0usize; 3];
        for r in 0..plan.rounds {
            let (counts, displs) = plan.partition(r, &lens);
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            assert!(total <= MAX_ROUND_BYTES);
            assert_eq!(displs[0], 0);
            for (s, c) in seen.iter_mut().zip(&counts) {
                *s += *c as usize;
            }
        }
        assert_eq!(seen, lens);
        assert_eq!(plan.range(2, 10), 10..10);
    }

    /// The headers rank `to` receives when rank i sends `matrix[i][j]` bytes to rank j.
    fn received_headers(matrix: &[Vec<usize>], to: usize) -> Vec<u64> {
        matrix
            .iter()
            .flat_map(|row| headers(row)[HEADER * to..HEADER * (to + 1)].to_vec())
            .collect()
    }

    /// Every rank's plan of an all-to-all of `matrix`: the same on every rank, every round's
    /// sends and receives fit an `int`, and everything is moved.
    fn check_all_to_all_plan(matrix: &[Vec<usize>]) -> usize {
        let n = matrix.len();
        let plans: Vec<(Vec<usize>, Rounds)> = (0..n)
            .map(|to| plan_all_to_all(&received_headers(matrix, to)))
            .collect();
        for (to, (recv_lens, plan)) in plans.iter().enumerate() {
            let column: Vec<usize> = matrix.iter().map(|row| row[to]).collect();
            assert_eq!(*recv_lens, column);
            assert_eq!((plan.cap, plan.rounds), (plans[0].1.cap, plans[0].1.rounds));
        }
        let plan = &plans[0].1;
        for rank in 0..n {
            let column: Vec<usize> = matrix.iter().map(|row| row[rank]).collect();
            for lens in [&matrix[rank], &column] {
                let mut moved = vec![0usize; n];
                for r in 0..plan.rounds {
                    let (counts, displs) = plan.partition(r, lens);
                    let total: usize = counts.iter().map(|&c| c as usize).sum();
                    assert!(total <= MAX_ROUND_BYTES);
                    assert!(displs.iter().all(|&d| d >= 0));
                    for (m, &c) in moved.iter_mut().zip(&counts) {
                        *m += c as usize;
                    }
                }
                assert_eq!(moved, *lens);
            }
        }
        plan.rounds
    }

    #[test]
    fn all_to_all_plans_agree_and_fit_an_int() {
        assert_eq!(check_all_to_all_plan(&[vec![0]]), 0);
        assert_eq!(check_all_to_all_plan(&[vec![0, 0], vec![0, 0]]), 0);
        assert_eq!(check_all_to_all_plan(&[vec![3, 0], vec![7, 1]]), 1);
        // Ranks 0 and 1 exchange more than an int, rank 2 only a few bytes: rank 2 cannot tell
        // from its own lengths, and still takes part in every round.
        let big = 1_500_000_000;
        let matrix = vec![vec![big, big + 1, 5], vec![big + 2, 0, 0], vec![0, 9, 0]];
        assert_eq!(check_all_to_all_plan(&matrix), 3);
        // Every send and receive fits, but not the total over every rank: split too.
        let matrix = vec![vec![0, 1_200_000_000], vec![1_200_000_000, 0]];
        assert!(check_all_to_all_plan(&matrix) >= 2);
    }
}
