//! One exec or attach: the command runs on its own thread (a shell blocks on
//! its stdin and sleeps on the clock), its output flows back as events, and
//! under `tty` a terminal's line discipline sits between the stream and the
//! shell: input echoed and edited, a prompt, `\n` written as `\r\n`.

use std::sync::Arc;
use std::sync::mpsc;

use tokio::sync::mpsc::UnboundedSender;

use super::Container;
use super::shell::commands::{self, Resolved};
use super::shell::{Flow, Host, Io, Out, Shell, Stdin};

/// What a session sends back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Bytes on stdout.
    Stdout(Vec<u8>),
    /// Bytes on stderr.
    Stderr(Vec<u8>),
    /// The command ended.
    Done(End),
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// With this exit status.
    Exit(i32),
    /// It could not start: its executable is not in the image.
    NotFound(String),
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// A terminal is attached.
    pub tty: bool,
}

struct Sink {
    tx: UnboundedSender<Event>,
    stderr: bool,
    tty: bool,
    last: u8,
}

impl Out for Sink {
    fn write(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let bytes = if self.tty {
            // ONLCR: a terminal writes each newline as CR LF.
            let mut out = Vec::with_capacity(data.len() + 8);
            for &b in data {
                if b == b'\n' && self.last != b'\r' {
                    out.push(b'\r');
                }
                out.push(b);
                self.last = b;
            }
            out
        } else {
            data.to_vec()
        };
        let _ = self.tx.send(if self.stderr && !self.tty {
            Event::Stderr(bytes)
        } else {
            Event::Stdout(bytes)
        });
    }
}

/// Whether the command is an interactive shell (`sh`, `/bin/bash -il`).
pub fn interactive_shell(command: &[String]) -> bool {
    let Some(first) = command.first() else {
        return false;
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    matches!(name, "sh" | "bash" | "ash")
        && command[1..]
            .iter()
            .all(|a| a.starts_with('-') && !a.contains('c'))
}

/// Starts the command; events arrive on `events`, the last one `Done`.
pub fn start(
    container: Container,
    req: Request,
    stdin: Option<mpsc::Receiver<Vec<u8>>>,
    host: Arc<dyn Host>,
    events: UnboundedSender<Event>,
) {
    let spawned = std::thread::Builder::new()
        .name("kemu-exec".into())
        // The shell recurses per nesting level (bounded by its depth limits).
        .stack_size(64 << 20)
        .spawn({
            let events = events.clone();
            move || {
                let end = run(container, &req, stdin, host.clone(), &events);
                host.finished();
                let _ = events.send(Event::Done(end));
            }
        });
    if spawned.is_err() {
        let _ = events.send(Event::Done(End::Exit(126)));
    }
}

fn run(
    container: Container,
    req: &Request,
    stdin: Option<mpsc::Receiver<Vec<u8>>>,
    host: Arc<dyn Host>,
    events: &UnboundedSender<Event>,
) -> End {
    let mut env = container.env.clone();
    if req.tty && !env.iter().any(|(k, _)| k == "TERM") {
        env.push(("TERM".into(), "xterm".into()));
    }
    let mut sh = Shell::new(
        container.fs,
        &env,
        &container.cwd,
        &container.hostname,
        host,
    );
    let mut input = match stdin {
        Some(rx) => Stdin::stream(move || rx.recv().ok()),
        None => Stdin::empty(),
    };
    let mut out = Sink {
        tx: events.clone(),
        stderr: false,
        tty: req.tty,
        last: 0,
    };
    let mut err = Sink {
        tx: events.clone(),
        stderr: true,
        tty: req.tty,
        last: 0,
    };
    let Some(first) = req.command.first() else {
        return End::Exit(0);
    };
    if let Resolved::NotFound = commands::resolve(&sh, first) {
        return End::NotFound(first.clone());
    }
    if req.tty && interactive_shell(&req.command) {
        return End::Exit(terminal(&mut sh, &mut input, &mut out, &mut err));
    }
    let mut io = Io {
        stdin: &mut input,
        out: &mut out,
        err: &mut err,
    };
    match commands::run(&mut sh, &req.command, &mut io) {
        Ok(s) | Err(Flow::Exit(s)) => End::Exit(s),
        Err(_) => End::Exit(0),
    }
}

fn prompt(sh: &Shell) -> String {
    let home = sh.get("HOME").unwrap_or("/root");
    let dir = if sh.cwd == home {
        "~".to_owned()
    } else {
        sh.cwd.clone()
    };
    format!("{dir} # ")
}

/// An interactive shell behind a terminal: cooked input, echo, a prompt.
fn terminal(sh: &mut Shell, input: &mut Stdin, out: &mut Sink, err: &mut Sink) -> i32 {
    out.write(prompt(sh).as_bytes());
    let mut line: Vec<u8> = Vec::new();
    let mut escape = 0u8;
    while let Some(chunk) = input.read_some() {
        for b in chunk {
            if escape > 0 {
                // Skip a CSI sequence (arrow keys): ESC [ … final byte.
                escape = if escape == 1 && b == b'[' || !(0x40..=0x7e).contains(&b) {
                    2
                } else {
                    0
                };
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    out.write(b"\n");
                    let script = String::from_utf8_lossy(&std::mem::take(&mut line)).into_owned();
                    let mut none = Stdin::empty();
                    let mut io = Io {
                        stdin: &mut none,
                        out: &mut *out,
                        err: &mut *err,
                    };
                    if let Some(code) = sh.run_line(&script, &mut io) {
                        return code;
                    }
                    out.write(prompt(sh).as_bytes());
                }
                0x03 => {
                    line.clear();
                    out.write(b"^C\n");
                    out.write(prompt(sh).as_bytes());
                }
                0x04 if line.is_empty() => {
                    out.write(b"\n");
                    return sh.last_status();
                }
                0x7f | 0x08 if line.pop().is_some() => out.write(b"\x08 \x08"),
                0x7f | 0x08 => {}
                0x1b => escape = 1,
                b if b >= 0x20 || b == b'\t' => {
                    line.push(b);
                    out.write(&[b]);
                }
                _ => {}
            }
        }
    }
    sh.last_status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::fs::{Fs, Node, shared};
    use crate::exec::shell::tests::Still;

    fn container() -> Container {
        Container {
            fs: Fs::new(shared(Node::dir(0o755, 0))),
            env: vec![("HOME".into(), "/root".into())],
            cwd: "/".into(),
            hostname: "web".into(),
            image: "busybox".into(),
        }
    }

    fn collect(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> (String, End) {
        let mut out = String::new();
        loop {
            match rx.blocking_recv() {
                Some(Event::Stdout(b) | Event::Stderr(b)) => {
                    out.push_str(&String::from_utf8_lossy(&b))
                }
                Some(Event::Done(end)) => return (out, end),
                None => return (out, End::Exit(-1)),
            }
        }
    }

    #[test]
    fn a_terminal_echoes_prompts_and_exits_with_the_shells_status() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::channel();
        in_tx.send(b"echo hi\rexit 4\r".to_vec()).unwrap();
        start(
            container(),
            Request {
                command: vec!["sh".into()],
                tty: true,
            },
            Some(in_rx),
            Arc::new(Still),
            tx,
        );
        let (out, end) = collect(&mut rx);
        assert_eq!(out, "/ # echo hi\r\nhi\r\n/ # exit 4\r\n");
        assert_eq!(end, End::Exit(4));
    }

    #[test]
    fn a_missing_executable_does_not_start() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        start(
            container(),
            Request {
                command: vec!["nginx".into()],
                tty: false,
            },
            None,
            Arc::new(Still),
            tx,
        );
        assert_eq!(collect(&mut rx).1, End::NotFound("nginx".into()));
    }
}
