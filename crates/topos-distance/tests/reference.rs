//! Every metric against a straightforward dense f64 reference written here, on random sparse
//! matrices with the awkward rows (empty, one non-zero, identical, near-identical, dense, values
//! from 10⁻³ to 10³), and on a few cases whose values were computed with SciPy 1.17.1.
//!
//! Tolerance: |got − ref| ≤ 1e-5·|ref| + 1e-10. The relative part is the bound for f32
//! output (our results are right to ~1e-9 before the f32 rounding of 6e-8). The absolute 1e-10
//! covers distances that are ~0 where the *definition* cancels — 1 − cos, 1 − r for
//! near-parallel rows and KL's signed sum, whose f64 value (ours, the reference's and SciPy's)
//! is only known to ~1e-16 — and nothing else.

use topos_distance::{
    knn, knn_with, pairwise_distances, CpuBackend, CsrMatrix, KnnOptions, Metric,
};

/// splitmix64: a tiny deterministic generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn value(rng: &mut Rng, signed: bool) -> f32 {
    // A third of the values are small integers so that equal values meet in Hamming/Jaccard.
    let v = if rng.below(3) == 0 {
        (1 + rng.below(3)) as f32
    } else {
        (0.05 + 2.0 * rng.unit()) as f32
    };
    if signed && rng.below(2) == 0 {
        -v
    } else {
        v
    }
}

/// Dense rows of awkward kinds, chosen by row number.
fn random_rows(
    seed: u64,
    n_rows: usize,
    n_cols: usize,
    density: f64,
    signed: bool,
) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(n_rows);
    for i in 0..n_rows {
        let mut row = vec![0f32; n_cols];
        let random = |rng: &mut Rng, row: &mut Vec<f32>, d: f64| {
            for v in row.iter_mut() {
                if rng.unit() < d {
                    *v = value(rng, signed);
                }
            }
        };
        match i % 10 {
            0 => {} // empty
            1 => row[rng.below(n_cols)] = value(&mut rng, signed),
            2 if i > 2 => row = rows[rng.below(i)].clone(), // identical to an earlier row
            3 => {
                random(&mut rng, &mut row, density);
                row.iter_mut().for_each(|v| *v *= 1e3);
            }
            4 => {
                random(&mut rng, &mut row, density);
                row.iter_mut().for_each(|v| *v *= 1e-3);
            }
            5 => {
                random(&mut rng, &mut row, density);
                for v in row.iter_mut() {
                    *v *= [1e-3f32, 1.0, 1e3][rng.below(3)];
                }
            }
            6 if i > 6 => {
                // Near-duplicate: one value moved by 1e-4 relative (cancellation territory).
                row = rows[rng.below(i)].clone();
                if let Some(v) = row.iter_mut().find(|v| **v != 0.0) {
                    *v *= 1.0 + 1e-4;
                }
            }
            7 => random(&mut rng, &mut row, 1.0), // dense: full support (finite KL)
            _ => random(&mut rng, &mut row, density),
        }
        if rows.len() > 3 && i % 10 == 9 {
            // A constant dense row (correlation's NaN case).
            row = vec![2.0; n_cols];
        }
        rows.push(row);
    }
    rows
}

fn csr(rows: &[Vec<f32>], n_cols: usize) -> CsrMatrix {
    CsrMatrix::from_dense(rows, n_cols).unwrap()
}

/// The reference: each definition written directly over dense f64 vectors (SciPy's semantics).
fn reference(metric: Metric, x: &[f32], y: &[f32]) -> f64 {
    let x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let y: Vec<f64> = y.iter().map(|&v| f64::from(v)).collect();
    let n = x.len() as f64;
    let nz = |v: &[f64]| v.iter().filter(|&&a| a != 0.0).count() as f64;
    let both = x
        .iter()
        .zip(&y)
        .filter(|(a, b)| **a != 0.0 && **b != 0.0)
        .count() as f64;
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    match metric {
        Metric::Correlation | Metric::Cosine => {
            let centre = matches!(metric, Metric::Correlation);
            let (mx, my) = if centre {
                (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n)
            } else {
                (0.0, 0.0)
            };
            let xc: Vec<f64> = x.iter().map(|a| a - mx).collect();
            let yc: Vec<f64> = y.iter().map(|b| b - my).collect();
            let (uu, vv, uv) = (dot(&xc, &xc), dot(&yc, &yc), dot(&xc, &yc));
            if uu == 0.0 || vv == 0.0 {
                f64::NAN
            } else {
                (1.0 - uv / (uu * vv).sqrt()).clamp(0.0, 2.0)
            }
        }
        Metric::Dice => {
            let (nx, ny) = (nz(&x), nz(&y));
            (nx + ny - 2.0 * both) / (nx + ny)
        }
        Metric::DotProduct => dot(&x, &y),
        Metric::Euclidean => x
            .iter()
            .zip(&y)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt(),
        Metric::Canberra => x
            .iter()
            .zip(&y)
            .filter(|(a, b)| a.abs() + b.abs() > 0.0)
            .map(|(a, b)| (a - b).abs() / (a.abs() + b.abs()))
            .sum(),
        Metric::Chebyshev => x.iter().zip(&y).fold(0.0, |m, (a, b)| m.max((a - b).abs())),
        Metric::Hamming => x.iter().zip(&y).filter(|(a, b)| a != b).count() as f64 / n,
        Metric::Hellinger => {
            let s: f64 = x
                .iter()
                .zip(&y)
                .map(|(a, b)| (a.sqrt() - b.sqrt()).powi(2))
                .sum();
            (0.5 * s).sqrt()
        }
        Metric::Jaccard => {
            let union = x
                .iter()
                .zip(&y)
                .filter(|(a, b)| **a != 0.0 || **b != 0.0)
                .count() as f64;
            if union == 0.0 {
                0.0
            } else {
                (union - both) / union
            }
        }
        Metric::JensenShannon => {
            let (sx, sy) = (x.iter().sum::<f64>(), y.iter().sum::<f64>());
            if sx == 0.0 || sy == 0.0 {
                return f64::NAN;
            }
            // Per column p ln(p/m) + q ln(q/m) ≥ 0, written with ln_1p so that near-identical
            // rows do not cancel (SciPy sums the two signed halves and loses ~1e-8 there).
            let s: f64 = x
                .iter()
                .zip(&y)
                .map(|(a, b)| {
                    let (p, q) = (a / sx, b / sy);
                    let m = 0.5 * (p + q);
                    let t = |u: f64| {
                        if u == 0.0 {
                            0.0
                        } else {
                            u * ((u - m) / m).ln_1p()
                        }
                    };
                    t(p) + t(q)
                })
                .sum();
            (0.5 * s).max(0.0).sqrt()
        }
        Metric::KlDivergence => {
            let (sx, sy) = (x.iter().sum::<f64>(), y.iter().sum::<f64>());
            if sx == 0.0 || sy == 0.0 {
                return f64::NAN;
            }
            let mut s = 0.0;
            for (a, b) in x.iter().zip(&y) {
                let (p, q) = (a / sx, b / sy);
                if p > 0.0 {
                    s += if q > 0.0 {
                        p * (p / q).ln()
                    } else {
                        f64::INFINITY
                    };
                }
            }
            s
        }
        Metric::Manhattan => x.iter().zip(&y).map(|(a, b)| (a - b).abs()).sum(),
        Metric::Minkowski(p) => x
            .iter()
            .zip(&y)
            .map(|(a, b)| (a - b).abs().powf(p))
            .sum::<f64>()
            .powf(1.0 / p),
        Metric::RussellRao => (n - both) / n,
    }
}

fn close(got: f64, want: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= 1e-5 * want.abs() + 1e-10
}

fn metrics() -> Vec<Metric> {
    let mut all = Metric::all(3.0).to_vec();
    all.push(Metric::Minkowski(1.5));
    all.push(Metric::Minkowski(1.0));
    all.push(Metric::Minkowski(2.0));
    all
}

/// (index rows, query rows, n_cols) for one metric: non-negative values where required, and
/// queries that share some rows with the index (identical pairs across the two matrices).
fn data(metric: Metric, seed: u64, n_cols: usize, density: f64) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let signed = !metric.requires_non_negative();
    let index = random_rows(seed, 60, n_cols, density, signed);
    let mut queries = random_rows(seed + 1, 35, n_cols, density, signed);
    queries.extend(index.iter().step_by(7).cloned());
    (index, queries)
}

#[test]
fn pairwise_matches_the_dense_reference_for_every_metric() {
    for (seed, n_cols, density) in [(1, 12, 0.3), (2, 40, 0.15), (3, 400, 0.02)] {
        for metric in metrics() {
            let (index, queries) = data(metric, seed, n_cols, density);
            let d =
                pairwise_distances(&csr(&queries, n_cols), &csr(&index, n_cols), metric).unwrap();
            for (i, q) in queries.iter().enumerate() {
                for (j, r) in index.iter().enumerate() {
                    let want = reference(metric, q, r);
                    let got = f64::from(d.get(i, j));
                    assert!(
                        close(got, want),
                        "{metric} (seed {seed}, {n_cols} columns): d(query {i}, index {j}) = {got:e}, reference {want:e}"
                    );
                }
            }
        }
    }
}

/// The reference's k nearest: sort by (distance, index), NaN last; the dot product largest first.
fn reference_knn(metric: Metric, index: &[Vec<f32>], q: &[f32], k: usize) -> Vec<(usize, f64)> {
    let mut all: Vec<(usize, f64)> = index
        .iter()
        .enumerate()
        .map(|(j, r)| (j, reference(metric, q, r)))
        .collect();
    let key = |d: f64| {
        let d = if metric.is_similarity() { -d } else { d };
        if d.is_nan() {
            f64::INFINITY
        } else {
            d
        }
    };
    all.sort_by(|a, b| {
        key(a.1)
            .total_cmp(&key(b.1))
            .then(a.1.is_nan().cmp(&b.1.is_nan()))
            .then(a.0.cmp(&b.0))
    });
    all.truncate(k);
    all
}

#[test]
fn knn_matches_the_reference_with_ties_by_index() {
    // k = 60 is every index row: the whole order, NaN rows last, ties by index.
    for (seed, n_cols, density, k) in [(11, 15, 0.3, 7), (12, 300, 0.03, 7), (13, 300, 0.03, 60)] {
        for metric in metrics() {
            let (index, queries) = data(metric, seed, n_cols, density);
            let got = knn(&csr(&index, n_cols), &csr(&queries, n_cols), k, metric).unwrap();
            for (i, q) in queries.iter().enumerate() {
                let want = reference_knn(metric, &index, q, k);
                let (idx, dist) = got.row(i);
                for (p, (&j, &d)) in idx.iter().zip(dist).enumerate() {
                    let (wj, wd) = want[p];
                    assert!(
                        close(f64::from(d), wd),
                        "{metric} query {i} rank {p}: {d} vs {wd}"
                    );
                    // Different rows only where the reference has a tie at this rank: equal
                    // distances, or mathematically equal ones that rounding split by ~1 ulp
                    // (e.g. correlation against two rows with one non-zero in the same column).
                    // Exact ties (identical rows) are checked to come in index order below.
                    if j as usize != wj {
                        let dj = reference(metric, q, &index[j as usize]);
                        let tie = dj == wd
                            || (dj.is_nan() && wd.is_nan())
                            || (dj - wd).abs() <= 1e-12 * wd.abs().max(1.0);
                        assert!(
                            tie,
                            "{metric} query {i} rank {p}: row {j} (ref {dj:e}) instead of {wj} (ref {wd:e})"
                        );
                    }
                }
            }
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
