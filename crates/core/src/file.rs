//! Writing files so that a reader never sees half of one (run folders, figures, manifests).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Which step of [`write_atomic`] failed, on which file.
#[derive(Debug)]
pub struct WriteError {
    /// The file being written (the target, not its temporary file).
    pub path: PathBuf,
    /// The step: "cannot create", "cannot write", "cannot sync" (the temporary file beside
    /// `path`) or "cannot replace" (the rename onto `path`).
    pub doing: &'static str,
    /// What the system said.
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically: a temporary file beside it (named after the process and
/// a per-process count, so two writers of one file never share one), fsync, rename. A reader
/// sees the old file or the new one, never a torn one; on failure the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or("file".into(), |n| n.to_string_lossy().into_owned());
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.tmp{}-{n}", std::process::id()));
    let fail = |doing| move |source| WriteError { path: path.to_path_buf(), doing, source };
    let mut f = std::fs::File::create(&tmp).map_err(fail("cannot create"))?;
    let written = f
        .write_all(bytes)
        .map_err(fail("cannot write"))
        .and_then(|()| f.sync_all().map_err(fail("cannot sync")));
    drop(f);
    let done = written.and_then(|()| std::fs::rename(&tmp, path).map_err(fail("cannot replace")));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second write replaces the first and leaves no temporary file; a write that cannot
    /// create its file names the step and the path; one that cannot replace its target (a
    /// folder) removes its temporary file.
    #[test]
    fn atomic_writes_replace_the_file_and_leave_no_temporary() {
        let dir = std::env::temp_dir().join(format!("kestrel-core-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let e = write_atomic(&dir.join("missing/a.txt"), b"x").unwrap_err();
        assert_eq!(e.doing, "cannot create");
        assert!(e.path.to_string_lossy().contains("missing"), "{e:?}");
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/x"), b"keeps the folder non-empty").unwrap();
        let e = write_atomic(&dir.join("sub"), b"x").unwrap_err();
        assert_eq!(e.doing, "cannot replace");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "the temporary file is gone");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
