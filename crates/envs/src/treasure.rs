//! sorrel 1.6.0's multi-agent treasure hunt (`sorrel/examples/treasurehunt`, reference §2.1),
//! as a kernel over a flat byte grid.
//!
//! | | |
//! |---|---|
//! | world | `height × width` (21 × 21), wall border, interior empty; agents on distinct random interior cells |
//! | turn | (1) every empty interior cell without an agent spawns, with probability `spawn_prob`, a gem, food or bone (uniform), row-major order; items never despawn; (2) agents act one after another in list order |
//! | actions | 0 up (row − 1), 1 down, 2 left (col − 1), 3 right |
//! | reward | the value of what is at the target: gem +10, food +5, bone −10, wall −1 (no move), another agent 0 (no move), empty 0; moving onto an item removes it |
//! | observation | egocentric `(2r+1)²` view (r = 2), cells outside the map look like walls; `onehot`: 6 channels `[empty, wall, gem, bone, food, agent]` with empty all-zero; `rgb`: wall (255,0,0), gem (203,255,0), bone (0,255,102), food (0,102,255), agent (204,0,255), divided by 255; channel-major |
//! | terminated | never (episodes end by the turn limit, 100) |
//!
//! As an `Env`, a step is "all agents act in list order, then the next turn's spawning", and
//! `reset` builds the world and runs the first spawning: every observation is then what sorrel
//! shows the first agent just before it acts. (sorrel's later agents also see the moves of
//! the agents before them in the same turn; a batched step chooses all actions at once, so
//! that part is not reproducible there. [`TreasureHunt::spawn`], [`TreasureHunt::act`] and
//! [`TreasureHunt::observe`] give sorrel's exact sequence; the golden test drives them.)
//!
//! The state holds no per-cell objects: one byte per cell and the agents' positions. An action
//! outside 0..4 leaves the agent in place with reward 0.

use kestrel_core::FromInvalid;
use kestrel_core::{Env, Key, Rng, Space, Spec};

/// Cell contents.
pub mod cell {
    /// Nothing.
    pub const EMPTY: u8 = 0;
    /// Wall (border).
    pub const WALL: u8 = 1;
    /// Gem.
    pub const GEM: u8 = 2;
    /// Bone.
    pub const BONE: u8 = 3;
    /// Food.
    pub const FOOD: u8 = 4;
    /// An agent.
    pub const AGENT: u8 = 5;
}

/// The items a world can spawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TreasureItem {
    /// A gem (`gem_value`).
    Gem,
    /// Food (`food_value`).
    Food,
    /// A bone (`bone_value`).
    Bone,
}

impl TreasureItem {
    /// Its cell byte.
    pub fn cell(self) -> u8 {
        match self {
            TreasureItem::Gem => cell::GEM,
            TreasureItem::Food => cell::FOOD,
            TreasureItem::Bone => cell::BONE,
        }
    }
}

/// Observation encodings (config spelling `one-hot`, `rgb`; `onehot` is read as `one-hot`, the
/// spelling of run folders written before the two front ends agreed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TreasureObs {
    /// 6 channels.
    #[default]
    #[serde(alias = "onehot")]
    OneHot,
    /// 3 channels in [0, 1].
    Rgb,
}

/// World settings (sorrel's `main.py` defaults).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct TreasureParams {
    /// Rows including the border.
    pub height: usize,
    /// Columns including the border.
    pub width: usize,
    /// Agents.
    pub num_agents: usize,
    /// Gem value.
    pub gem_value: f32,
    /// Food value.
    pub food_value: f32,
    /// Bone value.
    pub bone_value: f32,
    /// Wall bump reward.
    pub wall_value: f32,
    /// Spawn probability per empty interior cell per turn.
    pub spawn_prob: f64,
    /// What spawns, drawn uniformly from this list (sorrel 1.6.0: gem, food, bone; its
    /// `treasurehunt_mp` example: gems only).
    pub items: Vec<TreasureItem>,
    /// View radius (the view is `(2r+1)²`).
    pub vision_radius: usize,
    /// Observation encoding: `one-hot` (6 channels per cell) or `rgb` (3).
    pub obs: TreasureObs,
    /// Turns per episode (the time limit).
    pub max_turns: u32,
}

impl Default for TreasureParams {
    fn default() -> Self {
        TreasureParams {
            height: 21,
            width: 21,
            num_agents: 2,
            gem_value: 10.0,
            food_value: 5.0,
            bone_value: -10.0,
            wall_value: -1.0,
            spawn_prob: 0.005,
            items: vec![TreasureItem::Gem, TreasureItem::Food, TreasureItem::Bone],
            vision_radius: 2,
            obs: TreasureObs::OneHot,
            max_turns: 100,
        }
    }
}

impl TreasureParams {
    /// Floats in one agent's observation (saturating: callers such as memory budgets read it
    /// before [`TreasureParams::validate`] bounds the radius).
    pub fn obs_len(&self) -> usize {
        let side = self.vision_radius.saturating_mul(2).saturating_add(1);
        side.saturating_mul(side).saturating_mul(if self.obs == TreasureObs::OneHot {
            6
        } else {
            3
        })
    }

    /// Checks the sizes (at least one interior cell per agent) and probabilities.
    pub fn validate(&self) -> Result<(), crate::error::EnvError> {
        let interior = self.height.saturating_sub(2) * self.width.saturating_sub(2);
        if self.num_agents == 0
            || interior < self.num_agents
            || self.height > 255
            || self.width > 255
        {
            return Err(crate::error::EnvError::invalid(
                "height/width/num_agents",
                format!("{}x{} with {} agents", self.height, self.width, self.num_agents),
                "at most 255 a side and at least one interior cell per agent",
            ));
        }
        for (field, v) in [
            ("gem_value", self.gem_value),
            ("food_value", self.food_value),
            ("bone_value", self.bone_value),
            ("wall_value", self.wall_value),
        ] {
            if !v.is_finite() {
                return Err(crate::error::EnvError::invalid(field, v, "a finite number"));
            }
        }
        if self.vision_radius > 127 {
            return Err(crate::error::EnvError::invalid(
                "vision_radius",
                self.vision_radius,
                "at most 127 (a view of at most 255 a side, as the world)",
            ));
        }
        if self.max_turns == 0 {
            return Err(crate::error::EnvError::invalid("max_turns", 0, "at least 1"));
        }
        if self.items.is_empty() || self.items.len() > 3 {
            return Err(crate::error::EnvError::invalid(
                "items",
                format!("{:?}", self.items),
                "one to three of gem, food, bone",
            ));
        }
        if let Some(i) = (1..self.items.len()).find(|&i| self.items[..i].contains(&self.items[i])) {
            return Err(crate::error::EnvError::invalid(
                "items",
                format!("{:?}", self.items),
                format!("each item once ({:?} is listed twice)", self.items[i]),
            ));
        }
        if !(0.0..=1.0).contains(&self.spawn_prob) {
            return Err(crate::error::EnvError::invalid(
                "spawn_prob",
                self.spawn_prob.to_string(),
                "in [0, 1]",
            ));
        }
        Ok(())
    }
}

/// The world: one byte per cell (row-major) and the agents' positions, in list order.
#[derive(Clone, Debug, PartialEq)]
pub struct TreasureState {
    /// Cell contents (agents included as `cell::AGENT`).
    pub cells: Vec<u8>,
    /// `(row, col)` of each agent.
    pub agents: Vec<(u8, u8)>,
    /// Turns taken.
    pub turn: u32,
}

/// Where spawning draws come from: `spawn` is asked once per eligible cell in row-major
/// order and returns `None` or the item to place (one of `items`' cells). [`TreasureDraws`] is
/// Kestrel's; tests inject a peer's recorded draws.
pub trait SpawnDraws {
    /// The draw for the next eligible cell of this turn: spawn with probability `p`, the
    /// item uniform over `items`.
    fn spawn(&mut self, p: f64, items: &[u8]) -> Option<u8>;
}

/// Spawning from a key: a uniform per cell, then a uniform item.
pub struct TreasureDraws(pub Rng);

impl SpawnDraws for TreasureDraws {
    #[inline]
    fn spawn(&mut self, p: f64, items: &[u8]) -> Option<u8> {
        if self.0.uniform_f64() < p {
            Some(items[self.0.below(items.len() as u32) as usize])
        } else {
            None
        }
    }
}

/// The treasure-hunt kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct TreasureHunt;

const MOVES: [(i32, i32); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];

impl TreasureHunt {
    /// A fresh world: border walls, agents on distinct uniform interior cells.
    pub fn new_world(p: &TreasureParams, rng: &mut Rng) -> TreasureState {
        let mut s = Self::world_with_agents(p, &[]);
        let (h, w) = (p.height, p.width);
        let interior = (h - 2) * (w - 2);
        while s.agents.len() < p.num_agents {
            let k = rng.below(interior as u32) as usize;
            let (r, c) = (1 + k / (w - 2), 1 + k % (w - 2));
            if s.cells[r * w + c] == cell::EMPTY {
                s.cells[r * w + c] = cell::AGENT;
                s.agents.push((r as u8, c as u8));
            }
        }
        s
    }

    /// An empty walled world with agents at given interior `(row, col)`s (e.g. a peer's).
    pub fn world_with_agents(p: &TreasureParams, agents: &[(u8, u8)]) -> TreasureState {
        let (h, w) = (p.height, p.width);
        let mut cells = vec![cell::EMPTY; h * w];
        for r in 0..h {
            for c in 0..w {
                if r == 0 || c == 0 || r == h - 1 || c == w - 1 {
                    cells[r * w + c] = cell::WALL;
                }
            }
        }
        for &(r, c) in agents {
            cells[r as usize * w + c as usize] = cell::AGENT;
        }
        TreasureState { cells, agents: agents.to_vec(), turn: 0 }
    }

    /// One turn: spawning, then each agent's move in list order; writes one reward per agent.
    pub fn turn(
        p: &TreasureParams,
        s: &mut TreasureState,
        actions: &[u8],
        draws: &mut impl SpawnDraws,
        rewards: &mut [f32],
    ) {
        Self::spawn(p, s, draws);
        for (a, (&act, rew)) in actions.iter().zip(rewards.iter_mut()).enumerate() {
            *rew = Self::act(p, s, a, act);
        }
        s.turn += 1;
    }

    /// The spawning phase: every empty interior cell, in row-major order, asks `draws`.
    pub fn spawn(p: &TreasureParams, s: &mut TreasureState, draws: &mut impl SpawnDraws) {
        let w = p.width;
        let (mut items, mut n) = ([0u8; 3], 0);
        for (slot, item) in items.iter_mut().zip(&p.items) {
            (*slot, n) = (item.cell(), n + 1);
        }
        let items = &items[..n];
        for r in 1..p.height - 1 {
            for c in 1..w - 1 {
                let i = r * w + c;
                if s.cells[i] == cell::EMPTY
                    && let Some(item) = draws.spawn(p.spawn_prob, items)
                {
                    s.cells[i] = item;
                }
            }
        }
    }

    /// Agent `a` takes `action`; returns its reward.
    pub fn act(p: &TreasureParams, s: &mut TreasureState, a: usize, action: u8) -> f32 {
        if action >= 4 {
            return 0.0;
        }
        let w = p.width;
        let (r, c) = s.agents[a];
        let (dr, dc) = MOVES[action as usize];
        let (tr, tc) = ((r as i32 + dr) as usize, (c as i32 + dc) as usize);
        let t = tr * w + tc;
        match s.cells[t] {
            cell::WALL => p.wall_value,
            cell::AGENT => 0.0,
            item => {
                s.cells[t] = cell::AGENT;
                s.cells[r as usize * w + c as usize] = cell::EMPTY;
                s.agents[a] = (tr as u8, tc as u8);
                match item {
                    cell::GEM => p.gem_value,
                    cell::FOOD => p.food_value,
                    cell::BONE => p.bone_value,
                    _ => 0.0,
                }
            }
        }
    }

    /// Agent `a`'s egocentric observation.
    pub fn observe(p: &TreasureParams, s: &TreasureState, a: usize, out: &mut [f32]) {
        let rad = p.vision_radius as i32;
        let side = (2 * rad + 1) as usize;
        let n = side * side;
        out.iter_mut().for_each(|v| *v = 0.0);
        let (r0, c0) = (s.agents[a].0 as i32, s.agents[a].1 as i32);
        const RGB: [[f32; 3]; 6] = [
            [0.0, 0.0, 0.0],
            [255.0, 0.0, 0.0],
            [203.0, 255.0, 0.0],
            [0.0, 255.0, 102.0],
            [0.0, 102.0, 255.0],
            [204.0, 0.0, 255.0],
        ];
        for dr in -rad..=rad {
            for dc in -rad..=rad {
                let (r, c) = (r0 + dr, c0 + dc);
                let inside = r >= 0 && c >= 0 && (r as usize) < p.height && (c as usize) < p.width;
                let v =
                    if inside { s.cells[r as usize * p.width + c as usize] } else { cell::WALL };
                let k = ((dr + rad) as usize) * side + (dc + rad) as usize;
                match p.obs {
                    TreasureObs::OneHot => {
                        if v != cell::EMPTY {
                            out[v as usize * n + k] = 1.0;
                        }
                    }
                    TreasureObs::Rgb => {
                        for ch in 0..3 {
                            out[ch * n + k] = RGB[v as usize][ch] / 255.0;
                        }
                    }
                }
            }
        }
    }
}

impl Env for TreasureHunt {
    type Params = TreasureParams;
    type State = TreasureState;
    type Obs = f32;
    type Action = u8;

    fn spec(&self, p: &TreasureParams) -> Spec {
        Spec {
            obs_space: Space::Box { low: 0.0, high: 1.0, shape: vec![p.obs_len()] },
            action_space: Space::Discrete { n: 4 },
            num_agents: p.num_agents,
            max_episode_steps: Some(p.max_turns),
        }
    }

    fn reset(&self, p: &TreasureParams, key: Key, obs: &mut [f32]) -> TreasureState {
        let [kw, ks] = key.split();
        let mut s = Self::new_world(p, &mut kw.rng());
        Self::spawn(p, &mut s, &mut TreasureDraws(ks.rng()));
        let m = p.obs_len();
        for a in 0..p.num_agents {
            Self::observe(p, &s, a, &mut obs[a * m..(a + 1) * m]);
        }
        s
    }

    fn step(
        &self,
        p: &TreasureParams,
        s: &mut TreasureState,
        actions: &[u8],
        key: Key,
        obs: &mut [f32],
        rewards: &mut [f32],
    ) -> bool {
        for (a, (&act, rew)) in actions.iter().zip(rewards.iter_mut()).enumerate() {
            *rew = Self::act(p, s, a, act);
        }
        s.turn += 1;
        Self::spawn(p, s, &mut TreasureDraws(key.rng()));
        let m = p.obs_len();
        for a in 0..p.num_agents {
            Self::observe(p, s, a, &mut obs[a * m..(a + 1) * m]);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    /// No spawning.
    struct Never;
    impl SpawnDraws for Never {
        fn spawn(&mut self, _p: f64, _items: &[u8]) -> Option<u8> {
            None
        }
    }

    /// Spawning draws items uniformly from `items` only: a gems-only world (sorrel's
    /// `treasurehunt_mp`) fills with gems; the default list draws as sorrel 1.6.0 (the golden
    /// test); an empty or repeated list is refused naming `items`.
    #[test]
    fn items_choose_what_spawns() {
        let gems = TreasureParams {
            items: vec![TreasureItem::Gem],
            spawn_prob: 0.5,
            ..TreasureParams::default()
        };
        let mut s = TreasureHunt::world_with_agents(&gems, &[]);
        TreasureHunt::spawn(&gems, &mut s, &mut TreasureDraws(Key::new(1).rng()));
        let count = |v: u8| s.cells.iter().filter(|&&c| c == v).count();
        assert!(count(cell::GEM) > 100 && count(cell::FOOD) + count(cell::BONE) == 0);
        let all = TreasureParams { spawn_prob: 0.5, ..TreasureParams::default() };
        let mut s = TreasureHunt::world_with_agents(&all, &[]);
        TreasureHunt::spawn(&all, &mut s, &mut TreasureDraws(Key::new(1).rng()));
        let count = |v: u8| s.cells.iter().filter(|&&c| c == v).count();
        assert!(count(cell::GEM) > 30 && count(cell::FOOD) > 30 && count(cell::BONE) > 30);
        for bad in [vec![], vec![TreasureItem::Gem, TreasureItem::Gem]] {
            let e = TreasureParams { items: bad, ..TreasureParams::default() }.validate();
            assert!(e.unwrap_err().to_string().contains("items"));
        }
    }

    fn world(agents: &[(u8, u8)]) -> (TreasureParams, TreasureState) {
        let p =
            TreasureParams { height: 6, width: 6, num_agents: agents.len(), ..Default::default() };
        let s = TreasureHunt::world_with_agents(&p, agents);
        (p, s)
    }

    /// Index of (row, col) in the 6 × 6 test world.
    fn at(r: usize, c: usize) -> usize {
        r * 6 + c
    }

    #[test]
    fn observation_encodings_have_one_config_spelling() {
        let obs: Vec<TreasureObs> =
            serde_json::from_str(r#"["one-hot", "rgb", "onehot"]"#).unwrap();
        assert_eq!(obs, [TreasureObs::OneHot, TreasureObs::Rgb, TreasureObs::OneHot]);
        assert_eq!(serde_json::to_string(&TreasureObs::OneHot).unwrap(), r#""one-hot""#);
        let e = serde_json::from_str::<TreasureObs>(r#""one_hot""#).unwrap_err().to_string();
        assert!(e.contains("one-hot") && e.contains("rgb"), "{e}");
    }

    #[test]
    fn moves_rewards_and_bumps() {
        let (p, mut s) = world(&[(1, 1), (1, 2)]);
        s.cells[at(2, 1)] = cell::GEM;
        s.cells[at(1, 3)] = cell::BONE;
        let mut r = [0.0f32; 2];
        // Agent 0 bumps the wall above (−1, stays); agent 1 steps right onto the bone (−10).
        TreasureHunt::turn(&p, &mut s, &[0, 3], &mut Never, &mut r);
        assert_eq!(r, [-1.0, -10.0]);
        assert_eq!(s.agents, vec![(1, 1), (1, 3)]);
        assert_eq!(s.cells[at(1, 2)], cell::EMPTY);
        // Agent 0 moves down onto the gem (+10, removed); agent 1 left: empty, 0.
        TreasureHunt::turn(&p, &mut s, &[1, 2], &mut Never, &mut r);
        assert_eq!(r, [10.0, 0.0]);
        assert_eq!(s.agents, vec![(2, 1), (1, 2)]);
        // Agents act in order: agent 0 moves up into (1,1); agent 1 then tries (1,1): blocked, 0.
        TreasureHunt::turn(&p, &mut s, &[0, 2], &mut Never, &mut r);
        assert_eq!(r, [0.0, 0.0]);
        assert_eq!(s.agents, vec![(1, 1), (1, 2)]);
        assert_eq!(s.cells.iter().filter(|&&c| c == cell::AGENT).count(), 2);
        // An invalid action stays with 0.
        TreasureHunt::turn(&p, &mut s, &[9, 9], &mut Never, &mut r);
        assert_eq!((r, s.agents.clone()), ([0.0, 0.0], vec![(1, 1), (1, 2)]));
    }

    #[test]
    fn observation_is_egocentric_with_walls_outside() {
        let (mut p, mut s) = world(&[(1, 1), (1, 2)]);
        s.cells[at(2, 2)] = cell::FOOD;
        let mut o = vec![0.0f32; p.obs_len()];
        TreasureHunt::observe(&p, &s, 0, &mut o);
        let at =
            |o: &[f32], ch: usize, dr: i32, dc: i32| o[ch * 25 + ((dr + 2) * 5 + dc + 2) as usize];
        assert_eq!(at(&o, 5, 0, 0), 1.0, "itself at the centre");
        assert_eq!(at(&o, 5, 0, 1), 1.0, "the other agent to the right");
        assert_eq!(at(&o, 4, 1, 1), 1.0, "food down-right");
        assert_eq!(at(&o, 1, -1, 0), 1.0, "border wall above");
        assert_eq!(at(&o, 1, -2, -2), 1.0, "outside the map looks like wall");
        assert_eq!(at(&o, 0, 1, 0), 0.0, "empty is all-zero");
        // 16 wall cells (row −1 and column −1 outside, the border row 0 and column 0), two
        // agents and the food: 19 ones.
        assert_eq!(o.iter().sum::<f32>(), 19.0);
        p.obs = TreasureObs::Rgb;
        let mut o = vec![0.0f32; p.obs_len()];
        TreasureHunt::observe(&p, &s, 0, &mut o);
        assert_eq!((at(&o, 0, 0, 0), at(&o, 1, 0, 0), at(&o, 2, 0, 0)), (204.0 / 255.0, 0.0, 1.0));
        assert_eq!((at(&o, 0, 1, 1), at(&o, 1, 1, 1), at(&o, 2, 1, 1)), (0.0, 0.4, 1.0));
    }

    #[test]
    fn spawning_fills_empty_cells_at_the_rate() {
        let p = TreasureParams { spawn_prob: 0.05, ..Default::default() };
        let mut s = TreasureHunt::new_world(&p, &mut Key::new(1).rng());
        let mut d = TreasureDraws(Key::new(2).rng());
        let mut r = [0.0f32; 2];
        TreasureHunt::turn(&p, &mut s, &[9, 9], &mut d, &mut r);
        let items = s.cells.iter().filter(|&&c| (2..=4).contains(&c)).count();
        // 359 eligible cells × 0.05 ≈ 18.
        assert!((8..=30).contains(&items), "{items}");
        assert_eq!(s.cells.iter().filter(|&&c| c == cell::AGENT).count(), 2);
    }

    #[test]
    fn conformance() {
        let p = TreasureParams { max_turns: 30, spawn_prob: 0.05, ..Default::default() };
        p.validate().unwrap();
        check_env(&TreasureHunt, &p, &Conformance::default(), |k, _, a| {
            a[0] = k.rng().below(4) as u8
        });
        assert!(TreasureParams { height: 2, ..Default::default() }.validate().is_err());
    }
}
