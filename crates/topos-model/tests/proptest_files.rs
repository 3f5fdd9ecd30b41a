//! Property tests of the model file (`.tmod`, every released version) and the document-topic
//! side file (`.doctopics`) readers (issue 18, part 6): on arbitrary bytes and on structured
//! mutations of the checked-in fixtures — with the header's checksum recomputed, so the payload
//! parser is what must refuse — a reader never panics, never asks for more memory than the file
//! can describe, and fails with a one-line message.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use topos_io::Kind;
use topos_model::{DocTopics, TopicModel, DOC_TOPICS_KIND, MODEL_KIND};
use topos_testkit::{assert_one_line, bytes, config, mutated, within_allocation, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// `bytes` with its header recomputed for its payload (same version).
fn resealed(kind: &Kind, bytes: &[u8]) -> Vec<u8> {
    if bytes.len() < 32 {
        return bytes.to_vec();
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let mut out = topos_io::header(kind, version, &bytes[32..]).to_vec();
    out.extend_from_slice(&bytes[32..]);
    out
}

/// `payload` under a valid header of `kind` and `version`.
fn sealed(kind: &Kind, version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = topos_io::header(kind, version, payload).to_vec();
    out.extend_from_slice(payload);
    out
}

/// The largest allocation a model file of `len` bytes may ask for: the dense word-topic matrix
/// it can describe (at most len/8 words, each of K ≤ 65,535 topics, 4 bytes a cell) plus buffers.
/// Anything beyond the memory available is refused by the reader before it allocates.
fn model_bound(len: usize) -> usize {
    (1 << 20) + 16 * len + 4 * 65_535 * (len / 8)
}

fn read_model(bytes: &[u8]) {
    let path = PathBuf::from("fuzz.tmod");
    within_allocation(model_bound(bytes.len()), "tmod", || {
        match TopicModel::from_file_bytes(bytes, &path) {
            Ok(m) => {
                // What reads back is a usable model that writes back to a readable file.
                let again = m.to_file_bytes().unwrap();
                assert!(TopicModel::from_file_bytes(&again, &path).is_ok());
            }
            Err(e) => assert_one_line(&e.to_string()),
        }
    });
}

fn read_doc_topics(bytes: &[u8]) {
    let path = PathBuf::from("fuzz.tmod.doctopics");
    within_allocation(
        (1 << 20) + 16 * bytes.len(),
        "doctopics",
        || match DocTopics::from_file_bytes(bytes, &path) {
            Ok((a, _model_checksum)) => {
                for d in 0..a.len() {
                    let _ = (a.row(d), a.row_total(d));
                }
            }
            Err(e) => assert_one_line(&e.to_string()),
        },
    );
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn tmod_any_bytes(data in bytes(400), version in 1..=4u32) {
        read_model(&data);
        read_model(&sealed(&MODEL_KIND, version, &data));
    }

    #[test]
    fn tmod_v1_mutated(data in mutated(fixture("v1.tmod"))) {
        read_model(&data);
        read_model(&resealed(&MODEL_KIND, &data));
    }

    #[test]
    fn tmod_v2_mutated(data in mutated(fixture("v2.tmod"))) {
        read_model(&resealed(&MODEL_KIND, &data));
    }

    #[test]
    fn tmod_v2_private_mutated(data in mutated(fixture("v2-private.tmod"))) {
        read_model(&data);
        read_model(&resealed(&MODEL_KIND, &data));
    }

    #[test]
    fn tmod_v3_mutated(data in mutated(fixture("v3-private.tmod"))) {
        read_model(&data);
        read_model(&resealed(&MODEL_KIND, &data));
    }

    #[test]
    fn doctopics_any_bytes(data in bytes(400)) {
        read_doc_topics(&data);
        read_doc_topics(&sealed(&DOC_TOPICS_KIND, 1, &data));
        read_doc_topics(&sealed(&DOC_TOPICS_KIND, 2, &data));
    }

    #[test]
    fn doctopics_v2_mutated(data in mutated(fixture("v2.tmod.doctopics"))) {
        read_doc_topics(&data);
        read_doc_topics(&resealed(&DOC_TOPICS_KIND, &data));
    }

    #[test]
    fn doctopics_mutated(data in mutated(fixture("v1.tmod.doctopics"))) {
        read_doc_topics(&data);
        read_doc_topics(&resealed(&DOC_TOPICS_KIND, &data));
    }
}
