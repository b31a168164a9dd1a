//! What must differ between two servers, replaced by placeholders before a
//! comparison, and nothing else: UIDs (numbered by first appearance in each
//! answer, so references between its objects still compare, and one extra
//! object does not renumber every later answer), resourceVersion values,
//! continue tokens, timestamps, JWTs, generated names, the server's address.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::json::Json;

static UID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
});
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})").unwrap()
});
static JWT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+").unwrap());

/// The normalization state of one case file replayed against one server.
#[derive(Default)]
pub struct Normalizer {
    /// The server's base URL (`https://127.0.0.1:PORT`) and its host:port.
    pub server: Vec<String>,
    uids: HashMap<String, usize>,
}

impl Normalizer {
    /// A normalizer for answers of the server at `base`.
    pub fn new(base: &str) -> Self {
        let host = base
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .to_string();
        Self {
            server: vec![base.to_string(), host],
            uids: HashMap::new(),
        }
    }

    /// Starts the next answer: UIDs are numbered afresh.
    pub fn next_answer(&mut self) {
        self.uids.clear();
    }

    /// `text` (a body or a header) with what must differ replaced.
    pub fn text(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.server {
            out = out.replace(s.as_str(), "<server>");
        }
        out = JWT.replace_all(&out, "<jwt>").into_owned();
        out = TIME.replace_all(&out, "<time>").into_owned();
        let uids = &mut self.uids;
        UID.replace_all(&out, |c: &regex::Captures| {
            let next = uids.len() + 1;
            format!("<uid:{}>", uids.entry(c[0].to_string()).or_insert(next))
        })
        .into_owned()
    }

    /// A JSON body normalized in place: generated names and the values of
    /// `resourceVersion` and `continue` first, then every string as text.
    pub fn json(&mut self, value: &mut Json) {
        let mut objects = Vec::new();
        value.objects(&mut objects);
        let generated: Vec<(String, String)> = objects
            .iter()
            .filter_map(|o| {
                let prefix = o.get("generateName")?.as_str()?;
                let name = o.get("name")?.as_str()?;
                let suffix = name.strip_prefix(prefix)?;
                (!prefix.is_empty() && suffix.len() == 5)
                    .then(|| (name.to_string(), format!("{prefix}<generated>")))
            })
            .collect();
        value.map_strings(None, &mut |key, s| {
            for (name, placeholder) in &generated {
                if s.contains(name.as_str()) {
                    *s = s.replace(name.as_str(), placeholder);
                }
            }
            if matches!(key, Some("resourceVersion" | "continue")) && !s.is_empty() {
                *s = format!("<{}>", key.unwrap());
            }
        });
        value.map_strings(None, &mut |_, s| *s = self.text(s));
    }
}

/// Checks the harness runs before any case (this target has no test
/// harness to run unit tests).
pub fn self_check() {
    {
        let mut n = Normalizer::new("https://127.0.0.1:6443");
        let mut v = Json::parse(
            r#"{"metadata":{"name":"web-abcde","generateName":"web-","uid":"0a1b2c3d-0000-1111-2222-333344445555","resourceVersion":"42","creationTimestamp":"2026-12-03T10:00:00Z"},"x":"https://127.0.0.1:6443/api","o":"0a1b2c3d-0000-1111-2222-333344445555"}"#,
        )
        .unwrap();
        n.json(&mut v);
        assert_eq!(
            v.emit(),
            r#"{"metadata":{"name":"web-<generated>","generateName":"web-","uid":"<uid:1>","resourceVersion":"<resourceVersion>","creationTimestamp":"<time>"},"x":"<server>/api","o":"<uid:1>"}"#
        );
    }
}
