//! The rest of the engine's verification: older kubectl versions (get, apply
//! twice, get -w), `describe`, `wait --for=delete`, `get all`, and every kind
//! of response body validated against the cluster's own OpenAPI v3 schemas.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::NodePool;
use serde_json::Value;

struct Cluster {
    _kemu: Kemu,
    sandbox: Sandbox,
    kubeconfig: PathBuf,
}

impl Cluster {
    fn new() -> Self {
        let kemu = Kemu::builder().build().unwrap();
        let mut spec = eks_spec("alpha");
        spec.node_pools = vec![NodePool {
            name: "workers".into(),
            count: 2,
            machine_type: "m5.large".into(),
            labels: Default::default(),
            taints: vec![],
        }];
        let a = kemu.registry().create(spec).unwrap();
        let sandbox = Sandbox::new();
        let kubeconfig = sandbox.path("kubeconfig");
        write_kubeconfig(&kubeconfig, &a, a.ca.cert_pem(), kemu.clock().now());
        Self {
            _kemu: kemu,
            sandbox,
            kubeconfig,
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        self.ok_with("kubectl", args)
    }

    fn ok_with(&self, tool: &str, args: &[&str]) -> String {
        let out = self
            .sandbox
            .command(tool)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool} {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn spawn(&self, tool: &str, args: &[&str]) -> Child {
        self.sandbox
            .command(tool)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn file(&self, name: &str, body: &str) -> String {
        let path = self.sandbox.path(name);
        std::fs::write(&path, body).unwrap();
        path.to_string_lossy().into_owned()
    }
}

fn older_kubectls() -> Vec<(u32, PathBuf)> {
    let gcloud = std::fs::canonicalize(common::which("gcloud")).unwrap();
    let bin = gcloud.parent().unwrap().to_path_buf();
    (27..=33)
        .map(|minor| {
            let tool = bin.join(format!("kubectl.1.{minor}"));
            assert!(tool.is_file(), "{} is not installed", tool.display());
            (minor, tool)
        })
        .collect()
}

fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{value}\"\n")
}

/// Each older kubectl: apply creates, `get` prints the table, `get -w` is
/// running when a second apply changes the object and prints the change.
#[test]
fn older_kubectl_versions_get_apply_twice_and_watch() {
    let c = Cluster::new();
    for (minor, tool) in older_kubectls() {
        let tool = tool.to_str().unwrap();
        let name = format!("skew-1-{minor}");
        let v1 = c.file(&format!("{name}-1.yaml"), &configmap(&name, "one"));
        let out = c.ok_with(tool, &["apply", "-f", &v1]);
        assert!(
            out.contains(&format!("configmap/{name} created")),
            "1.{minor}: {out}"
        );
        let table = c.ok_with(tool, &["get", "configmaps"]);
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["NAME", "DATA", "AGE"], "1.{minor}: {table}");
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().take(2).eq([name.as_str(), "1"])),
            "1.{minor}: {table}"
        );

        let mut watch = c.spawn(
            tool,
            &[
                "get",
                "configmap",
                &name,
                "-w",
                "--output-watch-events",
                "-o",
                "json",
            ],
        );
        let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
        let mut events = Vec::new();
        let mut buf = String::new();
        let mut changed = false;
        // `-o json` prints one indented object per event: collect them whole.
        for line in lines.by_ref() {
            let line = line.unwrap();
            buf.push_str(&line);
            buf.push('\n');
            // Older versions print one compact line, newer an indented block.
            let Ok(event) = serde_json::from_str::<Value>(&buf) else {
                continue;
            };
            buf.clear();
            events.push((
                event["type"].as_str().unwrap_or_default().to_owned(),
                event["object"]["data"]["k"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ));
            if !changed {
                // The watch is established: change the object with a second apply.
                let v2 = c.file(&format!("{name}-2.yaml"), &configmap(&name, "two"));
                let out = c.ok_with(tool, &["apply", "-f", &v2]);
                assert!(
                    out.contains(&format!("configmap/{name} configured")),
                    "1.{minor}: {out}"
                );
                changed = true;
            } else if events.last().is_some_and(|(_, v)| v == "two") {
                break;
            }
        }
        let _ = watch.kill();
        let mut err = String::new();
        if let Some(mut e) = watch.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let _ = watch.wait();
        assert_eq!(
            events,
            [
                ("ADDED".to_owned(), "one".to_owned()),
                ("MODIFIED".to_owned(), "two".to_owned())
            ],
            "1.{minor}: {err}"
        );
    }
}

/// `text` with each run of spaces folded to one (describe aligns its columns).
fn flat(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn describe_wait_for_delete_and_get_all() {
    let c = Cluster::new();
    c.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    c.ok(&["expose", "deployment", "web", "--port=80"]);
    c.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);

    let d = c.ok(&["describe", "deployment", "web"]);
    for want in [
        "Name: web",
        "Namespace: default",
        "Selector: app=web",
        "Replicas: 1 desired | 1 updated | 1 total | 1 available | 0 unavailable",
        "Pod Template:",
        "Image: nginx:1.27",
        "NewReplicaSet: web-",
        "Events:",
        "Normal ScalingReplicaSet",
    ] {
        assert!(flat(&d).contains(want), "missing {want:?}\n{d}");
    }

    let pod = c.ok(&["get", "pods", "-l", "app=web", "-o", "name"]);
    let pod = pod.trim().trim_start_matches("pod/").to_owned();
    assert!(!pod.is_empty());
    let p = c.ok(&["describe", "pod", &pod]);
    for want in [
        format!("Name: {pod}"),
        "Status: Running".to_owned(),
        "Controlled By: ReplicaSet/web-".to_owned(),
        "Containers:".to_owned(),
        "Conditions:".to_owned(),
        "Events:".to_owned(),
    ] {
        assert!(flat(&p).contains(&want), "missing {want:?}\n{p}");
    }

    let all = c.ok(&["get", "all"]);
    for want in [
        format!("pod/{pod}"),
        "service/web".to_owned(),
        "deployment.apps/web".to_owned(),
        "replicaset.apps/web-".to_owned(),
    ] {
        assert!(all.contains(&want), "missing {want:?}\n{all}");
    }

    c.ok(&["run", "lone", "--image=busybox:1.36"]);
    c.ok(&["wait", "--for=condition=Ready", "pod/lone", "--timeout=30s"]);
    c.ok(&["delete", "pod", "lone", "--wait=false"]);
    let out = c.ok(&["wait", "--for=delete", "pod/lone", "--timeout=30s"]);
    assert!(
        out.contains("pod/lone condition met") || out.is_empty(),
        "{out}"
    );
    let gone = c.sandbox.kubectl(&c.kubeconfig, &["get", "pod", "lone"]);
    assert!(!gone.status.success());
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("NotFound"),
        "{}",
        text(&gone)
    );
}

/// A structural validator over OpenAPI v3 component schemas: `$ref`,
/// `allOf`, types, formats, enums, required fields, and no unknown fields
/// where a schema lists properties without `additionalProperties`.
struct Schemas(HashMap<String, Value>);

impl Schemas {
    fn check(&self, value: &Value, name: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let schema = self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("no schema {name}"));
        self.walk(value, schema, name, &mut errors);
        errors
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => {
                let name = r
                    .trim_start_matches("#/components/schemas/")
                    .trim_start_matches("#/definitions/");
                self.0.get(name).unwrap_or_else(|| panic!("dangling {r}"))
            }
            None => schema,
        }
    }

    fn walk(&self, value: &Value, schema: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        if let Some(all) = schema["allOf"].as_array() {
            for s in all {
                self.walk(value, s, at, errors);
            }
        }
        if schema["x-kubernetes-preserve-unknown-fields"] == true {
            return;
        }
        if schema["x-kubernetes-int-or-string"] == true || schema["format"] == "int-or-string" {
            if !(value.is_string() || value.is_i64() || value.is_u64()) {
                errors.push(format!("{at}: {value} is not an int-or-string"));
            }
            return;
        }
        if let Some(options) = schema["enum"].as_array()
            && !options.contains(value)
        {
            errors.push(format!("{at}: {value} not in enum {options:?}"));
        }
        let ok = match schema["type"].as_str() {
            None => true,
            Some("object") => value.is_object(),
            Some("array") => value.is_array(),
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some(other) => panic!("{at}: schema type {other}"),
        };
        if !ok {
            errors.push(format!("{at}: {value} is not {}", schema["type"]));
            return;
        }
        if let Some(obj) = value.as_object() {
            let props = schema["properties"].as_object();
            if let Some(required) = schema["required"].as_array() {
                for r in required.iter().filter_map(Value::as_str) {
                    if obj.get(r).is_none_or(Value::is_null) {
                        errors.push(format!("{at}: required field {r} missing"));
                    }
                }
            }
            for (k, v) in obj {
                let sub = format!("{at}.{k}");
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    // An optional field may be null (Go's omitempty-less pointers).
                    if !v.is_null() {
                        self.walk(v, p, &sub, errors);
                    }
                } else if let Some(extra) = schema.get("additionalProperties") {
                    if extra.is_object() {
                        self.walk(v, extra, &sub, errors);
                    }
                } else if props.is_some() {
                    errors.push(format!("{sub}: unknown field"));
                }
            }
        }
        if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
            for (i, v) in arr.iter().enumerate() {
                self.walk(v, items, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

/// `kubectl proxy` on a free port: plain HTTP in, the cluster's TLS out, so
/// the test can choose its own Accept header and stream a watch.
struct Proxy {
    child: Child,
    base: String,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn proxy(c: &Cluster) -> Proxy {
    let mut child = c.spawn("kubectl", &["proxy", "--port=0"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let addr = line
        .rsplit(' ')
        .next()
        .unwrap_or_else(|| panic!("proxy said {line}"))
        .to_owned();
    Proxy {
        child,
        base: format!("http://{addr}"),
    }
}

fn load_schemas(rt: &tokio::runtime::Runtime, client: &reqwest::Client, base: &str) -> Schemas {
    rt.block_on(async {
        let root: Value = client
            .get(format!("{base}/openapi/v3"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut all = HashMap::new();
        for entry in root["paths"].as_object().unwrap().values() {
            let url = entry["serverRelativeURL"].as_str().unwrap();
            let doc: Value = client
                .get(format!("{base}{url}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for (k, v) in doc["components"]["schemas"].as_object().unwrap() {
                all.insert(k.clone(), v.clone());
            }
        }
        // The v3 documents carry only schemas their paths reference; WatchEvent
        // comes from the v2 document (same schema, `#/definitions/` refs).
        let v2: Value = client
            .get(format!("{base}/openapi/v2"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for (k, v) in v2["definitions"].as_object().unwrap() {
            all.entry(k.clone()).or_insert_with(|| v.clone());
        }
        // Upstream publishes no schema for meta/v1 Table (it is a
        // content-negotiated view): this one follows its Go type.
        all.insert(
            "io.k8s.apimachinery.pkg.apis.meta.v1.Table".to_owned(),
            serde_json::json!({
                "type": "object",
                "required": ["columnDefinitions", "rows"],
                "properties": {
                    "apiVersion": {"type": "string", "enum": ["meta.k8s.io/v1"]},
                    "kind": {"type": "string", "enum": ["Table"]},
                    "metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
                    "columnDefinitions": {"type": "array", "items": {
                        "type": "object",
                        "required": ["name", "type", "format", "description", "priority"],
                        "properties": {
                            "name": {"type": "string"}, "type": {"type": "string"},
                            "format": {"type": "string"}, "description": {"type": "string"},
                            "priority": {"type": "integer"}
                        }
                    }},
                    "rows": {"type": "array", "items": {
                        "type": "object",
                        "required": ["cells"],
                        "properties": {
                            "cells": {"type": "array"},
                            "conditions": {"type": "array"},
                            "object": {"type": "object"}
                        }
                    }}
                }
            }),
        );
        Schemas(all)
    })
}

fn get(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    url: &str,
    accept: &str,
) -> (u16, Value) {
    rt.block_on(async {
        let resp = client
            .get(url)
            .header("Accept", accept)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}"));
        (status, v)
    })
}

#[test]
fn responses_validate_against_the_served_openapi_schemas() {
    let c = Cluster::new();
    c.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    c.ok(&["expose", "deployment", "web", "--port=80"]);
    c.ok(&["create", "configmap", "cfg", "--from-literal=a=b"]);
    c.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);

    let p = proxy(&c);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = common::http_client();
    let schemas = load_schemas(&rt, &client, &p.base);
    let json = "application/json";
    let base = &p.base;
    let pod = c.ok(&["get", "pods", "-l", "app=web", "-o", "name"]);
    let pod = pod.trim().trim_start_matches("pod/");
    let node = c.ok(&["get", "nodes", "-o", "name"]);
    let node = node.lines().next().unwrap().trim_start_matches("node/");
    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
    let checks: Vec<(String, &str, String)> = vec![
        (
            format!("{base}/apis/apps/v1/namespaces/default/deployments/web"),
            json,
            "io.k8s.api.apps.v1.Deployment".into(),
        ),
        (
            format!("{base}/apis/apps/v1/namespaces/default/deployments"),
            json,
            "io.k8s.api.apps.v1.DeploymentList".into(),
        ),
        (
            format!("{base}/apis/apps/v1/namespaces/default/replicasets"),
            json,
            "io.k8s.api.apps.v1.ReplicaSetList".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default/pods/{pod}"),
            json,
            "io.k8s.api.core.v1.Pod".into(),
        ),
        (
            format!("{base}/api/v1/pods"),
            json,
            "io.k8s.api.core.v1.PodList".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default/services/web"),
            json,
            "io.k8s.api.core.v1.Service".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default/configmaps/cfg"),
            json,
            "io.k8s.api.core.v1.ConfigMap".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default/endpoints"),
            json,
            "io.k8s.api.core.v1.EndpointsList".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default"),
            json,
            "io.k8s.api.core.v1.Namespace".into(),
        ),
        (
            format!("{base}/api/v1/namespaces"),
            json,
            "io.k8s.api.core.v1.NamespaceList".into(),
        ),
        (
            format!("{base}/api/v1/nodes/{node}"),
            json,
            "io.k8s.api.core.v1.Node".into(),
        ),
        (
            format!("{base}/api/v1/events"),
            json,
            "io.k8s.api.core.v1.EventList".into(),
        ),
        (
            format!("{base}/api/v1/namespaces/default/serviceaccounts/default"),
            json,
            "io.k8s.api.core.v1.ServiceAccount".into(),
        ),
        (
            format!("{base}/apis/apps/v1/namespaces/default/deployments?limit=500"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            format!("{META}.Table"),
        ),
        (
            format!("{base}/api/v1/pods?includeObject=Object"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            format!("{META}.Table"),
        ),
        (
            format!("{base}/api/v1/namespaces/default/pods/nosuch"),
            json,
            format!("{META}.Status"),
        ),
    ];
    // The checker itself rejects what it should.
    let (_, mut bad) = get(&rt, &client, &checks[0].0, json);
    bad["spec"]["replicas"] = "three".into();
    bad["spec"]["bogus"] = true.into();
    bad["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("name");
    let errors = schemas
        .check(&bad, "io.k8s.api.apps.v1.Deployment")
        .join("\n");
    for want in [
        "spec.replicas",
        "spec.bogus: unknown field",
        "required field name",
    ] {
        assert!(errors.contains(want), "{want}: {errors}");
    }
    // The served schemas (from upstream's published definitions) carry no
    // enums; the checker enforces one where a schema has it.
    let enums = Schemas(HashMap::from([(
        "e".to_owned(),
        serde_json::json!({"type": "string", "enum": ["Recreate", "RollingUpdate"]}),
    )]));
    assert_eq!(enums.check(&"Sideways".into(), "e").len(), 1);
    assert!(enums.check(&"Recreate".into(), "e").is_empty());

    let mut failures = Vec::new();
    for (url, accept, schema) in &checks {
        let (status, body) = get(&rt, &client, url, accept);
        if schema.ends_with(".Status") {
            assert_eq!(status, 404, "{body}");
        } else {
            assert_eq!(status, 200, "{url}: {body}");
        }
        for e in schemas.check(&body, schema) {
            failures.push(format!("{url}: {e}"));
        }
        // Table rows with includeObject carry whole objects: validate them too.
        if schema.ends_with(".Table") {
            for row in body["rows"].as_array().unwrap() {
                if let Some(kind) = row["object"]["kind"].as_str() {
                    let name = match kind {
                        "Pod" => "io.k8s.api.core.v1.Pod",
                        "Deployment" => "io.k8s.api.apps.v1.Deployment",
                        _ => continue,
                    };
                    for e in schemas.check(&row["object"], name) {
                        failures.push(format!("{url} row: {e}"));
                    }
                }
            }
        }
    }

    // A watch event: the first line of a watch (the initial ADDED) and its object.
    let line = rt.block_on(async {
        use futures_util::StreamExt;
        let resp = client
            .get(format!(
                "{base}/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name=cfg"
            ))
            .send()
            .await
            .unwrap();
        let mut stream = resp.bytes_stream();
        let mut buf = Vec::new();
        while let Some(chunk) = stream.next().await {
            buf.extend_from_slice(&chunk.unwrap());
            if buf.contains(&b'\n') {
                break;
            }
        }
        let end = buf.iter().position(|b| *b == b'\n').unwrap();
        serde_json::from_slice::<Value>(&buf[..end]).unwrap()
    });
    assert_eq!(line["type"], "ADDED", "{line}");
    for e in schemas.check(&line, &format!("{META}.WatchEvent")) {
        failures.push(format!("watch event: {e}"));
    }
    for e in schemas.check(&line["object"], "io.k8s.api.core.v1.ConfigMap") {
        failures.push(format!("watch event object: {e}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
