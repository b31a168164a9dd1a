//! One case's two answers, normalized and compared: the first difference.

use crate::case::Case;
use crate::json::{Json, clip, first_difference};
use crate::normalize::Normalizer;
use crate::replay::Answer;

/// An answer made comparable: its status, normalized headers, and its body
/// as normalized values (one per watch event) or normalized text.
pub struct Comparable {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<Body>,
}

enum Body {
    /// A JSON value, and whether its text was compact with the given tail.
    Json(Json, bool, String),
    Text(String),
}

impl Comparable {
    /// `answer` under `norm`, with the case's ignored paths removed.
    pub fn new(case: &Case, answer: &Answer, norm: &mut Normalizer) -> Self {
        norm.next_answer();
        let headers = answer
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), norm.text(v)))
            .collect();
        let pieces: Vec<&str> = if case.watch.is_some() {
            answer.body.split_inclusive('\n').collect()
        } else {
            vec![answer.body.as_str()]
        };
        let body = pieces
            .into_iter()
            .map(|text| match Json::parse(text) {
                Some(mut value) => {
                    let trimmed = text.trim_end();
                    let compact = value.emit() == trimmed.trim_start();
                    let tail = text[trimmed.len()..].to_string();
                    norm.json(&mut value);
                    for path in &case.ignore {
                        let parts: Vec<&str> = path.split('.').collect();
                        value.remove(&parts);
                    }
                    if case.compares("keys") {
                        value = skeleton(&value);
                    }
                    Body::Json(value, compact, tail)
                }
                None => Body::Text(norm.text(text)),
            })
            .collect();
        Self {
            status: answer.status,
            headers,
            body,
        }
    }
}

/// The first difference between upstream's answer and kemu's, as `case`
/// compares them; `None` when they agree.
pub fn difference(case: &Case, upstream: &Comparable, kemu: &Comparable) -> Option<String> {
    if case.compares("status") && upstream.status != kemu.status {
        return Some(format!(
            "status: {} upstream, {} kemu",
            upstream.status, kemu.status
        ));
    }
    if case.compares("headers") {
        for (name, value) in &upstream.headers {
            match kemu.headers.iter().find(|(k, _)| k == name) {
                None => return Some(format!("header {name}: {value:?} upstream, none kemu")),
                Some((_, v)) if v != value => {
                    return Some(format!("header {name}: {value:?} upstream, {v:?} kemu"));
                }
                Some(_) => {}
            }
        }
        if let Some((name, v)) = kemu
            .headers
            .iter()
            .find(|(k, _)| !upstream.headers.iter().any(|(u, _)| u == k))
        {
            return Some(format!("header {name}: none upstream, {v:?} kemu"));
        }
    }
    if !(case.compares("body") || case.compares("keys")) {
        return None;
    }
    for (i, (a, b)) in upstream.body.iter().zip(&kemu.body).enumerate() {
        let at = if case.watch.is_some() {
            format!("event {i}")
        } else {
            "body".to_string()
        };
        let d = match (a, b) {
            (Body::Json(x, cx, tx), Body::Json(y, cy, ty)) => first_difference(x, y)
                .map(|d| format!("{at}{d}"))
                .or_else(|| {
                    (cx != cy).then(|| format!("{at}: compact JSON {cx} upstream, {cy} kemu"))
                })
                .or_else(|| (tx != ty).then(|| format!("{at}: ends {tx:?} upstream, {ty:?} kemu"))),
            (Body::Text(x), Body::Text(y)) => {
                (x != y).then(|| format!("{at}: text {} upstream, {} kemu", clip(x), clip(y)))
            }
            (Body::Json(..), Body::Text(y)) => {
                Some(format!("{at}: JSON upstream, text kemu {}", clip(y)))
            }
            (Body::Text(x), Body::Json(..)) => {
                Some(format!("{at}: text upstream {}, JSON kemu", clip(x)))
            }
        };
        if d.is_some() {
            return d;
        }
    }
    (upstream.body.len() != kemu.body.len()).then(|| {
        format!(
            "{} events upstream, {} kemu",
            upstream.body.len(),
            kemu.body.len()
        )
    })
}

/// The structure of keys of `value`: objects with their keys sorted and
/// every leaf blank; an array as the one skeleton of its items (their
/// union of keys).
fn skeleton(value: &Json) -> Json {
    match value {
        Json::Obj(members) => {
            let mut m: Vec<(String, Json)> = members
                .iter()
                .map(|(k, v)| (k.clone(), skeleton(v)))
                .collect();
            m.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Obj(m)
        }
        Json::Arr(items) => {
            let mut merged: Vec<(String, Json)> = Vec::new();
            let mut leaf = None;
            for item in items.iter().map(skeleton) {
                match item {
                    Json::Obj(m) => {
                        for (k, v) in m {
                            if !merged.iter().any(|(j, _)| *j == k) {
                                merged.push((k, v));
                            }
                        }
                    }
                    other => leaf = Some(other),
                }
            }
            merged.sort_by(|a, b| a.0.cmp(&b.0));
            match (merged.is_empty(), leaf) {
                (true, Some(l)) => Json::Arr(vec![l]),
                (true, None) => Json::Arr(vec![]),
                (false, _) => Json::Arr(vec![Json::Obj(merged)]),
            }
        }
        _ => Json::Atom("_".into()),
    }
}
