//! Every collective of the MPI transport across real processes, with rank-dependent data of
//! varying lengths (one rank contributing nothing), checked on every rank. It needs a launcher,
//! so it is an example rather than a test:
//!
//! ```text
//! cargo build -p topos-train --features mpi --example mpi_collectives
//! mpirun -np 3 target/debug/examples/mpi_collectives          # prints "ok rank R of N" per rank
//! mpirun -np 2 target/debug/examples/mpi_collectives abort    # rank 1 aborts: mpirun exits 3
//! mpirun -np 2 target/release/examples/mpi_collectives big    # > 2 GiB moved (needs ~12 GiB)
//! mpirun -np 3 target/release/examples/mpi_collectives big-all-to-all  # its all-to-all alone
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
use std::time::Duration;

use topos_train::transport::{self, Transport};

/// Rank `r`'s bytes for a gather: a length that varies with the rank (rank 1 sends none) and a
/// content that says whose they are.
fn bytes_of(r: usize, salt: usize) -> Vec<u8> {
    let len = if r == 1 { 0 } else { r * 37 + salt };
    (0..len).map(|j| (r * 31 + j * 7 + salt) as u8).collect()
}

/// What rank `from` sends rank `to` in all-to-all number `k` (0..6): lengths that vary with both
/// ranks, with some parts empty, and a content that says whose they are. `k` 0: rank 1 sends
/// nothing; 1: rank 1 receives nothing; 2: nothing to self; 3: empty parts here and there; 4:
/// nothing empty; 5: all empty.
fn part_of(from: usize, to: usize, k: usize) -> Vec<u8> {
    let empty = match k {
        0 => from == 1,
        1 => to == 1,
        2 => from == to,
        3 => (from * 2 + to) % 3 != 1,
        4 => false,
        _ => true,
    };
    let len = if empty {
        0
    } else {
        from * 11 + to * 5 + k * 300 + 1
    };
    (0..len)
        .map(|j| (from * 31 + to * 17 + j * 7 + k) as u8)
        .collect()
}

fn check_all_to_all(t: &dyn Transport) {
    let (rank, n) = (t.rank(), t.workers());
    for k in 0..6 {
        let parts: Vec<Vec<u8>> = (0..n).map(|to| part_of(rank, to, k)).collect();
        let before = t.bytes_sent();
        let got = t.all_to_all_bytes(&parts).unwrap();
        assert_eq!(got.len(), n);
        for (from, got) in got.iter().enumerate() {
            assert_eq!(
                *got,
                part_of(from, rank, k),
                "all_to_all_bytes {k} from rank {from}"
            );
        }
        let sent: usize = parts.iter().map(Vec::len).sum();
        assert!(t.bytes_sent() >= before + sent as u64);
    }
    // One part per worker, or an error (on every rank alike: nothing is exchanged).
    let too_many = vec![vec![1u8]; n + 1];
    assert!(t.all_to_all_bytes(&too_many).is_err());
    assert!(t.all_to_all_bytes(&too_many[..n - 1]).is_err());
    assert_eq!(
        t.all_to_all_bytes(&vec![Vec::new(); n]).unwrap(),
        vec![Vec::<u8>::new(); n]
    );
}

fn check_collectives(t: &dyn Transport) {
    let (rank, n) = (t.rank(), t.workers());

    // Sums, one longer than the transport's chunk (2^24 elements) so that it takes two
    // MPI_Allreduce calls, one empty.
    let len = (1 << 24) + 5;
    let mut counts: Vec<u32> = (0..len).map(|i| (i % 1000) as u32 + rank as u32).collect();
    t.sum_u32(&mut counts).unwrap();
    let ranks_sum = (n * (n - 1) / 2) as u32;
    for (i, &c) in counts.iter().enumerate() {
        assert_eq!(
            c,
            n as u32 * (i % 1000) as u32 + ranks_sum,
            "sum_u32 at {i}"
        );
    }
    let mut values: Vec<u64> = (0..1000u64).map(|i| ((rank as u64) << 40) | i).collect();
    t.sum_u64(&mut values).unwrap();
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(
            v,
            ((ranks_sum as u64) << 40) + n as u64 * i as u64,
            "sum_u64 at {i}"
        );
    }
    t.sum_u32(&mut []).unwrap();
    t.sum_u64(&mut []).unwrap();

    // All-gathers and gathers of varying lengths, then of nothing at all.
    for salt in [5, 1000] {
        let all = t.all_gather_bytes(&bytes_of(rank, salt)).unwrap();
        assert_eq!(all.len(), n);
        for (r, got) in all.iter().enumerate() {
            assert_eq!(*got, bytes_of(r, salt), "all_gather_bytes from rank {r}");
        }
        let gathered = t.gather_bytes(&bytes_of(rank, salt + 1)).unwrap();
        match (rank, gathered) {
            (0, Some(all)) => {
                assert_eq!(all.len(), n);
                for (r, got) in all.iter().enumerate() {
                    assert_eq!(*got, bytes_of(r, salt + 1), "gather_bytes from rank {r}");
                }
            }
            (0, None) => panic!("rank 0 got nothing from gather_bytes"),
            (_, Some(_)) => panic!("rank {rank} got gather_bytes' result"),
            (_, None) => {}
        }
    }
    assert_eq!(t.all_gather_bytes(&[]).unwrap(), vec![Vec::<u8>::new(); n]);
    let none = t.gather_bytes(&[]).unwrap();
    assert_eq!(none, (rank == 0).then(|| vec![Vec::<u8>::new(); n]));

    check_all_to_all(t);

    assert!(t.seconds() > 0.0);
    assert!(t.bytes_sent() >= (len * 4 + 1000 * 8) as u64);
}

/// More than `i32::MAX` bytes in all: the gathers and the all-to-all take several rounds.
fn check_big(t: &dyn Transport) {
    check_big_gathers(t);
    check_big_all_to_all(t);
}

fn check_big_gathers(t: &dyn Transport) {
    let rank = t.rank();
    let len_of = |r: usize| 1_100_000_000 + r * 7;
    let byte = |r: usize, j: usize| (j * 7 + r * 13 + j / 1_000_003) as u8;
    let mine: Vec<u8> = (0..len_of(rank)).map(|j| byte(rank, j)).collect();
    let check = |all: &[Vec<u8>]| {
        assert_eq!(all.len(), t.workers());
        for (r, got) in all.iter().enumerate() {
            assert_eq!(got.len(), len_of(r));
            assert!(
                got.iter().enumerate().all(|(j, &b)| b == byte(r, j)),
                "rank {r}'s bytes"
            );
        }
    };
    check(&t.all_gather_bytes(&mine).unwrap());
    if let Some(all) = t.gather_bytes(&mine).unwrap() {
        check(&all);
    }
}

/// Rank 0 sends more than `i32::MAX` bytes (to itself and to rank 1); every other part is small
/// or empty, so that the other ranks cannot tell from their own lengths how many rounds it takes
/// (rank 2 and up only ever see small lengths). About 7 GiB on rank 0, 2.5 GiB on rank 1.
fn check_big_all_to_all(t: &dyn Transport) {
    let (rank, n) = (t.rank(), t.workers());
    let len_of = |from: usize, to: usize| match (from, to) {
        (0, 0 | 1) => 1_100_000_000 + to * 7,
        _ if from == to => 0,
        _ => 1000 + from * 3 + to,
    };
    let byte =
        |from: usize, to: usize, j: usize| (j * 7 + from * 13 + to * 5 + j / 1_000_003) as u8;
    let parts: Vec<Vec<u8>> = (0..n)
        .map(|to| (0..len_of(rank, to)).map(|j| byte(rank, to, j)).collect())
        .collect();
    let got = t.all_to_all_bytes(&parts).unwrap();
    drop(parts);
    assert_eq!(got.len(), n);
    for (from, got) in got.iter().enumerate() {
        assert_eq!(got.len(), len_of(from, rank));
        assert!(
            got.iter()
                .enumerate()
                .all(|(j, &b)| b == byte(from, rank, j)),
            "all_to_all_bytes from rank {from}"
        );
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mpi = transport::transport_named("mpi").expect("an mpi transport");
    let t = mpi.connect().expect("connect");
    let (rank, n) = (t.rank(), t.workers());
    assert!(rank < n);
    assert_eq!(t.name(), "mpi");

    match mode.as_str() {
        "" => {
            check_collectives(&*t);
            // A second connect in the process joins the same world.
            let again = mpi.connect().expect("second connect");
            assert_eq!((again.rank(), again.workers()), (rank, n));
            let mut one = [1u32];
            again.sum_u32(&mut one).unwrap();
            assert_eq!(one, [n as u32]);
        }
        "abort" => {
            assert!(n >= 2, "the abort mode needs two processes or more");
            let mut one = [1u32];
            t.sum_u32(&mut one).unwrap();
            if rank == 1 {
                eprintln!("rank 1 of {n} aborts");
                transport::abort(3);
                unreachable!("transport::abort returned while MPI was running");
            }
            // The others wait in a collective rank 1 never joins: only the abort ends them.
            let mut v = [0u64];
            let _ = t.sum_u64(&mut v);
            std::thread::sleep(Duration::from_secs(60));
            panic!("rank {rank} outlived rank 1's abort");
        }
        "big" => check_big(&*t),
        "big-all-to-all" => check_big_all_to_all(&*t),
        other => panic!("unknown mode {other:?} (none, abort, big or big-all-to-all)"),
    }

    println!("ok rank {rank} of {n}");
    transport::finish();
    // Once finished, the transport refuses rather than calls a finalized MPI.
    assert!(t.sum_u32(&mut [1]).is_err());
    assert!(mpi.connect().is_err());
    transport::abort(1); // nothing to abort any more: returns
    transport::finish(); // nothing to finalize: returns
}
