//! `tar` in a simulated container, as `kubectl cp` runs it: `tar cf - PATH`
//! to copy out, `tar -xmf - [-C DIR]` to copy in, plus `t` to list, `v`, `z`
//! and a file instead of `-`. Archives are ustar with GNU long names (the
//! `tar` crate), which Go's `archive/tar` reads and writes.

use std::io::Read;

use super::fs::{Errno, Kind, components, join};
use super::shell::{Io, Shell};

#[derive(Debug, Default)]
struct Opts {
    mode: Option<char>,
    file: Option<String>,
    dir: Option<String>,
    verbose: bool,
    gzip: bool,
    touch: bool,
    to_stdout: bool,
    paths: Vec<String>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut i = 0;
    let mut pending: Vec<char> = Vec::new();
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let flags: Vec<char> = if let Some(long) = a.strip_prefix("--") {
            match long {
                "no-same-permissions" | "no-same-owner" | "preserve-permissions" => continue,
                "extract" => vec!['x'],
                "create" => vec!['c'],
                "list" => vec!['t'],
                "gzip" => vec!['z'],
                "verbose" => vec!['v'],
                "touch" => vec!['m'],
                "to-stdout" => vec!['O'],
                l if l.starts_with("directory=") => {
                    o.dir = Some(l["directory=".len()..].to_owned());
                    continue;
                }
                l if l.starts_with("file=") => {
                    o.file = Some(l["file=".len()..].to_owned());
                    continue;
                }
                l => return Err(format!("unrecognized option '--{l}'")),
            }
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            short.chars().collect()
        } else if i == 1 && o.mode.is_none() {
            // Old style: the first word is the flags (`tar cf - x`).
            a.chars().collect()
        } else {
            o.paths.push(a.clone());
            continue;
        };
        for c in flags {
            match c {
                'c' | 'x' | 't' => o.mode = Some(c),
                'v' => o.verbose = true,
                'z' => o.gzip = true,
                'm' => o.touch = true,
                'O' => o.to_stdout = true,
                'p' | 'o' | 'h' => {}
                'f' | 'C' => pending.push(c),
                c => return Err(format!("invalid option -- '{c}'")),
            }
        }
        for c in pending.drain(..) {
            let Some(v) = args.get(i) else {
                return Err(format!("option requires an argument -- '{c}'"));
            };
            i += 1;
            if c == 'f' {
                o.file = Some(v.clone());
            } else {
                o.dir = Some(v.clone());
            }
        }
    }
    Ok(o)
}

/// Runs `tar` with its arguments.
pub fn command(sh: &mut Shell, args: &[String], io: &mut Io, now: i64) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            io.error(format!("tar: {e}"));
            return 1;
        }
    };
    let base = match &o.dir {
        Some(d) => match sh.fs.stat(&sh.cwd, d) {
            Ok(s) if s.kind == Kind::Dir => join(&components(&sh.cwd, d)),
            _ => {
                io.error(format!(
                    "tar: can't change directory to '{d}': No such file or directory"
                ));
                return 1;
            }
        },
        None => sh.cwd.clone(),
    };
    match o.mode {
        Some('c') => create(sh, &o, &base, io),
        Some('x' | 't') => extract(sh, &o, &base, io, now),
        _ => {
            io.error("tar: need to specify one of -c, -x or -t");
            1
        }
    }
}

fn create(sh: &mut Shell, o: &Opts, base: &str, io: &mut Io) -> i32 {
    if o.paths.is_empty() {
        io.error("tar: empty archive");
        return 1;
    }
    let mut builder = tar::Builder::new(Vec::new());
    let mut status = 0;
    let mut warned = false;
    for p in &o.paths {
        let mut name = p.trim_start_matches('/').to_owned();
        if name.len() != p.len() && !warned {
            io.error("tar: removing leading '/' from member names");
            warned = true;
        }
        if name.is_empty() {
            name = ".".into();
        }
        if let Err(e) = add(sh, &mut builder, base, p, &name, o.verbose, io) {
            io.error(format!("tar: {p}: {e}"));
            status = 1;
        }
    }
    let data = match builder.into_inner() {
        Ok(d) => d,
        Err(e) => {
            io.error(format!("tar: {e}"));
            return 1;
        }
    };
    let data = if o.gzip {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = z.write_all(&data);
        z.finish().unwrap_or_default()
    } else {
        data
    };
    match o.file.as_deref() {
        None | Some("-") => io.out.write(&data),
        Some(f) => {
            if let Err(e) = sh.fs.write(base, f, &data, false, sh.host.now()) {
                io.error(format!("tar: can't open '{f}': {e}"));
                return 1;
            }
        }
    }
    status
}

fn header(kind: tar::EntryType, size: u64, mode: u32, mtime: i64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(u64::try_from(mtime).unwrap_or(0));
    h.set_uid(0);
    h.set_gid(0);
    let _ = h.set_username("root");
    let _ = h.set_groupname("root");
    h
}

fn add(
    sh: &Shell,
    builder: &mut tar::Builder<Vec<u8>>,
    base: &str,
    path: &str,
    name: &str,
    verbose: bool,
    io: &mut Io,
) -> Result<(), Errno> {
    let stat = sh.fs.lstat(base, path)?;
    if verbose {
        io.error(name);
    }
    let io_err = |_| Errno::NotFound;
    match stat.kind {
        Kind::Dir => {
            let mut h = header(
                tar::EntryType::Directory,
                0,
                stat.meta.mode,
                stat.meta.mtime,
            );
            builder
                .append_data(
                    &mut h,
                    format!("{}/", name.trim_end_matches('/')),
                    std::io::empty(),
                )
                .map_err(io_err)?;
            for (child, _) in sh.fs.list(base, path)? {
                let child_path = format!("{}/{child}", path.trim_end_matches('/'));
                let child_name = if name == "." {
                    child.clone()
                } else {
                    format!("{}/{child}", name.trim_end_matches('/'))
                };
                add(sh, builder, base, &child_path, &child_name, verbose, io)?;
            }
        }
        Kind::File(_) => {
            let data = sh.fs.read(base, path)?;
            let mut h = header(
                tar::EntryType::Regular,
                data.len() as u64,
                stat.meta.mode,
                stat.meta.mtime,
            );
            builder
                .append_data(&mut h, name, data.as_slice())
                .map_err(io_err)?;
        }
        Kind::Link(target) => {
            let mut h = header(tar::EntryType::Symlink, 0, 0o777, 0);
            builder.append_link(&mut h, name, &target).map_err(io_err)?;
        }
    }
    Ok(())
}

fn extract(sh: &mut Shell, o: &Opts, base: &str, io: &mut Io, now: i64) -> i32 {
    let raw = match o.file.as_deref() {
        None | Some("-") => io.stdin.read_all(),
        Some(f) => match sh.fs.read(base, f) {
            Ok(d) => d,
            Err(e) => {
                io.error(format!("tar: can't open '{f}': {e}"));
                return 1;
            }
        },
    };
    let data = if o.gzip || raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        if flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .is_err()
        {
            io.error("tar: invalid gzip magic");
            return 1;
        }
        out
    } else {
        raw
    };
    if data.is_empty() {
        io.error("tar: short read");
        return 1;
    }
    let mut archive = tar::Archive::new(data.as_slice());
    let Ok(entries) = archive.entries() else {
        io.error("tar: invalid tar magic");
        return 1;
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(_) => {
                io.error("tar: invalid tar magic");
                return 1;
            }
        };
        let Ok(path) = entry.path() else {
            continue;
        };
        let name = path.to_string_lossy().into_owned();
        if name.split('/').any(|c| c == "..") {
            io.error(format!("tar: skipping '{name}': contains '..'"));
            continue;
        }
        let rel = name
            .trim_start_matches('/')
            .trim_end_matches('/')
            .to_owned();
        if o.verbose || o.mode == Some('t') {
            let line = format!("{name}\n");
            if o.mode == Some('t') {
                io.out.write(line.as_bytes());
            } else {
                io.err.write(line.as_bytes());
            }
        }
        if o.mode == Some('t') || rel.is_empty() || rel == "." {
            continue;
        }
        let header = entry.header().clone();
        let mode = header.mode().unwrap_or(0o644) & 0o7777;
        let mtime = if o.touch {
            now
        } else {
            header
                .mtime()
                .ok()
                .and_then(|t| i64::try_from(t).ok())
                .unwrap_or(now)
        };
        let target = format!("{}/{rel}", base.trim_end_matches('/'));
        if let Some((parent, _)) = target.rsplit_once('/')
            && !parent.is_empty()
        {
            let _ = sh.fs.mkdir("/", parent, true, now);
        }
        let result = match header.entry_type() {
            tar::EntryType::Directory => match sh.fs.mkdir("/", &target, true, mtime) {
                Err(Errno::Exists) => Ok(()),
                r => r,
            },
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name()
                    .ok()
                    .flatten()
                    .map(|l| l.to_string_lossy().into_owned());
                let _ = sh.fs.remove("/", &target, false);
                sh.fs.symlink("/", &link.unwrap_or_default(), &target)
            }
            _ => {
                let mut content = Vec::new();
                if entry.read_to_end(&mut content).is_err() {
                    io.error("tar: short read");
                    return 1;
                }
                if o.to_stdout {
                    io.out.write(&content);
                    continue;
                }
                sh.fs
                    .write("/", &target, &content, false, mtime)
                    .and_then(|()| sh.fs.chmod("/", &target, mode))
            }
        };
        if let Err(e) = result {
            io.error(format!("tar: can't create '{rel}': {e}"));
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use crate::exec::shell::tests::{run, shell};
    use crate::exec::shell::{Io, Stdin};

    #[test]
    fn an_archive_made_in_one_place_unpacks_in_another() {
        let mut sh = shell();
        run(
            &mut sh,
            "mkdir -p /tmp/src/d && echo one > /tmp/src/a && echo two > /tmp/src/d/b",
        );
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut stdin = Stdin::empty();
        let status = sh.run_script(
            "tar cf - /tmp/src",
            &mut Io {
                stdin: &mut stdin,
                out: &mut out,
                err: &mut err,
            },
        );
        assert_eq!(status, 0);
        assert_eq!(
            String::from_utf8_lossy(&err),
            "tar: removing leading '/' from member names\n"
        );
        run(&mut sh, "mkdir /tmp/dst");
        let mut stdin = Stdin::bytes(out);
        let mut sink = Vec::new();
        let status = sh.run_script(
            "tar -xmf - -C /tmp/dst",
            &mut Io {
                stdin: &mut stdin,
                out: &mut sink,
                err: &mut err,
            },
        );
        assert_eq!(status, 0);
        assert_eq!(
            run(&mut sh, "cat /tmp/dst/tmp/src/a /tmp/dst/tmp/src/d/b").0,
            "one\ntwo\n"
        );
    }
}
