//! kemu's state directory, snapshots and reset.
//!
//! # Design
//!
//! Everything kemu persists is one [`StateImage`]: each cloud part's state
//! (the cluster registry, CA keys and ports included, and each facade's own
//! state, through [`kemu_shared::Persist`]) and each cluster's object store
//! (objects, resourceVersion, watch history).
//!
//! With `--data-dir DIR`, kemu keeps it as a write-ahead log plus a snapshot:
//!
//! - **Log** (`wal-NNNNNNNN.jsonl`, [`wal`]): every committed Kubernetes write
//!   appends an `ev` line from inside the store's commit, under its lock, so
//!   the log is in resourceVersion order and the line is written before the
//!   API answers. Every mutating cloud API call appends the whole cloud state
//!   as a `cloud` line (when it changed) before its response leaves
//!   ([`facade_hook`]); cloud state is small, so a full line is simpler and
//!   safer than per-operation records. Changes made in-process rather than
//!   through a facade call (fixtures, a host using the registry) are logged
//!   at the end of start-up and by the background thread within 250 ms. A
//!   store opened fresh (a new cluster) or replaced (reset) is logged as a
//!   `store` block.
//! - **Compaction**: once the log holds [`COMPACT_AFTER`] bytes, a background
//!   thread starts a new log generation, writes the whole state to
//!   `snapshot.jsonl.tmp`, syncs it, renames it over `snapshot.jsonl` and
//!   deletes the older generations. A crash at any point leaves either the old
//!   snapshot with every log after it, or the new one with the new log.
//! - **Start-up** reads the snapshot, then every log generation after it, in
//!   order, skipping `ev` lines the snapshot already holds (by
//!   resourceVersion) and a torn last line; then writes a new generation.
//!
//! - **One process**: the directory's [`lock`] is taken before anything else
//!   touches it and held for the life of the process.
//!
//! Guarantees: no acknowledged write is lost to a crash of kemu (`kill -9`):
//! its line is in the kernel before the response is sent. Against power loss,
//! lines reach the disk within [`wal::SYNC_EVERY`] (group commit with
//! `fdatasync`), or before each answer with `--fsync always`.
//!
//! A snapshot file (`kemu snapshot FILE`, `--restore FILE`) has the same
//! format as `snapshot.jsonl`. Without `--data-dir` nothing touches the disk
//! and stores carry no log hook.

pub mod facade_hook;
pub mod lock;
pub mod progress;
pub mod record;
pub mod wal;

use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kemu_dataplane::store::{ClusterJournal, Event, EventSink, StoreImage};
use parking_lot::Mutex;

pub use progress::Progress;
pub use record::StateImage;
use record::{Line, Replay};
pub use wal::SyncPolicy;
use wal::Wal;

use crate::Kemu;

/// Log bytes after which the state directory is compacted into a snapshot.
pub const COMPACT_AFTER: u64 = 64 << 20;

/// Every how many sync ticks the background thread logs cloud changes made
/// outside the facades' HTTP calls (5 × 50 ms).
const CLOUD_CHECK_TICKS: u64 = 5;

/// The snapshot file of a state directory.
pub const SNAPSHOT: &str = "snapshot.jsonl";

/// What loading or writing persisted state can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PersistenceError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A file holds something kemu cannot read.
    #[error("{path}:{line}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A part refused its stored state.
    #[error(transparent)]
    Part(#[from] kemu_shared::PersistError),
    /// Another process holds the state directory's lock.
    #[error(
        "{dir} is in use by another kemu (pid {}): one state directory serves one kemu at a time",
        holder.map_or_else(|| "unknown".to_owned(), |p| p.to_string())
    )]
    Locked {
        /// The state directory.
        dir: PathBuf,
        /// The PID written in the lock file, if it could be read.
        holder: Option<u32>,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PersistenceError + '_ {
    move |source| PersistenceError::Io {
        path: path.to_owned(),
        source,
    }
}

/// How a state image is put in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyMode {
    /// Start-up (state directory, `--restore`): stores come back exactly,
    /// history included, so watches resume from resourceVersions taken before.
    Startup,
    /// Reset of a running kemu: objects come back, but resourceVersions keep
    /// counting up and older watches get 410 Expired, so no client mistakes
    /// the old state for a newer one.
    Reset,
}

/// The whole state of a running kemu, now.
pub fn capture(kemu: &Kemu) -> StateImage {
    // Stores first: a cluster created in between comes back with a fresh store.
    let stores = kemu
        .dataplane()
        .map(|dp| dp.engine().store_images().into_iter().collect())
        .unwrap_or_default();
    StateImage {
        cloud: capture_cloud(kemu),
        stores,
    }
}

fn capture_cloud(kemu: &Kemu) -> BTreeMap<String, serde_json::Value> {
    kemu.persisted_parts()
        .iter()
        .map(|p| (p.name().to_owned(), p.snapshot()))
        .collect()
}

/// Puts `image` in place in a running kemu: stores first, then each cloud
/// part (the registry last: it re-serves every cluster on its old port, and
/// retires clusters the image does not have).
pub fn apply(kemu: &Kemu, image: &StateImage, mode: ApplyMode) -> Result<(), PersistenceError> {
    apply_logged(kemu, image, mode, None)
}

/// [`apply`]; at start-up, `replayed` is the state directory the image came
/// from: its stores are already in the log, stores opened afterwards are not.
fn apply_logged(
    kemu: &Kemu,
    image: &StateImage,
    mode: ApplyMode,
    replayed: Option<&Shared>,
) -> Result<(), PersistenceError> {
    let dataplane = kemu.dataplane();
    if let Some(dp) = &dataplane {
        for (id, store) in &image.stores {
            let current = dp.engine().store(id).map(|s| s.resource_version());
            if mode == ApplyMode::Reset && current == Some(store.rv) {
                // Not written since start-up (every write bumps the
                // resourceVersion): nothing to put back, watches go on.
                continue;
            }
            let store = match mode {
                ApplyMode::Startup => store.clone(),
                ApplyMode::Reset => {
                    let now = dp.engine().last_resource_version(id).unwrap_or(0);
                    // One past anything a client has seen: every older
                    // resourceVersion is compacted.
                    let rv = store.rv.max(now) + 1;
                    StoreImage {
                        rv,
                        compacted: rv,
                        resources: store.resources.clone(),
                        history: Vec::new(),
                    }
                }
            };
            dp.engine().install_store(id, store);
        }
    }
    if let Some(shared) = replayed {
        shared.log_opened.store(true, Ordering::Release);
    }
    for part in kemu.persisted_parts() {
        let state = image
            .cloud
            .get(part.name())
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        part.restore(state)?;
    }
    if let Some(dp) = &dataplane {
        for id in image.stores.keys() {
            if kemu.registry().get(id).is_err() {
                dp.engine().drop_store(id);
            }
        }
    }
    Ok(())
}

/// `image` as a state file, in memory.
pub fn encode(image: &StateImage, wal_gen: u64) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_image(&mut out, image, wal_gen);
    out
}

fn write_image(w: &mut impl Write, image: &StateImage, wal_gen: u64) -> std::io::Result<()> {
    let header = Line {
        t: "header".into(),
        format: Some(record::FORMAT),
        wal_gen: Some(wal_gen),
        lines: Some(record::line_count(image)),
        ..Line::default()
    };
    serde_json::to_writer(&mut *w, &header)?;
    w.write_all(b"\n")?;
    w.write_all(&record::cloud_line(&image.cloud))?;
    for (id, store) in &image.stores {
        record::write_store(w, id, store)?;
    }
    Ok(())
}

/// Writes `image` to `path` atomically (temporary file, sync, rename).
pub fn write_state_file(
    path: &Path,
    image: &StateImage,
    wal_gen: u64,
) -> Result<(), PersistenceError> {
    let tmp = path.with_extension("jsonl.tmp");
    let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write_image(&mut w, image, wal_gen).map_err(io(&tmp))?;
    let file = w.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        wal::sync_dir(dir).map_err(io(dir))?;
    }
    Ok(())
}

/// Feeds every line of `path` to `replay`. A last line that does not parse is
/// a write torn by a crash (never acknowledged) and is ignored in a log.
fn replay_file(
    path: &Path,
    replay: &mut Replay,
    progress: &mut Progress,
    is_log: bool,
) -> Result<(), PersistenceError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(io(path))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        progress.advance(n as u64);
        let complete = buf.last() == Some(&b'\n');
        let parsed: Result<Line, String> = serde_json::from_slice(&buf).map_err(|e| e.to_string());
        match parsed.and_then(|line| replay.apply(line)) {
            Ok(()) => {}
            Err(reason) if is_log && !complete => {
                tracing::warn!(path = %path.display(), line = number, %reason, "ignoring a torn last line");
                return Ok(());
            }
            Err(reason) => {
                return Err(PersistenceError::Corrupt {
                    path: path.to_owned(),
                    line: number,
                    reason,
                });
            }
        }
    }
}

/// Reads a state file (`kemu snapshot` output), with progress on stderr.
pub fn read_state_file(path: &Path) -> Result<StateImage, PersistenceError> {
    let size = std::fs::metadata(path).map_err(io(path))?.len();
    let mut progress = Progress::new(&format!("restoring {}", path.display()), size);
    let mut replay = Replay::new();
    replay_file(path, &mut replay, &mut progress, false)?;
    if replay.header.is_none() {
        return Err(PersistenceError::Corrupt {
            path: path.to_owned(),
            line: 1,
            reason: "not a kemu state file (no header line)".into(),
        });
    }
    let image = replay.finish();
    progress.finish(&summary(&image));
    Ok(image)
}

fn summary(image: &StateImage) -> String {
    format!(
        "{} clusters, {} objects",
        image.stores.len(),
        image.object_count()
    )
}

/// A state directory kemu is writing to.
#[derive(Clone, Debug)]
pub struct Persistence {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    wal: Wal,
    /// The last `cloud` line written, held while a new one is taken and
    /// written so lines land in the order their states were taken.
    last_cloud: Mutex<Vec<u8>>,
    /// Off while start-up puts the stored state back: those stores are
    /// already in the log.
    log_opened: AtomicBool,
    compacting: Mutex<()>,
    compact_after: u64,
    stop: AtomicBool,
    /// Held until [`Persistence::stop`] (or the process's end).
    lock: Mutex<Option<lock::DirLock>>,
}

impl Persistence {
    /// Opens (creating it if needed) the state directory `dir`: reads its
    /// snapshot and logs, with progress on stderr, and starts a new log
    /// generation. Returns the state it holds (empty for a new directory).
    pub fn open(dir: &Path, policy: SyncPolicy) -> Result<(Self, StateImage), PersistenceError> {
        Self::open_with(dir, policy, COMPACT_AFTER)
    }

    /// [`Persistence::open`], compacting after `compact_after` log bytes.
    pub fn open_with(
        dir: &Path,
        policy: SyncPolicy,
        compact_after: u64,
    ) -> Result<(Self, StateImage), PersistenceError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        // Before anything else touches the directory.
        let lock = lock::acquire(dir)?;
        let snapshot = dir.join(SNAPSHOT);
        let generations = wal::generations(dir).map_err(io(dir))?;
        let mut files: Vec<PathBuf> = Vec::new();
        let mut total = 0;
        let has_snapshot = snapshot.is_file();
        if has_snapshot {
            files.push(snapshot.clone());
        }
        for generation in &generations {
            files.push(dir.join(wal::file_name(*generation)));
        }
        for f in &files {
            total += std::fs::metadata(f).map_err(io(f))?.len();
        }
        let mut progress = if total > 0 {
            Progress::new(&format!("replaying {}", dir.display()), total)
        } else {
            Progress::quiet()
        };
        let mut replay = Replay::new();
        let mut first_gen = 0;
        if has_snapshot {
            replay_file(&snapshot, &mut replay, &mut progress, false)?;
            first_gen = replay.header.as_ref().and_then(|h| h.wal_gen).unwrap_or(0);
        }
        for generation in generations.iter().filter(|g| **g >= first_gen) {
            let path = dir.join(wal::file_name(*generation));
            replay_file(&path, &mut replay, &mut progress, true)?;
        }
        let image = replay.finish();
        progress.finish(&summary(&image));
        let next = generations
            .last()
            .map_or(first_gen, |g| g + 1)
            .max(first_gen);
        let wal = Wal::open(dir, next, policy).map_err(io(dir))?;
        Ok((
            Self {
                shared: Arc::new(Shared {
                    dir: dir.to_owned(),
                    wal,
                    last_cloud: Mutex::new(Vec::new()),
                    log_opened: AtomicBool::new(false),
                    compacting: Mutex::new(()),
                    compact_after,
                    stop: AtomicBool::new(false),
                    lock: Mutex::new(Some(lock)),
                }),
            },
            image,
        ))
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Puts `image` (the directory's own state, or a restored one) in place in
    /// `kemu` and logs every later write; starts the thread that syncs and
    /// compacts the log. With `rewrite`, the directory is rewritten to hold
    /// exactly the new state (a `--restore` into a state directory).
    pub fn attach(
        &self,
        kemu: &Kemu,
        image: &StateImage,
        rewrite: bool,
    ) -> Result<(), PersistenceError> {
        if let Some(dp) = kemu.dataplane() {
            dp.engine()
                .set_journal(Some(Arc::new(Journal(self.shared.clone()))));
        }
        // A restored image is not in this directory's log: log its stores.
        let replayed = (!rewrite).then_some(&*self.shared);
        if rewrite {
            self.shared.log_opened.store(true, Ordering::Release);
        }
        apply_logged(kemu, image, ApplyMode::Startup, replayed)?;
        self.shared.log_opened.store(true, Ordering::Release);
        if rewrite {
            self.compact(kemu)?;
        } else {
            // Whatever start-up itself changed (fixtures, a first cloud state).
            self.record_cloud(kemu);
        }
        let (me, kemu) = (self.clone(), kemu.clone());
        let spawned = std::thread::Builder::new()
            .name("kemu-wal".into())
            .spawn(move || me.background(&kemu));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "state directory: no sync thread; lines reach the disk when the OS writes them");
        }
        Ok(())
    }

    fn background(&self, kemu: &Kemu) {
        let mut tick: u64 = 0;
        while !self.shared.stop.load(Ordering::Acquire) {
            std::thread::sleep(wal::SYNC_EVERY);
            tick += 1;
            // Cloud changes made other than through a facade call (a host
            // calling the registry in-process) are caught here, within
            // CLOUD_CHECK_TICKS ticks; facade calls log before they answer.
            if tick.is_multiple_of(CLOUD_CHECK_TICKS) {
                self.record_cloud(kemu);
            }
            self.shared.wal.sync();
            if self.shared.wal.written() >= self.shared.compact_after
                && let Err(e) = self.compact(kemu)
            {
                tracing::error!(error = %e, "state directory: compaction failed");
            }
        }
    }

    /// Logs the whole cloud state if it changed since the last time: called
    /// after every mutating cloud API call, before its response is sent.
    pub fn record_cloud(&self, kemu: &Kemu) {
        let mut last = self.shared.last_cloud.lock();
        let line = record::cloud_line(&capture_cloud(kemu));
        if *last != line {
            self.shared.wal.append(&line);
            *last = line;
        }
    }

    /// Writes the whole state as the directory's snapshot and drops the logs
    /// it covers.
    pub fn compact(&self, kemu: &Kemu) -> Result<(), PersistenceError> {
        let _one = self.shared.compacting.lock();
        let dir = &self.shared.dir;
        let next = self.shared.wal.rotate().map_err(io(dir))?;
        let image = capture(kemu);
        write_state_file(&dir.join(SNAPSHOT), &image, next)?;
        self.shared.wal.remove_before(next).map_err(io(dir))?;
        tracing::info!(
            objects = image.object_count(),
            generation = next,
            "state directory compacted"
        );
        Ok(())
    }

    /// Syncs the log, stops the background thread and releases the
    /// directory's lock.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wal.sync();
        self.shared.lock.lock().take();
    }
}

/// The engine's hook: one sink per cluster, all into the one log.
#[derive(Debug)]
struct Journal(Arc<Shared>);

impl ClusterJournal for Journal {
    fn sink(&self, cluster: &str) -> Arc<dyn EventSink> {
        Arc::new(ClusterSink {
            cluster: cluster.to_owned(),
            shared: self.0.clone(),
        })
    }

    fn opened(&self, cluster: &str, image: &StoreImage) {
        if !self.0.log_opened.load(Ordering::Acquire) {
            return;
        }
        let mut block = Vec::new();
        // One append: the block is never split by another cluster's lines.
        if record::write_store(&mut block, cluster, image).is_ok() {
            self.0.wal.append(&block);
        }
    }
}

struct ClusterSink {
    cluster: String,
    shared: Arc<Shared>,
}

impl EventSink for ClusterSink {
    fn committed(&self, event: &Event, at: chrono::DateTime<chrono::Utc>) {
        self.shared
            .wal
            .append(&record::event_line(&self.cluster, event, at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_dataplane::store::{ObjectKey, Store};
    use kemu_shared::{ClusterSpec, OwnerScope};
    use serde_json::json;

    fn spec() -> ClusterSpec {
        ClusterSpec {
            scope: OwnerScope::Eks {
                account: "000000000000".into(),
                region: "us-east-1".into(),
            },
            name: "c".into(),
            version: "1.34".into(),
            node_pools: vec![],
            tags: Default::default(),
            provisioning: std::time::Duration::ZERO,
            extra: serde_json::Value::Null,
        }
    }

    fn create(store: &dyn Store, i: usize) {
        let key = ObjectKey::new("configmaps", "default", &format!("cm-{i}"));
        store
            .create(
                &key,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"i": i}}),
            )
            .unwrap();
    }

    #[test]
    fn snapshot_plus_log_replays_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let kemu = Kemu::builder().build().unwrap();
        let (p, image) = Persistence::open(dir.path(), SyncPolicy::Always).unwrap();
        assert_eq!(image.object_count(), 0);
        p.attach(&kemu, &image, false).unwrap();
        let cluster = kemu.registry().create(spec()).unwrap();
        p.record_cloud(&kemu);
        let store = kemu
            .dataplane()
            .unwrap()
            .engine()
            .store(&cluster.id)
            .unwrap();
        for i in 0..50 {
            create(store.as_ref(), i);
        }
        p.compact(&kemu).unwrap();
        for i in 50..80 {
            create(store.as_ref(), i);
        }
        let rv = store.resource_version();
        p.stop();
        assert_eq!(
            wal::generations(dir.path()).unwrap().len(),
            1,
            "older logs removed"
        );

        let (_, again) = Persistence::open(dir.path(), SyncPolicy::Group).unwrap();
        let restored = &again.stores[&cluster.id];
        assert!(restored.rv >= rv);
        assert_eq!(
            restored.resources["configmaps"]
                .iter()
                .filter(|(k, _)| k.1.starts_with("cm-"))
                .count(),
            80
        );
        let registry = &again.cloud["registry"];
        assert_eq!(registry[0]["id"], json!(cluster.id));
        assert_eq!(
            registry[0]["ca"]["ca_cert_pem"],
            json!(cluster.ca.cert_pem())
        );
    }
}
