//! The eight matrix products of one training step of the MLP 64→256→256→16 (forward, weight
//! and input gradients) at a batch size, through `kestrel_nn::matmul` and through `gemm` alone
//! (`matmul::gemm_matmul`), alternated: best of 5 rounds per product, with the rate against
//! the FLOPs and whether both paths give the same bits. The floor of the step's products (each
//! repetition also copies `c` back first: ~3 µs at 256 × 256, in both columns).
//! Run: `taskset -c 0 cargo run --release -p kestrel-nn --example products -- [batch=256]`.

use kestrel_nn::matmul::{Op, gemm_matmul, matmul};
use std::time::Instant;

fn main() {
    let bt: usize = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 256,
        Some(Ok(b)) if b > 0 => b,
        Some(_) => {
            eprintln!("usage: products [batch >= 1]");
            std::process::exit(2);
        }
    };
    // (name, m, k, n, op(a), op(b), accumulate), as `Dense` calls them.
    let shapes = [
        ("forward 1", bt, 64, 256, Op::N, Op::N, true),
        ("forward 2", bt, 256, 256, Op::N, Op::N, true),
        ("forward 3", bt, 256, 16, Op::N, Op::N, true),
        ("dW 3", 256, bt, 16, Op::T, Op::N, true),
        ("dx 3", bt, 16, 256, Op::N, Op::T, false),
        ("dW 2", 256, bt, 256, Op::T, Op::N, true),
        ("dx 2", bt, 256, 256, Op::N, Op::T, false),
        ("dW 1", 64, bt, 256, Op::T, Op::N, true),
    ];
    println!("| product | m × k × n | gemm µs | matmul µs | matmul GFLOP/s | same bits |");
    println!("|---|---|---:|---:|---:|---|");
    let (mut total_gemm, mut total_own, mut flops) = (0.0, 0.0, 0.0);
    for (name, m, k, n, op_a, op_b, acc) in shapes {
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let c0: Vec<f32> = (0..m * n).map(|i| (i as f32 * 0.05).sin()).collect();
        let (mut c, mut want) = (c0.clone(), c0.clone());
        gemm_matmul(m, k, n, &a, op_a, &b, op_b, &mut want, acc);
        matmul(m, k, n, &a, op_a, &b, op_b, &mut c, acc);
        let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
        let reps = (50_000_000 / (m * k * n)).clamp(20, 10_000);
        let mut best = [f64::MAX; 2];
        for _round in 0..5 {
            for (own, best) in best.iter_mut().enumerate() {
                let t = Instant::now();
                for _ in 0..reps {
                    c.copy_from_slice(&c0);
                    if own == 1 {
                        matmul(m, k, n, &a, op_a, &b, op_b, &mut c, acc);
                    } else {
                        gemm_matmul(m, k, n, &a, op_a, &b, op_b, &mut c, acc);
                    }
                    std::hint::black_box(&mut c);
                }
                *best = best.min(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
            }
        }
        let f = 2.0 * (m * k * n) as f64;
        println!(
            "| {name} | {m} × {k} × {n} | {:.1} | {:.1} | {:.0} | {} |",
            best[0],
            best[1],
            f / best[1] / 1e3,
            if same { "yes" } else { "no" }
        );
        total_gemm += best[0];
        total_own += best[1];
        flops += f;
    }
    println!(
        "| all eight | {:.1} MFLOP | {total_gemm:.1} | {total_own:.1} | {:.0} | |",
        flops / 1e6,
        flops / total_own / 1e3
    );
}
