//! # fridge-units
//!
//! The one rule by which the server's configuration, the simulator's and the load generator's
//! command lines read byte sizes and durations, so `1GiB` means the same everywhere.
//!
//! ## Sizes ([`Size`])
//! A number, optional spaces, and an optional unit. Units are binary and case-insensitive:
//!
//! | unit                  | bytes |
//! |-----------------------|-------|
//! | none, `b`             | 1     |
//! | `k`, `kb`, `kib`      | 2^10  |
//! | `m`, `mb`, `mib`      | 2^20  |
//! | `g`, `gb`, `gib`      | 2^30  |
//! | `t`, `tb`, `tib`      | 2^40  |
//!
//! so `1GiB` = `1g` = `1gb` = 1073741824. `kb`/`mb`/`gb` are binary too: memcached's `-m`
//! and most configuration files mean them that way.
//!
//! ## Durations ([`Millis`])
//! A number and an optional case-insensitive unit: `ms`, `s`, `m` or `min`, `h`; a plain
//! number is seconds (`250ms`, `30s`, `5m`, `1h`, `90`).
//!
//! ## Fractions
//! The number may have a decimal fraction (`1.5GiB`, `0.5s`); the result is rounded down to
//! a whole byte or millisecond, computed exactly (no floating point). Signs, exponents and
//! empty numbers (`.5` is fine, `.` is not), more than 18 fraction digits and results beyond
//! `u64` are errors.
//!
//! ## Goals and non-goals
//! - One parser and one table of examples (the unit tests) for every binary of the workspace.
//! - Not a general unit library: no decimal (`1000`-based) units, no rates, no negative
//!   values.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// A byte count, read by the rule in the [crate docs](crate): `"1GiB"`, `"64m"`, `"1.5k"`,
/// `"4096"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

impl Size {
    /// The size in bytes, as a `usize` (saturating).
    pub fn bytes(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

/// A duration in milliseconds, read by the rule in the [crate docs](crate): `"250ms"`,
/// `"30s"`, `"5m"`, `"1h"`, or a plain number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub u64);

impl Millis {
    /// As a [`std::time::Duration`].
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }
}

/// A decimal number split into its digits: `whole.frac`, where `frac` has `frac_digits`
/// digits.
struct Decimal {
    whole: u128,
    frac: u128,
    frac_digits: u32,
}

/// The most fraction digits accepted: enough for any sensible input, and few enough that the
/// exact arithmetic stays within `u128`.
const MAX_FRAC_DIGITS: usize = 18;

/// Splits `s` into a decimal number and the unit after it (trimmed, lowercased).
fn split(s: &str) -> Option<(Decimal, String)> {
    let t = s.trim();
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(end);
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') || frac.len() > MAX_FRAC_DIGITS {
        return None;
    }
    let digits = |d: &str| if d.is_empty() { Some(0) } else { d.parse::<u128>().ok() };
    let decimal =
        Decimal { whole: digits(whole)?, frac: digits(frac)?, frac_digits: frac.len() as u32 };
    Some((decimal, unit.trim().to_ascii_lowercase()))
}

impl Decimal {
    /// `self × scale`, rounded down; `None` beyond `u64`.
    fn times(&self, scale: u64) -> Option<u64> {
        let scale = u128::from(scale);
        let whole = self.whole.checked_mul(scale)?;
        let frac = self.frac * scale / 10u128.pow(self.frac_digits);
        u64::try_from(whole.checked_add(frac)?).ok()
    }
}

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad size {s:?}: expected e.g. 64MiB, 1.5g or 4096");
        let (n, unit) = split(s).ok_or_else(bad)?;
        let shift = match unit.as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            other => return Err(format!("bad size unit {other:?} in {s:?}")),
        };
        n.times(1 << shift).map(Size).ok_or_else(|| format!("size {s:?} is too large"))
    }
}

impl FromStr for Millis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad duration {s:?}: expected e.g. 30s, 250ms or 1.5h");
        let (n, unit) = split(s).ok_or_else(bad)?;
        let scale = match unit.as_str() {
            "ms" => 1,
            "" | "s" => 1000,
            "m" | "min" => 60_000,
            "h" => 3_600_000,
            other => return Err(format!("bad duration unit {other:?} in {s:?}")),
        };
        n.times(scale).map(Millis).ok_or_else(|| format!("duration {s:?} is too long"))
    }
}

impl fmt::Display for Size {
    /// The largest binary unit that divides the size exactly: `1GiB`, `3KiB`, `1536`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, unit) in UNITS {
            if self.0 >= 1 << shift && self.0 % (1 << shift) == 0 {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Millis {
    /// Whole seconds as `30s`, anything else as `250ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 % 1000 == 0 { write!(f, "{}s", self.0 / 1000) } else { write!(f, "{}ms", self.0) }
    }
}

/// A TOML/JSON value: a number or a string by the rule above.
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Number(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for Size {
    /// A number of bytes, or a string such as `"4GiB"`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Size(n)),
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl<'de> Deserialize<'de> for Millis {
    /// A number of seconds, or a string such as `"250ms"`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Number(n) => n
                .checked_mul(1000)
                .map(Millis)
                .ok_or_else(|| serde::de::Error::custom("duration is too long")),
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// The examples every binary's parser is held to.
#[cfg(test)]
mod tests {
    use super::*;

    /// Size examples: input and bytes, or `None` for an error.
    const SIZES: &[(&str, Option<u64>)] = &[
        // Plain numbers are bytes.
        ("4096", Some(4096)),
        ("0", Some(0)),
        ("17b", Some(17)),
        // Every spelling of a unit is binary, in any case.
        ("1GiB", Some(1 << 30)),
        ("1g", Some(1 << 30)),
        ("1gb", Some(1 << 30)),
        ("1GB", Some(1 << 30)),
        ("1G", Some(1 << 30)),
        ("64m", Some(64 << 20)),
        ("64M", Some(64 << 20)),
        ("64MB", Some(64 << 20)),
        ("64MiB", Some(64 << 20)),
        ("512k", Some(512 << 10)),
        ("512kb", Some(512 << 10)),
        ("2TiB", Some(2 << 40)),
        // Spaces around the number and before the unit don't matter.
        ("512 KiB", Some(512 << 10)),
        ("  3k  ", Some(3 << 10)),
        // Fractions, rounded down to a whole byte.
        ("1.5GiB", Some(3 << 29)),
        ("1.5k", Some(1536)),
        ("0.5m", Some(512 << 10)),
        (".5k", Some(512)),
        ("2.", Some(2)),
        ("0.1k", Some(102)),
        ("1.9", Some(1)),
        ("0.000000000000000001g", Some(0)),
        ("0.0000000000000000001g", None),
        // Errors: no number, unknown unit, signs, exponents, overflow.
        ("", None),
        ("k", None),
        (".", None),
        ("1.2.3k", None),
        ("-1k", None),
        ("+1k", None),
        ("1e3", None),
        ("12 parsecs", None),
        ("1 kilobyte", None),
        ("1 MiB2", None),
        ("18446744073709551615", Some(u64::MAX)),
        ("18446744073709551616", None),
        ("16777216TiB", None),
    ];

    /// Duration examples: input and milliseconds, or `None` for an error.
    const DURATIONS: &[(&str, Option<u64>)] = &[
        ("250ms", Some(250)),
        ("30s", Some(30_000)),
        ("5m", Some(300_000)),
        ("5min", Some(300_000)),
        ("1h", Some(3_600_000)),
        ("1H", Some(3_600_000)),
        ("90", Some(90_000)),
        ("1.5s", Some(1500)),
        ("0.25", Some(250)),
        ("1.5ms", Some(1)),
        (" 10 S ", Some(10_000)),
        ("", None),
        ("5 parsecs", None),
        ("1d", None),
        ("-1s", None),
    ];

    #[test]
    fn sizes_follow_the_table() {
        for &(input, want) in SIZES {
            assert_eq!(input.parse::<Size>().ok().map(|s| s.0), want, "{input:?}");
        }
    }

    #[test]
    fn durations_follow_the_table() {
        for &(input, want) in DURATIONS {
            assert_eq!(input.parse::<Millis>().ok().map(|m| m.0), want, "{input:?}");
        }
    }

    #[test]
    fn display_reads_back() {
        for n in [0, 1, 1000, 1536, 1 << 30, 3 << 29, 5 << 40, u64::MAX] {
            assert_eq!(Size(n).to_string().parse(), Ok(Size(n)), "{n}");
            assert_eq!(Millis(n).to_string().parse(), Ok(Millis(n)), "{n}");
        }
        assert_eq!(Size(1 << 30).to_string(), "1GiB");
        assert_eq!(Size(3 << 10).to_string(), "3KiB");
        assert_eq!(Size(1536).to_string(), "1536");
        assert_eq!(Millis(1500).to_string(), "1500ms");
        assert_eq!(Millis(30_000).to_string(), "30s");
    }
}
