//! The model file as a contract: every released format version stays readable (checked-in
//! fixtures, as tantivy keeps one index per released version), the same model always gives the
//! same bytes, and every kind of bad file is refused with a one-line error instead of a panic.

use std::path::{Path, PathBuf};
use topos_corpus::Vocabulary;
use topos_io::ByteWriter;
use topos_model::file::{DOC_TOPICS_VERSION, MODEL_VERSION};
use topos_model::{
    doc_topics_path, DocTopics, Guarantee, Hyperparameters, Provenance, TopicModel,
    DOC_TOPICS_KIND, MODEL_KIND,
};
use topos_privacy::Composition;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The tiny model stored in `tests/fixtures/v1.tmod`: 8 words (one not ASCII), 3 topics, a word
/// with no counts and a word in every topic.
fn fixture_model() -> TopicModel {
    let words = [
        "apple", "banana", "café", "delta", "echo", "fig", "grape", "hotel",
    ];
    let vocab = Vocabulary::new(words.map(String::from).into());
    let hyper = Hyperparameters::new(3, Some(0.25), Some(0.05)).unwrap();
    #[rustfmt::skip]
    let counts = vec![
        12, 0, 1,
        0, 7, 0,
        3, 3, 3,
        0, 0, 9,
        0, 0, 0,
        5, 0, 0,
        0, 2, 4,
        1, 0, 0,
    ];
    let provenance = Provenance {
        algorithm: "cgs".into(),
        iterations: 100,
        seed: 7,
        corpus_checksum: 0x0123_4567_89ab_cdef,
        num_docs: 4,
        num_tokens: 50,
        sampler_settings: Default::default(),
    };
    TopicModel::from_counts(vocab, hyper, counts, provenance)
}

/// The document-topic counts stored in `tests/fixtures/v1.tmod.doctopics` (4 documents, one
/// empty).
fn fixture_doc_topics() -> DocTopics {
    let mut a = DocTopics::new(3);
    a.push_dense(&[12, 0, 5]);
    a.push_dense(&[0, 0, 0]);
    a.push_dense(&[9, 10, 0]);
    a.push_dense(&[0, 2, 12]);
    a
}

/// The tokenizer options recorded in `tests/fixtures/v3-tokenizer.tmod` and `v3-private.tmod`:
/// stemmed, an extra stop word and a minimum length of 2.
fn fixture_tokenizer() -> topos_corpus::TokenizerSpec {
    let opts = topos_corpus::TokenizerOptions {
        stem: true,
        min_len: 2,
        ..Default::default()
    };
    let mut spec = opts.spec().unwrap();
    spec.extra_stopwords = vec!["etc".into()];
    // The fixtures were written when these options recorded tokenizer rules version 1.
    spec.version = 1;
    spec
}

/// The guarantee recorded in `tests/fixtures/v2-private.tmod`.
fn fixture_guarantee() -> Guarantee {
    Guarantee::discrete_laplace(1.0, Composition::Sequential, 101, 200.0).with_max_doc_tokens(200)
}

/// Rewrites the fixtures of the current version. A released version's fixture must never change:
/// run this only when adding the fixture of a new version (then keep the old files).
#[test]
#[ignore = "writes tests/fixtures; run with --ignored only when adding a format version"]
fn regenerate_v3_fixtures() {
    assert_eq!(MODEL_VERSION, 3, "the writer no longer writes version 3");
    fixture_model().write(&fixture("v3.tmod")).unwrap();
    fixture_model()
        .with_tokenizer(Some(fixture_tokenizer()))
        .write(&fixture("v3-tokenizer.tmod"))
        .unwrap();
    fixture_model()
        .with_privacy(fixture_guarantee())
        .with_tokenizer(Some(fixture_tokenizer()))
        .write(&fixture("v3-private.tmod"))
        .unwrap();
}

#[test]
fn reads_the_checked_in_v1_model() {
    let path = fixture("v1.tmod");
    let m = TopicModel::read(&path).unwrap();
    assert_eq!(m, fixture_model());
    // Spot checks independent of the helper, in case both drift together.
    assert_eq!(m.vocab.word(2), "café");
    assert_eq!(m.hyper.num_topics, 3);
    assert_eq!(
        (m.hyper.alpha.symmetric_value().unwrap(), m.hyper.beta),
        (0.25, 0.05)
    );
    assert_eq!(m.word_row(2), &[3, 3, 3]);
    assert_eq!(m.word_row(4), &[0, 0, 0]);
    assert_eq!(m.topic_totals, vec![21, 12, 17]);
    assert_eq!(m.provenance.algorithm, "cgs");
    assert_eq!(m.provenance.corpus_checksum, 0x0123_4567_89ab_cdef);
    assert_eq!(m.privacy, None);

    let a = DocTopics::read(&doc_topics_path(&path)).unwrap();
    assert_eq!(a, fixture_doc_topics());
    assert_eq!(a.row(3), (&[1u16, 2][..], &[2u32, 12][..]));
    // Version 1 side files record no model: accepted beside any.
    assert_eq!(DocTopics::read_for_model(&path, 12345).unwrap(), a);
}

/// Version 2 of the side file records its model's checksum: read beside that model, refused
/// beside another.
#[test]
fn reads_the_checked_in_v2_side_file_only_beside_its_model() {
    let path = fixture("v2.tmod");
    let (_, sum) = TopicModel::read_with_checksum(&path).unwrap();
    let a = DocTopics::read_for_model(&path, sum).unwrap();
    assert_eq!(a, fixture_doc_topics());
    let (_, other) = TopicModel::read_with_checksum(&fixture("v2-private.tmod")).unwrap();
    let msg = DocTopics::read_for_model(&path, other)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("another model") && !msg.contains('\n'),
        "{msg}"
    );
}

/// A model with a symmetric α is still written as version 3, so the writer must reproduce the v3
/// fixtures byte for byte: a change to these bytes is a format change and needs a new version.
#[test]
fn current_writer_reproduces_the_fixture_bytes() {
    assert_eq!(MODEL_VERSION, 5);
    let m = fixture_model();
    assert_eq!(topos_model::file::model_version(&m.hyper, &m.provenance), 3);
    assert_eq!(DOC_TOPICS_VERSION, 2);
    let on_disk = std::fs::read(fixture("v3.tmod")).unwrap();
    assert_eq!(fixture_model().to_file_bytes().unwrap(), on_disk);
    let on_disk = std::fs::read(fixture("v3-tokenizer.tmod")).unwrap();
    assert_eq!(
        fixture_model()
            .with_tokenizer(Some(fixture_tokenizer()))
            .to_file_bytes()
            .unwrap(),
        on_disk
    );
    let on_disk = std::fs::read(fixture("v3-private.tmod")).unwrap();
    assert_eq!(
        fixture_model()
            .with_privacy(fixture_guarantee())
            .with_tokenizer(Some(fixture_tokenizer()))
            .to_file_bytes()
            .unwrap(),
        on_disk
    );
    // Version 3 is version 2 and a tokenizer section: the v2 files' payloads plus one byte.
    {
        let (a, b) = (
            std::fs::read(fixture("v3.tmod")).unwrap(),
            std::fs::read(fixture("v2.tmod")).unwrap(),
        );
        assert_eq!(
            &a[topos_io::HEADER_LEN..a.len() - 1],
            &b[topos_io::HEADER_LEN..]
        );
        assert_eq!(a.last(), Some(&0));
    }
    let m = TopicModel::read(&fixture("v3-private.tmod")).unwrap();
    assert_eq!(m.tokenizer, Some(fixture_tokenizer()));
    assert_eq!(m.privacy, Some(fixture_guarantee()));
    let on_disk = std::fs::read(fixture("v2.tmod.doctopics")).unwrap();
    let (_, sum) = TopicModel::read_with_checksum(&fixture("v2.tmod")).unwrap();
    assert_eq!(fixture_doc_topics().to_file_bytes(sum).unwrap(), on_disk);
}

/// The fixture model with an asymmetric α (as `--optimize-priors` learns it).
fn fixture_model_with_priors() -> TopicModel {
    let mut m = fixture_model().with_tokenizer(Some(fixture_tokenizer()));
    m.hyper.alpha = topos_model::Alpha::from_values(vec![0.1, 0.25, 0.625]).unwrap();
    m
}

/// Version 4 (an asymmetric α): the writer reproduces its fixture; the file is the v3 file of the
/// same counts with the mean α in the header and the priors section appended; it reads back
/// with every α_k; a priors section holding a symmetric α is refused (that model is version 3).
/// Regenerate the fixture with `TOPOS_BLESS=1` only for a deliberate format change.
#[test]
fn version_4_records_an_asymmetric_alpha() {
    let m = fixture_model_with_priors();
    assert_eq!(topos_model::file::model_version(&m.hyper, &m.provenance), 4);
    let bytes = m.to_file_bytes().unwrap();
    if std::env::var_os("TOPOS_BLESS").is_some() {
        std::fs::write(fixture("v4-priors.tmod"), &bytes).unwrap();
    }
    assert_eq!(bytes, std::fs::read(fixture("v4-priors.tmod")).unwrap());
    let back = TopicModel::read(&fixture("v4-priors.tmod")).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.hyper.alpha.values(), &[0.1, 0.25, 0.625]);
    assert_eq!(back.hyper.alpha.sum(), 0.975);

    // The v3 payload with the header's α replaced by the mean, then 1 and the three α_k.
    let mut v3 = fixture_model().with_tokenizer(Some(fixture_tokenizer()));
    v3.hyper.alpha = topos_model::Alpha::symmetric(3, 0.975 / 3.0);
    let v3 = v3.to_file_bytes().unwrap();
    let mut section = vec![1u8];
    for a in [0.1f64, 0.25, 0.625] {
        section.extend_from_slice(&a.to_le_bytes());
    }
    assert_eq!(
        &bytes[topos_io::HEADER_LEN..],
        [&v3[topos_io::HEADER_LEN..], &section[..]].concat()
    );

    // A v4 payload whose section holds equal values, or a bad flag: one-line refusals.
    let dir = tempfile::tempdir().unwrap();
    for (tail, want) in [
        (
            [1u8]
                .iter()
                .chain(&[0.3f64.to_le_bytes(); 3].concat())
                .copied()
                .collect::<Vec<_>>(),
            "symmetric",
        ),
        (
            [2u8]
                .iter()
                .chain(&[0.3f64.to_le_bytes(); 3].concat())
                .copied()
                .collect(),
            "flag is 2",
        ),
        (
            [1u8].iter().chain(&0.3f64.to_le_bytes()).copied().collect(),
            "alpha of a topic",
        ),
    ] {
        let payload = [&v3[topos_io::HEADER_LEN..], &tail[..]].concat();
        let mut file = topos_io::header(&MODEL_KIND, 4, &payload).to_vec();
        file.extend_from_slice(&payload);
        let path = dir.path().join("bad.tmod");
        std::fs::write(&path, file).unwrap();
        let msg = TopicModel::read(&path).unwrap_err().to_string();
        assert!(msg.contains(want) && !msg.contains('\n'), "{msg}");
    }
}

/// Version 2 is version 1 plus the privacy section: the same counts, with or without a
/// guarantee, and a v1 file is read as a model without one.
#[test]
fn reads_the_checked_in_v2_models() {
    let v1 = TopicModel::read(&fixture("v1.tmod")).unwrap();
    let plain = TopicModel::read(&fixture("v2.tmod")).unwrap();
    assert_eq!(plain, v1);
    assert_eq!(plain.privacy, None);
    let private = TopicModel::read(&fixture("v2-private.tmod")).unwrap();
    assert_eq!(private.word_topic, v1.word_topic);
    let g = private.privacy.clone().expect("the guarantee is read back");
    assert_eq!(g, fixture_guarantee());
    assert_eq!(
        (g.epsilon, g.delta, g.max_doc_tokens),
        (1.0, None, Some(200))
    );
    assert_eq!(g.accountant.releases, 101);
    let line = topos_model::privacy_line(private.privacy.as_ref());
    assert!(
        line.starts_with("privacy: ε = 1-differential privacy"),
        "{line}"
    );
    assert!(line.contains("capped at 200 tokens"), "{line}");
    assert!(topos_model::privacy_line(None).contains("none"));
    // Written again (as version 3), it reads back the same.
    let dir = tempfile::tempdir().unwrap();
    private.write(&dir.path().join("p.tmod")).unwrap();
    assert_eq!(
        TopicModel::read(&dir.path().join("p.tmod")).unwrap(),
        private
    );
    // A guarantee with the Rényi accountant and the noise scale (added to v2 as optional
    // fields) round-trips through a file exactly, awkward floats included.
    let g = fixture_guarantee()
        .with_renyi(1.0 + 10f64.powf(-3.0 + 181.0 / 64.0), 1e-6)
        .with_noise_scale(2.0f64.sqrt() * 1e3);
    let m = fixture_model().with_privacy(g.clone());
    m.write(&dir.path().join("r.tmod")).unwrap();
    let back = TopicModel::read(&dir.path().join("r.tmod")).unwrap();
    assert_eq!(back.privacy, Some(g));
    assert_eq!(back, m);
}

/// The privacy section is checked like the rest of the payload.
#[test]
fn refuses_a_bad_privacy_section() {
    let good = std::fs::read(fixture("v2.tmod")).unwrap();
    let base = &good[topos_io::HEADER_LEN..good.len() - 1];
    let with = |tail: &[u8]| {
        let mut p = base.to_vec();
        p.extend_from_slice(tail);
        rewrap(&MODEL_KIND, 2, &p)
    };
    let section = |json: &str| {
        let mut w = ByteWriter::new();
        w.u8(1);
        w.str(json);
        w.buf
    };
    let ok = serde_json::to_string(&fixture_guarantee()).unwrap();
    assert!(TopicModel::from_file_bytes(&with(&section(&ok)), Path::new("ok.tmod")).is_ok());
    let negative = ok.replace("\"epsilon\":1.0", "\"epsilon\":-1.0");
    assert_ne!(negative, ok);
    let zero = ok.replace("\"releases\":101", "\"releases\":0");
    let cap = ok.replace("\"max_doc_tokens\":200", "\"max_doc_tokens\":0");
    let spaced = ok.replace(',', ", ");
    // The Rényi accountant's fields: an order at or below 1, an order without δ, a bad scale.
    let renyi = serde_json::to_string(
        &fixture_guarantee()
            .with_renyi(12.25, 1e-6)
            .with_noise_scale(1234.5),
    )
    .unwrap();
    assert!(TopicModel::from_file_bytes(&with(&section(&renyi)), Path::new("r.tmod")).is_ok());
    let order_one = renyi.replace("\"renyi_order\":12.25", "\"renyi_order\":1.0");
    let no_delta = renyi.replace("\"delta\":1e-6", "\"delta\":null");
    let bad_scale = renyi.replace("\"noise_scale\":1234.5", "\"noise_scale\":0.0");
    assert!(order_one != renyi && no_delta != renyi && bad_scale != renyi);
    // The Gaussian mechanism's fields (issue 25): a ρ without δ, a non-positive ρ or L2
    // sensitivity.
    let gauss = serde_json::to_string(
        &topos_privacy::Guarantee::discrete_gaussian(1.0, 1e-6, 2, 12.0, 0.02)
            .with_noise_scale(84.5),
    )
    .unwrap();
    assert!(TopicModel::from_file_bytes(&with(&section(&gauss)), Path::new("g.tmod")).is_ok());
    let g_no_delta = gauss.replace("\"delta\":1e-6", "\"delta\":null");
    let g_rho = gauss.replace("\"zcdp_rho\":0.02", "\"zcdp_rho\":0.0");
    let g_l2 = gauss.replace("\"l2_sensitivity\":12.0", "\"l2_sensitivity\":-1.0");
    assert!(g_no_delta != gauss && g_rho != gauss && g_l2 != gauss);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            with(&section(&g_no_delta)),
            "zCDP accountant without a positive δ",
        ),
        (with(&section(&g_rho)), "zCDP ρ = 0 is not"),
        (with(&section(&g_l2)), "L2 sensitivity -1 is not"),
        (with(&section(&order_one)), "Rényi order 1 is not"),
        (with(&section(&no_delta)), "without a positive δ"),
        (with(&section(&bad_scale)), "noise scale 0 is not"),
        (with(&[]), "privacy section flag needs 1 bytes"),
        (with(&[2]), "privacy section flag is 2"),
        (with(&section("{}")), "privacy guarantee: missing field"),
        (with(&section(&negative)), "ε = -1 is not a positive"),
        (with(&section(&zero)), "zero releases"),
        (with(&section(&cap)), "capped at 0 tokens"),
        (with(&section(&spaced)), "canonical"),
        (with(&[0, 0]), "unexpected bytes after the privacy section"),
    ];
    for (bytes, expected) in cases {
        let msg = model_error(&bytes);
        assert!(msg.contains(expected), "expected {expected:?} in: {msg}");
    }
    // A guarantee that could not be read back is not written either.
    let mut bad = fixture_guarantee();
    bad.epsilon = f64::NAN;
    let e = fixture_model()
        .with_privacy(bad)
        .to_file_bytes()
        .unwrap_err();
    assert!(e.to_string().contains("not a positive finite"), "{e}");
}

#[test]
fn same_model_same_bytes_and_atomic_write() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.tmod"), dir.path().join("b.tmod"));
    fixture_model().write(&a).unwrap();
    TopicModel::read(&a).unwrap().write(&b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Overwriting in place leaves only the two files (no temporaries).
    fixture_model().write(&a).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// Reads `bytes` as a model file and returns the error message, which must be one line.
fn model_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.tmod");
    std::fs::write(&path, bytes).unwrap();
    let msg = TopicModel::read(&path)
        .expect_err("a bad file was accepted")
        .to_string();
    assert!(!msg.contains('\n'), "multi-line error: {msg}");
    assert!(
        msg.contains("bad.tmod"),
        "error does not name the file: {msg}"
    );
    msg
}

fn doc_topics_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.doctopics");
    std::fs::write(&path, bytes).unwrap();
    let msg = DocTopics::read(&path)
        .expect_err("a bad file was accepted")
        .to_string();
    assert!(!msg.contains('\n'), "multi-line error: {msg}");
    msg
}

#[test]
fn refuses_other_versions_naming_them() {
    for name in [
        "v1.tmod",
        "v2-private.tmod",
        "v3-private.tmod",
        "v1.tmod.doctopics",
        "v2.tmod.doctopics",
    ] {
        let good = std::fs::read(fixture(name)).unwrap();
        let (future, reads) = if name.ends_with(".tmod") {
            (6u32, "reads versions 1, 2, 3, 4, 5")
        } else {
            (3, "reads versions 1, 2")
        };
        for version in [0u32, future, 77] {
            let mut bytes = good.clone();
            bytes[8..12].copy_from_slice(&version.to_le_bytes());
            let msg = if name.ends_with(".tmod") {
                model_error(&bytes)
            } else {
                doc_topics_error(&bytes)
            };
            assert!(msg.contains(&format!("version {version}")), "{msg}");
            assert!(msg.contains(reads), "{msg}");
        }
    }
}

#[test]
fn refuses_damaged_and_foreign_files() {
    let good = std::fs::read(fixture("v1.tmod")).unwrap();
    assert!(model_error(&good[..good.len() - 7]).contains("truncated"));
    assert!(model_error(&good[..20]).contains("truncated"));
    assert!(model_error(&[]).contains("not a Topos model file"));
    for i in [40, good.len() / 2, good.len() - 1] {
        let mut flipped = good.clone();
        flipped[i] ^= 0x10;
        assert!(model_error(&flipped).contains("checksum"), "byte {i}");
    }
    let mut foreign = good.clone();
    foreign[..8].copy_from_slice(b"TOPOSCRP");
    assert!(model_error(&foreign).contains("not a Topos model file"));
    // The side file is not a model, and the model is not a side file.
    let side = std::fs::read(fixture("v1.tmod.doctopics")).unwrap();
    assert!(model_error(&side).contains("not a Topos model file"));
    assert!(doc_topics_error(&good).contains("not a Topos document-topic file"));
    let mut long = good;
    long.extend_from_slice(b"junk");
    assert!(model_error(&long).contains("trailing"));
    let missing = TopicModel::read(Path::new("/nonexistent/dir/m.tmod")).unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/dir/m.tmod"));
}

/// A version-1 model payload assembled by hand, to craft files that pass the checksum but break
/// the format's rules.
/// One word's counts: (claimed number of non-zeros if not the true one, (topic, count) pairs).
type Row = (Option<u32>, Vec<(u16, u32)>);

/// A change that breaks one rule of the format.
type Damage = fn(&mut Craft);

#[derive(Clone)]
struct Craft {
    k: u32,
    alpha: f64,
    beta: f64,
    vocab_len: Option<u32>,
    words: Vec<Vec<u8>>,
    rows: Vec<Row>,
    total: Option<u64>,
    trailing: Vec<u8>,
}

impl Craft {
    fn valid() -> Self {
        Self {
            k: 3,
            alpha: 0.1,
            beta: 0.01,
            vocab_len: None,
            words: ["a", "b", "c"].map(|w| w.as_bytes().to_vec()).into(),
            rows: vec![
                (None, vec![(0, 2), (2, 1)]),
                (None, vec![]),
                (None, vec![(1, 4)]),
            ],
            total: None,
            trailing: Vec::new(),
        }
    }

    fn file(&self) -> Vec<u8> {
        let mut w = ByteWriter::new();
        w.u32(self.k);
        w.f64(self.alpha);
        w.f64(self.beta);
        w.str("cgs");
        w.u32(1);
        w.u64(2);
        w.u64(3);
        w.u64(4);
        w.u64(5);
        w.u32(self.vocab_len.unwrap_or(self.words.len() as u32));
        for word in &self.words {
            w.u32(word.len() as u32);
            w.buf.extend_from_slice(word);
        }
        let sum = self
            .rows
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, c)| u64::from(c)))
            .sum();
        w.u64(self.total.unwrap_or(sum));
        for (nnz, pairs) in &self.rows {
            w.u32(nnz.unwrap_or(pairs.len() as u32));
            for &(t, c) in pairs {
                w.u16(t);
                w.u32(c);
            }
        }
        w.buf.extend_from_slice(&self.trailing);
        let mut bytes = topos_io::header(&MODEL_KIND, 1, &w.buf).to_vec();
        bytes.extend_from_slice(&w.buf);
        bytes
    }
}

#[test]
fn crafted_payload_is_read_when_valid() {
    let m = TopicModel::from_file_bytes(&Craft::valid().file(), Path::new("crafted.tmod")).unwrap();
    assert_eq!(m.word_row(0), &[2, 0, 1]);
    assert_eq!(m.word_row(2), &[0, 4, 0]);
    assert_eq!(m.topic_totals, vec![2, 4, 1]);
    assert_eq!(m.provenance.num_tokens, 5);
}

#[test]
fn refuses_structurally_invalid_files_with_a_good_checksum() {
    let cases: Vec<(&str, Damage)> = vec![
        ("number of topics must be between 2", |c| c.k = 1),
        ("number of topics must be between 2", |c| c.k = 70_000),
        ("alpha must be a positive", |c| c.alpha = -0.5),
        ("alpha must be a positive", |c| c.alpha = f64::NAN),
        ("beta must be a positive", |c| c.beta = 0.0),
        ("beta must be a positive", |c| c.beta = f64::INFINITY),
        ("vocabulary is empty", |c| {
            c.words.clear();
            c.rows.clear();
        }),
        ("does not fit", |c| c.vocab_len = Some(u32::MAX)),
        ("not UTF-8", |c| c.words[1] = vec![0xff, 0xfe]),
        ("appears twice", |c| c.words[2] = b"a".to_vec()),
        ("topic 3 is not below K = 3", |c| c.rows[2].1[0].0 = 3),
        ("strictly increasing", |c| {
            c.rows[0].1 = vec![(2, 1), (0, 2)]
        }),
        ("strictly increasing", |c| {
            c.rows[0].1 = vec![(1, 1), (1, 2)]
        }),
        ("zero count stored for topic 1", |c| c.rows[2].1[0].1 = 0),
        ("4 non-zero topics but K = 3", |c| c.rows[1].0 = Some(4)),
        ("needs", |c| c.rows[2].0 = Some(2)),
        ("sum to 7 but the file records 8", |c| c.total = Some(8)),
        ("unexpected bytes", |c| c.trailing = vec![0; 3]),
    ];
    for (expected, change) in cases {
        let mut c = Craft::valid();
        change(&mut c);
        let msg = model_error(&c.file());
        assert!(msg.contains("malformed Topos model file"), "{msg}");
        assert!(msg.contains(expected), "expected {expected:?} in: {msg}");
    }
}

fn doc_topics_file(k: u32, offsets: &[u64], topics: &[u16], counts: &[u32]) -> Vec<u8> {
    let mut w = ByteWriter::new();
    w.u32(k);
    w.u64(offsets.len() as u64 - 1);
    w.u64(topics.len() as u64);
    w.u64s(offsets);
    w.u16s(topics);
    w.u32s(counts);
    let mut bytes = topos_io::header(&DOC_TOPICS_KIND, 1, &w.buf).to_vec();
    bytes.extend_from_slice(&w.buf);
    bytes
}

#[test]
fn refuses_invalid_doc_topics_with_a_good_checksum() {
    let ok = doc_topics_file(3, &[0, 2, 3], &[0, 2, 1], &[1, 1, 5]);
    let (a, _) = DocTopics::from_file_bytes(&ok, Path::new("x")).unwrap();
    assert_eq!(a.row(1), (&[1u16][..], &[5u32][..]));
    let cases = [
        (
            doc_topics_file(3, &[1, 2, 3], &[0, 2, 1], &[1, 1, 5]),
            "offsets must run from 0",
        ),
        (
            doc_topics_file(3, &[0, 3, 3], &[0, 2, 1], &[1, 1, 5]),
            "strictly increasing",
        ),
        (
            doc_topics_file(3, &[0, 2, 1, 3], &[0, 2, 1], &[1, 1, 5]),
            "offsets decrease",
        ),
        (
            doc_topics_file(2, &[0, 2, 3], &[0, 2, 1], &[1, 1, 5]),
            "topic 2 is not below K = 2",
        ),
        (
            doc_topics_file(3, &[0, 2, 3], &[0, 2, 1], &[1, 0, 5]),
            "zero count",
        ),
        (
            doc_topics_file(1, &[0, 2, 3], &[0, 2, 1], &[1, 1, 5]),
            "number of topics",
        ),
    ];
    for (bytes, expected) in cases {
        let msg = doc_topics_error(&bytes);
        assert!(msg.contains(expected), "expected {expected:?} in: {msg}");
    }
    // Claimed sizes that the payload cannot hold are refused before allocating.
    let mut w = ByteWriter::new();
    w.u32(3);
    w.u64(u64::MAX / 4);
    w.u64(1);
    let mut bytes = topos_io::header(&DOC_TOPICS_KIND, 1, &w.buf).to_vec();
    bytes.extend_from_slice(&w.buf);
    assert!(doc_topics_error(&bytes).contains("do not match"));
}

/// Re-wraps a damaged payload with a correct header, so the parser itself meets the damage.
fn rewrap(kind: &topos_io::Kind, version: u32, payload: &[u8]) -> Vec<u8> {
    let mut bytes = topos_io::header(kind, version, payload).to_vec();
    bytes.extend_from_slice(payload);
    bytes
}

/// Every truncation and every single-bit flip of the fixtures' payloads, behind a valid
/// checksum: the readers must return (an error or, for a harmless flip, a valid model), never
/// panic, and what they accept must pass validation and re-encode to the same bytes.
#[test]
fn no_damage_to_the_payload_makes_a_reader_panic() {
    let path = Path::new("damaged.tmod");
    for (name, version) in [
        ("v1.tmod", 1u32),
        ("v2-private.tmod", 2),
        ("v3-private.tmod", 3),
    ] {
        let model = std::fs::read(fixture(name)).unwrap();
        let payload = &model[topos_io::HEADER_LEN..];
        let mut accepted = 0;
        for cut in 0..payload.len() {
            let bytes = rewrap(&MODEL_KIND, version, &payload[..cut]);
            let msg = TopicModel::from_file_bytes(&bytes, path)
                .unwrap_err()
                .to_string();
            assert!(!msg.contains('\n'), "{msg}");
        }
        for i in 0..payload.len() {
            for bit in 0..8 {
                let mut damaged = payload.to_vec();
                damaged[i] ^= 1 << bit;
                let bytes = rewrap(&MODEL_KIND, version, &damaged);
                if let Ok(m) = TopicModel::from_file_bytes(&bytes, path) {
                    m.validate().unwrap();
                    // The writer writes version 3: a v1 payload gains the empty privacy
                    // section, and every older payload the empty tokenizer section.
                    let mut expected = damaged.clone();
                    if version == 1 {
                        expected.push(0);
                    }
                    if version <= 2 {
                        expected.push(0);
                    }
                    assert_eq!(
                        &m.to_file_bytes().unwrap()[topos_io::HEADER_LEN..],
                        &expected[..]
                    );
                    accepted += 1;
                }
            }
        }
        // Flips in α, β, provenance, word spellings and the guarantee's text are legitimate
        // models; most flips are not.
        assert!(
            accepted > 0 && accepted < payload.len() * 8 / 2,
            "{name}: {accepted}"
        );
    }

    let side = std::fs::read(fixture("v1.tmod.doctopics")).unwrap();
    let payload = &side[topos_io::HEADER_LEN..];
    for cut in 0..payload.len() {
        let bytes = rewrap(&DOC_TOPICS_KIND, 1, &payload[..cut]);
        assert!(DocTopics::from_file_bytes(&bytes, path).is_err());
    }
    for i in 0..payload.len() {
        for bit in 0..8 {
            let mut damaged = payload.to_vec();
            damaged[i] ^= 1 << bit;
            let bytes = rewrap(&DOC_TOPICS_KIND, 1, &damaged);
            if let Ok((a, _)) = DocTopics::from_file_bytes(&bytes, path) {
                a.validate().unwrap();
            }
        }
    }
}

/// The fixture model trained with a sampler setting that changes the model (`--mh-steps 8`),
/// with a symmetric α or `fixture_model_with_priors`'s asymmetric one.
fn fixture_model_with_settings(priors: bool) -> TopicModel {
    let mut m = if priors {
        fixture_model_with_priors()
    } else {
        fixture_model().with_tokenizer(Some(fixture_tokenizer()))
    };
    m.provenance.algorithm = "mh".into();
    m.provenance.sampler_settings = [("mh_steps".to_string(), 8)].into();
    m
}

/// Version 5 (sampler settings): written only for a model with settings; the writer reproduces
/// its fixtures; the file is the v3 or v4 file of the same model with the priors flag (0 when
/// α is symmetric) and the settings section appended; it reads back with the settings (older
/// versions read with none, as the fixture tests above check); a section out of order, empty or
/// with a bad name is refused in one line. Regenerate the fixtures with `TOPOS_BLESS=1` only for
/// a deliberate format change.
#[test]
fn version_5_records_sampler_settings() {
    let settings_section = {
        let mut s = 1u32.to_le_bytes().to_vec();
        s.extend_from_slice(&8u32.to_le_bytes()); // str: length of "mh_steps"
        s.extend_from_slice(b"mh_steps");
        s.extend_from_slice(&8u32.to_le_bytes());
        s
    };
    for (priors, name) in [
        (false, "v5-settings.tmod"),
        (true, "v5-settings-priors.tmod"),
    ] {
        let m = fixture_model_with_settings(priors);
        assert_eq!(topos_model::file::model_version(&m.hyper, &m.provenance), 5);
        let bytes = m.to_file_bytes().unwrap();
        if std::env::var_os("TOPOS_BLESS").is_some() {
            std::fs::write(fixture(name), &bytes).unwrap();
        }
        assert_eq!(bytes, std::fs::read(fixture(name)).unwrap(), "{name}");
        let back = TopicModel::read(&fixture(name)).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.provenance.sampler_settings.get("mh_steps"), Some(&8));

        // The same model without settings, then the priors flag and the section.
        let mut plain = m.clone();
        plain.provenance.sampler_settings.clear();
        let old = plain.to_file_bytes().unwrap();
        let tail = if priors {
            settings_section.clone()
        } else {
            [&[0u8][..], &settings_section].concat()
        };
        assert_eq!(
            &bytes[topos_io::HEADER_LEN..],
            [&old[topos_io::HEADER_LEN..], &tail[..]].concat(),
            "{name}"
        );
    }

    // Malformed settings sections: one-line refusals.
    let plain = fixture_model().with_tokenizer(Some(fixture_tokenizer()));
    let v3 = plain.to_file_bytes().unwrap();
    let entry = |name: &str, value: u32| {
        let mut e = (name.len() as u32).to_le_bytes().to_vec();
        e.extend_from_slice(name.as_bytes());
        e.extend_from_slice(&value.to_le_bytes());
        e
    };
    let dir = tempfile::tempdir().unwrap();
    for (tail, want) in [
        (
            [&[0u8][..], &0u32.to_le_bytes()].concat(),
            "0 sampler settings",
        ),
        (
            [
                &[0u8][..],
                &2u32.to_le_bytes(),
                &entry("mh_steps", 8),
                &entry("a", 1),
            ]
            .concat(),
            "strictly increasing",
        ),
        (
            [&[0u8][..], &1u32.to_le_bytes(), &entry("Mh", 8)].concat(),
            "lower-case",
        ),
        (
            [
                &[0u8][..],
                &1u32.to_le_bytes(),
                &entry("mh_steps", 8),
                &[7u8][..],
            ]
            .concat(),
            "unexpected bytes after the sampler settings section",
        ),
        ([&[2u8][..], &1u32.to_le_bytes()].concat(), "flag is 2"),
    ] {
        let payload = [&v3[topos_io::HEADER_LEN..], &tail[..]].concat();
        let mut file = topos_io::header(&MODEL_KIND, 5, &payload).to_vec();
        file.extend_from_slice(&payload);
        let path = dir.path().join("bad.tmod");
        std::fs::write(&path, file).unwrap();
        let msg = TopicModel::read(&path).unwrap_err().to_string();
        assert!(msg.contains(want) && !msg.contains('\n'), "{want}: {msg}");
    }
}
