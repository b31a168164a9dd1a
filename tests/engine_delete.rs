//! The write lifecycle through real kubectl: `delete --cascade=orphan|foreground|background`
//! with the garbage collector, server-side dry runs (`delete`, `create`,
//! `apply`, `diff`) that change nothing, and field validation (`Strict`
//! rejects unknown fields, `--validate=warn` prints kubectl's warning); plus
//! the wire answers kubectl cannot provoke (duplicate JSON keys, bad options,
//! delete preconditions); and the Python client on finalizers and watch.

mod common;

use common::{KubectlCluster, text};
use kemu::shared::NodePool;
use serde_json::{Value, json};

type Cluster = KubectlCluster;

fn cluster(name: &str) -> Cluster {
    let mut spec = common::eks_spec(name);
    spec.node_pools = vec![NodePool {
        name: "ng".into(),
        count: 2,
        machine_type: "m5.large".into(),
        labels: Default::default(),
        taints: vec![],
    }];
    let c = KubectlCluster::new(spec);
    common::wait_for_root_ca(&c.kemu, &c.record, "default");
    c
}

impl KubectlCluster {
    fn rolled_out(&self, name: &str, replicas: u32) {
        self.ok(&[
            "create",
            "deployment",
            name,
            "--image=nginx:1.27",
            &format!("--replicas={replicas}"),
        ]);
        self.ok(&[
            "rollout",
            "status",
            &format!("deployment/{name}"),
            "--timeout=60s",
        ]);
    }
}

#[test]
fn cascades_orphan_foreground_and_background_with_the_garbage_collector() {
    let c = cluster("cascade");

    // Orphan: the Deployment goes, its ReplicaSet and Pods stay, unowned.
    c.rolled_out("orphans", 2);
    // What kemu itself writes passes strict decoding, so kubectl replace and
    // edit of any of it (fieldValidation=Strict) never trip on kemu's fields.
    let registry = kemu_dataplane::resources::ResourceRegistry::builtin();
    for kind in [
        "deployments",
        "replicasets",
        "pods",
        "nodes",
        "namespaces",
        "events",
        "serviceaccounts",
        "configmaps",
        "services",
        "endpointslices",
        "endpoints",
        "clusterroles",
        "clusterrolebindings",
    ] {
        for item in c.items(&["get", kind, "-A"]) {
            let rt = registry
                .by_kind(
                    item["apiVersion"].as_str().unwrap(),
                    item["kind"].as_str().unwrap(),
                )
                .unwrap();
            let checked = kemu_dataplane::api::field_validation::check_value(
                item.clone(),
                &rt.field_schema(),
            );
            assert!(
                checked.problems.is_empty(),
                "{:?} in {item}",
                checked.problems
            );
        }
    }
    let out = c.ok(&["delete", "deployment", "orphans", "--cascade=orphan"]);
    assert!(out.contains("deployment.apps \"orphans\" deleted"), "{out}");
    assert!(!c.run(&["get", "deployment", "orphans"]).status.success());
    let rs = c.items(&["get", "rs", "-l", "app=orphans"]);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert!(
        rs[0]["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "orphaned: {}",
        rs[0]["metadata"]
    );
    assert_eq!(c.items(&["get", "pods", "-l", "app=orphans"]).len(), 2);

    // Foreground: kubectl's wait ends when the Deployment is gone, which is
    // only after its ReplicaSet and Pods.
    c.rolled_out("fore", 2);
    c.ok(&["delete", "deployment", "fore", "--cascade=foreground"]);
    assert!(c.items(&["get", "rs", "-l", "app=fore"]).is_empty());
    assert!(c.items(&["get", "pods", "-l", "app=fore"]).is_empty());

    // Background (kubectl's default): the Deployment goes at once, the
    // collector removes the rest after.
    c.rolled_out("back", 2);
    c.ok(&["delete", "deployment", "back"]);
    c.ok(&[
        "wait",
        "--for=delete",
        "rs",
        "-l",
        "app=back",
        "--timeout=60s",
    ]);
    c.ok(&[
        "wait",
        "--for=delete",
        "pods",
        "-l",
        "app=back",
        "--timeout=60s",
    ]);

    // A Pod is deleted gracefully: the kubelet finishes it, kubectl waits.
    let pod = c.items(&["get", "pods", "-l", "app=orphans"])[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = c.ok(&["delete", "pod", &pod]);
    assert!(out.contains(&format!("pod \"{pod}\" deleted")), "{out}");
    // Force deletion answers at once.
    let other = c.items(&["get", "pods", "-l", "app=orphans"]);
    if let Some(p) = other.first() {
        let name = p["metadata"]["name"].as_str().unwrap();
        let out = c.run(&["delete", "pod", name, "--grace-period=0", "--force"]);
        assert!(out.status.success(), "{}", text(&out));
    }
}

const CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
"#;

const CM_CHANGED: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "2"
"#;

#[test]
fn server_dry_runs_and_diff_change_nothing() {
    let c = cluster("dryrun");
    let v1 = c.file("cm.yaml", CM);
    let v2 = c.file("cm2.yaml", CM_CHANGED);
    c.ok(&["apply", "-f", &v1]);
    let before = c.json(&["get", "configmap", "settings"]);
    let rv = before["metadata"]["resourceVersion"].clone();

    let out = c.run(&["apply", "--dry-run=server", "-f", &v2]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("configured (server dry run)"),
        "{}",
        text(&out)
    );
    assert!(out.stderr.is_empty(), "no warnings: {}", text(&out));
    let after = c.json(&["get", "configmap", "settings"]);
    assert_eq!(after["data"]["a"], "1");
    assert_eq!(after["metadata"]["resourceVersion"], rv);

    // kubectl diff: a server-side dry-run patch, then diff(1): exit 1 with the change.
    let out = c.run(&["diff", "-f", &v2]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("-  a: \"1\""), "{diff}");
    assert!(diff.contains("+  a: \"2\""), "{diff}");
    // No difference: exit 0.
    let same = c.run(&["diff", "-f", &v1]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    assert_eq!(
        c.json(&["get", "configmap", "settings"])["metadata"]["resourceVersion"],
        rv
    );

    let out = c.ok(&["delete", "configmap", "settings", "--dry-run=server"]);
    assert!(out.contains("deleted (server dry run)"), "{out}");
    assert_eq!(
        c.json(&["get", "configmap", "settings"])["metadata"]["resourceVersion"],
        rv
    );

    let fresh = c.file(
        "fresh.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh}\ndata: {b: '1'}\n",
    );
    let out = c.ok(&["create", "--dry-run=server", "-f", &fresh, "-o", "json"]);
    let created: Value = serde_json::from_str(&out).unwrap();
    assert!(created["metadata"]["uid"].is_string(), "{created}");
    assert!(
        created["metadata"]["creationTimestamp"].is_string(),
        "{created}"
    );
    assert!(!c.run(&["get", "configmap", "fresh"]).status.success());
}

const UNKNOWN_FIELDS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: strict
spec:
  replicas: 1
  foo: bar
  selector: {matchLabels: {app: strict}}
  template:
    metadata: {labels: {app: strict}}
    spec:
      containers:
      - name: c
        image: nginx:1.27
        colour: red
"#;

#[test]
fn unknown_fields_are_rejected_or_warned_about() {
    let c = cluster("fields");
    let f = c.file("strict.yaml", UNKNOWN_FIELDS);
    let out = c.run(&["create", "-f", &f]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.foo\", unknown field \"spec.template.spec.containers[0].colour\""
        ),
        "{err}"
    );
    assert!(!c.run(&["get", "deployment", "strict"]).status.success());

    let out = c.run(&["create", "-f", &f, "--validate=warn"]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("Warning:")).collect();
    assert_eq!(
        warnings,
        [
            "Warning: unknown field \"spec.foo\"",
            "Warning: unknown field \"spec.template.spec.containers[0].colour\"",
        ],
        "{err}"
    );
    let d = c.json(&["get", "deployment", "strict"]);
    assert!(d["spec"].get("foo").is_none(), "unknown fields are dropped");

    // replace (PUT) validates as strictly as create.
    let out = c.run(&["replace", "-f", &f]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("strict decoding error: unknown field \"spec.foo\""),
        "{}",
        text(&out)
    );

    // A patch with an unknown field: warned about, the field dropped.
    let out = c.run(&[
        "patch",
        "deployment",
        "strict",
        "--type=merge",
        "-p",
        r#"{"spec":{"bar":1}}"#,
    ]);
    assert!(out.status.success(), "default Warn: {}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("Warning:")).collect();
    assert_eq!(warnings, ["Warning: unknown field \"spec.bar\""], "{err}");
    assert!(
        c.json(&["get", "deployment", "strict"])["spec"]
            .get("bar")
            .is_none()
    );
}

/// Raw HTTPS with the cluster's admin certificate, for what kubectl never sends.
struct Raw {
    client: reqwest::Client,
    server: String,
    rt: tokio::runtime::Runtime,
}

impl Raw {
    fn new(c: &Cluster) -> Self {
        kemu::shared::pki::install_crypto_provider();
        let cert = c
            .record
            .ca
            .client_cert("kemu-admin", &["system:masters".into()], c.now)
            .unwrap();
        let client = reqwest::Client::builder()
            .tls_certs_only([
                reqwest::Certificate::from_pem(c.record.ca.cert_pem().as_bytes()).unwrap(),
            ])
            .identity(
                reqwest::Identity::from_pem(
                    format!("{}{}", cert.cert_pem, cert.key_pem).as_bytes(),
                )
                .unwrap(),
            )
            .build()
            .unwrap();
        Self {
            client,
            server: kemu::shared::advertise(&c.record).server_url().unwrap(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    fn call(&self, method: &str, path: &str, ct: &str, body: &str) -> (u16, Vec<String>, Value) {
        self.rt.block_on(async {
            let resp = self
                .client
                .request(method.parse().unwrap(), format!("{}{path}", self.server))
                .header("content-type", ct)
                .body(body.to_owned())
                .send()
                .await
                .unwrap();
            let code = resp.status().as_u16();
            let warnings = resp
                .headers()
                .get_all("warning")
                .iter()
                .map(|h| h.to_str().unwrap().to_owned())
                .collect();
            let body = resp.bytes().await.unwrap();
            (
                code,
                warnings,
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            )
        })
    }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn duplicate_fields_bad_options_and_preconditions_on_the_wire() {
    let c = cluster("wire");
    let raw = Raw::new(&c);
    let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d"},"data":{"k":"1","k":"2"},"extra":true}"#;
    let (code, _, s) = raw.call(
        "POST",
        &format!("{CMS}?fieldValidation=Strict"),
        "application/json",
        dup,
    );
    assert_eq!(code, 400, "{s}");
    assert_eq!(s["reason"], "BadRequest");
    assert_eq!(
        s["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", duplicate field \"data.k\", unknown field \"extra\""
    );
    // The default (Warn) stores it, with one Warning header per problem.
    let (code, warnings, created) = raw.call("POST", CMS, "application/json", dup);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        [
            "299 - \"duplicate field \\\"metadata.name\\\"\"",
            "299 - \"duplicate field \\\"data.k\\\"\"",
            "299 - \"unknown field \\\"extra\\\"\"",
        ]
    );
    assert_eq!(created["data"]["k"], "2");
    assert!(created.get("extra").is_none());
    let (code, warnings, _) = raw.call(
        "POST",
        &format!("{CMS}?fieldValidation=Ignore&dryRun=All"),
        "application/json",
        &dup.replace("\"d\"", "\"e\""),
    );
    assert_eq!((code, warnings.len()), (201, 0));

    // A strict patch: 422 naming the patched object, nothing stored.
    let (code, _, s) = raw.call(
        "PATCH",
        &format!("{CMS}/d?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"data":{"k":"3"},"spec":{"x":1}}"#,
    );
    assert_eq!(code, 422, "{s}");
    let msg = s["message"].as_str().unwrap();
    assert!(
        msg.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{msg}"
    );
    assert!(
        msg.ends_with("\": strict decoding error: unknown field \"spec\""),
        "{msg}"
    );
    assert_eq!(s["details"]["causes"][0]["field"], "patch");
    let (code, _, s) = raw.call(
        "PATCH",
        &format!("{CMS}/d?fieldValidation=Strict"),
        "application/strategic-merge-patch+json",
        r#"{"data":{"k":"3","k":"4"}}"#,
    );
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        " \"\" is invalid: patch: Invalid value: \"map[data:map[k:4]]\": strict decoding error: duplicate field \"data.k\""
    );
    let (_, _, now) = raw.call("GET", &format!("{CMS}/d"), "application/json", "");
    assert_eq!(now["data"]["k"], "2");

    // deletecollection with dryRun answers what it matched and deletes nothing.
    let (code, _, list) = raw.call(
        "DELETE",
        &format!("{CMS}?dryRun=All&fieldSelector=metadata.name%3Dd"),
        "application/json",
        "",
    );
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    let (code, _, _) = raw.call("GET", &format!("{CMS}/d"), "application/json", "");
    assert_eq!(code, 200);

    // Options kube-apiserver refuses.
    let (code, _, s) = raw.call(
        "POST",
        &format!("{CMS}?dryRun=Yes"),
        "application/json",
        "{}",
    );
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Yes\"}: supported values: \"All\""
    );
    let (code, _, s) = raw.call(
        "POST",
        &format!("{CMS}?fieldValidation=Loud"),
        "application/json",
        "{}",
    );
    assert_eq!(code, 422, "{s}");
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let (code, _, s) = raw.call(
        "DELETE",
        &format!("{CMS}/d"),
        "application/json",
        &json!({"propagationPolicy": "Sideways"}).to_string(),
    );
    assert_eq!(code, 422, "{s}");

    // Preconditions: a stale uid or resourceVersion is a 409 and deletes nothing.
    let (code, _, s) = raw.call(
        "DELETE",
        &format!("{CMS}/d"),
        "application/json",
        &json!({"preconditions": {"resourceVersion": "1"}}).to_string(),
    );
    assert_eq!(code, 409, "{s}");
    assert_eq!(
        s["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"d\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified",
            created["metadata"]["resourceVersion"].as_str().unwrap()
        )
    );
    // The right uid deletes; a ConfigMap answers a Success Status.
    let (code, _, s) = raw.call(
        "DELETE",
        &format!("{CMS}/d"),
        "application/json",
        &json!({"preconditions": {"uid": uid}}).to_string(),
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["status"], "Success");
    assert_eq!(s["details"]["uid"], uid);

    // A Namespace answers DELETE with itself, Terminating; the namespace
    // controller empties it, then it goes.
    let (code, _, _) = raw.call(
        "POST",
        "/api/v1/namespaces",
        "application/json",
        r#"{"metadata":{"name":"team"}}"#,
    );
    assert_eq!(code, 201);
    let (code, _, _) = raw.call(
        "POST",
        "/api/v1/namespaces/team/configmaps",
        "application/json",
        r#"{"metadata":{"name":"inside"}}"#,
    );
    assert_eq!(code, 201);
    let (code, _, ns) = raw.call("DELETE", "/api/v1/namespaces/team", "application/json", "");
    assert_eq!(code, 200, "{ns}");
    assert_eq!(ns["kind"], "Namespace");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    c.ok(&["wait", "--for=delete", "namespace/team", "--timeout=60s"]);
    assert!(
        !c.run(&["get", "configmap", "inside", "-n", "team"])
            .status
            .success()
    );
}

#[test]
fn python_client_finalizers_hold_a_deleted_object_until_removed() {
    let c = cluster("py");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/engine_lifecycle.py");
    let out = c
        .sandbox
        .command("python3")
        .arg(script)
        .env("KUBECONFIG", &c.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed:\n{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("ok\n"),
        "{}",
        text(&out)
    );
}
