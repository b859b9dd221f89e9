//! What a checkpoint set's manifest costs (issue 33): the same files written durably without
//! a manifest (each fsynced, the folder fsynced and renamed into place: what a crash-safe
//! writer does anyway) against [`write_checkpoint_set`] (which also reads every file back,
//! hashes it with SHA-256 and writes the manifest), the resume-side [`checkpoint_set`], and
//! SHA-256 over the bytes in memory. Sizes: an ALLO set (1.6 MB in four files, the paper
//! profile's encoder, Adam moments and state) and a 32 MB set (a treasure hunt's replay).

use criterion::{Criterion, criterion_group, criterion_main};
use kestrel_nn::{NnError, Stamp, checkpoint_set, write_checkpoint_set};
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::io::Write;
use std::path::Path;

fn files(total: usize, parts: usize) -> Vec<(String, Vec<u8>)> {
    (0..parts)
        .map(|i| {
            let n = total / parts;
            let bytes =
                (0..n).map(|j| (j.wrapping_mul(2_654_435_761) >> 7) as u8 ^ i as u8).collect();
            (format!("part{i}.bin"), bytes)
        })
        .collect()
}

/// The files written into `dir`; `sync` fsyncs each (the manifest writer fsyncs them itself,
/// as the run writers leave it to).
fn write_all(dir: &Path, files: &[(String, Vec<u8>)], sync: bool) -> std::io::Result<()> {
    for (name, bytes) in files {
        let mut f = std::fs::File::create(dir.join(name))?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
    }
    Ok(())
}

/// The durable write without a manifest: files fsynced in a fresh folder, the folder fsynced,
/// the old set moved aside and the new one renamed into place, the parent fsynced.
fn plain(dir: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let (tmp, prev) = (dir.with_extension("tmp"), dir.with_extension("prev"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    write_all(&tmp, files, true)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    if dir.exists() {
        let _ = std::fs::remove_dir_all(&prev);
        std::fs::rename(dir, &prev)?;
    }
    std::fs::rename(&tmp, dir)?;
    std::fs::File::open(dir.parent().unwrap())?.sync_all()
}

fn bench(c: &mut Criterion) {
    let root =
        std::env::temp_dir().join(format!("kestrel-bench-checkpoint-{}", std::process::id()));
    let stamp = Stamp::new("allo", serde_json::json!({"seed": 0, "lr": 1e-3}), "bench");
    for (label, set) in [("1.6MB", files(1_600_000, 4)), ("32MB", files(32 << 20, 4))] {
        let (a, b) = (root.join(format!("plain-{label}")), root.join(format!("manifest-{label}")));
        std::fs::create_dir_all(&root).unwrap();
        let mut g = c.benchmark_group(format!("checkpoint/{label}"));
        g.sample_size(20);
        g.bench_function("durable_write_without_manifest", |bch| {
            bch.iter(|| plain(&a, &set).unwrap())
        });
        g.bench_function("write_checkpoint_set", |bch| {
            bch.iter(|| {
                write_checkpoint_set(&b, &stamp, 7, |d| {
                    write_all(d, &set, false)
                        .map_err(|e| NnError::Io { path: d.display().to_string(), source: e })
                })
                .unwrap()
            })
        });
        g.bench_function("checkpoint_set_verify", |bch| {
            bch.iter(|| assert_eq!(checkpoint_set(&b, &stamp).unwrap().unwrap().step, 7))
        });
        g.bench_function("sha256_in_memory", |bch| {
            bch.iter(|| {
                set.iter().map(|(_, v)| Sha256::digest(black_box(v))[0]).fold(0u8, u8::wrapping_add)
            })
        });
        g.finish();
    }
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, bench);
criterion_main!(benches);
