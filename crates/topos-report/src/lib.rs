//! What a Topos model learned, for people and for other tools (issue 23).
//!
//! * [`mds`]: Jensen–Shannon divergences between topics and classical multidimensional scaling,
//!   the intertopic distance map.
//! * [`vis`]: topic prevalence, λ-relevance and saliency as LDAvis defines them, and the LDAvis
//!   (pyLDAvis) data format.
//! * [`html`]: the self-contained HTML report (one file, no network request).
//! * [`trainlog`]: training logs (`topos train --log`) read back.
//! * [`export`]: θ, φ and topic keys as CSV, JSON Lines, `.npy` and (with the `parquet` feature)
//!   Parquet, and Mallet's three files.
//! * [`plot`]: SVG plots (convergence of several runs, topic prevalence) and their PNG rendering.
//!
//! Everything here is computed from a [`topos_model::TopicModel`] (and, when at hand, the
//! training documents' topic counts and the corpus); files are written under a temporary name and
//! renamed (`topos_io::AtomicFile`).

pub mod export;
pub mod html;
pub mod mds;
#[cfg_attr(feature = "parquet", path = "parquet/enabled.rs")]
#[cfg_attr(not(feature = "parquet"), path = "parquet/disabled.rs")]
mod parquet;
pub mod plot;
pub mod trainlog;
pub mod vis;

pub use html::{render, ExampleDoc, ReportExtras};
pub use trainlog::{read_log, LogPoint, TrainLog};
pub use vis::{top_documents, topic_frequencies, TermScore, Vis, VisOptions};
