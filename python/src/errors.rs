//! Library errors as Python exceptions, and the guard that keeps panics on this side.
//!
//! The message is the CLI's, word for word (`topos_io::one_line`, which `topos` prints after
//! `error: `); the exception class says what kind of failure it was, the way Python code
//! catches it: `OSError` (or its subclass for the OS error: `FileNotFoundError`,
//! `PermissionError`, ...) for files that cannot be read or written and for files that are not
//! what they claim (foreign, truncated, corrupt), `MemoryError` for a run refused for memory,
//! `ValueError` for arguments and data that are wrong, `RuntimeError` for what failed on the
//! way (a device, a thread).

use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyMemoryError, PyOSError,
    PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::PyErr;
use std::error::Error;
use std::io::ErrorKind;
use std::panic::{catch_unwind, AssertUnwindSafe};
use topos_corpus::CorpusError;
use topos_io::FormatError;
use topos_model::{HyperparameterError, ModelError};
use topos_train::{RunError, TrainError};

/// What kind of Python exception an error becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Os(Option<ErrorKind>),
    Value,
    Memory,
    Runtime,
}

fn io_kind(e: &std::io::Error) -> Kind {
    Kind::Os(Some(e.kind()))
}

fn format_kind(e: &FormatError) -> Kind {
    match e {
        FormatError::Io { cause, .. } => io_kind(cause),
        // A file that is not what it claims is a file problem, not an argument problem.
        _ => Kind::Os(None),
    }
}

fn corpus_kind(e: &CorpusError) -> Kind {
    match e {
        CorpusError::Format(f) => format_kind(f),
        CorpusError::Io { cause, .. } | CorpusError::Gzip { cause, .. } => io_kind(cause),
        CorpusError::Line { .. } | CorpusError::Input { .. } | CorpusError::Options(_) => {
            Kind::Value
        }
        CorpusError::BigEndian => Kind::Runtime,
    }
}

fn model_kind(e: &ModelError) -> Kind {
    match e {
        ModelError::Format(f) => format_kind(f),
        ModelError::Memory { .. } => Kind::Memory,
        ModelError::Inconsistent { .. } | ModelError::Mismatch(_) | ModelError::Options(_) => {
            Kind::Value
        }
    }
}

fn train_kind(e: &TrainError) -> Kind {
    match e {
        TrainError::EmptyCorpus
        | TrainError::WordOutOfRange { .. }
        | TrainError::CheckpointMismatch(_)
        | TrainError::DocumentOverCap { .. }
        | TrainError::Unsupported(_) => Kind::Value,
        TrainError::Privacy(_) => Kind::Value,
        TrainError::ThreadPool(..) | TrainError::Transport(_) | TrainError::Device(_) => {
            Kind::Runtime
        }
    }
}

fn run_kind(e: &RunError) -> Kind {
    match e {
        RunError::Train(t) => train_kind(t),
        RunError::Corpus(c) => corpus_kind(c),
        RunError::Model(m) => model_kind(m),
        RunError::Format(f) => format_kind(f),
        RunError::Privacy(_) | RunError::Invalid(_) => Kind::Value,
        RunError::Output { cause, .. } => io_kind(cause),
        RunError::Memory { .. } => Kind::Memory,
    }
}

/// The kind of the first error of the chain that says it.
fn kind(e: &(dyn Error + 'static)) -> Kind {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<RunError>() {
            return run_kind(r);
        }
        if let Some(t) = c.downcast_ref::<TrainError>() {
            return train_kind(t);
        }
        if let Some(m) = c.downcast_ref::<ModelError>() {
            return model_kind(m);
        }
        if let Some(k) = c.downcast_ref::<CorpusError>() {
            return corpus_kind(k);
        }
        if let Some(f) = c.downcast_ref::<FormatError>() {
            return format_kind(f);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io_kind(io);
        }
        if c.downcast_ref::<HyperparameterError>().is_some()
            || c.downcast_ref::<topos_distance::DistanceError>().is_some()
            || c.downcast_ref::<topos_train::sampler::UnknownSampler>()
                .is_some()
        {
            return Kind::Value;
        }
        cause = c.source();
    }
    Kind::Runtime
}

fn raise(kind: Kind, msg: String) -> PyErr {
    match kind {
        Kind::Os(Some(ErrorKind::NotFound)) => PyFileNotFoundError::new_err(msg),
        Kind::Os(Some(ErrorKind::PermissionDenied)) => PyPermissionError::new_err(msg),
        Kind::Os(Some(ErrorKind::AlreadyExists)) => PyFileExistsError::new_err(msg),
        Kind::Os(Some(ErrorKind::IsADirectory)) => PyIsADirectoryError::new_err(msg),
        Kind::Os(_) => PyOSError::new_err(msg),
        Kind::Value => PyValueError::new_err(msg),
        Kind::Memory => PyMemoryError::new_err(msg),
        Kind::Runtime => PyRuntimeError::new_err(msg),
    }
}

/// A library error as the Python exception of its kind, with the CLI's one-line message.
pub fn to_py<E: Error + 'static>(e: E) -> PyErr {
    raise(kind(&e), topos_io::one_line(&e))
}

/// An argument the Python layer refuses (the library would refuse it too, later or less
/// clearly).
pub fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// Runs `f`, turning a panic into a `RuntimeError` that says so: a panic is a bug in Topos, and
/// unwinding into the interpreter would abort it (PyO3 would raise its `PanicException`, which
/// `except Exception` does not catch).
pub fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, PyErr>) -> Result<T, PyErr> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(PyRuntimeError::new_err(format!(
            "internal error in {what}: {}; this is a bug in Topos, please report it",
            panic_message(payload.as_ref())
        ))),
    }
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
