//! Sets of field paths, as structured-merge-diff keeps them, and their
//! `FieldsV1` wire form: `f:<field>`, `k:{<list-map keys>}`, `v:<set value>`,
//! `i:<index>`, with `.` marking a node that is itself a member.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a path, in its `FieldsV1` key form (`f:spec`,
/// `k:{"name":"web"}`, `v:"a"`, `i:0`).
pub type Element = String;

/// A path from the object's root.
pub type Path = Vec<Element>;

/// A set of paths, as a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet(BTreeMap<Element, Node>);

/// One node: whether its path is in the set, and the paths below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    member: bool,
    children: FieldSet,
}

/// `f:<name>`.
pub fn field(name: &str) -> Element {
    format!("f:{name}")
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `path` (the root itself is never a member).
    pub fn insert(&mut self, path: &[Element]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let node = self.0.entry(first.clone()).or_default();
        if rest.is_empty() {
            node.member = true;
        } else {
            node.children.insert(rest);
        }
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[Element]) -> bool {
        match path.split_first() {
            None => false,
            Some((first, rest)) => self.0.get(first).is_some_and(|n| {
                if rest.is_empty() {
                    n.member
                } else {
                    n.children.contains(rest)
                }
            }),
        }
    }

    /// The subtree under `path` (members strictly below it).
    pub fn subtree(&self, path: &[Element]) -> Option<&FieldSet> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.0.get(first)?.children.subtree(rest),
        }
    }

    /// Whether `path` or anything under it is a member.
    pub fn touches(&self, path: &[Element]) -> bool {
        self.contains(path) || self.subtree(path).is_some_and(|s| !s.is_empty())
    }

    /// Members of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for (k, n) in &other.0 {
            let mine = out.0.entry(k.clone()).or_default();
            mine.member |= n.member;
            mine.children = mine.children.union(&n.children);
        }
        out
    }

    /// Members of `self` that are not members of `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (k, n) in &self.0 {
            let node = match other.0.get(k) {
                None => n.clone(),
                Some(o) => Node {
                    member: n.member && !o.member,
                    children: n.children.difference(&o.children),
                },
            };
            if node.member || !node.children.is_empty() {
                out.0.insert(k.clone(), node);
            }
        }
        out
    }

    /// Members of both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (k, n) in &self.0 {
            if let Some(o) = other.0.get(k) {
                let node = Node {
                    member: n.member && o.member,
                    children: n.children.intersection(&o.children),
                };
                if node.member || !node.children.is_empty() {
                    out.0.insert(k.clone(), node);
                }
            }
        }
        out
    }

    /// Removes `path` and everything under it.
    pub fn remove_subtree(&mut self, path: &[Element]) {
        let Some((first, rest)) = path.split_first() else {
            self.0.clear();
            return;
        };
        if rest.is_empty() {
            self.0.remove(first);
            return;
        }
        if let Some(n) = self.0.get_mut(first) {
            n.children.remove_subtree(rest);
            if !n.member && n.children.is_empty() {
                self.0.remove(first);
            }
        }
    }

    /// Removes the member flag of `path` only.
    pub fn remove_member(&mut self, path: &[Element]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if let Some(n) = self.0.get_mut(first) {
            if rest.is_empty() {
                n.member = false;
            } else {
                n.children.remove_member(rest);
            }
            if !n.member && n.children.is_empty() {
                self.0.remove(first);
            }
        }
    }

    /// Every member path, in order.
    pub fn members(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (k, n) in &self.0 {
            prefix.push(k.clone());
            if n.member {
                out.push(prefix.clone());
            }
            n.children.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The children of the root, for walking alongside a value.
    pub fn entries(&self) -> impl Iterator<Item = (&Element, bool, &FieldSet)> {
        self.0.iter().map(|(k, n)| (k, n.member, &n.children))
    }

    /// The `FieldsV1` JSON form.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (k, n) in &self.0 {
            let mut child = match n.children.to_fields_v1() {
                Value::Object(c) => c,
                _ => Map::new(),
            };
            if n.member && !child.is_empty() {
                let mut with_dot = Map::new();
                with_dot.insert(".".into(), Value::Object(Map::new()));
                with_dot.append(&mut child);
                child = with_dot;
            }
            m.insert(k.clone(), Value::Object(child));
        }
        Value::Object(m)
    }

    /// Parses a `FieldsV1` JSON value; `None` when it is not one.
    pub fn from_fields_v1(v: &Value) -> Option<FieldSet> {
        let m = v.as_object()?;
        let mut out = FieldSet::new();
        for (k, child) in m {
            if k == "." {
                continue;
            }
            let cm = child.as_object()?;
            let children = FieldSet::from_fields_v1(child)?;
            let member = cm.is_empty() || cm.contains_key(".");
            out.0.insert(k.clone(), Node { member, children });
        }
        Some(out)
    }
}

/// A path as upstream prints it in conflicts: `.spec.replicas`,
/// `.spec.containers[name="web"].image`, `.finalizers[="a"]`, `.items[0]`.
pub fn display(path: &[Element]) -> String {
    let mut s = String::new();
    for e in path {
        if let Some(f) = e.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = e.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = e.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        } else if let Some(i) = e.strip_prefix("i:") {
            s.push_str(&format!("[{i}]"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(parts: &[&str]) -> Path {
        parts.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn fields_v1_round_trip_and_ops() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(s.to_fields_v1(), v);
        assert!(s.contains(&p(&["f:metadata", "f:labels"])));
        assert!(!s.contains(&p(&["f:metadata"])));
        let img = p(&["f:spec", "f:containers", "k:{\"name\":\"web\"}", "f:image"]);
        assert_eq!(display(&img), ".spec.containers[name=\"web\"].image");
        let mut one = FieldSet::new();
        one.insert(&img);
        assert_eq!(s.intersection(&one), one);
        let rest = s.difference(&one);
        assert!(!rest.contains(&img) && rest.contains(&p(&["f:metadata", "f:labels", "f:app"])));
        assert_eq!(rest.union(&one), s);
        assert_eq!(s.members().len(), 5);
    }
}
