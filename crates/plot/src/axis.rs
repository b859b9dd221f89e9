//! Axis scales, tick positions and tick labels.
//!
//! An axis maps data values into an "axis space" (the value itself, its log10, or a symmetric
//! log), in which pixels are linear. Ticks are chosen in that space at "nice" values (1, 2,
//! 2.5 and 5 times a power of ten; whole decades on log axes) and labelled with as few digits
//! as tell them apart; powers of ten are written 10⁻³.

/// How a y axis maps values to pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scale {
    /// Chosen from the data: log when every finite value is positive and they span more than
    /// two decades; symlog when values are zero or negative and their magnitudes span more
    /// than two decades (robustly: the largest against the 10th percentile of the non-zero
    /// magnitudes); linear otherwise.
    #[default]
    Auto,
    /// Linear.
    Linear,
    /// log10. Values ≤ 0 cannot be shown and are skipped; when no positive value is left the
    /// axis falls back to symlog so that the plot is not blank.
    Log,
    /// Symmetric log: `sign(y) · log10(1 + |y| / c)`, linear near zero (|y| ≲ c) and
    /// logarithmic beyond; `c` is a power of ten chosen from the small magnitudes in the data.
    Symlog,
}

impl Scale {
    /// The scale [`Scale::Auto`] picks for these values (non-finite ones ignored); other
    /// scales are returned as they are.
    pub fn resolve(self, values: &[f64]) -> Scale {
        match self {
            Scale::Auto => auto_scale(values),
            Scale::Log if !values.iter().any(|v| v.is_finite() && *v > 0.0) => Scale::Symlog,
            s => s,
        }
    }
}

fn auto_scale(values: &[f64]) -> Scale {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return Scale::Linear;
    }
    if finite.iter().all(|v| *v > 0.0) {
        let (lo, hi) = min_max(&finite);
        return if hi / lo > 100.0 { Scale::Log } else { Scale::Linear };
    }
    let mut mags: Vec<f64> = finite.iter().map(|v| v.abs()).filter(|m| *m > 0.0).collect();
    if mags.is_empty() {
        return Scale::Linear;
    }
    mags.sort_by(f64::total_cmp);
    let small = mags[mags.len() / 10];
    let big = mags[mags.len() - 1];
    if big / small > 100.0 { Scale::Symlog } else { Scale::Linear }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)))
}

/// A resolved mapping from values to axis space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Transform {
    Linear,
    Log,
    /// Symlog with linear threshold `c` (> 0).
    Symlog(f64),
}

impl Transform {
    /// The value in axis space, or `None` when it cannot be shown (non-finite; ≤ 0 on log).
    pub fn apply(self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        let t = match self {
            Transform::Linear => v,
            Transform::Log if v > 0.0 => v.log10(),
            Transform::Log => return None,
            Transform::Symlog(c) => v.signum() * (v.abs() / c).ln_1p() / std::f64::consts::LN_10,
        };
        t.is_finite().then_some(t)
    }

    /// Builds the transform for a resolved (non-`Auto`) scale and the data it shows.
    pub fn for_scale(scale: Scale, values: &[f64]) -> Transform {
        match scale.resolve(values) {
            Scale::Log => Transform::Log,
            Scale::Symlog => {
                let mut mags: Vec<f64> =
                    values.iter().map(|v| v.abs()).filter(|m| m.is_finite() && *m > 0.0).collect();
                if mags.is_empty() {
                    return Transform::Symlog(1.0);
                }
                mags.sort_by(f64::total_cmp);
                let small = mags[mags.len() / 10].max(mags[mags.len() - 1] * 1e-12);
                let c = 10f64.powf(small.log10().floor());
                Transform::Symlog(if c.is_finite() && c > 0.0 { c } else { 1.0 })
            }
            _ => Transform::Linear,
        }
    }
}

/// One axis: its range in axis space, labelled major ticks and unlabelled minor ticks.
#[derive(Clone, Debug)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub major: Vec<(f64, String)>,
    pub minor: Vec<f64>,
}

impl Axis {
    /// Where `t` (in axis space) falls between `lo` (0) and `hi` (1); safe for spans near
    /// `f64::MAX`.
    pub fn frac(&self, t: f64) -> f64 {
        let span = self.hi * 0.5 - self.lo * 0.5;
        if span == 0.0 || !span.is_finite() { 0.5 } else { (t * 0.5 - self.lo * 0.5) / span }
    }

    /// An axis over axis-space data range `[lo, hi]` (`None` when there is no data) with about
    /// `target` major ticks, padded by `pad` of the span on each side.
    pub fn new(tf: Transform, range: Option<(f64, f64)>, target: usize, pad: f64) -> Axis {
        let (lo, hi) = match range {
            Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo <= hi => (lo, hi),
            _ => match tf {
                Transform::Log => (0.0, 1.0),
                _ => (0.0, 1.0),
            },
        };
        let (lo, hi) = if lo == hi {
            let d = match tf {
                Transform::Linear if lo != 0.0 => lo.abs() * 0.1,
                Transform::Log => 0.5,
                _ => 1.0,
            };
            (lo - d, hi + d)
        } else {
            let p = (hi * 0.5 - lo * 0.5) * 2.0 * pad;
            let p = if p.is_finite() { p } else { f64::MAX * pad };
            ((lo - p).max(-f64::MAX), (hi + p).min(f64::MAX))
        };
        let (major, minor) = match tf {
            Transform::Linear => (linear_ticks(lo, hi, target), Vec::new()),
            Transform::Log => log_ticks(lo, hi, target + 3),
            Transform::Symlog(c) => (symlog_ticks(lo, hi, c, target), Vec::new()),
        };
        Axis { lo, hi, major, minor }
    }
}

/// A "nice" step (1, 2, 2.5 or 5 times a power of ten) near `span / target`.
fn nice_step(half_span: f64, target: usize) -> f64 {
    let raw = half_span / (target.max(1) as f64 * 0.5);
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    let s = m * mag;
    if s.is_finite() && s > 0.0 { s } else { raw }
}

/// Labelled ticks at multiples of a nice step inside `[lo, hi]`.
pub(crate) fn linear_ticks(lo: f64, hi: f64, target: usize) -> Vec<(f64, String)> {
    let step = nice_step(hi * 0.5 - lo * 0.5, target);
    let (k0, k1) = ((lo / step).ceil(), (hi / step).floor());
    if !(k0.is_finite() && k1.is_finite()) || k1 < k0 || k1 - k0 > 100.0 {
        return Vec::new();
    }
    let vals: Vec<f64> = (0..=(k1 - k0) as i64)
        .map(|i| {
            let v = (k0 + i as f64) * step;
            if v.abs() < step * 1e-9 { 0.0 } else { v }
        })
        .filter(|v| v.is_finite())
        .collect();
    let labels = format_ticks(&vals, step);
    vals.into_iter().zip(labels).collect()
}

/// Labels for ticks spaced `step` apart: fixed decimals just fine enough for the step, or
/// `m×10ⁿ` when the values are very large or very small.
pub(crate) fn format_ticks(vals: &[f64], step: f64) -> Vec<String> {
    let maxabs = vals.iter().fold(0f64, |m, v| m.max(v.abs()));
    let step_exp = step.abs().log10().floor();
    let sci = maxabs >= 1e6 || (maxabs > 0.0 && maxabs < 1e-3);
    vals.iter()
        .map(|&v| {
            if v == 0.0 {
                "0".to_string()
            } else if sci {
                let e = v.abs().log10().floor();
                let decimals = (e - step_exp).clamp(0.0, 6.0) as usize;
                sci_label(v, e, decimals)
            } else {
                let mut d = (-step_exp).max(0.0);
                let mant = step / 10f64.powf(step_exp);
                if (mant - 2.5).abs() < 1e-6 {
                    d += 1.0;
                }
                minus(format!("{v:.*}", d.min(12.0) as usize))
            }
        })
        .collect()
}

/// `m×10ⁿ` with `decimals` decimals in `m` (trailing zeros dropped), or `10ⁿ` when m is 1.
fn sci_label(v: f64, e: f64, decimals: usize) -> String {
    let mut e = e;
    let mut m = v / 10f64.powf(e);
    // Rounding can carry the mantissa to 10.
    if (m.abs() * 10f64.powi(decimals as i32)).round() >= 10f64.powi(decimals as i32 + 1) {
        e += 1.0;
        m /= 10.0;
    }
    let ms = format!("{m:.decimals$}");
    let ms = if ms.contains('.') { ms.trim_end_matches('0').trim_end_matches('.') } else { &ms };
    let p = pow10(e as i64);
    match ms {
        "1" => p,
        "-1" => format!("−{p}"),
        _ => minus(format!("{ms}×{p}")),
    }
}

/// `10ⁿ` with superscript digits.
pub(crate) fn pow10(e: i64) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s = String::from("10");
    if e < 0 {
        s.push('⁻');
    }
    for c in e.unsigned_abs().to_string().chars() {
        s.push(SUP[c.to_digit(10).unwrap_or(0) as usize]);
    }
    s
}

/// Replaces a leading ASCII hyphen by a typographic minus; "-0" and "-0.00" become "0…".
fn minus(s: String) -> String {
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        Some(rest) => format!("−{rest}"),
        None => s,
    }
}

/// A single value written compactly with up to 3 significant digits (used for labels of
/// ticks that are not whole decades).
pub(crate) fn format_value(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() { "0".into() } else { format!("{v}") };
    }
    let e = v.abs().log10().floor();
    if !(-3.0..6.0).contains(&e) {
        return sci_label(v, e, 2);
    }
    let d = (2.0 - e).max(0.0) as usize;
    let s = format!("{v:.d$}");
    let s =
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    minus(s)
}

/// Ticks of a log10 axis over `[lo, hi]` (exponents): whole decades (thinned to about
/// `target`) with minor ticks at 2–9; 1-2-5 or linear ticks when the range is under a decade.
fn log_ticks(lo: f64, hi: f64, target: usize) -> (Vec<(f64, String)>, Vec<f64>) {
    let (k0, k1) = (lo.ceil(), hi.floor());
    let count = if k1 >= k0 { k1 - k0 + 1.0 } else { 0.0 };
    if (2.0..2000.0).contains(&count) {
        let stride = (count / target.max(2) as f64).ceil().max(1.0) as i64;
        let major: Vec<(f64, String)> = (k0 as i64..=k1 as i64)
            .filter(|k| k.rem_euclid(stride) == 0)
            .map(|k| (k as f64, pow10(k)))
            .collect();
        let mut minor = Vec::new();
        if stride == 1 && count <= 12.0 {
            for k in (k0 as i64 - 1)..=(k1 as i64) {
                for m in 2..10 {
                    let t = k as f64 + (m as f64).log10();
                    if t >= lo && t <= hi {
                        minor.push(t);
                    }
                }
            }
        } else if stride > 1 {
            minor = (k0 as i64..=k1 as i64)
                .filter(|k| k.rem_euclid(stride) != 0)
                .map(|k| k as f64)
                .collect();
        }
        return (major, minor);
    }
    if count >= 2000.0 {
        return (Vec::new(), Vec::new());
    }
    for mults in [&[1.0, 2.0, 5.0][..], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..]] {
        let mut major = Vec::new();
        for k in (lo.floor() as i64)..=(hi.ceil() as i64) {
            for &m in mults {
                let t = k as f64 + f64::log10(m);
                if t >= lo && t <= hi {
                    major.push((t, format_value(m * 10f64.powi(k as i32))));
                }
            }
        }
        if major.len() >= 3 {
            return (major, Vec::new());
        }
    }
    // Under a factor of ~1.3: linear ticks in value space, placed on the log axis.
    let (a, b) = (10f64.powf(lo), 10f64.powf(hi));
    let major = linear_ticks(a, b, target)
        .into_iter()
        .filter(|(v, _)| *v > 0.0)
        .map(|(v, s)| (v.log10(), s))
        .collect();
    (major, Vec::new())
}

/// Ticks of a symlog axis over `[lo, hi]` (axis space) with threshold `c`: 0 and ±10ⁿ for
/// 10ⁿ ≥ c, thinned to about `target`.
fn symlog_ticks(lo: f64, hi: f64, c: f64, target: usize) -> Vec<(f64, String)> {
    let tf = Transform::Symlog(c);
    let e0 = c.log10().ceil() as i64;
    let mut cands: Vec<(f64, i64, bool)> = Vec::new(); // (position, exponent, negative)
    for e in e0..e0 + 700 {
        let v = 10f64.powi(e as i32);
        let Some(t) = tf.apply(v) else { break };
        if t > hi.max(-lo) {
            break;
        }
        if t <= hi {
            cands.push((t, e, false));
        }
        if -t >= lo {
            cands.push((-t, e, true));
        }
    }
    let exps: Vec<i64> = {
        let mut v: Vec<i64> = cands.iter().map(|c| c.1).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let sides = if cands.iter().any(|c| c.2) && cands.iter().any(|c| !c.2) { 2 } else { 1 };
    let stride = ((exps.len() * sides) as f64 / target.max(2) as f64).ceil().max(1.0) as i64;
    let keep = |e: i64| (e - exps.last().copied().unwrap_or(0)).rem_euclid(stride) == 0;
    let mut major: Vec<(f64, String)> = cands
        .into_iter()
        .filter(|c| keep(c.1))
        .map(|(t, e, neg)| (t, if neg { format!("−{}", pow10(e)) } else { pow10(e) }))
        .collect();
    if lo <= 0.0 && hi >= 0.0 {
        major.push((0.0, "0".into()));
    }
    major.sort_by(|a, b| a.0.total_cmp(&b.0));
    if major.len() < 2 {
        // A narrow window away from zero: linear ticks in axis space, labelled by value.
        let inv = |t: f64| t.signum() * c * (10f64.powf(t.abs()) - 1.0);
        return linear_ticks(lo, hi, target)
            .into_iter()
            .map(|(t, _)| (t, format_value(inv(t))))
            .collect();
    }
    major
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_values_spanning_decades_pick_log() {
        let v: Vec<f64> = (0..50).map(|i| 10f64.powf(-(i as f64) / 10.0)).collect();
        assert_eq!(Scale::Auto.resolve(&v), Scale::Log);
    }

    #[test]
    fn both_signs_spanning_decades_pick_symlog() {
        let v = [-1000.0, -10.0, -0.5, 0.2, 3.0, 500.0, 2000.0];
        assert_eq!(Scale::Auto.resolve(&v), Scale::Symlog);
    }

    #[test]
    fn a_small_range_picks_linear() {
        assert_eq!(Scale::Auto.resolve(&[1.0, 2.0, 5.0, 9.0]), Scale::Linear);
        assert_eq!(Scale::Auto.resolve(&[-3.0, -1.0, 2.0, 4.0]), Scale::Linear);
        // A sine wave passes near zero but is a linear plot.
        let s: Vec<f64> = (0..200).map(|i| (i as f64 * 0.1).sin()).collect();
        assert_eq!(Scale::Auto.resolve(&s), Scale::Linear);
        assert_eq!(Scale::Auto.resolve(&[]), Scale::Linear);
        assert_eq!(Scale::Auto.resolve(&[f64::NAN, f64::INFINITY]), Scale::Linear);
    }

    #[test]
    fn log_with_nothing_positive_falls_back_to_symlog() {
        assert_eq!(Scale::Log.resolve(&[-1.0, -100.0]), Scale::Symlog);
        assert_eq!(Scale::Log.resolve(&[1.0, 100.0]), Scale::Log);
    }

    #[test]
    fn linear_ticks_are_round_and_short() {
        let t = linear_ticks(0.0, 1.0, 6);
        let labels: Vec<&str> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        let t = linear_ticks(0.1, 0.7, 6);
        assert!(t.iter().all(|x| x.1.len() <= 4), "{t:?}");
        let t = linear_ticks(0.0, 2.0e6, 5);
        assert!(t.iter().any(|x| x.1 == "10⁶" || x.1 == "1×10⁶" || x.1.contains("×10⁶")), "{t:?}");
        let t = linear_ticks(-5.0, 5.0, 5);
        assert!(t.iter().any(|x| x.1 == "−4" || x.1 == "−5"), "{t:?}");
    }

    #[test]
    fn log_ticks_are_decades() {
        let (major, minor) = log_ticks(-3.0, 2.0, 8);
        let labels: Vec<&str> = major.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["10⁻³", "10⁻²", "10⁻¹", "10⁰", "10¹", "10²"]);
        assert!(!minor.is_empty());
        let (major, _) = log_ticks(-300.0, 300.0, 8);
        assert!(major.len() <= 10 && major.len() >= 4, "{major:?}");
        let (major, _) = log_ticks(0.1, 0.6, 6);
        assert!(major.len() >= 2, "{major:?}");
        let (major, _) = log_ticks(0.3, 0.31, 6);
        assert!(major.len() >= 2, "{major:?}");
    }

    #[test]
    fn symlog_is_odd_and_has_zero() {
        let tf = Transform::Symlog(1.0);
        assert_eq!(tf.apply(0.0), Some(0.0));
        let (a, b) = (tf.apply(50.0).unwrap(), tf.apply(-50.0).unwrap());
        assert!((a + b).abs() < 1e-12);
        let t = symlog_ticks(-3.0, 3.0, 1.0, 9);
        assert!(t.iter().any(|x| x.1 == "0"));
        assert!(t.iter().any(|x| x.1 == "−10²"), "{t:?}");
    }

    #[test]
    fn huge_ranges_do_not_overflow() {
        let a = Axis::new(Transform::Linear, Some((-f64::MAX, f64::MAX)), 6, 0.05);
        assert!(a.lo.is_finite() && a.hi.is_finite());
        assert!(!a.major.is_empty());
        for (t, _) in &a.major {
            assert!((0.0..=1.0).contains(&a.frac(*t)));
        }
        let a = Axis::new(Transform::Linear, Some((5.0, 5.0)), 6, 0.05);
        assert!(a.lo < 5.0 && a.hi > 5.0);
    }

    #[test]
    fn value_labels() {
        assert_eq!(format_value(0.002), "0.002");
        assert_eq!(format_value(-2.0e-5), "−2×10⁻⁵");
        assert_eq!(format_value(300.0), "300");
        assert_eq!(pow10(-12), "10⁻¹²");
    }
}
