//! GPU tests of the k-NN engine: ignored by default (CI has no GPU); `bench/gpu.sh` runs them on
//! the device machine with `--ignored`.
#![cfg(feature = "cuda")]

// ---- sparse k-NN (issue 5): the GPU engine against the dense f64 reference that CI checks the
// CPU engine with (topos-distance/tests/support), and against the CPU engine itself.

#[path = "support/mod.rs"]
mod reference_support;

mod knn {
    use topos_distance::gpu::CudaBackend;
    use topos_distance::{
        knn_with, pairwise_distances_with, Backend, CpuBackend, CsrMatrix, KnnOptions, Metric,
    };

    // The reference tests' generator, value mix and metric list.
    use super::reference_support::{metrics, value as random_value, Rng};

    /// Rows of the awkward kinds (empty, one non-zero, identical to an earlier row,
    /// near-identical, scaled by 10³ or 10⁻³, full support, constant), the rest sparse with a
    /// Zipf-like column popularity (column 0 in half the rows: long segments next to short).
    fn rows(seed: u64, n: usize, n_cols: usize, signed: bool) -> Vec<Vec<(u32, f32)>> {
        let mut rng = Rng(seed);
        let mut out: Vec<Vec<(u32, f32)>> = Vec::with_capacity(n);
        let value = |rng: &mut Rng| random_value(rng, signed);
        for i in 0..n {
            let mut row: Vec<(u32, f32)> = Vec::new();
            let sparse = |rng: &mut Rng, row: &mut Vec<(u32, f32)>| {
                let len = 1 + rng.below(60);
                let mut cols: Vec<u32> = (0..len)
                    .map(|_| {
                        // Zipf-like: column ~ n_cols^u² (small columns common).
                        let u = rng.unit();
                        ((n_cols as f64).powf(u * u) as usize - 1).min(n_cols - 1) as u32
                    })
                    .collect();
                if rng.below(2) == 0 {
                    cols.push(0);
                }
                cols.sort_unstable();
                cols.dedup();
                row.extend(cols.into_iter().map(|c| (c, value(rng))));
            };
            match i % 12 {
                0 => {}
                1 => row.push((rng.below(n_cols) as u32, value(&mut rng))),
                2 if i > 2 => row = out[rng.below(i)].clone(),
                3 => {
                    sparse(&mut rng, &mut row);
                    row.iter_mut().for_each(|e| e.1 *= 1e3);
                }
                4 => {
                    sparse(&mut rng, &mut row);
                    row.iter_mut().for_each(|e| e.1 *= 1e-3);
                }
                5 if i > 5 => {
                    row = out[rng.below(i)].clone();
                    if let Some(e) = row.first_mut() {
                        e.1 *= 1.0 + 1e-4;
                    }
                }
                6 if i % 120 == 6 => {
                    row = (0..n_cols as u32).map(|c| (c, value(&mut rng))).collect()
                }
                7 if i % 120 == 7 => row = (0..n_cols as u32).map(|c| (c, 2.0)).collect(),
                _ => sparse(&mut rng, &mut row),
            }
            out.push(row);
        }
        out
    }

    fn csr(rows: &[Vec<(u32, f32)>], n_cols: usize) -> CsrMatrix {
        let mut offsets = vec![0u64];
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        for r in rows {
            for &(c, v) in r {
                idx.push(c);
                val.push(v);
            }
            offsets.push(idx.len() as u64);
        }
        CsrMatrix::new(n_cols, offsets, idx, val).unwrap()
    }

    fn same(g: f32, c: f32) -> bool {
        (g.is_nan() && c.is_nan()) || g == c || (g - c).abs() <= 1e-6 * c.abs()
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_knn_and_distances_match_the_dense_reference() {
        let gpu = CudaBackend::open(None).unwrap();
        super::reference_support::check_pairwise(&gpu);
        super::reference_support::check_knn(&gpu);
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_knn_equals_the_cpu_engine_for_every_metric() {
        let gpu = CudaBackend::open(None).unwrap();
        // 2,600 index rows: three tiles of 1,024 (the last one partial).
        let n_cols = 3_000;
        let mut checked = 0usize;
        for metric in metrics() {
            let signed = !metric.requires_non_negative();
            let index_rows = rows(5, 2_600, n_cols, signed);
            let mut query_rows = rows(6, 150, n_cols, signed);
            query_rows.extend(index_rows.iter().step_by(37).cloned());
            let (index, queries) = (csr(&index_rows, n_cols), csr(&query_rows, n_cols));
            for (k, exclude_self, q) in [
                (10, false, &queries),
                (40, false, &queries),
                (7, true, &index),
            ] {
                let opts = KnnOptions {
                    batch_rows: 4096,
                    exclude_self,
                };
                let c = knn_with(&CpuBackend, &index, q, k, metric, &opts).unwrap();
                let g = knn_with(&gpu, &index, q, k, metric, &opts).unwrap();
                assert_eq!(g.len(), c.len());
                for i in 0..c.len() {
                    let ((ci, cd), (gi, gd)) = (c.row(i), g.row(i));
                    for p in 0..k {
                        assert!(
                            same(gd[p], cd[p]),
                            "{metric} k={k} query {i} rank {p}: GPU {} vs CPU {}",
                            gd[p],
                            cd[p]
                        );
                        // Different rows only at a tie (equal distances in f32).
                        assert!(
                            gi[p] == ci[p] || gd[p] == cd[p],
                            "{metric} k={k} query {i} rank {p}: GPU row {} ({}) vs CPU row {} ({})",
                            gi[p],
                            gd[p],
                            ci[p],
                            cd[p]
                        );
                    }
                }
                checked += c.len();
            }
            // Full distance rows (pairwise) on a few queries.
            let few = csr(&query_rows[..20], n_cols);
            let c = pairwise_distances_with(&CpuBackend, &few, &index, metric).unwrap();
            let g = pairwise_distances_with(&gpu, &few, &index, metric).unwrap();
            for (j, (&gv, &cv)) in g.data.iter().zip(&c.data).enumerate() {
                assert!(
                    same(gv, cv),
                    "{metric} pairwise cell {j}: GPU {gv} vs CPU {cv}"
                );
            }
        }
        eprintln!(
            "{checked} query lists equal over {} metrics",
            metrics().len()
        );
        // What the GPU cannot do is refused in one line.
        let index = csr(&rows(7, 300, 50, true), 50);
        let e = gpu
            .prepare(&index, Metric::Cosine)
            .unwrap()
            .knn(&index, 0..10, 257, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 256") && !e.contains('\n'), "{e}");
    }
}
