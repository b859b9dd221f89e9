//! `kestrel config [KIND]`: the run kinds and env ids, or one kind's config (its defaults, or
//! what `--preset`, `--config` and `--set` resolve to) as commented TOML that `--config` reads
//! back; for an env id, its params.

use anyhow::Result;
use clap::Args;
use kestrel_run::envs::Configurable;
use kestrel_run::{EnvId, Layers, RunKind};
use std::path::PathBuf;

#[derive(Args)]
pub struct ConfigArgs {
    /// The run kind or env id (absent: list them).
    kind: Option<String>,
    /// Start from this preset instead of the defaults (actdyn: e1, e2; hunt: treasurehunt_mp).
    #[arg(long)]
    preset: Option<String>,
    /// A TOML config whose keys apply over the defaults.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override a key: `--set mppi.lambda=0.5` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Print JSON (what Python's `kestrel.config(kind)` returns) instead of commented TOML.
    #[arg(long)]
    json: bool,
}

pub fn config(a: ConfigArgs, kinds: &[RunKind]) -> Result<()> {
    let Some(name) = a.kind else {
        outln!("Run kinds (`kestrel config KIND` prints one's keys with their docs):");
        for &k in kinds {
            outln!("  {:<10} kestrel {}", k.name(), k.command());
        }
        outln!(
            "Env ids (`kestrel config ID` prints its params; Python: kestrel.make(ID, **params)):"
        );
        for id in EnvId::all() {
            outln!("  {:<30} {}", id.name(), id.about());
        }
        return Ok(());
    };
    let table = toml::Table::new();
    let layers = Layers {
        preset: a.preset.as_deref(),
        file: a.config.as_deref(),
        table: &table,
        sets: &a.set,
    };
    let kind = match RunKind::find(kinds, &name) {
        Ok(k) => Configurable::Run(k),
        Err(_) => Configurable::parse(&name)?,
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&kind.resolve(layers)?)?);
    } else {
        out!("{}", kind.config_toml(layers)?);
    }
    Ok(())
}
