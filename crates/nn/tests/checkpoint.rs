//! A damaged checkpoint folder never resumes silently: one random byte corrupted, one file
//! truncated, deleted or swapped with its twin in the other set, in either set, always gives
//! a set whose data is exactly what was written at its step (the previous one with a note
//! saying why) or a clear error naming a file of the folder.

use kestrel_nn::{MANIFEST, Stamp, checkpoint_set, write_checkpoint_set};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const FILES: [&str; 3] = ["encoder.safetensors", "state.safetensors", "replay.bin"];

/// The bytes of file `f` of the set taken at `step` (lengths differ per step and file).
fn content(step: u64, f: usize) -> Vec<u8> {
    (0..(40 + 13 * f + step as usize))
        .map(|i| (i as u64 * 31 + step * 7 + f as u64) as u8)
        .collect()
}

fn stamp() -> Stamp {
    Stamp::new("allo", serde_json::json!({"map": "builtin:rooms-2-3", "lr": 0.001}), "abc")
}

fn write(dir: &Path, step: u64) {
    write_checkpoint_set(dir, &stamp(), step, |tmp| -> Result<(), kestrel_nn::NnError> {
        for (f, name) in FILES.iter().enumerate() {
            std::fs::write(tmp.join(name), content(step, f)).unwrap();
        }
        Ok(())
    })
    .unwrap();
}

#[derive(Clone, Debug)]
enum Damage {
    /// XOR one byte at a fraction of the file's length with a non-zero mask.
    Flip(f64, u8),
    /// Cut to a fraction of its length.
    Truncate(f64),
    /// Remove it.
    Delete,
    /// Exchange it with the same file of the other set.
    Swap,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0.0..1.0f64, 1u8..=255).prop_map(|(at, m)| Damage::Flip(at, m)),
        (0.0..1.0f64).prop_map(Damage::Truncate),
        Just(Damage::Delete),
        Just(Damage::Swap),
    ]
}

fn apply(dir: &Path, newest: bool, file: &str, d: &Damage) {
    let (set, other) = if newest {
        (dir.to_path_buf(), dir.with_extension("prev"))
    } else {
        (dir.with_extension("prev"), dir.to_path_buf())
    };
    let p = set.join(file);
    let mut bytes = std::fs::read(&p).unwrap();
    match d {
        Damage::Flip(at, m) => {
            let i = ((*at * bytes.len() as f64) as usize).min(bytes.len() - 1);
            bytes[i] ^= m;
            std::fs::write(&p, bytes).unwrap();
        }
        Damage::Truncate(at) => {
            bytes.truncate((*at * bytes.len() as f64) as usize);
            std::fs::write(&p, bytes).unwrap();
        }
        Damage::Delete => std::fs::remove_file(&p).unwrap(),
        Damage::Swap => {
            let q = other.join(file);
            let theirs = std::fs::read(&q).unwrap();
            std::fs::write(&q, bytes).unwrap();
            std::fs::write(&p, theirs).unwrap();
        }
    }
}

fn folder(case: u64) -> PathBuf {
    let d = std::env::temp_dir()
        .join(format!("kestrel-ckpt-prop-{}-{case}", std::process::id()))
        .join("checkpoint");
    let _ = std::fs::remove_dir_all(d.parent().unwrap());
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_damaged_file_gives_a_verified_set_or_a_clear_error(
        newest in any::<bool>(),
        which in 0..FILES.len() + 1,
        d in damage(),
        case in any::<u64>(),
    ) {
        let dir = folder(case);
        write(&dir, 10);
        write(&dir, 20);
        let file = FILES.get(which).copied().unwrap_or(MANIFEST);
        apply(&dir, newest, file, &d);
        match (checkpoint_set(&dir, &stamp()), &d) {
            (Ok(Some(v)), Damage::Swap) => prop_assert!(false, "a swapped file resumed: {:?}", v),
            (Ok(Some(v)), _) => {
                // Whatever set is taken holds exactly the data written at its step.
                for (f, name) in FILES.iter().enumerate() {
                    prop_assert_eq!(std::fs::read(v.path.join(name)).unwrap(), content(v.step, f));
                }
                if !newest {
                    prop_assert_eq!((v.step, v.note), (20, None));
                } else if v.step == 20 {
                    // Only a change that leaves the manifest's meaning whole (JSON whitespace)
                    // passes, and the data is the step's, as checked above.
                    prop_assert!(file == MANIFEST && matches!(d, Damage::Flip(..)), "{:?}", d);
                } else {
                    prop_assert_eq!(v.step, 10);
                    let note = v.note.unwrap_or_default();
                    prop_assert!(note.contains(file) && note.contains("which verifies"), "{}", note);
                }
            }
            (Ok(None), _) => prop_assert!(false, "a folder with sets found no set"),
            (Err(e), _) => {
                // Both sets are damaged only by a swap; the error names the file.
                let e = e.to_string();
                prop_assert!(matches!(d, Damage::Swap), "{:?}: {}", d, e);
                prop_assert!(e.contains(&dir.display().to_string()) && e.contains(file), "{}", e);
            }
        }
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
