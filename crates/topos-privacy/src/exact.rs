//! Exact rational views of floating-point privacy parameters.
//!
//! A finite double is exactly m·2^e with integer m, so ε and a noise scale can be handed to the
//! integer samplers with no rounding at all. The one deliberate rounding is of ε, *down* to 33
//! significant bits, which keeps the integers of the scale below 2^100 and can only make the
//! noise larger (more private) — by less than 2^−32 relative.

/// `x = m · 2^e` exactly, with m odd (x positive and finite).
pub fn dyadic(x: f64) -> (u64, i32) {
    debug_assert!(x.is_finite() && x > 0.0);
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if exp_bits == 0 {
        (frac, -1074) // subnormal
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    (m, e)
}

/// ε rounded down to at most 33 significant bits, as `m · 2^e` (m < 2^33).
pub fn epsilon_floor33(eps: f64) -> (u64, i32) {
    let (m, e) = dyadic(eps);
    let bits = 64 - m.leading_zeros() as i32;
    if bits > 33 {
        let sh = bits - 33;
        let m2 = m >> sh;
        let tz = m2.trailing_zeros();
        (m2 >> tz, e + sh + tz as i32)
    } else {
        (m, e)
    }
}

/// Greatest common divisor.
pub fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyadic_is_exact() {
        for x in [1.0, 0.5, 3.0, 0.1, 1e-30, 1e30, 3.3333333333333335] {
            let (m, e) = dyadic(x);
            assert_eq!(m % 2, 1);
            assert_eq!(m as f64 * 2f64.powi(e), x, "{x}");
        }
        let (m, e) = epsilon_floor33(0.1);
        let v = m as f64 * 2f64.powi(e);
        assert!(v <= 0.1 && v > 0.1 * (1.0 - 2f64.powi(-32)));
        assert!(m < 1 << 33);
        assert_eq!(epsilon_floor33(0.75), (3, -2));
        assert_eq!(gcd(12, 18), 6);
    }
}
