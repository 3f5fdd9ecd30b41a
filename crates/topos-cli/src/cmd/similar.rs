//! `topos similar`: the training documents nearest to a document or a text by topic mixture.
//!
//! The index is θ of every training document, θ_dk = (A_dk + α)/(n_d + Kα) from the counts the
//! trainer saved beside the model (`MODEL.doctopics`, `topos train --doc-topics`): smoothed,
//! so every row is a full probability vector and Jensen–Shannon (the default), KL divergence and
//! Hellinger are all finite. Queries are training documents (their own θ), held-out documents
//! or free text (θ by Gibbs fold-in with the topics fixed, as `topos infer` does).

use super::knn::{score_name, search, with_threads, SearchArgs, Summary};
use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use topos_corpus::OwnedDocs;
use topos_distance::{CsrMatrix, Metric};
use topos_model::{doc_to_ids, infer, DocTopics, Phi, TopicModel};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file (trained with --doc-topics).
    pub model: PathBuf,
    /// Query by a document of the corpus: its input record (its line or record of the input,
    /// from 0, training or held-out; the `record` column of `export --what doc-topics`);
    /// repeatable.
    #[arg(long = "doc")]
    pub docs: Vec<u64>,
    /// Query by free text (its topics are inferred first); repeatable.
    #[arg(long = "text")]
    pub texts: Vec<String>,
    /// Query with every held-out document of the corpus.
    #[arg(long)]
    pub heldout: bool,
    /// The corpus the model was trained on (default: the model path with the extension .tcorp).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Stem the words of --text: only for a corpus that does not record its tokenizer options
    /// (prepared by an older topos with --stem); a corpus that records them is followed.
    #[arg(long)]
    pub stem: bool,
    /// The fold-in of held-out documents and text.
    #[command(flatten)]
    pub foldin: super::foldin::FoldInArgs,
}

/// θ rows as a CSR matrix over K topic columns (every entry is positive: α > 0).
fn theta_matrix(rows: impl Iterator<Item = Vec<f32>>, k: usize) -> Result<CsrMatrix> {
    let mut offsets = vec![0u64];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for row in rows {
        for (t, &p) in row.iter().enumerate() {
            if p != 0.0 {
                indices.push(t as u32);
                values.push(p);
            }
        }
        offsets.push(indices.len() as u64);
    }
    Ok(CsrMatrix::new(k, offsets, indices, values)?)
}

/// θ of training document `d` from its topic counts.
fn train_theta(a: &DocTopics, d: usize, alpha: &topos_model::Alpha) -> Vec<f32> {
    let denom = a.row_total(d) as f64 + alpha.sum();
    let mut row: Vec<f32> = alpha.values().iter().map(|&a| (a / denom) as f32).collect();
    let (topics, counts) = a.row(d);
    for (&t, &c) in topics.iter().zip(counts) {
        let t = usize::from(t);
        row[t] = ((f64::from(c) + alpha.get(t)) / denom) as f32;
    }
    row
}

/// A query: its label in the output, and either a training row (searched with itself excluded)
/// or a θ to be inferred from words.
enum Query {
    Train {
        id: u64,
        row: usize,
    },
    Words {
        label: serde_json::Value,
        words: Vec<u32>,
    },
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let t0 = std::time::Instant::now();
    if let Some(out) = &args.search.output {
        let corpus = args
            .corpus
            .clone()
            .unwrap_or_else(|| args.model.with_extension("tcorp"));
        super::check_output(
            out,
            &[
                ("the model", Some(&args.model)),
                ("the corpus", Some(&corpus)),
                (
                    "the document-topic file",
                    Some(&topos_model::doc_topics_path(&args.model)),
                ),
            ],
        )?;
    }
    args.search.validate(ui)?;
    args.foldin.checked()?;
    let metric = args.search.metric(Metric::JensenShannon)?;
    let n_modes = usize::from(!args.docs.is_empty())
        + usize::from(!args.texts.is_empty())
        + usize::from(args.heldout);
    if n_modes != 1 {
        bail!("give exactly one kind of query: --doc ID, --text TEXT or --heldout");
    }
    let (model, model_checksum) = TopicModel::read_with_checksum(&args.model)?;
    if model.privacy.is_some() {
        bail!(
            "{} is a private model: it has no per-document topic counts to search (they would \
             break its guarantee); use a non-private model",
            args.model.display()
        );
    }
    let corpus = super::eval::corpus_for(&args.model, &model, args.corpus.as_deref())?;
    let dt_path = topos_model::doc_topics_path(&args.model);
    if !dt_path.exists() {
        bail!(
            "{} not found: train the model with --doc-topics to search its documents by topic mixture",
            dt_path.display()
        );
    }
    let doc_topics = DocTopics::read_for_model(&args.model, model_checksum)?;
    let n_train = corpus.train().len();
    if doc_topics.len() != n_train || doc_topics.num_topics as usize != model.num_topics() {
        bail!(
            "{} holds {} documents over {} topics, but the corpus has {} training documents and the model {} topics",
            dt_path.display(),
            doc_topics.len(),
            doc_topics.num_topics,
            n_train,
            model.num_topics()
        );
    }
    let k_topics = model.num_topics();
    let alpha = &model.hyper.alpha;
    let index = theta_matrix(
        (0..n_train).map(|d| train_theta(&doc_topics, d, alpha)),
        k_topics,
    )?;

    // The queries.
    let mut queries: Vec<Query> = Vec::new();
    for &id in &args.docs {
        if let Some(row) = corpus.train_ids().iter().position(|&t| t == id) {
            queries.push(Query::Train { id, row });
        } else if let Some(h) = corpus.heldout_ids().iter().position(|&t| t == id) {
            queries.push(Query::Words {
                label: id.into(),
                words: corpus.heldout().doc(h).to_vec(),
            });
        } else {
            let last = corpus
                .train_ids()
                .iter()
                .chain(corpus.heldout_ids())
                .max()
                .copied();
            let why = match last {
                Some(last) if id > last => {
                    format!("the input's last document is record {last}")
                }
                _ => "prepare dropped that record (empty after tokenizing)".to_string(),
            };
            bail!(
                "input record {id} is not a document of {} ({} training and {} held-out documents): {why}; --doc takes input records (lines or records of the input, from 0), as `export --what doc-topics` lists them in its record column",
                args.corpus
                    .as_ref()
                    .map_or_else(|| args.model.with_extension("tcorp"), PathBuf::clone)
                    .display(),
                n_train,
                corpus.heldout().len(),
            );
        }
    }
    if args.heldout {
        if corpus.heldout().is_empty() {
            bail!("the corpus has no held-out documents");
        }
        for (h, &id) in corpus.heldout_ids().iter().enumerate() {
            queries.push(Query::Words {
                label: id.into(),
                words: corpus.heldout().doc(h).to_vec(),
            });
        }
    }
    if !args.texts.is_empty() {
        // Cut the text as prepare cut the corpus (its recorded options).
        let corpus_path = args
            .corpus
            .clone()
            .unwrap_or_else(|| args.model.with_extension("tcorp"));
        let tokenizer = match &model.tokenizer {
            Some(spec) => super::infer::follow_spec(spec, &args.model, args.stem, ui)?,
            None => super::infer::tokenizer_of(Some(&corpus), &corpus_path, args.stem, ui)?,
        };
        for text in &args.texts {
            let toks = tokenizer.tokens(text);
            let refs: Vec<&str> = toks.iter().map(String::as_str).collect();
            // A text with no known word stays a query: its neighbour list is empty and it is
            // counted (see `knn`), rather than failing every other query of the call.
            let words = doc_to_ids(&model.vocab, &refs);
            queries.push(Query::Words {
                label: text.as_str().into(),
                words,
            });
        }
    }
    let k = args.search.k;
    let n_words_queries = queries
        .iter()
        .filter(|q| matches!(q, Query::Words { .. }))
        .count();
    let needs_exclusion = queries.iter().any(|q| matches!(q, Query::Train { .. }));
    let max = n_train - usize::from(needs_exclusion);
    if k > max {
        bail!("-k {k} is more than the {max} candidate training documents");
    }
    ui.info(format!(
        "{} ({} to infer) against {} training documents over {} topics; {metric}",
        crate::ui::count(queries.len() as u64, "query", "queries"),
        n_words_queries,
        n_train,
        k_topics
    ));

    let mut out = args.search.output(ui, metric)?;
    with_threads(args.search.threads, || {
        // θ of the queries that need inference, in one parallel fold-in.
        let mut docs = OwnedDocs::new();
        for q in &queries {
            if let Query::Words { words, .. } = q {
                docs.push(words);
            }
        }
        let inferred = if docs.is_empty() {
            Vec::new()
        } else {
            let phi = Phi::from_model(&model)?;
            infer(&phi, &model.hyper, docs.view(), &args.foldin.options())
                .context("inference failed")?
        };
        let (engine, batch) = args.search.engine(ui)?;
        let prepared = engine.prepare(&index, metric)?;
        let index_ids = corpus.train_ids();
        // θ of a query without known words is left an empty row (the prior alone says nothing
        // about it), which `search` reports as having no neighbours.
        let mut qi = queries.iter().filter_map(|q| match q {
            Query::Words { words, .. } => Some(words.is_empty()),
            Query::Train { .. } => None,
        });
        let m = theta_matrix(
            inferred.iter().map(|t| {
                if qi.next() == Some(true) {
                    vec![0.0; k_topics]
                } else {
                    t.dense()
                }
            }),
            k_topics,
        )?;
        let labels: Vec<serde_json::Value> = queries
            .iter()
            .filter_map(|q| match q {
                Query::Words { label, .. } => Some(label.clone()),
                Query::Train { .. } => None,
            })
            .collect();
        // In the order given: a training document searches its own index row with that row
        // excluded; a run of inferred queries searches rows of `m` in batches.
        let (mut i, mut w) = (0, 0);
        while i < queries.len() {
            match &queries[i] {
                Query::Train { id, row } => {
                    let id = *id;
                    search(
                        prepared.as_ref(),
                        &index,
                        *row..*row + 1,
                        k,
                        1,
                        true,
                        index_ids,
                        |_| id.into(),
                        &mut out,
                        ui,
                    )?;
                    i += 1;
                }
                Query::Words { .. } => {
                    let run = queries[i..]
                        .iter()
                        .take_while(|q| matches!(q, Query::Words { .. }))
                        .count();
                    search(
                        prepared.as_ref(),
                        &m,
                        w..w + run,
                        k,
                        batch,
                        false,
                        index_ids,
                        |r| labels[r].clone(),
                        &mut out,
                        ui,
                    )?;
                    w += run;
                    i += run;
                }
            }
        }
        Ok(())
    })?;
    let (empty, undefined) = (out.empty_queries, out.undefined_scores);
    let results = out.finish()?;
    Summary {
        queries: queries.len(),
        documents: n_train,
        k,
        metric: metric.to_string(),
        score: score_name(metric),
        queries_without_known_words: empty,
        undefined_scores: undefined,
        seconds: t0.elapsed().as_secs_f64(),
        output: args.search.output.clone(),
        results: (ui.json && args.search.output.is_none()).then_some(results),
    }
    .print(ui)
}
