//! Every metric against a straightforward dense f64 reference (`support/mod.rs`), on random
//! sparse matrices with the awkward rows (empty, one non-zero, identical, near-identical, dense,
//! values from 10⁻³ to 10³), and on a few cases whose values were computed with SciPy 1.17.1.
//! The tolerance is explained in `support/mod.rs`.

mod support;
use support::*;

use topos_distance::{knn, knn_with, pairwise_distances, CpuBackend, KnnOptions, Metric};

#[test]
fn pairwise_matches_the_dense_reference_for_every_metric() {
    check_pairwise(&CpuBackend);
}

#[test]
fn knn_matches_the_reference_with_ties_by_index() {
    check_knn(&CpuBackend);
}

#[test]
fn a_nan_error_slack_still_lets_every_row_be_offered() {
    // A constant dense row (centred norm 0: Correlation's per-row error term is ∞) and a query
    // whose mean is exactly 0: the slack is 0 · ∞ = NaN, and every row must still be offered.
    let n_cols = 12;
    let mut index = random_rows(31, 40, n_cols, 0.3, true);
    index[7] = vec![2.0; n_cols];
    let mut q = vec![0.0f32; n_cols];
    q[1] = 2.0;
    q[4] = 3.0;
    q[6] = -2.0;
    q[9] = -3.0;
    index[20] = q.clone();
    for exclude_self in [false, true] {
        let opts = KnnOptions {
            batch_rows: 16,
            exclude_self,
        };
        let got = knn_with(
            &CpuBackend,
            &csr(&index, n_cols),
            &csr(&index, n_cols),
            5,
            Metric::Correlation,
            &opts,
        )
        .unwrap();
        let (idx, dist) = got.row(20);
        let mut others = index.clone();
        if exclude_self {
            others[20] = vec![f32::NAN; n_cols]; // never chosen: its reference distance is NaN
        }
        let want = reference_knn(Metric::Correlation, &others, &q, 5);
        assert!(
            !dist[0].is_nan(),
            "the query has defined neighbours: {dist:?}"
        );
        for (p, (&j, &d)) in idx.iter().zip(dist).enumerate() {
            assert!(
                close(f64::from(d), want[p].1),
                "rank {p}: row {j} {d} vs {:?}",
                want[p]
            );
        }
    }
}

#[test]
fn identical_rows_tie_and_come_in_index_order() {
    let n_cols = 20;
    let base = random_rows(5, 10, n_cols, 0.3, true);
    // Rows 3, 5 and 8 are copies of one row; the query is that row.
    let mut index = base.clone();
    index[5] = index[3].clone();
    index[8] = index[3].clone();
    let q = csr(&[index[3].clone()], n_cols);
    for metric in [
        Metric::Euclidean,
        Metric::Manhattan,
        Metric::Chebyshev,
        Metric::Minkowski(3.0),
        Metric::Canberra,
    ] {
        let got = knn(&csr(&index, n_cols), &q, 3, metric).unwrap();
        assert_eq!(got.indices, vec![3, 5, 8], "{metric}");
        assert_eq!(
            got.distances,
            vec![0.0, 0.0, 0.0],
            "{metric}: identical rows are exactly 0"
        );
    }
}

#[test]
fn results_do_not_depend_on_threads_or_batches() {
    let n_cols = 200;
    let index = csr(&random_rows(21, 300, n_cols, 0.05, true), n_cols);
    let queries = csr(&random_rows(22, 150, n_cols, 0.05, true), n_cols);
    for metric in [
        Metric::Cosine,
        Metric::Manhattan,
        Metric::Chebyshev,
        Metric::Jaccard,
    ] {
        let run = |threads: usize, batch: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let opts = KnnOptions {
                batch_rows: batch,
                exclude_self: false,
            };
            pool.install(|| knn_with(&CpuBackend, &index, &queries, 10, metric, &opts).unwrap())
        };
        // Bit for bit (NaN distances included, which `==` would call different).
        let bits = |n: topos_distance::Neighbors| {
            let d: Vec<u32> = n.distances.iter().map(|x| x.to_bits()).collect();
            (n.indices, d)
        };
        let one = bits(run(1, 4096));
        assert_eq!(one, bits(run(3, 4096)), "{metric}");
        assert_eq!(one, bits(run(2, 17)), "{metric}");
    }
}

/// Values from SciPy 1.17.1: `cdist(X, X, m)` (`minkowski` with p; Dice and Russell–Rao on
/// `X != 0`, SciPy's boolean definitions), `jensenshannon(a, b)`, `scipy.stats.entropy(a, b)`.
#[test]
fn hand_cases_agree_with_scipy() {
    let x = vec![
        vec![1.0, 0.0, 2.0, 0.0, 3.0],
        vec![0.0; 5],
        vec![2.0; 5],
        vec![0.5, 1.0, 0.0, 0.0, 3.0],
    ];
    let m = csr(&x, 5);
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let cases: Vec<(Metric, [[f64; 4]; 4])> = vec![
        (
            Metric::Correlation,
            [
                [0.0, nan, nan, 0.36855786877546004],
                [nan; 4],
                [nan; 4],
                [0.36855786877546004, nan, nan, 0.0],
            ],
        ),
        (
            Metric::Cosine,
            [
                [0.0, nan, 0.2828628343993639, 0.2069553224268018],
                [nan; 4],
                [0.2828628343993639, nan, 0.0, 0.3714127338073796],
                [0.2069553224268018, nan, 0.3714127338073796, 0.0],
            ],
        ),
        (
            Metric::Dice,
            [
                [0.0, 1.0, 0.25, 0.3333333333333333],
                [1.0, nan, 1.0, 1.0],
                [0.25, 1.0, 0.0, 0.25],
                [0.3333333333333333, 1.0, 0.25, 0.0],
            ],
        ),
        (
            Metric::Euclidean,
            [
                [
                    0.0,
                    3.7416573867739413,
                    3.1622776601683795,
                    2.29128784747792,
                ],
                [
                    3.7416573867739413,
                    0.0,
                    4.47213595499958,
                    3.2015621187164243,
                ],
                [3.1622776601683795, 4.47213595499958, 0.0, 3.5],
                [2.29128784747792, 3.2015621187164243, 3.5, 0.0],
            ],
        ),
        (
            Metric::Canberra,
            [
                [0.0, 3.0, 2.533333333333333, 2.333333333333333],
                [3.0, 0.0, 5.0, 3.0],
                [2.533333333333333, 5.0, 0.0, 3.1333333333333337],
                [2.333333333333333, 3.0, 3.1333333333333337, 0.0],
            ],
        ),
        (
            Metric::Chebyshev,
            [
                [0.0, 3.0, 2.0, 2.0],
                [3.0, 0.0, 2.0, 3.0],
                [2.0, 2.0, 0.0, 2.0],
                [2.0, 3.0, 2.0, 0.0],
            ],
        ),
        (
            Metric::Hamming,
            [
                [0.0, 0.6, 0.8, 0.6],
                [0.6, 0.0, 1.0, 0.6],
                [0.8, 1.0, 0.0, 1.0],
                [0.6, 0.6, 1.0, 0.0],
            ],
        ),
        (
            Metric::Jaccard,
            [
                [0.0, 1.0, 0.4, 0.5],
                [1.0, 0.0, 1.0, 1.0],
                [0.4, 1.0, 0.0, 0.4],
                [0.5, 1.0, 0.4, 0.0],
            ],
        ),
        (
            Metric::Manhattan,
            [
                [0.0, 6.0, 6.0, 3.5],
                [6.0, 0.0, 10.0, 4.5],
                [6.0, 10.0, 0.0, 7.5],
                [3.5, 4.5, 7.5, 0.0],
            ],
        ),
        (
            Metric::RussellRao,
            [
                [0.4, 1.0, 0.4, 0.6],
                [1.0, 1.0, 1.0, 1.0],
                [0.4, 1.0, 0.0, 0.4],
                [0.6, 1.0, 0.4, 0.4],
            ],
        ),
        (
            Metric::Minkowski(3.0),
            [
                [
                    0.0,
                    3.3019272488946263,
                    2.6207413942088964,
                    2.089669598190616,
                ],
                [3.3019272488946263, 0.0, 3.4199518933533937, 3.0411009977867],
                [
                    2.6207413942088964,
                    3.4199518933533937,
                    0.0,
                    2.7752495514557736,
                ],
                [2.089669598190616, 3.0411009977867, 2.7752495514557736, 0.0],
            ],
        ),
        (
            Metric::Minkowski(1.5),
            [
                [
                    0.0,
                    4.334622872113609,
                    3.884784391808793,
                    2.5957010334043913,
                ],
                [
                    4.334622872113609,
                    0.0,
                    5.848035476425732,
                    3.5006433168711313,
                ],
                [3.884784391808793, 5.848035476425732, 0.0, 4.483652552407309],
                [
                    2.5957010334043913,
                    3.5006433168711313,
                    4.483652552407309,
                    0.0,
                ],
            ],
        ),
        (
            Metric::JensenShannon,
            [
                [0.0, nan, 0.42546163241698143, 0.44867613803777856],
                [nan; 4],
                [0.42546163241698143, nan, 0.0, 0.4600389399293211],
                [0.44867613803777856, nan, 0.4600389399293211, 0.0],
            ],
        ),
        (
            Metric::KlDivergence,
            [
                [0.0, nan, 0.5980336477267486, inf],
                [nan; 4],
                [inf, nan, 0.0, inf],
                [inf, nan, 0.7607523547076832, 0.0],
            ],
        ),
    ];
    for (metric, want) in cases {
        let d = pairwise_distances(&m, &m, metric).unwrap();
        for (i, want_row) in want.iter().enumerate() {
            for (j, &w) in want_row.iter().enumerate() {
                let got = f64::from(d.get(i, j));
                assert!(close(got, w), "{metric} ({i}, {j}): {got} vs SciPy {w}");
            }
        }
    }
    // Signed values (SciPy cdist on these rows).
    let y = csr(
        &[
            vec![1.5, -2.0, 0.0, 0.25],
            vec![0.0, -2.0, 1.0, 0.0],
            vec![-1.0, 0.0, 0.0, 0.0],
        ],
        4,
    );
    let signed: Vec<(Metric, [f64; 3])> = vec![
        (
            Metric::Correlation,
            [0.0, 0.28003526271541357, 1.7189966356788133],
        ),
        (
            Metric::Cosine,
            [0.0, 0.28800934481602436, 1.5970223141259936],
        ),
        (
            Metric::Euclidean,
            [0.0, 1.8200274723201295, 3.2113081446662823],
        ),
        (Metric::Canberra, [0.0, 3.0, 3.0]),
        (Metric::Chebyshev, [0.0, 1.5, 2.5]),
        (Metric::Hamming, [0.0, 0.75, 0.75]),
        (Metric::Jaccard, [0.0, 0.75, 0.6666666666666666]),
        (Metric::Manhattan, [0.0, 2.75, 4.75]),
        (
            Metric::Minkowski(3.0),
            [0.0, 1.6374779050298438, 2.8700292178145412],
        ),
    ];
    for (metric, want) in signed {
        let d = pairwise_distances(&y, &y, metric).unwrap();
        for (j, &w) in want.iter().enumerate() {
            assert!(
                close(f64::from(d.get(0, j)), w),
                "{metric} (0, {j}): {} vs SciPy {w}",
                d.get(0, j)
            );
        }
    }
    // Hellinger has no SciPy function: ½Σ(√x − √y)² by hand for p = (0.5, 0.5), q = (1, 0):
    // (√0.5 − 1)² + 0.5 = 0.5857864…, halved 0.2928932…, d = 0.5411961.
    let h = csr(&[vec![0.5, 0.5], vec![1.0, 0.0]], 2);
    let d = pairwise_distances(&h, &h, Metric::Hellinger).unwrap();
    assert!(close(f64::from(d.get(0, 1)), (1.0 - 0.5f64.sqrt()).sqrt()));
}

#[test]
fn minkowski_uses_the_absolute_difference_for_odd_p() {
    // x − y = (−2, 1): Σ|.|³ = 9, d = 9^(1/3); dropping the absolute value would give −7.
    let m = csr(&[vec![1.0, 2.0], vec![3.0, 1.0]], 2);
    let d = pairwise_distances(&m, &m, Metric::Minkowski(3.0)).unwrap();
    assert!((f64::from(d.get(0, 1)) - 9f64.cbrt()).abs() < 1e-6);
}
