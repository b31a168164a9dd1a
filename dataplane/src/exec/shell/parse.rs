//! The shell's grammar: the POSIX command language's lists, pipelines, `&&`
//! and `||`, `if`/`for`/`while`/`until`, `{ }` and `( )` groups, redirections
//! and words with quotes, parameters (`$X`, `${X:-d}`), command substitution
//! and arithmetic, read by recursive descent (written from the POSIX Shell
//! Command Language, XCU chapter 2).

use thiserror::Error;

/// A syntax error, in busybox sh's words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SyntaxError {
    /// A token where it cannot stand.
    #[error("syntax error: unexpected \"{0}\"")]
    Unexpected(String),
    /// The script ended inside a construct.
    #[error("syntax error: unexpected end of file (expecting \"{0}\")")]
    Eof(String),
    /// An unterminated quote.
    #[error("syntax error: unterminated quoted string")]
    Quote,
    /// Constructs nested deeper than [`MAX_DEPTH`].
    #[error("syntax error: nested too deeply")]
    TooDeep,
}

/// How deep commands (`( ( …`) and `${x:-${y:-…}}` words may nest: the
/// parser recurses once per level, and a session's stack is finite.
pub const MAX_DEPTH: usize = 100;

/// One piece of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text; `quoted` text is neither split nor globbed.
    Lit(String, bool),
    /// `$name`, `${name}`, `${name:-word}` and kin.
    Param {
        /// The parameter (`HOME`, `?`, `1`, `@`).
        name: String,
        /// Inside double quotes.
        quoted: bool,
        /// `${name<op>word}`: the operator (`:-`, `-`, `:=`, `:+`, `#`) and word.
        op: Option<(String, Word)>,
    },
    /// `$(...)` or `` `...` ``: the script inside.
    Sub(String, bool),
    /// `$((...))`: the expression inside.
    Arith(String, bool),
}

/// A word: parts concatenated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word(pub Vec<Part>);

impl Word {
    /// The word's text when it is one unquoted literal (a keyword candidate).
    pub fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Part::Lit(s, false)] => Some(s),
            _ => None,
        }
    }
}

/// What a redirection does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirOp {
    /// `>`.
    Out,
    /// `>>`.
    Append,
    /// `<`.
    In,
    /// `>&N`.
    Dup,
}

/// `N>word` and kin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redir {
    /// The descriptor redirected.
    pub fd: u32,
    /// How.
    pub op: RedirOp,
    /// The file (or descriptor number for [`RedirOp::Dup`]).
    pub target: Word,
}

/// A command tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// Assignments, words and redirections.
    Simple {
        /// `NAME=value` before the command.
        assigns: Vec<(String, Word)>,
        /// The command and its arguments.
        words: Vec<Word>,
        /// Redirections.
        redirs: Vec<Redir>,
    },
    /// `a | b | c`, `! a`.
    Pipeline(Vec<Cmd>, bool),
    /// `a && b`.
    And(Box<Cmd>, Box<Cmd>),
    /// `a || b`.
    Or(Box<Cmd>, Box<Cmd>),
    /// `a; b`.
    Seq(Vec<Cmd>),
    /// `if c; then t; elif …; else e; fi`.
    If(Vec<(Cmd, Cmd)>, Option<Box<Cmd>>),
    /// `for name in words; do body; done` (`None`: the positional parameters).
    For(String, Option<Vec<Word>>, Box<Cmd>),
    /// `while c; do b; done` (`true`) or `until` (`false`).
    While(Box<Cmd>, Box<Cmd>, bool),
    /// `{ list; }` with redirections.
    Group(Box<Cmd>, Vec<Redir>),
    /// `( list )`.
    Subshell(Box<Cmd>, Vec<Redir>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(Word),
    Op(&'static str),
    Redir(u32, RedirOp),
    Newline,
}

const OPS: &[&str] = &["&&", "||", ";;", ";", "&", "|", "(", ")"];

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    /// How many `${…}` words enclose this one.
    depth: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn tokens(mut self) -> Result<Vec<Tok>, SyntaxError> {
        let mut out = Vec::new();
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
                self.i += 1;
            }
            if self.s[self.i..].starts_with(b"\\\n") {
                self.i += 2;
                continue;
            }
            let Some(c) = self.peek() else {
                return Ok(out);
            };
            if c == b'#' {
                while !matches!(self.peek(), None | Some(b'\n')) {
                    self.i += 1;
                }
                continue;
            }
            if c == b'\n' {
                self.i += 1;
                out.push(Tok::Newline);
                continue;
            }
            let rest = &self.s[self.i..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let after = &rest[digits..];
            if after.first().is_some_and(|b| matches!(b, b'<' | b'>')) && digits <= 2 {
                let fd_given = std::str::from_utf8(&rest[..digits])
                    .ok()
                    .and_then(|d| d.parse::<u32>().ok());
                let (op, len, fd) = if after.starts_with(b">>") {
                    (RedirOp::Append, 2, 1)
                } else if after.starts_with(b">&") {
                    (RedirOp::Dup, 2, 1)
                } else if after.starts_with(b"&>") {
                    (RedirOp::Out, 2, 1)
                } else if after.starts_with(b"<&") {
                    (RedirOp::Dup, 2, 0)
                } else if after.starts_with(b">") {
                    (RedirOp::Out, 1, 1)
                } else {
                    (RedirOp::In, 1, 0)
                };
                self.i += digits + len;
                out.push(Tok::Redir(fd_given.unwrap_or(fd), op));
                continue;
            }
            if let Some(op) = OPS.iter().find(|op| rest.starts_with(op.as_bytes())) {
                self.i += op.len();
                out.push(Tok::Op(op));
                continue;
            }
            out.push(Tok::Word(self.word()?));
        }
    }

    fn word(&mut self) -> Result<Word, SyntaxError> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        fn flush(parts: &mut Vec<Part>, lit: &mut String, quoted: bool) {
            if !lit.is_empty() || quoted {
                parts.push(Part::Lit(std::mem::take(lit), quoted));
            }
        }
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => {
                    break;
                }
                b'\'' => {
                    flush(&mut parts, &mut lit, false);
                    self.i += 1;
                    let start = self.i;
                    while self.peek().is_some_and(|c| c != b'\'') {
                        self.i += 1;
                    }
                    if self.peek().is_none() {
                        return Err(SyntaxError::Quote);
                    }
                    let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                    self.i += 1;
                    parts.push(Part::Lit(text, true));
                }
                b'"' => {
                    flush(&mut parts, &mut lit, false);
                    self.i += 1;
                    let mut q = String::new();
                    let mut any = false;
                    loop {
                        match self.peek() {
                            None => return Err(SyntaxError::Quote),
                            Some(b'"') => {
                                self.i += 1;
                                break;
                            }
                            Some(b'\\') => {
                                let n = self.s.get(self.i + 1).copied();
                                match n {
                                    Some(b'$' | b'`' | b'"' | b'\\') => {
                                        q.push(n.unwrap_or_default() as char);
                                        self.i += 2;
                                    }
                                    Some(b'\n') => self.i += 2,
                                    _ => {
                                        q.push('\\');
                                        self.i += 1;
                                    }
                                }
                            }
                            Some(b'$' | b'`') => {
                                if let Some(p) = self.dollar(true)? {
                                    if !q.is_empty() {
                                        parts.push(Part::Lit(std::mem::take(&mut q), true));
                                    }
                                    parts.push(p);
                                    any = true;
                                } else {
                                    q.push('$');
                                }
                            }
                            Some(_) => q.push(self.char()),
                        }
                    }
                    if !q.is_empty() || !any {
                        parts.push(Part::Lit(q, true));
                    }
                }
                b'\\' => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'\n') => self.i += 1,
                        Some(_) => {
                            flush(&mut parts, &mut lit, false);
                            parts.push(Part::Lit(self.char().to_string(), true));
                        }
                        None => lit.push('\\'),
                    }
                }
                b'$' | b'`' => match self.dollar(false)? {
                    Some(p) => {
                        flush(&mut parts, &mut lit, false);
                        parts.push(p);
                    }
                    None => lit.push('$'),
                },
                _ => lit.push(self.char()),
            }
        }
        flush(&mut parts, &mut lit, false);
        Ok(Word(parts))
    }

    fn char(&mut self) -> char {
        let rest = &self.s[self.i..];
        let len = match rest[0] {
            b if b < 0x80 => 1,
            b if b >= 0xf0 => 4,
            b if b >= 0xe0 => 3,
            _ => 2,
        }
        .min(rest.len());
        self.i += len;
        String::from_utf8_lossy(&rest[..len])
            .chars()
            .next()
            .unwrap_or('?')
    }

    /// Reads to the byte closing a bracket opened before `self.i`.
    fn balanced(&mut self, open: u8, close: u8) -> Result<String, SyntaxError> {
        let start = self.i;
        let mut depth = 1;
        while let Some(c) = self.peek() {
            match c {
                b'\'' => {
                    self.i += 1;
                    while self.peek().is_some_and(|c| c != b'\'') {
                        self.i += 1;
                    }
                }
                b'\\' => self.i += 1,
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                        self.i += 1;
                        return Ok(text);
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        Err(SyntaxError::Eof(char::from(close).to_string()))
    }

    /// `$…` or a backquote at `self.i`; `None` when the `$` is literal.
    fn dollar(&mut self, quoted: bool) -> Result<Option<Part>, SyntaxError> {
        if self.peek() == Some(b'`') {
            self.i += 1;
            let start = self.i;
            while self.peek().is_some_and(|c| c != b'`') {
                self.i += 1;
            }
            if self.peek().is_none() {
                return Err(SyntaxError::Eof("`".into()));
            }
            let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
            self.i += 1;
            return Ok(Some(Part::Sub(text, quoted)));
        }
        self.i += 1;
        match self.peek() {
            Some(b'(') if self.s.get(self.i + 1) == Some(&b'(') => {
                self.i += 2;
                let inner = self.balanced(b'(', b')')?;
                if self.peek() == Some(b')') {
                    self.i += 1;
                    Ok(Some(Part::Arith(inner, quoted)))
                } else {
                    Ok(Some(Part::Sub(format!("({inner})"), quoted)))
                }
            }
            Some(b'(') => {
                self.i += 1;
                Ok(Some(Part::Sub(self.balanced(b'(', b')')?, quoted)))
            }
            Some(b'{') => {
                self.i += 1;
                let inner = self.balanced(b'{', b'}')?;
                if let Some(n) = inner.strip_prefix('#')
                    && !n.is_empty()
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Ok(Some(Part::Param {
                        name: inner.clone(),
                        quoted,
                        op: None,
                    }));
                }
                let mut name_len = inner
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(inner.len());
                if name_len == 0 && inner.starts_with(|c: char| "?#$@*!".contains(c)) {
                    name_len = 1;
                }
                let (name, rest) = inner.split_at(name_len);
                let op = if rest.is_empty() {
                    None
                } else {
                    let op_len = [
                        ":-", ":=", ":+", ":?", "-", "=", "+", "?", "##", "#", "%%", "%",
                    ]
                    .iter()
                    .find(|o| rest.starts_with(*o))
                    .map(|o| o.len())
                    .ok_or_else(|| SyntaxError::Unexpected(format!("${{{inner}}}")))?;
                    if self.depth >= MAX_DEPTH {
                        return Err(SyntaxError::TooDeep);
                    }
                    let word = Lexer {
                        s: &rest.as_bytes()[op_len..],
                        i: 0,
                        depth: self.depth + 1,
                    }
                    .word()?;
                    Some((rest[..op_len].to_owned(), word))
                };
                Ok(Some(Part::Param {
                    name: name.to_owned(),
                    quoted,
                    op,
                }))
            }
            Some(c) if "?#$@*!-0123456789".contains(c as char) => {
                self.i += 1;
                Ok(Some(Part::Param {
                    name: (c as char).to_string(),
                    quoted,
                    op: None,
                }))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                Ok(Some(Part::Param {
                    name: String::from_utf8_lossy(&self.s[start..self.i]).into_owned(),
                    quoted,
                    op: None,
                }))
            }
            _ => Ok(None),
        }
    }
}

/// Parses a script.
pub fn parse(script: &str) -> Result<Cmd, SyntaxError> {
    let toks = Lexer {
        s: script.as_bytes(),
        i: 0,
        depth: 0,
    }
    .tokens()?;
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
    };
    let cmd = p.list(&[])?;
    match p.toks.get(p.i) {
        None => Ok(cmd),
        Some(t) => Err(SyntaxError::Unexpected(show(t))),
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Word(w) => w.literal().unwrap_or("word").to_owned(),
        Tok::Op(o) => (*o).to_owned(),
        Tok::Redir(..) => "redirection".into(),
        Tok::Newline => "newline".into(),
    }
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
    /// How many commands enclose the one being parsed.
    depth: usize,
}

const KEYWORDS: &[&str] = &["then", "else", "elif", "fi", "do", "done", "}", "esac"];

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn keyword(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => w.literal(),
            _ => None,
        }
    }

    fn newlines(&mut self) {
        while self.peek() == Some(&Tok::Newline) {
            self.i += 1;
        }
    }

    fn expect(&mut self, kw: &str) -> Result<(), SyntaxError> {
        self.newlines();
        match self.peek() {
            Some(Tok::Word(w)) if w.literal() == Some(kw) => {
                self.i += 1;
                Ok(())
            }
            Some(Tok::Op(o)) if *o == kw => {
                self.i += 1;
                Ok(())
            }
            Some(t) => Err(SyntaxError::Unexpected(show(t))),
            None => Err(SyntaxError::Eof(kw.to_owned())),
        }
    }

    /// A list up to one of `stops` (keywords or `)`), or the end.
    fn list(&mut self, stops: &[&str]) -> Result<Cmd, SyntaxError> {
        let mut cmds = Vec::new();
        loop {
            while matches!(self.peek(), Some(Tok::Newline | Tok::Op(";"))) {
                self.i += 1;
            }
            match self.peek() {
                None => break,
                Some(Tok::Op(")")) if stops.contains(&")") => break,
                Some(Tok::Op(o)) if *o != "(" => return Err(SyntaxError::Unexpected((*o).into())),
                _ => {}
            }
            if let Some(k) = self.keyword()
                && (stops.contains(&k) || KEYWORDS.contains(&k))
            {
                break;
            }
            cmds.push(self.and_or()?);
            if let Some(Tok::Op(";" | "&") | Tok::Newline) = self.peek() {
                self.i += 1;
            }
        }
        Ok(if cmds.len() == 1 {
            cmds.remove(0)
        } else {
            Cmd::Seq(cmds)
        })
    }

    fn and_or(&mut self) -> Result<Cmd, SyntaxError> {
        let mut left = self.pipeline()?;
        loop {
            match self.peek() {
                Some(Tok::Op("&&")) => {
                    self.i += 1;
                    self.newlines();
                    left = Cmd::And(Box::new(left), Box::new(self.pipeline()?));
                }
                Some(Tok::Op("||")) => {
                    self.i += 1;
                    self.newlines();
                    left = Cmd::Or(Box::new(left), Box::new(self.pipeline()?));
                }
                _ => return Ok(left),
            }
        }
    }

    fn pipeline(&mut self) -> Result<Cmd, SyntaxError> {
        let negate = self.keyword() == Some("!");
        if negate {
            self.i += 1;
        }
        let mut cmds = vec![self.command()?];
        while self.peek() == Some(&Tok::Op("|")) {
            self.i += 1;
            self.newlines();
            cmds.push(self.command()?);
        }
        Ok(if cmds.len() == 1 && !negate {
            cmds.remove(0)
        } else {
            Cmd::Pipeline(cmds, negate)
        })
    }

    fn command(&mut self) -> Result<Cmd, SyntaxError> {
        if self.depth >= MAX_DEPTH {
            return Err(SyntaxError::TooDeep);
        }
        self.depth += 1;
        let cmd = self.compound_or_simple();
        self.depth -= 1;
        cmd
    }

    fn compound_or_simple(&mut self) -> Result<Cmd, SyntaxError> {
        match self.keyword() {
            Some("if") => {
                self.i += 1;
                let mut arms = Vec::new();
                let cond = self.list(&["then"])?;
                self.expect("then")?;
                let body = self.list(&["elif", "else", "fi"])?;
                arms.push((cond, body));
                let mut otherwise = None;
                loop {
                    self.newlines();
                    match self.keyword() {
                        Some("elif") => {
                            self.i += 1;
                            let c = self.list(&["then"])?;
                            self.expect("then")?;
                            let b = self.list(&["elif", "else", "fi"])?;
                            arms.push((c, b));
                        }
                        Some("else") => {
                            self.i += 1;
                            otherwise = Some(Box::new(self.list(&["fi"])?));
                        }
                        _ => break,
                    }
                }
                self.expect("fi")?;
                return Ok(Cmd::If(arms, otherwise));
            }
            Some(kw @ ("while" | "until")) => {
                let is_while = kw == "while";
                self.i += 1;
                let cond = self.list(&["do"])?;
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                return Ok(Cmd::While(Box::new(cond), Box::new(body), is_while));
            }
            Some("for") => {
                self.i += 1;
                let name = match self.peek() {
                    Some(Tok::Word(w)) => w.literal().unwrap_or_default().to_owned(),
                    Some(t) => return Err(SyntaxError::Unexpected(show(t))),
                    None => return Err(SyntaxError::Eof("do".into())),
                };
                self.i += 1;
                self.newlines();
                let items = if self.keyword() == Some("in") {
                    self.i += 1;
                    let mut items = Vec::new();
                    while let Some(Tok::Word(w)) = self.peek() {
                        items.push(w.clone());
                        self.i += 1;
                    }
                    Some(items)
                } else {
                    None
                };
                if self.peek() == Some(&Tok::Op(";")) {
                    self.i += 1;
                }
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                return Ok(Cmd::For(name, items, Box::new(body)));
            }
            Some("{") => {
                self.i += 1;
                let body = self.list(&["}"])?;
                self.expect("}")?;
                let redirs = self.redirs()?;
                return Ok(Cmd::Group(Box::new(body), redirs));
            }
            _ => {}
        }
        if self.peek() == Some(&Tok::Op("(")) {
            self.i += 1;
            let body = self.list(&[")"])?;
            self.expect(")")?;
            let redirs = self.redirs()?;
            return Ok(Cmd::Subshell(Box::new(body), redirs));
        }
        let mut assigns = Vec::new();
        let mut words = Vec::new();
        let mut redirs = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Tok::Word(w)) => {
                    self.i += 1;
                    if words.is_empty()
                        && let Some((name, value)) = assignment(&w)
                    {
                        assigns.push((name, value));
                    } else {
                        words.push(w);
                    }
                }
                Some(Tok::Redir(fd, op)) => {
                    self.i += 1;
                    match self.peek().cloned() {
                        Some(Tok::Word(target)) => {
                            self.i += 1;
                            redirs.push(Redir { fd, op, target });
                        }
                        Some(t) => return Err(SyntaxError::Unexpected(show(&t))),
                        None => return Err(SyntaxError::Unexpected("newline".into())),
                    }
                }
                _ => break,
            }
        }
        if assigns.is_empty() && words.is_empty() && redirs.is_empty() {
            return Err(match self.peek() {
                Some(t) => SyntaxError::Unexpected(show(t)),
                None => SyntaxError::Unexpected("end of file".into()),
            });
        }
        Ok(Cmd::Simple {
            assigns,
            words,
            redirs,
        })
    }

    fn redirs(&mut self) -> Result<Vec<Redir>, SyntaxError> {
        let mut out = Vec::new();
        while let Some(Tok::Redir(fd, op)) = self.peek().cloned() {
            self.i += 1;
            match self.peek().cloned() {
                Some(Tok::Word(target)) => {
                    self.i += 1;
                    out.push(Redir { fd, op, target });
                }
                _ => return Err(SyntaxError::Unexpected("newline".into())),
            }
        }
        Ok(out)
    }
}

/// `NAME=value` as a word's leading unquoted literal says.
fn assignment(w: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit(first, false)) = w.0.first() else {
        return None;
    };
    let eq = first.find('=')?;
    let name = &first[..eq];
    if name.is_empty()
        || name.starts_with(|c: char| c.is_ascii_digit())
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let mut parts = Vec::new();
    let rest = &first[eq + 1..];
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_owned(), false));
    }
    parts.extend(w.0[1..].iter().cloned());
    Some((name.to_owned(), Word(parts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Word {
        Word(vec![Part::Lit(s.into(), false)])
    }

    #[test]
    fn lists_pipelines_and_redirections() {
        let cmd = parse("cat /etc/x | grep a > out 2>&1 && echo ok; exit 3").unwrap();
        let Cmd::Seq(cmds) = cmd else {
            panic!("{cmd:?}")
        };
        assert_eq!(cmds.len(), 2);
        let Cmd::And(left, _) = &cmds[0] else {
            panic!()
        };
        let Cmd::Pipeline(stages, false) = &**left else {
            panic!()
        };
        let Cmd::Simple { redirs, .. } = &stages[1] else {
            panic!()
        };
        assert_eq!(
            redirs[0],
            Redir {
                fd: 1,
                op: RedirOp::Out,
                target: lit("out")
            }
        );
        assert_eq!(
            redirs[1],
            Redir {
                fd: 2,
                op: RedirOp::Dup,
                target: lit("1")
            }
        );
    }

    #[test]
    fn quotes_and_parameters() {
        let Cmd::Simple { words, assigns, .. } =
            parse("X=1 echo 'a b' \"$HOME/x\" ${Y:-d}").unwrap()
        else {
            panic!()
        };
        assert_eq!(assigns[0].0, "X");
        assert_eq!(words[1], Word(vec![Part::Lit("a b".into(), true)]));
        assert_eq!(
            words[2],
            Word(vec![
                Part::Param {
                    name: "HOME".into(),
                    quoted: true,
                    op: None
                },
                Part::Lit("/x".into(), true)
            ])
        );
        let Part::Param {
            op: Some((op, _)), ..
        } = &words[3].0[0]
        else {
            panic!()
        };
        assert_eq!(op, ":-");
    }

    #[test]
    fn compound_commands() {
        assert!(matches!(
            parse("if true; then echo y; else echo n; fi").unwrap(),
            Cmd::If(..)
        ));
        assert!(matches!(
            parse("for i in 1 2; do echo $i; done").unwrap(),
            Cmd::For(..)
        ));
        assert!(matches!(
            parse("while false\ndo :\ndone").unwrap(),
            Cmd::While(..)
        ));
        assert_eq!(parse("echo 'x"), Err(SyntaxError::Quote));
        assert_eq!(parse("if true; then"), Err(SyntaxError::Eof("fi".into())));
        assert_eq!(parse("| x"), Err(SyntaxError::Unexpected("|".into())));
    }
}
