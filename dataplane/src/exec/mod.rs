//! Simulated containers to exec into: what a container of a Pod would see,
//! assembled from the Pod's spec and the cluster's objects, and a small shell
//! that runs in it.
//!
//! # Layout
//!
//! - [`fs`]: a container's filesystem: the image's tree with the volumes
//!   mounted over it, links followed, read-only mounts refusing writes.
//! - [`volumes`]: what each volume holds (ConfigMap, Secret, projected with
//!   the ServiceAccount token, downward API, emptyDir, claims, hostPath) and
//!   the kubelet's `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf`.
//! - [`env`]: the environment as the kubelet computes it.
//! - [`shell`]: the shell (grammar, expansion, the commands).
//! - [`tar`]: `tar` as `kubectl cp` runs it.
//! - [`ports`]: what answers on a Pod's ports (the servers of nginx, httpd
//!   and agnhost) when a client port-forwards to it.
//! - [`process`]: a container's own shell script, run by the kubelet on a
//!   clock of its own (its exit code and how long it runs).
//! - [`session`]: one exec or attach: the shell on its own thread, fed by a
//!   stream's stdin, with a terminal's line discipline under `tty`.
//!
//! What a container writes is kept while its Pod lives: its own files per
//! container, emptyDirs per Pod (shared by its containers), claims per
//! PersistentVolumeClaim and hostPaths per Node. Projected files are
//! re-read from their objects at the kubelet's sync points, a minute apart
//! on the cluster's clock, so a ConfigMap change reaches a mounted file
//! within a minute, as on a node (a `subPath` mount never sees it, as on a
//! node).

pub mod env;
pub mod fs;
pub mod ports;
pub mod process;
pub mod session;
pub mod shell;
pub mod tar;
pub mod volumes;

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::Value;

use self::fs::{Fs, Node, SharedTree, components, put, shared};
use self::volumes::{Ctx, Source};
use crate::controllers::obj;

/// How often the kubelet re-syncs a Pod's projected volumes (its
/// `syncFrequency`), in seconds.
pub const SYNC_PERIOD: i64 = 60;

/// A container to run commands in.
#[derive(Debug, Clone)]
pub struct Container {
    /// Its filesystem.
    pub fs: Fs,
    /// Its environment.
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub cwd: String,
    /// The Pod's hostname.
    pub hostname: String,
    /// Its image.
    pub image: String,
}

#[derive(Debug)]
struct Volume {
    tree: SharedTree,
    /// The files last written (projected volumes) and when.
    files: Option<Vec<(String, Vec<u8>, u32)>>,
    synced: i64,
}

#[derive(Debug, Default)]
struct PodBox {
    roots: HashMap<String, SharedTree>,
    volumes: HashMap<String, Volume>,
    /// Each container as last opened, with its mounts: what its server
    /// serves when the kubelet probes it.
    opened: HashMap<String, Container>,
}

#[derive(Debug, Default)]
struct State {
    pods: HashMap<String, PodBox>,
    claims: HashMap<(String, String), SharedTree>,
    hosts: HashMap<(String, String), SharedTree>,
    serial: u64,
    /// How many Pod boxes make the next look for gone Pods.
    gc_at: usize,
}

/// Opens a Pod's containers as an exec into them would find them, for the
/// kubelet (the engine binds the cluster's store and record).
#[derive(Clone)]
pub struct Opener(std::sync::Arc<OpenFn>);

type OpenFn = dyn Fn(&Value, &Value) -> Container + Send + Sync;

impl Opener {
    /// An opener of (Pod, container).
    pub fn new(f: impl Fn(&Value, &Value) -> Container + Send + Sync + 'static) -> Self {
        Opener(std::sync::Arc::new(f))
    }

    /// The Pod's container.
    pub fn open(&self, pod: &Value, container: &Value) -> Container {
        (self.0)(pod, container)
    }
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opener")
    }
}

/// The Pod's container as it stands in the cluster: its volumes from the
/// store, the ServiceAccount token signed for the cluster.
pub fn open(
    sandboxes: &Sandboxes,
    store: &dyn crate::store::Store,
    record: &kemu_shared::ClusterRecord,
    pod: &Value,
    container: &Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Container {
    let node = pod["spec"]["nodeName"]
        .as_str()
        .and_then(|n| store.get(&crate::store::ObjectKey::new("nodes", "", n)));
    let ctx = Ctx {
        store,
        record,
        pod,
        node: node.as_deref(),
        now,
    };
    sandboxes.open(&ctx, container)
}

/// Told the namespace and name of a Pod whose containers' files an exec
/// may have changed.
type Watcher = Box<dyn Fn(&str, &str) + Send + Sync>;

/// The containers of one cluster that have been exec'd into.
#[derive(Default)]
pub struct Sandboxes {
    state: Mutex<State>,
    watchers: Mutex<HashMap<&'static str, Watcher>>,
}

impl std::fmt::Debug for Sandboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandboxes")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// The Pod's hostname (`spec.hostname` or its name, at most 63 characters).
pub fn hostname(pod: &Value) -> String {
    let name = pod["spec"]["hostname"]
        .as_str()
        .filter(|h| !h.is_empty())
        .unwrap_or(obj::name(pod));
    let mut h: String = name.chars().take(63).collect();
    while h.ends_with(['-', '.']) {
        h.pop();
    }
    h
}

impl Sandboxes {
    /// Calls `watcher` after each exec into a Pod of the cluster ends (the
    /// kubelet probes its containers again); a second watcher of the same
    /// name (controllers restarted) replaces the first.
    pub fn subscribe(
        &self,
        name: &'static str,
        watcher: impl Fn(&str, &str) + Send + Sync + 'static,
    ) {
        self.watchers.lock().insert(name, Box::new(watcher));
    }

    /// An exec into the Pod ended.
    pub fn changed(&self, namespace: &str, name: &str) {
        for w in self.watchers.lock().values() {
            w(namespace, name);
        }
    }

    /// The status code a kubelet's HTTP probe of `path` on `port` reads
    /// from the container (or the refusal), once it has been exec'd into;
    /// `None` for a container as its image made it, whose server answers
    /// its probes as it always does.
    pub fn probe(
        &self,
        pod_uid: &str,
        container: &Value,
        (host, port): (&str, u16),
        path: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<Result<u16, String>> {
        let name = container["name"].as_str().unwrap_or_default();
        let opened = self
            .state
            .lock()
            .pods
            .get(pod_uid)?
            .opened
            .get(name)?
            .clone();
        let mut listeners = ports::Listeners::new(pod_uid);
        if let Some((p, server)) = ports::server(container) {
            listeners.add(p, server, opened);
        }
        Some(
            listeners
                .connect(port)
                .map(|mut c| c.probe(&format!("{host}:{port}"), path, now)),
        )
    }

    /// The named container of the Pod, as it stands now.
    pub fn open(&self, ctx: &Ctx, container: &Value) -> Container {
        let now = ctx.now.timestamp();
        let uid = obj::uid(ctx.pod).to_owned();
        let name = container["name"].as_str().unwrap_or_default().to_owned();
        let image = container["image"].as_str().unwrap_or_default().to_owned();
        let host = hostname(ctx.pod);
        let mut state = self.state.lock();
        // Forget gone Pods once the boxes have doubled since the last look,
        // so opening stays cheap when the kubelet opens every scripted Pod.
        if state.pods.len() >= state.gc_at {
            let live: std::collections::HashSet<String> = ctx
                .store
                .snapshot("pods")
                .iter(None, None)
                .map(|(_, p)| obj::uid(&p).to_owned())
                .collect();
            state.pods.retain(|uid, _| live.contains(uid));
            state.gc_at = (state.pods.len() * 2).max(64);
        }
        state.serial += 1;
        let serial = state.serial;
        let ns = obj::namespace(ctx.pod).to_owned();
        let node_name = ctx.pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut trees: HashMap<String, (SharedTree, bool)> = HashMap::new();
        for v in ctx.pod["spec"]["volumes"].as_array().into_iter().flatten() {
            let Some(vname) = v["name"].as_str() else {
                continue;
            };
            let source = volumes::source(ctx, v);
            let (tree, read_only) = match source {
                Source::Claim(c) => {
                    let t = state
                        .claims
                        .entry((ns.clone(), c))
                        .or_insert_with(|| shared(Node::dir(0o755, now)))
                        .clone();
                    (t, false)
                }
                Source::Host(p) => {
                    let t = state
                        .hosts
                        .entry((node_name.clone(), p))
                        .or_insert_with(|| shared(Node::dir(0o755, now)))
                        .clone();
                    (t, false)
                }
                Source::Scratch => {
                    let pod = state.pods.entry(uid.clone()).or_default();
                    let vol = pod
                        .volumes
                        .entry(vname.to_owned())
                        .or_insert_with(|| Volume {
                            tree: shared(Node::dir(0o777, now)),
                            files: None,
                            synced: now,
                        });
                    (vol.tree.clone(), false)
                }
                Source::Projected(files) => {
                    let pod = state.pods.entry(uid.clone()).or_default();
                    let vol = pod
                        .volumes
                        .entry(vname.to_owned())
                        .or_insert_with(|| Volume {
                            tree: shared(volumes::atomic_tree(&files, ctx.now, serial)),
                            files: Some(files.clone()),
                            synced: now,
                        });
                    // The kubelet re-reads the objects at each sync point.
                    let elapsed = now - vol.synced;
                    if elapsed >= SYNC_PERIOD {
                        vol.synced += elapsed - elapsed % SYNC_PERIOD;
                        if vol.files.as_ref() != Some(&files) {
                            *vol.tree.lock() = volumes::atomic_tree(&files, ctx.now, serial);
                            vol.files = Some(files);
                        }
                    }
                    (vol.tree.clone(), true)
                }
            };
            trees.insert(vname.to_owned(), (tree, read_only));
        }
        let pod = state.pods.entry(uid).or_default();
        let fresh = !pod.roots.contains_key(&name);
        let root = pod
            .roots
            .entry(name.clone())
            .or_insert_with(|| shared(volumes::image_root(ctx, &image, &host, now)))
            .clone();
        drop(state);
        let mut fs = Fs::new(root.clone());
        for m in container["volumeMounts"].as_array().into_iter().flatten() {
            let (Some(vname), Some(path)) = (m["name"].as_str(), m["mountPath"].as_str()) else {
                continue;
            };
            let Some((tree, projected)) = trees.get(vname) else {
                continue;
            };
            let read_only = *projected || m["readOnly"].as_bool() == Some(true);
            let sub = m["subPath"].as_str().unwrap_or_default();
            if sub.is_empty() {
                fs.mount(path, tree.clone(), read_only);
            } else if *projected {
                // A projected subPath is a copy made when the container starts.
                if fresh && let Ok(data) = Fs::new(tree.clone()).read("/", sub) {
                    put(
                        &mut root.lock(),
                        &components("/", path),
                        Node::file(data, 0o644, now),
                    );
                }
            } else {
                fs.mount_sub(path, tree.clone(), sub, read_only);
            }
        }
        let env = env::compute(ctx.store, ctx.pod, container, ctx.node, &host);
        let cwd = container["workingDir"]
            .as_str()
            .filter(|w| w.starts_with('/'))
            .unwrap_or("/")
            .to_owned();
        if cwd != "/" {
            let _ = fs.mkdir("/", &cwd, true, now);
        }
        let container = Container {
            fs,
            env,
            cwd,
            hostname: host,
            image,
        };
        let mut state = self.state.lock();
        if let Some(pod) = state.pods.get_mut(obj::uid(ctx.pod)) {
            pod.opened.insert(name, container.clone());
        }
        container
    }
}
