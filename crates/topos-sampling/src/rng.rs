//! Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
//! as 1, 2, 3", SC'11).
//!
//! A counter-based generator has no state to carry from one token to the next: the n-th number of a
//! stream is `philox(key = seed, counter = (index, iteration, stream|block))`. Topos keys every draw
//! by the seed, the purpose of the draw ([`Stream`]), the iteration and the global index of the token
//! (its position in the corpus in document order). Which thread, chunk or GPU samples a token then
//! has no influence on the numbers it sees, so a run is reproducible for any degree of parallelism.
//! The GPU kernels implement the same function, so CPU and GPU draw identical numbers.

/// Multipliers and Weyl constants of Philox4x32 (Random123).
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The Philox4x32-10 block function under one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Philox4x32 {
    key: [u32; 2],
}

impl Philox4x32 {
    /// A generator keyed by a 64-bit seed.
    pub fn new(seed: u64) -> Self {
        Self {
            key: [seed as u32, (seed >> 32) as u32],
        }
    }

    /// Ten rounds of Philox4x32 on `ctr`: four independent uniform 32-bit words.
    #[inline]
    pub fn block(&self, mut ctr: [u32; 4]) -> [u32; 4] {
        let mut key = self.key;
        for round in 0..10 {
            if round > 0 {
                key[0] = key[0].wrapping_add(W0);
                key[1] = key[1].wrapping_add(W1);
            }
            let p0 = u64::from(M0) * u64::from(ctr[0]);
            let p1 = u64::from(M1) * u64::from(ctr[2]);
            let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
            let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
            ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0];
        }
        ctr
    }
}

/// What a stream of random numbers is used for. Distinct purposes never share numbers, so adding
/// draws to one (say, evaluation) cannot change another (training).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stream {
    /// Initial topic assignments.
    Init = 1,
    /// Training sweeps.
    Train = 2,
    /// Fold-in of unseen or held-out documents (inference, evaluation).
    Infer = 3,
    /// Synthetic corpora and other test data.
    Synthetic = 4,
    /// Held-out split of documents when preparing a corpus.
    Split = 5,
    /// Rounding of exact counts to approximate counters (Mean-for-Mode's `--counters`).
    Counters = 6,
}

/// A stream of random numbers for one `(seed, stream, iteration, index)`, typically one token in
/// one iteration. Up to 2²⁴ Philox blocks (2²⁶ words) are available per stream.
#[derive(Clone, Debug)]
pub struct CounterRng {
    gen: Philox4x32,
    ctr: [u32; 4],
    buf: [u32; 4],
    used: usize,
}

impl CounterRng {
    /// The stream of numbers for `index` (e.g. a global token index) in `iteration`.
    #[inline]
    pub fn new(seed: u64, stream: Stream, iteration: u32, index: u64) -> Self {
        Self::from_generator(Philox4x32::new(seed), stream, iteration, index)
    }

    /// Same as [`CounterRng::new`] with a prepared key (saves nothing but a move; kept for clarity
    /// in hot loops that create one stream per token).
    #[inline]
    pub fn from_generator(gen: Philox4x32, stream: Stream, iteration: u32, index: u64) -> Self {
        Self {
            gen,
            ctr: [
                index as u32,
                (index >> 32) as u32,
                iteration,
                (stream as u32) << 24,
            ],
            buf: [0; 4],
            used: 4,
        }
    }

    /// The first [`CounterRng::next_f64`] of the stream for `index`, without building the stream:
    /// the one-draw-per-token hot loops call this, and it stays inlined there (the general
    /// `next_u32` path with its buffer does not).
    #[inline(always)]
    pub fn first_f64(gen: &Philox4x32, stream: Stream, iteration: u32, index: u64) -> f64 {
        let b = gen.block([
            index as u32,
            (index >> 32) as u32,
            iteration,
            (stream as u32) << 24,
        ]);
        let hi = u64::from(b[0] >> 5);
        let lo = u64::from(b[1] >> 6);
        ((hi << 26) | lo) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// [`CounterRng::first_f64`] for every index of `first..first + out.len()`, into `out`: the
    /// same numbers, several blocks at a time. A sampler that visits tokens in corpus order (the
    /// `cgs` sweep, document by document) asks for a document's numbers at once; with AVX2 four
    /// Philox blocks are computed per instruction (32×32→64-bit multiplies on four lanes), about
    /// a third of the cost of one block at a time, and Philox was a tenth of that sweep.
    pub fn fill_first_f64(
        gen: &Philox4x32,
        stream: Stream,
        iteration: u32,
        first: u64,
        out: &mut [f64],
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected.
            unsafe { fill_first_f64_avx2(gen, stream, iteration, first, out) };
            return;
        }
        for (i, o) in out.iter_mut().enumerate() {
            *o = Self::first_f64(gen, stream, iteration, first + i as u64);
        }
    }

    /// The next uniform 32-bit word.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            self.buf = self.gen.block(self.ctr);
            self.ctr[3] = self.ctr[3].wrapping_add(1);
            self.used = 0;
        }
        let x = self.buf[self.used];
        self.used += 1;
        x
    }

    /// Uniform in [0, 1) with 24 bits of resolution.
    #[inline]
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }

    /// Uniform in [0, 1) with 53 bits of resolution.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        let hi = u64::from(self.next_u32() >> 5); // 27 bits
        let lo = u64::from(self.next_u32() >> 6); // 26 bits
        ((hi << 26) | lo) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject). `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u64::from(self.next_u32()) * u64::from(n);
            if (m as u32) >= threshold {
                return (m >> 32) as u32;
            }
        }
    }

    /// A standard normal variate (Box–Muller), for synthetic data.
    pub fn next_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A Gamma(shape, 1) variate (Marsaglia–Tsang), for drawing Dirichlet vectors in synthetic data.
    pub fn next_gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = 1.0 - self.next_f64();
            return self.next_gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.next_normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = 1.0 - self.next_f64();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

/// [`CounterRng::fill_first_f64`] with AVX2: the Philox rounds of [`Philox4x32::block`] on four
/// counters at once, each 32-bit word in a 64-bit lane so that `_mm256_mul_epu32` gives the full
/// product; only the two words a 53-bit uniform needs are kept. Integer arithmetic and an exact
/// conversion (both halves below 2^52), so the numbers are bit-identical to the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_first_f64_avx2(
    gen: &Philox4x32,
    stream: Stream,
    iteration: u32,
    first: u64,
    out: &mut [f64],
) {
    use std::arch::x86_64::*;
    let n = out.len();
    let mut keys = [[0u32; 2]; 10];
    keys[0] = gen.key;
    for r in 1..10 {
        keys[r] = [
            keys[r - 1][0].wrapping_add(W0),
            keys[r - 1][1].wrapping_add(W1),
        ];
    }
    let lo32 = _mm256_set1_epi64x(0xFFFF_FFFF);
    let m0 = _mm256_set1_epi64x(i64::from(M0));
    let m1 = _mm256_set1_epi64x(i64::from(M1));
    let c2_init = _mm256_set1_epi64x(i64::from(iteration));
    let c3_init = _mm256_set1_epi64x(i64::from((stream as u32) << 24));
    // 2^52 as bits and as a float: (x | bits) − 2^52 converts an integer below 2^52 exactly.
    let magic_bits = _mm256_set1_epi64x(0x4330_0000_0000_0000);
    let magic = _mm256_set1_pd(4_503_599_627_370_496.0);
    let two26 = _mm256_set1_pd(67_108_864.0);
    let scale = _mm256_set1_pd(1.0 / 9_007_199_254_740_992.0);
    let mut i = 0;
    while i + 4 <= n {
        let idx = [0usize, 1, 2, 3].map(|j| first + (i + j) as u64);
        let mut c0 = _mm256_set_epi64x(
            i64::from(idx[3] as u32),
            i64::from(idx[2] as u32),
            i64::from(idx[1] as u32),
            i64::from(idx[0] as u32),
        );
        let mut c1 = _mm256_set_epi64x(
            (idx[3] >> 32) as i64,
            (idx[2] >> 32) as i64,
            (idx[1] >> 32) as i64,
            (idx[0] >> 32) as i64,
        );
        let (mut c2, mut c3) = (c2_init, c3_init);
        for key in &keys {
            let k0 = _mm256_set1_epi64x(i64::from(key[0]));
            let k1 = _mm256_set1_epi64x(i64::from(key[1]));
            let p0 = _mm256_mul_epu32(c0, m0);
            let p1 = _mm256_mul_epu32(c2, m1);
            let (hi0, lo0) = (_mm256_srli_epi64::<32>(p0), _mm256_and_si256(p0, lo32));
            let (hi1, lo1) = (_mm256_srli_epi64::<32>(p1), _mm256_and_si256(p1, lo32));
            c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), k0);
            c1 = lo1;
            c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), k1);
            c3 = lo0;
        }
        // (b0 >> 5) · 2^26 + (b1 >> 6), then · 2^-53, as in `first_f64`.
        let hi = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64::<5>(c0), magic_bits)),
            magic,
        );
        let lo = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64::<6>(c1), magic_bits)),
            magic,
        );
        let u = _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(hi, two26), lo), scale);
        _mm256_storeu_pd(out.as_mut_ptr().add(i), u);
        i += 4;
    }
    for (j, o) in out.iter_mut().enumerate().skip(i) {
        *o = CounterRng::first_f64(gen, stream, iteration, first + j as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_first_f64_matches_first_f64() {
        let gen = Philox4x32::new(0x1234_5678_9abc_def0);
        for (first, len) in [
            (0u64, 0usize),
            (5, 1),
            (7, 4),
            (11, 13),
            ((1 << 32) - 6, 11),
        ] {
            let mut out = vec![0.0; len];
            CounterRng::fill_first_f64(&gen, Stream::Train, 9, first, &mut out);
            for (j, &u) in out.iter().enumerate() {
                let want = CounterRng::first_f64(&gen, Stream::Train, 9, first + j as u64);
                assert_eq!(u.to_bits(), want.to_bits(), "index {}", first + j as u64);
            }
        }
    }

    /// Known-answer vectors of Random123's `kat_vectors` for philox4x32_10.
    #[test]
    fn philox_known_answers() {
        let zero = Philox4x32 { key: [0, 0] };
        assert_eq!(
            zero.block([0; 4]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        let ones = Philox4x32 {
            key: [u32::MAX, u32::MAX],
        };
        assert_eq!(
            ones.block([u32::MAX; 4]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        let pi = Philox4x32 {
            key: [0xa409_3822, 0x299f_31d0],
        };
        assert_eq!(
            pi.block([0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344]),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn first_f64_is_the_streams_first_draw() {
        let gen = Philox4x32::new(77);
        for index in [0u64, 1, 1 << 33, u64::MAX] {
            let mut r = CounterRng::from_generator(gen, Stream::Train, 9, index);
            assert_eq!(
                CounterRng::first_f64(&gen, Stream::Train, 9, index),
                r.next_f64()
            );
        }
    }

    #[test]
    fn streams_are_distinct_and_reproducible() {
        let a: Vec<u32> = {
            let mut r = CounterRng::new(7, Stream::Train, 3, 12345);
            (0..8).map(|_| r.next_u32()).collect()
        };
        let b: Vec<u32> = {
            let mut r = CounterRng::new(7, Stream::Train, 3, 12345);
            (0..8).map(|_| r.next_u32()).collect()
        };
        let c: Vec<u32> = {
            let mut r = CounterRng::new(7, Stream::Init, 3, 12345);
            (0..8).map(|_| r.next_u32()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn uniform_moments_and_bounded_ints() {
        let n = 200_000;
        let mut sum = 0.0;
        let mut counts = [0u32; 7];
        for i in 0..n {
            let mut r = CounterRng::new(1, Stream::Synthetic, 0, i);
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
            sum += u;
            counts[r.below(7) as usize] += 1;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.005);
        // chi-square with 6 degrees of freedom; 22.46 is the 0.999 quantile.
        let e = n as f64 / 7.0;
        let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
        assert!(chi2 < 22.46, "chi2 = {chi2}");
    }

    #[test]
    fn gamma_mean_matches_shape() {
        let mut r = CounterRng::new(3, Stream::Synthetic, 0, 0);
        for shape in [0.1, 1.0, 4.5] {
            let n = 50_000;
            let mean: f64 = (0..n).map(|_| r.next_gamma(shape)).sum::<f64>() / n as f64;
            assert!(
                (mean - shape).abs() < 0.05 * shape.max(0.2),
                "{shape}: {mean}"
            );
        }
    }
}
