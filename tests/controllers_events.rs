//! Events served under core/v1 and events.k8s.io/v1 from one storage, as
//! kube-apiserver serves them, driven by real kubectl and the Python
//! `kubernetes` client (tests/py/events_v1.py).

mod common;

use common::{KubectlCluster, Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;

const CORE_EVENT: &str = r#"
apiVersion: v1
kind: Event
metadata: {name: web.core, namespace: default}
involvedObject: {kind: Pod, name: web, namespace: default, apiVersion: v1}
reason: Scheduled
message: Successfully assigned default/web to node-1
source: {component: default-scheduler}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
type: Normal
"#;

const V1_EVENT: &str = r#"
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.v1, namespace: default}
eventTime: "2026-01-01T00:00:01.000000Z"
reportingController: example.com/operator
reportingInstance: operator-0
action: Reconcile
reason: Reconciled
note: reconciled the web pod
type: Warning
regarding: {kind: Pod, name: web, namespace: default, apiVersion: v1}
related: {kind: Node, name: node-1, apiVersion: v1}
series: {count: 2, lastObservedTime: "2026-01-01T00:00:02.000000Z"}
"#;

const BAD_V1_EVENT: &str = r#"
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: bad, namespace: default}
note: no time
type: Normal
deprecatedCount: 4
"#;

#[test]
fn kubectl_sees_one_event_storage_through_both_apis() {
    let c = KubectlCluster::new(eks_spec("events"));
    let core_file = c.file("core.yaml", CORE_EVENT);
    let v1_file = c.file("v1.yaml", V1_EVENT);
    c.ok(&["create", "-f", &core_file]);
    c.ok(&["create", "-f", &v1_file]);

    // The core Event, read through events.k8s.io/v1.
    let e = c.json(&["get", "events.v1.events.k8s.io", "web.core"]);
    assert_eq!(e["apiVersion"], "events.k8s.io/v1", "{e}");
    assert_eq!(e["note"], "Successfully assigned default/web to node-1");
    assert_eq!(e["regarding"]["name"], "web");
    assert_eq!(e["deprecatedSource"]["component"], "default-scheduler");
    assert_eq!(e["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(e["deprecatedCount"], 1);
    assert!(e.get("message").is_none() && e.get("involvedObject").is_none());

    // The events.k8s.io Event, read through core/v1 (`events` is the core group's).
    let e = c.json(&["get", "events", "web.v1"]);
    assert_eq!(e["apiVersion"], "v1", "{e}");
    assert_eq!(e["message"], "reconciled the web pod");
    assert_eq!(e["involvedObject"]["kind"], "Pod");
    assert_eq!(e["related"]["name"], "node-1");
    assert_eq!(e["reportingComponent"], "example.com/operator");
    assert_eq!(e["reportingInstance"], "operator-0");
    assert_eq!(e["action"], "Reconcile");
    assert_eq!(e["series"]["count"], 2);
    assert_eq!(e["eventTime"], "2026-01-01T00:00:01.000000Z");
    assert_eq!(e["source"], serde_json::json!({}));

    // Lists through both name both, each in its own form.
    let yaml = c.ok(&["get", "events.v1.events.k8s.io", "-o", "yaml"]);
    for want in [
        "apiVersion: events.k8s.io/v1",
        "name: web.core",
        "name: web.v1",
        "note: reconciled the web pod",
        "reportingController: example.com/operator",
    ] {
        assert!(yaml.contains(want), "{want} missing:\n{yaml}");
    }
    let core_items = c.items(&["get", "events"]);
    assert_eq!(core_items.len(), 2, "{core_items:?}");
    // Table output through events.k8s.io prints upstream's columns.
    let table = c.ok(&["get", "events.v1.events.k8s.io"]);
    assert!(
        table.contains("REASON") && table.contains("OBJECT"),
        "{table}"
    );
    assert!(
        table.contains("pod/web") && table.contains("Reconciled"),
        "{table}"
    );

    // Field selectors by each API's own names.
    let selected = c.items(&[
        "get",
        "events.v1.events.k8s.io",
        "--field-selector",
        "regarding.name=web,reportingController=example.com/operator",
    ]);
    assert_eq!(selected.len(), 1, "{selected:?}");
    assert_eq!(selected[0]["metadata"]["name"], "web.v1");
    let err = c.fails(&[
        "get",
        "events.v1.events.k8s.io",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(
        err.contains("field label not supported: involvedObject.name"),
        "{err}"
    );

    // `kubectl events` (core/v1 in this kubectl, as -v=8 shows) lists both.
    let out = c.run(&["events", "-v=8"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("Scheduled") && stdout.contains("Reconciled"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reconciled the web pod") && stdout.contains("Warning"),
        "{stdout}"
    );
    assert!(stderr.contains("/namespaces/default/events"), "{stderr}");
    let only = c.ok(&["events", "--for", "pod/web", "--types", "Warning"]);
    assert!(
        only.contains("Reconciled") && !only.contains("Scheduled"),
        "{only}"
    );

    // A change through events.k8s.io shows through core.
    c.ok(&[
        "label",
        "events.v1.events.k8s.io",
        "web.core",
        "checked=yes",
    ]);
    let e = c.json(&["get", "events", "web.core"]);
    assert_eq!(e["metadata"]["labels"]["checked"], "yes");
    assert_eq!(e["message"], "Successfully assigned default/web to node-1");
    assert_eq!(e["count"], 1);

    // Strict checks on a create through events.k8s.io, nothing written.
    let bad = c.file("bad.yaml", BAD_V1_EVENT);
    let err = c.fails(&["create", "-f", &bad]);
    assert!(
        err.contains("Event \"bad\" is invalid")
            && err.contains("eventTime: Required value")
            && err.contains("count: Invalid value: \"\": needs to be unset"),
        "{err}"
    );
    c.fails(&["get", "events", "bad"]);

    // Deleting through one API removes it from both.
    c.ok(&["delete", "events.v1.events.k8s.io", "web.core"]);
    let err = c.fails(&["get", "events", "web.core"]);
    assert!(err.contains("NotFound"), "{err}");
    c.ok(&["delete", "events.v1.events.k8s.io", "--all"]);
    assert!(c.items(&["get", "events"]).is_empty());
}

#[test]
fn python_events_v1_api_creates_lists_and_watches_across_both_apis() {
    let kemu = Kemu::builder().build().unwrap();
    let cluster = kemu.registry().create(eks_spec("pyevents")).unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &cluster, cluster.ca.cert_pem(), kemu.clock().now());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/events_v1.py");
    let out = sandbox
        .command("python3")
        .arg(script)
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("ok\n"));
}
