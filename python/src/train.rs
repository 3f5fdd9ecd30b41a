//! `topos._topos.train`: a `topos_train::Run` driven from Python.
//!
//! The run is the CLI's (`Run::start`, `Run::step` until done, `Run::finish`, with a
//! `RunConfig` set as `topos train` sets it), so the same corpus, settings and seed give the
//! same model file byte for byte. It runs on a thread of its own while the calling thread waits
//! with the GIL released: other Python threads keep running during a fit. The waiting thread
//! takes the GIL back every few milliseconds and between iterations to hand the run's log
//! lines to the Python callback and to look for signals (`check_signals`): Ctrl-C (a
//! `KeyboardInterrupt`) or an exception raised by the callback stops the run after the
//! iteration in progress, without writing a model, and is raised from `train`.

use crate::corpus::PyCorpus;
use crate::errors::{guard, panic_message, to_py, value_error};
use crate::model::PyModel;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;
use topos_model::{DocTopics, Hyperparameters, TopicModel};
use topos_train::run::{CorpusSource, LogLine, Observer};
use topos_train::{DeviceChoice, Run, RunConfig, RunError, Summary};

/// How often the waiting thread takes the GIL to look for signals while an iteration runs.
const POLL: Duration = Duration::from_millis(50);

/// What the training thread tells the waiting one.
enum Event {
    Info(String),
    Log(LogLine),
    // Boxed: a summary is large, and one is sent per run.
    Done(Box<Result<Summary, Failure>>),
}

enum Failure {
    Run(RunError),
    /// Stopped on request (Ctrl-C or the callback raised) between iterations.
    Stopped,
    Panic(String),
}

/// Sends what the run says to the waiting thread.
struct ChannelObserver {
    tx: mpsc::Sender<Event>,
}

impl Observer for ChannelObserver {
    fn info(&mut self, message: &str) {
        let _ = self.tx.send(Event::Info(message.to_string()));
    }
    fn evaluated(&mut self, line: &LogLine) {
        let _ = self.tx.send(Event::Log(line.clone()));
    }
}

/// The whole run, on the training thread: the CLI's `Run::run_to_end`, stepped so a stop
/// request is seen between iterations.
fn run(config: RunConfig, tx: &mpsc::Sender<Event>, stop: &AtomicBool) -> Result<Summary, Failure> {
    let mut observer = ChannelObserver { tx: tx.clone() };
    let mut run = Run::start(config, &mut observer).map_err(Failure::Run)?;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Failure::Stopped);
        }
        if !run.step(&mut observer).map_err(Failure::Run)? {
            break;
        }
    }
    run.finish(&mut observer).map_err(Failure::Run)
}

fn log_dict<'py>(py: Python<'py>, l: &LogLine) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("iteration", l.iteration)?;
    d.set_item("seconds", l.seconds)?;
    d.set_item("tokens_per_second", l.tokens_per_second)?;
    d.set_item("train_ll", l.train_ll)?;
    d.set_item("heldout_ll", l.heldout_ll)?;
    // ezlda: the fractions of tokens that skipped work (present only for it).
    if let Some(f) = l.skipped_final_fraction {
        d.set_item("skipped_final_fraction", f)?;
    }
    if let Some(f) = l.skipped_construction_fraction {
        d.set_item("skipped_construction_fraction", f)?;
    }
    Ok(d)
}

/// θ of the training documents from their final topic counts: (A_dk + α_k) / (n_d + Σ_k α_k).
fn doc_theta(a: &DocTopics, hyper: &Hyperparameters) -> Array2<f64> {
    let k = hyper.k();
    let alpha = &hyper.alpha;
    let mut out = Array2::<f64>::zeros((a.len(), k));
    for (d, mut row) in out.rows_mut().into_iter().enumerate() {
        let denominator = a.row_total(d) as f64 + alpha.sum();
        for (x, &a_k) in row.iter_mut().zip(alpha.values()) {
            *x = a_k / denominator;
        }
        let (topics, counts) = a.row(d);
        for (&t, &c) in topics.iter().zip(counts) {
            let t = usize::from(t);
            row[t] = (f64::from(c) + alpha.get(t)) / denominator;
        }
    }
    out
}

/// Trains a model on `corpus`; see the Python `topos.train` for the arguments. Returns the
/// model, the run's summary (JSON, as `topos train --json` prints it) and, with `doc_topics`,
/// θ of the training documents.
#[pyfunction]
#[pyo3(signature = (corpus, k, iters, *, algo=None, seed=1, threads=0, alpha=None, beta=0.01,
    partitions=None, device="auto", eval_every=10, heldout_every=None, output=None, log=None,
    doc_topics=false, callback=None, info=None, optimize_priors=None, optimize_burn_in=50,
    **settings))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn train<'py>(
    py: Python<'py>,
    corpus: &PyCorpus,
    k: u32,
    iters: u32,
    algo: Option<&str>,
    seed: u64,
    threads: usize,
    alpha: Option<f64>,
    beta: f64,
    partitions: Option<usize>,
    device: &str,
    eval_every: u32,
    heldout_every: Option<u32>,
    output: Option<PathBuf>,
    log: Option<PathBuf>,
    doc_topics: bool,
    callback: Option<Bound<'py, PyAny>>,
    info: Option<Bound<'py, PyAny>>,
    optimize_priors: Option<u32>,
    optimize_burn_in: u32,
    settings: Option<&Bound<'py, PyDict>>,
) -> PyResult<(PyModel, String, Option<Bound<'py, PyArray2<f64>>>)> {
    // Everything `topos train` refuses before a run starts is refused here, with its words.
    let device: DeviceChoice = device.parse().map_err(value_error)?;
    let sampler = match algo {
        // `topos train --algo auto`'s rule (topos_train::sampler::auto_sampler).
        Some("auto") => {
            let docs = corpus.corpus.train();
            let mean = docs.num_tokens() as f64 / docs.len().max(1) as f64;
            let choice = topos_train::sampler::auto_sampler(false, device, k, mean);
            if let Some(info) = &info {
                info.call1((format!(
                    "algo='auto': {} ({})",
                    choice.sampler.name(),
                    choice.reason
                ),))?;
            }
            choice.sampler
        }
        Some(a) => topos_train::sampler_named(a).map_err(to_py)?,
        None => topos_train::sampler::default_sampler(),
    };
    // The CLI's per-sampler settings and their refusals, in Python's words: each registered
    // setting is a keyword (`topos_train::Setting::keyword`), its value a number or a name.
    let py_words = |e: topos_train::sampler::SettingError| {
        let mut text = e.0;
        for s in topos_train::Setting::all() {
            text = text.replace(s.flag, s.keyword);
        }
        value_error(text.replace("--algo ", "algo="))
    };
    let settings = sampler_settings(settings, py_words)?;
    settings.check_for(sampler).map_err(py_words)?;
    let hyper = Hyperparameters::new(k, alpha, Some(beta)).map_err(to_py)?;
    if partitions == Some(0) {
        return Err(value_error("partitions must be at least 1"));
    }
    // Without an output path the model goes to a temporary directory and is read back.
    let scratch = match output {
        Some(_) => None,
        None => Some(tempfile::tempdir().map_err(to_py)?),
    };
    let output = match (&output, &scratch) {
        (Some(p), _) => p.clone(),
        (None, Some(d)) => d.path().join("model.tmod"),
        (None, None) => unreachable!("a scratch directory exists without an output"),
    };
    let mut config = RunConfig::new(PathBuf::new(), output.clone(), hyper);
    config.corpus = CorpusSource::Loaded {
        corpus: Arc::clone(&corpus.corpus),
        path: corpus.path.clone(),
    };
    config.sampler = sampler;
    config.sampler_settings = settings;
    config.iterations = iters;
    config.seed = seed;
    config.threads = threads;
    config.partitions = partitions;
    config.device = device;
    config.eval_every = eval_every;
    config.heldout_every = heldout_every;
    config.log = log;
    config.doc_topics = doc_topics;
    config.optimize_priors = match optimize_priors {
        Some(0) => {
            return Err(value_error(
                "optimize_priors needs an interval of at least 1 iteration (or None to keep the priors fixed)",
            ))
        }
        Some(every) => {
            let schedule = topos_train::priors::PriorSchedule {
                every,
                burn_in: optimize_burn_in,
            };
            // The run's own refusal names the CLI's flags; this one the keywords.
            let first = topos_train::priors::first_update(schedule);
            if first > u64::from(iters) {
                return Err(value_error(format!(
                    "optimize_priors={every} after optimize_burn_in={optimize_burn_in} would first learn the priors after iteration {first}, but iters={iters} ends the run before: they would stay as they started; lower optimize_burn_in or raise iters"
                )));
            }
            Some(schedule)
        }
        None => None,
    };

    let (tx, rx) = mpsc::channel();
    // A `Receiver` is not `Sync`; the mutex lets the GIL-free wait borrow it.
    let rx = std::sync::Mutex::new(rx);
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("topos-train".into())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(config, &tx, &stop)
                }))
                .unwrap_or_else(|p| Err(Failure::Panic(panic_message(p.as_ref()))));
                let _ = tx.send(Event::Done(Box::new(result)));
            })
            .map_err(to_py)?
    };

    // Waits for the run to end, handing log lines to the callback and watching for signals.
    // An error here stops the run and waits for the thread, so nothing outlives the call.
    let mut interrupted: Option<PyErr> = None;
    let outcome = loop {
        let event = py.detach(|| {
            rx.lock()
                .map_err(|_| RecvTimeoutError::Disconnected)
                .and_then(|r| r.recv_timeout(POLL))
        });
        let result: PyResult<()> = match event {
            Ok(Event::Done(r)) => break *r,
            Ok(Event::Log(line)) => match (&callback, &interrupted) {
                (Some(cb), None) => log_dict(py, &line).and_then(|d| cb.call1((d,)).map(drop)),
                _ => Ok(()),
            },
            Ok(Event::Info(msg)) => match (&info, &interrupted) {
                (Some(f), None) => f.call1((msg,)).map(drop),
                _ => Ok(()),
            },
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => {
                break Err(Failure::Panic(
                    "the training thread ended without a result".into(),
                ))
            }
        };
        let result = result.and_then(|()| py.check_signals());
        if let Err(e) = result {
            if interrupted.is_none() {
                stop.store(true, Ordering::Relaxed);
                interrupted = Some(e);
            }
        }
    };
    let _ = py.detach(|| worker.join());
    if let Some(e) = interrupted {
        // The run stopped (or finished meanwhile): either way the caller asked to stop.
        return Err(e);
    }
    let summary = match outcome {
        Ok(s) => s,
        Err(Failure::Run(e)) => return Err(to_py(e)),
        Err(Failure::Stopped) => {
            return Err(PyRuntimeError::new_err("the run was stopped"));
        }
        Err(Failure::Panic(msg)) => {
            return Err(PyRuntimeError::new_err(format!(
                "internal error in train: {msg}; this is a bug in Topos, please report it"
            )))
        }
    };
    let (model, theta) = py.detach(|| {
        guard("train", || {
            let (model, checksum) = TopicModel::read_with_checksum(&output).map_err(to_py)?;
            let theta = if doc_topics {
                let a = DocTopics::read_for_model(&output, checksum).map_err(to_py)?;
                Some(doc_theta(&a, &model.hyper))
            } else {
                None
            };
            Ok((model, theta))
        })
    })?;
    drop(scratch);
    let json =
        serde_json::to_string(&summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((PyModel::new(model), json, theta.map(|t| t.into_pyarray(py))))
}

/// The per-sampler settings passed to `train` as keywords (`mh_steps=8`, `counters="approx8"`):
/// an unknown keyword is a `TypeError` naming the known ones, a bad value a `ValueError`.
fn sampler_settings(
    given: Option<&Bound<'_, PyDict>>,
    py_words: impl Fn(topos_train::sampler::SettingError) -> PyErr,
) -> PyResult<topos_train::SamplerSettings> {
    let mut out = topos_train::SamplerSettings::default();
    let Some(given) = given else {
        return Ok(out);
    };
    for (key, value) in given.iter() {
        let key: String = key.extract()?;
        let Some(setting) = topos_train::Setting::from_keyword(&key) else {
            let known: Vec<&str> = topos_train::Setting::all()
                .iter()
                .map(|s| s.keyword)
                .collect();
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "train() got an unexpected keyword argument '{key}'; the sampler settings are {}",
                known.join(", ")
            )));
        };
        if value.is_none() {
            continue;
        }
        let parsed = match value.extract::<i64>() {
            Ok(n) if !value.is_instance_of::<pyo3::types::PyBool>() => {
                setting.parse(&n.to_string())
            }
            _ => match value.extract::<String>() {
                Ok(text) => setting.parse(&text),
                Err(_) => {
                    Err(setting.refuse(&value.repr().map(|r| r.to_string()).unwrap_or_default()))
                }
            },
        };
        parsed
            .and_then(|v| out.set(setting, v))
            .map_err(&py_words)?;
    }
    Ok(out)
}
