//! Every kind of bad `.tcorp` file is refused with a one-line message, never a panic.

use std::path::{Path, PathBuf};
use topos_corpus::file::{KIND, VERSION};
use topos_corpus::{Corpus, OwnedDocs, Vocabulary};
use topos_io::HEADER_LEN;

fn sample() -> Corpus {
    let vocab = Vocabulary::new(
        ["apple", "banana", "cherry", "date"]
            .map(String::from)
            .into(),
    );
    let train: OwnedDocs = [&[0u32, 1, 0][..], &[2], &[0, 3, 3, 1]]
        .into_iter()
        .collect();
    let heldout: OwnedDocs = [&[1u32, 0][..], &[2]].into_iter().collect();
    Corpus::from_parts(vocab, train, heldout)
}

/// Byte offsets (in the payload) of the sample's sections, from the documented layout.
struct Layout {
    wf: usize,
    words: usize,
    train_tokens: usize,
    train_offsets: usize,
    train_ids: usize,
    heldout_offsets: usize,
    heldout_ids: usize,
}

fn layout() -> Layout {
    let v = 4;
    let wf = 40;
    let words = wf + 16 * v;
    let words_len: usize = ["apple", "banana", "cherry", "date"]
        .iter()
        .map(|w| 4 + w.len())
        .sum();
    let train_tokens = (words + words_len).next_multiple_of(8);
    let train_offsets = (train_tokens + 4 * 8).next_multiple_of(8);
    let train_ids = train_offsets + 8 * 4;
    let heldout_tokens = train_ids + 8 * 3;
    let heldout_offsets = (heldout_tokens + 4 * 3).next_multiple_of(8);
    let heldout_ids = heldout_offsets + 8 * 3;
    Layout {
        wf,
        words,
        train_tokens,
        train_offsets,
        train_ids,
        heldout_offsets,
        heldout_ids,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    good: Vec<u8>,
    path: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.tcorp");
    sample().write(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    assert_eq!(
        good.len(),
        HEADER_LEN + layout().heldout_ids + 16,
        "layout of the test matches the file"
    );
    Fixture {
        _dir: dir,
        good,
        path,
    }
}

impl Fixture {
    /// Opens `bytes` as a corpus file and returns the error message.
    fn err(&self, bytes: &[u8]) -> String {
        std::fs::write(&self.path, bytes).unwrap();
        let e = Corpus::open(&self.path).unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(e.starts_with(&self.path.display().to_string()), "{e}");
        e
    }

    /// The good payload, edited by `edit`, under a header with a correct checksum: only the
    /// structural validation can catch it.
    fn resealed(&self, edit: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut payload = self.good[HEADER_LEN..].to_vec();
        edit(&mut payload);
        let mut bytes = topos_io::header(&KIND, VERSION, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        let e = self.err(&bytes);
        assert!(e.contains("malformed Topos corpus file"), "{e}");
        e
    }
}

fn put_u64(p: &mut [u8], at: usize, v: u64) {
    p[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(p: &mut [u8], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn the_fixture_opens() {
    let f = fixture();
    let c = Corpus::open(&f.path).unwrap();
    assert_eq!(c.train().doc(2), [0, 3, 3, 1]);
    assert_eq!(c.heldout_ids(), [3, 4]);
}

#[test]
fn header_level_damage() {
    let f = fixture();
    let good = &f.good;

    assert!(f.err(&[]).contains("truncated"), "empty file");
    let e = f.err(&good[..good.len() - 5]);
    assert!(e.contains("truncated") && e.contains("re-create"), "{e}");
    assert!(f.err(&good[..20]).contains("truncated"));

    let mut flipped = good.clone();
    flipped[HEADER_LEN + 100] ^= 0x10;
    assert!(f.err(&flipped).contains("checksum"));

    // A foreign file: gzip data.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, b"some text").unwrap();
    let e = f.err(&enc.finish().unwrap());
    assert!(e.contains("not a Topos corpus file"), "{e}");
    assert!(f.err(b"TOPOSMDL").contains("not a Topos corpus file"));

    let mut future = good.clone();
    future[8..12].copy_from_slice(&3u32.to_le_bytes());
    let e = f.err(&future);
    assert!(e.contains("version 3") && e.contains("upgrade"), "{e}");

    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0; 8]);
    assert!(f.err(&trailing).contains("trailing"));

    let e = Corpus::open(Path::new("/nonexistent/c.tcorp"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/c.tcorp"), "{e}");
}

#[test]
fn structurally_invalid_payloads_with_correct_checksums() {
    let f = fixture();
    let l = layout();

    let e = f.resealed(|p| put_u64(p, l.train_offsets, 1));
    assert!(e.contains("training offsets start at 1"), "{e}");

    let e = f.resealed(|p| put_u64(p, l.train_offsets + 8, 5)); // 0, 5, 4, 8
    assert!(e.contains("training offsets decrease at document 1"), "{e}");

    let e = f.resealed(|p| put_u64(p, l.heldout_offsets + 16, 2));
    assert!(
        e.contains("held-out offsets end at 2 but there are 3"),
        "{e}"
    );

    let e = f.resealed(|p| put_u32(p, l.train_tokens + 4 * 5, 4));
    assert!(
        e.contains("training token 5 has word id 4 but the vocabulary has 4 words"),
        "{e}"
    );

    let e = f.resealed(|p| put_u32(p, l.train_tokens + 4 * 5, u32::MAX));
    assert!(e.contains("word id 4294967295"), "{e}");

    let e = f.resealed(|p| put_u64(p, l.heldout_ids, 4));
    assert!(
        e.contains("held-out document indices do not increase"),
        "{e}"
    );

    let e = f.resealed(|p| put_u64(p, l.train_ids + 8, 0));
    assert!(
        e.contains("training document indices do not increase"),
        "{e}"
    );

    let e = f.resealed(|p| put_u64(p, l.wf, 5));
    assert!(
        e.contains("word frequencies add up to 12 but the corpus has 11 tokens"),
        "{e}"
    );

    let e = f.resealed(|p| put_u64(p, l.wf + 8 * 4 + 8 * 3, 3)); // df of "date" > its cf of 2
    assert!(e.contains("word 3 has document frequency 3"), "{e}");

    // "banana" → "cherry": the same length, a repeated word.
    let e = f.resealed(|p| {
        let at = l.words + 4 + 5 + 4;
        p[at..at + 6].copy_from_slice(b"cherry");
    });
    assert!(e.contains("word 2 ('cherry') repeats"), "{e}");

    let e = f.resealed(|p| p[l.words + 4] = 0xff);
    assert!(e.contains("word 0 is not UTF-8"), "{e}");
}

#[test]
fn inconsistent_sizes_with_correct_checksums() {
    let f = fixture();
    let e = f.resealed(|p| put_u64(p, 0, u64::MAX));
    assert!(e.contains("vocabulary size"), "{e}");
    let e = f.resealed(|p| put_u64(p, 0, 1 << 31));
    assert!(e.contains("needs") && e.contains("remain"), "{e}");
    // One training document more than there are offsets for.
    let e = f.resealed(|p| put_u64(p, 8, 4));
    assert!(!e.is_empty());
    // One token fewer: everything after shifts.
    let e = f.resealed(|p| put_u64(p, 24, 7));
    assert!(!e.is_empty());
    let e = f.resealed(|p| put_u64(p, 16, u64::MAX));
    assert!(e.contains("too large") || e.contains("needs"), "{e}");
    let e = f.resealed(|p| put_u64(p, 32, u64::MAX / 2));
    assert!(e.contains("too large") || e.contains("needs"), "{e}");
    // A payload cut short (re-sealed, so the header agrees).
    let e = f.resealed(|p| p.truncate(p.len() - 8));
    assert!(e.contains("held-out document indices needs"), "{e}");
    let e = f.resealed(|p| p.extend_from_slice(&[0; 8]));
    assert!(e.contains("unexpected bytes"), "{e}");
    let e = f.resealed(|p| p.truncate(10));
    assert!(e.contains("needs"), "{e}");
}

#[test]
fn random_single_byte_damage_never_panics() {
    let f = fixture();
    let l = layout();
    // Flip every byte of the payload in turn, reseal, and require a clean Ok or Err.
    let mut rejected = 0;
    for at in 0..f.good.len() - HEADER_LEN {
        let mut payload = f.good[HEADER_LEN..].to_vec();
        payload[at] ^= 0x5a;
        let mut bytes = topos_io::header(&KIND, VERSION, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        std::fs::write(&f.path, &bytes).unwrap();
        match Corpus::open(&f.path) {
            Ok(c) => {
                // Only harmless bytes may change: ids, word letters, padding.
                let _ = (c.train().tokens(), c.vocab().len());
            }
            Err(_) => rejected += 1,
        }
    }
    assert!(rejected > l.train_tokens / 2, "{rejected}");
}
