//! Parquet export in a build without the `parquet` feature: a one-line refusal.

use crate::export::{ExportError, Layout, What};
use std::path::Path;
use topos_model::{DocTopics, TopicModel};

pub fn export(
    _model: &TopicModel,
    _doc_topics: Option<&DocTopics>,
    _what: What,
    _layout: Layout,
    _top: usize,
    _path: &Path,
) -> Result<(), ExportError> {
    Err(ExportError::Invalid(
        "this build of topos has no Parquet support: rebuild it with --features parquet, or use csv, jsonl or npy".into(),
    ))
}
