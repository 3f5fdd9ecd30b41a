//! Budget allocation (thesis §3.3.2–3.3.4): the worked examples of §3.3.3, the closed form,
//! constraints honoured, and scale.

use topos_privacy::allocate::Problem;
use topos_privacy::mdmm::MdmmOptions;
use topos_privacy::{Composition, Epsilon, Sensitivity};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

fn ones(n: usize) -> Vec<Sensitivity> {
    vec![Sensitivity::COUNT; n]
}

fn solve(p: &Problem) -> topos_privacy::allocate::Allocation {
    p.solve(&MdmmOptions::default()).unwrap()
}

/// §3.3.3: disjoint age bins [0,18], [19,30], [31,50] (Eq. 3.7): (ε, ε, ε), 3/ε².
#[test]
fn thesis_example_disjoint_bins() {
    for e in [0.5, 1.0, 2.0] {
        let a = solve(&Problem::new(
            Epsilon::new(e).unwrap(),
            Composition::Parallel,
            ones(3),
        ));
        assert!(rel(a.objective, 3.0 / (e * e)) < 1e-3, "{}", a.objective);
        for q in &a.queries {
            assert!(rel(q.epsilon, e) < 1e-3 && q.epsilon <= e);
        }
        assert_eq!(a.total_variance, 2.0 * a.objective);
    }
}

/// §3.3.3: overlapping bins [0,18], [10,30], [31,50] (Eq. 3.8): (ε/3, ε/3, ε/3), 27/ε².
#[test]
fn thesis_example_overlapping_bins() {
    for e in [0.5, 1.0, 2.0] {
        let a = solve(&Problem::new(
            Epsilon::new(e).unwrap(),
            Composition::Sequential,
            ones(3),
        ));
        assert!(rel(a.objective, 27.0 / (e * e)) < 1e-3, "{}", a.objective);
        for q in &a.queries {
            assert!(rel(q.epsilon, e / 3.0) < 1e-3);
        }
        assert!(a.epsilons().iter().sum::<f64>() <= e);
    }
}

/// §3.3.3: juveniles protected, ε₁, ε₂ ≤ 0.5·ε₃ (Eq. 3.9): (ε/4, ε/4, ε/2), 36/ε².
#[test]
fn thesis_example_juveniles_constraint() {
    for e in [0.5, 1.0, 2.0] {
        let p = Problem::new(Epsilon::new(e).unwrap(), Composition::Sequential, ones(3))
            .with_constraint("eps[0] <= 0.5 * eps[2]")
            .unwrap()
            .with_constraint("eps[1] <= 0.5 * eps[2]")
            .unwrap();
        let a = solve(&p);
        assert!(rel(a.objective, 36.0 / (e * e)) < 1e-3, "{}", a.objective);
        let x = a.epsilons();
        assert!(
            rel(x[0], e / 4.0) < 1e-3 && rel(x[1], e / 4.0) < 1e-3 && rel(x[2], e / 2.0) < 1e-3
        );
        assert!(x[0] <= 0.5 * x[2] * (1.0 + 1e-6) && x[1] <= 0.5 * x[2] * (1.0 + 1e-6));
        assert!(x.iter().sum::<f64>() <= e);
    }
}

/// Sensitivities spread over two orders of magnitude, N from 2 to 10,000: MDMM (started from
/// the equal split) lands on ε_i = E·S_i^{2/3}/Σ S_j^{2/3}, objective (Σ S_j^{2/3})³/E².
#[test]
fn matches_the_closed_form() {
    for &n in &[2usize, 7, 100, 10_000] {
        let s: Vec<Sensitivity> = (0..n)
            .map(|i| Sensitivity::new(1.0 + 99.0 * ((i * 7919) % n) as f64 / n as f64).unwrap())
            .collect();
        let e = 1.5;
        let p = Problem::new(Epsilon::new(e).unwrap(), Composition::Sequential, s.clone());
        let a = solve(&p);
        let w: f64 = s.iter().map(|s| s.get().powf(2.0 / 3.0)).sum();
        let exact = w.powi(3) / (e * e);
        assert!(
            rel(a.objective, exact) < 1e-3,
            "n = {n}: {} vs {exact}",
            a.objective
        );
        assert_eq!(
            a.closed_form_objective.map(|c| rel(c, exact) < 1e-12),
            Some(true)
        );
        let (cf, _) = p.closed_form();
        for (got, want) in a.epsilons().iter().zip(&cf) {
            assert!(rel(*got, *want) < 1e-3, "n = {n}: {got} vs {want}");
        }
        assert!(a.epsilons().iter().sum::<f64>() <= e);
        // The optimum beats the naive equal split unless all sensitivities are equal.
        assert!(a.objective < a.equal_split_objective);
        eprintln!(
            "n = {n}: {} iterations, {:.1} ms",
            a.iterations,
            a.seconds * 1e3
        );
    }
}

/// Extra constraints of every kind are honoured and change the answer as they should.
#[test]
fn constraints_are_honoured() {
    let s: Vec<Sensitivity> = [1.0, 2.0, 4.0, 8.0, 3.0]
        .iter()
        .map(|&v| Sensitivity::new(v).unwrap())
        .collect();
    let e = 1.0;
    let cons = [
        "eps[4] <= 0.05",
        "eps[3] <= eps[0]",
        "eps[1] + eps[2] >= 0.5 * total",
        "eps[0] == 2 * eps[1] - 0.01",
    ];
    let mut p = Problem::new(Epsilon::new(e).unwrap(), Composition::Sequential, s);
    for c in cons {
        p = p.with_constraint(c).unwrap();
    }
    let a = solve(&p);
    let x = a.epsilons();
    let tol = 1e-6;
    assert!(x[4] <= 0.05 + tol, "{x:?}");
    assert!(x[3] <= x[0] + tol, "{x:?}");
    assert!(x[1] + x[2] >= 0.5 - tol, "{x:?}");
    assert!((x[0] - (2.0 * x[1] - 0.01)).abs() <= tol, "{x:?}");
    assert!(x.iter().sum::<f64>() <= e);
    assert!(x.iter().all(|&v| v > 0.0));
    assert!(a.max_violation <= 1e-6);
    // The constrained optimum is worse than the unconstrained one, and it is a local optimum:
    // moving budget along any feasible direction that keeps the constraints does not help.
    assert!(a.objective > p.closed_form().1);
    let f0 = a.objective;
    let feasible = |y: &[f64]| {
        p.constraints.iter().all(|c| c.violation(y, e) <= 1e-9)
            && y.iter().sum::<f64>() <= e + 1e-12
    };
    let mut tried = 0;
    for i in 0..5 {
        for j in 0..5 {
            if i == j {
                continue;
            }
            let mut y = x.clone();
            y[i] += 1e-4;
            y[j] -= 1e-4;
            if feasible(&y) {
                tried += 1;
                assert!(p.objective(&y) >= f0 * (1.0 - 1e-6), "{i}->{j}");
            }
        }
    }
    assert!(tried > 0);
}

/// Parallel composition with a constraint: the bound ε_i ≤ E binds except where the
/// constraint does.
#[test]
fn parallel_with_a_constraint() {
    let p = Problem::new(Epsilon::new(2.0).unwrap(), Composition::Parallel, ones(4))
        .with_constraint("eps[0] <= 0.5 * eps[2]")
        .unwrap();
    let x = solve(&p).epsilons();
    assert!(
        rel(x[0], 1.0) < 1e-3 && rel(x[1], 2.0) < 1e-3 && rel(x[2], 2.0) < 1e-3,
        "{x:?}"
    );
    assert!(x.iter().all(|&v| v <= 2.0));
}

#[test]
fn infeasible_constraints_are_reported() {
    let p = Problem::new(Epsilon::new(1.0).unwrap(), Composition::Sequential, ones(2))
        .with_constraint("eps[0] >= 0.8 * total")
        .unwrap()
        .with_constraint("eps[1] >= 0.8 * total")
        .unwrap();
    let o = MdmmOptions {
        max_iters: 5_000,
        ..MdmmOptions::default()
    };
    let err = p.solve(&o).unwrap_err().to_string();
    assert!(err.contains("did not converge"), "{err}");
    assert!(
        Problem::new(Epsilon::new(1.0).unwrap(), Composition::Sequential, ones(2))
            .with_constraint("eps[2] <= eps[0]")
            .is_err()
    );
}

/// The basic method (no damping, BDMM, Eq. 3.12) is what the thesis describes; the damping of
/// the modified method makes the same problems converge several times faster.
#[test]
fn damping_speeds_convergence() {
    let s: Vec<Sensitivity> = (1..=50)
        .map(|v| Sensitivity::new(v as f64).unwrap())
        .collect();
    let wide = Problem::new(Epsilon::new(1.0).unwrap(), Composition::Sequential, s);
    let juveniles = Problem::new(Epsilon::new(1.0).unwrap(), Composition::Sequential, ones(3))
        .with_constraint("eps[0] <= 0.5 * eps[2]")
        .unwrap()
        .with_constraint("eps[1] <= 0.5 * eps[2]")
        .unwrap();
    for p in [wide, juveniles] {
        let mdmm = p.solve(&MdmmOptions::default()).unwrap();
        let bdmm = p
            .solve(&MdmmOptions {
                damping: 0.0,
                ..MdmmOptions::default()
            })
            .unwrap();
        assert!(rel(bdmm.objective, mdmm.objective) < 1e-6);
        assert!(
            bdmm.iterations > 2 * mdmm.iterations,
            "BDMM {} vs MDMM {} iterations",
            bdmm.iterations,
            mdmm.iterations
        );
    }
}

#[test]
fn budget_toml() {
    let p = Problem::from_toml(
        r#"
epsilon = 1.0
composition = "sequential"
constraints = ["eps[0] <= 0.5 * eps[2]", "eps[1] <= 0.5 * eps[2]"]

[[query]]
name = "ages 0-18"
sensitivity = 1.0

[[query]]
name = "ages 10-30"
sensitivity = 1.0

[[query]]
name = "ages 31-50"
sensitivity = 0.5
stability = 2.0
"#,
    )
    .unwrap();
    assert_eq!(p.names[0], "ages 0-18");
    assert_eq!(p.sensitivities[2].get(), 1.0);
    assert!(rel(solve(&p).objective, 36.0) < 1e-3);

    let p = Problem::from_toml(
        "epsilon = 2.0\ncomposition = \"parallel\"\nsensitivities = [1, 1, 1]\n",
    )
    .unwrap();
    assert!(rel(solve(&p).objective, 0.75) < 1e-3);

    // Constraints that hold together only at ε = 0 are refused, not answered with zeros.
    for zero in [
        "epsilon = 1\nsensitivities = [1, 1]\nconstraints = [\"eps[0] >= 2 * eps[1]\", \"eps[1] >= 2 * eps[0]\"]",
        "epsilon = 1\nsensitivities = [1, 1]\nconstraints = [\"eps[0] <= 1e-300\"]",
    ] {
        let p = Problem::from_toml(zero).unwrap();
        let err = p.solve(&MdmmOptions::default()).unwrap_err().to_string();
        assert!(err.contains("no budget"), "{zero}: {err}");
    }

    for bad in [
        "epsilon = -1\nsensitivities = [1]",
        "epsilon = 1\n",
        "epsilon = 1\nsensitivities = [1, 0]",
        "epsilon = 1\nsensitivities = [1]\nconstraints = [\"eps[1] <= eps[0]\"]",
        "epsilon = 1\nsensitivities = [1]\ncomposition = \"diagonal\"",
        "epsilon = 1\nsensitivities = [1]\nbogus = 3",
    ] {
        assert!(Problem::from_toml(bad).is_err(), "{bad}");
    }
}
