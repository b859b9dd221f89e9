//! A run's peak memory, estimated from its validated config before anything is allocated.
//!
//! Each run kind lists the buffers that grow with its config as named terms ([`Budget::add`]):
//! what the buffer is, the config fields it grows with (with their values), and its bytes.
//! [`Budget::check`] refuses a total past [`MAX_BYTES`](crate::error::MAX_BYTES), naming the largest
//! terms, so a size that would abort the process ("memory allocation of … bytes failed") is a
//! clear error before any run folder exists. The run crate's tests compare each kind's
//! estimate with the peak a counting allocator measures.

use crate::error::{Invalid, MAX_BYTES};
use std::borrow::Cow;
use std::fmt::Write;

/// One buffer (or group of buffers) of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetTerm {
    /// What it holds (`replay buffer`).
    pub what: Cow<'static, str>,
    /// The config fields it grows with, with their values (`capacity = 100000, agents = 4`).
    pub fields: String,
    /// Its size in bytes (saturating).
    pub bytes: u128,
}

/// The terms of a run's peak memory; see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    terms: Vec<BudgetTerm>,
}

impl Budget {
    /// No terms.
    pub fn new() -> Self {
        Budget::default()
    }

    /// Adds `count` elements of `elem_bytes` bytes each (saturating) for `what`, which grows
    /// with `fields`.
    pub fn add(
        &mut self,
        what: impl Into<Cow<'static, str>>,
        fields: impl Into<String>,
        count: u128,
        elem_bytes: u128,
    ) -> &mut Self {
        let bytes = count.saturating_mul(elem_bytes);
        self.terms.push(BudgetTerm { what: what.into(), fields: fields.into(), bytes });
        self
    }

    /// Every term of `other`, each `times` over (copies held by `times` threads, say), named
    /// with `prefix`.
    pub fn add_all(&mut self, prefix: &str, other: &Budget, times: u128) -> &mut Self {
        for t in &other.terms {
            let what = if prefix.is_empty() {
                t.what.clone()
            } else {
                format!("{prefix}{}", t.what).into()
            };
            let fields = t.fields.clone();
            self.terms.push(BudgetTerm { what, fields, bytes: t.bytes.saturating_mul(times) });
        }
        self
    }

    /// [`Budget::add_all`] of a config nested under `key` (a comparison's `base`): each term's
    /// fields named from the outer config (`policy.horizon = 30000` becomes
    /// `base.policy.horizon = 30000`), so a refusal names the key the user writes.
    pub fn add_nested(
        &mut self,
        prefix: &str,
        key: &str,
        other: &Budget,
        times: u128,
    ) -> &mut Self {
        let start = self.terms.len();
        self.add_all(prefix, other, times);
        for t in &mut self.terms[start..] {
            let parts: Vec<String> = t
                .fields
                .split(", ")
                .map(|p| if p.contains(" = ") { format!("{key}.{p}") } else { p.to_string() })
                .collect();
            t.fields = parts.join(", ");
        }
        self
    }

    /// The terms.
    pub fn terms(&self) -> &[BudgetTerm] {
        &self.terms
    }

    /// The estimated peak in bytes.
    pub fn total(&self) -> u128 {
        self.terms.iter().fold(0u128, |s, t| s.saturating_add(t.bytes))
    }

    /// The total and its largest terms, readable (`1.2 GiB: replay buffer (capacity = …)
    /// 1.0 GiB; …`).
    pub fn describe(&self, largest: usize) -> String {
        let mut terms: Vec<&BudgetTerm> = self.terms.iter().collect();
        terms.sort_by_key(|t| std::cmp::Reverse(t.bytes));
        let mut s = String::new();
        for (i, t) in terms.iter().take(largest).enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            let _ = write!(s, "{sep}{} ({}): {}", t.what, t.fields, human(t.bytes));
        }
        s
    }

    /// An error when the total passes [`MAX_BYTES`], naming the estimate and the largest
    /// terms with their fields.
    pub fn check(&self) -> Result<(), Invalid> {
        let total = self.total();
        if total <= MAX_BYTES {
            return Ok(());
        }
        let largest = self
            .terms
            .iter()
            .max_by_key(|t| t.bytes)
            .map_or(Cow::Borrowed("config"), |t| Cow::Owned(driving_field(&t.fields)));
        Err(Invalid::new(
            largest,
            format!("a run needing about {} at its peak", human(total)),
            format!(
                "a run that fits {} GiB (estimated from the config before allocating; the largest parts: {})",
                MAX_BYTES >> 30,
                self.describe(3)
            ),
        ))
    }
}

/// The field of a term's `fields` (`num_dims = 4, pop_size = 1000000000`) that makes it big:
/// the one with the largest number (the first on ties or with no numbers).
fn driving_field(fields: &str) -> String {
    let mut best: Option<(&str, f64)> = None;
    for part in fields.split(", ") {
        let (name, value) = part.split_once(" = ").unwrap_or((part, ""));
        let v = value.trim().parse::<f64>().unwrap_or(f64::NEG_INFINITY);
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((name.trim(), v));
        }
    }
    best.map_or("config", |(n, _)| n).to_string()
}

/// Bytes as B, KiB, MiB or GiB with one decimal.
pub fn human(bytes: u128) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", b / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", b / 1_048_576.0),
        _ => format!("{:.1} GiB", b / 1_073_741_824.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_config_names_its_fields_from_the_outer_one() {
        let mut inner = Budget::new();
        inner.add("icem", "policy.horizon = 30000, policy.num_samples = 32", 10, 1 << 30);
        let mut b = Budget::new();
        b.add_nested("each worker: ", "base", &inner, 2);
        assert_eq!(
            b.terms()[0].fields,
            "base.policy.horizon = 30000, base.policy.num_samples = 32"
        );
        assert_eq!(b.terms()[0].what, "each worker: icem");
        assert_eq!(
            b.check().unwrap_err().to_string().split(':').next(),
            Some("invalid base.policy.horizon = a run needing about 20.0 GiB at its peak")
        );
    }

    #[test]
    fn the_field_named_is_the_one_that_makes_the_largest_term_big() {
        assert_eq!(driving_field("num_dims = 4, pop_size = 1000000000"), "pop_size");
        assert_eq!(driving_field("num_dims = 100000000, pop_size = 59"), "num_dims");
        assert_eq!(driving_field("capacity = 10"), "capacity");
        assert_eq!(driving_field("num_dims = 4, rotate = true"), "num_dims");
        let mut b = Budget::new();
        b.add("state", "num_dims = 4, pop_size = 1000000000", 1 << 40, 1);
        assert!(b.check().unwrap_err().to_string().starts_with("invalid pop_size = "));
    }

    #[test]
    fn a_budget_sums_its_terms_and_refuses_past_the_limit_naming_the_largest() {
        let mut b = Budget::new();
        b.add("replay", "capacity = 10", 10, 16).add("weights", "hidden = 4", 4, 8);
        assert_eq!(b.total(), 192);
        b.check().unwrap();
        let mut twice = Budget::new();
        twice.add_all("per thread: ", &b, 2);
        assert_eq!(twice.total(), 384);
        assert_eq!(twice.terms()[0].what, "per thread: replay");
        b.add("Fisher sensitivities", "policy.horizon = 1048576", 1 << 40, 8);
        let e = b.check().unwrap_err().to_string();
        assert!(e.starts_with("invalid policy.horizon = a run needing about 8192.0 GiB"), "{e}");
        assert!(
            e.contains("Fisher sensitivities (policy.horizon = 1048576): 8192.0 GiB; replay"),
            "{e}"
        );
        // Saturating, never wrapping.
        b.add("absurd", "x = 1", u128::MAX, 2);
        assert_eq!(b.total(), u128::MAX);
        assert!(b.check().is_err());
        assert_eq!(human(1536), "1.5 KiB");
    }
}
