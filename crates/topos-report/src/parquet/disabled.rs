//! Parquet export in a build without the `parquet` feature: a one-line refusal.

pub const AVAILABLE: bool = false;
pub const MISSING: &str = "this build of topos has no Parquet support: rebuild it with --features parquet, or use csv, jsonl or npy";
