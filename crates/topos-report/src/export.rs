//! A model's numbers in open formats, for pandas, R, Arrow and Mallet-based tools:
//!
//! * what: θ of the training documents (`doc-topics`, θ_dk = (A_dk + α) / (n_d + Kα), from the
//!   `.doctopics` side file), φ (`phi`, φ_kw = (B_wk + β) / (n_k + Vβ)) and the topic keys (each
//!   topic's top words by count);
//! * layout: `wide` (one row per document or topic, one column per topic or word) or `long` (one
//!   row per non-zero count: document or topic, topic or word, count, probability); topic keys are
//!   always long (topic, rank, word, count, phi);
//! * formats: CSV (RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled),
//!   JSON Lines, `.npy` (version 1.0, little-endian f64, C order; wide only), and Mallet's three
//!   text files ([`write_mallet`]).
//!
//! Rows stream through a buffered writer into a temporary file renamed when complete, so a
//! failure leaves nothing under the real name and D × K never has to fit in memory twice.

use std::io::Write;
use std::path::Path;
use topos_io::AtomicFile;
use topos_model::{DocTopics, TopicModel};

/// What to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    DocTopics,
    Phi,
    TopicKeys,
}

/// Tabular formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Npy,
    Parquet,
}

/// Row layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Wide,
    Long,
}

/// Errors of an export: a one-line message.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Format(#[from] topos_io::FormatError),
}

/// Refuses a vocabulary that a format separating words by white space cannot hold: such a file
/// is written without complaint but read back as other words (Mallet's `word-topic-counts.txt`
/// with "new york" reads as the word "new"), so every word is checked before anything is
/// written. `format` names the files in the message (a plural: "… separate words by white
/// space") and `instead` says what to do. Shared by
/// the Mallet export and `topos export CORPUS` (documents as space-separated text).
pub fn refuse_words_with_white_space<'a>(
    words: impl IntoIterator<Item = &'a str>,
    format: &str,
    instead: &str,
) -> Result<(), ExportError> {
    for w in words {
        if w.is_empty() {
            return Err(ExportError::Invalid(format!(
                "the vocabulary holds an empty word, and {format} separate words by white space; {instead}"
            )));
        }
        if w.contains(char::is_whitespace) {
            return Err(ExportError::Invalid(format!(
                "word {w:?} contains white space, and {format} separate words by white space; {instead}"
            )));
        }
    }
    Ok(())
}

/// A value of a table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    Int(u64),
    Float(f64),
    Text(&'a str),
}

/// One CSV field, quoted when it must be (RFC 4180).
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        std::borrow::Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// The header of a version 1.0 `.npy` file of little-endian f64 in C order of `shape`.
pub fn npy_header(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + dict + '\n' is a multiple of 64.
    let total = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - total % 64) % 64));
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h
}

/// The type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Float,
    Text,
}

/// A table being written: the text formats here, Parquet in its module.
enum Sink<'p> {
    Text(TableWriter<'p>),
    #[cfg(feature = "parquet")]
    Parquet(crate::parquet::ParquetSink<'p>),
}

impl<'p> Sink<'p> {
    fn create(
        path: &'p Path,
        format: Format,
        columns: Vec<(String, Kind)>,
    ) -> Result<Self, ExportError> {
        #[cfg(feature = "parquet")]
        if format == Format::Parquet {
            return Ok(Sink::Parquet(crate::parquet::ParquetSink::create(
                path, columns,
            )?));
        }
        Ok(Sink::Text(TableWriter::create(
            path,
            format,
            columns.into_iter().map(|c| c.0).collect(),
        )?))
    }

    fn npy_header(&mut self, shape: &[usize]) -> Result<(), ExportError> {
        match self {
            Sink::Text(t) => t.write(&npy_header(shape)),
            #[cfg(feature = "parquet")]
            Sink::Parquet(_) => Ok(()),
        }
    }

    fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        match self {
            Sink::Text(t) => t.row(cells),
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => p.row(cells),
        }
    }

    /// A row of `keys` (named, in the leading columns) and then `values`.
    fn wide(
        &mut self,
        keys: &[(&str, u64)],
        values_name: &str,
        values: &[f64],
    ) -> Result<(), ExportError> {
        match self {
            Sink::Text(t) => t.wide(keys, values_name, values),
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => {
                let keys: Vec<u64> = keys.iter().map(|k| k.1).collect();
                p.wide(&keys, values)
            }
        }
    }

    fn finish(self) -> Result<(), ExportError> {
        match self {
            Sink::Text(t) => t.finish(),
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => p.finish(),
        }
    }
}

/// A table being written in one of the row formats.
struct TableWriter<'p> {
    out: std::io::BufWriter<AtomicFile>,
    format: Format,
    columns: Vec<String>,
    path: &'p Path,
}

impl<'p> TableWriter<'p> {
    fn create(path: &'p Path, format: Format, columns: Vec<String>) -> Result<Self, ExportError> {
        let file = AtomicFile::create(path)?;
        let mut t = TableWriter {
            out: std::io::BufWriter::with_capacity(1 << 20, file),
            format,
            columns,
            path,
        };
        if format == Format::Csv {
            let header: Vec<String> = t
                .columns
                .iter()
                .map(|c| csv_field(c).into_owned())
                .collect();
            let line = header.join(",") + "\n";
            t.write(line.as_bytes())?;
        }
        Ok(t)
    }

    fn io(&self, e: std::io::Error) -> ExportError {
        ExportError::Io {
            path: self.path.display().to_string(),
            source: e,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        self.out.write_all(bytes).map_err(|e| self.io(e))
    }

    /// A row of scalar cells (CSV or JSON Lines).
    fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        let mut line = String::new();
        match self.format {
            Format::Csv => {
                for (i, c) in cells.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    match c {
                        Cell::Int(x) => line.push_str(&x.to_string()),
                        Cell::Float(x) => line.push_str(&format!("{x:?}")),
                        Cell::Text(s) => line.push_str(&csv_field(s)),
                    }
                }
            }
            _ => {
                // Keys in column order (a serde_json map would sort them), so pandas.read_json
                // gives the columns of CSV and Parquet in the same order.
                line.push('{');
                for (i, (name, c)) in self.columns.iter().zip(cells).enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&serde_json::Value::from(name.as_str()).to_string());
                    line.push(':');
                    let v = match c {
                        Cell::Int(x) => serde_json::Value::from(*x),
                        Cell::Float(x) => serde_json::Value::from(*x),
                        Cell::Text(s) => serde_json::Value::from(*s),
                    };
                    line.push_str(&v.to_string());
                }
                line.push('}');
            }
        }
        line.push('\n');
        self.write(line.as_bytes())
    }

    /// A wide row: `key` then the values (CSV: one column each; JSON Lines: `{"key": k,
    /// "values": [...]}`; npy: the values only).
    fn wide(
        &mut self,
        keys: &[(&str, u64)],
        values_name: &str,
        values: &[f64],
    ) -> Result<(), ExportError> {
        match self.format {
            Format::Npy => {
                let mut bytes = Vec::with_capacity(values.len() * 8);
                for v in values {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
                self.write(&bytes)
            }
            Format::Csv => {
                let mut line = keys
                    .iter()
                    .map(|k| k.1.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                for v in values {
                    line.push(',');
                    line.push_str(&format!("{v:?}"));
                }
                line.push('\n');
                self.write(line.as_bytes())
            }
            _ => {
                // The keys first, as in the other formats.
                let mut line = String::from("{");
                for (name, key) in keys {
                    line.push_str(&format!("{}:{key},", serde_json::Value::from(*name)));
                }
                line.push_str(&format!(
                    "{}:{}}}\n",
                    serde_json::Value::from(values_name),
                    serde_json::Value::from(values)
                ));
                self.write(line.as_bytes())
            }
        }
    }

    fn finish(self) -> Result<(), ExportError> {
        let path = self.path;
        let file = self.out.into_inner().map_err(|e| ExportError::Io {
            path: path.display().to_string(),
            source: e.into_error(),
        })?;
        file.commit()?;
        Ok(())
    }
}

/// φ of one topic over every word.
fn phi_row(model: &TopicModel, k: usize) -> Vec<f64> {
    let kk = model.num_topics();
    let v = model.num_words();
    let beta = model.hyper.beta;
    // Divided, not multiplied by a reciprocal, so every φ is the same f64 as `topos topics`.
    let denominator = model.topic_totals[k] as f64 + v as f64 * beta;
    (0..v)
        .map(|w| (model.word_topic[w * kk + k] as f64 + beta) / denominator)
        .collect()
}

/// Each topic's `top` words by count (count > 0), most frequent first, ties by word id.
pub fn topic_keys(model: &TopicModel, top: usize) -> Vec<Vec<(u32, u32)>> {
    topos_model::top_word_ids(model, top)
        .into_iter()
        .map(|l| l.into_iter().filter(|&(_, c)| c > 0).collect())
        .collect()
}

/// The training documents' topic counts for [`export`], and how their rows are keyed.
///
/// θ's rows are the training documents in training order, keyed by that position (`doc`). With
/// `records` (the training documents' input records, `Corpus::train_ids`) a `record` column
/// follows it: the number `similar --doc` and the report use for a document (its line or record
/// of the input, from 0), which differs from the position as soon as documents are held out or
/// dropped, so exports join with those through it.
#[derive(Clone, Copy)]
pub struct DocRows<'a> {
    pub counts: &'a DocTopics,
    pub records: Option<&'a [u64]>,
}

impl<'a> DocRows<'a> {
    /// Rows keyed by position only.
    pub fn new(counts: &'a DocTopics) -> Self {
        Self {
            counts,
            records: None,
        }
    }
}

/// Writes `what` of `model` to `path` as `format` in `layout`. `doc_topics` is needed for
/// [`What::DocTopics`]; `top` is the number of words of the topic keys.
///
pub fn export(
    model: &TopicModel,
    doc_topics: Option<DocRows<'_>>,
    what: What,
    format: Format,
    layout: Layout,
    top: usize,
    path: &Path,
) -> Result<(), ExportError> {
    let k = model.num_topics();
    let v = model.num_words();
    if format == Format::Parquet && !crate::parquet::AVAILABLE {
        return Err(ExportError::Invalid(crate::parquet::MISSING.into()));
    }
    if format == Format::Npy && (layout == Layout::Long || what == What::TopicKeys) {
        return Err(ExportError::Invalid(
            "the .npy format holds one matrix: export doc-topics or phi with --layout wide, or use csv, jsonl or parquet".into(),
        ));
    }
    let topic_names = || (0..k).map(|t| (format!("topic_{t}"), Kind::Float));
    let named = |cols: &[(&str, Kind)]| -> Vec<(String, Kind)> {
        cols.iter().map(|&(n, c)| (n.to_string(), c)).collect()
    };
    match what {
        What::DocTopics => {
            let DocRows { counts: a, records } = doc_topics.ok_or_else(|| {
                ExportError::Invalid(
                    "θ of the training documents needs the model's .doctopics side file (train with --doc-topics)".into(),
                )
            })?;
            let alpha = crate::vis::alphas(model);
            let alpha_sum: f64 = alpha.iter().sum();
            let records = records.filter(|r| r.len() == a.len());
            let mut key_columns = vec![("doc", Kind::Int)];
            if records.is_some() {
                key_columns.push(("record", Kind::Int));
            }
            let keys = |d: usize| -> Vec<(&str, u64)> {
                let mut k = vec![("doc", d as u64)];
                if let Some(r) = records {
                    k.push(("record", r[d]));
                }
                k
            };
            match layout {
                Layout::Wide => {
                    let mut columns = named(&key_columns);
                    columns.extend(topic_names());
                    let mut t = Sink::create(path, format, columns)?;
                    if format == Format::Npy {
                        t.npy_header(&[a.len(), k])?;
                    }
                    let mut row = vec![0.0; k];
                    for d in 0..a.len() {
                        let denominator = a.row_total(d) as f64 + alpha_sum;
                        row.iter_mut()
                            .zip(&alpha)
                            .for_each(|(x, a)| *x = a / denominator);
                        let (topics, counts) = a.row(d);
                        for (&tp, &c) in topics.iter().zip(counts) {
                            row[tp as usize] = (c as f64 + alpha[tp as usize]) / denominator;
                        }
                        t.wide(&keys(d), "theta", &row)?;
                    }
                    t.finish()
                }
                Layout::Long => {
                    let mut columns = key_columns.clone();
                    columns.extend([
                        ("topic", Kind::Int),
                        ("count", Kind::Int),
                        ("theta", Kind::Float),
                    ]);
                    let columns = named(&columns);
                    let mut t = Sink::create(path, format, columns)?;
                    for d in 0..a.len() {
                        let denominator = a.row_total(d) as f64 + alpha_sum;
                        let (topics, counts) = a.row(d);
                        for (&tp, &c) in topics.iter().zip(counts) {
                            let mut cells: Vec<Cell> =
                                keys(d).iter().map(|k| Cell::Int(k.1)).collect();
                            cells.extend([
                                Cell::Int(u64::from(tp)),
                                Cell::Int(u64::from(c)),
                                Cell::Float((c as f64 + alpha[tp as usize]) / denominator),
                            ]);
                            t.row(&cells)?;
                        }
                    }
                    t.finish()
                }
            }
        }
        What::Phi => match layout {
            Layout::Wide => {
                let mut columns = named(&[("topic", Kind::Int)]);
                columns.extend(model.vocab.words().iter().map(|w| (w.clone(), Kind::Float)));
                let mut t = Sink::create(path, format, columns)?;
                if format == Format::Npy {
                    t.npy_header(&[k, v])?;
                }
                for tp in 0..k {
                    t.wide(&[("topic", tp as u64)], "phi", &phi_row(model, tp))?;
                }
                t.finish()
            }
            Layout::Long => {
                let columns = named(&[
                    ("topic", Kind::Int),
                    ("word", Kind::Text),
                    ("count", Kind::Int),
                    ("phi", Kind::Float),
                ]);
                let mut t = Sink::create(path, format, columns)?;
                for tp in 0..k {
                    let phi = phi_row(model, tp);
                    for (w, &p) in phi.iter().enumerate() {
                        let c = model.word_topic[w * k + tp];
                        if c > 0 {
                            t.row(&[
                                Cell::Int(tp as u64),
                                Cell::Text(model.vocab.word(w as u32)),
                                Cell::Int(u64::from(c)),
                                Cell::Float(p),
                            ])?;
                        }
                    }
                }
                t.finish()
            }
        },
        What::TopicKeys => {
            let columns = named(&[
                ("topic", Kind::Int),
                ("rank", Kind::Int),
                ("word", Kind::Text),
                ("count", Kind::Int),
                ("phi", Kind::Float),
            ]);
            let mut t = Sink::create(path, format, columns)?;
            let beta = model.hyper.beta;
            for (tp, words) in topic_keys(model, top).iter().enumerate() {
                let denominator = model.topic_totals[tp] as f64 + v as f64 * beta;
                for (rank, &(w, c)) in words.iter().enumerate() {
                    t.row(&[
                        Cell::Int(tp as u64),
                        Cell::Int(rank as u64 + 1),
                        Cell::Text(model.vocab.word(w)),
                        Cell::Int(u64::from(c)),
                        Cell::Float((c as f64 + beta) / denominator),
                    ])?;
                }
            }
            t.finish()
        }
    }
}

/// A double as Java's `Double.toString` writes it (Mallet's doc-topics): the shortest digits that
/// read back to the same value, with `.0` on integral values and `E` notation below 10⁻³ and from
/// 10⁷ on.
pub fn java_double(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    } else {
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exp}")
    }
}

/// A number as Mallet's topic keys write α: `NumberFormat` of the default (English) locale, at
/// most 5 fraction digits, thousands grouped with commas.
pub fn mallet_number(x: f64) -> String {
    let s = format!("{:.5}", x.abs());
    let s = s.trim_end_matches('0').trim_end_matches('.');
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if x < 0.0 && s != "0" { "-" } else { "" };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// Writes Mallet's three files into `dir` (created if missing), as `mallet train-topics` writes
/// them with `--output-doc-topics doc-topics.txt` (dense: `doc TAB name TAB` θ of every topic,
/// as `printDenseDocumentTopics`), `--output-topic-keys topic-keys.txt` (`topic TAB α TAB` the
/// top words, each followed by a space) and `--word-topic-counts-file word-topic-counts.txt`
/// (`type word topic:count …`, counts decreasing). A document's name is its input record
/// (`names[d]`) when known, else Mallet's `no-name`. Without the side file, doc-topics.txt is
/// not written. A word with white space is refused before anything is written
/// ([`refuse_words_with_white_space`]). Returns the names of the files written.
pub fn write_mallet(
    model: &TopicModel,
    doc_topics: Option<&DocTopics>,
    names: Option<&[u64]>,
    top: usize,
    dir: &Path,
) -> Result<Vec<&'static str>, ExportError> {
    refuse_words_with_white_space(
        model.vocab.words().iter().map(String::as_str),
        "Mallet's files",
        "export the model as csv, jsonl, npy or parquet instead (they keep such words whole)",
    )?;
    std::fs::create_dir_all(dir).map_err(|e| ExportError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    let k = model.num_topics();
    let alpha = crate::vis::alphas(model);
    let mut written = Vec::new();
    let mut files: Vec<(&'static str, AtomicFile)> = Vec::new();
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e: std::io::Error| ExportError::Io {
            path: p.clone(),
            source: e,
        }
    };
    // Topic keys.
    {
        let path = dir.join("topic-keys.txt");
        let mut out = std::io::BufWriter::new(AtomicFile::create(&path)?);
        for (t, words) in topic_keys(model, top).iter().enumerate() {
            let mut line = format!("{t}\t{}\t", mallet_number(alpha[t]));
            for &(w, _) in words {
                line.push_str(model.vocab.word(w));
                line.push(' ');
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(io(&path))?;
        }
        files.push((
            "topic-keys.txt",
            out.into_inner().map_err(|e| io(&path)(e.into_error()))?,
        ));
    }
    // Word-topic counts.
    {
        let path = dir.join("word-topic-counts.txt");
        let mut out = std::io::BufWriter::new(AtomicFile::create(&path)?);
        let mut pairs: Vec<(u32, usize)> = Vec::with_capacity(k);
        for w in 0..model.num_words() {
            pairs.clear();
            pairs.extend(
                model
                    .word_row(w as u32)
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(t, &c)| (c, t)),
            );
            pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut line = format!("{w} {}", model.vocab.word(w as u32));
            for &(c, t) in &pairs {
                line.push_str(&format!(" {t}:{c}"));
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(io(&path))?;
        }
        files.push((
            "word-topic-counts.txt",
            out.into_inner().map_err(|e| io(&path)(e.into_error()))?,
        ));
    }
    // Doc-topics.
    if let Some(a) = doc_topics {
        let path = dir.join("doc-topics.txt");
        let mut out = std::io::BufWriter::new(AtomicFile::create(&path)?);
        let alpha_sum: f64 = alpha.iter().sum();
        let mut row = vec![0u32; k];
        for d in 0..a.len() {
            row.iter_mut().for_each(|x| *x = 0);
            let (topics, counts) = a.row(d);
            for (&t, &c) in topics.iter().zip(counts) {
                row[t as usize] = c;
            }
            let len = a.row_total(d) as f64;
            let mut line = match names {
                Some(n) => format!("{d}\t{}", n[d]),
                None => format!("{d}\tno-name"),
            };
            for (t, &c) in row.iter().enumerate() {
                line.push('\t');
                line.push_str(&java_double((alpha[t] + c as f64) / (len + alpha_sum)));
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(io(&path))?;
        }
        files.push((
            "doc-topics.txt",
            out.into_inner().map_err(|e| io(&path)(e.into_error()))?,
        ));
    }
    // Every file is complete before any is renamed into place.
    for (name, file) in files {
        file.commit()?;
        written.push(name);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::Vocabulary;
    use topos_model::{Hyperparameters, Provenance};

    fn model() -> TopicModel {
        let vocab = Vocabulary::new(["a,b", "q\"x", "c"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.5), Some(0.1)).unwrap();
        TopicModel::from_counts(vocab, hyper, vec![3, 0, 1, 2, 0, 4], Provenance::default())
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("q\"x"), "\"q\"\"x\"");
        assert_eq!(csv_field("line\nbreak"), "\"line\nbreak\"");
    }

    #[test]
    fn npy_header_is_aligned() {
        let h = npy_header(&[3, 4]);
        assert_eq!(h.len() % 64, 0);
        assert!(String::from_utf8_lossy(&h).contains("'shape': (3, 4), }"));
        assert_eq!(*h.last().unwrap(), b'\n');
        assert!(String::from_utf8_lossy(&npy_header(&[5])).contains("(5,)"));
    }

    #[test]
    fn java_and_mallet_numbers() {
        assert_eq!(java_double(0.25), "0.25");
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(1.5e-5), "1.5E-5");
        assert_eq!(java_double(12345678.0), "1.2345678E7");
        assert_eq!(mallet_number(0.1), "0.1");
        assert_eq!(mallet_number(0.0123456), "0.01235");
        assert_eq!(mallet_number(1234.5), "1,234.5");
        assert_eq!(mallet_number(50.0), "50");
    }

    #[test]
    fn mallet_files() {
        let dir = tempfile::tempdir().unwrap();
        let m = model();
        let mut a = DocTopics::new(2);
        a.push_dense(&[2, 1]);
        let names = [7u64];
        let written = write_mallet(&m, Some(&a), Some(&names), 2, dir.path()).unwrap();
        assert_eq!(written.len(), 3);
        let keys = std::fs::read_to_string(dir.path().join("topic-keys.txt")).unwrap();
        assert_eq!(keys, "0\t0.5\ta,b q\"x \n1\t0.5\tc q\"x \n");
        let wtc = std::fs::read_to_string(dir.path().join("word-topic-counts.txt")).unwrap();
        assert_eq!(wtc, "0 a,b 0:3\n1 q\"x 1:2 0:1\n2 c 1:4\n");
        let dt = std::fs::read_to_string(dir.path().join("doc-topics.txt")).unwrap();
        assert_eq!(
            dt,
            format!(
                "0\t7\t{}\t{}\n",
                java_double(2.5 / 4.0),
                java_double(1.5 / 4.0)
            )
        );
    }

    #[test]
    fn mallet_refuses_a_word_with_white_space_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("mallet");
        let vocab = Vocabulary::new(["new york", "banana"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.5), Some(0.1)).unwrap();
        let m = TopicModel::from_counts(vocab, hyper, vec![3, 1, 0, 2], Provenance::default());
        let e = write_mallet(&m, None, None, 2, &out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"new york\" contains white space") && e.contains("csv"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(!out.exists(), "nothing is written");
        let e = refuse_words_with_white_space(["a", ""], "text", "do X").unwrap_err();
        assert!(e.to_string().contains("empty word"), "{e}");
        assert!(refuse_words_with_white_space(["a,b", "q\"x"], "text", "do X").is_ok());
    }

    #[test]
    fn tables_in_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let m = model();
        let mut a = DocTopics::new(2);
        a.push_dense(&[2, 1]);
        a.push_dense(&[0, 3]);
        let p = dir.path().join("phi.csv");
        export(&m, None, What::Phi, Format::Csv, Layout::Wide, 10, &p).unwrap();
        let csv = std::fs::read_to_string(&p).unwrap();
        assert!(csv.starts_with("topic,\"a,b\",\"q\"\"x\",c\n0,"), "{csv}");
        let p = dir.path().join("theta.npy");
        export(
            &m,
            Some(DocRows::new(&a)),
            What::DocTopics,
            Format::Npy,
            Layout::Wide,
            10,
            &p,
        )
        .unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len(), 128 + 4 * 8);
        let first = f64::from_le_bytes(bytes[128..136].try_into().unwrap());
        assert_eq!(first, 2.5 / 4.0);
        let p = dir.path().join("keys.jsonl");
        export(
            &m,
            None,
            What::TopicKeys,
            Format::Jsonl,
            Layout::Long,
            10,
            &p,
        )
        .unwrap();
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2]["word"], "c");
        assert_eq!(lines[2]["rank"], 1);
        let p = dir.path().join("long.csv");
        export(
            &m,
            Some(DocRows {
                counts: &a,
                records: Some(&[3, 7]),
            }),
            What::DocTopics,
            Format::Csv,
            Layout::Long,
            10,
            &p,
        )
        .unwrap();
        // Keyed by position and input record.
        let long = std::fs::read_to_string(&p).unwrap();
        let rows: Vec<&str> = long.lines().collect();
        assert_eq!(rows.len(), 4);
        assert!(
            rows[0].starts_with("doc,record,topic,count,theta"),
            "{long}"
        );
        assert!(
            rows[1].starts_with("0,3,0,2,") && rows[3].starts_with("1,7,1,3,"),
            "{long}"
        );
        // Refusals write nothing.
        let p = dir.path().join("no.npy");
        assert!(export(&m, None, What::TopicKeys, Format::Npy, Layout::Wide, 10, &p).is_err());
        assert!(export(&m, None, What::DocTopics, Format::Csv, Layout::Wide, 10, &p).is_err());
        assert!(!p.exists());
    }
}
