//! Grid worlds of `tarod13/asymexp` (`src/envs/env.py`, `gridworld.py`, `door_gridworld.py`;
//! reference §1.2 "asymexp", `../shared/data/allo-asymexp-golden/README.md` §3 (a)), the maps
//! the `asymexp` ALLO profile trains on. Unlike the paper code's maps ([`crate::grid`]) a
//! position is `(x, y)` = (column, row), the actions are 0 up `(0, −1)`, 1 right, 2 down, 3
//! left, and a map may have a start `S` (every reset goes there), a goal `G` (terminal) and
//! one-way doors.
//!
//! Two text formats: the legacy one (one character per cell: `X`/`#` wall, `S`, `G`, anything
//! else free; width = the longest line, shorter lines padded with free cells) and, in the
//! final version only, the comma one (tiles separated by commas; a tile may hold several
//! elements; `D` followed by letters of `UDLR` is a one-way door per letter — the move from this
//! tile in that direction stays possible, the reverse move from the destination is blocked;
//! `P<a>><b><dir>` blocks the reverse of `dir` out of full state `b`, no teleport). The
//! thresholded version does not strip the text, so a trailing newline adds a row of free
//! cells (the reference's quirk, kept); the final version strips it.
//!
//! States: the *full* index `y·W + x` over the rectangle, and the *canonical* index, the rank
//! of a full index among the non-wall cells. Everything downstream (replay, ground truth,
//! metric) uses canonical indices.

use crate::error::EnvError;

/// Which version of the reference's parser (and of `exp_alcl/allo.py`; config spelling
/// `thresholded`, `final`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionKind {
    /// Tree `4deb141` (2025-12-27), the one the seed quotes: the optional error threshold, the
    /// symmetrised-transition-matrix ground truth, the legacy format read unstripped.
    #[default]
    Thresholded,
    /// Tree `ba956b1` (2026-02-04), the last before the file moved: no threshold, the three
    /// empirical Laplacians, the text stripped, comma maps with one-way doors.
    Final,
}

/// The four moves `(dx, dy)`: up, right, down, left.
pub const MOVES: [(i32, i32); 4] = [(0, -1), (1, 0), (0, 1), (-1, 0)];

/// A parsed map with its numbering and one-step table.
#[derive(Clone, Debug, PartialEq)]
pub struct AsymexpMap {
    /// Where it came from.
    pub name: String,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Walls, full index.
    pub wall: Vec<bool>,
    /// The start cell (full index), if the map has `S`.
    pub start: Option<u32>,
    /// The goal cell (full index), if the map has `G`.
    pub goal: Option<u32>,
    /// Blocked `(full state, action)` pairs (doors), sorted.
    pub blocked: Vec<(u32, u8)>,
    /// The full index of each canonical state, increasing.
    pub canonical: Vec<u32>,
    /// `next[4 s + a]`: the canonical state after action `a` from canonical state `s`.
    pub next: Vec<u32>,
    /// The canonical states a random reset picks from (non-wall, non-goal, in order).
    pub valid_starts: Vec<u32>,
}

impl AsymexpMap {
    /// Parses `text` with `version`'s rules (see the module docs).
    pub fn parse(text: &str, name: &str, version: VersionKind) -> Result<Self, EnvError> {
        let err = |what: String| EnvError::Map { path: name.to_string(), what };
        let (rows, blocked_moves, portals) = match version {
            VersionKind::Thresholded => (legacy(text.split('\n')), Vec::new(), Vec::new()),
            VersionKind::Final => {
                let t = text.trim();
                if t.split('\n').any(|l| l.contains(',')) {
                    comma(t, &err)?
                } else {
                    (legacy(t.split('\n')), Vec::new(), Vec::new())
                }
            }
        };
        let height = rows.len();
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        if width == 0 || height == 0 {
            return Err(err("empty map".into()));
        }
        if width > 4096 || height > 4096 || width * height > 1 << 22 {
            return Err(err(format!("{width}x{height}: at most 4096 a side and 4,194,304 cells")));
        }
        let mut wall = vec![false; width * height];
        let (mut start, mut goal) = (None, None);
        for (y, row) in rows.iter().enumerate() {
            for (x, cell) in row.iter().enumerate() {
                let f = (y * width + x) as u32;
                wall[f as usize] |= cell.wall;
                // The last `S` / `G` read wins, as in the reference's loop.
                if cell.start {
                    start = Some(f);
                }
                if cell.goal {
                    goal = Some(f);
                }
            }
        }
        let mut blocked = Vec::new();
        for (x, y, a) in blocked_moves {
            // The door's destination, if inside the rectangle; its reverse move is blocked.
            let (dx, dy) = MOVES[a as usize];
            let (tx, ty) = (x as i64 + dx as i64, y as i64 + dy as i64);
            if (0..width as i64).contains(&tx) && (0..height as i64).contains(&ty) {
                blocked.push(((ty as usize * width + tx as usize) as u32, (a + 2) % 4));
            }
        }
        for (dest, a) in portals {
            blocked.push((dest, (a + 2) % 4));
        }
        blocked.sort_unstable();
        blocked.dedup();
        let canonical: Vec<u32> =
            (0..(width * height) as u32).filter(|&f| !wall[f as usize]).collect();
        if canonical.is_empty() {
            return Err(err("no free cell".into()));
        }
        let valid_starts: Vec<u32> =
            (0..canonical.len() as u32).filter(|&s| Some(canonical[s as usize]) != goal).collect();
        if start.is_none() && valid_starts.is_empty() {
            return Err(err(
                "no cell to start from: every free cell is the goal G and there is no S".into(),
            ));
        }
        for (what, cell) in [("start S", start), ("goal G", goal)] {
            if let Some(f) = cell
                && wall[f as usize]
            {
                return Err(err(format!("the {what} at full index {f} is also a wall")));
            }
        }
        let mut map = AsymexpMap {
            name: name.to_string(),
            width,
            height,
            wall,
            start,
            goal,
            blocked,
            canonical,
            next: Vec::new(),
            valid_starts,
        };
        map.build_next();
        Ok(map)
    }

    /// Blocks more `(full state, action)` moves (the doors `--use_doors` places at random;
    /// the run takes them from its config) and rebuilds the one-step table.
    pub fn block(&mut self, pairs: &[(u32, u8)]) -> Result<(), EnvError> {
        if let Some(&(f, a)) = pairs.iter().find(|&&(f, a)| a > 3 || f as usize >= self.wall.len())
        {
            return Err(EnvError::Map {
                path: self.name.clone(),
                what: format!(
                    "blocked move ({f}, {a}): a full state below {} and an action 0..=3",
                    self.wall.len()
                ),
            });
        }
        self.blocked.extend_from_slice(pairs);
        self.blocked.sort_unstable();
        self.blocked.dedup();
        self.build_next();
        Ok(())
    }

    /// The one-step table: clip to the rectangle, stay on a wall or a blocked move.
    fn build_next(&mut self) {
        let (width, height) = (self.width, self.height);
        self.next.clear();
        for &f in &self.canonical {
            let (x, y) = ((f as usize % width) as i64, (f as usize / width) as i64);
            for (a, (dx, dy)) in MOVES.iter().enumerate() {
                let nx = (x + *dx as i64).clamp(0, width as i64 - 1) as usize;
                let ny = (y + *dy as i64).clamp(0, height as i64 - 1) as usize;
                let t = (ny * width + nx) as u32;
                let stay =
                    self.wall[t as usize] || self.blocked.binary_search(&(f, a as u8)).is_ok();
                let to = if stay { f } else { t };
                self.next.push(self.canonical.binary_search(&to).expect("a free cell") as u32);
            }
        }
    }

    /// Reads a map file as Python's text mode does (`\r\n` and `\r` read as `\n`).
    pub fn load(path: &std::path::Path, version: VersionKind) -> Result<Self, EnvError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| EnvError::Io { path: path.display().to_string(), source: e })?;
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        Self::parse(&text, &path.display().to_string(), version)
    }

    /// Canonical states.
    pub fn num_states(&self) -> usize {
        self.canonical.len()
    }

    /// The canonical index of a full index (`None` for a wall or outside).
    pub fn canonical_of(&self, full: u32) -> Option<u32> {
        self.canonical.binary_search(&full).ok().map(|s| s as u32)
    }

    /// `(x, y)` of canonical state `s`.
    pub fn xy(&self, s: u32) -> (usize, usize) {
        let f = self.canonical[s as usize] as usize;
        (f % self.width, f / self.width)
    }

    /// Whether canonical state `s` is the goal.
    pub fn is_goal(&self, s: u32) -> bool {
        self.goal == Some(self.canonical[s as usize])
    }

    /// The canonical start state, if the map fixes one.
    pub fn start_state(&self) -> Option<u32> {
        self.start.and_then(|f| self.canonical_of(f))
    }

    /// The network input of every canonical state, `S × 2` float32:
    /// `((x, y) − (W/2, H/2)) / (max(W, H)/2)`.
    pub fn coords(&self) -> Vec<f32> {
        let (hw, hh) = (self.width as f32 / 2.0, self.height as f32 / 2.0);
        let scale = self.width.max(self.height) as f32 / 2.0;
        let mut out = Vec::with_capacity(2 * self.num_states());
        for s in 0..self.num_states() as u32 {
            let (x, y) = self.xy(s);
            out.push((x as f32 - hw) / scale);
            out.push((y as f32 - hh) / scale);
        }
        out
    }
}

/// One tile's elements.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    wall: bool,
    start: bool,
    goal: bool,
}

/// The legacy format: one character per cell (`X`/`#` wall, `S`, `G`; the others free).
fn legacy<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<Vec<Cell>> {
    lines
        .map(|l| {
            l.chars()
                .map(|c| Cell { wall: c == 'X' || c == '#', start: c == 'S', goal: c == 'G' })
                .collect()
        })
        .collect()
}

type Parsed = (Vec<Vec<Cell>>, Vec<(usize, usize, u8)>, Vec<(u32, u8)>);

/// The comma format: rows of comma-separated tiles (blank lines skipped, short rows padded
/// with free tiles); returns the cells, the doors `(x, y, action)` and the portals'
/// `(destination full state, action)`.
fn comma(text: &str, err: &dyn Fn(String) -> EnvError) -> Result<Parsed, EnvError> {
    let action = |c: char| "URDL".find(c).map(|a| a as u8);
    let (mut rows, mut doors, mut portals) = (Vec::new(), Vec::new(), Vec::new());
    for (line_no, line) in text.split('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let y = rows.len();
        let mut row = Vec::new();
        for (x, tile) in line.split(',').map(str::trim).enumerate() {
            row.push(Cell {
                wall: tile.contains('X') || tile.contains('#'),
                start: tile.contains('S'),
                goal: tile.contains('G'),
            });
            // `D[UDLR]+`, matched left to right without overlap (`re.finditer`).
            let b = tile.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'D' {
                    let run = b[i + 1..].iter().take_while(|c| b"UDLR".contains(c)).count();
                    if run > 0 {
                        for &c in &b[i + 1..i + 1 + run] {
                            doors.push((x, y, action(c as char).expect("one of UDLR")));
                        }
                        i += 1 + run;
                        continue;
                    }
                }
                i += 1;
            }
            // `P(\d+)>(\d+)([UDLR])`.
            let mut rest = tile;
            while let Some(p) = rest.find('P') {
                rest = &rest[p + 1..];
                let src = rest.bytes().take_while(u8::is_ascii_digit).count();
                if src == 0 || rest.as_bytes().get(src) != Some(&b'>') {
                    continue;
                }
                let after = &rest[src + 1..];
                let dst = after.bytes().take_while(u8::is_ascii_digit).count();
                let dir = after[dst..].chars().next().and_then(action);
                if let (true, Some(a)) = (dst > 0, dir) {
                    let dest: u32 = after[..dst].parse().map_err(|_| {
                        err(format!("line {}: portal {tile:?}: state out of range", line_no + 1))
                    })?;
                    portals.push((dest, a));
                    rest = &after[dst + 1..];
                }
            }
        }
        rows.push(row);
    }
    Ok((rows, doors, portals))
}

/// A door `--use_doors` places: the move `(s, a) → s'` stays possible, the reverse move
/// `(s', a_rev)` is blocked (canonical states).
pub type Door = (u32, u8, u32, u8);

impl AsymexpMap {
    /// Every move `(s, a) → s' ≠ s` whose reverse `(s', a_rev)` leads back to `s`, in the
    /// reference's order (canonical states, then actions; `find_reversible_transitions`, on
    /// the map's geometry without its doors).
    pub fn reversible_moves(&self) -> Vec<Door> {
        let free = |x: i64, y: i64| -> Option<u32> {
            let x = x.clamp(0, self.width as i64 - 1) as usize;
            let y = y.clamp(0, self.height as i64 - 1) as usize;
            let f = (y * self.width + x) as u32;
            (!self.wall[f as usize]).then_some(f)
        };
        let mut out = Vec::new();
        for s in 0..self.num_states() as u32 {
            let (x, y) = self.xy(s);
            let f = self.canonical[s as usize];
            for (a, (dx, dy)) in MOVES.iter().enumerate() {
                let Some(t) = free(x as i64 + *dx as i64, y as i64 + *dy as i64) else { continue };
                if t == f {
                    continue;
                }
                let rev = (a + 2) % 4;
                let (tx, ty) = ((t as usize % self.width) as i64, (t as usize / self.width) as i64);
                let (rx, ry) = MOVES[rev];
                if free(tx + rx as i64, ty + ry as i64) == Some(f) {
                    out.push((s, a as u8, self.canonical_of(t).expect("free"), rev as u8));
                }
            }
        }
        out
    }

    /// `create_random_doors`: `num_doors` of the reversible moves drawn without replacement by
    /// numpy's legacy `RandomState(door_seed).choice`, in its order.
    pub fn random_doors(&self, num_doors: usize, door_seed: u32) -> Vec<Door> {
        let moves = self.reversible_moves();
        let k = num_doors.min(moves.len());
        numpy_choice_without_replacement(moves.len(), k, door_seed)
            .into_iter()
            .map(|i| moves[i])
            .collect()
    }

    /// Blocks the reverse move of each door (see [`AsymexpMap::block`]).
    pub fn add_doors(&mut self, doors: &[Door]) -> Result<(), EnvError> {
        let pairs: Vec<(u32, u8)> = doors
            .iter()
            .map(|&(_, _, t, rev)| {
                (self.canonical.get(t as usize).copied().unwrap_or(u32::MAX), rev)
            })
            .collect();
        self.block(&pairs)
    }
}

/// numpy's legacy `RandomState(seed).choice(n, k, replace=False)`: the first `k` entries of
/// `permutation(n)`, a Fisher–Yates shuffle from the end whose draws are MT19937's 32-bit
/// outputs masked to the next power of two and rejected above the bound (`random_interval`).
pub fn numpy_choice_without_replacement(n: usize, k: usize, seed: u32) -> Vec<usize> {
    let mut mt = Mt19937::new(seed);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let max = i as u64;
        let mut mask = max;
        for s in [1, 2, 4, 8, 16, 32] {
            mask |= mask >> s;
        }
        let j = loop {
            let v = if max <= 0xffff_ffff {
                mt.next_u32() as u64 & mask
            } else {
                ((mt.next_u32() as u64) << 32 | mt.next_u32() as u64) & mask
            };
            if v <= max {
                break v as usize;
            }
        };
        perm.swap(i, j);
    }
    perm.truncate(k);
    perm
}

/// The Mersenne Twister MT19937 (Matsumoto & Nishimura 1998), seeded as numpy's legacy
/// `RandomState(int)` (`init_genrand`).
struct Mt19937 {
    mt: [u32; 624],
    i: usize,
}

impl Mt19937 {
    fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = seed;
        for i in 1..624 {
            mt[i] =
                1_812_433_253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { mt, i: 624 }
    }

    fn next_u32(&mut self) -> u32 {
        if self.i >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MT19937's reference output: seed 5489 gives 3499211612 first and 4123659995 as the
    /// 10,000th draw (the C++ standard's check of `std::mt19937`).
    #[test]
    fn mersenne_twister_matches_its_reference_sequence() {
        let mut m = Mt19937::new(5489);
        assert_eq!(m.next_u32(), 3_499_211_612);
        let mut last = 0;
        for _ in 1..10_000 {
            last = m.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }
}
