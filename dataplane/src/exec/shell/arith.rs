//! `$(( … ))`: integer arithmetic on 64-bit values, wrapping as a shell's
//! does, with `+ - * / %`, comparisons, `&& ||`, `!`, parentheses and
//! variables (unset or empty is 0).

use super::Shell;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "(", ")", "<", ">", "!",
];

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            out.push(Tok::Num(number(&s[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i + usize::from(c == b'$');
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[start..i].to_owned()));
        } else if let Some(op) = OPS.iter().find(|op| s[i..].starts_with(*op)) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            return Err(s[i..].to_owned());
        }
    }
    Ok(out)
}

fn number(s: &str) -> Result<i64, String> {
    let parsed = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).map(|v| v as i64)
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).map(|v| v as i64)
    } else {
        s.parse::<u64>().map(|v| v as i64)
    };
    parsed.map_err(|_| s.to_owned())
}

struct P<'a> {
    toks: Vec<Tok>,
    i: usize,
    sh: &'a Shell,
    /// Unary operators and parentheses enclosing the current operand.
    depth: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn eat(&mut self, op: &str) -> bool {
        if self.peek()
            == Some(&Tok::Op(match OPS.iter().find(|o| **o == op) {
                Some(o) => o,
                None => return false,
            }))
        {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["==", "!="],
            &["<=", ">=", "<", ">"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        'outer: loop {
            for op in LEVELS[level] {
                if self.eat(op) {
                    let right = self.binary(level + 1)?;
                    left = match *op {
                        "||" => i64::from(left != 0 || right != 0),
                        "&&" => i64::from(left != 0 && right != 0),
                        "==" => i64::from(left == right),
                        "!=" => i64::from(left != right),
                        "<=" => i64::from(left <= right),
                        ">=" => i64::from(left >= right),
                        "<" => i64::from(left < right),
                        ">" => i64::from(left > right),
                        "+" => left.wrapping_add(right),
                        "-" => left.wrapping_sub(right),
                        "*" => left.wrapping_mul(right),
                        _ if right == 0 => return Err("divide by zero".into()),
                        "/" => left.wrapping_div(right),
                        _ => left.wrapping_rem(right),
                    };
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    fn unary(&mut self) -> Result<i64, String> {
        if self.depth >= super::parse::MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        self.depth += 1;
        let v = self.operand();
        self.depth -= 1;
        v
    }

    fn operand(&mut self) -> Result<i64, String> {
        if self.eat("-") {
            return Ok(self.unary()?.wrapping_neg());
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("!") {
            return Ok(i64::from(self.unary()? == 0));
        }
        if self.eat("(") {
            let v = self.binary(0)?;
            if !self.eat(")") {
                return Err("expecting ')'".into());
            }
            return Ok(v);
        }
        match self.peek().cloned() {
            Some(Tok::Num(n)) => {
                self.i += 1;
                Ok(n)
            }
            Some(Tok::Name(n)) => {
                self.i += 1;
                let v = self.sh.get(&n).unwrap_or_default().trim();
                if v.is_empty() { Ok(0) } else { number(v) }
            }
            Some(Tok::Op(o)) => Err(o.to_owned()),
            None => Err("expecting primary".into()),
        }
    }
}

/// Evaluates an arithmetic expression.
pub fn eval(expr: &str, sh: &Shell) -> Result<i64, String> {
    let mut p = P {
        toks: lex(expr)?,
        i: 0,
        sh,
        depth: 0,
    };
    if p.toks.is_empty() {
        return Ok(0);
    }
    let v = p.binary(0)?;
    match p.peek() {
        None => Ok(v),
        Some(t) => Err(format!("{t:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_variables_and_errors() {
        let mut sh = crate::exec::shell::tests::shell();
        sh.set("i", "4", false);
        assert_eq!(eval("1 + 2 * 3", &sh), Ok(7));
        assert_eq!(eval("(1 + 2) * $i - i / 2", &sh), Ok(10));
        assert_eq!(eval("i > 3 && i < 5", &sh), Ok(1));
        assert_eq!(eval("9223372036854775807 + 1", &sh), Ok(i64::MIN));
        assert!(eval("1 / 0", &sh).is_err());
        assert!(eval("1 +", &sh).is_err());
        let deep = format!("{}1", "-(".repeat(100_000));
        assert_eq!(eval(&deep, &sh), Err("nested too deeply".into()));
    }
}
