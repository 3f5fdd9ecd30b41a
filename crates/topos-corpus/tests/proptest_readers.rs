//! Property tests of every reader of this crate (issue 18, part 6): text lines, JSONL, UCI and
//! LDA-C inputs, vocabulary files, the `.tcorp` file, the tokenizer and its recorded options,
//! and the decoders. On arbitrary bytes and on structured mutations of valid files, a reader
//! never panics, never asks for an allocation beyond a bound set by its input's size (a length
//! field claiming 2^40 entries is refused, not allocated), and fails with a one-line message.
//!
//! The number of cases per test is explicit ([`topos_testkit::config`]) so `cargo test` stays
//! bounded; `PROPTEST_CASES=20000` runs the longer campaign (RELIABILITY.md).

use proptest::prelude::*;
use std::path::Path;
use topos_corpus::encoding::{DecodeStats, Encoding};
use topos_corpus::readers::{self, bags, text, ByteCounter, Decoder, InputFormat};
use topos_corpus::{
    prepare, Corpus, CorpusError, Language, OwnedDocs, PrepareOptions, PruneOptions, Segmenter,
    Tokenizer, TokenizerOptions, TokenizerSpec, Vocabulary,
};
use topos_testkit::{
    assert_one_line, bytes, config, mutated, text_bytes, within_allocation, CountingAlloc,
};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The largest single allocation a reader may ask for on an input of `len` bytes: I/O buffers
/// and a few copies of the input, never a size read from the input itself.
fn bound(len: usize) -> usize {
    (1 << 20) + 16 * len
}

const ENCODINGS: [Encoding; 6] = [
    Encoding::Utf8,
    Encoding::Utf8Lossy,
    Encoding::Latin1,
    Encoding::Windows1252,
    Encoding::Legacy(encoding_rs::GBK),
    Encoding::Legacy(encoding_rs::SHIFT_JIS),
];

/// Every document of a text input, or the error.
fn read_text(dir: &Path, name: &str, data: &[u8], format: InputFormat, enc: Encoding) -> usize {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    within_allocation(bound(data.len()), name, || {
        let run = || -> Result<usize, CorpusError> {
            let r = readers::resolve(&path, format, None)?;
            let decoder = Decoder {
                encoding: enc,
                ..Decoder::default()
            };
            let mut src = text::open(&r, "text", &ByteCounter::default(), &decoder)?;
            let mut doc = String::new();
            let mut n = 0;
            while src.next_doc(&mut doc)? {
                n += 1;
            }
            Ok(n)
        };
        match run() {
            Ok(n) => n,
            Err(e) => {
                assert_one_line(&e.to_string());
                0
            }
        }
    })
}

/// Every document of a bag-of-words input (`vocab` beside it), or the error.
fn read_bags(dir: &Path, name: &str, data: &[u8], vocab: &str, format: InputFormat) {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    let vocab_path = dir.join("vocab.txt");
    std::fs::write(&vocab_path, vocab).unwrap();
    within_allocation(bound(data.len() + vocab.len()), name, || {
        let run = || -> Result<u64, CorpusError> {
            let r = readers::resolve(&path, format, Some(&vocab_path))?;
            let (mut src, _) = bags::open(&r, &ByteCounter::default(), &Decoder::default())?;
            let mut doc = Vec::new();
            let mut n = 0;
            while src.next_doc(&mut doc)? {
                n += 1;
            }
            Ok(n)
        };
        if let Err(e) = run() {
            assert_one_line(&e.to_string());
        }
    });
}

/// A whole `prepare` of `data` under a 64 MiB memory limit: whatever the counts claim, it
/// finishes within the limit (or refuses, in one line).
fn prepare_within_limit(dir: &Path, name: &str, data: &[u8], vocab: &str) {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    std::fs::write(dir.join("vocab.txt"), vocab).unwrap();
    let out = dir.join("out.tcorp");
    let opts = PrepareOptions {
        vocab_file: Some(dir.join("vocab.txt")),
        prune: PruneOptions {
            min_df: 1,
            max_df: 1.0,
            max_vocab: None,
        },
        memory_limit: Some(64 << 20),
        ..PrepareOptions::default()
    };
    within_allocation(96 << 20, name, || {
        if let Err(e) = prepare(&path, &out, &opts, &mut |_| {}) {
            assert_one_line(&e.to_string());
        }
    });
}

const UCI: &str = "4\n3\n5\n1 1 2\n1 3 1\n3 2 5\n3 3 1\n4 1 7\n";
const LDAC: &str = "2 0:3 2:1\n0\n\n1 1:4\n3 0:1 1:1 2:9\n";
const VOCAB: &str = "alpha\nbeta\ngamma\n";
const JSONL: &str = "{\"id\": 1, \"text\": \"caf\\u00e9 one\", \"meta\": {\"text\": 3}}\n\n{\"text\": null}\n{\"text\": \"two words\", \"tags\": [1, 2.5, true]}\n";

fn valid_tcorp() -> Vec<u8> {
    let vocab = Vocabulary::new(
        ["apple", "banana", "cherry", "date"]
            .map(String::from)
            .into(),
    );
    let train: OwnedDocs = [&[0u32, 1, 0][..], &[2], &[0, 3, 3, 1]]
        .into_iter()
        .collect();
    let heldout: OwnedDocs = [&[1u32, 0][..], &[3]].into_iter().collect();
    let c = Corpus::from_parts(vocab, train, heldout).with_tokenizer(
        TokenizerOptions {
            stem: true,
            ..TokenizerOptions::default()
        }
        .spec()
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.tcorp");
    c.write(&p).unwrap();
    std::fs::read(p).unwrap()
}

/// The header of `bytes` recomputed for its (edited) payload: the checksum then passes, and the
/// structural validation is what must refuse.
fn resealed(bytes: &[u8]) -> Vec<u8> {
    if bytes.len() < 32 {
        return bytes.to_vec();
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let payload = &bytes[32..];
    let mut out = topos_io::header(&topos_corpus::file::KIND, version, payload).to_vec();
    out.extend_from_slice(payload);
    out
}

fn open_tcorp(dir: &Path, data: &[u8]) {
    let p = dir.join("x.tcorp");
    std::fs::write(&p, data).unwrap();
    within_allocation(bound(data.len()), "tcorp", || match Corpus::open(&p) {
        Ok(c) => {
            // Whatever opened is usable to the end.
            let _ = (
                c.train().num_tokens(),
                c.heldout().num_tokens(),
                c.checksum(),
            );
            let _ = c.tokenizer().map(TokenizerSpec::describe);
        }
        Err(e) => assert_one_line(&e.to_string()),
    });
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn lines_any_bytes(data in text_bytes(600), e in 0..4usize) {
        let dir = tempfile::tempdir().unwrap();
        read_text(dir.path(), "d.txt", &data, InputFormat::Lines, ENCODINGS[e]);
    }

    #[test]
    fn lines_gzip_mutated(data in mutated(gz(b"one line\ntwo caf\xc3\xa9\n\nthree\n"))) {
        let dir = tempfile::tempdir().unwrap();
        read_text(dir.path(), "d.txt.gz", &data, InputFormat::Lines, Encoding::Utf8);
    }

    #[test]
    fn jsonl_any_bytes(data in text_bytes(600), e in 0..4usize) {
        let dir = tempfile::tempdir().unwrap();
        read_text(dir.path(), "d.jsonl", &data, InputFormat::Jsonl, ENCODINGS[e]);
    }

    #[test]
    fn jsonl_mutated(data in mutated(JSONL.as_bytes().to_vec()), e in 0..4usize) {
        let dir = tempfile::tempdir().unwrap();
        read_text(dir.path(), "d.jsonl", &data, InputFormat::Jsonl, ENCODINGS[e]);
    }

    #[test]
    fn uci_any_bytes(data in text_bytes(400)) {
        let dir = tempfile::tempdir().unwrap();
        read_bags(dir.path(), "docword.t.txt", &data, VOCAB, InputFormat::Uci);
    }

    #[test]
    fn uci_mutated(data in mutated(UCI.as_bytes().to_vec())) {
        let dir = tempfile::tempdir().unwrap();
        read_bags(dir.path(), "docword.t.txt", &data, VOCAB, InputFormat::Uci);
        prepare_within_limit(dir.path(), "docword.t.txt", &data, VOCAB);
    }

    #[test]
    fn ldac_any_bytes(data in text_bytes(400)) {
        let dir = tempfile::tempdir().unwrap();
        read_bags(dir.path(), "x.ldac", &data, VOCAB, InputFormat::Ldac);
    }

    #[test]
    fn ldac_mutated(data in mutated(LDAC.as_bytes().to_vec())) {
        let dir = tempfile::tempdir().unwrap();
        read_bags(dir.path(), "x.ldac", &data, VOCAB, InputFormat::Ldac);
        prepare_within_limit(dir.path(), "x.ldac", &data, VOCAB);
    }

    #[test]
    fn vocab_files_any_bytes(data in text_bytes(300)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.txt");
        std::fs::write(&p, &data).unwrap();
        within_allocation(bound(data.len()), "vocab", || {
            if let Err(e) = readers::read_vocab_file(&p) {
                assert_one_line(&e.to_string());
            }
        });
    }

    #[test]
    fn tcorp_any_bytes(data in bytes(400)) {
        let dir = tempfile::tempdir().unwrap();
        open_tcorp(dir.path(), &data);
        // With the magic and a correct header, so the payload parser is reached.
        let mut sealed = b"TOPOSCRP\x02\0\0\0".to_vec();
        sealed.extend_from_slice(&[0; 20]);
        sealed.extend_from_slice(&data);
        open_tcorp(dir.path(), &resealed(&sealed));
    }

    #[test]
    fn tcorp_mutated(data in mutated(valid_tcorp())) {
        let dir = tempfile::tempdir().unwrap();
        open_tcorp(dir.path(), &data);
        open_tcorp(dir.path(), &resealed(&data));
    }

    #[test]
    fn tokenizer_and_decoders_any_input(data in text_bytes(400), e in 0..ENCODINGS.len()) {
        let stats = DecodeStats::default();
        match ENCODINGS[e].decode(data.clone(), &stats) {
            Ok(text) => {
                if matches!(ENCODINGS[e], Encoding::Latin1 | Encoding::Windows1252) {
                    prop_assert_eq!(text.chars().count(), data.len());
                }
                for stem in [false, true] {
                    // `jieba` only in builds with its feature.
                    for segmenter in Segmenter::ALL.into_iter().filter(|s| s.available().is_ok()) {
                        let t = Tokenizer::new(&TokenizerOptions {
                            stem,
                            segmenter,
                            language: if stem { Language::German } else { Language::English },
                            ..TokenizerOptions::default()
                        })
                        .unwrap();
                        let _ = t.tokens(&text);
                    }
                }
            }
            Err(invalid) => {
                prop_assert_eq!(ENCODINGS[e], Encoding::Utf8);
                assert_one_line(&invalid.describe());
            }
        }
        if let Err(msg) = TokenizerSpec::decode(&data) {
            assert_one_line(&msg);
        }
    }

    #[test]
    fn tokenizer_spec_mutated(data in mutated(TokenizerSpec::defaults().encode())) {
        match TokenizerSpec::decode(&data) {
            Ok(spec) => { let _ = Tokenizer::from_spec(&spec).unwrap().tokens("Running runners 42"); }
            Err(msg) => assert_one_line(&msg),
        }
    }
}

fn gz(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}
