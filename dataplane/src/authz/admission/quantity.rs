//! `resource.Quantity`: parsing (`500m`, `128Mi`, `1.5`, `2e3`) and the
//! canonical printing upstream uses in messages (`1536Mi`, `1500m`, `2k`).

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Sub};

/// A quantity, held in nano-units (exact for every quantity the API keeps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quantity {
    /// The value × 10⁹.
    pub nanos: i128,
    /// Whether it was written with a binary suffix (Ki, Mi, …), which
    /// upstream keeps for printing.
    pub binary: bool,
}

const NANO: i128 = 1_000_000_000;

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Add for Quantity {
    type Output = Quantity;
    fn add(self, o: Quantity) -> Quantity {
        // Upstream keeps the first operand's format; a zero start takes the other's.
        Quantity {
            nanos: self.nanos + o.nanos,
            binary: if self.nanos == 0 {
                o.binary
            } else {
                self.binary
            },
        }
    }
}

impl Sub for Quantity {
    type Output = Quantity;
    fn sub(self, o: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos - o.nanos,
            binary: self.binary,
        }
    }
}

impl Quantity {
    /// Parses a quantity string; `None` when it is not one.
    pub fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(s.len());
        let (num, suffix) = s.split_at(split);
        if num.is_empty() || num == "+" || num == "-" {
            return None;
        }
        let (mult_num, mult_den, binary): (i128, i128, bool) = match suffix {
            "" => (1, 1, false),
            "n" => (1, NANO, false),
            "u" => (1, 1_000_000, false),
            "m" => (1, 1000, false),
            "k" => (1000, 1, false),
            "M" => (1_000_000, 1, false),
            "G" => (1_000_000_000, 1, false),
            "T" => (1_000_000_000_000, 1, false),
            "P" => (1_000_000_000_000_000, 1, false),
            "E" => (1_000_000_000_000_000_000, 1, false),
            "Ki" => (1 << 10, 1, true),
            "Mi" => (1 << 20, 1, true),
            "Gi" => (1 << 30, 1, true),
            "Ti" => (1 << 40, 1, true),
            "Pi" => (1 << 50, 1, true),
            "Ei" => (1 << 60, 1, true),
            e if e.starts_with(['e', 'E']) => {
                let exp: i32 = e[1..].parse().ok()?;
                if exp >= 0 {
                    (10i128.checked_pow(exp as u32)?, 1, false)
                } else {
                    (1, 10i128.checked_pow((-exp) as u32)?, false)
                }
            }
            _ => return None,
        };
        let negative = num.starts_with('-');
        let digits = num.strip_prefix(['+', '-']).unwrap_or(num);
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let scale = 10i128.checked_pow(frac.len() as u32)?;
        let mantissa: i128 = format!("{int}{frac}").parse().ok()?;
        // value = mantissa / scale × mult_num / mult_den, in nanos, rounded up as upstream rounds.
        let num = mantissa.checked_mul(mult_num)?.checked_mul(NANO)?;
        let den = scale.checked_mul(mult_den)?;
        let mut nanos = num / den;
        if num % den != 0 {
            nanos += 1;
        }
        Some(Quantity {
            nanos: if negative { -nanos } else { nanos },
            binary,
        })
    }

    /// The quantity of a JSON value (string or number).
    pub fn of_json(v: &serde_json::Value) -> Option<Quantity> {
        match v {
            serde_json::Value::String(s) => Quantity::parse(s),
            serde_json::Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        }
    }

    /// A whole number of units.
    pub fn from_units(n: i64) -> Quantity {
        Quantity {
            nanos: n as i128 * NANO,
            binary: false,
        }
    }

    /// The value in milli-units, rounded up (upstream `MilliValue`).
    pub fn milli(&self) -> i128 {
        let m = self.nanos / 1_000_000;
        if self.nanos % 1_000_000 > 0 { m + 1 } else { m }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos;
        if n == 0 {
            return write!(f, "0");
        }
        if self.binary && n % NANO == 0 && (n / NANO).abs() >= 1024 {
            let v = n / NANO;
            for (shift, suffix) in [
                (60, "Ei"),
                (50, "Pi"),
                (40, "Ti"),
                (30, "Gi"),
                (20, "Mi"),
                (10, "Ki"),
            ] {
                let unit = 1i128 << shift;
                if v % unit == 0 {
                    return write!(f, "{}{suffix}", v / unit);
                }
            }
            return write!(f, "{v}");
        }
        for (exp, suffix) in [
            (27, "E"),
            (24, "P"),
            (21, "T"),
            (18, "G"),
            (15, "M"),
            (12, "k"),
            (9, ""),
            (6, "m"),
            (3, "u"),
            (0, "n"),
        ] {
            let unit = 10i128.pow(exp);
            if n % unit == 0 {
                return write!(f, "{}{suffix}", n / unit);
            }
        }
        write!(f, "{n}n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn parses_and_prints_as_upstream() {
        for (input, canonical) in [
            ("500m", "500m"),
            ("0.5", "500m"),
            ("1", "1"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("128Mi", "128Mi"),
            ("1Gi", "1Gi"),
            ("1024", "1024"),
            ("2e3", "2k"),
            ("1.5Gi", "1536Mi"),
            ("100M", "100M"),
            ("0", "0"),
            ("1n", "1n"),
        ] {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
        assert_eq!((q("1Gi") + q("512Mi")).to_string(), "1536Mi");
        assert_eq!((q("500m") + q("500m")).to_string(), "1");
        assert!(q("1") > q("999m"));
        assert_eq!(q("128Mi").nanos, 134_217_728 * NANO);
        assert_eq!(q("0.1n").nanos, 1);
        assert_eq!(q("1").milli(), 1000);
        for bad in ["", "abc", "1Qi", "--1", "1.2.3"] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }
}
