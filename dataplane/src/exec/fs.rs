//! A container's filesystem: the image's root tree with volumes mounted over
//! it, each mount its own tree (shared between the Pod's containers where the
//! volume is, as an emptyDir is) and read-only where the kubelet mounts it so.
//! Paths are resolved as a kernel does: symlinks followed (the `..data` links
//! of ConfigMap and Secret volumes), mounts chosen by the longest prefix.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use thiserror::Error;

/// How a path operation fails, in the words `strerror` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Errno {
    /// ENOENT.
    #[error("No such file or directory")]
    NotFound,
    /// ENOTDIR.
    #[error("Not a directory")]
    NotDir,
    /// EISDIR.
    #[error("Is a directory")]
    IsDir,
    /// EEXIST.
    #[error("File exists")]
    Exists,
    /// EROFS.
    #[error("Read-only file system")]
    ReadOnly,
    /// ENOTEMPTY.
    #[error("Directory not empty")]
    NotEmpty,
    /// ELOOP.
    #[error("Symbolic link loop")]
    Loop,
    /// EBUSY (a mount point).
    #[error("Resource busy")]
    Busy,
    /// ENAMETOOLONG: a path past [`PATH_MAX`] or a name past [`NAME_MAX`].
    #[error("File name too long")]
    NameTooLong,
}

/// Linux's longest path, in bytes; it also bounds how deep a tree can grow.
pub const PATH_MAX: usize = 4096;
/// Linux's longest file name, in bytes.
pub const NAME_MAX: usize = 255;

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory: its entries by name.
    Dir(BTreeMap<String, Node>, Meta),
    /// A regular file.
    File(Vec<u8>, Meta),
    /// A symbolic link to its target.
    Link(String),
}

/// Mode bits and modification time (seconds since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Permission bits (0o644, 0o755, …).
    pub mode: u32,
    /// Modification time.
    pub mtime: i64,
}

impl Node {
    /// An empty directory.
    pub fn dir(mode: u32, mtime: i64) -> Node {
        Node::Dir(BTreeMap::new(), Meta { mode, mtime })
    }

    /// A file.
    pub fn file(data: impl Into<Vec<u8>>, mode: u32, mtime: i64) -> Node {
        Node::File(data.into(), Meta { mode, mtime })
    }

    fn child(&self, name: &str) -> Option<&Node> {
        match self {
            Node::Dir(entries, _) => entries.get(name),
            _ => None,
        }
    }

    /// The node at `rel` under this one, no links followed.
    fn at(&self, rel: &[String]) -> Option<&Node> {
        rel.iter().try_fold(self, |n, c| n.child(c))
    }

    fn at_mut(&mut self, rel: &[String]) -> Option<&mut Node> {
        rel.iter().try_fold(self, |n, c| match n {
            Node::Dir(entries, _) => entries.get_mut(c),
            _ => None,
        })
    }
}

/// A tree that several containers' filesystems may mount.
pub type SharedTree = Arc<Mutex<Node>>;

/// A new shared directory tree.
pub fn shared(node: Node) -> SharedTree {
    Arc::new(Mutex::new(node))
}

#[derive(Debug, Clone)]
struct Mount {
    at: Vec<String>,
    tree: SharedTree,
    /// The directory of the tree mounted (a volume's `subPath`).
    sub: Vec<String>,
    read_only: bool,
}

/// What `stat` tells of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file of this many bytes.
    File(usize),
    /// A symbolic link (only from [`Fs::lstat`]).
    Link(String),
}

/// `stat` of a path: its kind and meta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// What it is.
    pub kind: Kind,
    /// Mode and time (links: 0o777, time 0).
    pub meta: Meta,
}

/// One container's view: the root tree and what is mounted over it.
#[derive(Debug, Clone)]
pub struct Fs {
    mounts: Vec<Mount>,
}

/// Splits an absolute or relative path (relative to `cwd`) into components,
/// `.` and `..` applied lexically.
pub fn components(cwd: &str, path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let full = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{cwd}/{path}")
    };
    for c in full.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c.to_owned()),
        }
    }
    out
}

/// The absolute path of components.
pub fn join(components: &[String]) -> String {
    format!("/{}", components.join("/"))
}

const MAX_LINKS: usize = 40;

impl Fs {
    /// A filesystem whose root is `root`.
    pub fn new(root: SharedTree) -> Fs {
        Fs {
            mounts: vec![Mount {
                at: Vec::new(),
                tree: root,
                sub: Vec::new(),
                read_only: false,
            }],
        }
    }

    /// Mounts `tree` at `path` (made as a directory in what lies below).
    pub fn mount(&mut self, path: &str, tree: SharedTree, read_only: bool) {
        self.mount_sub(path, tree, "", read_only);
    }

    /// Mounts the directory `sub` of `tree` (made if missing) at `path`.
    pub fn mount_sub(&mut self, path: &str, tree: SharedTree, sub: &str, read_only: bool) {
        let sub = components("/", sub);
        mkdir_all(&mut tree.lock(), &sub, 0);
        let at = components("/", path);
        let (below, rel) = self.mount_of(&at);
        if let Some(below) = below {
            let mut t = below.tree.lock();
            mkdir_all(&mut t, &rel, 0);
        }
        self.mounts.push(Mount {
            at,
            tree,
            sub,
            read_only,
        });
    }

    /// The mount holding `path` (no links followed) and the path inside it.
    fn mount_of(&self, path: &[String]) -> (Option<&Mount>, Vec<String>) {
        let m = self
            .mounts
            .iter()
            .filter(|m| path.starts_with(&m.at))
            .max_by_key(|m| m.at.len());
        match m {
            Some(m) => {
                let mut rel = m.sub.clone();
                rel.extend_from_slice(&path[m.at.len()..]);
                (Some(m), rel)
            }
            None => (None, path.to_vec()),
        }
    }

    /// `path` with every link followed (the last one too when `follow_last`).
    pub fn resolve(&self, cwd: &str, path: &str, follow_last: bool) -> Result<Vec<String>, Errno> {
        let mut pending: Vec<String> = components(cwd, path);
        if path.len() >= PATH_MAX
            || pending.iter().map(|c| c.len() + 1).sum::<usize>() >= PATH_MAX
            || pending.iter().any(|c| c.len() > NAME_MAX)
        {
            return Err(Errno::NameTooLong);
        }
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        let mut i = 0;
        while i < pending.len() {
            let c = pending[i].clone();
            let mut next = done.clone();
            next.push(c);
            let last = i + 1 == pending.len();
            let (mount, rel) = self.mount_of(&next);
            let link = match mount {
                Some(m) => match m.tree.lock().at(&rel) {
                    Some(Node::Link(target)) if !last || follow_last => Some(target.clone()),
                    Some(Node::File(..)) if !last => return Err(Errno::NotDir),
                    Some(_) => None,
                    None if last => None,
                    None => return Err(Errno::NotFound),
                },
                None => return Err(Errno::NotFound),
            };
            match link {
                Some(target) => {
                    hops += 1;
                    if hops > MAX_LINKS {
                        return Err(Errno::Loop);
                    }
                    let base = join(&done);
                    let mut rest = components(&base, &target);
                    rest.extend(pending[i + 1..].iter().cloned());
                    pending = rest;
                    done.clear();
                    i = 0;
                }
                None => {
                    done = next;
                    i += 1;
                }
            }
        }
        Ok(done)
    }

    fn with<R>(&self, path: &[String], f: impl FnOnce(Option<&Node>) -> R) -> R {
        match self.mount_of(path) {
            (Some(m), rel) => f(m.tree.lock().at(&rel)),
            (None, _) => f(None),
        }
    }

    fn with_mut<R>(
        &self,
        path: &[String],
        f: impl FnOnce(&mut Node, &[String]) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        match self.mount_of(path) {
            (Some(m), _) if m.read_only => Err(Errno::ReadOnly),
            (Some(m), rel) => f(&mut m.tree.lock(), &rel),
            (None, _) => Err(Errno::NotFound),
        }
    }

    fn is_mount_point(&self, path: &[String]) -> bool {
        self.mounts.iter().any(|m| m.at == path)
    }

    /// `stat` (links followed).
    pub fn stat(&self, cwd: &str, path: &str) -> Result<Stat, Errno> {
        let p = self.resolve(cwd, path, true)?;
        self.stat_at(&p)
    }

    /// `lstat`: a link itself.
    pub fn lstat(&self, cwd: &str, path: &str) -> Result<Stat, Errno> {
        let p = self.resolve(cwd, path, false)?;
        self.stat_at(&p)
    }

    fn stat_at(&self, p: &[String]) -> Result<Stat, Errno> {
        self.with(p, |n| match n {
            Some(Node::Dir(_, meta)) => Ok(Stat {
                kind: Kind::Dir,
                meta: *meta,
            }),
            Some(Node::File(data, meta)) => Ok(Stat {
                kind: Kind::File(data.len()),
                meta: *meta,
            }),
            Some(Node::Link(t)) => Ok(Stat {
                kind: Kind::Link(t.clone()),
                meta: Meta {
                    mode: 0o777,
                    mtime: 0,
                },
            }),
            None => Err(Errno::NotFound),
        })
    }

    /// A file's bytes.
    pub fn read(&self, cwd: &str, path: &str) -> Result<Vec<u8>, Errno> {
        let p = self.resolve(cwd, path, true)?;
        self.with(&p, |n| match n {
            Some(Node::File(data, _)) => Ok(data.clone()),
            Some(_) => Err(Errno::IsDir),
            None => Err(Errno::NotFound),
        })
    }

    /// A directory's entries (name, lstat), mount points shown as mounted.
    pub fn list(&self, cwd: &str, path: &str) -> Result<Vec<(String, Stat)>, Errno> {
        let p = self.resolve(cwd, path, true)?;
        let names = self.with(&p, |n| match n {
            Some(Node::Dir(entries, _)) => Ok(entries.keys().cloned().collect::<Vec<_>>()),
            Some(_) => Err(Errno::NotDir),
            None => Err(Errno::NotFound),
        })?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let mut child = p.clone();
            child.push(name.clone());
            if let Ok(stat) = self.stat_at(&child) {
                out.push((name, stat));
            }
        }
        Ok(out)
    }

    /// Writes a file (made if absent, its parent must exist), appending or
    /// replacing.
    pub fn write(
        &self,
        cwd: &str,
        path: &str,
        data: &[u8],
        append: bool,
        now: i64,
    ) -> Result<(), Errno> {
        let p = self.resolve(cwd, path, true)?;
        let Some((name, parent)) = p.split_last() else {
            return Err(Errno::IsDir);
        };
        if self.is_mount_point(&p) {
            return Err(Errno::IsDir);
        }
        self.with_mut(&p, |tree, rel| {
            let dir = tree.at_mut(&rel[..rel.len() - 1]).ok_or(Errno::NotFound)?;
            let _ = parent;
            let Node::Dir(entries, _) = dir else {
                return Err(Errno::NotDir);
            };
            match entries.get_mut(name) {
                Some(Node::File(old, meta)) => {
                    if !append {
                        old.clear();
                    }
                    old.extend_from_slice(data);
                    meta.mtime = now;
                    Ok(())
                }
                Some(_) => Err(Errno::IsDir),
                None => {
                    entries.insert(name.clone(), Node::file(data, 0o644, now));
                    Ok(())
                }
            }
        })
    }

    /// Makes a directory (and its parents with `parents`).
    pub fn mkdir(&self, cwd: &str, path: &str, parents: bool, now: i64) -> Result<(), Errno> {
        let p = components(cwd, path);
        if parents {
            let mut sofar = Vec::new();
            for c in &p {
                sofar.push(c.clone());
                match self.stat(cwd, &join(&sofar)) {
                    Ok(Stat {
                        kind: Kind::Dir, ..
                    }) => continue,
                    Ok(_) => return Err(Errno::Exists),
                    Err(Errno::NotFound) => self.mkdir(cwd, &join(&sofar), false, now)?,
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        }
        let p = self.resolve(cwd, path, false)?;
        if self.with(&p, |n| n.is_some()) {
            return Err(Errno::Exists);
        }
        self.with_mut(&p, |tree, rel| {
            let (name, parent) = rel.split_last().ok_or(Errno::Exists)?;
            match tree.at_mut(parent) {
                Some(Node::Dir(entries, _)) => {
                    entries.insert(name.clone(), Node::dir(0o755, now));
                    Ok(())
                }
                Some(_) => Err(Errno::NotDir),
                None => Err(Errno::NotFound),
            }
        })
    }

    /// Removes a file, a link, or a directory (empty unless `recursive`).
    pub fn remove(&self, cwd: &str, path: &str, recursive: bool) -> Result<(), Errno> {
        let p = self.resolve(cwd, path, false)?;
        if p.is_empty() || self.is_mount_point(&p) {
            return Err(Errno::Busy);
        }
        if self.mounts.iter().any(|m| m.at.starts_with(&p)) && recursive {
            return Err(Errno::Busy);
        }
        self.with_mut(&p, |tree, rel| {
            let (name, parent) = rel.split_last().ok_or(Errno::Busy)?;
            let Some(Node::Dir(entries, _)) = tree.at_mut(parent) else {
                return Err(Errno::NotFound);
            };
            match entries.get(name) {
                None => Err(Errno::NotFound),
                Some(Node::Dir(children, _)) if !recursive && !children.is_empty() => {
                    Err(Errno::NotEmpty)
                }
                Some(Node::Dir(..)) if !recursive => Err(Errno::IsDir),
                Some(_) => {
                    entries.remove(name);
                    Ok(())
                }
            }
        })
    }

    /// Sets a path's modification time (`touch` of an existing file).
    pub fn touch(&self, cwd: &str, path: &str, now: i64) -> Result<(), Errno> {
        match self.stat(cwd, path) {
            Err(Errno::NotFound) => self.write(cwd, path, b"", true, now),
            Err(e) => Err(e),
            Ok(_) => {
                let p = self.resolve(cwd, path, true)?;
                self.with_mut(&p, |tree, rel| match tree.at_mut(rel) {
                    Some(Node::File(_, meta) | Node::Dir(_, meta)) => {
                        meta.mtime = now;
                        Ok(())
                    }
                    _ => Err(Errno::NotFound),
                })
            }
        }
    }

    /// Makes a symbolic link at `path` pointing to `target`.
    pub fn symlink(&self, cwd: &str, target: &str, path: &str) -> Result<(), Errno> {
        let p = self.resolve(cwd, path, false)?;
        if self.with(&p, |n| n.is_some()) {
            return Err(Errno::Exists);
        }
        self.with_mut(&p, |tree, rel| {
            let (name, parent) = rel.split_last().ok_or(Errno::Exists)?;
            match tree.at_mut(parent) {
                Some(Node::Dir(entries, _)) => {
                    entries.insert(name.clone(), Node::Link(target.to_owned()));
                    Ok(())
                }
                _ => Err(Errno::NotFound),
            }
        })
    }

    /// Sets a file's or directory's mode bits.
    pub fn chmod(&self, cwd: &str, path: &str, mode: u32) -> Result<(), Errno> {
        let p = self.resolve(cwd, path, true)?;
        self.with_mut(&p, |tree, rel| match tree.at_mut(rel) {
            Some(Node::File(_, meta) | Node::Dir(_, meta)) => {
                meta.mode = mode & 0o7777;
                Ok(())
            }
            _ => Err(Errno::NotFound),
        })
    }
}

/// Makes every directory of `rel` under `tree` that is missing.
pub fn mkdir_all(tree: &mut Node, rel: &[String], mtime: i64) {
    let mut node = tree;
    for c in rel {
        let Node::Dir(entries, _) = node else {
            return;
        };
        node = entries
            .entry(c.clone())
            .or_insert_with(|| Node::dir(0o755, mtime));
    }
}

/// Puts `node` at `rel` under `tree`, making the directories above it.
pub fn put(tree: &mut Node, rel: &[String], node: Node) {
    let Some((name, parent)) = rel.split_last() else {
        *tree = node;
        return;
    };
    mkdir_all(tree, parent, 0);
    if let Some(Node::Dir(entries, _)) = tree.at_mut(parent) {
        entries.insert(name.clone(), node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> Fs {
        let mut root = Node::dir(0o755, 0);
        put(
            &mut root,
            &components("/", "/etc/hostname"),
            Node::file("web\n", 0o644, 0),
        );
        let mut fs = Fs::new(shared(root));
        let mut config = Node::dir(0o777, 0);
        put(
            &mut config,
            &components("/", "/..data/app.yaml"),
            Node::file("a: 1\n", 0o644, 0),
        );
        put(
            &mut config,
            &components("/", "/app.yaml"),
            Node::Link("..data/app.yaml".into()),
        );
        fs.mount("/etc/config", shared(config), true);
        fs
    }

    #[test]
    fn links_in_a_mounted_volume_are_followed() {
        let fs = fs();
        assert_eq!(fs.read("/", "/etc/config/app.yaml").unwrap(), b"a: 1\n");
        assert_eq!(fs.read("/etc", "config/../hostname").unwrap(), b"web\n");
        let names: Vec<_> = fs
            .list("/", "/etc")
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["config", "hostname"]);
    }

    #[test]
    fn a_read_only_mount_refuses_writes_and_the_root_takes_them() {
        let fs = fs();
        assert_eq!(
            fs.write("/", "/etc/config/x", b"1", false, 0),
            Err(Errno::ReadOnly)
        );
        fs.write("/", "/tmp-file", b"1", false, 0).unwrap();
        fs.write("/", "/tmp-file", b"2", true, 0).unwrap();
        assert_eq!(fs.read("/", "/tmp-file").unwrap(), b"12");
        assert_eq!(fs.remove("/", "/etc/config", true), Err(Errno::Busy));
        assert_eq!(fs.read("/", "/nope/x"), Err(Errno::NotFound));
        assert_eq!(fs.read("/", "/etc/hostname/x"), Err(Errno::NotDir));
    }

    #[test]
    fn a_link_loop_is_refused() {
        let fs = fs();
        fs.symlink("/", "/a", "/b").unwrap();
        fs.symlink("/", "/b", "/a").unwrap();
        assert_eq!(fs.read("/", "/a"), Err(Errno::Loop));
    }
}
