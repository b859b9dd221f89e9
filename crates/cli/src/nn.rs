//! `kestrel nn bench`: times kestrel-nn on the workloads of `shared/reference/nn-backends.md`.

use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_core::Key;
use kestrel_core::timing::median_for_us;
use kestrel_nn::{Adam, Loss, MlpConfig, Sequential, Trainee, train_many};
use serde_json::json;

#[derive(Subcommand)]
pub enum NnCmd {
    /// Time an MLP training step (batch B, one model) and N models trained at once.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Layer widths, input first.
    #[arg(long, default_value = "64,256,256,16", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Batch of the single-model step.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Independent models of the many-model step.
    #[arg(long, default_value_t = 8)]
    models: usize,
    /// Batch of each of those models.
    #[arg(long, default_value_t = 64)]
    model_batch: usize,
    /// Worker threads (models run in parallel; each GEMM is single-threaded).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to time each case.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

fn data(key: Key, n: usize) -> Vec<f32> {
    let mut r = key.rng();
    (0..n).map(|_| 2.0 * r.uniform_f32() - 1.0).collect()
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&a.sizes))?;
    let (din, dout) = (net.in_dim(), net.out_dim());
    let adam = Adam::new(1e-4);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let (x, y) = (data(Key::new(1), a.batch * din), data(Key::new(2), a.batch * dout));
    let mut t = Trainee::new(&net, Key::new(3));
    let single = pool.install(|| {
        median_for_us(a.seconds, || {
            net.train_step(&mut t, &adam, &x, &y, Loss::Mse).expect("finite loss");
        })
    });
    let xs: Vec<Vec<f32>> =
        (0..a.models).map(|i| data(Key::new(10 + i as u64), a.model_batch * din)).collect();
    let ys: Vec<Vec<f32>> =
        (0..a.models).map(|i| data(Key::new(100 + i as u64), a.model_batch * dout)).collect();
    let batches: Vec<(&[f32], &[f32])> =
        xs.iter().zip(&ys).map(|(x, y)| (&x[..], &y[..])).collect();
    let mut ts: Vec<Trainee<f32>> =
        (0..a.models).map(|i| Trainee::new(&net, Key::new(1000 + i as u64))).collect();
    let many = pool.install(|| {
        median_for_us(a.seconds, || {
            for r in train_many(&net, &mut ts, &adam, &batches, Loss::Mse) {
                r.expect("finite loss");
            }
        })
    });
    let p = net.init(Key::new(4));
    let mut ws = net.workspace(1);
    let x1 = data(Key::new(5), din);
    let fwd1 = median_for_us(a.seconds.min(1.0), || {
        std::hint::black_box(net.forward(&p, &x1, &mut ws)[0]);
    });
    if a.json {
        println!(
            "{}",
            json!({"sizes": a.sizes, "threads": a.threads, "batch": a.batch, "train_us": single,
                   "models": a.models, "model_batch": a.model_batch, "train_many_us": many,
                   "forward_b1_us": fwd1})
        );
    } else {
        println!(
            "MLP {:?}, {} thread(s): train step batch {} {single:.0} µs; {} models × batch {} {many:.0} µs; forward batch 1 {fwd1:.1} µs",
            a.sizes, a.threads, a.batch, a.models, a.model_batch
        );
    }
    Ok(())
}
