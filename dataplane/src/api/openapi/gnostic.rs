//! `/openapi/v2` as gnostic protobuf (`openapi.v2.Document`), the encoding
//! kubectl 1.27 and 1.28 require for `explain` and `apply`'s validation.
//!
//! The encoder walks the same JSON document served as `application/json` and
//! writes the gnostic messages it maps to; vendor extensions, defaults and
//! enums are `Any` values holding their YAML (JSON is valid YAML).

use serde_json::{Map, Value};

/// A protobuf message under construction.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, tag: u32, wire: u8) {
        self.varint((u64::from(tag) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, tag: u32, b: &[u8]) {
        self.key(tag, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.bytes(tag, s.as_bytes());
        }
    }

    fn strings(&mut self, tag: u32, v: Option<&Value>) {
        for s in v.and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                self.bytes(tag, s.as_bytes());
            }
        }
    }

    fn boolean(&mut self, tag: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(tag, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_i64) {
            self.key(tag, 0);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_f64) {
            self.key(tag, 1);
            self.0.extend_from_slice(&n.to_bits().to_le_bytes());
        }
    }

    fn message(&mut self, tag: u32, m: Msg) {
        self.bytes(tag, &m.0);
    }
}

/// `Any { yaml = 2 }`.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.bytes(2, serde_json::to_string(v).unwrap_or_default().as_bytes());
    m
}

/// `NamedAny` entries for every `x-` key of `obj`.
fn vendor_extensions(m: &mut Msg, tag: u32, obj: &Map<String, Value>) {
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Msg::default();
        named.bytes(1, k.as_bytes());
        named.message(2, any(v));
        m.message(tag, named);
    }
}

fn named(name: &str, value: Msg) -> Msg {
    let mut m = Msg::default();
    m.bytes(1, name.as_bytes());
    m.message(2, value);
    m
}

fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = v.as_object() else { return m };
    m.string(1, o.get("$ref"));
    m.string(2, o.get("format"));
    m.string(3, o.get("title"));
    m.string(4, o.get("description"));
    if let Some(d) = o.get("default") {
        m.message(5, any(d));
    }
    m.double(6, o.get("multipleOf"));
    m.double(7, o.get("maximum"));
    m.boolean(8, o.get("exclusiveMaximum"));
    m.double(9, o.get("minimum"));
    m.boolean(10, o.get("exclusiveMinimum"));
    m.int64(11, o.get("maxLength"));
    m.int64(12, o.get("minLength"));
    m.string(13, o.get("pattern"));
    m.int64(14, o.get("maxItems"));
    m.int64(15, o.get("minItems"));
    m.boolean(16, o.get("uniqueItems"));
    m.int64(17, o.get("maxProperties"));
    m.int64(18, o.get("minProperties"));
    m.strings(19, o.get("required"));
    for e in o
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, any(e));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            a.key(2, 0);
            a.varint(u64::from(*b));
            m.message(21, a);
        }
        Some(s @ Value::Object(_)) => {
            let mut a = Msg::default();
            a.message(1, schema(s));
            m.message(21, a);
        }
        _ => {}
    }
    match o.get("type") {
        Some(Value::String(t)) => {
            let mut ty = Msg::default();
            ty.bytes(1, t.as_bytes());
            m.message(22, ty);
        }
        Some(Value::Array(ts)) => {
            let mut ty = Msg::default();
            ty.strings(1, Some(&Value::Array(ts.clone())));
            m.message(22, ty);
        }
        _ => {}
    }
    if let Some(items) = o.get("items") {
        let mut it = Msg::default();
        match items {
            Value::Array(a) => a.iter().for_each(|s| it.message(1, schema(s))),
            s => it.message(1, schema(s)),
        }
        m.message(23, it);
    }
    for s in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(s));
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, s) in props {
            p.message(1, named(name, schema(s)));
        }
        m.message(25, p);
    }
    m.boolean(27, o.get("readOnly"));
    vendor_extensions(&mut m, 31, o);
    m
}

/// A `ParametersItem` for one v2 parameter object.
fn parameter(p: &Value) -> Msg {
    let mut param = Msg::default();
    if p["in"] == "body" {
        let mut b = Msg::default();
        b.string(1, p.get("description"));
        b.string(2, p.get("name"));
        b.string(3, p.get("in"));
        b.boolean(4, p.get("required"));
        b.message(5, schema(&p["schema"]));
        param.message(1, b);
    } else {
        // Path and query sub-schemas share their first fields; `type` and
        // `uniqueItems` sit at different numbers.
        let (variant, type_tag, unique_tag) = match p["in"].as_str() {
            Some("path") => (4, 5, 19),
            Some("header") => (1, 5, 19),
            _ => (3, 6, 20),
        };
        let mut s = Msg::default();
        s.boolean(1, p.get("required"));
        s.string(2, p.get("in"));
        s.string(3, p.get("description"));
        s.string(4, p.get("name"));
        s.string(type_tag, p.get("type"));
        s.boolean(unique_tag, p.get("uniqueItems"));
        let mut nb = Msg::default();
        nb.message(variant, s);
        param.message(2, nb);
    }
    let mut item = Msg::default();
    item.message(1, param);
    item
}

fn operation(op: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = op.as_object() else { return m };
    m.strings(1, o.get("tags"));
    m.string(3, o.get("description"));
    m.string(5, o.get("operationId"));
    m.strings(6, o.get("produces"));
    m.strings(7, o.get("consumes"));
    for p in o
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(8, parameter(p));
    }
    if let Some(responses) = o.get("responses").and_then(Value::as_object) {
        let mut rs = Msg::default();
        for (code, r) in responses {
            let mut resp = Msg::default();
            resp.string(1, r.get("description"));
            if let Some(s) = r.get("schema") {
                let mut item = Msg::default();
                item.message(1, schema(s));
                resp.message(2, item);
            }
            let mut value = Msg::default();
            value.message(1, resp);
            rs.message(1, named(code, value));
        }
        m.message(9, rs);
    }
    m.strings(10, o.get("schemes"));
    vendor_extensions(&mut m, 13, o);
    m
}

/// Encodes a swagger 2.0 JSON document as an `openapi.v2.Document`.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut d = Msg::default();
    d.string(1, doc.get("swagger"));
    let mut info = Msg::default();
    info.string(1, doc["info"].get("title"));
    info.string(2, doc["info"].get("version"));
    d.message(2, info);
    let mut paths = Msg::default();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut pi = Msg::default();
        for (method, tag) in [
            ("get", 2),
            ("put", 3),
            ("post", 4),
            ("delete", 5),
            ("options", 6),
            ("head", 7),
            ("patch", 8),
        ] {
            if let Some(op) = item.get(method) {
                pi.message(tag, operation(op));
            }
        }
        for p in item["parameters"].as_array().into_iter().flatten() {
            pi.message(9, parameter(p));
        }
        paths.message(2, named(path, pi));
    }
    d.message(8, paths);
    let mut defs = Msg::default();
    for (name, s) in doc["definitions"].as_object().into_iter().flatten() {
        defs.message(1, named(name, schema(s)));
    }
    d.message(9, defs);
    for req in doc["security"].as_array().into_iter().flatten() {
        let mut r = Msg::default();
        for (name, _) in req.as_object().into_iter().flatten() {
            r.message(1, named(name, Msg::default()));
        }
        d.message(12, r);
    }
    if let Some(sec) = doc["securityDefinitions"].as_object() {
        let mut sd = Msg::default();
        for (name, s) in sec {
            let mut key = Msg::default();
            key.string(1, s.get("type"));
            key.string(2, s.get("name"));
            key.string(3, s.get("in"));
            key.string(4, s.get("description"));
            let mut item = Msg::default();
            item.message(2, key);
            sd.message(1, named(name, item));
        }
        d.message(13, sd);
    }
    d.0
}
