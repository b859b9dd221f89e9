//! An actdyn run's peak heap memory from its config, before anything is allocated (the run's
//! `kestrel_core::Budget`). Each term is the buffers of one part, with the file that allocates
//! them; `crates/run/tests/budget.rs` compares the total with a counting allocator's peak.
//! Arithmetic is in f64 (an estimate; a size past 2^53 is refused anyway) and the result is
//! cast with saturation, so an absurd config gives a huge estimate, never an overflow.

use super::config::ActdynConfig;
use crate::runs::np2;
use kestrel_actdyn::config::{FieldKind, PolicyKind};
use kestrel_actdyn::model::{DecoderKind, DynamicsKind};
use kestrel_core::Budget;

/// A `Sequential`'s workspace for `rows` rows over layer widths `sizes` (Dense and activation
/// layers alternating: nn/model.rs).
fn ws(sizes: &[f64], rows: f64) -> f64 {
    let Some((&first, rest)) = sizes.split_first() else { return 0.0 };
    let Some((&last, inner)) = rest.split_last() else { return 8.0 * rows * 3.0 * first };
    let max = sizes.iter().copied().fold(0.0, f64::max);
    8.0 * rows * (first + 2.0 * inner.iter().sum::<f64>() + last + 2.0 * max)
}

impl ActdynConfig {
    /// The run's peak heap bytes as named terms (see the module docs): what is held through the
    /// run, plus the largest of what comes and goes (a checkpoint written or read back, an
    /// evaluation, the end of the run).
    pub fn budget(&self, threads: usize) -> Budget {
        self.budget_of(threads, true)
    }

    /// [`ActdynConfig::budget`] of a run that writes no checkpoint (`checkpoints` false: a
    /// comparison's runs, which keep only their evaluation).
    pub fn budget_of(&self, threads: usize, checkpoints: bool) -> Budget {
        let (m, t, p, e) = (&self.model, &self.train, &self.policy, &self.eval);
        let ny = self.env.obs_dim as f64;
        let d = m.latent_dim as f64;
        let (hr, hh) = (m.rnn_hidden as f64, m.head_hidden as f64);
        let (w, s, k, ens) =
            (t.window as f64, t.num_samples as f64, t.k_steps as f64, t.ensemble as f64);
        let thr = threads.max(1) as f64;
        // Parameter counts (model.rs).
        let p_gru = 3.0 * hr * (ny + d) + 3.0 * hr * hr + 6.0 * hr;
        let p_head = hr * hh + hh + hh * d + d;
        let (p_dyn, c, grid, dyn_sizes) = match &m.dynamics {
            DynamicsKind::Mlp { hidden } => {
                let mut sizes = vec![d];
                sizes.extend(hidden.iter().map(|&h| h as f64));
                sizes.push(d);
                let p: f64 = sizes.windows(2).map(|l| l[0] * l[1] + l[1]).sum();
                (p, 0.0, 0.0, sizes)
            }
            DynamicsKind::Rbf { grid, .. } => {
                let g = *grid as f64;
                (2.0 * g * g, g * g, g, Vec::new())
            }
        };
        let p_dec = match m.decoder {
            DecoderKind::LogLinear | DecoderKind::Linear => 3.0 * ny,
            DecoderKind::Mlp => 16.0 * d + 16.0 + 17.0 * ny,
        };
        let np = p_gru + 2.0 * p_head + p_dyn + d + p_dec + ny;
        let pd = p_dyn + d;
        // Workspaces (model.rs: DynCache, the encoder's, the decoder's).
        let dc = |rows: f64| {
            if c > 0.0 { 8.0 * rows * (2.0 * d + c) } else { ws(&dyn_sizes, rows) + 8.0 * rows * d }
        };
        let enc = |steps: f64| {
            8.0 * (steps * (ny + d) + (11.0 * steps + 8.0) * hr) + 2.0 * ws(&[hr, hh, d], steps)
        };
        let dec = |rows: f64| match m.decoder {
            DecoderKind::Mlp => ws(&[d, 16.0, ny], rows),
            _ => ws(&[d, ny], rows),
        };
        let lk = (k * w - k * (k + 1.0) / 2.0).max(0.0);
        let mut b = Budget::new();
        let mut add = |what: &'static str, fields: String, bytes: f64| {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        };
        let model = format!(
            "env.obs_dim = {}, model.rnn_hidden = {}, model.head_hidden = {}, model.dynamics",
            self.env.obs_dim, m.rnn_hidden, m.head_hidden
        );
        // Held through the run.
        add("kernel panels, plots, folder", "fixed".into(), (12u64 << 20) as f64);
        add("parameters, gradients, Adam moments (online.rs, train.rs)", model.clone(), 32.0 * np);
        if t.ensemble >= 2 {
            add(
                "ensemble members (train.rs)",
                format!("train.ensemble = {}, model.dynamics", t.ensemble),
                8.0 * pd * np2(ens - 1.0) + 16.0 * np,
            );
        }
        let dyn_caches: f64 =
            dc(s * (w - 1.0)) + (1..=t.k_steps).map(|j| dc(s * (w - j as f64))).sum::<f64>();
        add(
            "ELBO workspace and noise (model.rs, train.rs)",
            format!(
                "train.window = {}, train.num_samples = {}, train.k_steps = {}, {model}",
                t.window, t.num_samples, t.k_steps
            ),
            8.0 * (5.0 * w * d
                + s * d * (10.0 * w - 1.0)
                + 6.0 * s * d * lk
                + 2.0 * s * w * ny
                + 2.0 * w * hr
                + 2.0 * d
                + 2.0 * ny)
                + dyn_caches
                + dec(s * w)
                + enc(w)
                + 8.0 * (s * w * d + w + s * d * lk),
        );
        add(
            "window, belief encoder, observation map (online.rs)",
            format!("train.window = {}, env.obs_dim = {}", t.window, self.env.obs_dim),
            8.0 * (2.0 * w * ny + 2.0 * w) + 40.0 * ny + 32.0 * w + enc(w),
        );
        let icem = p.kind == PolicyKind::Icem;
        let hp = p.horizon as f64;
        let ke = p.num_elites as f64;
        let r = (p.num_samples as f64).max(2.0 * ke) + ke.min((p.frac_elites_reused * ke).floor());
        if c > 0.0 {
            let fisher = p.plans_on_fisher();
            let splits = thr.min((r / 8.0).ceil().max(1.0));
            add(
                "RBF features, coverage, Fisher information (model.rs, fisher.rs)",
                format!("model.dynamics.grid = {grid}"),
                16.0 * c
                    + 8.0 * grid
                    + if fisher {
                        8.0 * (2.0 * c + grid) + 24.0 * ny + 40.0 * c + 56.0 * c * splits
                    } else {
                        0.0
                    },
            );
        }
        if icem {
            add(
                "iCEM pink-noise matrix, samples and elites (mppi/icem.rs)",
                format!(
                    "policy.horizon = {}, policy.num_samples = {}, policy.num_elites = {}",
                    p.horizon, p.num_samples, p.num_elites
                ),
                16.0 * hp * ((hp / 2.0).floor() + 1.0)
                    + 16.0 * hp
                    + 32.0 * hp * r
                    + 16.0 * r
                    + 32.0 * hp
                    + 16.0 * ke * hp
                    + 8.0 * ke,
            );
        }
        let pending = match self.save_every {
            0 => 0.0,
            n => n.min(self.steps) as f64,
        };
        if pending > 0.0 {
            add(
                "transitions not yet saved (online.rs)",
                format!("save_every = {}, env.obs_dim = {}", self.save_every, self.env.obs_dim),
                1.5 * 8.0 * ny * np2(pending) + 32.0 * np2(pending).max(2.0),
            );
        }
        let (ev, tv, sv, km) =
            (e.episodes as f64, e.steps as f64, e.num_samples as f64, e.k_max as f64);
        add(
            "validation data (eval.rs)",
            format!(
                "eval.episodes = {}, eval.steps = {}, env.obs_dim = {}",
                e.episodes, e.steps, self.env.obs_dim
            ),
            8.0 * ev * tv * (ny + 6.0),
        );
        // The largest of what comes and goes.
        let ckpt = 8.0
            * (3.0 * np
                + 2.0 * w * ny
                + 2.0 * w
                + ny
                + 6.0
                + 3.0 * c
                + (ens - 1.0).max(0.0) * pd
                + pending * (ny + 4.0)
                + if icem { 4.0 * hp + 2.0 * ke * hp + ke } else { 0.0 })
            + 2048.0;
        let worker = enc(tv)
            + 32.0 * tv
            + 16.0 * sv * tv
            + 8.0 * ny
            + dc(sv)
            + dec(sv)
            + 64.0 * sv
            + 8.0 * sv * ny
            + 16.0 * (km + 1.0) * ny;
        let per = ev * (16.0 * tv + 8.0 * (km + 1.0));
        let eval = (ev.min(thr) * worker + per)
            .max(per + 16.0 * tv * np2(ev) + dc(ev * tv) + 32.0 * ev * tv)
            + 128.0 * c;
        let end = dc(225.0).max(148.0 * c + 2.0 * 1048576.0);
        let field =
            if self.env.field == FieldKind::MultiAttractor { 110.0 * 1048576.0 } else { 0.0 };
        // Building the members: a whole model per member, and the members' buffer doubling.
        let members = if t.ensemble >= 2 { 8.0 * (np + 0.5 * pd * np2(ens - 1.0)) } else { 0.0 };
        let transients = [
            (
                "ensemble construction (train.rs)",
                members,
                format!("train.ensemble = {}, model.dynamics", t.ensemble),
            ),
            (
                "checkpoint written, or read back on resume (online.rs)",
                if checkpoints { 2.0 * ckpt } else { 0.0 },
                if t.ensemble >= 2 {
                    format!("train.ensemble = {}, {model}", t.ensemble)
                } else {
                    model.clone()
                },
            ),
            (
                "evaluation (eval.rs)",
                eval,
                format!(
                    "eval.episodes = {}, eval.steps = {}, eval.num_samples = {}, model.dynamics",
                    e.episodes, e.steps, e.num_samples
                ),
            ),
            (
                "saved transitions (run)",
                8.0 * pending * (ny + 4.0),
                format!("save_every = {}", self.save_every),
            ),
            ("learned-field plot (eval.rs)", end, "model.dynamics".into()),
            (
                "multi-attractor field's GP draw (envs/vectorfield)",
                field,
                "env.field = multi-attractor".into(),
            ),
        ];
        let (what, bytes, fields) =
            transients.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).expect("six transients");
        add(what, fields, bytes);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_sizes_and_the_failures_that_aborted() {
        // e1 and e2 fit in tens of MB.
        for c in [ActdynConfig::e1(), ActdynConfig::e2()] {
            let total = c.budget(2).total();
            assert!(total < 64 << 20, "{}", c.budget(2).describe(4));
        }
        // The three sizes issue 33 found aborting are refused, each naming its cause.
        let mut c = ActdynConfig::e2();
        c.policy.horizon = 1 << 20;
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("pink-noise") && e.contains("policy.horizon = 1048576"), "{e}");
        let mut c = ActdynConfig::e1();
        c.train.ensemble = 64;
        c.model.dynamics = DynamicsKind::Mlp { hidden: vec![4096; 8] };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("train.ensemble = 64"), "{e}");
        let mut c = ActdynConfig::e1();
        (c.env.obs_dim, c.model.obs_dim, c.model.rnn_hidden) = (100_000, 100_000, 4096);
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("env.obs_dim = 100000") && e.contains("model.rnn_hidden = 4096"), "{e}");
        // Absurd sizes saturate instead of overflowing.
        c.model.rnn_hidden = usize::MAX;
        assert!(c.budget(usize::MAX).check().is_err());
    }
}
