//! The eight matrix products of one training step of the MLP 64→256→256→16 (forward, weight
//! and input gradients) at a batch size, through one of Kestrel's kernels (the best this CPU
//! runs, or the one named) and through `gemm`, alternated: best of 5 rounds per product, with
//! the rate against the FLOPs and whether both paths give the same bits. The floor of the
//! step's products (each repetition also copies `c` back first: ~3 µs at 256 × 256, in both
//! columns). Run: `taskset -c 0 cargo run --release -p kestrel-nn --example products --
//! [batch=256] [best|avx512|avx2] [f32|f64]`.

use kestrel_core::simd::Real;
use kestrel_nn::matmul::{Kernel, Op, matmul_with};
use std::time::Instant;

fn usage() -> ! {
    eprintln!("usage: products [batch >= 1] [best|avx512|avx2] [f32|f64]");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bt: usize = match args.first().map(|s| s.parse()) {
        None => 256,
        Some(Ok(b)) if b > 0 => b,
        Some(_) => usage(),
    };
    let kernel = match args.get(1).map(String::as_str) {
        None | Some("best") => Kernel::best(),
        Some("avx512") => Kernel::Avx512,
        Some("avx2") => Kernel::Avx2,
        Some(_) => usage(),
    };
    if !kernel.available() {
        eprintln!("this CPU does not run {kernel:?}");
        std::process::exit(2);
    }
    match args.get(2).map(String::as_str) {
        None | Some("f32") => run::<f32>(bt, kernel),
        Some("f64") => run::<f64>(bt, kernel),
        Some(_) => usage(),
    }
}

fn run<T: Real>(bt: usize, kernel: Kernel) {
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
    println!("{kernel:?} against gemm, {}", T::DTYPE);
    println!("| product | m × k × n | gemm µs | Kestrel µs | Kestrel GFLOP/s | same bits |");
    println!("|---|---|---:|---:|---:|---|");
    let (mut total_gemm, mut total_own, mut flops) = (0.0, 0.0, 0.0);
    for (name, m, k, n, op_a, op_b, acc) in shapes {
        let a: Vec<T> = (0..m * k).map(|i| T::from_f64((i as f64 * 0.37).sin())).collect();
        let b: Vec<T> = (0..k * n).map(|i| T::from_f64((i as f64 * 0.11).cos())).collect();
        let c0: Vec<T> = (0..m * n).map(|i| T::from_f64((i as f64 * 0.05).sin())).collect();
        let (mut c, mut want) = (c0.clone(), c0.clone());
        matmul_with(Kernel::Gemm, m, k, n, &a, op_a, &b, op_b, &mut want, acc);
        matmul_with(kernel, m, k, n, &a, op_a, &b, op_b, &mut c, acc);
        let same = c.iter().zip(&want).all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits());
        let reps = (50_000_000 / (m * k * n)).clamp(20, 10_000);
        let mut best = [f64::MAX; 2];
        for _round in 0..5 {
            for (own, best) in best.iter_mut().enumerate() {
                let t = Instant::now();
                for _ in 0..reps {
                    c.copy_from_slice(&c0);
                    let kern = if own == 1 { kernel } else { Kernel::Gemm };
                    matmul_with(kern, m, k, n, &a, op_a, &b, op_b, &mut c, acc);
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
