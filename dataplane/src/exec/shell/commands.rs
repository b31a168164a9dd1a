//! The commands a simulated container has, each answering as busybox's
//! applet of that name does for the options tests use (messages in its
//! words, `not found` as 127). The set is [`NAMES`]; README's exec section
//! lists it.

use std::time::Duration;

use super::{Flow, Io, Shell, Status, Stdin};
use crate::exec::fs::{Errno, Kind, Meta, Stat, components, join};
use crate::exec::tar;

/// Every command a container's shell knows.
pub const NAMES: &[&str] = &[
    ".", ":", "[", "[[", "basename", "bash", "break", "cat", "cd", "chmod", "command", "continue",
    "cp", "date", "dd", "dirname", "echo", "env", "eval", "exec", "exit", "export", "expr",
    "false", "grep", "head", "hostname", "id", "ln", "ls", "mkdir", "mv", "printenv", "printf",
    "pwd", "read", "rm", "seq", "set", "sh", "shift", "sleep", "source", "tail", "tar", "test",
    "touch", "true", "type", "uname", "unset", "wc", "which", "whoami",
];

/// Directories a command's path may name (`/bin/cat`).
const BIN_DIRS: &[&str] = &["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"];

/// The largest a `dd` may write (a container's writable layer is not a disk).
const DD_LIMIT: usize = 64 << 20;

/// How a name resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A command of [`NAMES`].
    Command(&'static str),
    /// A file starting with `#!`: run as a script.
    Script(String),
    /// A file that is no script.
    NotExecutable,
    /// Nothing of that name.
    NotFound,
}

/// What `name` runs in this shell.
pub fn resolve(sh: &Shell, name: &str) -> Resolved {
    let known = |n: &str| {
        NAMES
            .iter()
            .find(|c| **c == n)
            .filter(|c| sh.available.as_ref().is_none_or(|a| a.contains(c)))
            .copied()
    };
    if !name.contains('/') {
        return known(name).map_or(Resolved::NotFound, Resolved::Command);
    }
    let path = join(&components(&sh.cwd, name));
    if let Some((dir, base)) = path.rsplit_once('/')
        && BIN_DIRS.contains(&dir)
        && let Some(c) = known(base)
    {
        return Resolved::Command(c);
    }
    match sh.fs.read(&sh.cwd, name) {
        Ok(data) if data.starts_with(b"#!") => Resolved::Script(path),
        Ok(_) => Resolved::NotExecutable,
        Err(Errno::IsDir) => Resolved::NotExecutable,
        Err(_) => Resolved::NotFound,
    }
}

/// Runs one command line (already expanded) in the shell.
pub fn run(sh: &mut Shell, argv: &[String], io: &mut Io) -> Status {
    let Some(name) = argv.first() else {
        return Ok(0);
    };
    match resolve(sh, name) {
        Resolved::Command(c) => builtin(sh, c, argv, io),
        Resolved::Script(path) => {
            let script = String::from_utf8_lossy(&sh.fs.read(&sh.cwd, &path).unwrap_or_default())
                .into_owned();
            let mut sub = sh.clone();
            sub.set_args(argv.to_vec());
            Ok(sub.run_script(&script, io))
        }
        Resolved::NotExecutable => {
            io.error(format!("sh: {name}: Permission denied"));
            Ok(126)
        }
        Resolved::NotFound => {
            io.error(format!("sh: {name}: not found"));
            Ok(127)
        }
    }
}

fn builtin(sh: &mut Shell, name: &'static str, argv: &[String], io: &mut Io) -> Status {
    let args = &argv[1..];
    let now = sh.host.now();
    Ok(match name {
        ":" | "true" => 0,
        "false" => 1,
        "echo" => echo(args, io),
        "printf" => printf(args, io),
        "cat" => cat(sh, args, io),
        "ls" => ls(sh, args, io, now),
        "env" => return env(sh, args, io),
        "printenv" => printenv(sh, args, io),
        "hostname" => {
            io.out.write(format!("{}\n", sh.hostname).as_bytes());
            0
        }
        "pwd" => {
            io.out.write(format!("{}\n", sh.cwd).as_bytes());
            0
        }
        "cd" => cd(sh, args, io),
        "test" => test(sh, args, io, "test"),
        "[" => match args.split_last() {
            Some((last, rest)) if last == "]" => test(sh, rest, io, "["),
            _ => {
                io.error("sh: [: missing ]");
                2
            }
        },
        // ash's `[[ … ]]` of test's expressions (no `&&` inside).
        "[[" => match args.split_last() {
            Some((last, rest)) if last == "]]" => test(sh, rest, io, "[["),
            _ => {
                io.error("sh: [[: missing ]]");
                2
            }
        },
        "expr" => super::expr::expr(args, io),
        "sleep" => return sleep(sh, args, io),
        "exit" => {
            let code = match args.first() {
                None => sh.last_status(),
                Some(a) => match a.parse::<i64>() {
                    Ok(n) => (n & 0xff) as i32,
                    Err(_) => {
                        io.error(format!("sh: exit: Illegal number: {a}"));
                        2
                    }
                },
            };
            return Err(Flow::Exit(code));
        }
        "break" | "continue" => {
            let n = args
                .first()
                .and_then(|a| a.parse::<u32>().ok())
                .unwrap_or(1)
                .max(1);
            return Err(if name == "break" {
                Flow::Break(n)
            } else {
                Flow::Continue(n)
            });
        }
        "head" | "tail" => head_tail(sh, name, args, io),
        "wc" => wc(sh, args, io),
        "grep" => grep(sh, args, io),
        "mkdir" => mkdir(sh, args, io, now),
        "touch" => each_path(sh, args, io, "touch", |sh, p| sh.fs.touch(&sh.cwd, p, now)),
        "rm" => rm(sh, args, io),
        "dd" => dd(sh, args, io, now),
        "tar" => tar::command(sh, args, io, now),
        "cp" | "mv" => cp_mv(sh, name, args, io, now),
        "ln" => ln(sh, args, io),
        "chmod" => chmod(sh, args, io),
        "basename" => match args.first() {
            Some(p) => {
                let trimmed = p.trim_end_matches('/');
                let mut base = trimmed.rsplit('/').next().unwrap_or("/").to_owned();
                if base.is_empty() {
                    base = "/".into();
                }
                if let Some(suffix) = args.get(1)
                    && base.len() > suffix.len()
                {
                    base = base
                        .strip_suffix(suffix.as_str())
                        .unwrap_or(&base)
                        .to_owned();
                }
                io.out.write(format!("{base}\n").as_bytes());
                0
            }
            None => usage(io, "basename"),
        },
        "dirname" => match args.first() {
            Some(p) => {
                let trimmed = p.trim_end_matches('/');
                let dir = match trimmed.rsplit_once('/') {
                    Some(("", _)) => "/",
                    Some((d, _)) => d,
                    None if p.starts_with('/') => "/",
                    None => ".",
                };
                io.out.write(format!("{dir}\n").as_bytes());
                0
            }
            None => usage(io, "dirname"),
        },
        "id" => {
            io.out
                .write(b"uid=0(root) gid=0(root) groups=0(root),10(wheel)\n");
            0
        }
        "whoami" => {
            io.out.write(b"root\n");
            0
        }
        "uname" => uname(sh, args, io),
        "date" => {
            let t = chrono::DateTime::from_timestamp(now, 0).unwrap_or_default();
            io.out
                .write(format!("{}\n", t.format("%a %b %e %H:%M:%S UTC %Y")).as_bytes());
            0
        }
        "seq" => seq(args, io),
        "read" => read(sh, args, io),
        "export" => {
            for a in args.iter().filter(|a| *a != "-p") {
                match a.split_once('=') {
                    Some((k, v)) => sh.set(k, v, true),
                    None => sh.export(a),
                }
            }
            if args.is_empty() || args == ["-p"] {
                for (k, v) in sh.environment() {
                    io.out.write(format!("export {k}='{v}'\n").as_bytes());
                }
            }
            0
        }
        "unset" => {
            for a in args.iter().filter(|a| !a.starts_with('-')) {
                sh.unset(a);
            }
            0
        }
        "set" => {
            let mut rest = args;
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "--" => {
                        rest = &rest[1..];
                        break;
                    }
                    f if f.starts_with('-') || f.starts_with('+') => {
                        if f.contains('e') {
                            sh.set_errexit(f.starts_with('-'));
                        }
                        rest = &rest[1..];
                    }
                    _ => break,
                }
            }
            if !rest.is_empty() || args.first().is_some_and(|a| a == "--") {
                let mut new = vec![sh.args[0].clone()];
                new.extend(rest.iter().cloned());
                sh.set_args(new);
            }
            0
        }
        "shift" => {
            let n = args
                .first()
                .and_then(|a| a.parse::<usize>().ok())
                .unwrap_or(1);
            if n >= sh.args.len() {
                return Ok(1);
            }
            sh.args.drain(1..=n);
            0
        }
        "eval" => {
            let script = args.join(" ");
            match super::parse::parse(&script) {
                Ok(cmd) => return sh.run(&cmd, io),
                Err(e) => {
                    io.error(format!("sh: {e}"));
                    2
                }
            }
        }
        "exec" => {
            if args.is_empty() {
                0
            } else {
                let s = run(sh, args, io)?;
                return Err(Flow::Exit(s));
            }
        }
        "command" | "which" | "type" => {
            let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
            let mut status = 0;
            for n in names {
                match resolve(sh, n) {
                    Resolved::Command(c) if name == "type" => {
                        io.out.write(format!("{c} is /bin/{c}\n").as_bytes());
                    }
                    Resolved::Command(c) if name == "which" || args.iter().any(|a| a == "-v") => {
                        io.out.write(format!("/bin/{c}\n").as_bytes());
                    }
                    Resolved::Command(_) => {
                        return run(
                            sh,
                            &args[args.iter().position(|a| a == n).unwrap_or(0)..],
                            io,
                        );
                    }
                    Resolved::Script(p) => io.out.write(format!("{p}\n").as_bytes()),
                    _ => {
                        if name == "type" {
                            io.error(format!("{n}: not found"));
                        }
                        status = 1;
                    }
                }
            }
            status
        }
        "sh" | "bash" => sh_command(sh, name, args, io),
        "." | "source" => match args.first() {
            Some(f) => match sh.fs.read(&sh.cwd, f) {
                Ok(data) => {
                    let script = String::from_utf8_lossy(&data).into_owned();
                    match super::parse::parse(&script) {
                        Ok(cmd) => return sh.run(&cmd, io),
                        Err(e) => {
                            io.error(format!("sh: {e}"));
                            2
                        }
                    }
                }
                Err(e) => {
                    io.error(format!("sh: .: can't open '{f}': {e}"));
                    2
                }
            },
            None => 0,
        },
        _ => {
            io.error(format!("sh: {name}: not found"));
            127
        }
    })
}

fn usage(io: &mut Io, name: &str) -> i32 {
    io.error(format!(
        "BusyBox v1.37.0 (2024-09-26 21:31:42 UTC) multi-call binary.\n\nUsage: {name}"
    ));
    1
}

/// `sh -c SCRIPT [NAME ARGS…]`, `sh FILE ARGS…`, or `sh` reading its stdin.
pub fn sh_command(sh: &mut Shell, name: &str, args: &[String], io: &mut Io) -> i32 {
    let mut sub = sh.clone();
    let mut i = 0;
    let mut command = false;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if a.starts_with("--") {
            i += 1;
            continue;
        }
        command |= a.contains('c');
        if a.contains('e') {
            sub.set_errexit(true);
        }
        i += 1;
    }
    let rest = &args[i..];
    if command {
        let Some(script) = rest.first() else {
            io.error(format!("{name}: -c requires an argument"));
            return 2;
        };
        let mut positional = vec![rest.get(1).cloned().unwrap_or_else(|| name.to_owned())];
        positional.extend(rest.iter().skip(2).cloned());
        sub.set_args(positional);
        return sub.run_script(script, io);
    }
    if let Some(file) = rest.first() {
        return match sh.fs.read(&sh.cwd, file) {
            Ok(data) => {
                sub.set_args(rest.to_vec());
                sub.run_script(&String::from_utf8_lossy(&data), io)
            }
            Err(_) => {
                io.error(format!(
                    "{name}: can't open '{file}': No such file or directory"
                ));
                2
            }
        };
    }
    // A script on stdin, read line by line so a command may read what follows.
    let mut status = 0;
    let mut pending = String::new();
    while let Some(line) = io.stdin.read_line() {
        pending.push_str(&String::from_utf8_lossy(&line));
        if matches!(
            super::parse::parse(&pending),
            Err(super::parse::SyntaxError::Eof(_) | super::parse::SyntaxError::Quote)
        ) {
            continue;
        }
        let script = std::mem::take(&mut pending);
        if let Some(code) = sub.run_line(&script, io) {
            return code;
        }
        status = sub.last_status();
    }
    if !pending.trim().is_empty() {
        status = sub.run_script(&pending, io);
    }
    status
}

fn unescape(s: &str, out: &mut Vec<u8>) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('r') => out.push(b'\r'),
            Some('\\') => out.push(b'\\'),
            Some('a') => out.push(7),
            Some('b') => out.push(8),
            Some('f') => out.push(12),
            Some('v') => out.push(11),
            Some('e') => out.push(27),
            Some('c') => return false,
            Some('0') => {
                let mut v = 0u32;
                for _ in 0..3 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            Some(other) => {
                out.push(b'\\');
                let mut b = [0; 4];
                out.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
            }
            None => out.push(b'\\'),
        }
    }
    true
}

fn echo(args: &[String], io: &mut Io) -> i32 {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)) {
            newline &= !a.contains('n');
            if a.contains('e') {
                escapes = true;
            }
            if a.contains('E') {
                escapes = false;
            }
            i += 1;
        } else {
            break;
        }
    }
    let text = args[i..].join(" ");
    let mut out = Vec::new();
    if escapes {
        if !unescape(&text, &mut out) {
            io.out.write(&out);
            return 0;
        }
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    if newline {
        out.push(b'\n');
    }
    io.out.write(&out);
    0
}

fn printf(args: &[String], io: &mut Io) -> i32 {
    let Some(format) = args.first() else {
        return usage(io, "printf FORMAT [ARG]...");
    };
    let mut rest = args[1..].iter();
    let mut out = Vec::new();
    let mut status = 0;
    loop {
        let mut consumed = false;
        let chars: Vec<char> = format.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' {
                let end = (i + 2).min(chars.len());
                let esc: String = chars[i..end].iter().collect();
                unescape(&esc, &mut out);
                i = end;
                continue;
            }
            if c != '%' {
                let mut b = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < chars.len() && "-+ #0123456789.".contains(chars[i]) {
                i += 1;
            }
            let Some(&conv) = chars.get(i) else {
                break;
            };
            i += 1;
            let spec: String = chars[start + 1..i - 1].iter().collect();
            if conv == '%' {
                out.push(b'%');
                continue;
            }
            let arg = rest.next();
            consumed |= arg.is_some();
            let arg = arg.map(String::as_str).unwrap_or_default();
            let (left, zero, width, precision) = spec_parts(&spec);
            let body = match conv {
                's' => match precision {
                    Some(p) => arg.chars().take(p).collect(),
                    None => arg.to_owned(),
                },
                'b' => {
                    let mut b = Vec::new();
                    unescape(arg, &mut b);
                    String::from_utf8_lossy(&b).into_owned()
                }
                'c' => arg.chars().next().map(String::from).unwrap_or_default(),
                'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                    let n = if arg.is_empty() {
                        0
                    } else {
                        match arg.trim().parse::<i64>() {
                            Ok(n) => n,
                            Err(_) => {
                                io.error(format!("printf: invalid number '{arg}'"));
                                status = 1;
                                0
                            }
                        }
                    };
                    match conv {
                        'x' => format!("{n:x}"),
                        'X' => format!("{n:X}"),
                        'o' => format!("{n:o}"),
                        _ => n.to_string(),
                    }
                }
                'f' | 'e' | 'g' => {
                    let n = arg.trim().parse::<f64>().unwrap_or(0.0);
                    format!("{n:.*}", precision.unwrap_or(6))
                }
                other => {
                    io.error(format!("printf: %{other}: invalid format"));
                    return 1;
                }
            };
            let pad = width.saturating_sub(body.chars().count());
            let fill = if zero && !left && conv != 's' {
                "0"
            } else {
                " "
            };
            if left {
                out.extend_from_slice(body.as_bytes());
                out.extend_from_slice(" ".repeat(pad).as_bytes());
            } else {
                out.extend_from_slice(fill.repeat(pad).as_bytes());
                out.extend_from_slice(body.as_bytes());
            }
        }
        if !consumed || rest.len() == 0 {
            break;
        }
    }
    io.out.write(&out);
    status
}

fn spec_parts(spec: &str) -> (bool, bool, usize, Option<usize>) {
    let left = spec.contains('-');
    let digits: String = spec.trim_start_matches(['-', '+', ' ', '#']).to_owned();
    let zero = digits.starts_with('0');
    let (w, p) = match digits.split_once('.') {
        Some((w, p)) => (w, Some(p.parse().unwrap_or(0))),
        None => (digits.as_str(), None),
    };
    (
        left,
        zero,
        w.parse().unwrap_or(0).min(4096),
        p.map(|p: usize| p.min(4096)),
    )
}

/// A file's bytes, `-` being stdin and the devices what they read as.
fn read_input(sh: &Shell, path: &str, io: &mut Io) -> Result<Vec<u8>, Errno> {
    match path {
        "-" | "/dev/stdin" => Ok(io.stdin.read_all()),
        "/dev/null" => Ok(Vec::new()),
        _ => sh.fs.read(&sh.cwd, path),
    }
}

fn cat(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || *a == "-")
        .collect();
    if files.is_empty() {
        while let Some(chunk) = io.stdin.read_some() {
            io.out.write(&chunk);
        }
        return 0;
    }
    let mut status = 0;
    for f in files {
        match read_input(sh, f, io) {
            Ok(data) => io.out.write(&data),
            Err(Errno::IsDir) => {
                io.error("cat: read error: Is a directory");
                status = 1;
            }
            Err(e) => {
                io.error(format!("cat: can't open '{f}': {e}"));
                status = 1;
            }
        }
    }
    status
}

fn mode_string(stat: &Stat) -> String {
    let t = match stat.kind {
        Kind::Dir => 'd',
        Kind::File(_) => '-',
        Kind::Link(_) => 'l',
    };
    let mut s = String::from(t);
    for shift in [6, 3, 0] {
        let bits = (stat.meta.mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

fn ls_time(mtime: i64, now: i64) -> String {
    let t = chrono::DateTime::from_timestamp(mtime, 0).unwrap_or_default();
    if (now - mtime).abs() < 182 * 86_400 {
        t.format("%b %e %H:%M").to_string()
    } else {
        t.format("%b %e  %Y").to_string()
    }
}

fn ls(sh: &mut Shell, args: &[String], io: &mut Io, now: i64) -> i32 {
    let flags: String = args
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .flat_map(|a| a[1..].chars())
        .collect();
    let long = flags.contains('l');
    let all = flags.contains('a');
    let almost = flags.contains('A');
    let dir_only = flags.contains('d');
    let mut paths: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .cloned()
        .collect();
    if paths.is_empty() {
        paths.push(".".into());
    }
    let line = |name: &str, stat: &Stat| -> String {
        if !long {
            return format!("{name}\n");
        }
        let size = match stat.kind {
            Kind::File(n) => n,
            Kind::Dir => 4096,
            Kind::Link(ref t) => t.len(),
        };
        let target = match &stat.kind {
            Kind::Link(t) => format!(" -> {t}"),
            _ => String::new(),
        };
        format!(
            "{} {:>4} root     root     {:>9} {} {name}{target}\n",
            mode_string(stat),
            if stat.kind == Kind::Dir { 2 } else { 1 },
            size,
            ls_time(stat.meta.mtime, now)
        )
    };
    let mut status = 0;
    let mut out = String::new();
    let many = paths.len() > 1;
    let (files, dirs): (Vec<_>, Vec<_>) = paths
        .iter()
        .map(|p| (p, sh.fs.stat(&sh.cwd, p), sh.fs.lstat(&sh.cwd, p)))
        .partition(|(_, st, _)| {
            dir_only
                || !matches!(
                    st,
                    Ok(Stat {
                        kind: Kind::Dir,
                        ..
                    })
                )
        });
    for (p, _, lst) in &files {
        match lst {
            Ok(st) => out.push_str(&line(p, st)),
            Err(e) => {
                io.error(format!("ls: {p}: {e}"));
                status = 1;
            }
        }
    }
    for (i, (p, st, _)) in dirs.iter().enumerate() {
        if many {
            if i > 0 || !files.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{p}:\n"));
        }
        let Ok(entries) = sh.fs.list(&sh.cwd, p) else {
            continue;
        };
        if long {
            out.push_str(&format!("total {}\n", entries.len() * 4));
        }
        if all && let Ok(st) = st {
            out.push_str(&line(".", st));
            out.push_str(&line("..", st));
        }
        for (name, stat) in entries {
            if name.starts_with('.') && !all && !almost {
                continue;
            }
            out.push_str(&line(&name, &stat));
        }
    }
    io.out.write(out.as_bytes());
    status
}

fn env(sh: &mut Shell, args: &[String], io: &mut Io) -> Status {
    let mut sub = sh.clone();
    let mut rest = args;
    while let Some(a) = rest.first() {
        if a == "-i" {
            for (k, _) in sub.environment() {
                sub.unset(&k);
            }
        } else if let Some((k, v)) = a.split_once('=').filter(|_| !a.starts_with('-')) {
            sub.set(k, v, true);
        } else if a == "-u" && rest.len() > 1 {
            sub.unset(&rest[1]);
            rest = &rest[1..];
        } else {
            break;
        }
        rest = &rest[1..];
    }
    if rest.is_empty() {
        for (k, v) in sub.environment() {
            io.out.write(format!("{k}={v}\n").as_bytes());
        }
        return Ok(0);
    }
    match run(&mut sub, rest, io) {
        Ok(127) if resolve(&sub, &rest[0]) == Resolved::NotFound => Ok(127),
        r => r,
    }
}

fn printenv(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let env = sh.environment();
    if args.is_empty() {
        for (k, v) in env {
            io.out.write(format!("{k}={v}\n").as_bytes());
        }
        return 0;
    }
    let mut status = 0;
    for a in args {
        match env.iter().find(|(k, _)| k == a) {
            Some((_, v)) => io.out.write(format!("{v}\n").as_bytes()),
            None => status = 1,
        }
    }
    status
}

fn cd(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let target = match args.first().map(String::as_str) {
        None => sh.get("HOME").unwrap_or("/").to_owned(),
        Some("-") => sh.get("OLDPWD").unwrap_or("/").to_owned(),
        Some(t) => t.to_owned(),
    };
    match sh.fs.stat(&sh.cwd, &target) {
        Ok(Stat {
            kind: Kind::Dir, ..
        }) => {
            let new = join(&components(&sh.cwd, &target));
            let old = std::mem::replace(&mut sh.cwd, new.clone());
            sh.set("OLDPWD", &old, true);
            sh.set("PWD", &new, true);
            0
        }
        Ok(_) => {
            io.error(format!("sh: cd: can't cd to {target}: Not a directory"));
            2
        }
        Err(e) => {
            io.error(format!("sh: cd: can't cd to {target}: {e}"));
            2
        }
    }
}

/// `test` and `[`: 0 true, 1 false, 2 on bad usage.
fn test(sh: &Shell, args: &[String], io: &mut Io, name: &str) -> i32 {
    match test_expr(sh, args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(msg) => {
            io.error(format!("sh: {name}: {msg}"));
            2
        }
    }
}

fn int(s: &str) -> Result<i64, String> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| format!("{s}: bad number"))
}

fn test_expr(sh: &Shell, args: &[String]) -> Result<bool, String> {
    // -o binds loosest, then -a, then !, as XCU test's grammar reads.
    if let Some(i) = args
        .iter()
        .rposition(|a| a == "-o")
        .filter(|&i| i > 0 && i + 1 < args.len())
    {
        return Ok(test_expr(sh, &args[..i])? || test_expr(sh, &args[i + 1..])?);
    }
    if let Some(i) = args
        .iter()
        .rposition(|a| a == "-a")
        .filter(|&i| i > 0 && i + 1 < args.len())
    {
        return Ok(test_expr(sh, &args[..i])? && test_expr(sh, &args[i + 1..])?);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        [] => Ok(false),
        ["!", rest @ ..] => Ok(!test_expr(sh, &args[args.len() - rest.len()..])?),
        ["(", .., ")"] if a.len() > 2 => test_expr(sh, &args[1..args.len() - 1]),
        [s] => Ok(!s.is_empty()),
        [op, v] => {
            let stat = || sh.fs.stat(&sh.cwd, v);
            Ok(match *op {
                "-n" => !v.is_empty(),
                "-z" => v.is_empty(),
                "-e" | "-r" | "-w" => stat().is_ok(),
                "-f" => matches!(
                    stat(),
                    Ok(Stat {
                        kind: Kind::File(_),
                        ..
                    })
                ),
                "-d" => matches!(
                    stat(),
                    Ok(Stat {
                        kind: Kind::Dir,
                        ..
                    })
                ),
                "-s" => matches!(stat(), Ok(Stat { kind: Kind::File(n), .. }) if n > 0),
                "-x" => {
                    matches!(stat(), Ok(Stat { meta: Meta { mode, .. }, .. }) if mode & 0o111 != 0)
                }
                "-L" | "-h" => matches!(
                    sh.fs.lstat(&sh.cwd, v),
                    Ok(Stat {
                        kind: Kind::Link(_),
                        ..
                    })
                ),
                _ => return Err(format!("{op}: unknown operand")),
            })
        }
        [l, op, r] => Ok(match *op {
            "=" | "==" => l == r,
            "!=" => l != r,
            "<" => l < r,
            ">" => l > r,
            "-eq" => int(l)? == int(r)?,
            "-ne" => int(l)? != int(r)?,
            "-lt" => int(l)? < int(r)?,
            "-le" => int(l)? <= int(r)?,
            "-gt" => int(l)? > int(r)?,
            "-ge" => int(l)? >= int(r)?,
            _ => return Err(format!("{op}: unknown operand")),
        }),
        _ => Err("syntax error".into()),
    }
}

fn sleep(sh: &Shell, args: &[String], io: &mut Io) -> Status {
    let mut total = 0.0f64;
    if args.is_empty() {
        return Ok(usage(io, "sleep [N]..."));
    }
    for a in args {
        let (num, mult) = match a.char_indices().last() {
            Some((i, 's')) => (&a[..i], 1.0),
            Some((i, 'm')) => (&a[..i], 60.0),
            Some((i, 'h')) => (&a[..i], 3600.0),
            Some((i, 'd')) => (&a[..i], 86_400.0),
            _ => (a.as_str(), 1.0),
        };
        match num.parse::<f64>() {
            Ok(n) if n >= 0.0 && n.is_finite() => total += n * mult,
            Ok(n) if n == f64::INFINITY => total = f64::INFINITY,
            _ => {
                io.error(format!("sleep: invalid number '{a}'"));
                return Ok(1);
            }
        }
    }
    let d = Duration::try_from_secs_f64(total).unwrap_or(Duration::MAX);
    if sh.host.sleep(d) {
        Ok(0)
    } else {
        Err(Flow::Exit(130))
    }
}

fn count_arg(spec: &str) -> Option<(bool, usize)> {
    let (from_start, n) = match spec.strip_prefix('+') {
        Some(n) => (true, n),
        None => (false, spec.strip_prefix('-').unwrap_or(spec)),
    };
    n.parse::<usize>().ok().map(|n| (from_start, n))
}

fn head_tail(sh: &mut Shell, name: &str, args: &[String], io: &mut Io) -> i32 {
    let mut lines = true;
    let mut count = (false, 10usize);
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let value = |i: &mut usize| -> Option<String> {
            if a.len() > 2 {
                Some(a[2..].to_owned())
            } else {
                *i += 1;
                args.get(*i).cloned()
            }
        };
        if a.starts_with("-n") || a.starts_with("-c") {
            lines = a.starts_with("-n");
            match value(&mut i).as_deref().and_then(count_arg) {
                Some(c) => count = c,
                None => {
                    io.error(format!(
                        "{name}: invalid number '{}'",
                        args.get(i).cloned().unwrap_or_default()
                    ));
                    return 1;
                }
            }
        } else if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) {
            count = (false, a[1..].parse().unwrap_or(10));
        } else if a == "-f" || a == "-q" || a == "-v" {
        } else {
            files.push(a.clone());
        }
        i += 1;
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut status = 0;
    let many = files.len() > 1;
    for (k, f) in files.iter().enumerate() {
        let data = match read_input(sh, f, io) {
            Ok(d) => d,
            Err(e) => {
                io.error(format!("{name}: can't open '{f}': {e}"));
                status = 1;
                continue;
            }
        };
        if many {
            io.out
                .write(format!("{}==> {f} <==\n", if k > 0 { "\n" } else { "" }).as_bytes());
        }
        let (from_start, n) = count;
        let out: &[u8] = if lines {
            let ends: Vec<usize> = data
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1)
                .collect();
            let total = ends.len() + usize::from(!data.is_empty() && !data.ends_with(b"\n"));
            let line_start = |l: usize| {
                if l == 0 {
                    0
                } else {
                    ends.get(l - 1).copied().unwrap_or(data.len())
                }
            };
            if name == "head" {
                &data[..line_start(n.min(total))]
            } else if from_start {
                &data[line_start(n.saturating_sub(1).min(total))..]
            } else {
                &data[line_start(total.saturating_sub(n))..]
            }
        } else if name == "head" {
            &data[..n.min(data.len())]
        } else if from_start {
            &data[n.saturating_sub(1).min(data.len())..]
        } else {
            &data[data.len().saturating_sub(n)..]
        };
        io.out.write(out);
    }
    status
}

fn wc(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let flags: String = args
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .flat_map(|a| a[1..].chars())
        .collect();
    let mut files: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .cloned()
        .collect();
    let named = !files.is_empty();
    if files.is_empty() {
        files.push("-".into());
    }
    let show: Vec<char> = if flags.is_empty() {
        vec!['l', 'w', 'c']
    } else {
        ['l', 'w', 'c']
            .into_iter()
            .filter(|c| flags.contains(*c) || (*c == 'c' && flags.contains('m')))
            .collect()
    };
    let mut status = 0;
    for f in &files {
        let data = match read_input(sh, f, io) {
            Ok(d) => d,
            Err(e) => {
                io.error(format!("wc: can't open '{f}': {e}"));
                status = 1;
                continue;
            }
        };
        let counts: Vec<usize> = show
            .iter()
            .map(|c| match c {
                'l' => data.iter().filter(|b| **b == b'\n').count(),
                'w' => String::from_utf8_lossy(&data).split_whitespace().count(),
                _ => data.len(),
            })
            .collect();
        let mut line = if counts.len() == 1 && !named {
            counts[0].to_string()
        } else {
            counts
                .iter()
                .map(|n| format!("{n:>7}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if named {
            line.push(' ');
            line.push_str(f);
        }
        line.push('\n');
        io.out.write(line.as_bytes());
    }
    status
}

/// A basic regular expression as the regex crate reads an extended one.
fn from_basic(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(c @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => out.push(c),
                Some(c) => {
                    out.push('\\');
                    out.push(c);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn grep(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let mut flags = String::new();
    let mut patterns = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-e" {
            i += 1;
            if let Some(p) = args.get(i) {
                patterns.push(p.clone());
            }
        } else if a.starts_with('-') && a.len() > 1 && rest.is_empty() {
            flags.push_str(&a[1..]);
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    if patterns.is_empty() {
        if rest.is_empty() {
            return usage(
                io,
                "grep [-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... | -f FILE... } [FILE]...",
            ) + 1;
        }
        patterns.push(rest.remove(0));
    }
    let has = |c: char| flags.contains(c);
    let body: Vec<String> = patterns
        .iter()
        .map(|p| {
            let p = if has('F') {
                regex::escape(p)
            } else if has('E') {
                p.clone()
            } else {
                from_basic(p)
            };
            if has('w') {
                format!(r"\b(?:{p})\b")
            } else if has('x') {
                format!("^(?:{p})$")
            } else {
                p
            }
        })
        .collect();
    let re = match regex::RegexBuilder::new(&body.join("|"))
        .case_insensitive(has('i'))
        .size_limit(1 << 20)
        .build()
    {
        Ok(re) => re,
        Err(_) => {
            io.error("grep: bad regex");
            return 2;
        }
    };
    if rest.is_empty() {
        rest.push("-".into());
    }
    let many = rest.len() > 1;
    let mut matched = false;
    let mut status = 0;
    for f in &rest {
        let data = match read_input(sh, f, io) {
            Ok(d) => d,
            Err(e) => {
                if !has('s') {
                    io.error(format!("grep: {f}: {e}"));
                }
                status = 2;
                continue;
            }
        };
        let text = String::from_utf8_lossy(&data);
        let mut count = 0;
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) == has('v') {
                continue;
            }
            count += 1;
            matched = true;
            if has('q') {
                return 0;
            }
            if has('c') || has('l') {
                continue;
            }
            let mut out = String::new();
            if many {
                out.push_str(&format!("{f}:"));
            }
            if has('n') {
                out.push_str(&format!("{}:", n + 1));
            }
            if has('o') {
                for m in re.find_iter(line) {
                    io.out.write(format!("{out}{}\n", m.as_str()).as_bytes());
                }
                continue;
            }
            out.push_str(line);
            out.push('\n');
            io.out.write(out.as_bytes());
        }
        if has('c') {
            let prefix = if many { format!("{f}:") } else { String::new() };
            io.out.write(format!("{prefix}{count}\n").as_bytes());
        } else if has('l') && count > 0 {
            io.out.write(format!("{f}\n").as_bytes());
        }
    }
    if status == 2 && !matched {
        return 2;
    }
    i32::from(!matched)
}

fn mkdir(sh: &mut Shell, args: &[String], io: &mut Io, now: i64) -> i32 {
    let parents = args.iter().any(|a| a.starts_with('-') && a.contains('p'));
    let mut status = 0;
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        if let Err(e) = sh.fs.mkdir(&sh.cwd, a, parents, now) {
            io.error(format!("mkdir: can't create directory '{a}': {e}"));
            status = 1;
        }
    }
    status
}

fn each_path(
    sh: &mut Shell,
    args: &[String],
    io: &mut Io,
    name: &str,
    f: impl Fn(&Shell, &str) -> Result<(), Errno>,
) -> i32 {
    let mut status = 0;
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        if let Err(e) = f(sh, a) {
            io.error(format!("{name}: {a}: {e}"));
            status = 1;
        }
    }
    status
}

fn rm(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let flags: String = args
        .iter()
        .filter(|a| a.starts_with('-'))
        .flat_map(|a| a[1..].chars())
        .collect();
    let recursive = flags.contains('r') || flags.contains('R');
    let force = flags.contains('f');
    let mut status = 0;
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        match sh.fs.remove(&sh.cwd, a, recursive) {
            Ok(()) => {}
            Err(Errno::NotFound) if force => {}
            Err(Errno::IsDir) => {
                io.error(format!("rm: '{a}' is a directory"));
                status = 1;
            }
            Err(e) => {
                io.error(format!("rm: can't remove '{a}': {e}"));
                status = 1;
            }
        }
    }
    status
}

fn size_arg(s: &str) -> Option<usize> {
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1usize << 10),
        (i, 'M') => (&s[..i], 1 << 20),
        (i, 'G') => (&s[..i], 1 << 30),
        (i, 'c') => (&s[..i], 1),
        (i, 'w') => (&s[..i], 2),
        (i, 'b') => (&s[..i], 512),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

fn dd(sh: &mut Shell, args: &[String], io: &mut Io, now: i64) -> i32 {
    let mut input = None;
    let mut output = None;
    let mut bs = 512usize;
    let mut count = None;
    let mut skip = 0usize;
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            io.error(format!("dd: unknown operand {a}"));
            return 1;
        };
        let n = || size_arg(v);
        match k {
            "if" => input = Some(v.to_owned()),
            "of" => output = Some(v.to_owned()),
            "bs" | "ibs" | "obs" => match n() {
                Some(n) if n > 0 => bs = n,
                _ => {
                    io.error(format!("dd: invalid number '{v}'"));
                    return 1;
                }
            },
            "count" => count = n(),
            "skip" => skip = n().unwrap_or(0),
            "conv" | "status" | "iflag" | "oflag" | "seek" => {}
            _ => {
                io.error(format!("dd: unknown operand {a}"));
                return 1;
            }
        }
    }
    let want = count.map(|c| c.saturating_mul(bs));
    let data: Vec<u8> = match input.as_deref() {
        Some("/dev/zero") => vec![0; want.unwrap_or(DD_LIMIT + 1).min(DD_LIMIT + 1)],
        Some("/dev/urandom" | "/dev/random") => {
            let n = want.unwrap_or(DD_LIMIT + 1).min(DD_LIMIT + 1);
            (0..n)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect()
        }
        Some(f) => match read_input(sh, f, io) {
            Ok(d) => d,
            Err(e) => {
                io.error(format!("dd: can't open '{f}': {e}"));
                return 1;
            }
        },
        None => io.stdin.read_all(),
    };
    let start = skip.saturating_mul(bs).min(data.len());
    let mut chunk = &data[start..];
    if let Some(w) = want {
        chunk = &chunk[..w.min(chunk.len())];
    }
    let full_space = chunk.len() > DD_LIMIT;
    if full_space {
        chunk = &chunk[..DD_LIMIT];
    }
    let written = match output.as_deref() {
        None | Some("/dev/stdout") => {
            io.out.write(chunk);
            true
        }
        Some("/dev/null") => true,
        Some(f) => match sh.fs.write(&sh.cwd, f, chunk, false, now) {
            Ok(()) => true,
            Err(e) => {
                io.error(format!("dd: can't open '{f}': {e}"));
                return 1;
            }
        },
    };
    let (full, partial) = (
        chunk.len() / bs,
        usize::from(!chunk.len().is_multiple_of(bs)),
    );
    io.error(format!(
        "{full}+{partial} records in\n{full}+{partial} records out\n{} bytes ({}) copied, 0.000001 seconds, 0B/s",
        chunk.len(),
        human(chunk.len())
    ));
    if full_space {
        io.error(format!(
            "dd: error writing '{}': No space left on device",
            output.unwrap_or_default()
        ));
        return 1;
    }
    i32::from(!written)
}

fn human(n: usize) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1}GB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 => format!("{:.1}MB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1}KB", n as f64 / 1024.0),
        n => format!("{n}B"),
    }
}

fn cp_mv(sh: &mut Shell, name: &str, args: &[String], io: &mut Io, now: i64) -> i32 {
    let recursive = args
        .iter()
        .any(|a| a.starts_with('-') && (a.contains('r') || a.contains('R') || a.contains('a')));
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some((dest, sources)) = paths.split_last().filter(|(_, s)| !s.is_empty()) else {
        return usage(io, name);
    };
    let dest_is_dir = matches!(
        sh.fs.stat(&sh.cwd, dest),
        Ok(Stat {
            kind: Kind::Dir,
            ..
        })
    );
    let mut status = 0;
    for src in sources {
        let base = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
        let target = if dest_is_dir {
            format!("{}/{base}", dest.trim_end_matches('/'))
        } else {
            (*dest).clone()
        };
        let r = copy_tree(sh, src, &target, recursive || name == "mv", now);
        match r {
            Ok(()) if name == "mv" => {
                let _ = sh.fs.remove(&sh.cwd, src, true);
            }
            Ok(()) => {}
            Err(Errno::IsDir) => {
                io.error(format!("{name}: omitting directory '{src}'"));
                status = 1;
            }
            Err(e) => {
                io.error(format!("{name}: can't stat '{src}': {e}"));
                status = 1;
            }
        }
    }
    status
}

fn copy_tree(sh: &Shell, src: &str, dest: &str, recursive: bool, now: i64) -> Result<(), Errno> {
    match sh.fs.stat(&sh.cwd, src)?.kind {
        Kind::Dir if !recursive => Err(Errno::IsDir),
        Kind::Dir => {
            match sh.fs.mkdir(&sh.cwd, dest, false, now) {
                Ok(()) | Err(Errno::Exists) => {}
                Err(e) => return Err(e),
            }
            for (name, _) in sh.fs.list(&sh.cwd, src)? {
                copy_tree(
                    sh,
                    &format!("{src}/{name}"),
                    &format!("{dest}/{name}"),
                    true,
                    now,
                )?;
            }
            Ok(())
        }
        _ => {
            let data = sh.fs.read(&sh.cwd, src)?;
            sh.fs.write(&sh.cwd, dest, &data, false, now)
        }
    }
}

fn ln(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let [target, link] = paths.as_slice() else {
        return usage(io, "ln");
    };
    if !args.iter().any(|a| a.starts_with('-') && a.contains('s')) {
        io.error(format!("ln: {link}: Operation not permitted"));
        return 1;
    }
    match sh.fs.symlink(&sh.cwd, target, link) {
        Ok(()) => 0,
        Err(e) => {
            io.error(format!("ln: {link}: {e}"));
            1
        }
    }
}

fn chmod(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some((mode, files)) = paths.split_first() else {
        return usage(io, "chmod");
    };
    let Ok(bits) = u32::from_str_radix(mode, 8) else {
        let mut status = 0;
        for f in files {
            if let Err(e) = sh.fs.stat(&sh.cwd, f) {
                io.error(format!("chmod: {f}: {e}"));
                status = 1;
            }
        }
        return status;
    };
    let mut status = 0;
    for f in files {
        if let Err(e) = sh.fs.chmod(&sh.cwd, f, bits) {
            io.error(format!("chmod: {f}: {e}"));
            status = 1;
        }
    }
    status
}

fn uname(sh: &Shell, args: &[String], io: &mut Io) -> i32 {
    let flags: String = args
        .iter()
        .flat_map(|a| a.trim_start_matches('-').chars())
        .collect();
    let fields = [
        ('s', "Linux".to_owned()),
        ('n', sh.hostname.clone()),
        ('r', "6.1.0-kemu".to_owned()),
        ('v', "#1 SMP".to_owned()),
        ('m', "x86_64".to_owned()),
    ];
    let shown: Vec<String> = fields
        .iter()
        .filter(|(c, _)| {
            flags.contains('a') || flags.contains(*c) || (flags.is_empty() && *c == 's')
        })
        .map(|(_, v)| v.clone())
        .collect();
    io.out.write(format!("{}\n", shown.join(" ")).as_bytes());
    0
}

fn seq(args: &[String], io: &mut Io) -> i32 {
    let nums: Result<Vec<i64>, _> = args.iter().map(|a| a.parse::<i64>()).collect();
    let Ok(nums) = nums else {
        io.error(format!("seq: invalid number '{}'", args.join(" ")));
        return 1;
    };
    let (first, step, last) = match nums.as_slice() {
        [l] => (1, 1, *l),
        [f, l] => (*f, 1, *l),
        [f, s, l] if *s != 0 => (*f, *s, *l),
        _ => return usage(io, "seq [-w] [-s SEP] [FIRST [INC]] LAST"),
    };
    let mut out = String::new();
    let mut n = first;
    let mut lines = 0;
    while (step > 0 && n <= last) || (step < 0 && n >= last) {
        out.push_str(&format!("{n}\n"));
        lines += 1;
        if lines >= 1_000_000 {
            break;
        }
        let Some(next) = n.checked_add(step) else {
            break;
        };
        n = next;
    }
    io.out.write(out.as_bytes());
    0
}

fn read(sh: &mut Shell, args: &[String], io: &mut Io) -> i32 {
    let raw = args.iter().any(|a| a == "-r");
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some(line) = io.stdin.read_line() else {
        for n in &names {
            sh.set(n, "", false);
        }
        return 1;
    };
    let mut text = String::from_utf8_lossy(&line).into_owned();
    if text.ends_with('\n') {
        text.pop();
    }
    if !raw {
        text = text.replace("\\\n", "");
    }
    let names: Vec<&String> = if names.is_empty() {
        return {
            sh.set("REPLY", &text, false);
            0
        };
    } else {
        names
    };
    let mut words = text.split_whitespace();
    for (i, n) in names.iter().enumerate() {
        let value = if i + 1 == names.len() {
            words.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            words.next().unwrap_or_default().to_owned()
        };
        sh.set(n, &value, false);
    }
    0
}

/// A stdin whose bytes are given (for [`tar`] and tests).
pub fn stdin_of(data: Vec<u8>) -> Stdin {
    Stdin::bytes(data)
}

#[cfg(test)]
mod tests {
    use crate::exec::shell::tests::{run, shell};

    #[test]
    fn the_everyday_commands() {
        let mut sh = shell();
        assert_eq!(
            run(&mut sh, "printf '%s=%03d\\n' a 7 b 8").0,
            "a=007\nb=008\n"
        );
        assert_eq!(run(&mut sh, "echo -n x; echo -e 'a\\tb'").0, "xa\tb\n");
        assert_eq!(
            run(
                &mut sh,
                "head -n 1 /etc/config/app.yaml; tail -n1 /etc/config/app.yaml"
            )
            .0,
            "a: 1\nb: 2\n"
        );
        assert_eq!(
            run(
                &mut sh,
                "grep -c : /etc/config/app.yaml; grep -q zzz /etc/config/app.yaml; echo $?"
            )
            .0,
            "2\n1\n"
        );
        assert_eq!(
            run(
                &mut sh,
                "mkdir -p /tmp/a/b && touch /tmp/a/b/f && ls /tmp/a/b && rm -r /tmp/a && ls /tmp"
            )
            .0,
            "f\n"
        );
        assert_eq!(
            run(&mut sh, "ls /nope").1,
            "ls: /nope: No such file or directory\n"
        );
        assert_eq!(
            run(&mut sh, "printenv HOME; printenv NOPE; echo $?").0,
            "/root\n1\n"
        );
        assert_eq!(run(&mut sh, "X=1 env | grep X=").0, "X=1\n");
        assert_eq!(
            run(&mut sh, "basename /a/b.txt .txt; dirname /a/b.txt").0,
            "b\n/a\n"
        );
        assert_eq!(run(&mut sh, "sh -c 'echo $0 $1' me you").0, "me you\n");
        assert_eq!(
            run(
                &mut sh,
                "dd if=/dev/zero of=/tmp/z bs=1k count=2 2>/dev/null; wc -c < /tmp/z"
            )
            .0,
            "2048\n"
        );
        assert_eq!(run(&mut sh, "seq 3 | tail -n 2").0, "2\n3\n");
        assert_eq!(run(&mut sh, "cd /nope").2, 2);
        assert_eq!(
            run(&mut sh, "[ 3 -gt 2 ] && [ -d /tmp ] && [ ! -e /nope ]").2,
            0
        );
    }
}
