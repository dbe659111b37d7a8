//! Helpers for the policies' hand-computed test cases.

use std::collections::HashMap;

use super::{Access, NEVER, Policy};

/// Replays `(key, size)` requests and asserts each outcome against `expect`, a string with
/// one `H` (hit) or `M` (miss) per request (spaces are ignored, to group steps).
/// Validates the policy after every request.
pub(crate) fn expect_sized(p: &mut dyn Policy, reqs: &[(u64, u32)], expect: &str) {
    let expect: Vec<char> = expect.chars().filter(|c| !c.is_whitespace()).collect();
    assert_eq!(reqs.len(), expect.len(), "one H/M per request");
    for (step, (&(key, size), &e)) in reqs.iter().zip(&expect).enumerate() {
        let hit = p.access(&Access::new(key, size));
        let got = if hit { 'H' } else { 'M' };
        assert_eq!(got, e, "{}: step {step} (key {key}, size {size})", p.name());
        p.validate();
        assert!(p.used() <= p.capacity(), "{}: used > capacity", p.name());
    }
}

/// [`expect_sized`] with every object of size 1.
pub(crate) fn expect_unit(p: &mut dyn Policy, keys: &[u64], expect: &str) {
    let reqs: Vec<(u64, u32)> = keys.iter().map(|&k| (k, 1)).collect();
    expect_sized(p, &reqs, expect);
}

/// Asserts that exactly `keys` are resident.
pub(crate) fn assert_resident(p: &dyn Policy, keys: &[u64]) {
    for &k in keys {
        assert!(p.contains(k), "{}: key {k} should be resident", p.name());
    }
    assert_eq!(p.len(), keys.len(), "{}: resident count", p.name());
}

/// A trace of `keys`, all of size `size`, with `next_access_vtime` filled in as a trace
/// reader would (the index of the key's next request, or [`NEVER`]).
pub(crate) fn with_next_access(keys: &[u64], size: u32) -> Vec<Access> {
    let mut out: Vec<Access> = keys.iter().map(|&k| Access::new(k, size)).collect();
    let mut next = HashMap::new();
    for (i, a) in out.iter_mut().enumerate().rev() {
        a.next_access_vtime = next.insert(a.key, i as i64).unwrap_or(NEVER);
    }
    out
}
