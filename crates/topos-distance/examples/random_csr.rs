//! Writes a random CSR matrix in the raw format of `examples/common` (for the k-NN benchmark):
//! every entry is non-zero with probability `density` (exactly: each row draws
//! round(density·cols) ± its binomial spread of distinct columns), values uniform in (0, 1].
//!
//! `cargo run --release -p topos-distance --example random_csr -- DIR [ROWS COLS DENSITY SEED [zipf]]`
//! (defaults: 20000 50000 0.002 1). With `zipf`, row degrees are skewed like text: each row's
//! density is DENSITY × w with w Pareto-distributed (tail index 1.5, mean 1; capped at half the
//! columns), so most rows are short and a few are hundreds of times longer — the load-balancing
//! case of the paper's §3.3.2.

mod common;

use std::path::PathBuf;
use topos_distance::CsrMatrix;

/// splitmix64.
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
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .ok_or("usage: random_csr DIR [ROWS COLS DENSITY SEED]")?,
    );
    let rows: usize = args.get(1).map_or(Ok(20_000), |s| s.parse())?;
    let cols: usize = args.get(2).map_or(Ok(50_000), |s| s.parse())?;
    let density: f64 = args.get(3).map_or(Ok(0.002), |s| s.parse())?;
    let seed: u64 = args.get(4).map_or(Ok(1), |s| s.parse())?;
    let zipf = args.get(5).is_some_and(|s| s == "zipf");
    let mut rng = Rng(seed);
    let mut offsets = vec![0u64];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    let mut row: Vec<u32> = Vec::new();
    for _ in 0..rows {
        // Geometric gaps give each column probability `density`, independently.
        row.clear();
        let d = if zipf {
            // Pareto(x_m = 1/3, α = 1.5): mean α·x_m/(α − 1) = 1.
            let w = (1.0 / 3.0) / rng.unit().powf(1.0 / 1.5);
            (density * w).min(0.5)
        } else {
            density
        };
        let mut c = -1i64;
        loop {
            let gap = (rng.unit().ln() / (1.0 - d).ln()).floor() as i64;
            c += gap + 1;
            if c >= cols as i64 {
                break;
            }
            row.push(c as u32);
        }
        for &c in &row {
            indices.push(c);
            values.push(rng.unit() as f32);
        }
        offsets.push(indices.len() as u64);
    }
    let m = CsrMatrix::new(cols, offsets, indices, values)?;
    common::write_raw(&m, &dir)?;
    println!(
        "{} x {} with {} non-zeros (density {:.5}) -> {}",
        m.n_rows(),
        m.n_cols(),
        m.nnz(),
        m.nnz() as f64 / (rows * cols) as f64,
        dir.display()
    );
    Ok(())
}
