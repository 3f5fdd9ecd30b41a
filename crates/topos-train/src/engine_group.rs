//! Several engines of one process as one engine: `--device cuda:all`, one GPU engine per device,
//! each with its share of the documents, summing counts through an in-process transport
//! (multi-device by composition, as faiss's `IndexShards`).
//!
//! Every call goes to every member at once, on a thread each, because the members' calls are
//! collectives that meet (the exchange, the likelihood's sum, the gather of assignments); the
//! first member's answer is the group's (all hold the whole corpus's counts). A member that fails
//! breaks the group's collectives ([`InProcess::fail`]), so the others return instead of waiting
//! for it, and its error is the group's. The per-iteration call ([`Engine::iterate`]) runs on a
//! crew of threads kept for the group's life, one a member, instead of threads spawned for it.

use crate::counts::WordTopics;
use crate::engine::Engine;
use crate::exchange::ExchangeReport;
use crate::transport::{InProcess, Transport};
use crate::TrainError;
use std::ops::Range;
use std::sync::Arc;
use topos_corpus::Docs;

/// Engines that share a run's documents within one process.
pub struct EngineGroup {
    members: Vec<Box<dyn Engine>>,
    transports: Vec<Arc<InProcess>>,
    /// One thread a member for [`Engine::iterate`], kept between iterations: spawning and
    /// joining a thread a GPU every iteration cost `--device cuda:all` about 0.1 ms an
    /// iteration each round (BENCHMARKS.md, "One round of threads an iteration"). Only the
    /// iteration uses it: a member's own rayon work (reading rows back, say) would run on this
    /// pool's few threads, so the other calls keep scoped threads and the global pool.
    crew: Option<rayon::ThreadPool>,
}

impl EngineGroup {
    /// Member i sums through `transports[i]` (one group from [`InProcess::group`]).
    pub fn new(members: Vec<Box<dyn Engine>>, transports: Vec<Arc<InProcess>>) -> Self {
        assert_eq!(members.len(), transports.len());
        assert!(!members.is_empty());
        // Without a crew (the threads refused), iterations spawn their threads as the other
        // calls do.
        let crew = rayon::ThreadPoolBuilder::new()
            .num_threads(members.len())
            .thread_name(|i| format!("topos-member-{i}"))
            .build()
            .ok();
        EngineGroup {
            members,
            transports,
            crew,
        }
    }

    /// Runs `f` on every member at once; the first member's result, or the first error that is
    /// not another member's failure seen through a broken collective.
    fn all<T: Send>(
        &mut self,
        f: impl Fn(usize, &mut dyn Engine, &dyn Transport) -> Result<T, TrainError> + Sync,
    ) -> Result<T, TrainError> {
        let members: Vec<&mut Box<dyn Engine>> = self.members.iter_mut().collect();
        let results = on_each_member(&self.transports, members, "an engine", |i, m, t| {
            f(i, m.as_mut(), t)
        });
        first_result(results)
    }

    /// [`EngineGroup::all`] on the crew: member i on the crew's thread i.
    fn all_on_crew<T: Send>(
        &mut self,
        f: impl Fn(usize, &mut dyn Engine, &dyn Transport) -> Result<T, TrainError> + Sync,
    ) -> Result<T, TrainError> {
        let Some(crew) = &self.crew else {
            return self.all(f);
        };
        // Each slot is taken once, by its own thread.
        let members: Vec<std::sync::Mutex<Option<&mut Box<dyn Engine>>>> = self
            .members
            .iter_mut()
            .map(|m| std::sync::Mutex::new(Some(m)))
            .collect();
        let transports = &self.transports;
        let results = crew.broadcast(|ctx| {
            let i = ctx.index();
            let member = members[i]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("one crew thread a member");
            on_member(i, member, &transports[i], "an engine", &|i, m, t| {
                f(i, m.as_mut(), t)
            })
        });
        first_result(results)
    }
}

/// The first member's result, or the first error that is not another member's failure seen
/// through a broken collective.
fn first_result<T>(mut results: Vec<Result<T, TrainError>>) -> Result<T, TrainError> {
    {
        let broken =
            |e: &TrainError| matches!(e, TrainError::Transport(t) if t.transport == "in-process");
        if let Some(i) = results
            .iter()
            .position(|r| matches!(r, Err(e) if !broken(e)))
            .or_else(|| results.iter().position(Result::is_err))
        {
            return results.swap_remove(i);
        }
        results.swap_remove(0)
    }
}

/// Member i's work on the calling thread, armed as [`on_each_member`] arms it: a failure or a
/// panic breaks the group's collectives, and a panic is the member's error.
fn on_member<I, T>(
    i: usize,
    item: I,
    transport: &InProcess,
    what: &str,
    work: &(impl Fn(usize, I, &InProcess) -> Result<T, TrainError> + Sync),
) -> Result<T, TrainError> {
    let guard = transport.fail_unless_disarmed();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i, item, transport)))
        .unwrap_or_else(|_| {
            Err(TrainError::Unsupported(format!(
                "{what} of the group panicked"
            )))
        });
    guard.disarm();
    if r.is_err() {
        transport.fail();
    }
    r
}

/// Runs `work(i, items[i], member i's transport)` for every member at once, on a thread each,
/// and returns the results in member order. A member whose work fails or panics breaks the
/// group's collectives ([`InProcess::fail`]), so that the others return instead of waiting for it.
pub(crate) fn on_each_member<I: Send, T: Send>(
    transports: &[Arc<InProcess>],
    items: Vec<I>,
    what: &str,
    work: impl Fn(usize, I, &InProcess) -> Result<T, TrainError> + Sync,
) -> Vec<Result<T, TrainError>> {
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .zip(transports)
            .enumerate()
            .map(|(i, (item, t))| s.spawn(move || on_member(i, item, t, what, work)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(TrainError::Unsupported(format!(
                        "{what} of the group panicked"
                    )))
                })
            })
            .collect()
    })
}

impl Engine for EngineGroup {
    /// The members' (a group is of one kind of device: `--device cuda:all`).
    fn setting_defaults(&self) -> crate::sampler::SettingDefaults {
        self.members[0].setting_defaults()
    }
    /// Every member's device ("2 engines, one share of the documents each: cuda:0 (NVIDIA
    /// H200); cuda:1 (NVIDIA H200)").
    fn describe(&self) -> String {
        format!(
            "{} engines, one share of the documents each: {}",
            self.members.len(),
            self.members
                .iter()
                .map(|m| m.describe())
                .collect::<Vec<_>>()
                .join("; ")
        )
    }
    fn threads(&self) -> usize {
        self.members[0].threads()
    }
    fn partitions(&self) -> usize {
        // A member of several reports the run's partitions (the CPU's) or its own chunks (a GPU's).
        self.members[0].partitions()
    }
    fn iteration(&self) -> u32 {
        self.members[0].iteration()
    }
    fn plan(&self) -> Option<serde_json::Value> {
        let mut plan = self.members[0].plan()?;
        if let Some(o) = plan.as_object_mut() {
            o.insert("devices".into(), self.members.len().into());
        }
        Some(plan)
    }
    fn sample(&mut self) -> Result<(), TrainError> {
        self.all(|_, m, _| m.sample())
    }
    fn sweep_counters(&self) -> Option<crate::sampler::SweepCounters> {
        // Every member's share, when they all report.
        self.members
            .iter()
            .map(|m| m.sweep_counters())
            .try_fold(crate::sampler::SweepCounters::default(), |sum, c| {
                Some(sum.plus(c?))
            })
    }
    fn exchange(&mut self, _transport: &dyn Transport) -> Result<(), TrainError> {
        // The run's transport is this process's; the members sum among themselves.
        self.all(|_, m, t| m.exchange(t))
    }
    fn commit(&mut self) -> Result<(), TrainError> {
        self.all(|_, m, _| m.commit())
    }
    fn iterate(&mut self, _transport: &dyn Transport) -> Result<(), TrainError> {
        // The three steps on each member's crew thread.
        self.all_on_crew(|_, m, t| m.iterate(t))
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        self.all(|_, m, _| m.log_likelihood())
    }
    fn heldout_arguments(
        &mut self,
        docs: Docs<'_>,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        self.all(|_, m, _| m.heldout_arguments(docs, opts))
    }
    fn heldout_arguments_with_phi(
        &mut self,
        docs: Docs<'_>,
        phi: &topos_model::Phi,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        self.all(|_, m, _| m.heldout_arguments_with_phi(docs, phi, opts))
    }
    fn exchange_report(&self) -> Option<ExchangeReport> {
        self.members[0].exchange_report()
    }
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
        self.members[0].topic_totals()
    }
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError> {
        self.members[0].word_topics(words, out)
    }
    fn doc_topic_rows(
        &mut self,
        docs: Range<usize>,
        out: &mut topos_model::DocTopics,
    ) -> Result<bool, TrainError> {
        // A collective: every member gathers the rows of its share (the first one's answer).
        let (kept, rows) = self.all(|_, m, _| {
            let mut rows = topos_model::DocTopics {
                num_topics: 0,
                offsets: Vec::new(),
                topics: Vec::new(),
                counts: Vec::new(),
            };
            let kept = m.doc_topic_rows(docs.clone(), &mut rows)?;
            Ok((kept, rows))
        })?;
        *out = rows;
        Ok(kept)
    }
    fn assignments(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError> {
        let n = out.len();
        let first = self.all(|i, m, _| {
            // Every member takes part in the gather; the first one's buffer is the answer.
            let mut buf = vec![0u16; if i == 0 { n } else { 0 }];
            if i == 0 {
                m.assignments(start, &mut buf)?;
            } else {
                let mut scratch = vec![0u16; n];
                m.assignments(start, &mut scratch)?;
            }
            Ok(buf)
        })?;
        out.copy_from_slice(&first);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{DeviceOptions, EngineSetup, Start, TrainDocs};
    use crate::synthetic::{generate, SyntheticSpec};

    fn setup(docs: &TrainDocs, v: usize, transport: Arc<dyn Transport>) -> EngineSetup {
        EngineSetup {
            docs: docs.clone(),
            num_words: v,
            sampler: crate::sampler::sampler_named("cgs").unwrap(),
            settings: Default::default(),
            hyper: topos_model::Hyperparameters::new(7, None, None).unwrap(),
            seed: 5,
            threads: 1,
            partitions: Some(6),
            start: Start::Fresh,
            device: DeviceOptions::default(),
            transport,
            fixed_counts: None,
        }
    }

    fn state(e: &mut dyn Engine, v: usize, tokens: u64) -> (Vec<u16>, Vec<u64>, Vec<u16>, f64) {
        let mut z = vec![0u16; tokens as usize];
        e.assignments(0, &mut z).unwrap();
        let b = crate::engine::read_all_rows(e, v).unwrap();
        (z, b.offsets, b.topics, e.log_likelihood().unwrap())
    }

    #[test]
    fn a_group_of_cpu_engines_is_one_engine_on_spawned_threads_or_its_crew_and_a_failing_member_ends_it(
    ) {
        let spec = SyntheticSpec {
            num_docs: 120,
            num_words: 60,
            num_topics: 4,
            mean_doc_len: 25,
            alpha: topos_model::Alpha::symmetric(4, 0.3),
            shape: crate::synthetic::TopicShape::Dirichlet { beta: 0.1 },
            seed: 3,
        };
        let docs = TrainDocs::from(generate(&spec).docs);
        let tokens = docs.view().num_tokens();
        let v = spec.num_words;
        let mut one =
            crate::cpu::engine::open(setup(&docs, v, Arc::new(crate::transport::Local))).unwrap();
        for n in [2usize, 3] {
            let transports: Vec<Arc<InProcess>> =
                InProcess::group(n).into_iter().map(Arc::new).collect();
            let members: Vec<Box<dyn Engine>> = std::thread::scope(|s| {
                let handles: Vec<_> = transports
                    .iter()
                    .map(|t| {
                        let t: Arc<dyn Transport> = t.clone();
                        let d = docs.clone();
                        s.spawn(move || {
                            Box::new(crate::cpu::engine::open(setup(&d, v, t)).unwrap())
                                as Box<dyn Engine>
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut group = EngineGroup::new(members, transports.clone());
            assert_eq!(group.partitions(), 6);
            // Every member named once, none as a process of several.
            let member = one.describe();
            assert_eq!(
                group.describe(),
                format!(
                    "{n} engines, one share of the documents each: {}",
                    vec![member.as_str(); n].join("; ")
                )
            );
            // Step by step on spawned threads, then whole iterations on the crew.
            for _ in 0..2 {
                group.sample().unwrap();
                group.exchange(&crate::transport::Local).unwrap();
                group.commit().unwrap();
            }
            group.iterate(&crate::transport::Local).unwrap();
            if n == 2 {
                for _ in 0..3 {
                    one.sample().unwrap();
                    one.exchange(&crate::transport::Local).unwrap();
                    one.commit().unwrap();
                }
            }
            assert_eq!(
                state(&mut group, v, tokens),
                state(&mut one, v, tokens),
                "{n} members"
            );
            // A member whose partners are gone: the group returns an error instead of waiting.
            transports[n - 1].fail();
            group.sample().unwrap();
            let e = group.exchange(&crate::transport::Local).unwrap_err();
            assert!(e.to_string().contains("another worker"), "{e}");
            let e = group.iterate(&crate::transport::Local).unwrap_err();
            assert!(e.to_string().contains("another worker"), "{e}");
        }
    }
}
