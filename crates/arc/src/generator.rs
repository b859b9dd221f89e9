//! Procedural ARC task families: Kestrel's embedded default, needing no dataset.
//!
//! Each [`Family`] draws a hidden rule once per task (a transform, a colour map, a
//! direction, a scale...) and then unlimited input/output pairs obeying it, reproducibly
//! from a [`Key`]: task `i` of a family is `Key::new(seed).fold_in(family).fold_in(i)`, and
//! pair `j` of it folds in `j` again. Grid sides lie in `[min_side, max_side]` (≤ 30, and
//! smaller where a rule enlarges its output); `difficulty` in `[0, 1]` scales object count,
//! density and noise.

use crate::error::ArcError;
use crate::task::{GridData, MAX_SIDE, Pair, Task, TaskBank};
use kestrel_core::FromInvalid;
use kestrel_core::{Key, Rng};

/// The task families (config spelling [`Family::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A fixed flip, rotation or transpose of the whole grid.
    Symmetry,
    /// A fixed colour permutation.
    Recolor,
    /// Non-background cells fall in a fixed direction.
    Gravity,
    /// Background cells enclosed by outlines are filled with a fixed colour.
    FillEnclosed,
    /// Pairs of same-coloured pixels in a row or column are joined by a line.
    ConnectLines,
    /// The output is the one multi-cell object cropped out of noise.
    CropObject,
    /// Every cell becomes a k × k block (k fixed per task).
    ScaleUp,
    /// The input is tiled a × b times.
    Tile,
    /// Isolated noise pixels of a fixed colour are removed.
    Denoise,
    /// The number of pixels of the marked colour, as a 1 × n bar.
    CountBar,
    /// The grid's outer border is painted a fixed colour.
    Border,
}

impl Family {
    /// Every family, in a fixed order (the order indexes the key tree).
    pub const ALL: [Family; 11] = [
        Family::Symmetry,
        Family::Recolor,
        Family::Gravity,
        Family::FillEnclosed,
        Family::ConnectLines,
        Family::CropObject,
        Family::ScaleUp,
        Family::Tile,
        Family::Denoise,
        Family::CountBar,
        Family::Border,
    ];

    /// Lower-case name used in ids and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Family::Symmetry => "symmetry",
            Family::Recolor => "recolor",
            Family::Gravity => "gravity",
            Family::FillEnclosed => "fill-enclosed",
            Family::ConnectLines => "connect-lines",
            Family::CropObject => "crop-object",
            Family::ScaleUp => "scale-up",
            Family::Tile => "tile",
            Family::Denoise => "denoise",
            Family::CountBar => "count-bar",
            Family::Border => "border",
        }
    }

    /// Parses [`Family::name`].
    pub fn parse(s: &str) -> Result<Family, ArcError> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| ArcError::invalid("family", s, Family::ALL.map(|f| f.name()).join(", ")))
    }
}

/// Generator settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenConfig {
    /// Smallest grid side.
    pub min_side: usize,
    /// Largest grid side (≤ 30).
    pub max_side: usize,
    /// 0 (easy) to 1 (hard).
    pub difficulty: f32,
    /// Demonstration pairs per task.
    pub train_pairs: usize,
    /// Test pairs per task.
    pub test_pairs: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig { min_side: 3, max_side: 12, difficulty: 0.5, train_pairs: 3, test_pairs: 1 }
    }
}

impl GenConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), ArcError> {
        if self.min_side < 3 || self.min_side > self.max_side || self.max_side > MAX_SIDE {
            return Err(ArcError::invalid(
                "min_side..max_side",
                format!("{}..{}", self.min_side, self.max_side),
                "3 <= min_side <= max_side <= 30",
            ));
        }
        if !(0.0..=1.0).contains(&self.difficulty) {
            return Err(ArcError::invalid("difficulty", self.difficulty, "0 to 1"));
        }
        if self.train_pairs == 0
            || self.test_pairs == 0
            || self.train_pairs > 10
            || self.test_pairs > 4
        {
            return Err(ArcError::invalid(
                "train_pairs/test_pairs",
                format!("{}/{}", self.train_pairs, self.test_pairs),
                "1-10 train pairs and 1-4 test pairs",
            ));
        }
        Ok(())
    }
}

/// A working grid for generation.
#[derive(Clone)]
struct G {
    h: usize,
    w: usize,
    c: Vec<u8>,
}

impl G {
    fn new(h: usize, w: usize, v: u8) -> G {
        G { h, w, c: vec![v; h * w] }
    }
    fn at(&self, r: usize, c: usize) -> u8 {
        self.c[r * self.w + c]
    }
    fn set(&mut self, r: usize, c: usize, v: u8) {
        self.c[r * self.w + c] = v;
    }
    fn data(self) -> GridData {
        GridData { h: self.h, w: self.w, cells: self.c }
    }
}

fn range(rng: &mut Rng, lo: usize, hi: usize) -> usize {
    lo + rng.below((hi - lo + 1) as u32) as usize
}

fn colour(rng: &mut Rng, except: &[u8]) -> u8 {
    loop {
        let c = 1 + rng.below(9) as u8;
        if !except.contains(&c) {
            return c;
        }
    }
}

fn side(rng: &mut Rng, cfg: &GenConfig, cap: usize) -> usize {
    let hi = cfg.max_side.min(cap).max(1);
    range(rng, cfg.min_side.min(hi), hi)
}

fn sparse(rng: &mut Rng, h: usize, w: usize, density: f32, colours: &[u8]) -> G {
    let mut g = G::new(h, w, 0);
    for v in g.c.iter_mut() {
        if rng.bernoulli(density) {
            *v = colours[rng.below(colours.len() as u32) as usize];
        }
    }
    g
}

/// Generates task `index` of `family`.
pub fn generate_task(family: Family, index: u64, seed: u64, cfg: &GenConfig) -> Task {
    let fam_idx = Family::ALL.iter().position(|&f| f == family).unwrap_or(0) as u64;
    let key = Key::new(seed).fold_in(fam_idx).fold_in(index);
    let mut rule = key.fold_in(u64::MAX).rng();
    let rule: [u64; 4] = std::array::from_fn(|_| rule.next_u64());
    let pairs = (0..cfg.train_pairs + cfg.test_pairs)
        .map(|j| {
            let mut rng = key.fold_in(j as u64).rng();
            let (i, o) = pair(family, &rule, &mut rng, cfg);
            Pair { input: i.data(), output: o.data() }
        })
        .collect::<Vec<_>>();
    let (train, test) = pairs.split_at(cfg.train_pairs);
    Task {
        id: format!("{}-{index}", family.name()),
        group: format!("gen/{}", family.name()),
        train: train.to_vec(),
        test: test.to_vec(),
    }
}

/// A bank of `per_family` tasks from each of `families`.
pub fn generate_bank(
    families: &[Family],
    per_family: usize,
    seed: u64,
    cfg: &GenConfig,
) -> Result<TaskBank, ArcError> {
    cfg.validate()?;
    if families.is_empty() || per_family == 0 {
        return Err(ArcError::invalid(
            "families x per_family",
            format!("{} x {per_family}", families.len()),
            "at least 1 x 1",
        ));
    }
    let tasks = families
        .iter()
        .flat_map(|&f| (0..per_family as u64).map(move |i| generate_task(f, i, seed, cfg)))
        .collect();
    Ok(TaskBank::from_tasks(tasks))
}

fn pair(family: Family, rule: &[u64; 4], rng: &mut Rng, cfg: &GenConfig) -> (G, G) {
    let d = cfg.difficulty;
    let palette: Vec<u8> = (1..=9).collect();
    match family {
        Family::Symmetry => {
            let (h, w) = (side(rng, cfg, 30), side(rng, cfg, 30));
            let n = 2 + (d * 4.0) as usize;
            let g = sparse(rng, h, w, 0.2 + 0.4 * d, &palette[..n.min(9)]);
            let t = rule[0] % 6;
            let (oh, ow) = if t >= 2 && t != 3 { (w, h) } else { (h, w) };
            let mut o = G::new(oh, ow, 0);
            for r in 0..oh {
                for c in 0..ow {
                    let v = match t {
                        0 => g.at(r, w - 1 - c),         // flip left-right
                        1 => g.at(h - 1 - r, c),         // flip up-down
                        2 => g.at(c, w - 1 - r),         // rot90 counter-clockwise
                        3 => g.at(h - 1 - r, w - 1 - c), // rot180
                        4 => g.at(h - 1 - c, r),         // rot90 clockwise
                        _ => g.at(c, r),                 // transpose
                    };
                    o.set(r, c, v);
                }
            }
            (g, o)
        }
        Family::Recolor => {
            let mut perm: Vec<u8> = (0..10).collect();
            let mut r2 = Key::from_raw(rule[0]).rng();
            let k = 2 + (d * 7.0) as usize; // how many colours are remapped
            for i in (1..k.min(9) + 1).rev() {
                let j = 1 + r2.below(i as u32) as usize;
                perm.swap(i, j);
            }
            let (h, w) = (side(rng, cfg, 30), side(rng, cfg, 30));
            let g = sparse(rng, h, w, 0.5 + 0.4 * d, &palette);
            let o = G { h, w, c: g.c.iter().map(|&v| perm[v as usize]).collect() };
            (g, o)
        }
        Family::Gravity => {
            let (h, w) = (side(rng, cfg, 30), side(rng, cfg, 30));
            let g = sparse(rng, h, w, 0.15 + 0.3 * d, &palette[..(2 + (d * 6.0) as usize).min(9)]);
            let dir = rule[0] % 4; // 0 down, 1 up, 2 right, 3 left
            let mut o = G::new(h, w, 0);
            if dir < 2 {
                for c in 0..w {
                    let vals: Vec<u8> = (0..h).map(|r| g.at(r, c)).filter(|&v| v != 0).collect();
                    for (i, &v) in vals.iter().enumerate() {
                        let r = if dir == 0 { h - vals.len() + i } else { i };
                        o.set(r, c, v);
                    }
                }
            } else {
                for r in 0..h {
                    let vals: Vec<u8> = (0..w).map(|c| g.at(r, c)).filter(|&v| v != 0).collect();
                    for (i, &v) in vals.iter().enumerate() {
                        let c = if dir == 2 { w - vals.len() + i } else { i };
                        o.set(r, c, v);
                    }
                }
            }
            (g, o)
        }
        Family::FillEnclosed => {
            let fill = 1 + (rule[0] % 9) as u8;
            let wall = colour(&mut Key::from_raw(rule[1]).rng(), &[fill]);
            let (h, w) = (side(rng, cfg, 30).max(5), side(rng, cfg, 30).max(5));
            let mut g = G::new(h, w, 0);
            let boxes = 1 + (d * 4.0) as usize;
            for _ in 0..boxes * 3 {
                let (bh, bw) = (range(rng, 3, (h / 2).max(3)), range(rng, 3, (w / 2).max(3)));
                let (r0, c0) = (range(rng, 0, h - bh), range(rng, 0, w - bw));
                let free = (r0..r0 + bh).all(|r| (c0..c0 + bw).all(|c| g.at(r, c) == 0));
                if !free {
                    continue;
                }
                for r in r0..r0 + bh {
                    for c in c0..c0 + bw {
                        if r == r0 || r == r0 + bh - 1 || c == c0 || c == c0 + bw - 1 {
                            g.set(r, c, wall);
                        }
                    }
                }
            }
            // Background cells not reachable from the border through background get `fill`.
            let mut reach = vec![false; h * w];
            let mut stack: Vec<(usize, usize)> = (0..h)
                .flat_map(|r| [(r, 0), (r, w - 1)])
                .chain((0..w).flat_map(|c| [(0, c), (h - 1, c)]))
                .filter(|&(r, c)| g.at(r, c) == 0)
                .collect();
            while let Some((r, c)) = stack.pop() {
                if reach[r * w + c] {
                    continue;
                }
                reach[r * w + c] = true;
                for (dr, dc) in [(0i32, 1i32), (0, -1), (1, 0), (-1, 0)] {
                    let (nr, nc) = (r as i32 + dr, c as i32 + dc);
                    if nr >= 0
                        && nc >= 0
                        && (nr as usize) < h
                        && (nc as usize) < w
                        && g.at(nr as usize, nc as usize) == 0
                    {
                        stack.push((nr as usize, nc as usize));
                    }
                }
            }
            let mut o = g.clone();
            for i in 0..h * w {
                if g.c[i] == 0 && !reach[i] {
                    o.c[i] = fill;
                }
            }
            (g, o)
        }
        Family::ConnectLines => {
            let (h, w) = (side(rng, cfg, 30).max(4), side(rng, cfg, 30).max(4));
            let mut g = G::new(h, w, 0);
            let mut o = G::new(h, w, 0);
            let lines = 1 + (d * 5.0) as usize;
            for _ in 0..lines * 4 {
                let c = colour(rng, &[]);
                let horizontal = rng.bernoulli(0.5);
                let (fixed, len) =
                    if horizontal { (range(rng, 0, h - 1), w) } else { (range(rng, 0, w - 1), h) };
                let a = range(rng, 0, len - 3);
                let b = range(rng, a + 2, len - 1);
                let cell = |i: usize| if horizontal { (fixed, i) } else { (i, fixed) };
                if (a..=b).any(|i| {
                    let (r, cc) = cell(i);
                    o.at(r, cc) != 0
                }) {
                    continue;
                }
                for i in a..=b {
                    let (r, cc) = cell(i);
                    o.set(r, cc, c);
                }
                let ((r1, c1), (r2, c2)) = (cell(a), cell(b));
                g.set(r1, c1, c);
                g.set(r2, c2, c);
            }
            (g, o)
        }
        Family::CropObject => {
            let (h, w) = (side(rng, cfg, 30).max(5), side(rng, cfg, 30).max(5));
            let noise_c = 1 + (rule[0] % 9) as u8;
            let (oh, ow) = (range(rng, 2, (h / 2).max(2)), range(rng, 2, (w / 2).max(2)));
            let obj_colours: Vec<u8> = (0..2).map(|_| colour(rng, &[noise_c])).collect();
            let mut o = G::new(oh, ow, 0);
            for v in o.c.iter_mut() {
                *v = obj_colours[rng.below(2) as usize];
            }
            let (r0, c0) = (range(rng, 0, h - oh), range(rng, 0, w - ow));
            let mut g = G::new(h, w, 0);
            for r in 0..h {
                for c in 0..w {
                    let inside = r >= r0 && r < r0 + oh && c >= c0 && c < c0 + ow;
                    if inside {
                        g.set(r, c, o.at(r - r0, c - c0));
                    } else if rng.bernoulli(0.05 + 0.15 * d) {
                        g.set(r, c, noise_c);
                    }
                }
            }
            (g, o)
        }
        Family::ScaleUp => {
            let k = 2 + (rule[0] % 2) as usize;
            let (h, w) = (side(rng, cfg, MAX_SIDE / k), side(rng, cfg, MAX_SIDE / k));
            let g = sparse(rng, h, w, 0.3 + 0.4 * d, &palette);
            let mut o = G::new(h * k, w * k, 0);
            for r in 0..h * k {
                for c in 0..w * k {
                    o.set(r, c, g.at(r / k, c / k));
                }
            }
            (g, o)
        }
        Family::Tile => {
            let (a, b) = [(1, 2), (2, 1), (2, 2), (3, 3), (1, 3)][(rule[0] % 5) as usize];
            let mirror = d > 0.5 && rule[1].is_multiple_of(2);
            let (h, w) = (side(rng, cfg, MAX_SIDE / a), side(rng, cfg, MAX_SIDE / b));
            let g = sparse(rng, h, w, 0.3 + 0.4 * d, &palette);
            let mut o = G::new(h * a, w * b, 0);
            for r in 0..h * a {
                for c in 0..w * b {
                    let (ti, tj) = (r / h, c / w);
                    let (mut sr, mut sc) = (r % h, c % w);
                    if mirror && ti % 2 == 1 {
                        sr = h - 1 - sr;
                    }
                    if mirror && tj % 2 == 1 {
                        sc = w - 1 - sc;
                    }
                    o.set(r, c, g.at(sr, sc));
                }
            }
            (g, o)
        }
        Family::Denoise => {
            let noise_c = 1 + (rule[0] % 9) as u8;
            let (h, w) = (side(rng, cfg, 30).max(5), side(rng, cfg, 30).max(5));
            let mut o = G::new(h, w, 0);
            for _ in 0..1 + (d * 4.0) as usize {
                let c = colour(rng, &[noise_c]);
                let (bh, bw) = (range(rng, 2, (h / 2).max(2)), range(rng, 2, (w / 2).max(2)));
                let (r0, c0) = (range(rng, 0, h - bh), range(rng, 0, w - bw));
                for r in r0..r0 + bh {
                    for cc in c0..c0 + bw {
                        o.set(r, cc, c);
                    }
                }
            }
            let mut g = o.clone();
            for i in 0..h * w {
                // Noise over the background always; over objects only when difficulty > 0.5.
                if (o.c[i] == 0 || d > 0.5) && rng.bernoulli(0.04 + 0.12 * d) {
                    g.c[i] = noise_c;
                }
            }
            (g, o)
        }
        Family::CountBar => {
            let mark = 1 + (rule[0] % 9) as u8;
            let (h, w) = (side(rng, cfg, 30), side(rng, cfg, 30));
            let mut g = sparse(
                rng,
                h,
                w,
                0.1 + 0.3 * d,
                &palette.iter().copied().filter(|&c| c != mark).collect::<Vec<_>>(),
            );
            let n = range(rng, 1, (h * w / 4).clamp(1, MAX_SIDE));
            let mut placed = 0;
            while placed < n {
                let (r, c) = (range(rng, 0, h - 1), range(rng, 0, w - 1));
                if g.at(r, c) != mark {
                    g.set(r, c, mark);
                    placed += 1;
                }
            }
            (g, G::new(1, n, mark))
        }
        Family::Border => {
            let b = 1 + (rule[0] % 9) as u8;
            let (h, w) = (side(rng, cfg, 30), side(rng, cfg, 30));
            let g = sparse(rng, h, w, 0.2 + 0.5 * d, &palette);
            let mut o = g.clone();
            for r in 0..h {
                for c in 0..w {
                    if r == 0 || c == 0 || r == h - 1 || c == w - 1 {
                        o.set(r, c, b);
                    }
                }
            }
            (g, o)
        }
    }
}

/// The task `id` from `bank`, or generated from a generator id `family-index` (optionally
/// `gen:family-index`) with `seed` and `cfg`; an error names the id otherwise.
pub fn find_or_generate(
    bank: &TaskBank,
    id: &str,
    seed: u64,
    cfg: &GenConfig,
) -> Result<Task, ArcError> {
    if let Some(i) = bank.find(id) {
        return Ok(bank.tasks()[i].clone());
    }
    let gen_id = id.strip_prefix("gen:").unwrap_or(id);
    if let Some((fam, idx)) = gen_id.rsplit_once('-')
        && let (Ok(f), Ok(i)) = (Family::parse(fam), idx.parse::<u64>())
    {
        return Ok(generate_task(f, i, seed, cfg));
    }
    Err(ArcError::invalid(
        "task",
        format!("{id:?}"),
        "an id in the loaded data or a generator id like symmetry-3",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_generates_valid_reproducible_tasks() {
        for cfg in [
            GenConfig::default(),
            GenConfig { min_side: 3, max_side: 30, difficulty: 1.0, ..Default::default() },
        ] {
            for f in Family::ALL {
                for i in 0..20 {
                    let t = generate_task(f, i, 7, &cfg);
                    assert_eq!(t, generate_task(f, i, 7, &cfg), "{f:?} not reproducible");
                    assert_eq!((t.train.len(), t.test.len()), (3, 1));
                    for p in t.train.iter().chain(&t.test) {
                        for g in [&p.input, &p.output] {
                            assert!(
                                g.h >= 1 && g.w >= 1 && g.h <= 30 && g.w <= 30,
                                "{f:?}: {}x{}",
                                g.h,
                                g.w
                            );
                            assert_eq!(g.cells.len(), g.h * g.w);
                            assert!(g.cells.iter().all(|&v| v <= 9));
                        }
                    }
                }
                assert_ne!(
                    generate_task(f, 0, 7, &cfg),
                    generate_task(f, 0, 8, &cfg),
                    "{f:?} ignores the seed"
                );
            }
        }
    }

    #[test]
    fn rules_hold() {
        let cfg = GenConfig::default();
        for i in 0..10 {
            // Scale-up: every output cell equals its source cell.
            let t = generate_task(Family::ScaleUp, i, 1, &cfg);
            for p in &t.train {
                let k = p.output.h / p.input.h;
                assert!(k == 2 || k == 3);
                for r in 0..p.output.h {
                    for c in 0..p.output.w {
                        assert_eq!(p.output.at(r, c), p.input.at(r / k, c / k));
                    }
                }
            }
            // Count-bar: the bar length is the number of marked cells.
            let t = generate_task(Family::CountBar, i, 1, &cfg);
            for p in &t.train {
                let mark = p.output.cells[0];
                assert_eq!(p.input.cells.iter().filter(|&&v| v == mark).count(), p.output.w);
            }
            // Gravity keeps the multiset of colours.
            let t = generate_task(Family::Gravity, i, 1, &cfg);
            for p in &t.train {
                let (mut a, mut b) = (p.input.cells.clone(), p.output.cells.clone());
                a.sort();
                b.sort();
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn bad_config_is_an_error() {
        let bad = GenConfig { max_side: 31, ..Default::default() };
        assert!(
            generate_bank(&Family::ALL, 1, 0, &bad).unwrap_err().to_string().contains("max_side")
        );
        assert!(Family::parse("nope").unwrap_err().to_string().contains("symmetry"));
    }
}
