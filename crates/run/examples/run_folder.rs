//! The one run writer: a typed config from defaults and overrides, a run folder with its
//! record, background metrics and a summary. Run:
//! `cargo run -p kestrel-run --example run_folder`.

use kestrel_run::{MetricsSink, RunDir, Summary, load_config};

#[derive(Debug, serde::Serialize, serde::Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Steps to run.
    steps: u64,
    /// Decay per step.
    rate: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let defaults = Config { steps: 100, rate: 0.5 };
    let cfg: Config = load_config(&defaults, None, toml::Table::new(), &["rate=0.9".into()])?;
    let root = std::env::temp_dir().join("kestrel-run-example");
    let dir = RunDir::create(&root, "example", "decay", 0, std::env::args().collect())?;
    dir.write_config(&cfg)?;
    let mut metrics = MetricsSink::create(&dir.join("metrics.jsonl"))?;
    let mut x = 1.0f64;
    for step in 1..=cfg.steps {
        x *= cfg.rate;
        metrics.log(step, serde_json::json!({"x": x}))?;
    }
    metrics.finish()?;
    Summary::new("example run").value("final_x", "final x", x).write(dir.path())?;
    println!("run folder {}", dir.path().display());
    dir.finish("ok", None)?;
    Ok(())
}
