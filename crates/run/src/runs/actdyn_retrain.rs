//! Offline retraining of an `actdyn run` on the transitions it saved (`kestrel actdyn
//! retrain`): the run's model from its checkpoint, epochs of AdamW over chunks of the
//! transitions (the reference's `config.py` offline row), evaluations before and after. The
//! optimiser is `kestrel_actdyn::offline`'s; the run it reads is [`super::actdyn`]'s.

use super::actdyn::{Actdyn, failed, load_set};
use crate::launch::{Launch, Outcome, finish, start};
use crate::runs::actdyn::ActdynConfig;
use crate::{COMMIT, Outputs, Run, RunError, Summary};
use kestrel_actdyn::eval::Evaluation;
use kestrel_actdyn::offline::{OfflineConfig, Transitions};
use kestrel_core::Budget;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `kestrel actdyn retrain`'s config: the run retrained and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct RetrainConfig {
    /// The `kestrel actdyn run` folder retrained: its `config.toml`, `checkpoint/` and the
    /// transitions it saved (`save_every`).
    pub run: PathBuf,
    /// The offline training (the reference's defaults: AdamW lr 1e-4, weight decay 1e-4,
    /// 5,000 epochs of batches of 32 chunks of 1,000 steps).
    #[documented(nested)]
    pub offline: OfflineConfig,
}

/// The config of the run in `dir`, read as that run read it (`super::source_config`).
fn source(dir: &Path) -> Result<ActdynConfig, RunError> {
    super::source_config(dir, &ActdynConfig::default(), Actdyn::COMMAND)
}

/// The `actdyn-retrain` run kind.
pub struct ActdynRetrain;

impl Run for ActdynRetrain {
    const NAME: &'static str = "actdyn-retrain";
    const COMMAND: &'static str = "actdyn retrain";
    const SEED_KEY: &'static [&'static str] = &["offline", "seed"];
    const METRICS: &'static [&'static str] = &["obs_r2_k5_after", "vf_rel_err_after"];
    const CURVE: &'static str = "elbo_per_t";
    type Config = RetrainConfig;

    fn defaults(_: Option<&RetrainConfig>) -> RetrainConfig {
        RetrainConfig::default()
    }

    fn outputs(_: &RetrainConfig) -> Outputs {
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
    fn validate(c: &RetrainConfig) -> Result<(), RunError> {
        Ok(c.offline.validate()?)
    }

    /// The source run's model with one ELBO workspace over a chunk per worker (its config's
    /// estimate with `train.window` = `offline.chunk`, per thread), and its transitions (the
    /// next observations and actions of every step, in vectors grown as they are read).
    /// Without a readable source config, the defaults'.
    fn budget(c: &RetrainConfig, threads: usize) -> Budget {
        let mut src = source(&c.run).unwrap_or_default();
        src.train.window = c.offline.chunk;
        src.train.samples = c.offline.samples;
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

    fn run(c: RetrainConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
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
pub fn run(rc: RetrainConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    ActdynRetrain::validate(&rc)?;
    let (run_dir, off) = (rc.run.as_path(), &rc.offline);
    let c = source(run_dir)?;
    let ck = run_dir.join("checkpoint");
    let Some((mut run, _)) = load_set(&c, &ck, &crate::registry::stamp::<Actdyn>(&c))? else {
        return Err(RunError::Failed(format!("{}: no complete checkpoint", ck.display())));
    };
    let data = load_transitions(run_dir)?;
    // Everything the retraining refuses is refused before the folder exists.
    kestrel_actdyn::offline::check_data(run.model(), &data, off)?;
    let (dir, mut metrics) = start(&launch, "actdyn", "retrain", off.seed, &rc)?;
    let mut launch = launch;
    let r = (|| -> Result<String, RunError> {
        let val = run.validation_data();
        let before = run.evaluate(&val);
        let mut params = run.params.clone();
        let mut progress = launch.progress(off.epochs, "epochs");
        let mut last = f64::NAN;
        let mut log_err = None;
        let model = run.model();
        kestrel_actdyn::offline::retrain(model, &mut params, &data, off, |e| {
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
        crate::write_atomic(
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
