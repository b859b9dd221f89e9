//! Config fields known at run time: their names, doc comments and nested tables, from
//! `#[derive(Documented)]` (the `kestrel-derive` crate). `kestrel config <kind>` prints a run
//! kind's defaults with these docs as commented TOML, and a config layer with an unknown key
//! is answered with the closest valid key ([`closest`]).

/// One config field: its key, its doc comment, and (for a nested table) its own fields.
#[derive(Clone, Copy, Debug)]
pub struct FieldDoc {
    /// The key, as the config spells it.
    pub name: &'static str,
    /// The field's doc comment, on one line.
    pub doc: &'static str,
    /// The fields of a nested config table (`#[documented(nested)]`).
    pub nested: Option<fn() -> &'static [FieldDoc]>,
}

/// A config type whose fields are known at run time (derive it with
/// `#[derive(kestrel_core::Documented)]`).
pub trait Documented {
    /// Every field, in declaration order.
    fn fields() -> &'static [FieldDoc];
}

/// The field at a dotted `path` (`["run", "mppi", "lambda"]`), if every part is a key of the
/// table above it.
pub fn field_at(fields: &'static [FieldDoc], path: &[&str]) -> Option<&'static FieldDoc> {
    let (first, rest) = path.split_first()?;
    let f = fields.iter().find(|f| f.name == *first)?;
    if rest.is_empty() { Some(f) } else { field_at((f.nested?)(), rest) }
}

/// Edit distance (insertions, deletions, substitutions, adjacent swaps) between two keys.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// ` (did you mean `c`?)` with the [`closest`] candidate `c`, or nothing: the hint every
/// "unknown name" message ends with.
pub fn did_you_mean<'a>(key: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(key, candidates).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default()
}

/// The candidate closest to `key` (fewest edits; a candidate containing `key`, or contained
/// in it, counts as one edit away), or `None` when nothing is within half the key's length.
pub fn closest<'a>(key: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = key.to_ascii_lowercase().replace('-', "_");
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let cl = c.to_ascii_lowercase();
        let mut d = distance(&lower, &cl);
        if !lower.is_empty() && (cl.contains(&lower) || lower.contains(&cl)) {
            d = d.min(1);
        }
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.filter(|&(d, _)| d <= key.chars().count().div_ceil(2).max(2)).map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_key_is_the_fewest_edits_away() {
        let keys = ["lambda", "noise_sigma", "horizon", "num_samples"];
        assert_eq!(closest("lamda", keys), Some("lambda"));
        assert_eq!(closest("lmabda", keys), Some("lambda"));
        assert_eq!(closest("sigma", keys), Some("noise_sigma"));
        assert_eq!(closest("num-samples", keys), Some("num_samples"));
        assert_eq!(closest("Horizon", keys), Some("horizon"));
        assert_eq!(closest("zzzzzzzz", keys), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
    }

    #[test]
    fn fields_are_found_by_their_dotted_path() {
        fn inner() -> &'static [FieldDoc] {
            &[FieldDoc { name: "lambda", doc: "Temperature.", nested: None }]
        }
        static OUTER: [FieldDoc; 2] = [
            FieldDoc { name: "seed", doc: "Seed.", nested: None },
            FieldDoc { name: "mppi", doc: "The controller.", nested: Some(inner) },
        ];
        assert_eq!(field_at(&OUTER, &["mppi", "lambda"]).map(|f| f.doc), Some("Temperature."));
        assert!(field_at(&OUTER, &["mppi", "lamda"]).is_none());
        assert!(field_at(&OUTER, &["seed", "x"]).is_none());
        assert!(field_at(&OUTER, &[]).is_none());
    }
}
