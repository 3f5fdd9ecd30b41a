//! `topos import`: word-topic counts from another LDA system as a Topos model of a given corpus,
//! so `topos eval`, `topics`, `report` and `export` read it like one of ours. Two layouts:
//!
//! * `--from tsv` (default): lines `word<TAB>topic<TAB>count`;
//! * `--from mallet`: Mallet's `--word-topic-counts-file` (`type word topic:count topic:count …`,
//!   as `topos export --format mallet` writes it too), or a directory holding it as
//!   `word-topic-counts.txt`, where `topic-keys.txt` (`--output-topic-keys`) gives K and α when
//!   they are not passed, and `doc-topics.txt` (`--output-doc-topics`, dense) gives the training
//!   documents' topic counts: the `.doctopics` side file of the model.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use topos_corpus::{Corpus, Vocabulary};
use topos_model::{Alpha, DocTopics, Hyperparameters, Provenance, TopicModel};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Counts file (tsv: `word<TAB>topic<TAB>count` per line, topics 0-based; mallet: Mallet's
    /// word-topic counts file, or a directory holding word-topic-counts.txt and optionally
    /// topic-keys.txt and doc-topics.txt).
    pub counts: PathBuf,
    /// The layout of the counts: tsv or mallet.
    #[arg(long, default_value = "tsv")]
    pub from: String,
    /// The corpus the counts were trained on (its vocabulary names the words).
    #[arg(long)]
    pub corpus: PathBuf,
    /// Number of topics (with --from mallet, default: the lines of topic-keys.txt).
    #[arg(short = 'k', long = "topics")]
    pub topics: Option<u32>,
    /// α the other system used (symmetric; with --from mallet, default: topic-keys.txt's α).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// The asymmetric α the other system learned instead: one α_k per topic, comma-separated
    /// (e.g. the `#alpha :` line of Mallet's --output-state after --optimize-interval).
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with = "alpha", value_name = "A1,A2,…")]
    pub alpha_values: Vec<f64>,
    /// β the other system used.
    #[arg(long)]
    pub beta: f64,
    /// Mallet's doc-topics file (dense, `doc TAB name TAB` one proportion per topic) to import
    /// as the model's side file (default with a directory: its doc-topics.txt, when present).
    #[arg(long)]
    pub doc_topics: Option<PathBuf>,
    /// Name of the system (recorded as the model's algorithm).
    #[arg(long, default_value = "imported")]
    pub name: String,
    /// Output model file.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// `path: line N: ` for messages.
fn at(path: &Path, line: usize) -> String {
    format!("{}: line {line}", path.display())
}

/// The numbered lines of a text file, each read or failed with the file's name.
fn lines(path: &Path) -> Result<impl Iterator<Item = Result<(usize, String)>> + '_> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(std::io::BufReader::new(f)
        .lines()
        .enumerate()
        .map(move |(i, l)| {
            l.map(|l| (i + 1, l))
                .with_context(|| format!("{}: cannot read line {}", path.display(), i + 1))
        }))
}

/// Word `word` of line `line`, which must be in the corpus vocabulary.
fn word_id(vocab: &Vocabulary, word: &str, path: &Path, line: usize) -> Result<usize> {
    match vocab.id(word) {
        Some(w) => Ok(w as usize),
        None => bail!(
            "{}: word {word:?} is not in the corpus vocabulary",
            at(path, line)
        ),
    }
}

fn topic_index(topic: &str, k: usize, path: &Path, line: usize) -> Result<usize> {
    topic
        .parse()
        .ok()
        .filter(|&t| t < k)
        .with_context(|| format!("{}: topic {topic:?} is not below K = {k}", at(path, line)))
}

fn count_value(count: &str, path: &Path, line: usize) -> Result<u32> {
    count.parse().with_context(|| {
        format!(
            "{}: count {count:?} is not a non-negative integer",
            at(path, line)
        )
    })
}

/// The word-topic counts being read (V × K, row-major by word). A `word topic` given again is
/// added, and counted when it changes a count already given, so that the import can say so (a
/// file concatenated twice would otherwise double every count without a word); a count of 0
/// given before or after changes nothing and needs no record of its own.
struct Cells {
    counts: Vec<u32>,
    repeats: u64,
}

impl Cells {
    fn new(cells: usize) -> Self {
        Self {
            counts: vec![0; cells],
            repeats: 0,
        }
    }

    /// Adds `count` to `cell`, refusing a sum past 2³² − 1 (a model's counts are 32 bits).
    fn add(&mut self, cell: usize, count: u32, path: &Path, line: usize) -> Result<()> {
        self.repeats += u64::from(count > 0 && self.counts[cell] > 0);
        self.counts[cell] = self.counts[cell].checked_add(count).with_context(|| {
            format!(
                "{}: the counts given for this word and topic add up past 4294967295, the largest count a model holds",
                at(path, line)
            )
        })?;
        Ok(())
    }
}

/// Adds `word<TAB>topic<TAB>count` lines to `counts`.
fn read_tsv(path: &Path, vocab: &Vocabulary, k: usize, counts: &mut Cells) -> Result<()> {
    for item in lines(path)? {
        let (i, line) = item?;
        if line.is_empty() || line.starts_with("word\t") {
            continue;
        }
        let mut parts = line.split('\t');
        let (Some(word), Some(topic), Some(count), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            bail!("{} is not word<TAB>topic<TAB>count", at(path, i));
        };
        let w = word_id(vocab, word, path, i)?;
        let t = topic_index(topic, k, path, i)?;
        counts.add(w * k + t, count_value(count, path, i)?, path, i)?;
    }
    Ok(())
}

/// Adds Mallet's word-topic counts (`type word topic:count …`, one line per word type, fields
/// separated by single spaces) to `counts`. Mallet's type index is checked to be a number but
/// not used: the word itself is looked up in the corpus vocabulary.
fn read_mallet_counts(path: &Path, vocab: &Vocabulary, k: usize, counts: &mut Cells) -> Result<()> {
    for item in lines(path)? {
        let (i, line) = item?;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(index), Some(word)) = (parts.next(), parts.next()) else {
            bail!("{} is not `type word topic:count …`", at(path, i));
        };
        if index.parse::<u64>().is_err() {
            bail!(
                "{}: type index {index:?} is not a number (expected `type word topic:count …`)",
                at(path, i)
            );
        }
        let w = word_id(vocab, word, path, i)?;
        for pair in parts {
            let Some((topic, count)) = pair.split_once(':') else {
                bail!("{}: {pair:?} is not topic:count", at(path, i));
            };
            let t = topic_index(topic, k, path, i)?;
            counts.add(w * k + t, count_value(count, path, i)?, path, i)?;
        }
    }
    Ok(())
}

/// Mallet's topic keys (`topic TAB α TAB words`): α of each topic, in topic order. Mallet writes
/// α with at most 5 fraction digits, so pass --alpha for more.
fn read_topic_keys(path: &Path) -> Result<Vec<f64>> {
    let mut alpha = Vec::new();
    for item in lines(path)? {
        let (i, line) = item?;
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split('\t');
        let (Some(topic), Some(a)) = (parts.next(), parts.next()) else {
            bail!("{} is not `topic TAB alpha TAB words`", at(path, i));
        };
        if topic.parse::<usize>().ok() != Some(alpha.len()) {
            bail!(
                "{}: topic {topic:?} where topic {} was expected",
                at(path, i),
                alpha.len()
            );
        }
        // NumberFormat groups thousands with commas.
        let value: f64 = a
            .replace(',', "")
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x > 0.0)
            .with_context(|| format!("{}: alpha {a:?} is not a positive number", at(path, i)))?;
        alpha.push(value);
    }
    if alpha.is_empty() {
        bail!("{} lists no topics", path.display());
    }
    Ok(alpha)
}

/// Mallet's dense doc-topics (`doc TAB name TAB` θ_d0 … θ_d,K−1, Mallet's θ = (count + α_k) /
/// (n_d + Σα)) turned back into topic counts, with n_d the length of each training document of
/// the corpus. Every count must come out whole (within 0.01) and the counts must sum to n_d:
/// otherwise α or the corpus is not the one Mallet used.
fn read_mallet_doc_topics(path: &Path, corpus: &Corpus, alpha: &Alpha) -> Result<DocTopics> {
    let k = alpha.values().len();
    let train = corpus.train();
    let mut a = DocTopics::new(k as u32);
    let mut row = vec![0u32; k];
    for item in lines(path)? {
        let (i, line) = item?;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let d = a.len();
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != k + 2 {
            bail!(
                "{} has {} fields, not doc, name and {k} proportions (Mallet's dense doc-topics)",
                at(path, i),
                fields.len()
            );
        }
        if fields[0].parse::<usize>().ok() != Some(d) {
            bail!(
                "{}: document {:?} where document {d} was expected",
                at(path, i),
                fields[0]
            );
        }
        if d >= train.len() {
            bail!(
                "{}: more documents than the corpus's {} training documents",
                at(path, i),
                train.len()
            );
        }
        let n_d = train.doc(d).len() as f64;
        let scale = n_d + alpha.sum();
        let mut total = 0u64;
        for (t, (field, slot)) in fields[2..].iter().zip(row.iter_mut()).enumerate() {
            let theta: f64 = field.parse().with_context(|| {
                format!("{}: proportion {field:?} is not a number", at(path, i))
            })?;
            let raw = theta * scale - alpha.get(t);
            let whole = raw.round();
            if !(whole >= 0.0 && (raw - whole).abs() <= 0.01) {
                bail!(
                    "{}: topic {t}'s proportion {field} is not (count + alpha) / ({n_d} tokens + {}) for a whole count; pass the alpha Mallet used (--alpha or --alpha-values) and the corpus it was trained on",
                    at(path, i),
                    alpha.sum()
                );
            }
            *slot = whole as u32;
            total += whole as u64;
        }
        if total != n_d as u64 {
            bail!(
                "{}: the topic counts sum to {total}, but training document {d} of the corpus has {n_d} tokens",
                at(path, i)
            );
        }
        a.push_dense(&row);
    }
    if a.len() != train.len() {
        bail!(
            "{} has {} documents, but the corpus has {} training documents",
            path.display(),
            a.len(),
            train.len()
        );
    }
    Ok(a)
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    super::check_output(
        &args.output,
        &[
            ("the counts", Some(&args.counts)),
            ("the corpus", Some(&args.corpus)),
            ("the document-topic file", args.doc_topics.as_deref()),
        ],
    )?;
    let corpus = Corpus::open(&args.corpus)?;
    let mallet = match args.from.as_str() {
        "mallet" => true,
        "tsv" => false,
        other => bail!("--from {other:?} is not tsv or mallet"),
    };
    // With --from mallet and a directory, the files of `mallet train-topics` in it.
    let (counts_path, keys_path, doc_topics_path) = if mallet && args.counts.is_dir() {
        let dir = &args.counts;
        let counts = dir.join("word-topic-counts.txt");
        if !counts.exists() {
            bail!(
                "{} holds no word-topic-counts.txt (Mallet's --word-topic-counts-file)",
                dir.display()
            );
        }
        let keys = Some(dir.join("topic-keys.txt")).filter(|p| p.exists());
        let dt = args
            .doc_topics
            .clone()
            .or_else(|| Some(dir.join("doc-topics.txt")).filter(|p| p.exists()));
        (counts, keys, dt)
    } else {
        if !mallet && args.doc_topics.is_some() {
            bail!("--doc-topics reads Mallet's doc-topics: use it with --from mallet");
        }
        (args.counts.clone(), None, args.doc_topics.clone())
    };
    let keys_alpha = match &keys_path {
        Some(p)
            if args.topics.is_none() || (args.alpha.is_none() && args.alpha_values.is_empty()) =>
        {
            Some(read_topic_keys(p)?)
        }
        _ => None,
    };
    let Some(k) = args
        .topics
        .or_else(|| keys_alpha.as_ref().map(|a| a.len() as u32))
    else {
        bail!(if mallet {
            "pass the number of topics with -k (or import a directory with Mallet's topic-keys.txt)"
        } else {
            "pass the number of topics with -k"
        });
    };
    let alpha = if let Some(a) = args.alpha {
        Alpha::symmetric(k, a)
    } else if !args.alpha_values.is_empty() {
        anyhow::ensure!(
            args.alpha_values.len() == k as usize,
            "--alpha-values has {} values for {} topics: give one per topic",
            args.alpha_values.len(),
            k
        );
        Alpha::from_values(args.alpha_values.clone())?
    } else if let Some(values) = keys_alpha {
        anyhow::ensure!(
            values.len() == k as usize,
            "{} lists {} topics, but -k is {k}",
            keys_path
                .as_deref()
                .map_or_else(String::new, |p| p.display().to_string()),
            values.len()
        );
        Alpha::from_values(values)?
    } else {
        bail!(if mallet {
            "pass the alpha the other system used with --alpha or --alpha-values (or import a directory with Mallet's topic-keys.txt)"
        } else {
            "pass the alpha the other system used with --alpha or --alpha-values"
        });
    };
    let hyper = match alpha.symmetric_value() {
        Some(a) => Hyperparameters::new(k, Some(a), Some(args.beta))?,
        None => Hyperparameters::with_alpha(alpha, Some(args.beta))?,
    };
    let k = hyper.k();
    let vocab = corpus.vocab().clone();
    let mut cells = Cells::new(vocab.len() * k);
    if mallet {
        read_mallet_counts(&counts_path, &vocab, k, &mut cells)?;
    } else {
        read_tsv(&counts_path, &vocab, k, &mut cells)?;
    }
    if cells.repeats > 0 {
        // A warning, kept by --quiet: the model's counts are the sums.
        eprintln!(
            "warning: {}: {} line{} gave a word and topic already given; {} counts were added to the earlier ones (a file concatenated twice doubles every count)",
            counts_path.display(),
            cells.repeats,
            if cells.repeats == 1 { "" } else { "s" },
            if cells.repeats == 1 { "its" } else { "their" },
        );
    }
    let counts = cells.counts;
    let doc_topics = match &doc_topics_path {
        Some(p) => Some(read_mallet_doc_topics(p, &corpus, &hyper.alpha)?),
        None => None,
    };
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let model = TopicModel::from_counts(
        vocab,
        hyper,
        counts,
        Provenance {
            algorithm: args.name.clone(),
            iterations: 0,
            seed: 0,
            corpus_checksum: corpus.checksum(),
            num_docs: corpus.train().len() as u64,
            num_tokens: total,
            sampler_settings: Default::default(),
        },
    );
    model.write(&args.output)?;
    if let Some(a) = &doc_topics {
        // The side file records the checksum of the model file it belongs to.
        let (_, checksum) = TopicModel::read_with_checksum(&args.output)?;
        a.write(&topos_model::doc_topics_path(&args.output), checksum)?;
    }
    ui.written(
        serde_json::json!({
            "output": args.output.display().to_string(),
            "tokens": total,
            "topics": k,
            "doc_topics": doc_topics.is_some(),
        }),
        format!(
            "wrote {} ({} tokens over {} topics{})",
            args.output.display(),
            total,
            k,
            if doc_topics.is_some() {
                ", with the training documents' topic counts"
            } else {
                ""
            }
        ),
    );
    Ok(())
}
