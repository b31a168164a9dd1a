//! A small POSIX-style shell that runs in a simulated container: it reads
//! what [`parse`] parses, expands words (parameters, command substitution,
//! arithmetic, field splitting, globs against the container's filesystem)
//! and runs the commands of [`commands`] with redirections and pipes (each
//! stage of a pipe runs to its end before the next reads its output). What a
//! command is and how it answers follows busybox, the shell of the images
//! most tests exec into (`sh: X: not found`, exit 127); no shell's code is
//! copied.

mod arith;
pub mod commands;
mod expr;
mod glob;
pub mod parse;

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use self::parse::{Cmd, Part, Redir, RedirOp, Word};
use crate::exec::fs::Fs;

/// What the shell needs from the world outside the container.
pub trait Host: Send + Sync {
    /// Now, in seconds since the epoch, on the cluster's clock.
    fn now(&self) -> i64;
    /// Sleeps on the cluster's clock; `false` when the session ended first.
    fn sleep(&self, d: Duration) -> bool;
    /// The stream went away: a script still running (`while :; do :; done`)
    /// stops instead of spinning on for no one.
    fn ended(&self) -> bool {
        false
    }
    /// The command has ended (the kubelet probes the container again: the
    /// command may have changed what its server serves).
    fn finished(&self) {}
}

/// Standard input: bytes pulled on demand from a source (a stream's stdin
/// frames, a file, the output of a pipe's previous stage).
pub struct Stdin {
    src: Option<Box<dyn FnMut() -> Option<Vec<u8>> + Send>>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Stdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdin")
            .field("buffered", &self.buf.len())
            .finish()
    }
}

impl Stdin {
    /// No input (EOF at once).
    pub fn empty() -> Stdin {
        Stdin {
            src: None,
            buf: Vec::new(),
        }
    }

    /// These bytes, then EOF.
    pub fn bytes(data: Vec<u8>) -> Stdin {
        Stdin {
            src: None,
            buf: data,
        }
    }

    /// Chunks from `next` until it answers `None`.
    pub fn stream(next: impl FnMut() -> Option<Vec<u8>> + Send + 'static) -> Stdin {
        Stdin {
            src: Some(Box::new(next)),
            buf: Vec::new(),
        }
    }

    fn fill(&mut self) -> bool {
        match self.src.as_mut().and_then(|next| next()) {
            Some(chunk) => {
                self.buf.extend_from_slice(&chunk);
                true
            }
            None => {
                self.src = None;
                false
            }
        }
    }

    /// Everything up to EOF.
    pub fn read_all(&mut self) -> Vec<u8> {
        while self.fill() {}
        std::mem::take(&mut self.buf)
    }

    /// One line with its newline (the last one may have none); `None` at EOF.
    pub fn read_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                return Some(self.buf.drain(..=i).collect());
            }
            if !self.fill() {
                return (!self.buf.is_empty()).then(|| std::mem::take(&mut self.buf));
            }
        }
    }

    /// What is buffered, or the next chunk; `None` at EOF.
    pub fn read_some(&mut self) -> Option<Vec<u8>> {
        if self.buf.is_empty() && !self.fill() {
            return None;
        }
        Some(std::mem::take(&mut self.buf))
    }
}

/// Where a command's output goes.
pub trait Out {
    /// Writes bytes.
    fn write(&mut self, data: &[u8]);
}

impl Out for Vec<u8> {
    fn write(&mut self, data: &[u8]) {
        self.extend_from_slice(data);
    }
}

/// A command's standard streams.
pub struct Io<'a> {
    /// Standard input.
    pub stdin: &'a mut Stdin,
    /// Standard output.
    pub out: &'a mut dyn Out,
    /// Standard error.
    pub err: &'a mut dyn Out,
}

impl Io<'_> {
    /// Writes a line to standard error.
    pub fn error(&mut self, msg: impl AsRef<str>) {
        self.err.write(msg.as_ref().as_bytes());
        self.err.write(b"\n");
    }
}

/// How a command leaves the flow of its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// `exit N` (or the session ended).
    Exit(i32),
    /// `break N`.
    Break(u32),
    /// `continue N`.
    Continue(u32),
}

/// A command's result: its status, or a change of flow.
pub type Status = Result<i32, Flow>;

/// One shell variable.
#[derive(Debug, Clone)]
struct Var {
    name: String,
    value: String,
    exported: bool,
}

/// A shell session in one container.
#[derive(Clone)]
pub struct Shell {
    /// The container's filesystem.
    pub fs: Fs,
    /// The working directory.
    pub cwd: String,
    /// The container's hostname.
    pub hostname: String,
    /// The clock and the session.
    pub host: std::sync::Arc<dyn Host>,
    vars: Vec<Var>,
    args: Vec<String>,
    status: i32,
    errexit: bool,
    /// The images' commands that exist (`None`: every one of [`commands`]).
    pub available: Option<Vec<&'static str>>,
    /// Command trees being run, enclosing ones included (`eval`, `$(…)`
    /// and `sh -c` nest them; the copies a subshell makes carry it on).
    depth: usize,
}

/// How deep running commands may nest before the shell gives up, as a
/// real one would when its stack ran out (`x='eval "$x"'; eval "$x"`).
const MAX_RUN_DEPTH: usize = 400;

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell").field("cwd", &self.cwd).finish()
    }
}

impl Shell {
    /// A shell with the container's environment, in its working directory.
    pub fn new(
        fs: Fs,
        env: &[(String, String)],
        cwd: &str,
        hostname: &str,
        host: std::sync::Arc<dyn Host>,
    ) -> Shell {
        let mut sh = Shell {
            fs,
            cwd: cwd.to_owned(),
            hostname: hostname.to_owned(),
            host,
            vars: Vec::new(),
            args: vec!["sh".into()],
            status: 0,
            errexit: false,
            available: None,
            depth: 0,
        };
        for (k, v) in env {
            sh.set(k, v, true);
        }
        if sh.get("PWD").is_none() {
            sh.set("PWD", cwd, true);
        }
        sh
    }

    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.as_str())
    }

    /// Sets a variable (exported when `export`, kept exported if it was).
    pub fn set(&mut self, name: &str, value: &str, export: bool) {
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => {
                v.value = value.to_owned();
                v.exported |= export;
            }
            None => self.vars.push(Var {
                name: name.to_owned(),
                value: value.to_owned(),
                exported: export,
            }),
        }
    }

    /// Marks a variable exported (made empty if unset).
    pub fn export(&mut self, name: &str) {
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => v.exported = true,
            None => self.set(name, "", true),
        }
    }

    /// Removes a variable.
    pub fn unset(&mut self, name: &str) {
        self.vars.retain(|v| v.name != name);
    }

    /// The exported variables, in the order they were made.
    pub fn environment(&self) -> Vec<(String, String)> {
        self.vars
            .iter()
            .filter(|v| v.exported)
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect()
    }

    /// Sets `$0` and the positional parameters.
    pub fn set_args(&mut self, args: Vec<String>) {
        self.args = args;
    }

    /// Turns `set -e` on or off.
    pub fn set_errexit(&mut self, on: bool) {
        self.errexit = on;
    }

    /// The status of the last command.
    pub fn last_status(&self) -> i32 {
        self.status
    }

    /// Runs a script; its exit status (syntax errors are status 2).
    pub fn run_script(&mut self, script: &str, io: &mut Io) -> i32 {
        match parse::parse(script) {
            Ok(cmd) => match self.run(&cmd, io) {
                Ok(s) | Err(Flow::Exit(s)) => s,
                Err(_) => self.status,
            },
            Err(e) => {
                io.error(format!("sh: {e}"));
                2
            }
        }
    }

    /// Runs a script and reports whether it asked to exit.
    pub fn run_line(&mut self, script: &str, io: &mut Io) -> Option<i32> {
        match parse::parse(script) {
            Ok(cmd) => match self.run(&cmd, io) {
                Err(Flow::Exit(s)) => Some(s),
                _ => None,
            },
            Err(e) => {
                io.error(format!("sh: {e}"));
                self.status = 2;
                None
            }
        }
    }

    /// Runs a command tree.
    pub fn run(&mut self, cmd: &Cmd, io: &mut Io) -> Status {
        if self.host.ended() {
            return Err(Flow::Exit(129));
        }
        if self.depth >= MAX_RUN_DEPTH {
            io.error("sh: nested too deeply");
            return Err(Flow::Exit(2));
        }
        self.depth += 1;
        let status = self.run_tree(cmd, io);
        self.depth -= 1;
        status
    }

    fn run_tree(&mut self, cmd: &Cmd, io: &mut Io) -> Status {
        let status = match cmd {
            Cmd::Simple {
                assigns,
                words,
                redirs,
            } => self.simple(assigns, words, redirs, io)?,
            Cmd::Pipeline(stages, negate) => {
                let s = self.pipeline(stages, io)?;
                if *negate { i32::from(s == 0) } else { s }
            }
            Cmd::And(a, b) => {
                let s = self.run_unchecked(a, io)?;
                if s == 0 { self.run(b, io)? } else { s }
            }
            Cmd::Or(a, b) => {
                let s = self.run_unchecked(a, io)?;
                if s != 0 { self.run(b, io)? } else { s }
            }
            Cmd::Seq(cmds) => {
                let mut s = 0;
                for c in cmds {
                    s = self.run(c, io)?;
                }
                s
            }
            Cmd::If(arms, otherwise) => {
                let mut ran = None;
                for (cond, body) in arms {
                    if self.run_unchecked(cond, io)? == 0 {
                        ran = Some(self.run(body, io)?);
                        break;
                    }
                }
                match (ran, otherwise) {
                    (Some(s), _) => s,
                    (None, Some(e)) => self.run(e, io)?,
                    (None, None) => 0,
                }
            }
            Cmd::For(name, items, body) => {
                let items = match items {
                    Some(words) => self.expand_all(words, io)?,
                    None => self.args[1..].to_vec(),
                };
                let mut s = 0;
                for item in items {
                    self.set(name, &item, false);
                    match self.run(body, io) {
                        Ok(x) => s = x,
                        Err(Flow::Break(n)) if n > 1 => return Err(Flow::Break(n - 1)),
                        Err(Flow::Break(_)) => break,
                        Err(Flow::Continue(n)) if n > 1 => return Err(Flow::Continue(n - 1)),
                        Err(Flow::Continue(_)) => continue,
                        Err(e) => return Err(e),
                    }
                }
                s
            }
            Cmd::While(cond, body, is_while) => {
                let mut s = 0;
                loop {
                    let c = self.run_unchecked(cond, io)?;
                    if (c == 0) != *is_while {
                        break;
                    }
                    match self.run(body, io) {
                        Ok(x) => s = x,
                        Err(Flow::Break(n)) if n > 1 => return Err(Flow::Break(n - 1)),
                        Err(Flow::Break(_)) => break,
                        Err(Flow::Continue(n)) if n > 1 => return Err(Flow::Continue(n - 1)),
                        Err(Flow::Continue(_)) => continue,
                        Err(e) => return Err(e),
                    }
                }
                s
            }
            Cmd::Group(body, redirs) => self.redirected(redirs, io, |sh, io| sh.run(body, io))?,
            Cmd::Subshell(body, redirs) => {
                let mut sub = self.clone();
                self.redirected(redirs, io, move |_, io| match sub.run(body, io) {
                    Ok(s) | Err(Flow::Exit(s)) => Ok(s),
                    Err(_) => Ok(sub.status),
                })?
            }
        };
        self.status = status;
        if self.errexit && status != 0 && matches!(cmd, Cmd::Simple { .. } | Cmd::Subshell(..)) {
            return Err(Flow::Exit(status));
        }
        Ok(status)
    }

    /// Runs a condition: `set -e` does not end the shell on its failure.
    fn run_unchecked(&mut self, cmd: &Cmd, io: &mut Io) -> Status {
        let errexit = std::mem::replace(&mut self.errexit, false);
        let r = self.run(cmd, io);
        self.errexit = errexit;
        r
    }

    fn pipeline(&mut self, stages: &[Cmd], io: &mut Io) -> Status {
        let mut input: Option<Vec<u8>> = None;
        let mut status = 0;
        for (i, stage) in stages.iter().enumerate() {
            let last = i + 1 == stages.len();
            let mut stdin = match input.take() {
                Some(data) => Stdin::bytes(data),
                None if i == 0 => std::mem::replace(io.stdin, Stdin::empty()),
                None => Stdin::empty(),
            };
            let mut buf = Vec::new();
            let mut sub = self.clone();
            let out: &mut dyn Out = if last { &mut *io.out } else { &mut buf };
            let mut stage_io = Io {
                stdin: &mut stdin,
                out,
                err: &mut *io.err,
            };
            // Every stage of a pipe runs in a subshell, as in busybox.
            status = match sub.run(stage, &mut stage_io) {
                Ok(s) | Err(Flow::Exit(s)) => s,
                Err(_) => sub.status,
            };
            if i == 0 {
                *io.stdin = stdin;
            }
            if stages.len() == 1 {
                *self = sub;
            }
            if !last {
                input = Some(buf);
            }
        }
        Ok(status)
    }

    fn simple(
        &mut self,
        assigns: &[(String, Word)],
        words: &[Word],
        redirs: &[Redir],
        io: &mut Io,
    ) -> Status {
        let argv = self.expand_all(words, io)?;
        let mut values = Vec::with_capacity(assigns.len());
        for (name, w) in assigns {
            values.push((name.clone(), self.expand_one(w, io)?));
        }
        if argv.is_empty() {
            for (name, value) in values {
                self.set(&name, &value, false);
            }
            return self.redirected(redirs, io, |sh, _| Ok(sh.status));
        }
        if values.is_empty() {
            return self.redirected(redirs, io, |sh, io| commands::run(sh, &argv, io));
        }
        // `X=1 cmd`: the assignments hold for that command only.
        let saved: Vec<_> = values
            .iter()
            .map(|(n, _)| (n.clone(), self.vars.iter().find(|v| &v.name == n).cloned()))
            .collect();
        for (name, value) in &values {
            self.set(name, value, true);
        }
        let r = self.redirected(redirs, io, |sh, io| commands::run(sh, &argv, io));
        for (name, old) in saved {
            self.unset(&name);
            if let Some(v) = old {
                self.vars.push(v);
            }
        }
        r
    }

    /// Runs `f` with the redirections applied.
    fn redirected(
        &mut self,
        redirs: &[Redir],
        io: &mut Io,
        f: impl FnOnce(&mut Shell, &mut Io) -> Status,
    ) -> Status {
        if redirs.is_empty() {
            return f(self, io);
        }
        // fd 1 and 2 each go to the parent's stdout or stderr, a file, or nowhere.
        let mut targets = [Sink::Out, Sink::Err];
        let mut stdin: Option<Stdin> = None;
        for r in redirs {
            let target = self.expand_one(&r.target, io)?;
            match r.op {
                RedirOp::In => match self.fs.read(&self.cwd, &target) {
                    Ok(data) => stdin = Some(Stdin::bytes(data)),
                    Err(e) => {
                        io.error(format!("sh: can't open '{target}': {e}"));
                        return Ok(1);
                    }
                },
                RedirOp::Dup if r.fd <= 2 => {
                    let sink = match target.as_str() {
                        "1" => targets[0].clone(),
                        "2" => targets[1].clone(),
                        "-" => Sink::Null,
                        _ => {
                            io.error(format!("sh: {target}: bad file descriptor"));
                            return Ok(1);
                        }
                    };
                    if r.fd >= 1 {
                        targets[r.fd as usize - 1] = sink;
                    }
                }
                RedirOp::Out | RedirOp::Append if (1..=2).contains(&r.fd) => {
                    let sink = match target.as_str() {
                        "/dev/null" => Sink::Null,
                        "/dev/stdout" => Sink::Out,
                        "/dev/stderr" => Sink::Err,
                        _ => {
                            let now = self.host.now();
                            let append = r.op == RedirOp::Append;
                            if let Err(e) = self.fs.write(&self.cwd, &target, b"", append, now) {
                                io.error(format!("sh: can't create {target}: {e}"));
                                return Ok(1);
                            }
                            Sink::File(target)
                        }
                    };
                    targets[r.fd as usize - 1] = sink;
                }
                _ => {}
            }
        }
        let files: RefCell<HashMap<String, Vec<u8>>> = RefCell::new(HashMap::new());
        let parent_out = RefCell::new(&mut *io.out);
        let parent_err = RefCell::new(&mut *io.err);
        let [t1, t2] = targets;
        let mut out = Routed {
            sink: t1,
            out: &parent_out,
            err: &parent_err,
            files: &files,
        };
        let mut err = Routed {
            sink: t2,
            out: &parent_out,
            err: &parent_err,
            files: &files,
        };
        let mut own_stdin;
        let stdin: &mut Stdin = match stdin {
            Some(s) => {
                own_stdin = s;
                &mut own_stdin
            }
            None => &mut *io.stdin,
        };
        let r = f(
            self,
            &mut Io {
                stdin,
                out: &mut out,
                err: &mut err,
            },
        );
        let now = self.host.now();
        for (path, data) in files.into_inner() {
            let _ = self.fs.write(&self.cwd, &path, &data, true, now);
        }
        r
    }

    /// A word expanded to one string (no splitting, no globs).
    pub fn expand_one(&mut self, w: &Word, io: &mut Io) -> Result<String, Flow> {
        let fields = self.expand(w, false, io)?;
        Ok(fields.join(" "))
    }

    /// Words expanded to fields.
    pub fn expand_all(&mut self, words: &[Word], io: &mut Io) -> Result<Vec<String>, Flow> {
        let mut out = Vec::new();
        for w in words {
            out.extend(self.expand(w, true, io)?);
        }
        Ok(out)
    }

    fn param(&mut self, name: &str) -> Option<String> {
        match name {
            "?" => Some(self.status.to_string()),
            "$" => Some("1".into()),
            "#" => Some(self.args.len().saturating_sub(1).to_string()),
            "@" | "*" => Some(self.args[1..].join(" ")),
            "!" | "-" => Some(String::new()),
            n if n.starts_with('#') && n.len() > 1 => Some(
                self.param(&n[1..])
                    .unwrap_or_default()
                    .chars()
                    .count()
                    .to_string(),
            ),
            n if n.chars().all(|c| c.is_ascii_digit()) => n
                .parse::<usize>()
                .ok()
                .and_then(|i| self.args.get(i).cloned()),
            n => self.get(n).map(str::to_owned),
        }
    }

    fn expand(&mut self, w: &Word, split: bool, io: &mut Io) -> Result<Vec<String>, Flow> {
        // (text, may split, may glob) pieces of each field.
        let mut fields: Vec<(String, bool, bool)> = Vec::new();
        let mut cur = String::new();
        let mut started = false;
        let mut globbable = false;
        let push_split = |text: &str,
                          cur: &mut String,
                          started: &mut bool,
                          fields: &mut Vec<(String, bool, bool)>,
                          globbable: &mut bool| {
            let mut pieces = text.split([' ', '\t', '\n']).peekable();
            let lead = text.starts_with([' ', '\t', '\n']);
            if lead && *started {
                fields.push((std::mem::take(cur), true, *globbable));
                *globbable = false;
                *started = false;
            }
            while let Some(p) = pieces.next() {
                if !p.is_empty() {
                    cur.push_str(p);
                    *started = true;
                }
                if pieces.peek().is_some() && *started {
                    fields.push((std::mem::take(cur), true, *globbable));
                    *globbable = false;
                    *started = false;
                }
            }
        };
        for part in &w.0 {
            match part {
                Part::Lit(text, quoted) => {
                    cur.push_str(text);
                    started = true;
                    globbable |= !quoted && text.contains(['*', '?', '[']);
                }
                Part::Param { name, quoted, op } => {
                    if name == "@" && *quoted && split {
                        let args = self.args[1..].to_vec();
                        for (i, a) in args.iter().enumerate() {
                            cur.push_str(a);
                            started = true;
                            if i + 1 < args.len() {
                                fields.push((std::mem::take(&mut cur), false, false));
                            }
                        }
                        continue;
                    }
                    let value = self.param_op(name, op.as_ref(), io)?;
                    if *quoted || !split {
                        cur.push_str(&value);
                        started = true;
                    } else {
                        push_split(&value, &mut cur, &mut started, &mut fields, &mut globbable);
                    }
                }
                Part::Sub(script, quoted) => {
                    let value = self.substitute(script, io);
                    if *quoted || !split {
                        cur.push_str(&value);
                        started = true;
                    } else {
                        push_split(&value, &mut cur, &mut started, &mut fields, &mut globbable);
                    }
                }
                Part::Arith(expr, _) => match arith::eval(expr, self) {
                    Ok(v) => {
                        cur.push_str(&v.to_string());
                        started = true;
                    }
                    Err(e) => {
                        io.error(format!("sh: arithmetic syntax error: {e}"));
                        return Err(Flow::Exit(2));
                    }
                },
            }
        }
        if started || w.0.iter().any(|p| matches!(p, Part::Lit(_, true))) {
            fields.push((cur, true, globbable));
        }
        let mut out = Vec::new();
        for (f, _, glob) in fields {
            if glob && split {
                let matches = glob::expand(&self.fs, &self.cwd, &f);
                if !matches.is_empty() {
                    out.extend(matches);
                    continue;
                }
            }
            out.push(f);
        }
        Ok(out)
    }

    fn param_op(
        &mut self,
        name: &str,
        op: Option<&(String, Word)>,
        io: &mut Io,
    ) -> Result<String, Flow> {
        let value = self.param(name);
        let Some((op, word)) = op else {
            return Ok(value.unwrap_or_default());
        };
        let null = value.as_deref().is_none_or(str::is_empty);
        let unset = value.is_none();
        let missing = if op.starts_with(':') { null } else { unset };
        Ok(match op.as_str() {
            ":-" | "-" if missing => self.expand_one(word, io)?,
            ":=" | "=" if missing => {
                let v = self.expand_one(word, io)?;
                self.set(name, &v, false);
                v
            }
            ":+" | "+" if !missing => self.expand_one(word, io)?,
            ":+" | "+" => String::new(),
            ":?" | "?" if missing => {
                let msg = self.expand_one(word, io)?;
                let msg = if msg.is_empty() {
                    "parameter not set".into()
                } else {
                    msg
                };
                io.error(format!("sh: {name}: {msg}"));
                return Err(Flow::Exit(1));
            }
            "#" | "##" | "%" | "%%" => {
                let pat = self.expand_one(word, io)?;
                let v = value.unwrap_or_default();
                glob::trim(&v, &pat, op)
            }
            _ => value.unwrap_or_default(),
        })
    }

    fn substitute(&mut self, script: &str, io: &mut Io) -> String {
        let mut sub = self.clone();
        let mut out = Vec::new();
        let mut stdin = Stdin::empty();
        let status = sub.run_script(
            script,
            &mut Io {
                stdin: &mut stdin,
                out: &mut out,
                err: &mut *io.err,
            },
        );
        self.status = status;
        let mut s = String::from_utf8_lossy(&out).into_owned();
        while s.ends_with('\n') {
            s.pop();
        }
        s
    }
}

#[derive(Debug, Clone)]
enum Sink {
    Out,
    Err,
    File(String),
    Null,
}

struct Routed<'a, 'b, 'c> {
    sink: Sink,
    out: &'a RefCell<&'b mut (dyn Out + 'c)>,
    err: &'a RefCell<&'b mut (dyn Out + 'c)>,
    files: &'a RefCell<HashMap<String, Vec<u8>>>,
}

impl Out for Routed<'_, '_, '_> {
    fn write(&mut self, data: &[u8]) {
        match &self.sink {
            Sink::Out => self.out.borrow_mut().write(data),
            Sink::Err => self.err.borrow_mut().write(data),
            Sink::File(path) => self
                .files
                .borrow_mut()
                .entry(path.clone())
                .or_default()
                .extend_from_slice(data),
            Sink::Null => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::exec::fs::{Node, components, put, shared};

    /// A host whose clock stands still and whose sleeps return at once.
    pub struct Still;

    impl Host for Still {
        fn now(&self) -> i64 {
            1_767_225_600
        }
        fn sleep(&self, _: Duration) -> bool {
            true
        }
    }

    pub fn shell() -> Shell {
        let mut root = Node::dir(0o755, 0);
        put(
            &mut root,
            &components("/", "/etc/config/app.yaml"),
            Node::file("a: 1\nb: 2\n", 0o644, 0),
        );
        put(&mut root, &components("/", "/tmp"), Node::dir(0o777, 0));
        Shell::new(
            Fs::new(shared(root)),
            &[
                ("PATH".into(), "/bin".into()),
                ("HOME".into(), "/root".into()),
            ],
            "/",
            "web-0",
            std::sync::Arc::new(Still),
        )
    }

    /// Runs a script: (stdout, stderr, status).
    pub fn run(sh: &mut Shell, script: &str) -> (String, String, i32) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut stdin = Stdin::empty();
        let status = sh.run_script(
            script,
            &mut Io {
                stdin: &mut stdin,
                out: &mut out,
                err: &mut err,
            },
        );
        (
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
            status,
        )
    }

    #[test]
    fn nesting_and_long_names_are_refused_not_overflowed() {
        // A session's thread has this stack; the limits must hold within it.
        let checks = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| {
                let mut sh = shell();
                let too_deep = "sh: syntax error: nested too deeply\n";
                let parens = format!("{}true", "( ".repeat(5000));
                assert_eq!(run(&mut sh, &parens), (String::new(), too_deep.into(), 2));
                let words = format!("echo {}x{}", "${X:-".repeat(5000), "}".repeat(5000));
                assert_eq!(run(&mut sh, &words), (String::new(), too_deep.into(), 2));
                assert_eq!(
                    run(&mut sh, "x='eval \"$x\"'; eval \"$x\""),
                    (String::new(), "sh: nested too deeply\n".into(), 2)
                );
                let (_, err, status) = run(&mut sh, &format!("touch /tmp/{}", "n".repeat(300)));
                assert!(err.ends_with("File name too long\n"), "{err}");
                assert_eq!(status, 1);
                assert_eq!(run(&mut sh, "echo ok").0, "ok\n");
            })
            .unwrap();
        checks.join().unwrap();
    }

    #[test]
    fn a_script_gives_its_output_and_exit_code() {
        let mut sh = shell();
        assert_eq!(
            run(&mut sh, "cat /etc/config/app.yaml; exit 3"),
            ("a: 1\nb: 2\n".into(), String::new(), 3)
        );
        assert_eq!(
            run(&mut sh, "nope"),
            (String::new(), "sh: nope: not found\n".into(), 127)
        );
        assert_eq!(
            run(&mut sh, "false || echo $?"),
            ("1\n".into(), String::new(), 0)
        );
        assert_eq!(
            run(&mut sh, "echo $(hostname) ${X:-dflt} \"$HOME\""),
            ("web-0 dflt /root\n".into(), String::new(), 0)
        );
    }

    #[test]
    fn pipes_redirections_and_files() {
        let mut sh = shell();
        assert_eq!(
            run(&mut sh, "cat /etc/config/app.yaml | grep b | wc -l").0,
            "1\n"
        );
        assert_eq!(
            run(
                &mut sh,
                "echo hi > /tmp/x && echo there >> /tmp/x; cat /tmp/x"
            )
            .0,
            "hi\nthere\n"
        );
        assert_eq!(
            run(&mut sh, "cat /nope 2>&1").0,
            "cat: can't open '/nope': No such file or directory\n"
        );
        assert_eq!(run(&mut sh, "cat /nope 2>/dev/null; echo $?").0, "1\n");
        assert_eq!(
            run(&mut sh, "echo /etc/config/*").0,
            "/etc/config/app.yaml\n"
        );
    }

    #[test]
    fn control_flow_and_arithmetic() {
        let mut sh = shell();
        assert_eq!(
            run(&mut sh, "for i in 1 2 3; do echo $((i * 2)); done").0,
            "2\n4\n6\n"
        );
        assert_eq!(
            run(
                &mut sh,
                "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i"
            )
            .0,
            "3\n"
        );
        assert_eq!(
            run(
                &mut sh,
                "if test -f /etc/config/app.yaml; then echo yes; else echo no; fi"
            )
            .0,
            "yes\n"
        );
        assert_eq!(
            run(&mut shell(), "set -e; false; echo unreached"),
            (String::new(), String::new(), 1)
        );
        assert_eq!(run(&mut sh, "(cd /tmp; exit 4); echo $? $PWD").0, "4 /\n");
        assert_eq!(run(&mut sh, "echo 'x").2, 2);
    }
}
