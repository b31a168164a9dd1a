//! Custom resource types: what one CustomResourceDefinition adds to its
//! cluster's registry (one [`ResourceType`] per served version, carrying its
//! schema, subresources and printer columns in a [`CustomSpec`]), and the
//! field paths those types read and write (scale, printer columns).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{ResourceType, Subresource};

/// The group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The store key of CustomResourceDefinitions.
pub const CRD_RESOURCE: &str = "customresourcedefinitions.apiextensions.k8s.io";
/// The finalizer a deleted CRD carries until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What a custom resource type carries beside the common metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomSpec {
    /// The CRD's name, `plural.group`.
    pub crd: String,
    /// The storage version (objects are stored with its apiVersion).
    pub storage_version: String,
    /// `schema.openAPIV3Schema` of this version (`Null` when absent).
    pub schema: Value,
    /// Whether the `status` subresource is on.
    pub status: bool,
    /// The `scale` subresource's paths, when on.
    pub scale: Option<ScalePaths>,
    /// `additionalPrinterColumns` (upstream's default: an Age column).
    pub columns: Vec<PrinterColumn>,
    /// Whether the schema has a `default` anywhere: objects read from the
    /// store are then defaulted, as upstream defaults on read.
    pub defaults: bool,
    /// `selectableFields`, as field selectors name them (`spec.color`).
    pub selectable: Vec<String>,
    /// The schema field management walks its objects with
    /// ([`typed_schema`]), made once per version.
    pub typed_schema: Option<&'static Value>,
}

/// The schema field management walks a custom resource with: its version's
/// structural schema, with `metadata` the built-in ObjectMeta (whose lists
/// and maps have their own extensions) and the type meta plain strings.
///
/// Field management wants schemas that live as long as the program, as
/// the built-ins' do; each distinct schema is kept once, so a CRD created
/// again with the same schema costs nothing more.
pub fn typed_schema(schema: &Value) -> Option<&'static Value> {
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::sync::{Mutex, OnceLock};
    static KEPT: OnceLock<Mutex<HashMap<u64, Vec<&'static Value>>>> = OnceLock::new();
    if !schema.is_object() {
        return None;
    }
    let mut typed = schema.clone();
    if !typed["properties"].is_object() {
        typed["properties"] = json!({});
    }
    typed["properties"]["metadata"] =
        json!({ "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" });
    typed["properties"]["apiVersion"] = json!({ "type": "string" });
    typed["properties"]["kind"] = json!({ "type": "string" });
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    typed.to_string().hash(&mut hasher);
    let key = hasher.finish();
    let mut kept = KEPT.get_or_init(Mutex::default).lock().ok()?;
    let same = kept.entry(key).or_default();
    if let Some(found) = same.iter().find(|v| ***v == typed) {
        return Some(*found);
    }
    let leaked: &'static Value = Box::leak(Box::new(typed));
    same.push(leaked);
    Some(leaked)
}

/// Where the `scale` subresource reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// `statusReplicasPath`, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// `labelSelectorPath` (a string field), if any.
    pub label_selector: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub ty: String,
    /// Format hint.
    pub format: String,
    /// Description (upstream default names the JSONPath).
    pub description: String,
    /// 0 for the default view, more for `-o wide`.
    pub priority: u8,
    /// The JSONPath, e.g. `.spec.cronSpec`.
    pub json_path: String,
}

/// Whether `rt` is CustomResourceDefinition itself.
pub fn is_crd(rt: &ResourceType) -> bool {
    rt.group == CRD_GROUP && rt.kind == "CustomResourceDefinition"
}

/// The OpenAPI definition name upstream gives a custom kind:
/// `com.example.stable.v1.CronTab` for `stable.example.com/v1` `CronTab`.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// Whether the CRD has `condition` with status `True`.
pub fn condition_true(crd: &Value, condition: &str) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == condition && c["status"] == "True")
    })
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// The resource types a CRD serves, one per served version, under the names
/// it was accepted with (`status.acceptedNames`, as upstream serves).
pub fn types_of(crd: &Value) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let group = text(&spec["group"]);
    let accepted = &crd["status"]["acceptedNames"];
    let names = if accepted["plural"].as_str().is_some_and(|p| !p.is_empty()) {
        accepted
    } else {
        &spec["names"]
    };
    let kind = text(&names["kind"]);
    let plural = text(&names["plural"]);
    if group.is_empty() || kind.is_empty() || plural.is_empty() {
        return Vec::new();
    }
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = names["listKind"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{kind}List"));
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .map(|v| text(&v["name"]))
        .unwrap_or_default();
    let crd_name = text(&crd["metadata"]["name"]);
    versions
        .iter()
        .filter(|v| v["served"] == true)
        .map(|v| {
            let version = text(&v["name"]);
            let api_version = format!("{group}/{version}");
            let subs = &v["subresources"];
            let mut subresources = Vec::new();
            let status = subs["status"].is_object();
            if status {
                subresources.push(Subresource {
                    name: "status".into(),
                    kind: kind.clone(),
                    api_version: api_version.clone(),
                    verbs: vec!["get".into(), "patch".into(), "update".into()],
                });
            }
            let scale = subs["scale"].as_object().map(|s| ScalePaths {
                spec_replicas: s
                    .get("specReplicasPath")
                    .map(text)
                    .unwrap_or_else(|| ".spec.replicas".into()),
                status_replicas: s
                    .get("statusReplicasPath")
                    .map(text)
                    .unwrap_or_else(|| ".status.replicas".into()),
                label_selector: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
            if scale.is_some() {
                subresources.push(Subresource {
                    name: "scale".into(),
                    kind: "Scale".into(),
                    api_version: "autoscaling/v1".into(),
                    verbs: vec!["get".into(), "patch".into(), "update".into()],
                });
            }
            let mut columns: Vec<PrinterColumn> = v["additionalPrinterColumns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let json_path = text(&c["jsonPath"]);
                    PrinterColumn {
                        name: text(&c["name"]),
                        ty: c["type"].as_str().unwrap_or("string").to_owned(),
                        format: text(&c["format"]),
                        description: c["description"]
                            .as_str()
                            .filter(|d| !d.is_empty())
                            .map(str::to_owned)
                            .unwrap_or_else(|| {
                                format!(
                                    "Custom resource definition column (in JSONPath format): {json_path}"
                                )
                            }),
                        priority: c["priority"].as_u64().unwrap_or(0).min(255) as u8,
                        json_path,
                    }
                })
                .collect();
            if columns.is_empty() {
                // Upstream's default when a version lists none.
                columns.push(PrinterColumn {
                    name: "Age".into(),
                    ty: "date".into(),
                    format: String::new(),
                    description: "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp".into(),
                    priority: 0,
                    json_path: ".metadata.creationTimestamp".into(),
                });
            }
            ResourceType {
                group: group.clone(),
                version: version.clone(),
                kind: kind.clone(),
                list_kind: list_kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                namespaced: spec["scope"] != "Cluster",
                short_names: strings(&names["shortNames"]),
                categories: strings(&names["categories"]),
                verbs: [
                    "delete",
                    "deletecollection",
                    "get",
                    "list",
                    "patch",
                    "create",
                    "update",
                    "watch",
                ]
                .map(String::from)
                .to_vec(),
                subresources,
                definition: definition_name(&group, &version, &kind),
                custom: Some(Arc::new(CustomSpec {
                    crd: crd_name.clone(),
                    storage_version: storage_version.clone(),
                    schema: v["schema"]["openAPIV3Schema"].clone(),
                    status,
                    scale,
                    columns,
                    defaults: has_default(&v["schema"]["openAPIV3Schema"]),
                    selectable: v["selectableFields"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|f| f["jsonPath"].as_str())
                        .map(|p| p.trim_start_matches('.').to_owned())
                        .collect(),
                    typed_schema: typed_schema(&v["schema"]["openAPIV3Schema"]),
                })),
            }
        })
        .collect()
}

/// Whether a structural schema sets a `default` at any level.
fn has_default(schema: &Value) -> bool {
    let Some(m) = schema.as_object() else {
        return false;
    };
    m.contains_key("default")
        || m.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.values().any(has_default))
        || ["items", "additionalProperties"]
            .iter()
            .any(|k| m.get(*k).is_some_and(has_default))
}

/// The segments of a simple JSONPath such as `.spec.replicas`.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
}

/// The value at a simple JSONPath, if present.
pub fn get_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path)
        .try_fold(object, |v, seg| v.get(seg))
        .filter(|v| !v.is_null())
}

/// Sets the value at a simple JSONPath, creating objects on the way.
pub fn set_path(object: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur = object;
    for seg in parents {
        if !cur[*seg].is_object() {
            cur[*seg] = json!({});
        }
        cur = &mut cur[*seg];
    }
    cur[*last] = value;
}

/// The `autoscaling/v1` Scale of a custom resource.
pub fn scale_view(paths: &ScalePaths, object: &Value) -> Value {
    let meta = &object["metadata"];
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": { "replicas": get_path(object, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0) },
        "status": { "replicas": get_path(object, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0) },
    });
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|p| get_path(object, p))
        .and_then(Value::as_str)
    {
        scale["status"]["selector"] = json!(selector);
    }
    if meta["namespace"].is_null()
        && let Some(m) = scale["metadata"].as_object_mut()
    {
        m.remove("namespace");
    }
    scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": { "name": "crontabs.stable.example.com" },
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": { "plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"] },
                "versions": [
                    { "name": "v1", "served": true, "storage": true,
                      "schema": { "openAPIV3Schema": { "type": "object" } },
                      "subresources": { "status": {}, "scale": { "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector" } },
                      "additionalPrinterColumns": [{ "name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec" }] },
                    { "name": "v1beta1", "served": true, "storage": false,
                      "schema": { "openAPIV3Schema": { "type": "object" } } },
                    { "name": "v1alpha1", "served": false, "storage": false }
                ]
            }
        })
    }

    #[test]
    fn a_crd_serves_one_type_per_served_version() {
        let types = types_of(&crd());
        assert_eq!(types.len(), 2);
        let v1 = &types[0];
        assert_eq!(v1.api_version(), "stable.example.com/v1");
        assert_eq!(v1.list_kind, "CronTabList");
        assert_eq!(v1.definition, "com.example.stable.v1.CronTab");
        assert_eq!(v1.subresources.len(), 2);
        let spec = v1.custom.as_ref().unwrap();
        assert_eq!(spec.storage_version, "v1");
        assert_eq!(spec.columns[0].name, "Spec");
        let beta = types[1].custom.as_ref().unwrap();
        assert_eq!(beta.columns[0].name, "Age", "upstream's default column");
        assert!(types[1].subresources.is_empty());
    }

    #[test]
    fn scale_reads_the_declared_paths() {
        let paths = types_of(&crd())[0]
            .custom
            .as_ref()
            .unwrap()
            .scale
            .clone()
            .unwrap();
        let o = json!({ "metadata": { "name": "a", "namespace": "default" },
                        "spec": { "replicas": 3 }, "status": { "replicas": 2, "selector": "app=a" } });
        let s = scale_view(&paths, &o);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"]["replicas"], 2);
        assert_eq!(s["status"]["selector"], "app=a");
        let mut o = o;
        set_path(&mut o, ".spec.replicas", json!(5));
        assert_eq!(get_path(&o, ".spec.replicas"), Some(&json!(5)));
    }
}
