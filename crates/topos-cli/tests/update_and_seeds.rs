//! End-to-end tests of `topos update` (a model continued on new documents, new words appended;
//! issue 24 part 4) and `topos train --seed-words` (topics nudged towards given words; part 3).

mod common;
use common::*;

use std::path::Path;
use topos_model::TopicModel;

const OLD: [&str; 3] = [
    "apple banana cherry grape lemon mango orange peach plum melon",
    "engine wheel brake clutch piston gear axle tire motor chassis",
    "violin piano cello flute oboe drum harp trumpet viola guitar",
];
/// A theme the old corpus never saw: every word is new to the model.
const NEW: &str = "granite basalt quartz marble slate shale chalk flint gneiss schist";

/// `docs` documents of 30 words, document i from theme i mod the number of themes, each using
/// all ten of its theme's words (steps of 3 through 10 words), written to `dir/NAME.txt`.
fn write_docs(
    dir: &Path,
    name: &str,
    themes: &[&str],
    docs: usize,
    salt: usize,
) -> std::path::PathBuf {
    let mut text = String::new();
    for i in 0..docs {
        let words: Vec<&str> = themes[i % themes.len()].split(' ').collect();
        let doc: Vec<&str> = (0..30)
            .map(|j| words[(i * 7 + j * 3 + salt) % words.len()])
            .collect();
        text.push_str(&doc.join(" "));
        text.push('\n');
    }
    let p = dir.join(format!("{name}.txt"));
    std::fs::write(&p, text).unwrap();
    p
}

/// The topic whose top words are most of `theme`'s, and how many of its top 10 they are.
fn best_topic_for(model: &TopicModel, theme: &str) -> (usize, usize) {
    let report = topos_model::summarize(model, 10);
    report
        .topics
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let hits = t
                .top_words
                .iter()
                .filter(|w| theme.split(' ').any(|x| x == w.word))
                .count();
            (k, hits)
        })
        .max_by_key(|&(k, hits)| (hits, std::cmp::Reverse(k)))
        .unwrap()
}

fn train(corpus: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "train",
        s(corpus),
        "-k",
        "4",
        "--iters",
        "40",
        "--alpha",
        "0.1",
        "--device",
        "cpu",
        "-o",
        s(out),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    json(&args)
}

#[test]
fn update_continues_a_model_on_new_documents_and_words() {
    let dir = tempfile::tempdir().unwrap();
    let old_corpus = prepare_text(
        &write_docs(dir.path(), "old", &OLD, 300, 0),
        &dir.path().join("old.tcorp"),
        "0.1",
        &[],
    );
    let mut themes = OLD.to_vec();
    themes.push(NEW);
    let new_corpus = prepare_text(
        &write_docs(dir.path(), "new", &themes, 400, 1),
        &dir.path().join("new.tcorp"),
        "0.1",
        &[],
    );
    let old_path = dir.path().join("old.tmod");
    train(&old_corpus, &old_path, &[]);
    let old = TopicModel::read(&old_path).unwrap();

    let updated_path = dir.path().join("updated.tmod");
    let summary = json(&[
        "update",
        s(&old_path),
        s(&new_corpus),
        "-o",
        s(&updated_path),
        "--iters",
        "30",
        "--device",
        "cpu",
        "--doc-topics",
        "--quiet",
    ]);
    let heldout = summary["heldout_ll"].as_f64().unwrap();
    assert!(heldout < 0.0, "{summary}");
    // Its corpus (the new documents over the updated vocabulary) is written beside it, where
    // eval and similar find it: eval gives the run's held-out value.
    let union = dir.path().join("updated.tcorp");
    assert!(union.exists());
    let eval = json(&["eval", s(&updated_path), "--quiet"]);
    assert_eq!(
        eval["heldout_ll_per_token"].as_f64(),
        Some(heldout),
        "{eval}"
    );
    let near = json(&[
        "similar",
        s(&updated_path),
        "--doc",
        "0",
        "-k",
        "3",
        "--quiet",
    ]);
    assert!(!near.to_string().is_empty());
    let updated = TopicModel::read(&updated_path).unwrap();
    // The model's words keep their ids; the new theme's words are appended.
    let (ov, uv) = (old.vocab.words(), updated.vocab.words());
    assert_eq!(&uv[..ov.len()], ov);
    let mut appended: Vec<&str> = uv[ov.len()..].iter().map(String::as_str).collect();
    appended.sort_unstable();
    let mut expected: Vec<&str> = NEW.split(' ').collect();
    expected.sort_unstable();
    assert_eq!(appended, expected);
    // Every old count is still there, and the new documents' tokens were added.
    for w in 0..ov.len() as u32 {
        for (o, u) in old.word_row(w).iter().zip(updated.word_row(w)) {
            assert!(u >= o, "word {w}: {u} < {o}");
        }
    }
    let new_tokens = topos_corpus::Corpus::open(&new_corpus)
        .unwrap()
        .train()
        .num_tokens();
    assert_eq!(
        updated.topic_totals.iter().sum::<u64>(),
        old.topic_totals.iter().sum::<u64>() + new_tokens
    );
    // The spare topic took the new theme, and the old themes stayed where they were.
    let (_, hits) = best_topic_for(&updated, NEW);
    assert!(
        hits >= 8,
        "the new theme is one topic: {hits} of its words in the top 10"
    );
    for theme in OLD {
        assert_eq!(best_topic_for(&updated, theme), best_topic_for(&old, theme));
    }
    // The model records the model's priors and the corpus's tokenizer; infer reads it.
    assert_eq!(updated.hyper, old.hyper);
    assert!(updated.tokenizer.is_some());

    // Refusals: the model itself as the output, an output whose corpus would overwrite the
    // new corpus, a missing corpus.
    fails(
        &["update", s(&old_path), s(&new_corpus), "-o", s(&old_path)],
        "is the model being updated",
    );
    fails(
        &[
            "update",
            s(&old_path),
            s(&new_corpus),
            "-o",
            s(&dir.path().join("new.tmod")),
        ],
        "choose another output name",
    );
    fails(
        &[
            "update",
            s(&old_path),
            s(&dir.path().join("none.tcorp")),
            "-o",
            s(&dir.path().join("x.tmod")),
        ],
        "none.tcorp",
    );
    // An update that fails once its corpus is written (here: fixed counts are refused on a
    // GPU) replaces neither file: the earlier update's corpus keeps its bytes, a new output's
    // corpus never appears, and no temporary is left.
    let union_before = std::fs::read(&union).unwrap();
    let model_before = std::fs::read(&updated_path).unwrap();
    for out in [updated_path.clone(), dir.path().join("failed.tmod")] {
        fails(
            &[
                "update",
                s(&old_path),
                s(&new_corpus),
                "-o",
                s(&out),
                "--device",
                "cuda",
                "--quiet",
            ],
            "cpu only",
        );
    }
    assert_eq!(std::fs::read(&union).unwrap(), union_before);
    assert_eq!(std::fs::read(&updated_path).unwrap(), model_before);
    assert!(!dir.path().join("failed.tcorp").exists());
    assert!(!dir.path().join("failed.tmod").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporaries left: {leftovers:?}");
    // Reproducible: the same update twice gives the same bytes, on any thread count.
    let again = dir.path().join("again.tmod");
    std::fs::remove_file(topos_model::doc_topics_path(&updated_path)).unwrap();
    ok(&[
        "update",
        s(&old_path),
        s(&new_corpus),
        "-o",
        s(&again),
        "--iters",
        "30",
        "--threads",
        "1",
        "--device",
        "cpu",
        "--quiet",
    ]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&updated_path).unwrap()
    );
}

#[test]
fn seed_words_pull_their_topics() {
    let dir = tempfile::tempdir().unwrap();
    let mut themes = OLD.to_vec();
    themes.push(NEW);
    let corpus = prepare_text(
        &write_docs(dir.path(), "all", &themes, 400, 2),
        &dir.path().join("all.tcorp"),
        "0.1",
        &[],
    );
    // Each theme's first two words seeded in a topic of our choosing.
    let seeds = dir.path().join("seeds.toml");
    std::fs::write(
        &seeds,
        "[[topic]]\nid = 3\nwords = [\"apple\", \"banana\"]\n\n[[topic]]\nid = 0\nwords = [\"engine\", \"wheel\"]\n\n[[topic]]\nid = 2\nwords = [\"violin\", \"piano\"]\n\n[[topic]]\nid = 1\nwords = [\"granite\", \"basalt\"]\n",
    )
    .unwrap();
    let seeded_path = dir.path().join("seeded.tmod");
    train(&corpus, &seeded_path, &["--seed-words", s(&seeds)]);
    let seeded = TopicModel::read(&seeded_path).unwrap();
    for (theme, topic) in [(OLD[0], 3), (OLD[1], 0), (OLD[2], 2), (NEW, 1)] {
        let (k, hits) = best_topic_for(&seeded, theme);
        assert_eq!(k, topic, "{theme}: its topic is the seeded one");
        assert!(
            hits >= 8,
            "{theme}: {hits} of its words in topic {k}'s top 10"
        );
    }
    // Without seeds the themes land wherever the chain puts them: the seeds made the choice.
    let plain_path = dir.path().join("plain.tmod");
    train(&corpus, &plain_path, &[]);
    let plain = TopicModel::read(&plain_path).unwrap();
    let places: Vec<usize> = [OLD[0], OLD[1], OLD[2], NEW]
        .iter()
        .map(|t| best_topic_for(&plain, t).0)
        .collect();
    assert_ne!(places, vec![3, 0, 2, 1]);

    // Bad seed files: one line naming the problem, nothing written.
    let out = dir.path().join("bad.tmod");
    for (text, needle) in [
        (
            "[[topic]]\nid = 9\nwords = [\"apple\"]\n",
            "topic 9 is not below K = 4",
        ),
        (
            "[[topic]]\nid = 0\nwords = [\"apples\", \"kiwi\"]\n",
            "apples, kiwi",
        ),
        ("[[topic]\n", "seed words"),
    ] {
        std::fs::write(&seeds, text).unwrap();
        fails(
            &[
                "train",
                s(&corpus),
                "-k",
                "4",
                "-o",
                s(&out),
                "--seed-words",
                s(&seeds),
            ],
            needle,
        );
    }
    assert!(!out.exists());

    // A seeded run's checkpoint records its seeds: resuming without them is refused.
    std::fs::write(&seeds, "[[topic]]\nid = 1\nwords = [\"granite\"]\n").unwrap();
    let ckpt = dir.path().join("seeded.ckpt");
    let args = [
        "train",
        s(&corpus),
        "-k",
        "4",
        "--iters",
        "400",
        "--device",
        "cpu",
        "-o",
        s(&out),
        "--checkpoint-every",
        "5",
        "--checkpoint",
        s(&ckpt),
        "--seed-words",
        s(&seeds),
        "--quiet",
    ];
    kill_at_first_checkpoint(&args, &ckpt);
    fails(
        &[
            "train",
            s(&corpus),
            "-k",
            "4",
            "--iters",
            "400",
            "--device",
            "cpu",
            "-o",
            s(&out),
            "--checkpoint",
            s(&ckpt),
            "--resume",
        ],
        "same --seed-words file",
    );
    // Seeds and learned priors together are refused for now.
    fails(
        &[
            "train",
            s(&corpus),
            "-k",
            "4",
            "-o",
            s(&out),
            "--seed-words",
            s(&seeds),
            "--optimize-priors",
            "5",
        ],
        "cannot be combined with --optimize-priors",
    );
}
