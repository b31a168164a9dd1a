//! kubectl reads a kemu cluster's schema as a real cluster's: discovery
//! (aggregated, in two requests), OpenAPI v3 for `explain`, and every
//! discovery and OpenAPI document validates structurally.

mod common;

use std::path::PathBuf;

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use serde_json::Value;

struct Cluster {
    _kemu: Kemu,
    sandbox: Sandbox,
    kubeconfig: PathBuf,
}

impl Cluster {
    fn new() -> Self {
        let kemu = Kemu::builder().build().unwrap();
        let a = kemu.registry().create(eks_spec("alpha")).unwrap();
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
        let out = self.sandbox.kubectl(&self.kubeconfig, args);
        assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn raw(&self, path: &str) -> Value {
        let body = self.ok(&["get", "--raw", path]);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

#[test]
fn api_resources_come_from_two_aggregated_discovery_requests() {
    let c = Cluster::new();
    let out = c.sandbox.kubectl(&c.kubeconfig, &["api-resources", "-v=6"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    for line in [
        "deployments                         deploy       apps/v1                           true         Deployment",
        "pods                                po           v1                                true         Pod",
        "horizontalpodautoscalers            hpa          autoscaling/v2                    true         HorizontalPodAutoscaler",
        "customresourcedefinitions           crd,crds     apiextensions.k8s.io/v1           false        CustomResourceDefinition",
    ] {
        let want: Vec<&str> = line.split_whitespace().collect();
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == want),
            "missing {line}\n{stdout}"
        );
    }
    // Aggregated discovery: /api and /apis only, never one request per group-version.
    let gets: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" GET https://"))
        .collect();
    assert!(gets.iter().any(|l| l.contains("/api?")), "{log}");
    assert!(gets.iter().any(|l| l.contains("/apis?")), "{log}");
    assert!(
        !gets.iter().any(|l| l.contains("/apis/apps/v1")),
        "fell back to legacy discovery: {log}"
    );

    // The answer names its format in Content-Type (kubectl reads it there).
    let out = c.sandbox.kubectl(&c.kubeconfig, &["api-versions", "-v=8"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
        "{}",
        text(&out)
    );
    let versions = c.ok(&["api-versions"]);
    for gv in [
        "v1",
        "apps/v1",
        "autoscaling/v2",
        "autoscaling/v1",
        "batch/v1",
        "resource.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == gv),
            "{gv} missing: {versions}"
        );
    }
    // Categories: `get all` expands through discovery's `all` category.
    let all = c.ok(&["api-resources", "--categories=all", "-o", "name"]);
    for r in [
        "pods",
        "services",
        "deployments.apps",
        "cronjobs.batch",
        "jobs.batch",
    ] {
        assert!(all.lines().any(|l| l == r), "{r} not in all: {all}");
    }
}

#[test]
fn legacy_discovery_documents_are_well_formed() {
    let c = Cluster::new();
    let api = c.raw("/api");
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"][0], "v1");
    let apis = c.raw("/apis");
    assert_eq!(apis["kind"], "APIGroupList");
    let groups = apis["groups"].as_array().unwrap();
    for g in groups {
        let name = g["name"].as_str().unwrap();
        let preferred = g["preferredVersion"]["groupVersion"].as_str().unwrap();
        let group = c.raw(&format!("/apis/{name}"));
        assert_eq!(group["kind"], "APIGroup");
        assert_eq!(group["preferredVersion"]["groupVersion"], preferred);
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap();
            let list = c.raw(&format!("/apis/{gv}"));
            assert_eq!(list["kind"], "APIResourceList");
            assert_eq!(list["groupVersion"], gv);
            for r in list["resources"].as_array().unwrap() {
                assert!(
                    r["name"].is_string() && r["kind"].is_string() && r["verbs"].is_array(),
                    "{r}"
                );
                assert!(r["namespaced"].is_boolean(), "{r}");
            }
        }
    }
    let core = c.raw("/api/v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for n in [
        "pods",
        "pods/log",
        "pods/exec",
        "pods/eviction",
        "serviceaccounts/token",
        "nodes/proxy",
        "services/proxy",
        "namespaces",
    ] {
        assert!(names.contains(&n), "{n}: {names:?}");
    }
    let out = c
        .sandbox
        .kubectl(&c.kubeconfig, &["get", "--raw", "/apis/nosuch.k8s.io/v1"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        text(&out)
    );
}

#[test]
fn openapi_documents_validate_and_explain_works() {
    let c = Cluster::new();
    let root = c.raw("/openapi/v3");
    let paths = root["paths"].as_object().unwrap();
    assert!(paths.len() >= 20, "{root}");
    for (gv, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with(&format!("/openapi/v3/{gv}?hash=")), "{url}");
        let doc = c.raw(url);
        assert_eq!(doc["openapi"], "3.0.0", "{gv}");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"").skip(1) {
            let target = &r[..r.find('"').unwrap()];
            let name = target.trim_start_matches("#/components/schemas/");
            assert!(schemas.contains_key(name), "{gv}: dangling {target}");
        }
    }
    let v2 = c.raw("/openapi/v2");
    assert_eq!(v2["swagger"], "2.0");
    assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());

    let explain = c.ok(&["explain", "deployment.spec.replicas"]);
    assert!(explain.contains("GROUP:      apps"), "{explain}");
    assert!(explain.contains("KIND:       Deployment"), "{explain}");
    assert!(explain.contains("FIELD: replicas <integer>"), "{explain}");
    assert!(explain.contains("Number of desired pods"), "{explain}");
    let explain = c.ok(&["explain", "pods.spec.containers"]);
    assert!(
        explain.contains("FIELD: containers <[]Container>"),
        "{explain}"
    );
    // Every served resource explains (each kind found by its GVK in its
    // group-version's document).
    for name in c.ok(&["api-resources", "-o", "name"]).lines() {
        // explain reads dots as a field path: name the group with --api-version.
        let explain = match name.split_once('.') {
            None => c.ok(&["explain", name]),
            Some((plural, group)) => {
                let gv = c.raw(&format!("/apis/{group}"))["preferredVersion"]["groupVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                c.ok(&["explain", plural, &format!("--api-version={gv}")])
            }
        };
        assert!(explain.contains("KIND:"), "{name}: {explain}");
    }
    let explain = c.ok(&["explain", "svc.spec.ports.targetPort"]);
    assert!(
        explain.contains("FIELD: targetPort <IntOrString>"),
        "{explain}"
    );
    let explain = c.ok(&["explain", "hpa"]);
    assert!(explain.contains("VERSION:    v2"), "{explain}");
}

#[test]
fn client_side_apply_downloads_the_group_version_document() {
    let c = Cluster::new();
    let manifest = c.sandbox.path("deploy.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx\n",
    )
    .unwrap();
    let file = manifest.to_str().unwrap();
    let out = c.sandbox.kubectl(
        &c.kubeconfig,
        &["apply", "--dry-run=client", "-f", file, "-v=6"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("deployment.apps/web created (dry run)"),
        "{}",
        text(&out)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.lines().any(|l| l.contains("GET https://")
            && l.contains("/openapi/v3/apis/apps/v1?hash=")
            && l.contains(" 200 OK")),
        "{log}"
    );
}

/// The older kubectl binaries the google-cloud-cli package installs beside
/// kubectl (1.27 and 1.28 ask for aggregated discovery v2beta1).
#[test]
fn older_kubectl_versions_read_discovery_and_openapi() {
    let c = Cluster::new();
    let gcloud = std::fs::canonicalize(common::which("gcloud")).unwrap();
    let bin = gcloud.parent().unwrap();
    for minor in 27..=33 {
        let kubectl = bin.join(format!("kubectl.1.{minor}"));
        let tool = kubectl.to_str().unwrap();
        let run = |args: &[&str]| {
            let out = c
                .sandbox
                .command(tool)
                .arg("--kubeconfig")
                .arg(&c.kubeconfig)
                .arg("--request-timeout=20s")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "1.{minor} {args:?}: {}", text(&out));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let resources = run(&["api-resources"]);
        assert!(
            resources
                .lines()
                .any(|l| l.starts_with("deployments ") && l.contains("deploy")),
            "1.{minor}: {resources}"
        );
        let explain = run(&["explain", "deployment.spec.replicas", "-v=6"]);
        assert!(
            explain.contains("replicas <integer>"),
            "1.{minor}: {explain}"
        );
    }
}
