//! Offline retraining of an `actdyn run` on the transitions it saved (`kestrel actdyn
//! retrain`): the run's model from its checkpoint, epochs of AdamW over chunks of the
//! transitions (the reference's `config.py` offline row), evaluations before and after. The
//! run it reads is [`super::actdyn`]'s.
//!
//! The epoch loop ([`retrain`]): the run's transitions cut into chunks, several passes over
//! them in shuffled mini-batches of chunks, AdamW, the ELBO of each chunk as its loss. Each
//! chunk's ELBO and gradient are computed on their own (in parallel, one workspace per thread)
//! and summed in chunk order, so results do not depend on the thread count.

use super::actdyn::{Actdyn, ActdynRun, failed};
use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::resume::Resumable;
use crate::run::{Outputs, Run};
use crate::runs::actdyn::ActdynConfig;
use crate::summary::Summary;
use kestrel_actdyn::ActdynError;
use kestrel_actdyn::eval::Evaluation;
use kestrel_actdyn::model::{ElboNoise, ElboOptions, ElboWorkspace, SeqVae};
use kestrel_actdyn::train::{Transitions, clip_coefficient};
use kestrel_core::{Budget, FromInvalid, Key};
use kestrel_nn::{Adam, AdamState};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `kestrel actdyn retrain`'s config: the run retrained and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct ActdynRetrainConfig {
    /// The `kestrel actdyn run` folder retrained: its `config.toml`, `checkpoint/` and the
    /// transitions it saved (`save_every`).
    pub run: PathBuf,
    /// The offline training (the reference's defaults: AdamW lr 1e-4, weight decay 1e-4,
    /// 5,000 epochs of batches of 32 chunks of 1,000 steps).
    #[documented(nested)]
    pub offline: OfflineConfig,
}

/// Offline training hyper-parameters (reference defaults: AdamW lr 1e-4, weight decay 1e-4,
/// 5,000 epochs, batches of 32 chunks of 1,000 steps, no perturbation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct OfflineConfig {
    /// Passes over the chunks (5,000).
    pub epochs: u64,
    /// Learning rate (1e-4).
    pub lr: f64,
    /// Decoupled weight decay (1e-4).
    pub weight_decay: f64,
    /// Chunks per mini-batch (32).
    pub batch_size: usize,
    /// Steps per chunk (1,000).
    pub chunk: usize,
    /// Global gradient-norm clip of each batch's mean gradient (10; 0: none).
    pub grad_clip: f64,
    /// Posterior samples S (5).
    pub num_samples: usize,
    /// Prior steps K (5).
    pub k_steps: usize,
    /// KL weight β (1).
    pub beta: f64,
    /// KL prior variance v·dt instead of v.
    pub kl_prior_variance_dt: bool,
    /// Seed of the shuffles and ELBO draws.
    pub seed: u64,
}

impl Default for OfflineConfig {
    fn default() -> Self {
        OfflineConfig {
            epochs: 5000,
            lr: 1e-4,
            weight_decay: 1e-4,
            batch_size: 32,
            chunk: 1000,
            grad_clip: 10.0,
            num_samples: 5,
            k_steps: 5,
            beta: 1.0,
            kl_prior_variance_dt: false,
            seed: 0,
        }
    }
}

impl OfflineConfig {
    /// Checks every field; errors name it (`offline.FIELD`).
    pub fn validate(&self) -> Result<(), ActdynError> {
        let num = |f: &'static str, v: f64, hi: f64| kestrel_core::check_finite(f, v, 0.0, hi);
        num("offline.lr", self.lr, 1e3)?;
        num("offline.weight_decay", self.weight_decay, 1.0)?;
        num("offline.grad_clip", self.grad_clip, 1e12)?;
        num("offline.beta", self.beta, 1e6)?;
        let int = |f: &'static str, v: u64, lo: u64, hi: u64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ActdynError::invalid(f, v, format!("an integer in [{lo}, {hi}]")))
            }
        };
        int("offline.epochs", self.epochs, 1, 100_000_000)?;
        int("offline.batch_size", self.batch_size as u64, 1, 100_000)?;
        int("offline.chunk", self.chunk as u64, 2, 1_000_000)?;
        int("offline.num_samples", self.num_samples as u64, 1, 1000)?;
        int("offline.k_steps", self.k_steps as u64, 1, self.chunk as u64 - 1)?;
        Ok(())
    }
}

/// The config of the run in `dir`, read as that run read it (`super::source_config`).
fn source(dir: &Path) -> Result<ActdynConfig, RunError> {
    super::source_config::<Actdyn>(dir)
}

/// The `actdyn-retrain` run kind.
pub struct ActdynRetrain;

impl Run for ActdynRetrain {
    const NAME: &'static str = "actdyn-retrain";
    const COMMAND: &'static str = "actdyn retrain";
    const ABOUT: &'static str = "Offline retraining of a run on its saved transitions (AdamW over chunks), into a new folder with evaluations before and after.";
    const SEED_KEY: &'static [&'static str] = &["offline", "seed"];
    const METRICS: &'static [&'static str] = &["obs_r2_k5_after", "vf_rel_err_after"];
    const CURVE: &'static str = "elbo_per_t";
    type Config = ActdynRetrainConfig;

    fn defaults(_: Option<&ActdynRetrainConfig>) -> ActdynRetrainConfig {
        ActdynRetrainConfig::default()
    }

    fn outputs(_: &ActdynRetrainConfig) -> Outputs {
        Outputs::new(
            &[
                "transitions",
                "elbo_last_epoch",
                "obs_r2_k5_before",
                "obs_r2_k5_after",
                "latent_r2_0_before",
                "latent_r2_0_after",
                "vf_rel_err_before",
                "vf_rel_err_after",
            ],
            &["loss_per_t", "elbo_per_t"],
        )
    }

    /// The offline config; the run folder is read (and refused by name) when the run starts,
    /// before its own folder exists.
    fn validate(c: &ActdynRetrainConfig) -> Result<(), RunError> {
        Ok(c.offline.validate()?)
    }

    /// The source run's model with one ELBO workspace over a chunk per worker (its config's
    /// estimate with `train.window` = `offline.chunk`, per thread), and its transitions (the
    /// next observations and actions of every step, in vectors grown as they are read).
    /// Without a readable source config, the defaults'.
    fn budget(c: &ActdynRetrainConfig, threads: usize) -> Budget {
        let mut src = source(&c.run).unwrap_or_default();
        src.train.window = c.offline.chunk;
        src.train.num_samples = c.offline.num_samples;
        src.train.k_steps = c.offline.k_steps;
        let mut b = Budget::new();
        b.add_all("per worker: ", &Actdyn::budget(&src, 1), threads.max(1) as u128);
        let row = 8 * (src.env.obs_dim as u128 + 2);
        let steps = super::np2(src.steps as f64) as u128;
        b.add(
            "saved transitions",
            format!("the run's steps = {}, env.obs_dim = {}", src.steps, src.env.obs_dim),
            steps,
            row,
        );
        b
    }

    fn run(
        c: ActdynRetrainConfig,
        _: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// What retraining did per epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrainEpochStats {
    /// 1-based epoch.
    pub epoch: u64,
    /// Mean loss per step over the epoch's chunks (−ELBO/T).
    pub loss_per_t: f64,
}

/// Checks `cfg` and that `data` fits `model` and holds at least one chunk: everything
/// [`retrain`] refuses, callable before any work (a run folder) starts. Returns the chunks.
pub fn check_data(
    model: &SeqVae,
    data: &Transitions,
    cfg: &OfflineConfig,
) -> Result<usize, ActdynError> {
    cfg.validate()?;
    let ny = model.config().obs_dim;
    if data.obs_dim != ny {
        return Err(ActdynError::invalid("transitions obs_dim", data.obs_dim, format!("{ny}")));
    }
    let n_chunks = data.len() / cfg.chunk;
    if n_chunks == 0 {
        return Err(ActdynError::invalid(
            "offline.chunk",
            cfg.chunk,
            format!("at most the {} saved transitions", data.len()),
        ));
    }
    Ok(n_chunks)
}

/// Retrains `params` on `data` for `cfg.epochs` epochs, calling `each(stats)` after every
/// epoch (return `false` to stop). Chunks are consecutive, non-overlapping runs of
/// `cfg.chunk` steps (a shorter tail is dropped).
pub fn retrain(
    model: &SeqVae,
    params: &mut [f64],
    data: &Transitions,
    cfg: &OfflineConfig,
    mut each: impl FnMut(&RetrainEpochStats) -> bool,
) -> Result<(), ActdynError> {
    let n_chunks = check_data(model, data, cfg)?;
    let (ny, d) = (model.config().obs_dim, model.config().latent_dim);
    let t = cfg.chunk;
    let opts = ElboOptions {
        beta: cfg.beta,
        kl_prior_variance_dt: cfg.kl_prior_variance_dt,
        ..ElboOptions::default()
    };
    let adam = Adam::new(cfg.lr);
    let mut state = AdamState::new(params.len());
    let key = Key::new(cfg.seed);
    let mut order: Vec<usize> = (0..n_chunks).collect();
    let mut grads = vec![0.0; params.len()];
    let mut slots: Vec<(f64, Vec<f64>)> =
        (0..cfg.batch_size.min(n_chunks)).map(|_| (0.0, vec![0.0; params.len()])).collect();
    for epoch in 1..=cfg.epochs {
        let ek = key.fold_in(epoch);
        // Fisher–Yates with the epoch's key.
        let mut r = ek.fold_in(u64::MAX).rng();
        for i in (1..n_chunks).rev() {
            let j = r.below(i as u32 + 1) as usize;
            order.swap(i, j);
        }
        let mut epoch_loss = 0.0;
        for (b, batch) in order.chunks(cfg.batch_size).enumerate() {
            let p: &[f64] = params;
            // One gradient slot per chunk of the batch (allocated once), summed in chunk order.
            let used = &mut slots[..batch.len()];
            used.par_iter_mut().zip(batch.par_iter()).for_each_init(
                || (ElboWorkspace::default(), ElboNoise::zeros(cfg.num_samples, t, cfg.k_steps, d)),
                |(ws, noise), ((loss, g), &c)| {
                    noise.draw(ek.fold_in(b as u64).fold_in(c as u64), 0.0);
                    g.iter_mut().for_each(|v| *v = 0.0);
                    let y = &data.next_obs[c * t * ny..(c + 1) * t * ny];
                    let u = &data.action[c * t * 2..(c + 1) * t * 2];
                    *loss = model.elbo(p, y, u, noise, &opts, ws, Some(g)).loss;
                },
            );
            grads.iter_mut().for_each(|g| *g = 0.0);
            let scale = 1.0 / batch.len() as f64;
            for (loss, g) in used.iter() {
                epoch_loss += loss / t as f64;
                for (a, b) in grads.iter_mut().zip(g) {
                    *a += scale * b;
                }
            }
            let norm = kestrel_core::linalg::norm(&grads);
            if !norm.is_finite() {
                return Err(ActdynError::NonFinite { what: "offline gradient norm", value: norm });
            }
            let coef = clip_coefficient(norm, cfg.grad_clip);
            grads.iter_mut().for_each(|g| *g *= coef);
            // AdamW: decoupled weight decay, then the Adam step.
            let decay = 1.0 - cfg.lr * cfg.weight_decay;
            params.iter_mut().for_each(|p| *p *= decay);
            adam.step(&mut state, params, &grads)?;
        }
        let stats = RetrainEpochStats { epoch, loss_per_t: epoch_loss / n_chunks as f64 };
        if !stats.loss_per_t.is_finite() {
            return Err(ActdynError::NonFinite { what: "offline loss", value: stats.loss_per_t });
        }
        if !each(&stats) {
            break;
        }
    }
    Ok(())
}

/// Every saved transition of a run folder, in step order.
fn load_transitions(dir: &Path) -> Result<Transitions, RunError> {
    let folder = dir.join("transitions");
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .map_err(|e| RunError::io(&folder, "cannot read", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    let mut out = Transitions::default();
    let mut next = 1u64;
    for f in files {
        let t =
            kestrel_nn::load_safetensors::<f64>(&f).map_err(kestrel_actdyn::ActdynError::from)?;
        let bad = |what: &str| RunError::Failed(format!("{}: {what}", f.display()));
        let first: u64 = t
            .metadata
            .get("first_step")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("no first_step"))?;
        if first != next {
            return Err(bad(&format!(
                "starts at step {first}, expected {next} (a chunk is missing)"
            )));
        }
        let (Some((ys, y)), Some((_, a))) = (t.get("next_obs"), t.get("action")) else {
            return Err(bad("lacks next_obs or action"));
        };
        if ys.len() != 2 || a.len() != 2 * ys[0] || (out.obs_dim != 0 && out.obs_dim != ys[1]) {
            return Err(bad("shapes do not match"));
        }
        out.obs_dim = ys[1];
        out.next_obs.extend_from_slice(y);
        out.action.extend_from_slice(a);
        next += ys[0] as u64;
    }
    if out.is_empty() {
        return Err(RunError::Failed(format!("{}: no saved transitions", folder.display())));
    }
    Ok(out)
}

/// Offline retraining of a finished (or checkpointed) run on its saved transitions, into a new
/// folder: the run's model from its checkpoint, `offline.epochs` of AdamW, evaluations before
/// and after on the run's validation data, `metrics.jsonl` (one line per epoch),
/// `params.safetensors`, `evaluation.json`, `summary.md/json`.
pub fn run(rc: ActdynRetrainConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    ActdynRetrain::validate(&rc)?;
    let (run_dir, off) = (rc.run.as_path(), &rc.offline);
    let c = source(run_dir)?;
    let ck = run_dir.join("checkpoint");
    // `note`: why the model came from `checkpoint.prev/` when the newest set did not verify,
    // said to the watcher and the new folder's record as every resume says it.
    let Some((mut run, note)) = ActdynRun::latest(&c, &ck, &crate::run::stamp::<Actdyn>(&c))?
    else {
        return Err(RunError::Failed(format!("{}: no complete checkpoint", ck.display())));
    };
    let data = load_transitions(run_dir)?;
    // Everything the retraining refuses is refused before the folder exists.
    check_data(run.model(), &data, off)?;
    let (mut dir, mut metrics) = start(&launch, "actdyn", "retrain", off.seed, &rc)?;
    let mut launch = launch;
    let r = (|| -> Result<String, RunError> {
        if let Some(note) = &note {
            launch.note(&mut dir, "epochs", note)?;
        }
        let val = run.validation_data();
        let before = run.evaluate(&val);
        let mut params = run.params.clone();
        let mut progress = launch.progress(off.epochs, "epochs");
        let mut last = f64::NAN;
        let mut log_err = None;
        let model = run.model();
        retrain(model, &mut params, &data, off, |e| {
            last = e.loss_per_t;
            if let Err(err) = metrics
                .log(e.epoch, json!({"loss_per_t": e.loss_per_t, "elbo_per_t": -e.loss_per_t}))
            {
                log_err = Some(err);
                return false;
            }
            progress.tick(e.epoch, &format!("ELBO/T {:.3}", -e.loss_per_t))
        })?;
        if let Some(e) = log_err {
            return Err(e);
        }
        metrics.finish()?;
        progress.stopped()?;
        run.params.copy_from_slice(&params);
        let after = run.evaluate(&val);
        let names: Vec<(String, Vec<usize>, &[f64])> =
            vec![("params".into(), vec![params.len()], &params[..])];
        kestrel_nn::save_safetensors(
            &dir.join("params.safetensors"),
            &names,
            &[("source", run_dir.display().to_string())],
        )
        .map_err(kestrel_actdyn::ActdynError::from)?;
        let r2 = |e: &Evaluation, k: usize| e.obs_r2_by_k.get(k).copied().unwrap_or(f64::NAN);
        Summary::new(format!("actdyn retrain of {}", run_dir.display()))
            .value("transitions", "saved transitions", data.len())
            .value("elbo_last_epoch", "ELBO/T, last epoch", -last)
            .value("obs_r2_k5_before", "observation R², k = 5, before", r2(&before, 5))
            .value("obs_r2_k5_after", "observation R², k = 5, after", r2(&after, 5))
            .value("latent_r2_0_before", "latent R² dim 0, before", before.latent_r2[0])
            .value("latent_r2_0_after", "latent R² dim 0, after", after.latent_r2[0])
            .value("vf_rel_err_before", "VF relative error, before", before.vf_rel_err)
            .value("vf_rel_err_after", "VF relative error, after", after.vf_rel_err)
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the retraining: the run folder and the offline config")
            .file("metrics.jsonl", "one line per epoch")
            .file("params.safetensors", "the retrained parameters (flat, the run's layout)")
            .write(dir.path())?;
        crate::base::write_atomic(
            &dir.join("evaluation.json"),
            serde_json::to_string_pretty(&json!({"before": before, "after": after}))
                .map_err(failed)?
                .as_bytes(),
        )?;
        Ok(format!(
            "ELBO/T {:.3} after {} epochs on {} transitions; VF error {:.3e} -> {:.3e}, obs R² k=5 {:.3} -> {:.3}; run folder {}",
            -last,
            off.epochs,
            data.len(),
            before.vf_rel_err,
            after.vf_rel_err,
            r2(&before, 5),
            r2(&after, 5),
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every offline field is checked and named (`offline.FIELD`); `k_steps` is bounded by the
    /// chunk.
    #[test]
    fn offline_configs_are_checked_by_name() {
        assert!(OfflineConfig::default().validate().is_ok());
        let bad = [
            (OfflineConfig { lr: f64::NAN, ..Default::default() }, "offline.lr"),
            (OfflineConfig { epochs: 0, ..Default::default() }, "offline.epochs"),
            (OfflineConfig { batch_size: 0, ..Default::default() }, "offline.batch_size"),
            (OfflineConfig { chunk: 1, ..Default::default() }, "offline.chunk"),
            (OfflineConfig { num_samples: 0, ..Default::default() }, "offline.num_samples"),
            (OfflineConfig { chunk: 4, k_steps: 4, ..Default::default() }, "offline.k_steps"),
            (OfflineConfig { weight_decay: 2.0, ..Default::default() }, "offline.weight_decay"),
        ];
        for (c, field) in bad {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }

    /// The saved chunks are read back in step order; a missing chunk, a file without its first
    /// step and a folder without transitions are refused naming the file or folder.
    #[test]
    fn saved_transitions_read_back_and_gaps_are_refused() {
        let dir = std::env::temp_dir().join(format!("kestrel-retrain-{}", std::process::id()));
        let folder = dir.join("transitions");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&folder).unwrap();
        assert!(load_transitions(&dir).unwrap_err().to_string().contains("no saved transitions"));
        let save = |name: &str, first: Option<u64>, rows: usize| {
            let y: Vec<f64> = (0..rows * 3).map(|i| i as f64).collect();
            let a: Vec<f64> = (0..rows * 2).map(|i| -(i as f64)).collect();
            let t: Vec<(String, Vec<usize>, &[f64])> =
                vec![("next_obs".into(), vec![rows, 3], &y), ("action".into(), vec![rows, 2], &a)];
            let meta: Vec<(&str, String)> =
                first.map(|f| vec![("first_step", f.to_string())]).unwrap_or_default();
            kestrel_nn::save_safetensors(&folder.join(name), &t, &meta).unwrap();
        };
        save("00000001.safetensors", Some(1), 4);
        save("00000005.safetensors", Some(5), 2);
        let t = load_transitions(&dir).unwrap();
        assert_eq!((t.obs_dim, t.len()), (3, 6));
        assert_eq!(&t.next_obs[12..15], &[0.0, 1.0, 2.0]);
        save("00000009.safetensors", Some(9), 2);
        let e = load_transitions(&dir).unwrap_err().to_string();
        assert!(e.contains("00000009") && e.contains("expected 7"), "{e}");
        std::fs::remove_file(folder.join("00000009.safetensors")).unwrap();
        save("00000007.safetensors", None, 2);
        let e = load_transitions(&dir).unwrap_err().to_string();
        assert!(e.contains("no first_step"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
