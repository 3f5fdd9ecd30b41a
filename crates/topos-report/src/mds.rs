//! Distances between topics and the two-dimensional map of them: the Jensen–Shannon divergence
//! of every pair of topic-word distributions and classical multidimensional scaling (principal
//! coordinate analysis), as LDAvis and pyLDAvis (`js_PCoA`) draw their intertopic distance map.
//!
//! Topics are given sparsely: the words with a non-zero count, and one background probability for
//! every other word (a word with no count in topic k has φ_kw = β / (n_k + Vβ)). The divergence of
//! a pair is summed over the union of their supports, plus the background pair times the number of
//! words in neither, so a pair costs the size of its supports, not V.
//!
//! The two leading eigenvectors of the double-centred matrix come from the Lanczos iteration with
//! full reorthogonalization (exact once the Krylov space is the whole space, which it is at once
//! for K ≤ 64), the small tridiagonal problems from cyclic Jacobi rotations.

use rayon::prelude::*;

/// One topic's distribution over V words: `(word, probability)` for the words of its support in
/// increasing word order, and `background`, the probability of every other word.
#[derive(Clone, Debug)]
pub struct SparseTopic {
    pub support: Vec<(u32, f64)>,
    pub background: f64,
}

/// ½ p ln(2p/(p+q)) + ½ q ln(2q/(p+q)): one word's share of JSD(P‖Q) (natural logarithm).
#[inline]
fn js_term(p: f64, q: f64) -> f64 {
    let m = 0.5 * (p + q);
    let mut s = 0.0;
    if p > 0.0 {
        s += p * (p / m).ln();
    }
    if q > 0.0 {
        s += q * (q / m).ln();
    }
    0.5 * s
}

/// The Jensen–Shannon divergence ½ KL(P‖M) + ½ KL(Q‖M), M = (P + Q)/2, of two topics over
/// `num_words` words. (LDAvis and pyLDAvis scale the map by this divergence, not by its square
/// root, the Jensen–Shannon distance; so does Topos, to draw the same map.)
pub fn js_divergence(a: &SparseTopic, b: &SparseTopic, num_words: usize) -> f64 {
    let (x, y) = (&a.support, &b.support);
    let (mut i, mut j, mut union, mut s) = (0, 0, 0usize, 0.0);
    while i < x.len() || j < y.len() {
        let wa = x.get(i).map_or(u32::MAX, |e| e.0);
        let wb = y.get(j).map_or(u32::MAX, |e| e.0);
        let (p, q) = match wa.cmp(&wb) {
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                (x[i - 1].1, y[j - 1].1)
            }
            std::cmp::Ordering::Less => {
                i += 1;
                (x[i - 1].1, b.background)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                (a.background, y[j - 1].1)
            }
        };
        s += js_term(p, q);
        union += 1;
    }
    let rest = num_words.saturating_sub(union) as f64;
    s + rest * js_term(a.background, b.background)
}

/// The K × K matrix of Jensen–Shannon divergences (row-major), computed in parallel by row.
pub fn js_matrix(topics: &[SparseTopic], num_words: usize) -> Vec<f64> {
    let k = topics.len();
    let rows: Vec<Vec<f64>> = (0..k)
        .into_par_iter()
        .map(|i| {
            (0..k)
                .map(|j| {
                    if j > i {
                        js_divergence(&topics[i], &topics[j], num_words)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let mut d = vec![0.0; k * k];
    for i in 0..k {
        for j in i + 1..k {
            d[i * k + j] = rows[i][j];
            d[j * k + i] = rows[i][j];
        }
    }
    d
}

/// Classical multidimensional scaling of a symmetric K × K dissimilarity matrix to two
/// coordinates per item, as pyLDAvis's `_pcoa`: B = −½ H D² H with H the centring matrix, the two
/// largest eigenvalues λ and their unit eigenvectors u, coordinates √λ·u; an eigenvalue within
/// 1e-8 of zero or below gives a zero axis. Each axis's sign is fixed so that its coordinate of
/// largest magnitude is positive (an eigenvector's sign is arbitrary; pyLDAvis leaves it to LAPACK).
pub fn pcoa(dist: &[f64], k: usize) -> Vec<[f64; 2]> {
    assert_eq!(dist.len(), k * k);
    if k == 0 {
        return Vec::new();
    }
    // B = −½ H D² H: double centring of the squared dissimilarities.
    let mut b: Vec<f64> = dist.iter().map(|d| d * d).collect();
    let row_means: Vec<f64> = (0..k)
        .map(|i| b[i * k..(i + 1) * k].iter().sum::<f64>() / k as f64)
        .collect();
    let grand = row_means.iter().sum::<f64>() / k as f64;
    for i in 0..k {
        for j in 0..k {
            b[i * k + j] = -0.5 * (b[i * k + j] - row_means[i] - row_means[j] + grand);
        }
    }
    let pairs = top_eigenpairs(&b, k, 2);
    let mut coords = vec![[0.0f64; 2]; k];
    for (axis, (lambda, vector)) in pairs.into_iter().enumerate() {
        if lambda.abs() <= 1e-8 || lambda < 0.0 {
            continue;
        }
        let biggest = vector
            .iter()
            .copied()
            .fold(0.0f64, |m, x| if x.abs() > m.abs() { x } else { m });
        let sign = if biggest < 0.0 { -1.0 } else { 1.0 };
        let scale = lambda.sqrt() * sign;
        for (c, x) in coords.iter_mut().zip(&vector) {
            c[axis] = scale * x;
        }
    }
    coords
}

/// The `count` algebraically largest eigenvalues of the symmetric n × n matrix `a` (row-major),
/// with unit eigenvectors, largest first (fewer when n < count; a missing pair reads as zero).
pub fn top_eigenpairs(a: &[f64], n: usize, count: usize) -> Vec<(f64, Vec<f64>)> {
    let mut out = if n <= 64 {
        let (values, vectors) = jacobi(a.to_vec(), n);
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by(|&x, &y| values[y].total_cmp(&values[x]));
        idx.iter()
            .take(count)
            .map(|&i| (values[i], (0..n).map(|r| vectors[r * n + i]).collect()))
            .collect()
    } else {
        lanczos(a, n, count)
    };
    while out.len() < count {
        out.push((0.0, vec![0.0; n]));
    }
    out
}

fn matvec(a: &[f64], n: usize, x: &[f64]) -> Vec<f64> {
    a.par_chunks(n)
        .map(|row| row.iter().zip(x).map(|(p, q)| p * q).sum())
        .collect()
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(p, q)| p * q).sum()
}

/// Lanczos with full reorthogonalization, extended until the wanted Ritz pairs' residuals are
/// below 1e-12 of the largest Ritz value (or the Krylov space is invariant or the whole space).
fn lanczos(a: &[f64], n: usize, count: usize) -> Vec<(f64, Vec<f64>)> {
    // A fixed start with components along every direction but the constant one (which the double
    // centring makes an eigenvector of eigenvalue 0).
    let mut q0: Vec<f64> = (0..n)
        .map(|i| ((i as f64 * 12.9898).sin() * 43758.5453).fract() - 0.5)
        .collect();
    let norm = dot(&q0, &q0).sqrt();
    q0.iter_mut().for_each(|x| *x /= norm);
    let mut qs: Vec<Vec<f64>> = vec![q0];
    let (mut alphas, mut betas) = (Vec::<f64>::new(), Vec::<f64>::new());
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
    loop {
        let j = qs.len() - 1;
        let mut w = matvec(a, n, &qs[j]);
        let alpha = dot(&qs[j], &w);
        alphas.push(alpha);
        for _ in 0..2 {
            for q in &qs {
                let c = dot(q, &w);
                w.iter_mut().zip(q).for_each(|(x, y)| *x -= c * y);
            }
        }
        let beta = dot(&w, &w).sqrt();
        let m = alphas.len();
        let done = beta <= 1e-12 * scale || m == n;
        if done || (m >= 2 * count + 8 && m % 10 == 0) {
            let mut t = vec![0.0; m * m];
            for i in 0..m {
                t[i * m + i] = alphas[i];
                if i + 1 < m {
                    t[i * m + i + 1] = betas[i];
                    t[(i + 1) * m + i] = betas[i];
                }
            }
            let (values, vectors) = jacobi(t, m);
            let mut idx: Vec<usize> = (0..m).collect();
            idx.sort_by(|&x, &y| values[y].total_cmp(&values[x]));
            let wanted = &idx[..count.min(m)];
            let top = values[idx[0]].abs().max(1e-300);
            let converged = wanted
                .iter()
                .all(|&i| (beta * vectors[(m - 1) * m + i]).abs() <= 1e-12 * top);
            if done || converged {
                return wanted
                    .iter()
                    .map(|&i| {
                        let mut x = vec![0.0; n];
                        for (r, q) in qs.iter().enumerate() {
                            let s = vectors[r * m + i];
                            x.iter_mut().zip(q).for_each(|(v, y)| *v += s * y);
                        }
                        let norm = dot(&x, &x).sqrt().max(1e-300);
                        x.iter_mut().for_each(|v| *v /= norm);
                        (values[i], x)
                    })
                    .collect();
            }
        }
        betas.push(beta);
        w.iter_mut().for_each(|x| *x /= beta);
        qs.push(w);
    }
}

/// Eigenvalues and eigenvectors (columns of the returned row-major matrix) of a symmetric n × n
/// matrix by cyclic Jacobi rotations.
fn jacobi(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        if off <= 1e-30 * total || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..n {
                    let (arp, arq) = (a[r * n + p], a[r * n + q]);
                    a[r * n + p] = c * arp - s * arq;
                    a[r * n + q] = s * arp + c * arq;
                }
                for r in 0..n {
                    let (apr, aqr) = (a[p * n + r], a[q * n + r]);
                    a[p * n + r] = c * apr - s * aqr;
                    a[q * n + r] = s * apr + c * aqr;
                }
                for r in 0..n {
                    let (vrp, vrq) = (v[r * n + p], v[r * n + q]);
                    v[r * n + p] = c * vrp - s * vrq;
                    v[r * n + q] = s * vrp + c * vrq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense_js(p: &[f64], q: &[f64]) -> f64 {
        p.iter().zip(q).map(|(&a, &b)| js_term(a, b)).sum()
    }

    #[test]
    fn sparse_divergence_equals_the_dense_sum() {
        let a = SparseTopic {
            support: vec![(0, 0.5), (3, 0.3)],
            background: 0.05,
        };
        let b = SparseTopic {
            support: vec![(1, 0.4), (3, 0.4), (5, 0.1)],
            background: 0.1 / 3.0,
        };
        let dense = |t: &SparseTopic| {
            let mut v = vec![t.background; 6];
            for &(w, p) in &t.support {
                v[w as usize] = p;
            }
            v
        };
        let expected = dense_js(&dense(&a), &dense(&b));
        assert!((js_divergence(&a, &b, 6) - expected).abs() < 1e-15);
        assert!(js_divergence(&a, &a, 6).abs() < 1e-15);
        let m = js_matrix(&[a.clone(), b.clone(), a], 6);
        assert_eq!(m[1], m[3]);
        assert_eq!(m[2], 0.0);
    }

    #[test]
    fn eigenpairs_of_both_methods_agree() {
        // A symmetric matrix with known spectrum: Q diag(λ) Qᵀ for a rotation-built orthogonal Q.
        let n = 90;
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            let x = ((i * 37 % 101) as f64) / 10.0 - 5.0;
            a[i * n + i] = x;
            if i + 1 < n {
                a[i * n + i + 1] = 0.3;
                a[(i + 1) * n + i] = 0.3;
            }
        }
        let lz = lanczos(&a, n, 2);
        let (values, _) = jacobi(a.clone(), n);
        let mut sorted = values.clone();
        sorted.sort_by(|x, y| y.total_cmp(x));
        for (i, (lambda, v)) in lz.iter().enumerate() {
            assert!(
                (lambda - sorted[i]).abs() < 1e-9,
                "{lambda} vs {}",
                sorted[i]
            );
            let av = matvec(&a, n, v);
            let residual: f64 = av
                .iter()
                .zip(v)
                .map(|(x, y)| (x - lambda * y).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(residual < 1e-8, "residual {residual}");
        }
    }

    #[test]
    fn pcoa_recovers_points_on_a_line() {
        // Points at 0, 1, 3 on a line: classical MDS recovers them up to translation and sign.
        let x = [0.0, 1.0, 3.0f64];
        let d: Vec<f64> = (0..9).map(|i| (x[i / 3] - x[i % 3]).abs()).collect();
        let c = pcoa(&d, 3);
        let mean = x.iter().sum::<f64>() / 3.0;
        for i in 0..3 {
            assert!((c[i][0] - (x[i] - mean)).abs() < 1e-12, "{c:?}");
            assert!(c[i][1].abs() < 1e-6);
        }
        assert_eq!(pcoa(&[0.0], 1), vec![[0.0, 0.0]]);
    }
}
