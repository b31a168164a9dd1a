//! The write-ahead log: numbered files `wal-NNNNNNNN.jsonl` in the state
//! directory, appended one whole line per `write(2)`.
//!
//! Durability: a line is in the kernel before the write it records is
//! acknowledged, so a `kill -9` of kemu loses nothing acknowledged. Reaching
//! the disk is grouped: a flusher calls `fdatasync` at most every
//! [`SYNC_EVERY`] while lines are pending, so a power cut loses at most that
//! much; `--fsync always` syncs each line before it is acknowledged instead.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// How often pending lines are synced to disk (group commit).
pub const SYNC_EVERY: Duration = Duration::from_millis(50);

/// When lines reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SyncPolicy {
    /// `fdatasync` every [`SYNC_EVERY`] while lines are pending (group commit).
    #[default]
    Group,
    /// `fdatasync` after every line, before the write is acknowledged.
    Always,
}

/// The file name of WAL generation `generation`.
pub fn file_name(generation: u64) -> String {
    format!("wal-{generation:08}.jsonl")
}

/// The generation a file name holds, if it is a WAL file.
pub fn generation_of(name: &str) -> Option<u64> {
    name.strip_prefix("wal-")?
        .strip_suffix(".jsonl")?
        .parse()
        .ok()
}

/// Every WAL generation in `dir`, ascending.
pub fn generations(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut out: Vec<u64> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| generation_of(&e.file_name().to_string_lossy()))
        .collect();
    out.sort_unstable();
    Ok(out)
}

struct Current {
    generation: u64,
    file: Arc<File>,
}

/// The open log. Appends are serialized; the order of lines is the order of
/// appends.
pub struct Wal {
    dir: PathBuf,
    policy: SyncPolicy,
    current: Mutex<Current>,
    /// Bytes appended since the last compaction.
    written: AtomicU64,
    dirty: AtomicBool,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .field("generation", &self.current.lock().generation)
            .finish_non_exhaustive()
    }
}

fn open(dir: &Path, generation: u64) -> std::io::Result<Arc<File>> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(file_name(generation)))?;
    sync_dir(dir)?;
    Ok(Arc::new(file))
}

/// Makes a directory entry (a new or renamed file) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Wal {
    /// Opens generation `generation` of the log in `dir` for appending.
    pub fn open(dir: &Path, generation: u64, policy: SyncPolicy) -> std::io::Result<Self> {
        Ok(Self {
            dir: dir.to_owned(),
            policy,
            current: Mutex::new(Current {
                generation,
                file: open(dir, generation)?,
            }),
            written: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
        })
    }

    /// Appends one or more whole lines with one `write(2)`.
    pub fn append(&self, lines: &[u8]) {
        let current = self.current.lock();
        let result = (&*current.file).write_all(lines).and_then(|()| {
            if self.policy == SyncPolicy::Always {
                current.file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = result {
            // The write already happened in memory; say loudly that it is not
            // durable rather than fail a request that was applied.
            tracing::error!(error = %e, "state directory: cannot append to the write-ahead log");
        }
        self.written
            .fetch_add(lines.len() as u64, Ordering::Relaxed);
        self.dirty.store(true, Ordering::Release);
    }

    /// Syncs pending lines to disk, if any.
    pub fn sync(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let file = self.current.lock().file.clone();
            if let Err(e) = file.sync_data() {
                tracing::error!(error = %e, "state directory: fdatasync failed");
            }
        }
    }

    /// Bytes appended since the last [`Wal::rotate`].
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Starts the next generation: later lines go to a new file. Returns the
    /// new generation; the old file is synced.
    pub fn rotate(&self) -> std::io::Result<u64> {
        let mut current = self.current.lock();
        let next = current.generation + 1;
        let file = open(&self.dir, next)?;
        let old = std::mem::replace(&mut current.file, file);
        current.generation = next;
        self.written.store(0, Ordering::Relaxed);
        drop(current);
        old.sync_data()?;
        Ok(next)
    }

    /// Removes every generation before `keep_from`.
    pub fn remove_before(&self, keep_from: u64) -> std::io::Result<()> {
        for generation in generations(&self.dir)? {
            if generation < keep_from {
                std::fs::remove_file(self.dir.join(file_name(generation)))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_rotate_and_old_generations_go() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 3, SyncPolicy::Always).unwrap();
        wal.append(b"{\"t\":\"a\"}\n");
        assert_eq!(wal.written(), 10);
        assert_eq!(wal.rotate().unwrap(), 4);
        wal.append(b"{\"t\":\"b\"}\n");
        wal.sync();
        assert_eq!(generations(dir.path()).unwrap(), [3, 4]);
        wal.remove_before(4).unwrap();
        assert_eq!(generations(dir.path()).unwrap(), [4]);
        let text = std::fs::read_to_string(dir.path().join(file_name(4))).unwrap();
        assert_eq!(text, "{\"t\":\"b\"}\n");
        assert_eq!(generation_of("wal-00000012.jsonl"), Some(12));
        assert_eq!(generation_of("snapshot.jsonl"), None);
    }
}
