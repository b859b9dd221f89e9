//! Grid mazes of the ALLO paper code (Gomez et al., ICLR 2024; `laplacian_dual_dynamics`,
//! reference §1.2): a text map (`X`/`x` wall, anything else free), free cells numbered
//! row-major, four deterministic moves on (row, col) — 0: down `[+1, 0]`, 1: right `[0, +1]`,
//! 2: up `[−1, 0]`, 3: left `[0, −1]` — clipped to the grid, and a move into a wall stays.
//! [`GridWorld`] is the `Env`: uniform random start on a free cell, no terminal state
//! (episodes end by the time limit, 50 steps in the paper's data), observation = the
//! normalised position `(row, col) / (rows, cols) − 0.5`, reward 0.
//!
//! Maps load from a path ([`GridMap::load`], the paper's 15 maps are in
//! `shared/data/laplacian-grids/`) or are generated ([`GridMap::builtin`]): open rooms,
//! N-rooms layouts and random mazes, so nothing needs a data folder.

use crate::error::EnvError;
use kestrel_core::{Env, Key, Space, Spec};
use std::sync::Arc;

/// The four moves on (row, col), in the paper code's order.
pub const MOVES: [(i32, i32); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];

/// A parsed map with its state numbering and transition table.
#[derive(Clone, Debug, PartialEq)]
pub struct GridMap {
    /// Where it came from (a path or `builtin:NAME`).
    pub name: String,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `true` where free, row-major.
    pub free: Vec<bool>,
    /// `(row, col)` of each state (free cell), row-major order.
    pub cells: Vec<(u32, u32)>,
    /// `next[4 s + a]`: the state after action `a` in state `s`.
    pub next: Vec<u32>,
}

impl GridMap {
    /// Parses the paper code's text format: every line loses its last character (files end
    /// lines with `\n`; a final line without one keeps its characters), `X`/`x` is a wall,
    /// anything else free, and rows whose length differs from the first row's are dropped.
    pub fn parse(text: &str, name: &str) -> Result<Self, EnvError> {
        let err = |what: String| EnvError::Map { path: name.to_string(), what };
        let lines: Vec<&str> =
            text.split_inclusive('\n').map(|l| l.strip_suffix('\n').unwrap_or(l)).collect();
        // `line[:-1]` in the paper code also drops a '\r' left by CRLF files; keep that.
        let lines: Vec<&str> = lines.iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let first = lines.first().ok_or_else(|| err("empty map".into()))?;
        let cols = first.chars().count();
        if cols == 0 {
            return Err(err("line 1 is empty".into()));
        }
        let kept: Vec<&str> = lines.into_iter().filter(|l| l.chars().count() == cols).collect();
        let rows = kept.len();
        let free: Vec<bool> =
            kept.iter().flat_map(|l| l.chars().map(|c| c != 'X' && c != 'x')).collect();
        Self::from_cells(name, rows, cols, free).map_err(|e| match e {
            EnvError::Map { what, .. } => err(what),
            other => other,
        })
    }

    /// From a free-cell mask (row-major).
    pub fn from_cells(
        name: &str,
        rows: usize,
        cols: usize,
        free: Vec<bool>,
    ) -> Result<Self, EnvError> {
        let err = |what: String| EnvError::Map { path: name.to_string(), what };
        if rows == 0 || cols == 0 || free.len() != rows * cols {
            return Err(err(format!("{rows}x{cols} grid with {} cells", free.len())));
        }
        if rows > u16::MAX as usize || cols > u16::MAX as usize {
            return Err(err(format!("{rows}x{cols}: at most 65535 rows and columns")));
        }
        let mut index = vec![u32::MAX; rows * cols];
        let mut cells = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                if free[r * cols + c] {
                    index[r * cols + c] = cells.len() as u32;
                    cells.push((r as u32, c as u32));
                }
            }
        }
        if cells.is_empty() {
            return Err(err("no free cell".into()));
        }
        let mut next = Vec::with_capacity(cells.len() * 4);
        for &(r, c) in &cells {
            for (dr, dc) in MOVES {
                let nr = (r as i32 + dr).clamp(0, rows as i32 - 1) as usize;
                let nc = (c as i32 + dc).clamp(0, cols as i32 - 1) as usize;
                let t = index[nr * cols + nc];
                next.push(if t == u32::MAX { index[r as usize * cols + c as usize] } else { t });
            }
        }
        Ok(GridMap { name: name.to_string(), rows, cols, free, cells, next })
    }

    /// Reads a map file.
    pub fn load(path: &std::path::Path) -> Result<Self, EnvError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| EnvError::Io { path: path.display().to_string(), source: e })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// `builtin:NAME` layouts, generated:
    ///
    /// - `open-N`: an N×N free room inside a wall border (N ≥ 1);
    /// - `rooms-K-N`: a K×K grid of N×N rooms (K ≥ 1, N ≥ 2) separated by walls with one
    ///   doorway in each inner wall segment, at its middle (`rooms-2-5` is a 13×13
    ///   four-rooms layout);
    /// - `four-rooms`: the classic 13×13 four-rooms layout of Sutton, Precup & Singh (1999,
    ///   Fig. 2; the ALLO paper's GridRoom-4 and asymexp's `room4`): rooms of unequal size, a
    ///   vertical wall in column 6 above row 6 and in column 7 below it, doorways at (2, 6),
    ///   (9, 7), (6, 3) and (6, 10) as (row, column);
    /// - `maze-N-SEED`: an N×N-cell perfect maze (depth-first, from the seed), drawn on a
    ///   (2N+1)×(2N+1) grid.
    pub fn builtin(name: &str) -> Result<Self, EnvError> {
        let full = format!("builtin:{name}");
        let bad = |what: &str| EnvError::Map { path: full.clone(), what: what.to_string() };
        let parts: Vec<&str> = name.split('-').collect();
        let num = |s: &str| s.parse::<usize>().map_err(|_| bad(&format!("{s:?} is not a number")));
        match parts.as_slice() {
            ["open", n] => {
                let n = num(n)?;
                if n == 0 || n > 1000 {
                    return Err(bad("open-N needs 1 <= N <= 1000"));
                }
                let s = n + 2;
                let free = (0..s * s)
                    .map(|i| (1..=n).contains(&(i / s)) && (1..=n).contains(&(i % s)))
                    .collect();
                Self::from_cells(&full, s, s, free)
            }
            ["four", "rooms"] => {
                let free = (0..13 * 13)
                    .map(|i| {
                        let (r, c) = (i / 13, i % 13);
                        (1..=11).contains(&r)
                            && (1..=11).contains(&c)
                            && !(r == 6 && c != 3 && c != 10)
                            && !(c == 6 && r <= 5 && r != 2)
                            && !(c == 7 && r >= 7 && r != 9)
                    })
                    .collect();
                Self::from_cells(&full, 13, 13, free)
            }
            ["rooms", k, n] => {
                let (k, n) = (num(k)?, num(n)?);
                if k == 0 || n < 2 || k * (n + 1) + 1 > 1000 {
                    return Err(bad(
                        "rooms-K-N needs K >= 1, N >= 2 and at most 1000 cells a side",
                    ));
                }
                let s = k * (n + 1) + 1;
                let mut free = vec![false; s * s];
                for r in 0..s {
                    for c in 0..s {
                        let wall_r = r % (n + 1) == 0;
                        let wall_c = c % (n + 1) == 0;
                        let inner = r > 0 && r < s - 1 && c > 0 && c < s - 1;
                        let door = inner
                            && ((wall_r && !wall_c && c % (n + 1) == n / 2 + 1)
                                || (wall_c && !wall_r && r % (n + 1) == n / 2 + 1));
                        free[r * s + c] = inner && ((!wall_r && !wall_c) || door);
                    }
                }
                Self::from_cells(&full, s, s, free)
            }
            ["maze", n, seed] => {
                let (n, seed) = (num(n)?, num(seed)?);
                if n == 0 || n > 499 {
                    return Err(bad("maze-N-SEED needs 1 <= N <= 499"));
                }
                let s = 2 * n + 1;
                let mut free = vec![false; s * s];
                let mut seen = vec![false; n * n];
                let mut rng = Key::new(seed as u64).rng();
                let mut stack = vec![0usize];
                seen[0] = true;
                free[s + 1] = true;
                while let Some(&cell) = stack.last() {
                    let (r, c) = (cell / n, cell % n);
                    let mut options = [0usize; 4];
                    let mut m = 0;
                    for (dr, dc) in MOVES {
                        let (nr, nc) = (r as i32 + dr, c as i32 + dc);
                        if nr >= 0 && nc >= 0 && (nr as usize) < n && (nc as usize) < n {
                            let t = nr as usize * n + nc as usize;
                            if !seen[t] {
                                options[m] = t;
                                m += 1;
                            }
                        }
                    }
                    if m == 0 {
                        stack.pop();
                        continue;
                    }
                    let t = options[rng.below(m as u32) as usize];
                    let (tr, tc) = (t / n, t % n);
                    seen[t] = true;
                    free[(2 * tr + 1) * s + 2 * tc + 1] = true;
                    free[(r + tr + 1) * s + c + tc + 1] = true;
                    stack.push(t);
                }
                Self::from_cells(&full, s, s, free)
            }
            _ => Err(bad("unknown layout; use open-N, rooms-K-N or maze-N-SEED")),
        }
    }

    /// A path, or `builtin:NAME`.
    pub fn resolve(spec: &str) -> Result<Self, EnvError> {
        match spec.strip_prefix("builtin:") {
            Some(name) => Self::builtin(name),
            None => Self::load(std::path::Path::new(spec)),
        }
    }

    /// Number of states (free cells).
    pub fn num_states(&self) -> usize {
        self.cells.len()
    }

    /// The paper code's observation of a state: `(row, col) / (rows, cols) − 0.5`.
    pub fn observe(&self, s: u32, out: &mut [f32]) {
        let (r, c) = self.cells[s as usize];
        out[0] = r as f32 / self.rows as f32 - 0.5;
        out[1] = c as f32 / self.cols as f32 - 0.5;
    }

    /// The map as text (`X` wall, space free), one line per row.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for r in 0..self.rows {
            for c in 0..self.cols {
                s.push(if self.free[r * self.cols + c] { ' ' } else { 'X' });
            }
            s.push('\n');
        }
        s
    }
}

/// Parameters of a [`GridWorld`]: the map (shared) and the episode limit.
#[derive(Clone, Debug)]
pub struct GridParams {
    /// The map.
    pub map: Arc<GridMap>,
    /// Episode limit (the paper's data: 50).
    pub max_episode_steps: u32,
}

impl Default for GridParams {
    fn default() -> Self {
        GridParams {
            map: Arc::new(GridMap::resolve(&GridConfig::default().map).expect("valid builtin")),
            max_episode_steps: 50,
        }
    }
}

/// A [`GridWorld`] as a config names it: the map (spelt as ALLO's run spells it) and the limit.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct GridConfig {
    /// A map file (the ALLO paper code's text format) or `builtin:NAME` (open-N, rooms-K-N,
    /// maze-N-SEED).
    pub map: String,
    /// Steps before truncation (the paper's data: 50).
    pub max_episode_steps: u32,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig { map: "builtin:rooms-2-5".into(), max_episode_steps: 50 }
    }
}

impl GridConfig {
    /// The params: the map built or read, the limit checked.
    pub fn params(&self) -> Result<GridParams, EnvError> {
        crate::error::limit(self.max_episode_steps)?;
        let map = GridMap::resolve(&self.map)?;
        Ok(GridParams { map: Arc::new(map), max_episode_steps: self.max_episode_steps })
    }
}

/// The grid-maze `Env` (state: the state index).
#[derive(Clone, Copy, Debug, Default)]
pub struct GridWorld;

impl Env for GridWorld {
    type Params = GridParams;
    type State = u32;
    type Obs = f32;
    type Action = u8;

    fn spec(&self, p: &GridParams) -> Spec {
        Spec {
            obs_space: Space::Box { low: -0.5, high: 0.5, shape: vec![2] },
            action_space: Space::Discrete { n: 4 },
            num_agents: 1,
            max_episode_steps: Some(p.max_episode_steps),
        }
    }

    fn reset(&self, p: &GridParams, key: Key, obs: &mut [f32]) -> u32 {
        let s = key.rng().below(p.map.num_states() as u32);
        p.map.observe(s, obs);
        s
    }

    /// An action outside 0..4 leaves the agent where it is.
    fn step(
        &self,
        p: &GridParams,
        s: &mut u32,
        a: &[u8],
        _key: Key,
        obs: &mut [f32],
        r: &mut [f32],
    ) -> bool {
        if a[0] < 4 {
            *s = p.map.next[*s as usize * 4 + a[0] as usize];
        }
        p.map.observe(*s, obs);
        r[0] = 0.0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    const FOUR_ROOMS: &str = "XXXXXXXXXXXXX\nX     X     X\nX           X\nX     X     X\nX     X     X\nX     X     X\nXXX XXXXXX XX\nX      X    X\nX      X    X\nX           X\nX      X    X\nX      X    X\nXXXXXXXXXXXXX\n";

    #[test]
    fn parses_the_paper_format() {
        let m = GridMap::parse(FOUR_ROOMS, "four").unwrap();
        assert_eq!((m.rows, m.cols, m.num_states()), (13, 13, 104));
        // Row-major numbering over free cells: (1, 6) is a wall, so state 5 is (1, 7).
        assert_eq!(m.cells[0], (1, 1));
        assert_eq!(m.cells[5], (1, 7));
        // From (1, 1): down to (2, 1), right to (1, 2), up and left blocked.
        let s0 = 0usize;
        let at = |s: u32| m.cells[s as usize];
        assert_eq!(at(m.next[s0 * 4]), (2, 1));
        assert_eq!(at(m.next[s0 * 4 + 1]), (1, 2));
        assert_eq!(m.next[s0 * 4 + 2], 0);
        assert_eq!(m.next[s0 * 4 + 3], 0);
        // Rows of another length are dropped; a last line without '\n' keeps its characters.
        let m2 = GridMap::parse("XXX\nX X\nXX\nXXX", "t").unwrap();
        assert_eq!((m2.rows, m2.cols, m2.num_states()), (3, 3, 1));
        let mut o = [0.0f32; 2];
        m2.observe(0, &mut o);
        assert_eq!(o, [1.0 / 3.0 - 0.5, 1.0 / 3.0 - 0.5]);
    }

    #[test]
    fn builtins_and_errors() {
        let four = GridMap::builtin("rooms-2-5").unwrap();
        assert_eq!((four.rows, four.num_states()), (13, 104));
        assert_eq!(GridMap::builtin("open-4").unwrap().num_states(), 16);
        let maze = GridMap::builtin("maze-6-3").unwrap();
        // A perfect maze on 36 cells has 36 cells + 35 passages free.
        assert_eq!(maze.num_states(), 71);
        assert_eq!(maze, GridMap::builtin("maze-6-3").unwrap());
        assert_ne!(maze, GridMap::builtin("maze-6-4").unwrap());
        for bad in ["open-0", "rooms-2-1", "maze-x-1", "spiral-3"] {
            let e = GridMap::builtin(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("builtin:{bad}")), "{e}");
        }
        assert!(
            GridMap::parse("XXX\nXXX\n", "walls")
                .unwrap_err()
                .to_string()
                .contains("walls: no free cell")
        );
        let e = GridMap::load(std::path::Path::new("/nonexistent/map.txt")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/map.txt"));
    }

    #[test]
    fn every_state_is_reachable_in_builtin_layouts() {
        for name in ["open-5", "rooms-3-4", "maze-8-1"] {
            let m = GridMap::builtin(name).unwrap();
            let mut seen = vec![false; m.num_states()];
            let mut stack = vec![0u32];
            seen[0] = true;
            while let Some(s) = stack.pop() {
                for a in 0..4 {
                    let t = m.next[s as usize * 4 + a];
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        stack.push(t);
                    }
                }
            }
            assert!(seen.iter().all(|&v| v), "{name}");
        }
    }

    #[test]
    fn conformance() {
        check_env(&GridWorld, &GridParams::default(), &Conformance::default(), |k, _, a| {
            a[0] = k.rng().below(4) as u8
        });
    }
}
