//! `topos export`: a corpus as plain text (one document per line, words separated by spaces), so
//! other LDA systems can be run on exactly the same documents and split for side-by-side
//! benchmarks.

use crate::ui::Ui;
use anyhow::{Context, Result};
use std::path::PathBuf;
use topos_corpus::{Corpus, Docs, Vocabulary};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus file.
    pub corpus: PathBuf,
    /// Output directory: train.txt, heldout.txt and vocab.txt are written there.
    #[arg(short, long)]
    pub output: PathBuf,
}

fn write_docs(path: &std::path::Path, docs: Docs<'_>, vocab: &Vocabulary) -> Result<()> {
    let mut f = topos_io::AtomicFile::create(path)?;
    let mut line = String::new();
    for doc in docs.iter() {
        line.clear();
        for (i, &w) in doc.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(vocab.word(w));
        }
        line.push('\n');
        f.write_all(line.as_bytes())?;
    }
    f.commit()?;
    Ok(())
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    let corpus = Corpus::open(&args.corpus)?;
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    if let Some(w) = corpus
        .vocab()
        .words()
        .iter()
        .find(|w| w.contains(char::is_whitespace) || w.is_empty())
    {
        anyhow::bail!("word {w:?} contains white space and cannot be exported as text");
    }
    write_docs(
        &args.output.join("train.txt"),
        corpus.train(),
        corpus.vocab(),
    )?;
    write_docs(
        &args.output.join("heldout.txt"),
        corpus.heldout(),
        corpus.vocab(),
    )?;
    let mut vocab = corpus.vocab().words().join("\n");
    vocab.push('\n');
    let mut f = topos_io::AtomicFile::create(&args.output.join("vocab.txt"))?;
    f.write_all(vocab.as_bytes())?;
    f.commit()?;
    ui.info(format!(
        "wrote train.txt, heldout.txt and vocab.txt to {}",
        args.output.display()
    ));
    Ok(())
}
