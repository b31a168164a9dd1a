//! JSON as the server wrote it: keys in their order, strings and numbers as
//! their source text, so a comparison sees what a client sees (key order,
//! escapes such as Go's `\u003c`, number spelling) and nothing is re-encoded.

/// A JSON value holding its source text where that text could differ.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`, `true`, `false` or a number, as written.
    Atom(String),
    /// A string's text between its quotes, escapes kept.
    Str(String),
    Arr(Vec<Json>),
    /// Members in the order written.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// Parses one JSON value; `None` unless `text` is exactly that value
    /// with optional surrounding whitespace.
    pub fn parse(text: &str) -> Option<Json> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }

    /// The compact text of this value.
    pub fn emit(&self) -> String {
        let mut out = String::new();
        self.emit_into(&mut out);
        out
    }

    fn emit_into(&self, out: &mut String) {
        match self {
            Json::Atom(a) => out.push_str(a),
            Json::Str(s) => {
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
            Json::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.emit_into(out);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('"');
                    out.push_str(k);
                    out.push_str("\":");
                    v.emit_into(out);
                }
                out.push('}');
            }
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string's source text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value at a dotted path (`metadata.name`, `items.0.metadata`).
    pub fn at(&self, path: &str) -> Option<&Json> {
        path.split('.')
            .filter(|p| !p.is_empty())
            .try_fold(self, |v, part| match v {
                Json::Obj(_) => v.get(part),
                Json::Arr(items) => items.get(part.parse::<usize>().ok()?),
                _ => None,
            })
    }

    /// Removes every value matching a dotted path whose parts may be `*`.
    pub fn remove(&mut self, parts: &[&str]) {
        let Some((first, rest)) = parts.split_first() else {
            return;
        };
        match self {
            Json::Obj(members) => {
                if rest.is_empty() {
                    members.retain(|(k, _)| *first != "*" && k != first);
                } else {
                    for (k, v) in members.iter_mut() {
                        if *first == "*" || k == first {
                            v.remove(rest);
                        }
                    }
                }
            }
            Json::Arr(items) => {
                let index = first.parse::<usize>().ok();
                if rest.is_empty() {
                    match index {
                        Some(i) if i < items.len() => {
                            items.remove(i);
                        }
                        _ if *first == "*" => items.clear(),
                        _ => {}
                    }
                } else {
                    for (i, v) in items.iter_mut().enumerate() {
                        if *first == "*" || index == Some(i) {
                            v.remove(rest);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Applies `f` to every string value (not keys), depth first; `key` is
    /// the member name a value sits under, if any.
    pub fn map_strings(
        &mut self,
        key: Option<&str>,
        f: &mut impl FnMut(Option<&str>, &mut String),
    ) {
        match self {
            Json::Str(s) => f(key, s),
            Json::Arr(items) => items.iter_mut().for_each(|v| v.map_strings(key, f)),
            Json::Obj(members) => {
                for (k, v) in members.iter_mut() {
                    v.map_strings(Some(k), f);
                }
            }
            Json::Atom(_) => {}
        }
    }

    /// Every object in the tree, depth first.
    pub fn objects(&self, out: &mut Vec<Json>) {
        match self {
            Json::Obj(members) => {
                out.push(self.clone());
                members.iter().for_each(|(_, v)| v.objects(out));
            }
            Json::Arr(items) => items.iter().for_each(|v| v.objects(out)),
            _ => {}
        }
    }
}

/// The first place where `a` and `b` differ, as a path and what each holds
/// there; `None` when they are the same.
pub fn first_difference(a: &Json, b: &Json) -> Option<String> {
    diff_at(a, b, String::new())
}

fn diff_at(a: &Json, b: &Json, path: String) -> Option<String> {
    match (a, b) {
        (Json::Obj(x), Json::Obj(y)) => {
            let kx: Vec<&str> = x.iter().map(|(k, _)| k.as_str()).collect();
            let ky: Vec<&str> = y.iter().map(|(k, _)| k.as_str()).collect();
            for (k, v) in x {
                let Some((_, w)) = y.iter().find(|(l, _)| l == k) else {
                    return Some(format!("{path}.{k}: only upstream has it"));
                };
                if let Some(d) = diff_at(v, w, format!("{path}.{k}")) {
                    return Some(d);
                }
            }
            if let Some((k, _)) = y.iter().find(|(k, _)| !kx.contains(&k.as_str())) {
                return Some(format!("{path}.{k}: only kemu has it"));
            }
            (kx != ky).then(|| format!("{path}: key order {kx:?} upstream, {ky:?} kemu"))
        }
        (Json::Arr(x), Json::Arr(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if let Some(d) = diff_at(v, w, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len())
                .then(|| format!("{path}: {} items upstream, {} kemu", x.len(), y.len()))
        }
        _ if a == b => None,
        _ => Some(format!(
            "{path}: {} upstream, {} kemu",
            clip(&a.emit()),
            clip(&b.emit())
        )),
    }
}

/// At most 120 characters of `s`.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\n' | b'\r' | b'\t') {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        if depth > 512 {
            return None;
        }
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Some(Json::Obj(members));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    (self.s.get(self.i) == Some(&b':')).then_some(())?;
                    self.i += 1;
                    self.ws();
                    members.push((key, self.value(depth + 1)?));
                    self.ws();
                    match self.s.get(self.i)? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(Json::Obj(members));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(Json::Arr(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(Json::Arr(items));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(Json::Str),
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'E')
                {
                    self.i += 1;
                }
                let atom = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                let valid = matches!(atom, "null" | "true" | "false")
                    || (!atom.is_empty() && atom.parse::<f64>().is_ok());
                valid.then(|| Json::Atom(atom.to_string()))
            }
        }
    }

    /// A string's source text between its quotes.
    fn string(&mut self) -> Option<String> {
        (self.s.get(self.i) == Some(&b'"')).then_some(())?;
        self.i += 1;
        let start = self.i;
        while *self.s.get(self.i)? != b'"' {
            if self.s[self.i] == b'\\' {
                self.i += 1;
            }
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .to_string();
        self.i += 1;
        Some(text)
    }
}

/// Checks the harness runs before any case (this target has no test
/// harness to run unit tests).
pub fn self_check() {
    {
        let text = r#"{"kind":"A","apiVersion":"v1","m":{"b":1,"a":"\u003cx\u003e"},"l":[true,null,-1.5e3]}"#;
        let v = Json::parse(text).unwrap();
        assert_eq!(v.emit(), text);
        assert_eq!(v.at("m.a").and_then(Json::as_str), Some(r"\u003cx\u003e"));
        let w = Json::parse(r#"{"apiVersion":"v1","kind":"A","m":{"b":1,"a":"\u003cx\u003e"},"l":[true,null,-1.5e3]}"#).unwrap();
        assert!(first_difference(&v, &w).unwrap().contains("key order"));
    }
}
