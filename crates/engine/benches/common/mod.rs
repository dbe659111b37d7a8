//! What the engine's benchmarks share: their positional arguments and the median of rounds.

/// Positional argument `i` (options, `-…`, skipped; `_` separators allowed), or `default`.
pub fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(i)
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The median of the rounds' figures.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
