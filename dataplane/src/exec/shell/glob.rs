//! Pathname patterns (`*`, `?`, `[…]`): matching, expansion against the
//! container's filesystem, and the `${x#pat}` family of trims.

use crate::exec::fs::Fs;

/// Whether `name` matches the pattern.
pub fn matches(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches_at(&p, &n)
}

fn matches_at(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => class(&p[pi..], n[ni]),
            Some('\\') if pi + 1 < p.len() => (p[pi + 1] == n[ni]).then_some(2),
            Some(c) => (*c == n[ni]).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                pi += len;
                ni += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `[…]` at the start of `p` against `c`: the class's length when it matches.
fn class(p: &[char], c: char) -> Option<usize> {
    let end = p.iter().skip(2).position(|x| *x == ']')? + 2;
    let body = &p[1..end];
    let (negate, body) = match body.first() {
        Some('!' | '^') => (true, &body[1..]),
        _ => (false, body),
    };
    let mut hit = false;
    let mut i = 0;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == '-' {
            hit |= body[i] <= c && c <= body[i + 2];
            i += 3;
        } else {
            hit |= body[i] == c;
            i += 1;
        }
    }
    (hit != negate).then_some(end + 1)
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The paths a pattern names, sorted; empty when none (the word stays).
pub fn expand(fs: &Fs, cwd: &str, pattern: &str) -> Vec<String> {
    let absolute = pattern.starts_with('/');
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let mut found: Vec<String> = vec![if absolute { "/".into() } else { String::new() }];
    for part in parts {
        let mut next = Vec::new();
        for base in &found {
            let dir = if base.is_empty() {
                cwd.to_owned()
            } else {
                base.clone()
            };
            let prefix = if base.is_empty() || base.ends_with('/') {
                base.clone()
            } else {
                format!("{base}/")
            };
            if !has_magic(part) {
                let candidate = format!("{prefix}{part}");
                if fs.lstat(cwd, &candidate).is_ok() {
                    next.push(candidate);
                }
                continue;
            }
            let Ok(entries) = fs.list(cwd, &dir) else {
                continue;
            };
            for (name, _) in entries {
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if matches(part, &name) {
                    next.push(format!("{prefix}{name}"));
                }
            }
        }
        found = next;
    }
    found.sort();
    found.retain(|p| !p.is_empty() && p != "/");
    found
}

/// `${v#pat}` (shortest prefix), `##` (longest), `%` and `%%` (suffixes).
pub fn trim(v: &str, pat: &str, op: &str) -> String {
    let idx: Vec<usize> = v
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(v.len()))
        .collect();
    match op {
        "#" => idx
            .iter()
            .find(|&&i| matches(pat, &v[..i]))
            .map(|&i| v[i..].to_owned()),
        "##" => idx
            .iter()
            .rev()
            .find(|&&i| matches(pat, &v[..i]))
            .map(|&i| v[i..].to_owned()),
        "%" => idx
            .iter()
            .rev()
            .find(|&&i| matches(pat, &v[i..]))
            .map(|&i| v[..i].to_owned()),
        _ => idx
            .iter()
            .find(|&&i| matches(pat, &v[i..]))
            .map(|&i| v[..i].to_owned()),
    }
    .unwrap_or_else(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_trims() {
        assert!(matches("*.yaml", "app.yaml"));
        assert!(matches("a?c", "abc"));
        assert!(matches("[a-c]x", "bx"));
        assert!(!matches("[!a-c]x", "bx"));
        assert!(!matches("*.yaml", "app.json"));
        assert_eq!(trim("/a/b/c.txt", "*/", "##"), "c.txt");
        assert_eq!(trim("/a/b/c.txt", "/*", "%"), "/a/b");
        assert_eq!(trim("file.tar.gz", ".*", "%%"), "file");
    }
}
