//! Timing helpers for benchmarks (`kestrel <area> bench`, the bench functions of the library
//! crates). Wall time is measured here and reported; nothing is computed from it.

use std::time::Instant;

/// Median of `n` per-call times of `f(i)` in µs, after up to 10 warm-up calls (`n` ≥ 1).
pub fn median_us(n: u64, mut f: impl FnMut(u64)) -> f64 {
    median_pair_us(n, &mut f, |_| {}).0
}

/// Medians (µs) of `n` calls each of `f(i)` and `g(i)` (`n` ≥ 1), taken in alternation after
/// up to 10 warm-up pairs, so a ratio of the two is not skewed by the machine's speed drifting
/// between two separate timing runs.
pub fn median_pair_us(n: u64, mut f: impl FnMut(u64), mut g: impl FnMut(u64)) -> (f64, f64) {
    let n = n.max(1);
    for i in 0..n.min(10) {
        f(i);
        g(i);
    }
    let (mut a, mut b) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
    for i in 0..n {
        let t = Instant::now();
        f(i);
        a.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        g(i);
        b.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for v in [&mut a, &mut b] {
        v.sort_by(f64::total_cmp);
    }
    (a[a.len() / 2], b[b.len() / 2])
}

/// Median per-call time of `f` in µs over at least `seconds` (and at least 20 calls), after
/// 20 warm-up calls.
pub fn median_for_us(seconds: f64, mut f: impl FnMut()) -> f64 {
    for _ in 0..20 {
        f();
    }
    let (start, mut v) = (Instant::now(), Vec::new());
    while start.elapsed().as_secs_f64() < seconds || v.len() < 20 {
        let t = Instant::now();
        f();
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Rows per second of `step` (which steps `rows` rows) over at least `seconds`, after 3
/// warm-up calls: calls are timed in doubling groups, so the clock is read a few dozen times
/// however cheap a call is. `seconds` must be more than 0 and at most a day.
pub fn rows_per_second(
    rows: usize,
    seconds: f64,
    mut step: impl FnMut(),
) -> Result<f64, crate::error::Invalid> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err(crate::error::Invalid::new("seconds", seconds, "more than 0, at most 86400"));
    }
    for _ in 0..3 {
        step();
    }
    let (mut iters, mut done) = (1u64, 0u64);
    let t0 = Instant::now();
    loop {
        for _ in 0..iters {
            step();
        }
        done += iters * rows as u64;
        let el = t0.elapsed().as_secs_f64();
        if el >= seconds {
            return Ok(done as f64 / el);
        }
        iters = (iters * 2).min(1 << 20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    fn nap(_: u64) {
        std::thread::sleep(Duration::from_micros(400));
    }

    #[test]
    fn medians_time_what_they_are_given_and_zero_counts_still_time_once() {
        let mut calls = 0;
        let t = median_us(0, |_| calls += 1);
        assert!(t.is_finite() && calls == 2, "{t} {calls}");
        // A sleep lasts at least its duration; a no-op takes less.
        let (slow, fast) = median_pair_us(5, nap, |_| std::hint::black_box(()));
        assert!(slow >= 400.0 && fast < slow, "{slow} {fast}");
        let (fast, slow) = median_pair_us(5, |_| std::hint::black_box(()), nap);
        assert!(slow >= 400.0 && fast < slow, "{slow} {fast}");
        assert!(median_us(3, nap) >= 400.0);
        assert!(median_for_us(0.0, || nap(0)) >= 400.0);
        // 10 rows per 400 µs call: at most 25,000 rows a second.
        let r = rows_per_second(10, 0.01, || nap(0)).unwrap();
        assert!(r > 0.0 && r <= 25_000.0, "{r}");
        for bad in [0.0, f64::NAN, f64::INFINITY, 1e9] {
            assert!(rows_per_second(1, bad, || {}).unwrap_err().to_string().contains("seconds"));
        }
    }
}
