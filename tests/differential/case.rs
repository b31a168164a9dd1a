//! The corpus: one YAML file per area under `cases/`, its cases replayed in
//! order in a namespace of its own (`{ns}`), created with its `default`
//! ServiceAccount before the first case.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// One file of cases.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// What the file covers, for the table.
    pub area: String,
    /// The cases, replayed in order.
    pub cases: Vec<Case>,
    /// The file's stem (its name in goldens and in `known.yaml`).
    #[serde(skip)]
    pub stem: String,
}

/// One request and what of its answer is compared.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within the file.
    pub id: String,
    pub method: String,
    /// Path and query; `{ns}` and captured `{names}` are substituted.
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A YAML body, sent as JSON.
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    /// A body sent as this exact text.
    #[serde(default)]
    pub body_text: Option<String>,
    /// What is compared: `status`, `headers`, `body` (byte for byte after
    /// normalization) or `keys` (the body's structure of keys only).
    #[serde(default = "Case::default_compare")]
    pub compare: Vec<String>,
    /// Dotted paths removed from the body on both sides before comparing;
    /// each must be explained in `why`.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// Why the `ignore`d paths cannot be compared.
    #[serde(default)]
    pub why: Option<String>,
    /// Values of the answer's body kept for later cases' `{name}`s.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// A watch: read this many events, then close the stream.
    #[serde(default)]
    pub watch: Option<usize>,
    /// A setup step: replayed, never compared.
    #[serde(default)]
    pub setup: bool,
}

impl Case {
    fn default_compare() -> Vec<String> {
        vec!["status".into(), "headers".into(), "body".into()]
    }

    /// Whether `what` is compared.
    pub fn compares(&self, what: &str) -> bool {
        self.compare.iter().any(|c| c == what)
    }
}

/// Every case file under `dir`, sorted by name, each checked.
pub fn load(dir: &Path) -> Result<Vec<CaseFile>, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut file: CaseFile =
            serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        file.stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        check(&file)?;
        files.push(file);
    }
    Ok(files)
}

fn check(file: &CaseFile) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for case in &file.cases {
        let at = format!("{}/{}", file.stem, case.id);
        if !seen.insert(case.id.as_str()) {
            return Err(format!("{at}: the id is used twice"));
        }
        if !case.ignore.is_empty() && case.why.as_deref().is_none_or(str::is_empty) {
            return Err(format!("{at}: ignore needs a why"));
        }
        if case.body.is_some() && case.body_text.is_some() {
            return Err(format!("{at}: body and body_text both given"));
        }
        for what in &case.compare {
            if !["status", "headers", "body", "keys"].contains(&what.as_str()) {
                return Err(format!("{at}: unknown compare {what:?}"));
            }
        }
    }
    Ok(())
}
