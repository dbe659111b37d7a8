//! Redis's `long double` arithmetic (`fridge_proto::long_double`), from raw bytes.
//!
//! - Parsing any bytes never panics; a finite number it reads prints, and the printed form
//!   reads back to a number that prints the same (17 decimals identify the printed value).
//! - The input split at its first tab is two operands: their sum never panics, is the same
//!   either way round, and prints and reads back as above.
//! - The x87 encoding of every number read round-trips.
#![no_main]

use fridge_proto::long_double::LongDouble;
use libfuzzer_sys::fuzz_target;

fn check_print(x: LongDouble) {
    let mut once = Vec::new();
    x.write(&mut once);
    if !x.is_finite() {
        return;
    }
    let back = LongDouble::parse(&once).expect("a printed number reads back");
    let mut twice = Vec::new();
    back.write(&mut twice);
    assert_eq!(once, twice, "{x:?} prints differently once read back");
    assert_eq!(LongDouble::from_bits(x.to_bits()), Some(x));
}

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&c| c == b'\t') {
        Some(tab) => (&data[..tab], &data[tab + 1..]),
        None => (data, &b"0"[..]),
    };
    let (Some(x), Some(y)) = (LongDouble::parse(a), LongDouble::parse(b)) else { return };
    check_print(x);
    check_print(y);
    let sum = x.checked_add(y);
    assert_eq!(sum, y.checked_add(x), "addition commutes");
    if let Some(s) = sum {
        check_print(s);
    }
});
