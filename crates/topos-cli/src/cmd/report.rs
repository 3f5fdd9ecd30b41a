//! `topos report`: what a model learned as one self-contained HTML page (intertopic map,
//! λ-relevance bars, saliency, example documents, convergence), or with `--ldavis-json` the
//! LDAvis data format. The computation is `topos-report`'s; this module reads the inputs and
//! writes the file atomically.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use topos_model::{DocTopics, TopicModel};
use topos_report::{
    html, plot, top_documents, topic_frequencies, ExampleDoc, ReportExtras, Vis, VisOptions,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file.
    pub model: PathBuf,
    /// Output file: the HTML page (or the JSON with --ldavis-json).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Write the LDAvis/pyLDAvis data format (JSON) instead of the page.
    #[arg(long)]
    pub ldavis_json: bool,
    /// Training log (topos train --log) for the convergence curve; repeatable.
    #[arg(long = "log")]
    pub logs: Vec<PathBuf>,
    /// The corpus the model was trained on, for the example documents' words and input records
    /// (default: the model path with the extension .tcorp, when it exists).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// The input text the corpus was prepared from (one document per line): example documents
    /// are shown as their source lines.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// The source is JSON Lines: show each document's text from this field, as `prepare
    /// --text-field` read it (without it, a JSON source's lines are shown whole, with a warning).
    #[arg(long, requires = "source")]
    pub text_field: Option<String>,
    /// Words per bar chart (LDAvis's R).
    #[arg(long, default_value_t = 30)]
    pub terms: usize,
    /// The relevance λ the page opens with.
    #[arg(long, default_value_t = 0.6)]
    pub lambda: f64,
    /// Example documents per topic (needs the model's .doctopics side file).
    #[arg(long, default_value_t = 5)]
    pub docs: usize,
}

use super::check_output;

/// Writes `bytes` to `path` under a temporary name, then renames it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = topos_io::AtomicFile::create(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(bytes)?;
    f.commit()?;
    Ok(())
}

/// The lines `wanted` (sorted, distinct, 0-based) of a text file, cut to `max_chars`
/// characters: read as `prepare` reads its input (gzip recognised by its magic bytes, `\r\n`
/// ends), so the very file a corpus was prepared from works. A file with fewer lines than the
/// last one wanted is not the corpus's source and is refused; bytes that are not UTF-8 are
/// shown as U+FFFD, with a warning.
fn source_lines(
    path: &Path,
    wanted: &[u64],
    max_chars: usize,
    text_field: Option<&str>,
) -> Result<Vec<(u64, String)>> {
    let counter = topos_corpus::readers::ByteCounter::default();
    let mut reader = topos_corpus::readers::LineReader::open(path, &counter)
        .with_context(|| format!("cannot read the source text {}", path.display()))?;
    let mut out = Vec::new();
    let mut next = wanted.iter().peekable();
    let mut line = Vec::new();
    let mut replaced = 0usize;
    let mut json_lines = 0usize;
    let mut field_text = String::new();
    let mut i = 0u64;
    while let Some(&&want) = next.peek() {
        if !reader.next_line(&mut line)? {
            anyhow::bail!(
                "--source {} has {i} lines, but the corpus's documents come from line {} of its input: give the text file the corpus was prepared from",
                path.display(),
                wanted.last().map_or(0, |w| w + 1)
            );
        }
        if i == want {
            let text = String::from_utf8_lossy(&line);
            if let std::borrow::Cow::Owned(_) = text {
                replaced += 1;
            }
            let shown = match text_field {
                Some(_) if text.trim().is_empty() => String::new(),
                Some(field) => {
                    topos_corpus::readers::text::json_text_field(&text, field, &mut field_text)
                        .map_err(|e| {
                            anyhow::anyhow!("--source {}: line {}: {e}", path.display(), i + 1)
                        })?;
                    cut(&field_text, max_chars)
                }
                None => {
                    json_lines +=
                        usize::from(topos_corpus::readers::text::looks_like_json_object(&text));
                    cut(&text, max_chars)
                }
            };
            out.push((want, shown));
            next.next();
        }
        i += 1;
    }
    if json_lines > 0 {
        eprintln!(
            "warning: {json_lines} of the lines shown from {} are JSON objects, shown whole: give --text-field NAME (the field prepare read) to show their text",
            path.display()
        );
    }
    if replaced > 0 {
        eprintln!(
            "warning: {replaced} of the lines shown from {} are not UTF-8; their invalid bytes show as U+FFFD",
            path.display()
        );
    }
    Ok(out)
}

fn cut(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let mut inputs = vec![
        ("the model", Some(args.model.as_path())),
        ("the corpus", args.corpus.as_deref()),
        ("the source", args.source.as_deref()),
    ];
    inputs.extend(args.logs.iter().map(|l| ("a log", Some(l.as_path()))));
    check_output(&args.output, &inputs)?;
    if !(0.0..=1.0).contains(&args.lambda) {
        bail!("--lambda must be between 0 and 1, got {}", args.lambda);
    }
    if args.terms == 0 {
        bail!("--terms must be at least 1");
    }
    let start = std::time::Instant::now();
    let (model, checksum) = TopicModel::read_with_checksum(&args.model)?;
    let logs = super::plot::read_logs(&args.logs)?;
    let side = topos_model::doc_topics_path(&args.model);
    let doc_topics = if side.exists() {
        Some(DocTopics::read_for_model(&args.model, checksum)?)
    } else {
        None
    };
    let corpus = match &args.corpus {
        Some(p) => Some(super::eval::corpus_for(&args.model, &model, Some(p))?),
        None if args.model.with_extension("tcorp").exists() => {
            super::eval::corpus_for(&args.model, &model, None).ok()
        }
        None => None,
    };
    if args.source.is_some() && corpus.is_none() {
        bail!("--source needs the corpus (--corpus) to know which line each document came from");
    }
    let topic_freq = match &doc_topics {
        Some(a) => topic_frequencies(a, &topos_report::vis::alphas(&model)),
        None => model.topic_totals.iter().map(|&n| n as f64).collect(),
    };
    let vis = Vis::prepare(
        &model,
        topic_freq,
        VisOptions {
            terms: args.terms,
            lambda_step: 0.01,
        },
    );
    if args.ldavis_json {
        let json = vis.ldavis_json(&model);
        write_atomic(&args.output, serde_json::to_string(&json)?.as_bytes())?;
        ui.written(
            serde_json::json!({
                "output": args.output.display().to_string(),
                "format": "ldavis-json",
                "topics": model.num_topics(),
                "seconds": start.elapsed().as_secs_f64(),
            }),
            format!(
                "wrote the LDAvis data of {} topics to {} in {:.1} s",
                model.num_topics(),
                args.output.display(),
                start.elapsed().as_secs_f64()
            ),
        );
        return Ok(());
    }
    let (docs, docs_note) = match &doc_topics {
        None => (
            None,
            "No example documents: the model has no .doctopics side file (train with --doc-topics)."
                .to_string(),
        ),
        Some(a) => {
            if let Some(c) = &corpus {
                if c.train().len() != a.len() {
                    bail!(
                        "the corpus has {} training documents but the side file {} has {}",
                        c.train().len(),
                        side.display(),
                        a.len()
                    );
                }
            }
            let top = top_documents(a, &topos_report::vis::alphas(&model), args.docs, 5);
            let mut wanted: Vec<u64> = Vec::new();
            if let Some(c) = &corpus {
                wanted = top.iter().flatten().map(|&(d, _)| c.train_ids()[d]).collect();
                wanted.sort_unstable();
                wanted.dedup();
            }
            let lines = match &args.source {
                Some(p) => source_lines(p, &wanted, 400, args.text_field.as_deref())?,
                None => Vec::new(),
            };
            let note = match (&args.source, &corpus) {
                (Some(p), _) => format!("Documents are shown as their lines of {}.", p.display()),
                (None, Some(_)) => "Documents are shown as their words in the corpus (after tokenizing and pruning); pass --source with the input text to show its lines.".to_string(),
                (None, None) => "Documents are shown by number: the corpus was not found (pass --corpus).".to_string(),
            };
            let docs = top
                .iter()
                .map(|list| {
                    list.iter()
                        .map(|&(d, share)| {
                            let source_index = corpus.as_ref().map(|c| c.train_ids()[d]);
                            let text = match (source_index, &corpus) {
                                (Some(i), _) if args.source.is_some() => lines
                                    .binary_search_by_key(&i, |l| l.0)
                                    .map_or_else(|_| String::new(), |j| lines[j].1.clone()),
                                (_, Some(c)) => {
                                    let words = c.train().doc(d);
                                    let shown: Vec<&str> =
                                        words.iter().take(60).map(|&w| c.vocab().word(w)).collect();
                                    let mut t = shown.join(" ");
                                    if words.len() > 60 {
                                        t.push_str(" …");
                                    }
                                    t
                                }
                                _ => String::new(),
                            };
                            ExampleDoc {
                                doc: d,
                                source_index,
                                share,
                                text,
                            }
                        })
                        .collect()
                })
                .collect();
            (Some(docs), note)
        }
    };
    let p = &model.provenance;
    let mut facts = vec![format!(
        "{} topics over {} words",
        model.num_topics(),
        model.num_words()
    )];
    if model.privacy.is_none() {
        facts.push(format!("{} documents, {} tokens", p.num_docs, p.num_tokens));
    }
    facts.push(format!("{} for {} iterations", p.algorithm, p.iterations));
    facts.push(format!(
        "α = {}, β = {}",
        model.hyper.alpha, model.hyper.beta
    ));
    facts.push(topos_model::privacy_line(model.privacy.as_ref()));
    let extras = ReportExtras {
        title: args
            .model
            .file_name()
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned()),
        facts,
        docs,
        docs_note,
        convergence_svg: (!logs.is_empty()).then(|| plot::convergence_svg(&logs)),
        lambda: args.lambda,
    };
    let page = html::render(&model, &vis, &extras);
    write_atomic(&args.output, page.as_bytes())?;
    ui.written(
        serde_json::json!({
            "output": args.output.display().to_string(),
            "format": "html",
            "topics": model.num_topics(),
            "bytes": page.len(),
            "seconds": start.elapsed().as_secs_f64(),
        }),
        format!(
            "wrote the report of {} topics to {} ({:.1} MB) in {:.1} s",
            model.num_topics(),
            args.output.display(),
            page.len() as f64 / 1e6,
            start.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}
