//! Property tests of the checkpoint reader, `topos_train::checkpoint::Checkpoint::read` (issue
//! 18, part 6). Here, beside the binary that resumes from checkpoints, rather than in
//! `topos-train`, whose sources belong to the training driver's rewrite. On arbitrary bytes and
//! on mutations of a valid checkpoint (header resealed, so the payload parser is reached): no
//! panic, no allocation beyond a bound set by the file's size (a token count claiming 2^40
//! assignments is refused, not allocated), one-line errors.

use proptest::prelude::*;
use topos_testkit::{assert_one_line, bytes, config, mutated, within_allocation, CountingAlloc};
use topos_train::checkpoint::{Checkpoint, CheckpointHeader};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const MAGIC: &[u8; 8] = b"TOPOSCKP";

fn valid() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.ckpt");
    Checkpoint {
        header: CheckpointHeader {
            algorithm: "esca".into(),
            num_topics: 5,
            alpha: 0.1,
            beta: 0.01,
            seed: 42,
            partitions: 3,
            corpus_checksum: 77,
            iteration: 9,
            priors: None,
            fixed_counts: None,
            sampler_settings: Default::default(),
        },
        assignments: vec![0, 4, 2, 2, 1, 3, 0, 0, 4],
    }
    .write(&p)
    .unwrap();
    std::fs::read(p).unwrap()
}

/// `bytes` under a header whose length and checksum match its payload (version kept).
fn resealed(bytes: &[u8]) -> Vec<u8> {
    if bytes.len() < 32 {
        return bytes.to_vec();
    }
    let mut out = bytes[..32].to_vec();
    let payload = &bytes[32..];
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out[24..32].copy_from_slice(&topos_io::checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn read(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ckpt");
    std::fs::write(&p, data).unwrap();
    within_allocation(
        (1 << 20) + 16 * data.len(),
        "ckpt",
        || match Checkpoint::read(&p) {
            Ok(c) => assert!(c
                .assignments
                .iter()
                .all(|&z| u32::from(z) < c.header.num_topics)),
            Err(e) => assert_one_line(&e.to_string()),
        },
    );
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn ckpt_any_bytes(data in bytes(300)) {
        read(&data);
        let mut sealed = MAGIC.to_vec();
        sealed.extend_from_slice(&1u32.to_le_bytes());
        sealed.extend_from_slice(&[0; 20]);
        sealed.extend_from_slice(&data);
        read(&resealed(&sealed));
    }

    #[test]
    fn ckpt_mutated(data in mutated(valid())) {
        read(&data);
        read(&resealed(&data));
    }
}
