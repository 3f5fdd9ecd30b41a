//! Workers that are threads of one process (one per GPU of `--device cuda:all`, and the tests'
//! stand-in for several processes): every collective meets at a barrier, the data passing
//! through one shared mailbox. The data is copied through host memory, as a host-staged MPI
//! exchange would be.

use super::{Meter, Transport, TransportError};
use std::sync::{Arc, Condvar, Mutex};

/// One worker of a group made by [`InProcess::group`].
pub struct InProcess {
    rank: usize,
    workers: usize,
    shared: Arc<Shared>,
    meter: Meter,
}

struct Shared {
    barrier: Meeting,
    /// `mail[i][j]`: what worker i posted for worker j in the current collective.
    mail: Mutex<Vec<Vec<Vec<u8>>>>,
}

/// A barrier that a failing worker can break: the others, waiting for it in a collective, get
/// an error instead of waiting forever (what MPI_Abort does between processes).
struct Meeting {
    workers: usize,
    state: Mutex<(usize, u64, bool)>,
    woken: Condvar,
}

impl Meeting {
    fn new(workers: usize) -> Self {
        Meeting {
            workers,
            state: Mutex::new((0, 0, false)),
            woken: Condvar::new(),
        }
    }

    fn wait(&self) -> Result<(), TransportError> {
        let broken = || TransportError {
            transport: "in-process",
            what: "another worker of this process failed".into(),
        };
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.2 {
            return Err(broken());
        }
        s.0 += 1;
        if s.0 == self.workers {
            s.0 = 0;
            s.1 += 1;
            self.woken.notify_all();
            return Ok(());
        }
        let generation = s.1;
        while s.1 == generation && !s.2 {
            s = self.woken.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.1 == generation {
            Err(broken())
        } else {
            Ok(())
        }
    }

    fn brake(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).2 = true;
        self.woken.notify_all();
    }
}

impl InProcess {
    /// `workers` workers, one for each thread that will call the collectives.
    pub fn group(workers: usize) -> Vec<InProcess> {
        let workers = workers.max(1);
        let shared = Arc::new(Shared {
            barrier: Meeting::new(workers),
            mail: Mutex::new(vec![Vec::new(); workers]),
        });
        (0..workers)
            .map(|rank| InProcess {
                rank,
                workers,
                shared: shared.clone(),
                meter: Meter::default(),
            })
            .collect()
    }

    /// Ends the group's collectives: every worker waiting in one, and every later call, gets
    /// an error (a worker failed and will not come).
    pub fn fail(&self) {
        self.shared.barrier.brake();
    }

    /// A guard that breaks the group's collectives if it is dropped armed: held by a member's
    /// thread over its work, so that a panic there (which skips its error path) still releases
    /// the others.
    pub fn fail_unless_disarmed(&self) -> FailGuard<'_> {
        FailGuard {
            worker: self,
            armed: true,
        }
    }

    /// Every worker posts `out[j]` for worker j; returns what each posted for this one.
    fn swap(&self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, TransportError> {
        let bytes: usize = out.iter().map(Vec::len).sum();
        self.meter.time(bytes, || {
            self.shared.mail.lock().unwrap_or_else(|e| e.into_inner())[self.rank] = out;
            self.shared.barrier.wait()?;
            let got = {
                let mail = self.shared.mail.lock().unwrap_or_else(|e| e.into_inner());
                (0..self.workers)
                    .map(|i| mail[i][self.rank].clone())
                    .collect()
            };
            // Nobody posts the next collective's data before everyone has read this one's.
            self.shared.barrier.wait()?;
            Ok(got)
        })
    }

    fn sum<T: Copy + std::ops::AddAssign + Default, const N: usize>(
        &self,
        values: &mut [T],
        to: impl Fn(T) -> [u8; N],
        from: impl Fn([u8; N]) -> T,
    ) -> Result<(), TransportError> {
        let bytes: Vec<u8> = values.iter().flat_map(|&v| to(v)).collect();
        let mut sum = vec![T::default(); values.len()];
        for part in self.swap(vec![bytes; self.workers])? {
            for (s, c) in sum.iter_mut().zip(part.chunks_exact(N)) {
                *s += from(c.try_into().expect("N bytes"));
            }
        }
        values.copy_from_slice(&sum);
        Ok(())
    }
}

impl Transport for InProcess {
    fn name(&self) -> &'static str {
        "in-process"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn workers(&self) -> usize {
        self.workers
    }
    fn sum_u32(&self, counts: &mut [u32]) -> Result<(), TransportError> {
        self.sum(counts, u32::to_le_bytes, u32::from_le_bytes)
    }
    fn sum_u64(&self, values: &mut [u64]) -> Result<(), TransportError> {
        self.sum(values, u64::to_le_bytes, u64::from_le_bytes)
    }
    fn all_gather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> {
        self.swap(vec![mine.to_vec(); self.workers])
    }
    fn gather_bytes(&self, mine: &[u8]) -> Result<Option<Vec<Vec<u8>>>, TransportError> {
        let mut out = vec![Vec::new(); self.workers];
        out[0] = mine.to_vec();
        let got = self.swap(out)?;
        Ok((self.rank == 0).then_some(got))
    }
    fn all_to_all_bytes(&self, parts: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TransportError> {
        if parts.len() != self.workers {
            return Err(TransportError {
                transport: "in-process",
                what: format!("{} parts for {} workers", parts.len(), self.workers),
            });
        }
        self.swap(parts.to_vec())
    }
    fn seconds(&self) -> f64 {
        self.meter.seconds()
    }
    fn bytes_sent(&self) -> u64 {
        self.meter.bytes()
    }
}

/// See [`InProcess::fail_unless_disarmed`].
pub struct FailGuard<'a> {
    worker: &'a InProcess,
    armed: bool,
}

impl FailGuard<'_> {
    /// The work ended (well or with an error it reports itself): nothing to break.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for FailGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.worker.fail();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_of_threads_sums_and_gathers() {
        let group = InProcess::group(3);
        std::thread::scope(|s| {
            for t in &group {
                s.spawn(move || {
                    let r = t.rank() as u32;
                    let mut v = vec![r, 1, 10 * r];
                    t.sum_u32(&mut v).unwrap();
                    assert_eq!(v, [3, 3, 30]);
                    let all = t.all_gather_bytes(&vec![r as u8; r as usize]).unwrap();
                    assert_eq!(all, vec![vec![], vec![1], vec![2, 2]]);
                    let g = t.gather_bytes(&[r as u8]).unwrap();
                    assert_eq!(g.is_some(), r == 0);
                    if let Some(g) = g {
                        assert_eq!(g, vec![vec![0], vec![1], vec![2]]);
                    }
                    let parts: Vec<Vec<u8>> = (0..3).map(|j| vec![(10 * r + j) as u8]).collect();
                    let got = t.all_to_all_bytes(&parts).unwrap();
                    assert_eq!(
                        got,
                        (0..3).map(|i| vec![(10 * i + r) as u8]).collect::<Vec<_>>()
                    );
                });
            }
        });
    }
}
