//! The dense f64 reference of every metric (SciPy's definitions, written directly over dense
//! vectors), random sparse rows of the awkward kinds, and the checks of a backend against the
//! reference. Shared by this crate's `reference.rs` (the CPU engine, in CI) and the GPU
//! tests (the CUDA engine, on the device machine).
//!
//! Tolerance: |got − ref| ≤ 1e-5·|ref| + 1e-10. The relative part is the bound for f32
//! output (our results are right to ~1e-9 before the f32 rounding of 6e-8). The absolute 1e-10
//! covers distances that are ~0 where the *definition* cancels — 1 − cos, 1 − r for
//! near-parallel rows and KL's signed sum, whose f64 value (ours, the reference's and SciPy's)
//! is only known to ~1e-16 — and nothing else.

#![allow(dead_code)]

use topos_distance::{knn_with, pairwise_distances_with, Backend, CsrMatrix, KnnOptions, Metric};

/// splitmix64: a tiny deterministic generator (no dependency).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub fn value(rng: &mut Rng, signed: bool) -> f32 {
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
pub fn random_rows(
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

pub fn csr(rows: &[Vec<f32>], n_cols: usize) -> CsrMatrix {
    CsrMatrix::from_dense(rows, n_cols).unwrap()
}

/// The reference: each definition written directly over dense f64 vectors (SciPy's semantics).
pub fn reference(metric: Metric, x: &[f32], y: &[f32]) -> f64 {
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

pub fn close(got: f64, want: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= 1e-5 * want.abs() + 1e-10
}

pub fn metrics() -> Vec<Metric> {
    let mut all = Metric::all(3.0).to_vec();
    all.push(Metric::Minkowski(1.5));
    all.push(Metric::Minkowski(1.0));
    all.push(Metric::Minkowski(2.0));
    all
}

/// (index rows, query rows, n_cols) for one metric: non-negative values where required, and
/// queries that share some rows with the index (identical pairs across the two matrices).
pub fn data(
    metric: Metric,
    seed: u64,
    n_cols: usize,
    density: f64,
) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let signed = !metric.requires_non_negative();
    let index = random_rows(seed, 60, n_cols, density, signed);
    let mut queries = random_rows(seed + 1, 35, n_cols, density, signed);
    queries.extend(index.iter().step_by(7).cloned());
    (index, queries)
}

/// The reference's k nearest: sort by (distance, index), NaN last; the dot product largest first.
pub fn reference_knn(metric: Metric, index: &[Vec<f32>], q: &[f32], k: usize) -> Vec<(usize, f64)> {
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

/// Every metric's full distance matrix on `backend` against the dense reference.
pub fn check_pairwise(backend: &dyn Backend) {
    for (seed, n_cols, density) in [(1, 12, 0.3), (2, 40, 0.15), (3, 400, 0.02)] {
        for metric in metrics() {
            let (index, queries) = data(metric, seed, n_cols, density);
            let d = pairwise_distances_with(
                backend,
                &csr(&queries, n_cols),
                &csr(&index, n_cols),
                metric,
            )
            .unwrap();
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

/// Every metric's k nearest on `backend` against the reference's, ties by index.
pub fn check_knn(backend: &dyn Backend) {
    // k = 60 is every index row: the whole order, NaN rows last, ties by index. The last two
    // are self-joins (the queries are the index's rows) of an index whose queries touch most
    // rows, where the CPU engine computes each pair once.
    for (seed, n_cols, density, k, self_join) in [
        (11, 15, 0.3, 7, false),
        (12, 300, 0.03, 7, false),
        (13, 300, 0.03, 60, false),
        (14, 15, 0.3, 7, true),
        (15, 15, 0.3, 60, true),
    ] {
        for metric in metrics() {
            let (index, mut queries) = data(metric, seed, n_cols, density);
            if self_join {
                queries = index.clone();
            }
            let got = knn_with(
                backend,
                &csr(&index, n_cols),
                &csr(&queries, n_cols),
                k,
                metric,
                &KnnOptions::default(),
            )
            .unwrap();
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
