//! The subresources beyond status and scale, driven by the real kubectl (and
//! Python's `jwt` for the issuer discovery): `logs` (containers, `-f` on the
//! fake clock, `--tail`, `--timestamps`, `--previous`), `exec` refused
//! clearly, `create token` and the tokens authenticating (RBAC-checked,
//! audience, expiry on the clock, bound objects, legacy Secret tokens),
//! `drain` against a PodDisruptionBudget, Binding, `debug` (ephemeral
//! containers) and in-place resize.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Sandbox, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{Clock, ClusterRecord, FakeClock, NodePool, advertise};

struct Env {
    clock: std::sync::Arc<FakeClock>,
    _kemu: Kemu,
    cluster: ClusterRecord,
    sandbox: Sandbox,
}

impl Env {
    fn new(name: &str, nodes: u32) -> Self {
        let clock = FakeClock::at_epoch();
        let kemu = Kemu::builder().clock(clock.clone()).build().unwrap();
        let mut spec = common::eks_spec(name);
        spec.node_pools = vec![NodePool {
            name: "ng".into(),
            count: nodes,
            machine_type: "m5.large".into(),
            labels: Default::default(),
            taints: vec![],
        }];
        let cluster = kemu.registry().create(spec).unwrap();
        let sandbox = Sandbox::new();
        write_kubeconfig(
            &sandbox.path("kubeconfig"),
            &cluster,
            cluster.ca.cert_pem(),
            clock.now(),
        );
        std::fs::write(sandbox.path("ca.pem"), cluster.ca.cert_pem()).unwrap();
        Self {
            clock,
            _kemu: kemu,
            cluster,
            sandbox,
        }
    }

    /// kubectl as the cluster admin (client certificate).
    fn k(&self, args: &[&str]) -> Output {
        self.sandbox.kubectl(&self.sandbox.path("kubeconfig"), args)
    }

    /// kubectl with only a bearer token.
    fn as_token(&self, token: &str, args: &[&str]) -> Output {
        let server = advertise(&self.cluster).server_url().unwrap();
        self.sandbox
            .command("kubectl")
            .arg("--kubeconfig")
            .arg(self.sandbox.path("empty-kubeconfig"))
            .arg(format!("--server={server}"))
            .arg(format!(
                "--certificate-authority={}",
                self.sandbox.path("ca.pem").display()
            ))
            .arg(format!("--token={token}"))
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .unwrap()
    }

    fn apply(&self, name: &str, manifest: &str) -> String {
        let path = self.sandbox.path(name);
        std::fs::write(&path, manifest).unwrap();
        ok(self.k(&["apply", "-f", path.to_str().unwrap()]))
    }

    fn advance(&self, secs: u64) {
        self.clock.advance(Duration::from_secs(secs));
    }
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(out: Output) -> String {
    assert!(!out.status.success(), "expected a failure: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const TWO_CONTAINERS: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web",
 "annotations":{"kemu.dev/log":"hello from kemu"}},
 "spec":{"containers":[
   {"name":"a","image":"nginx:1.27","resources":{"requests":{"cpu":"100m"}}},
   {"name":"b","image":"busybox:1.36","resources":{"requests":{"cpu":"100m"}}}]}}"#;

const RUNS_ONE_MINUTE: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"once",
 "annotations":{"kemu.dev/exit-after":"60s"}},
 "spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox:1.36"}]}}"#;

/// Lines a child writes, read on a thread so the test can advance the clock
/// while the child runs.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Reads until a line containing `want` arrives (bounded, so a missing line
/// fails the test instead of hanging it).
fn read_until(rx: &mpsc::Receiver<String>, want: &str, seen: &mut Vec<String>) {
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        let done = line.contains(want);
        seen.push(line);
        if done {
            return;
        }
    }
    panic!("never read {want:?}; read {seen:#?}");
}

#[test]
fn logs_are_synthetic_followed_on_the_clock_and_refused_as_upstream() {
    let env = Env::new("logs", 1);
    env.apply("web.json", TWO_CONTAINERS);
    ok(env.k(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]));

    // kubectl picks the first container; the API itself wants one named.
    let out = env.k(&["logs", "web"]);
    let stdout = ok(out);
    assert!(
        stdout.starts_with("kemu: container a started (image nginx:1.27)\nhello from kemu\n"),
        "{stdout}"
    );
    let err = fails(env.k(&["get", "--raw", "/api/v1/namespaces/default/pods/web/log"]));
    assert!(
        err.contains("a container name must be specified for pod web, choose one of: [a b]"),
        "{err}"
    );
    let stamped = ok(env.k(&["logs", "web", "-c", "b", "--timestamps"]));
    assert!(
        stamped.starts_with("2026-01-01T00:00:00Z kemu: container b started (image busybox:1.36)"),
        "{stamped}"
    );

    // Heartbeats appear as the clock advances; --tail keeps the last ones.
    env.advance(35);
    let tail = ok(env.k(&["logs", "web", "-c", "a", "--tail=2"]));
    assert_eq!(
        tail,
        "kemu: container a running for 20s\nkemu: container a running for 30s\n"
    );
    let since = ok(env.k(&["logs", "web", "-c", "a", "--since=12s"]));
    assert_eq!(since, "kemu: container a running for 30s\n");
    let since = ok(env.k(&[
        "logs",
        "web",
        "-c",
        "a",
        "--since-time=2026-01-01T00:00:20Z",
    ]));
    assert_eq!(
        since,
        "kemu: container a running for 20s\nkemu: container a running for 30s\n"
    );
    let err = fails(env.k(&["logs", "web", "-c", "a", "--previous"]));
    assert!(
        err.contains("previous terminated container \"a\" in pod \"web\" not found"),
        "{err}"
    );
    let err = fails(env.k(&["logs", "web", "-c", "nope"]));
    assert!(
        err.contains("container nope is not valid for pod web"),
        "{err}"
    );
    let limited = ok(env.k(&["logs", "web", "-c", "a", "--limit-bytes=10"]));
    assert_eq!(limited, "kemu: cont");

    // -f: the lines so far, then each new one as the fake clock reaches it.
    let mut follow = env
        .sandbox
        .command("kubectl")
        .arg("--kubeconfig")
        .arg(env.sandbox.path("kubeconfig"))
        .args(["logs", "-f", "web", "-c", "a"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut follow);
    let mut seen = Vec::new();
    read_until(&rx, "running for 30s", &mut seen);
    env.advance(10);
    read_until(&rx, "running for 40s", &mut seen);
    follow.kill().unwrap();
    let _ = follow.wait();

    // A container that exits ends the followed stream, and kubectl with it.
    env.apply("once.json", RUNS_ONE_MINUTE);
    ok(env.k(&["wait", "--for=condition=Ready", "pod/once", "--timeout=60s"]));
    let mut follow = env
        .sandbox
        .command("kubectl")
        .arg("--kubeconfig")
        .arg(env.sandbox.path("kubeconfig"))
        .args(["logs", "-f", "once"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut follow);
    let mut seen = Vec::new();
    read_until(&rx, "kemu: container main started", &mut seen);
    env.advance(60);
    read_until(&rx, "kemu: container main exited with code 0", &mut seen);
    assert!(follow.wait().unwrap().success(), "{seen:#?}");

    // A container still being created has no log yet.
    let pending = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"slow"},
      "spec":{"schedulerName":"elsewhere","nodeName":"","containers":[{"name":"c","image":"x"}]}}"#;
    env.apply("slow.json", pending);
    let node = ok(env.k(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]));
    let binding = format!(
        r#"{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"slow"}},"target":{{"kind":"Node","name":"{node}"}}}}"#
    );
    let path = env.sandbox.path("binding.json");
    std::fs::write(&path, &binding).unwrap();
    let bind = [
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/slow/binding",
        "-f",
        path.to_str().unwrap(),
    ];
    ok(env.k(&bind));
    let bound = ok(env.k(&["get", "pod", "slow", "-o", "jsonpath={.spec.nodeName}"]));
    assert_eq!(bound, node);
    let err = fails(env.k(&bind));
    assert!(
        err.contains(&format!(
            "Operation cannot be fulfilled on pods/binding \"slow\": pod slow is already assigned to node \"{node}\""
        )),
        "{err}"
    );
}

#[test]
fn exec_runs_and_debug_adds_an_ephemeral_container() {
    let env = Env::new("exec", 1);
    env.apply("web.json", TWO_CONTAINERS);
    ok(env.k(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]));
    let root = ok(env.k(&["exec", "web", "-c", "a", "--", "ls", "/"]));
    assert!(root.contains("etc\n") && root.contains("tmp\n"), "{root}");
    let err = fails(env.k(&["exec", "missing", "--", "ls"]));
    assert!(err.contains("pods \"missing\" not found"), "{err}");

    // `kubectl debug` adds an ephemeral container through its subresource.
    ok(env.k(&["debug", "web", "-c", "dbg", "--image=busybox:1.36"]));
    let names = ok(env.k(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.ephemeralContainers[*].name}",
    ]));
    assert_eq!(names, "dbg");
    ok(env.k(&[
        "wait",
        "--for=jsonpath={.status.ephemeralContainerStatuses[0].started}=true",
        "pod/web",
        "--timeout=60s",
    ]));
    let dbg = ok(env.k(&["logs", "web", "-c", "dbg"]));
    assert!(
        dbg.starts_with("kemu: container dbg started (image busybox:1.36)"),
        "{dbg}"
    );

    // In-place resize changes requests through pods/resize; other fields are refused.
    ok(env.k(&[
        "patch",
        "pod",
        "web",
        "--subresource=resize",
        "-p",
        r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"200m"}}}]}}"#,
    ]));
    let cpu = ok(env.k(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.containers[0].resources.requests.cpu}",
    ]));
    assert_eq!(cpu, "200m");
    ok(env.k(&[
        "wait",
        "--for=jsonpath={.status.containerStatuses[0].resources.requests.cpu}=200m",
        "pod/web",
        "--timeout=60s",
    ]));
    let err = fails(env.k(&[
        "patch",
        "pod",
        "web",
        "--subresource=resize",
        "-p",
        r#"{"spec":{"containers":[{"name":"a","image":"nginx:1.28"}]}}"#,
    ]));
    assert!(
        err.contains("only cpu and memory resources are mutable"),
        "{err}"
    );
}

fn token_of(out: Output) -> String {
    ok(out).trim().to_owned()
}

fn verify_with_python(env: &Env, token: &str) -> serde_json::Value {
    let dir = |n: &str| env.sandbox.path(n);
    std::fs::write(dir("token"), token).unwrap();
    let config = ok(env.k(&["get", "--raw", "/.well-known/openid-configuration"]));
    std::fs::write(dir("openid.json"), &config).unwrap();
    let jwks = ok(env.k(&["get", "--raw", "/openid/v1/jwks"]));
    std::fs::write(dir("jwks.json"), &jwks).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/verify_sa_token.py");
    let out = env
        .sandbox
        .command("python3")
        .arg(script)
        .arg(dir("token"))
        .arg(dir("openid.json"))
        .arg(dir("jwks.json"))
        .output()
        .unwrap();
    serde_json::from_str(&ok(out)).unwrap()
}

#[test]
fn service_account_tokens_authenticate_until_they_expire() {
    let env = Env::new("tokens", 1);
    std::fs::write(env.sandbox.path("empty-kubeconfig"), "").unwrap();
    ok(env.k(&["create", "serviceaccount", "ci"]));
    ok(env.k(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods",
    ]));
    ok(env.k(&[
        "create",
        "rolebinding",
        "ci",
        "--role=pod-reader",
        "--serviceaccount=default:ci",
    ]));
    let token = token_of(env.k(&["create", "token", "ci", "--duration=1h"]));

    // The token is who it says, RBAC decides what it may do.
    let who = ok(env.as_token(&token, &["auth", "whoami"]));
    assert!(who.contains("system:serviceaccount:default:ci"), "{who}");
    assert!(who.contains("system:serviceaccounts:default"), "{who}");
    ok(env.as_token(&token, &["get", "pods"]));
    let err = fails(env.as_token(&token, &["get", "secrets"]));
    assert!(
        err.contains("User \"system:serviceaccount:default:ci\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );

    // A relying party verifies it against the published issuer and keys.
    let claims = verify_with_python(&env, &token);
    assert_eq!(claims["sub"], "system:serviceaccount:default:ci");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    // ServiceAccounts may read the discovery documents (upstream's binding).
    ok(env.as_token(&token, &["get", "--raw", "/openid/v1/jwks"]));
    // Anonymous callers may not, as upstream binds the role to ServiceAccounts only.
    let server = advertise(&env.cluster).server_url().unwrap();
    let client = common::https_client(env.cluster.ca.cert_pem());
    let (code, body) = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let r = client
            .get(format!("{server}/openid/v1/jwks"))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    });
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("User \\\"system:anonymous\\\" cannot get path \\\"/openid/v1/jwks\\\""),
        "{body}"
    );

    // Another audience, a malformed token, a too-short duration: refused.
    let vault = token_of(env.k(&["create", "token", "ci", "--audience=vault"]));
    let err = fails(env.as_token(&vault, &["get", "pods"]));
    assert!(err.contains("Unauthorized"), "{err}");
    let err = fails(env.as_token("not.a.jwt", &["get", "pods"]));
    assert!(err.contains("Unauthorized"), "{err}");
    let err = fails(env.k(&["create", "token", "ci", "--duration=5m"]));
    assert!(
        err.contains("may not specify a duration less than 10 minutes"),
        "{err}"
    );

    // A token bound to a Pod dies with it.
    env.apply("web.json", TWO_CONTAINERS);
    let bound = token_of(env.k(&[
        "create",
        "token",
        "ci",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
    ]));
    let err = fails(env.as_token(&token, &["logs", "web", "-c", "a"]));
    assert!(
        err.contains(
            "cannot get resource \"pods/log\" in API group \"\" in the namespace \"default\""
        ),
        "{err}"
    );
    let who = ok(env.as_token(&bound, &["auth", "whoami"]));
    assert!(
        who.contains("authentication.kubernetes.io/pod-name"),
        "{who}"
    );
    ok(env.k(&["delete", "pod", "web", "--wait=false"]));
    ok(env.k(&["wait", "--for=delete", "pod/web", "--timeout=60s"]));
    let err = fails(env.as_token(&bound, &["get", "pods"]));
    assert!(err.contains("Unauthorized"), "{err}");

    // A legacy token Secret is filled by the tokens controller and works.
    let secret = r#"{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token",
      "metadata":{"name":"ci-token","annotations":{"kubernetes.io/service-account.name":"ci"}}}"#;
    env.apply("secret.json", secret);
    ok(env.k(&[
        "wait",
        "--for=jsonpath={.metadata.annotations.kubernetes\\.io/service-account\\.uid}",
        "secret/ci-token",
        "--timeout=60s",
    ]));
    let legacy = ok(env.k(&["get", "secret", "ci-token", "-o", "jsonpath={.data.token}"]));
    use base64::Engine as _;
    let legacy = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(legacy.trim())
            .unwrap(),
    )
    .unwrap();
    let who = ok(env.as_token(&legacy, &["auth", "whoami"]));
    assert!(who.contains("system:serviceaccount:default:ci"), "{who}");

    // Two hours later the first token has expired; deleting the ServiceAccount
    // ends the legacy one.
    env.advance(2 * 3600);
    let err = fails(env.as_token(&token, &["get", "pods"]));
    assert!(err.contains("Unauthorized"), "{err}");
    ok(env.as_token(&legacy, &["get", "pods"]));
    ok(env.k(&["delete", "serviceaccount", "ci"]));
    let err = fails(env.as_token(&legacy, &["get", "pods"]));
    assert!(err.contains("Unauthorized"), "{err}");
    // The tokens controller removes the orphaned token Secret.
    ok(env.k(&["wait", "--for=delete", "secret/ci-token", "--timeout=60s"]));
}

fn wait_budget(env: &Env, expr: &str) {
    ok(env.k(&[
        "wait",
        &format!("--for=jsonpath={expr}"),
        "pdb/web",
        "--timeout=60s",
    ]));
}

#[test]
fn drain_honours_the_pod_disruption_budget() {
    let env = Env::new("drain", 2);
    ok(env.k(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]));
    ok(env.k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    ok(env.k(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=2",
    ]));
    wait_budget(&env, "{.status.currentHealthy}=2");
    let pdb: serde_json::Value =
        serde_json::from_str(&ok(env.k(&["get", "pdb", "web", "-o", "json"]))).unwrap();
    let status = &pdb["status"];
    assert_eq!(status["expectedPods"], 2, "{status}");
    assert_eq!(status["desiredHealthy"], 2, "{status}");
    assert_eq!(status["disruptionsAllowed"], 0, "{status}");
    assert_eq!(status["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(status["conditions"][0]["reason"], "InsufficientPods");

    let pod = ok(env.k(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]));
    let node = ok(env.k(&["get", "pod", &pod, "-o", "jsonpath={.spec.nodeName}"]));

    // The eviction API answers 429 with the budget's cause.
    let eviction = format!(
        r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}","namespace":"default"}}}}"#
    );
    let path = env.sandbox.path("eviction.json");
    std::fs::write(&path, eviction).unwrap();
    let evict = [
        "create",
        "--raw",
        &format!("/api/v1/namespaces/default/pods/{pod}/eviction"),
        "-f",
        path.to_str().unwrap(),
    ];
    let err = fails(env.k(&evict));
    assert!(
        err.contains("Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );

    // The Python client reads the same 429, with the budget's cause.
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/py/evict_and_read_logs.py"
    );
    let out = ok(env
        .sandbox
        .command("python3")
        .arg(script)
        .arg(&pod)
        .output()
        .unwrap());
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    let refused = &out["eviction"];
    assert_eq!(refused["status"], 429, "{out}");
    assert_eq!(refused["body"]["reason"], "TooManyRequests", "{out}");
    assert_eq!(
        refused["body"]["details"]["causes"][0],
        serde_json::json!({"reason": "DisruptionBudget",
            "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}),
        "{out}"
    );
    assert_eq!(
        out["log"],
        "kemu: container nginx started (image nginx:1.27)\n"
    );

    // So does drain, which retries until its timeout.
    let err = fails(env.k(&["drain", &node, "--ignore-daemonsets", "--timeout=2s"]));
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );

    // Once the budget allows one disruption, drain evicts and the Deployment
    // replaces the Pod on the other Node.
    ok(env.k(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":1}}"#,
    ]));
    wait_budget(&env, "{.status.disruptionsAllowed}=1");
    let out = ok(env.k(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"]));
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    assert!(env.k(&["get", "pod", &pod]).status.code() != Some(0));
    ok(env.k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    let nodes = ok(env.k(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[*].spec.nodeName}",
    ]));
    assert!(!nodes.contains(&node), "{nodes} still on drained {node}");
}
