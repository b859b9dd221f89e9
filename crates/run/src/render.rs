//! Pictures of one env of a batch, what Gymnasium's `render_mode="rgb_array"` and `"ansi"`
//! return: each env id's [`Show`], drawn from the row's state on a [`Sketch`].
//!
//! - CartPole and Pendulum as Gymnasium 1.4 draws them (`gymnasium/envs/classic_control/
//!   cartpole.py` and `pendulum.py`, `render`): the same canvas, scale, shapes and colours
//!   (without Pendulum's torque arrow image, and without anti-aliasing).
//! - The control systems: the pendulum and cart-pole systems as those; the planar ones
//!   (navigation, differential drive, the linear systems) as the point in the plane with its
//!   goal.
//! - GridWorld: the maze (walls dark) with the agent; TreasureHunt: the world in the colours
//!   of its `rgb` observation with empty cells light; VectorField: the field's arrows with
//!   the latent state.
//! - ARC: the input, the working grid with the selection outlined, the target and the
//!   clipboard in the ARC palette; `ansi` the working grid beside the target in ARCLE's
//!   256-colour codes.

use crate::base::RunError;
use kestrel_arc::render::{ANSI256, PALETTE};
use kestrel_arc::{ArcEnv, ArcLanes, ArcState, ModeKind};
use kestrel_core::{BatchEnv, VecEnv};
use kestrel_envs::{
    CartPole, ControlEnv, DoubleIntegrator, GridWorld, Pendulum, TreasureHunt, VectorFieldEnv,
};
use kestrel_mppi::presets::SystemKind;
use kestrel_mppi::systems::{DiffDrive, Nav2d};
use kestrel_plot::{Anchor, Sketch};
use rayon::prelude::*;
use std::fmt::Write;

/// An RGB picture: `height × width × 3` bytes, row-major (numpy's `(H, W, 3)` uint8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Pixels across.
    pub width: usize,
    /// Pixels down.
    pub height: usize,
    /// The pixels.
    pub rgb: Vec<u8>,
}

impl Frame {
    fn of(s: &Sketch) -> Result<Frame, RunError> {
        let rgb = s.rgb().map_err(|e| RunError::Failed(format!("render: {e}")))?;
        Ok(Frame { width: s.width() as usize, height: s.height() as usize, rgb })
    }

    /// The pixel at column `x`, row `y`.
    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// What a front end shows of a batch beyond its columns: a picture and text of env `row`
/// (an env, not an agent row), and, for ARC's `info`, each env's similarity to its target.
pub trait Show {
    /// The picture (`rgb_array`).
    fn frame(&self, row: usize) -> Result<Frame, RunError>;
    /// The text (`ansi`), for the envs where text makes sense; `None` elsewhere.
    fn text(&self, _row: usize) -> Result<Option<String>, RunError> {
        Ok(None)
    }
    /// Each env's similarity to its target, into `out` (one per env), returning true; false
    /// for the envs that measure none.
    fn similarity(&self, _out: &mut [f32]) -> bool {
        false
    }
    /// Env `row`'s episode where the similarity has a target (ARC: task, pair, test split).
    fn instance(&self, _row: usize) -> Option<(u32, u16, bool)> {
        None
    }
    /// The similarity of env `row`'s final observation (the last state of an episode a
    /// same-step reset replaced) in an episode on `instance`.
    fn final_similarity(&self, _row: usize, _instance: (u32, u16, bool)) -> Option<f32> {
        None
    }
}

/// Row `row`'s state, or an error naming the row.
fn state<B: BatchEnv>(b: &B, row: usize) -> Result<B::State, RunError> {
    b.state(row).ok_or_else(|| {
        kestrel_core::Invalid::new("row", row, format!("below num_envs = {}", b.num_envs())).into()
    })
}

const BLACK: [u8; 3] = [0, 0, 0];
const WHITE: [u8; 3] = [255, 255, 255];

/// Gymnasium's cart-pole picture of `x` (cart position) and `theta` (pole angle, 0 upright).
fn cartpole(x: f64, theta: f64, half_length: f64) -> Sketch {
    // cartpole.py: 600 × 400, world width 2 × x_threshold (2.4), the pole 2 × length long.
    let (w, h) = (600.0, 400.0);
    let scale = w / (2.0 * 2.4);
    let (pole_w, pole_len) = (10.0, scale * 2.0 * half_length);
    let (cart_w, cart_h) = (50.0, 30.0);
    // Gymnasium draws with y up and flips the image: its cart line y = 100 is 300 from the top.
    let cart_y = h - 100.0;
    let cart_x = x * scale + w / 2.0;
    let mut s = Sketch::new(w as u32, h as u32);
    s.line(&[(0.0, cart_y), (w, cart_y)], BLACK, 1.0);
    s.rect(
        cart_x - cart_w / 2.0,
        cart_y - cart_h / 2.0,
        cart_x + cart_w / 2.0,
        cart_y + cart_h / 2.0,
        BLACK,
    );
    let axle = (cart_x, cart_y - cart_h / 4.0);
    let (dx, dy) = (theta.sin(), -theta.cos());
    // The pole runs from pole_w/2 below the axle to pole_len - pole_w/2 above it.
    let (a, b) = (-pole_w / 2.0, pole_len - pole_w / 2.0);
    s.line(
        &[(axle.0 + a * dx, axle.1 + a * dy), (axle.0 + b * dx, axle.1 + b * dy)],
        [202, 152, 101],
        pole_w,
    );
    s.circle(axle, pole_w / 2.0, [129, 132, 203]);
    s
}

/// Gymnasium's pendulum picture of `theta` (0 upright).
fn pendulum(theta: f64) -> Sketch {
    // pendulum.py: 500 × 500, bound 2.2, a rod of length 1 and width 0.2, axle 0.05.
    let size = 500.0;
    let scale = size / (2.0 * 2.2);
    let c = (size / 2.0, size / 2.0);
    let (len, width) = (scale, 0.2 * scale);
    let tip = (c.0 + len * theta.sin(), c.1 - len * theta.cos());
    let mut s = Sketch::new(size as u32, size as u32);
    s.line(&[c, tip], [204, 77, 77], width);
    s.circle(tip, width / 2.0, [204, 77, 77]);
    s.circle(c, width / 2.0, [204, 77, 77]);
    s.circle(c, 0.05 * scale, BLACK);
    s
}

/// A point in the plane with its goal, on axes that hold both.
fn plane(p: [f64; 2], goal: [f64; 2], title: &str) -> Sketch {
    let size = 400.0;
    let reach = [p[0], p[1], goal[0], goal[1]]
        .iter()
        .filter(|v| v.is_finite())
        .fold(1.0f64, |m, v| m.max(v.abs()));
    let half = reach * 1.25;
    let to = |q: [f64; 2]| {
        (size / 2.0 + q[0] / half * size / 2.0, size / 2.0 - q[1] / half * size / 2.0)
    };
    let grey = [200, 200, 200];
    let mut s = Sketch::new(size as u32, size as u32);
    s.line(&[(0.0, size / 2.0), (size, size / 2.0)], grey, 1.0);
    s.line(&[(size / 2.0, 0.0), (size / 2.0, size)], grey, 1.0);
    let g = to(goal);
    s.circle_outline(g, 10.0, [0, 150, 60]);
    s.circle(g, 3.0, [0, 150, 60]);
    s.circle(to(p), 7.0, [30, 90, 200]);
    s.text((6.0, 6.0), 14.0, title, BLACK, Anchor::TopLeft);
    s
}

impl Show for VecEnv<CartPole> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let x = state(self, row)?.0;
        Frame::of(&cartpole(x[0], x[2], self.params().length))
    }
}

impl Show for VecEnv<Pendulum> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        Frame::of(&pendulum(state(self, row)?.0[0]))
    }
}

impl Show for VecEnv<ControlEnv<SystemKind>> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let x = state(self, row)?.x;
        let sys = *self.env().system();
        let s = match sys {
            SystemKind::Pendulum => pendulum(x[0]),
            // The system's pole is Gymnasium's (half-length 0.5).
            SystemKind::Cartpole => cartpole(x[0], x[2], 0.5),
            SystemKind::Nav2d => plane([x[0], x[1]], Nav2d::GOAL, sys.name()),
            SystemKind::DiffDrive => plane([x[0], x[1]], DiffDrive::GOAL, sys.name()),
            SystemKind::Basic => plane([x[0], x[1]], [0.0, 0.0], sys.name()),
        };
        Frame::of(&s)
    }
}

impl Show for VecEnv<ControlEnv<DoubleIntegrator>> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let x = state(self, row)?.x;
        // Positions come first (the first two drawn; one dimension moves on the horizontal
        // axis); the goal is 1 in every coordinate.
        let two = self.env().system().dims >= 2;
        let p = [x[0], if two { x[1] } else { 0.0 }];
        Frame::of(&plane(p, [1.0, if two { 1.0 } else { 0.0 }], "double integrator"))
    }
}

impl Show for VecEnv<GridWorld> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let s = state(self, row)? as usize;
        let map = &self.params().map;
        let cell = (480 / map.rows.max(map.cols)).clamp(4, 32) as f64;
        let mut k = Sketch::new((map.cols as f64 * cell) as u32, (map.rows as f64 * cell) as u32);
        for r in 0..map.rows {
            for c in 0..map.cols {
                if !map.free[r * map.cols + c] {
                    let (x, y) = (c as f64 * cell, r as f64 * cell);
                    k.rect(x, y, x + cell, y + cell, [60, 60, 60]);
                }
            }
        }
        let (r, c) = map.cells[s];
        let centre = ((c as f64 + 0.5) * cell, (r as f64 + 0.5) * cell);
        k.circle(centre, cell * 0.35, [200, 60, 40]);
        Frame::of(&k)
    }

    fn text(&self, row: usize) -> Result<Option<String>, RunError> {
        let s = state(self, row)? as usize;
        let map = &self.params().map;
        let (ar, ac) = map.cells[s];
        let mut out = String::new();
        for r in 0..map.rows {
            for c in 0..map.cols {
                let here = (r as u32, c as u32) == (ar, ac);
                out.push(if here {
                    'A'
                } else if map.free[r * map.cols + c] {
                    '.'
                } else {
                    'X'
                });
            }
            out.push('\n');
        }
        Ok(Some(out))
    }
}

/// The treasure hunt's cell colours: empty light, then its `rgb` observation's wall, gem,
/// bone, food and agent.
pub const TREASURE_RGB: [[u8; 3]; 6] =
    [[235, 225, 190], [255, 0, 0], [203, 255, 0], [0, 255, 102], [0, 102, 255], [204, 0, 255]];

impl Show for VecEnv<TreasureHunt> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let s = state(self, row)?;
        let p = self.params();
        let cell = (480 / p.height.max(p.width)).clamp(4, 32) as f64;
        let mut k = Sketch::new((p.width as f64 * cell) as u32, (p.height as f64 * cell) as u32);
        for r in 0..p.height {
            for c in 0..p.width {
                let v = s.cells[r * p.width + c] as usize;
                let (x, y) = (c as f64 * cell, r as f64 * cell);
                k.rect(x, y, x + cell, y + cell, TREASURE_RGB[v.min(5)]);
            }
        }
        Frame::of(&k)
    }

    fn text(&self, row: usize) -> Result<Option<String>, RunError> {
        let s = state(self, row)?;
        let p = self.params();
        // Empty, wall, gem, bone, food, agent.
        const CHARS: [char; 6] = ['.', '#', 'G', 'B', 'F', 'A'];
        let mut out = String::new();
        for r in 0..p.height {
            for c in 0..p.width {
                out.push(CHARS[(s.cells[r * p.width + c] as usize).min(5)]);
            }
            out.push('\n');
        }
        Ok(Some(out))
    }
}

impl Show for VecEnv<VectorFieldEnv> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        let z = state(self, row)?.z;
        let field = &self.params().field;
        let size = 480.0;
        let half = [z[0], z[1]]
            .iter()
            .filter(|v| v.is_finite())
            .fold(2.5f64, |m, v| m.max(v.abs() * 1.25));
        let to = |q: [f64; 2]| {
            (size / 2.0 + q[0] / half * size / 2.0, size / 2.0 - q[1] / half * size / 2.0)
        };
        let mut k = Sketch::new(size as u32, size as u32);
        // The direction of F on a 17 × 17 lattice, arrows of one length (|F| grows cubically
        // away from the cycles, so lengths in proportion would hide the flow near them).
        let n = 17;
        let step = 0.8 * 2.0 * half / n as f64;
        for i in 0..n * n {
            let f = |j: usize| -half + (j as f64 + 0.5) * 2.0 * half / n as f64;
            let q = [f(i % n), f(i / n)];
            let v = field.eval(q);
            let m = v[0].hypot(v[1]);
            if m.is_finite() && m > 0.0 {
                let e = [q[0] + v[0] / m * step, q[1] + v[1] / m * step];
                k.line(&[to(q), to(e)], [150, 150, 170], 1.0);
                k.circle(to(e), 1.5, [150, 150, 170]);
            }
        }
        k.circle(to(z), 7.0, [200, 60, 40]);
        Frame::of(&k)
    }
}

/// ARC's picture: the input, the working grid (selection outlined), the target, the clipboard.
fn arc_frame<const S: usize>(
    env: &ArcEnv<S>,
    mode: ModeKind,
    s: &ArcState<S>,
) -> Result<Frame, RunError> {
    let pair = env.pair_of(s);
    let cell = if S <= 10 { 24.0 } else { 16.0 };
    let side = S as f64 * cell;
    let (gap, top) = (16.0, 28.0);
    let panels = 4.0;
    let mut k = Sketch::new((gap + panels * (side + gap)) as u32, (top + side + gap) as u32);
    k.background([64, 64, 64]);
    let draw =
        |k: &mut Sketch, x0: f64, g: &kestrel_arc::grid::Grid<S>, dims: [u8; 2], title: &str| {
            k.text((x0, 6.0), 16.0, title, WHITE, Anchor::TopLeft);
            for r in 0..dims[0] as usize {
                for c in 0..dims[1] as usize {
                    let v = g[r][c];
                    let rgb = if (0..10).contains(&v) { PALETTE[v as usize] } else { [40, 40, 40] };
                    let (x, y) = (x0 + c as f64 * cell, top + r as f64 * cell);
                    k.rect(x + 1.0, y + 1.0, x + cell, y + cell, rgb);
                }
            }
        };
    let x = |i: f64| gap + i * (side + gap);
    draw(&mut k, x(0.0), &pair.input, pair.in_dims, "input");
    draw(&mut k, x(1.0), &s.grid, s.dims, &format!("grid, step {}", s.steps));
    for r in 0..S {
        for c in 0..S {
            if s.selected[r] >> c & 1 == 1 {
                let (x0, y0) = (x(1.0) + c as f64 * cell, top + r as f64 * cell);
                k.rect_outline(x0, y0, x0 + cell + 1.0, y0 + cell + 1.0, WHITE, 2.0);
            }
        }
    }
    draw(&mut k, x(2.0), &pair.output, pair.out_dims, "target");
    // o2arc keeps the clipboard top-left with its own dims; jaxarc keeps it where it was on
    // the canvas.
    let clip_dims = match mode {
        ModeKind::O2arc => s.clip_dim,
        ModeKind::Jaxarc => [S as u8; 2],
    };
    draw(&mut k, x(3.0), &s.clip, clip_dims, "clipboard");
    Frame::of(&k)
}

/// ARC as text: the working grid beside the target, ARCLE's 256 colours, selection marked.
fn arc_text<const S: usize>(env: &ArcEnv<S>, s: &ArcState<S>) -> String {
    let pair = env.pair_of(s);
    let mut out = format!(
        "task {} pair {}{} step {}: grid {}x{} | target {}x{}\n",
        s.task,
        if s.test { "test " } else { "train " },
        s.pair,
        s.steps,
        s.dims[0],
        s.dims[1],
        pair.out_dims[0],
        pair.out_dims[1]
    );
    let cellc = |v: i8, sel: bool| -> String {
        let code = if (0..10).contains(&v) { ANSI256[v as usize] } else { 236 };
        format!("\x1b[48;5;{code}m{}", if sel { "[]" } else { "  " })
    };
    let rows = (s.dims[0].max(pair.out_dims[0])) as usize;
    for r in 0..rows {
        for c in 0..s.dims[1] as usize {
            let v = if r < s.dims[0] as usize { s.grid[r][c] } else { -1 };
            let sel = r < S && s.selected[r] >> c & 1 == 1;
            out.push_str(&if r < s.dims[0] as usize { cellc(v, sel) } else { "\x1b[0m  ".into() });
        }
        out.push_str("\x1b[0m   ");
        for c in 0..pair.out_dims[1] as usize {
            if r < pair.out_dims[0] as usize {
                out.push_str(&cellc(pair.output[r][c], false));
            }
        }
        let _ = writeln!(out, "\x1b[0m");
    }
    out
}

/// The similarity of row `row`'s final observation in `b` (either ARC kernel) in an episode on
/// `instance` ([`ArcEnv::obs_similarity`]).
fn arc_final_similarity<const S: usize, B: BatchEnv<Obs = i8>>(
    b: &B,
    env: &ArcEnv<S>,
    p: &kestrel_arc::ArcParams,
    row: usize,
    instance: (u32, u16, bool),
) -> Option<f32> {
    let per = b.obs_len();
    env.obs_similarity(p, instance, b.final_obs().get(row * per..(row + 1) * per)?)
}

impl<const S: usize> Show for VecEnv<ArcEnv<S>> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        arc_frame(self.env(), self.params().mode, &state(self, row)?)
    }
    fn text(&self, row: usize) -> Result<Option<String>, RunError> {
        Ok(Some(arc_text(self.env(), &state(self, row)?)))
    }
    fn similarity(&self, out: &mut [f32]) -> bool {
        let (env, p) = (self.env(), self.params());
        // o2arc computes it (up to S² compares a row): large batches on the pool's threads.
        out.par_iter_mut()
            .zip(self.states().par_iter())
            .with_min_len(256)
            .for_each(|(o, s)| *o = env.similarity(p, s));
        true
    }
    fn instance(&self, row: usize) -> Option<(u32, u16, bool)> {
        self.states().get(row).map(|s| (s.task, s.pair, s.test))
    }
    fn final_similarity(&self, row: usize, instance: (u32, u16, bool)) -> Option<f32> {
        arc_final_similarity(self, self.env(), self.params(), row, instance)
    }
}

impl<const S: usize> Show for ArcLanes<S> {
    fn frame(&self, row: usize) -> Result<Frame, RunError> {
        arc_frame(self.env(), self.params().mode, &state(self, row)?)
    }
    fn text(&self, row: usize) -> Result<Option<String>, RunError> {
        Ok(Some(arc_text(self.env(), &state(self, row)?)))
    }
    fn similarity(&self, out: &mut [f32]) -> bool {
        self.similarities(out);
        true
    }
    fn instance(&self, row: usize) -> Option<(u32, u16, bool)> {
        ArcLanes::instance(self, row)
    }
    fn final_similarity(&self, row: usize, instance: (u32, u16, bool)) -> Option<f32> {
        arc_final_similarity(self, self.env(), self.params(), row, instance)
    }
}

#[cfg(test)]
mod tests {
    use super::Show;
    use crate::envs::EnvId;
    use crate::run::Layers;
    use kestrel_arc::generator::{Family, GenConfig, generate_bank};
    use kestrel_arc::{
        ArcAction, ArcEnv, ArcLanes, ArcParams, ArcState, GridInit, JaxBugs, LayoutKind, SelKind,
        sample_action,
    };
    use kestrel_core::{AutoReset, BatchEnv, Key, VecEnv};
    use std::sync::Arc;

    /// Under same-step auto-reset, an ended row's final similarity (from its final
    /// observation and the episode it had) is the similarity of the state the reset replaced,
    /// replayed from the state before the step: both kernels, both semantics, both layouts,
    /// JaxARC's bugs on and off (with its start modes), the test split; the instance after the
    /// step is the new episode's.
    #[test]
    fn final_similarity_is_the_replaced_states() {
        let cfg = GenConfig { max_side: 5, min_side: 3, ..GenConfig::default() };
        let mut bank = generate_bank(&Family::ALL, 3, 4, &cfg).unwrap();
        bank.retain_fitting(5);
        let env = ArcEnv::<5>::new(Arc::new(bank)).unwrap();
        let mixed = GridInit { permutation_weight: 1.0, random_weight: 1.0, ..GridInit::default() };
        let cases = [
            ArcParams { max_episode_steps: Some(6), ..ArcParams::default() },
            ArcParams {
                layout: LayoutKind::Full,
                max_episode_steps: Some(5),
                ..ArcParams::jaxarc()
            },
            ArcParams {
                bugs: JaxBugs::all(),
                init: mixed,
                split: kestrel_arc::SplitKind::Test,
                max_episode_steps: Some(9),
                ..ArcParams::jaxarc()
            },
        ];
        fn check<B: BatchEnv<Action = ArcAction<5>, State = ArcState<5>> + Show>(
            b: &mut B,
            env: &ArcEnv<5>,
            p: &ArcParams,
        ) -> usize {
            b.set_autoreset(AutoReset::SameStep);
            b.reset(3);
            let (n, mut r, mut ended) = (b.num_envs(), Key::new(8).rng(), 0);
            for _ in 0..40 {
                let before: Vec<ArcState<5>> = (0..n).map(|i| b.state(i).unwrap()).collect();
                let acts: Vec<ArcAction<5>> =
                    (0..n).map(|_| sample_action::<5>(&mut r, SelKind::BBox)).collect();
                b.try_step(&acts).unwrap();
                for i in 0..n {
                    let s = &before[i];
                    let inst = (s.task, s.pair, s.test);
                    assert_eq!(b.instance(i), b.state(i).map(|s| (s.task, s.pair, s.test)));
                    if !(b.terminated()[i] || b.truncated()[i]) {
                        continue;
                    }
                    ended += 1;
                    let mut last = s.clone();
                    env.apply(p, &mut last, &acts[i]);
                    let want = env.similarity(p, &last);
                    assert_eq!(b.final_similarity(i, inst), Some(want), "row {i} {p:?}");
                }
            }
            ended
        }
        for p in cases {
            let mut rows = VecEnv::new(env.clone(), p.clone(), 40, 1).unwrap();
            assert!(check(&mut rows, &env, &p) > 20);
            if p.mode == kestrel_arc::ModeKind::Jaxarc {
                let mut lanes = ArcLanes::new(env.clone(), p.clone(), 70, 1).unwrap();
                assert!(check(&mut lanes, &env, &p) > 20);
            }
        }
        assert_eq!(env.obs_similarity(&ArcParams::default(), (99, 0, false), &[0; 27]), None);
        assert_eq!(env.obs_similarity(&ArcParams::default(), (0, 0, false), &[0; 26]), None);
    }

    /// Every env draws every row at a sensible size, the grids also as text, and a row past
    /// the batch is an error naming it.
    #[test]
    fn every_env_draws_and_refuses_a_missing_row() {
        for id in EnvId::all() {
            let small = toml::toml! { canvas = 5 };
            let layers = match id {
                EnvId::Arc(_) => Layers::table(&small),
                _ => Layers::none(),
            };
            let mut b = id.build(layers, 2, 3, 0).unwrap();
            b.reset(3);
            for row in 0..2 {
                let f = b.render(row).unwrap();
                assert!(
                    f.width >= 100 && f.height >= 100,
                    "{}: {}x{}",
                    id.name(),
                    f.width,
                    f.height
                );
                assert_eq!(f.rgb.len(), f.width * f.height * 3);
                // Not a blank canvas.
                assert!(f.rgb.chunks(3).any(|p| p != f.at(0, 0)), "{}", id.name());
                let text = b.render_text(row).unwrap();
                assert_eq!(text.is_some(), id.render_modes().contains(&"ansi"), "{}", id.name());
            }
            let err = b.render(2).unwrap_err().to_string();
            assert!(err.contains("row") && err.contains('2'), "{err}");
        }
    }

    /// CartPole at rest upright is drawn where Gymnasium draws it: the cart's centre at
    /// (300, 300) black, the pole straight up in its colour, the track line across.
    #[test]
    fn cartpole_is_where_gymnasium_draws_it() {
        let mut b = EnvId::CartPole.build(Layers::none(), 1, 0, 0).unwrap();
        b.reset(0);
        b.set_state(0, &[0.0, 0.0, 0.0, 0.0]).unwrap();
        let f = b.render(0).unwrap();
        assert_eq!((f.width, f.height), (600, 400));
        assert_eq!(f.at(300, 305), [0, 0, 0]);
        assert_eq!(f.at(300, 200), [202, 152, 101]);
        assert_eq!(f.at(10, 300), [0, 0, 0]);
        assert_eq!(f.at(10, 100), [255, 255, 255]);
        // Leaning right by 0.2 rad moves the pole's top right.
        b.set_state(0, &[0.0, 0.0, 0.2, 0.0]).unwrap();
        let f = b.render(0).unwrap();
        assert_eq!(f.at(300, 180), [255, 255, 255]);
        let top = (300.0 + 110.0 * 0.2f64.sin(), 292.5 - 110.0 * 0.2f64.cos());
        assert_eq!(f.at(top.0 as usize, top.1 as usize), [202, 152, 101]);
    }

    /// Pendulum upright points up from the centre; hanging, down.
    #[test]
    fn pendulum_points_where_theta_says() {
        let mut b = EnvId::Pendulum.build(Layers::none(), 1, 0, 0).unwrap();
        b.reset(0);
        b.set_state(0, &[0.0, 0.0]).unwrap();
        let f = b.render(0).unwrap();
        assert_eq!((f.width, f.height), (500, 500));
        assert_eq!(f.at(250, 150), [204, 77, 77]);
        assert_eq!(f.at(250, 350), [255, 255, 255]);
        b.set_state(0, &[std::f64::consts::PI, 0.0]).unwrap();
        let f = b.render(0).unwrap();
        assert_eq!(f.at(250, 350), [204, 77, 77]);
    }

    /// ARC's working grid is drawn in the ARC palette, cell by cell, from the state.
    #[test]
    fn arc_cells_have_the_palette_colours() {
        let small = toml::toml! { canvas = 10 };
        for id in
            [EnvId::Arc(kestrel_arc::ModeKind::O2arc), EnvId::Arc(kestrel_arc::ModeKind::Jaxarc)]
        {
            let mut b = id.build(Layers::table(&small), 1, 5, 0).unwrap();
            b.reset(5);
            let f = b.render(0).unwrap();
            let text = b.render_text(0).unwrap().unwrap();
            assert!(text.contains("\x1b[48;5;"), "{text}");
            // The input panel: its first cell at (16 + 12, 28 + 12) has a palette colour.
            let px = f.at(16 + 12, 28 + 12);
            assert!(super::PALETTE.contains(&px), "{}: {px:?}", id.name());
        }
    }
}
