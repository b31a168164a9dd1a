//! The built-in types of the served minor, read from the generated
//! `fixtures/k8s/resources.json` (see `scripts/gen-k8s-schema.py`).

use serde::Deserialize;

use super::{ResourceType, Subresource};

/// The generated registry data, compiled in.
const DATA: &str = include_str!("../../../fixtures/k8s/resources.json");

#[derive(Deserialize)]
struct File {
    resources: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    group: String,
    version: String,
    kind: String,
    list_kind: String,
    plural: String,
    singular: String,
    namespaced: bool,
    verbs: Vec<String>,
    short_names: Vec<String>,
    categories: Vec<String>,
    subresources: Vec<SubEntry>,
    definition: String,
}

#[derive(Deserialize)]
struct SubEntry {
    name: String,
    group: String,
    version: String,
    kind: String,
    verbs: Vec<String>,
}

/// Every built-in type. The data is compiled in and checked by the tests, so
/// a parse failure is a build defect, not an input error.
pub(super) fn types() -> Vec<ResourceType> {
    let file: File = serde_json::from_str(DATA).expect("fixtures/k8s/resources.json is valid");
    file.resources
        .into_iter()
        .map(|e| ResourceType {
            group: e.group,
            version: e.version,
            kind: e.kind,
            list_kind: e.list_kind,
            plural: e.plural,
            singular: e.singular,
            namespaced: e.namespaced,
            short_names: e.short_names,
            categories: e.categories,
            verbs: e.verbs,
            subresources: e
                .subresources
                .into_iter()
                .map(|s| Subresource {
                    api_version: if s.group.is_empty() {
                        s.version
                    } else {
                        format!("{}/{}", s.group, s.version)
                    },
                    name: s.name,
                    kind: s.kind,
                    verbs: s.verbs,
                })
                .collect(),
            definition: e.definition,
            custom: None,
        })
        .collect()
}
