//! Where the noise's randomness comes from: ChaCha20 keyed by the operating system.
//!
//! Differential privacy assumes the analyst cannot predict the noise. The training samplers'
//! Philox generator (`topos-sampling`) is keyed by a user-visible seed, which is exactly what must
//! *not* happen here, so noise has its own source: a ChaCha20 stream cipher (a CSPRNG) keyed with
//! 256 bits from the OS (`getrandom`). [`NoiseSource::insecure_seeded`] exists for statistical
//! tests and reproducible audits only; its name says what it is.
//!
//! Only integer operations are offered (uniform integers below a bound, fair bits): the samplers
//! built on top never turn random bits into floating-point numbers.

use crate::PrivacyError;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

/// A cryptographically secure source of random bits for noise.
pub struct NoiseSource {
    rng: ChaCha20Rng,
    /// Unused random bits for [`NoiseSource::bit`], and how many.
    bits: u32,
    nbits: u32,
}

impl std::fmt::Debug for NoiseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.write_str("NoiseSource { .. }")
    }
}

impl NoiseSource {
    /// A ChaCha20 generator keyed with 32 bytes from the operating system. This is the only
    /// constructor a release of private data may use.
    pub fn from_os() -> Result<Self, PrivacyError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| PrivacyError::Entropy(e.to_string()))?;
        Ok(Self::from_key(key))
    }

    /// A generator whose whole output is determined by `seed`: **not private**, for statistical
    /// tests of the samplers and reproducible audits only.
    pub fn insecure_seeded(seed: u64) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(b"INSECURE");
        Self::from_key(key)
    }

    fn from_key(key: [u8; 32]) -> Self {
        NoiseSource {
            rng: ChaCha20Rng::from_seed(key),
            bits: 0,
            nbits: 0,
        }
    }

    /// A fresh key drawn from this source, for independent sub-streams ([`NoiseSource::substream`]).
    pub(crate) fn fork_key(&mut self) -> [u8; 32] {
        let mut key = [0u8; 32];
        self.rng.fill_bytes(&mut key);
        key
    }

    /// Stream `index` of the cipher keyed by `key`: independent, non-overlapping ChaCha20 streams,
    /// so batched noise is the same for any number of threads.
    pub(crate) fn substream(key: [u8; 32], index: u64) -> Self {
        let mut rng = ChaCha20Rng::from_seed(key);
        rng.set_stream(index);
        NoiseSource {
            rng,
            bits: 0,
            nbits: 0,
        }
    }

    /// 64 uniform bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// 32 uniform bits (one ChaCha20 output word).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.rng.next_u32()
    }

    /// A fair coin (32 coins per cipher word).
    #[inline]
    pub fn bit(&mut self) -> bool {
        if self.nbits == 0 {
            self.bits = self.next_u32();
            self.nbits = 32;
        }
        let b = self.bits & 1 == 1;
        self.bits >>= 1;
        self.nbits -= 1;
        b
    }

    /// Uniform on `0..n` (n ≥ 1), exactly: Lemire's multiply-and-reject on 32 bits.
    #[inline]
    pub fn below_u32(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let mut m = (self.next_u32() as u64) * (n as u64);
        if (m as u32) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = (self.next_u32() as u64) * (n as u64);
            }
        }
        (m >> 32) as u32
    }

    /// Uniform on `0..n` (n ≥ 1), exactly: Lemire's multiply-and-reject, no modulo bias.
    #[inline]
    pub fn below_u64(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        if n <= u32::MAX as u64 {
            return self.below_u32(n as u32) as u64;
        }
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform on `0..n` (n ≥ 1), exactly: bits masked to n's width, rejected when ≥ n
    /// (fewer than two tries on average).
    #[inline]
    pub fn below_u128(&mut self, n: u128) -> u128 {
        debug_assert!(n > 0);
        if n <= u64::MAX as u128 {
            return self.below_u64(n as u64) as u128;
        }
        let bits = 128 - (n - 1).leading_zeros();
        let mask = if bits == 128 {
            u128::MAX
        } else {
            (1u128 << bits) - 1
        };
        loop {
            let x = (((self.next_u64() as u128) << 64) | self.next_u64() as u128) & mask;
            if x < n {
                return x;
            }
        }
    }

    /// Bernoulli(num/den) exactly (0 ≤ num ≤ den, den ≥ 1).
    #[inline]
    pub fn bernoulli_ratio(&mut self, num: u128, den: u128) -> bool {
        debug_assert!(num <= den && den > 0);
        self.below_u128(den) < num
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_sources_differ_and_seeded_ones_repeat() {
        let mut a = NoiseSource::from_os().unwrap();
        let mut b = NoiseSource::from_os().unwrap();
        assert_ne!((a.next_u64(), a.next_u64()), (b.next_u64(), b.next_u64()));
        let mut c = NoiseSource::insecure_seeded(7);
        let mut d = NoiseSource::insecure_seeded(7);
        assert_eq!(c.next_u64(), d.next_u64());
        assert_eq!(format!("{c:?}"), "NoiseSource { .. }");
    }

    #[test]
    fn below_is_uniform_including_wide_bounds() {
        let mut r = NoiseSource::insecure_seeded(1);
        // n = 3: each residue ~1/3; n just above 2^64: both halves hit.
        let mut hits = [0u32; 3];
        for _ in 0..30_000 {
            hits[r.below_u64(3) as usize] += 1;
        }
        for h in hits {
            // Binomial(30000, 1/3): sd ≈ 82; 6 sd ≈ 490 (false alarm < 1e-8).
            assert!((h as i64 - 10_000).abs() < 490, "{hits:?}");
        }
        let n = (1u128 << 64) + 5;
        let mut high = 0;
        for _ in 0..10_000 {
            let x = r.below_u128(n);
            assert!(x < n);
            high += (x >= n / 2) as u32;
        }
        assert!((high as i64 - 5_000).abs() < 300, "{high}");
        let mut streams: Vec<u64> = (0..4)
            .map(|i| NoiseSource::substream([9; 32], i).next_u64())
            .collect();
        streams.dedup();
        assert_eq!(streams.len(), 4);
    }
}
