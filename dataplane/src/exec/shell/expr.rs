//! `expr`, as busybox's applet evaluates its arguments: `|`, `&`, the
//! comparisons, `+ - * / %`, parentheses, `length`, `substr` and `index`.
//! The value is printed; the status is 1 when it is null or 0, 2 for an
//! error. Regular-expression matching (`:`, `match`) is not there: it is a
//! syntax error here.

use super::Io;

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i64),
    Str(String),
}

impl Val {
    fn int(&self) -> Option<i64> {
        match self {
            Val::Int(n) => Some(*n),
            Val::Str(s) => s.parse().ok(),
        }
    }

    fn text(&self) -> String {
        match self {
            Val::Int(n) => n.to_string(),
            Val::Str(s) => s.clone(),
        }
    }

    fn null(&self) -> bool {
        match self {
            Val::Int(n) => *n == 0,
            Val::Str(s) => s.is_empty() || s.parse::<i64>() == Ok(0),
        }
    }
}

struct Parser<'a> {
    args: &'a [String],
    at: usize,
}

type Res = Result<Val, &'static str>;

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let a = self.args.get(self.at).map(String::as_str);
        self.at += 1;
        a
    }

    fn eat(&mut self, op: &str) -> bool {
        if self.peek() == Some(op) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Res {
        let mut l = self.and()?;
        while self.eat("|") {
            let r = self.and()?;
            if l.null() {
                l = if r.null() { Val::Int(0) } else { r };
            }
        }
        Ok(l)
    }

    fn and(&mut self) -> Res {
        let mut l = self.compare()?;
        while self.eat("&") {
            let r = self.compare()?;
            if l.null() || r.null() {
                l = Val::Int(0);
            }
        }
        Ok(l)
    }

    fn compare(&mut self) -> Res {
        let mut l = self.sum()?;
        while let Some(op) = self
            .peek()
            .filter(|o| matches!(*o, "<" | "<=" | "=" | "==" | "!=" | ">=" | ">"))
            .map(str::to_owned)
        {
            self.at += 1;
            let r = self.sum()?;
            let ord = match (l.int(), r.int()) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => l.text().cmp(&r.text()),
            };
            let yes = match op.as_str() {
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                "=" | "==" => ord.is_eq(),
                "!=" => ord.is_ne(),
                ">=" => ord.is_ge(),
                _ => ord.is_gt(),
            };
            l = Val::Int(i64::from(yes));
        }
        Ok(l)
    }

    fn sum(&mut self) -> Res {
        let mut l = self.product()?;
        while let Some(op) = self
            .peek()
            .filter(|o| matches!(*o, "+" | "-"))
            .map(str::to_owned)
        {
            self.at += 1;
            let r = self.product()?;
            let (a, b) = ints(&l, &r)?;
            l = Val::Int(
                if op == "+" {
                    a.checked_add(b)
                } else {
                    a.checked_sub(b)
                }
                .ok_or("overflow")?,
            );
        }
        Ok(l)
    }

    fn product(&mut self) -> Res {
        let mut l = self.primary()?;
        while let Some(op) = self
            .peek()
            .filter(|o| matches!(*o, "*" | "/" | "%"))
            .map(str::to_owned)
        {
            self.at += 1;
            let r = self.primary()?;
            let (a, b) = ints(&l, &r)?;
            if op != "*" && b == 0 {
                return Err("division by zero");
            }
            l = Val::Int(
                match op.as_str() {
                    "*" => a.checked_mul(b),
                    "/" => a.checked_div(b),
                    _ => a.checked_rem(b),
                }
                .ok_or("overflow")?,
            );
        }
        Ok(l)
    }

    fn primary(&mut self) -> Res {
        match self.next() {
            None => Err("syntax error"),
            Some("(") => {
                let v = self.or()?;
                if self.eat(")") {
                    Ok(v)
                } else {
                    Err("syntax error")
                }
            }
            Some("length") => {
                let s = self.primary()?.text();
                Ok(Val::Int(
                    i64::try_from(s.chars().count()).unwrap_or(i64::MAX),
                ))
            }
            Some("substr") => {
                let s = self.primary()?.text();
                let (pos, len) = (self.primary()?.int(), self.primary()?.int());
                let (Some(pos), Some(len)) = (pos, len) else {
                    return Err("non-numeric argument");
                };
                let out: String = if pos < 1 || len < 1 {
                    String::new()
                } else {
                    let skip = usize::try_from(pos - 1).unwrap_or(usize::MAX);
                    let take = usize::try_from(len).unwrap_or(usize::MAX);
                    s.chars().skip(skip).take(take).collect()
                };
                Ok(Val::Str(out))
            }
            Some("index") => {
                let s = self.primary()?.text();
                let chars = self.primary()?.text();
                let at = s
                    .chars()
                    .position(|c| chars.contains(c))
                    .map_or(0, |i| i + 1);
                Ok(Val::Int(i64::try_from(at).unwrap_or(0)))
            }
            Some(":" | "match") => Err("syntax error"),
            Some(word) => Ok(Val::Str(word.to_owned())),
        }
    }
}

fn ints(l: &Val, r: &Val) -> Result<(i64, i64), &'static str> {
    match (l.int(), r.int()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err("non-numeric argument"),
    }
}

/// Runs `expr ARGS…`.
pub fn expr(args: &[String], io: &mut Io) -> i32 {
    if args.is_empty() {
        io.error("expr: syntax error");
        return 2;
    }
    let mut p = Parser { args, at: 0 };
    match p.or() {
        Ok(_) if p.at < args.len() => {
            io.error("expr: syntax error");
            2
        }
        Ok(v) => {
            io.out.write(format!("{}\n", v.text()).as_bytes());
            i32::from(v.null())
        }
        Err(e) => {
            io.error(format!("expr: {e}"));
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::shell::{Out, Stdin};

    #[derive(Default)]
    struct Buf(Vec<u8>);

    impl Out for Buf {
        fn write(&mut self, data: &[u8]) {
            self.0.extend_from_slice(data);
        }
    }

    fn run(words: &str) -> (String, String, i32) {
        let args: Vec<String> = words.split(' ').map(str::to_owned).collect();
        let (mut out, mut err, mut stdin) = (Buf::default(), Buf::default(), Stdin::empty());
        let code = expr(
            &args,
            &mut Io {
                stdin: &mut stdin,
                out: &mut out,
                err: &mut err,
            },
        );
        (
            String::from_utf8(out.0).unwrap(),
            String::from_utf8(err.0).unwrap(),
            code,
        )
    }

    #[test]
    fn expr_evaluates_as_busybox() {
        assert_eq!(run("3 % 2"), ("1\n".into(), String::new(), 0));
        assert_eq!(run("4 % 2"), ("0\n".into(), String::new(), 1));
        assert_eq!(run("1 + 2 * 3"), ("7\n".into(), String::new(), 0));
        assert_eq!(run("( 1 + 2 ) * 3"), ("9\n".into(), String::new(), 0));
        assert_eq!(run("a < b"), ("1\n".into(), String::new(), 0));
        assert_eq!(run("10 > 9"), ("1\n".into(), String::new(), 0));
        assert_eq!(run("length hello"), ("5\n".into(), String::new(), 0));
        assert_eq!(run("substr hello 2 3"), ("ell\n".into(), String::new(), 0));
        assert_eq!(run("0 | x"), ("x\n".into(), String::new(), 0));
        assert_eq!(run("1 / 0").1, "expr: division by zero\n");
        assert_eq!(run("a + 1").1, "expr: non-numeric argument\n");
        assert_eq!(run("1 2").2, 2);
    }
}
