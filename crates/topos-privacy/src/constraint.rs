//! Extra linear constraints on a budget split, written as in `budget.toml`:
//! `eps[0] <= 0.5 * eps[2]`, `eps[1] + eps[2] >= 0.25 * total`, `eps[3] <= 0.1`,
//! `eps[4] == eps[5]` (§3.3.3, Eq. 3.9: "ε₁, ε₂ ≤ 0.5·ε₃").
//!
//! `eps[i]` is the ε of sub-query i (0-based), `total` (or `epsilon`) the total ε; a bare number
//! is an ε value. Each side is a sum of terms `[±] [number [*]] symbol` or `[±] number`.

use crate::PrivacyError;
use serde::Serialize;

/// `≤ 0` or `= 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    /// Σ ≤ 0
    AtMost,
    /// Σ = 0
    Equal,
}

/// Σ_j coef_j·ε_j + per_total·E + constant  (≤ | =)  0, as parsed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinearConstraint {
    /// (sub-query index, coefficient), one entry per index.
    pub terms: Vec<(usize, f64)>,
    /// Coefficient of the total ε, E.
    pub per_total: f64,
    /// Constant in units of ε.
    pub constant: f64,
    /// The relation to zero.
    pub relation: Relation,
    /// The text it was parsed from.
    pub text: String,
}

impl LinearConstraint {
    /// Parses one constraint.
    pub fn parse(text: &str) -> Result<Self, PrivacyError> {
        let bad = |why: &str| {
            PrivacyError::BadSpec(format!(
                "constraint {text:?}: {why} (write e.g. \"eps[0] <= 0.5 * eps[2]\")"
            ))
        };
        let (lhs, rhs, relation, flip) = if let Some((l, r)) = text.split_once("<=") {
            (l, r, Relation::AtMost, false)
        } else if let Some((l, r)) = text.split_once(">=") {
            (l, r, Relation::AtMost, true)
        } else if let Some((l, r)) = text.split_once("==") {
            (l, r, Relation::Equal, false)
        } else if let Some((l, r)) = text.split_once('=') {
            (l, r, Relation::Equal, false)
        } else {
            return Err(bad("no <=, >= or =="));
        };
        if rhs.contains(['<', '>', '=']) {
            return Err(bad("more than one relation"));
        }
        let mut acc = Sides::default();
        parse_side(lhs, 1.0, &mut acc).map_err(|w| bad(&w))?;
        parse_side(rhs, -1.0, &mut acc).map_err(|w| bad(&w))?;
        if flip {
            acc.negate();
        }
        acc.terms.retain(|&(_, c)| c != 0.0);
        if acc.terms.is_empty() {
            return Err(bad("it does not mention any eps[i]"));
        }
        Ok(LinearConstraint {
            terms: acc.terms,
            per_total: acc.per_total,
            constant: acc.constant,
            relation,
            text: text.trim().to_string(),
        })
    }

    /// The value of the left side at `eps` with total `total` (≤ 0 or = 0 when satisfied).
    pub fn value(&self, eps: &[f64], total: f64) -> f64 {
        self.terms.iter().map(|&(j, c)| c * eps[j]).sum::<f64>()
            + self.per_total * total
            + self.constant
    }

    /// How far `eps` violates the constraint (0 when satisfied).
    pub fn violation(&self, eps: &[f64], total: f64) -> f64 {
        let v = self.value(eps, total);
        match self.relation {
            Relation::AtMost => v.max(0.0),
            Relation::Equal => v.abs(),
        }
    }
}

#[derive(Default)]
struct Sides {
    terms: Vec<(usize, f64)>,
    per_total: f64,
    constant: f64,
}

impl Sides {
    fn add(&mut self, j: usize, c: f64) {
        match self.terms.iter_mut().find(|(i, _)| *i == j) {
            Some(t) => t.1 += c,
            None => self.terms.push((j, c)),
        }
    }
    fn negate(&mut self) {
        for t in &mut self.terms {
            t.1 = -t.1;
        }
        self.per_total = -self.per_total;
        self.constant = -self.constant;
    }
}

/// Adds `sign ×` the terms of `side` to `acc`.
fn parse_side(side: &str, sign: f64, acc: &mut Sides) -> Result<(), String> {
    let s: String = side.chars().filter(|c| !c.is_whitespace()).collect();
    if s.is_empty() {
        return Err("an empty side".into());
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let mut coef = sign;
        if b[i] == b'+' || b[i] == b'-' {
            if b[i] == b'-' {
                coef = -coef;
            }
            i += 1;
        } else if i > 0 {
            return Err(format!("expected + or - at {:?}", &s[i..]));
        }
        // Optional number.
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        // An exponent (1e-3), but not the e of a following `eps[`.
        if i > start && i < b.len() && b[i] == b'e' {
            let mut k = i + 1;
            if k < b.len() && (b[k] == b'-' || b[k] == b'+') {
                k += 1;
            }
            if k < b.len() && b[k].is_ascii_digit() {
                i = k;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
        let number = if i > start {
            let n: f64 = s[start..i]
                .parse()
                .map_err(|_| format!("bad number {:?}", &s[start..i]))?;
            if !n.is_finite() {
                return Err(format!("bad number {:?}", &s[start..i]));
            }
            Some(n)
        } else {
            None
        };
        if number.is_some() && i < b.len() && b[i] == b'*' {
            i += 1;
        }
        let rest = &s[i..];
        let c = coef * number.unwrap_or(1.0);
        if let Some(r) = rest.strip_prefix("eps[") {
            let close = r.find(']').ok_or("missing ] after eps[")?;
            let j: usize = r[..close]
                .parse()
                .map_err(|_| format!("bad index {:?}", &r[..close]))?;
            acc.add(j, c);
            i += 4 + close + 1;
        } else if rest.starts_with("total") {
            acc.per_total += c;
            i += 5;
        } else if rest.starts_with("epsilon") {
            acc.per_total += c;
            i += 7;
        } else if number.is_some() && (rest.is_empty() || rest.starts_with(['+', '-'])) {
            acc.constant += c;
        } else {
            return Err(format!("unexpected {rest:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_thesis_constraints_and_friends() {
        let c = LinearConstraint::parse("eps[0] <= 0.5 * eps[2]").unwrap();
        assert_eq!(c.terms, vec![(0, 1.0), (2, -0.5)]);
        assert_eq!(c.relation, Relation::AtMost);
        assert_eq!(c.value(&[0.25, 0.25, 0.5], 1.0), 0.0);
        assert!(c.violation(&[0.3, 0.2, 0.5], 1.0) > 0.04);

        let c = LinearConstraint::parse("eps[1] + eps[2] >= 0.25*total").unwrap();
        assert_eq!(c.terms, vec![(1, -1.0), (2, -1.0)]);
        assert_eq!(c.per_total, 0.25);

        let c = LinearConstraint::parse(" eps[3] <= 1e-1 ").unwrap();
        assert_eq!((c.terms.clone(), c.constant), (vec![(3, 1.0)], -0.1));
        let c = LinearConstraint::parse("eps[4] == 2 eps[5] - epsilon").unwrap();
        assert_eq!(c.relation, Relation::Equal);
        assert_eq!(c.terms, vec![(4, 1.0), (5, -2.0)]);
        assert_eq!(c.per_total, 1.0);

        for bad in [
            "eps[0] < eps[1]",
            "eps[0] <= eps[x]",
            "0.5 <= 1",
            "eps[0] <= eps[0]",
            "eps[0] <= 3 * foo",
            "eps[0 <= 1",
            "<= eps[1]",
        ] {
            assert!(LinearConstraint::parse(bad).is_err(), "{bad}");
        }
    }
}
