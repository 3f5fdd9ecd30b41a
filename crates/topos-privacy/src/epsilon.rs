//! Privacy parameters as types that cannot hold a meaningless value.
//!
//! ε (Definition 3.2.1, Eq. 3.1) and a sensitivity S (Definition 3.3.1, Eq. 3.2) are positive
//! finite reals. A NaN or negative ε slipping into a noise scale would silently release data with
//! no noise at all (b = S/ε), so both are checked once, at construction, and the mechanisms only
//! take the checked types.

use crate::PrivacyError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A privacy loss ε > 0 (finite).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Epsilon(f64);

impl Epsilon {
    /// ε, if `value` is positive and finite.
    pub fn new(value: f64) -> Result<Self, PrivacyError> {
        if value.is_finite() && value > 0.0 {
            Ok(Epsilon(value))
        } else {
            Err(PrivacyError::NotPositive { what: "ε", value })
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Epsilon {
    type Error = PrivacyError;
    fn try_from(v: f64) -> Result<Self, PrivacyError> {
        Epsilon::new(v)
    }
}

impl From<Epsilon> for f64 {
    fn from(e: Epsilon) -> f64 {
        e.0
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A sensitivity S > 0 (finite): the most one record (here: one document) can move a query's
/// answer, in L1 norm (Definition 3.3.1).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Sensitivity(f64);

impl Sensitivity {
    /// S, if `value` is positive and finite.
    pub fn new(value: f64) -> Result<Self, PrivacyError> {
        if value.is_finite() && value > 0.0 {
            Ok(Sensitivity(value))
        } else {
            Err(PrivacyError::NotPositive {
                what: "sensitivity",
                value,
            })
        }
    }

    /// The sensitivity of a count of records: adding or removing one document changes it by at
    /// most 1 (the COUNT example after Definition 3.3.1).
    pub const COUNT: Sensitivity = Sensitivity(1.0);

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Sensitivity {
    type Error = PrivacyError;
    fn try_from(v: f64) -> Result<Self, PrivacyError> {
        Sensitivity::new(v)
    }
}

impl From<Sensitivity> for f64 {
    fn from(s: Sensitivity) -> f64 {
        s.0
    }
}

impl fmt::Display for Sensitivity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_every_meaningless_value() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0] {
            assert!(Epsilon::new(bad).is_err(), "{bad}");
            assert!(Sensitivity::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Epsilon::new(0.5).unwrap().get(), 0.5);
        // Deserialization goes through the same check.
        assert!(serde_json::from_str::<Epsilon>("-1.0").is_err());
        assert_eq!(serde_json::from_str::<Epsilon>("2.5").unwrap().get(), 2.5);
    }
}
