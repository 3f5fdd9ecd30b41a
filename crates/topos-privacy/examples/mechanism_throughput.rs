//! Measures batched discrete Laplace noise (what private training adds to word-topic counts)
//! and the MDMM allocator at 10,000+ sub-queries.
//!
//! `cargo run --release -p topos-privacy --example mechanism_throughput`

use std::time::Instant;
use topos_privacy::allocate::Problem;
use topos_privacy::mdmm::MdmmOptions;
use topos_privacy::{Composition, DiscreteLaplace, Epsilon, NoiseSource, Sensitivity};

fn main() {
    let n = 10_000_000usize;
    let counts: Vec<u32> = (0..n as u32).map(|i| i % 1000).collect();
    println!(
        "discrete Laplace noise on {n} u32 counts ({} threads)",
        rayon::current_num_threads()
    );
    for (delta, eps) in [(1u64, 1.0), (1, 0.1), (500, 0.005), (500, 1.0)] {
        let d = DiscreteLaplace::calibrated(delta, Epsilon::new(eps).unwrap()).unwrap();
        let mut src = NoiseSource::from_os().unwrap();
        for (label, threads) in [("1 thread", 1), ("all threads", 0)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut c = counts.clone();
            let t = Instant::now();
            pool.install(|| d.add_to_u32_clamped(&mut c, &mut src));
            let s = t.elapsed().as_secs_f64();
            println!(
                "  sensitivity {delta:>3}, ε = {eps:<5} (scale {:>9.1}): {label:<11} {:>6.1} M counts/s",
                d.scale(),
                n as f64 / s / 1e6
            );
        }
    }

    println!("MDMM allocation");
    for &m in &[10_000usize, 100_000] {
        let sens: Vec<Sensitivity> = (0..m)
            .map(|i| Sensitivity::new(1.0 + ((i * 7919) % 1000) as f64 / 10.0).unwrap())
            .collect();
        let p = Problem::new(Epsilon::new(1.0).unwrap(), Composition::Sequential, sens);
        let a = p.solve(&MdmmOptions::default()).unwrap();
        let cf = a.closed_form_objective.unwrap();
        println!(
            "  {m:>7} sub-queries, sequential:            {:>4} iterations, {:>7.1} ms, gap to closed form {:.1e}",
            a.iterations,
            a.seconds * 1e3,
            (a.objective - cf).abs() / cf
        );
        let mut p = p;
        for i in 0..100 {
            p = p
                .with_constraint(&format!("eps[{}] <= 0.5 * eps[{}]", 2 * i, 2 * i + 1))
                .unwrap();
        }
        let a = p.solve(&MdmmOptions::default()).unwrap();
        println!(
            "  {m:>7} sub-queries, + 100 constraints:     {:>4} iterations, {:>7.1} ms, violation {:.1e}",
            a.iterations,
            a.seconds * 1e3,
            a.max_violation
        );
    }
}
