//! The admission chain of a kemu cluster, read by the real kubectl: a
//! ResourceQuota of 2 pods and 1 CPU refuses the third pod and an
//! over-quota request with upstream's messages while `kubectl describe
//! quota` shows the usage the quota controller keeps; a LimitRange fills in
//! container defaults; a mutating and a validating webhook, served by this
//! test over HTTPS with its own CA (by `url` and by `service`), mutate and
//! refuse as they answer, and are skipped when a `matchConditions` CEL
//! expression does not hold; `failurePolicy` Ignore and Fail when a webhook is
//! down. PodSecurity: a namespace's `pod-security.kubernetes.io` labels
//! refuse and warn as upstream's plugin words it, bad labels are refused,
//! and a Deployment's Pods that break `enforce` are never created.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::sync::mpsc;
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use base64::Engine as _;
use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::ClusterRecord;
use kemu::shared::pki::ClusterCa;
use serde_json::{Value, json};

struct Cluster {
    kemu: Kemu,
    _record: ClusterRecord,
    sandbox: Sandbox,
    admin: PathBuf,
}

impl Cluster {
    fn new(name: &str) -> Self {
        let kemu = Kemu::builder().build().unwrap();
        let record = kemu.registry().create(eks_spec(name)).unwrap();
        let sandbox = Sandbox::new();
        let admin = sandbox.path("admin.kubeconfig");
        write_kubeconfig(&admin, &record, record.ca.cert_pem(), kemu.clock().now());
        Self {
            kemu,
            _record: record,
            sandbox,
            admin,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        self.sandbox.kubectl(&self.admin, args)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn refused(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stderr).trim().to_owned()
    }

    /// `kubectl apply -f` of a manifest written to the sandbox.
    fn apply(&self, name: &str, manifest: &str) -> String {
        let path = self.sandbox.path(name);
        std::fs::write(&path, manifest).unwrap();
        self.ok(&["apply", "-f", path.to_str().unwrap()])
    }

    /// Polls (bounded) until `kubectl get … -o jsonpath=…` prints `want`.
    fn wait_for(&self, args: &[&str], want: &str) {
        let mut last = String::new();
        for _ in 0..200 {
            last = self.ok(args);
            if last == want {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{args:?} printed {last:?}, never {want:?}");
    }
}

#[test]
fn quota_and_limit_range_answer_as_upstream() {
    let c = Cluster::new("quota");
    c.ok(&["create", "namespace", "team"]);
    c.apply(
        "policy.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: team}\n\
         spec:\n  hard: {pods: \"2\", requests.cpu: \"1\"}\n---\n\
         apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: team}\n\
         spec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 300m}\n    default: {cpu: 500m}\n",
    );
    // The quota controller publishes status.used before admission can charge.
    c.wait_for(
        &[
            "get",
            "quota",
            "compute",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.used.pods}",
        ],
        "0",
    );

    c.ok(&["run", "one", "--image=nginx", "-n", "team"]);
    // LimitRange defaults, and the annotation upstream records them in.
    let pod: Value =
        serde_json::from_str(&c.ok(&["get", "pod", "one", "-n", "team", "-o", "json"])).unwrap();
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "300m"}, "limits": {"cpu": "500m"}}),
        "{pod}"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu request for container one; cpu limit for container one"
    );
    // ServiceAccount admission named the default account.
    assert_eq!(pod["spec"]["serviceAccountName"], "default");

    // 300m used; 800m more would pass 1 CPU.
    let big = c.sandbox.path("big.yaml");
    std::fs::write(
        &big,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: team}\nspec:\n  containers:\n  \
         - name: app\n    image: nginx\n    resources: {requests: {cpu: 800m}, limits: {cpu: 800m}}\n",
    )
    .unwrap();
    assert_eq!(
        c.refused(&["create", "-f", big.to_str().unwrap()]),
        "Error from server (Forbidden): error when creating \"".to_owned()
            + big.to_str().unwrap()
            + "\": pods \"big\" is forbidden: exceeded quota: compute, requested: requests.cpu=800m, used: requests.cpu=300m, limited: requests.cpu=1"
    );
    // A server-side dry run is admitted the same way and charges nothing.
    c.ok(&[
        "run",
        "dry",
        "--image=nginx",
        "-n",
        "team",
        "--dry-run=server",
    ]);

    c.ok(&["run", "two", "--image=nginx", "-n", "team"]);
    assert_eq!(
        c.refused(&["run", "three", "--image=nginx", "-n", "team"]),
        "Error from server (Forbidden): pods \"three\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
    );

    // kubectl describe quota: Resource / Used / Hard.
    let described = c.ok(&["describe", "quota", "compute", "-n", "team"]);
    let row = |name: &str| -> Vec<String> {
        described
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in {described}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(row("pods"), ["pods", "2", "2"], "{described}");
    assert_eq!(
        row("requests.cpu"),
        ["requests.cpu", "600m", "1"],
        "{described}"
    );

    // Deleting a pod frees its share: the controller recalculates.
    c.ok(&["delete", "pod", "two", "-n", "team", "--wait=false"]);
    c.wait_for(
        &[
            "get",
            "quota",
            "compute",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.used.pods}/{.status.used.requests\\.cpu}",
        ],
        "1/300m",
    );
    c.ok(&["run", "three", "--image=nginx", "-n", "team"]);
}

/// The test's webhook: `/mutate` labels every object `mutated=yes`;
/// `/validate` refuses objects labelled `deny`, with its own message.
async fn review(path: web::Path<String>, body: web::Json<Value>) -> HttpResponse {
    let request = &body["request"];
    let uid = request["uid"].clone();
    let response = match path.as_str() {
        "mutate" => {
            let has_labels = request["object"]["metadata"]["labels"].is_object();
            let patch = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            let patch =
                base64::engine::general_purpose::STANDARD.encode(patch.to_string().as_bytes());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch,
                   "warnings": ["labelled by the test webhook"]})
        }
        _ if request["object"]["metadata"]["labels"]["deny"].is_string() => json!({
            "uid": uid, "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": "objects labelled deny are not welcome here"}
        }),
        _ => json!({"uid": uid, "allowed": true}),
    };
    HttpResponse::Ok().json(json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response
    }))
}

/// Serves the webhook over HTTPS with a certificate from `ca`; answers its port.
fn serve_webhook(ca: &ClusterCa, now: chrono::DateTime<chrono::Utc>) -> u16 {
    kemu::shared::pki::install_crypto_provider();
    let serving = ca.serving_cert(&["127.0.0.1".to_owned()], now).unwrap();
    let tls = ca.rustls_server_config(&serving, false).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(|| App::new().route("/{path}", web::post().to(review)))
                .workers(1)
                .bind_rustls_0_23(("127.0.0.1", 0), tls)
                .expect("bind");
            tx.send(server.addrs()[0].port()).expect("send port");
            server.run().await.expect("run");
        });
    });
    rx.recv().expect("port")
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn webhooks_mutate_refuse_and_fail_as_configured() {
    let c = Cluster::new("hooks");
    let now = c.kemu.clock().now();
    let ca = ClusterCa::generate("webhook-test-ca", now).unwrap();
    let port = serve_webhook(&ca, now);
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca.cert_pem());
    c.ok(&["create", "namespace", "hooked"]);
    c.ok(&["label", "namespace", "hooked", "webhooks=on"]);
    c.ok(&["create", "namespace", "plain"]);
    c.apply(
        "hooks.yaml",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: validator\n  namespace: plain\n  \
             annotations: {{kemu.dev/endpoint-url: \"https://127.0.0.1:{port}\"}}\n\
             spec: {{ports: [{{port: 443}}]}}\n---\n\
             apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n\
             metadata: {{name: labeler}}\nwebhooks:\n- name: label.kemu.test\n  \
             admissionReviewVersions: [v1]\n  sideEffects: None\n  timeoutSeconds: 5\n  \
             clientConfig: {{url: \"https://127.0.0.1:{port}/mutate\", caBundle: {bundle}}}\n  \
             namespaceSelector: {{matchLabels: {{webhooks: \"on\"}}}}\n  \
             matchConditions: [{{name: not-skipped, expression: \"!has(object.metadata.labels) || !('skip' in object.metadata.labels)\"}}]\n  \
             rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps]}}]\n---\n\
             apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n\
             metadata: {{name: gatekeeper}}\nwebhooks:\n- name: deny.kemu.test\n  \
             admissionReviewVersions: [v1]\n  sideEffects: None\n  \
             clientConfig: {{service: {{namespace: plain, name: validator, path: /validate}}, caBundle: {bundle}}}\n  \
             objectSelector: {{matchExpressions: [{{key: deny, operator: Exists}}]}}\n  \
             rules: [{{operations: [CREATE, UPDATE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps]}}]\n"
        ),
    );

    // Mutation applied in the selected namespace only; its warning reaches kubectl.
    let out = c.kubectl(&["create", "configmap", "cfg", "-n", "hooked"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Warning: labelled by the test webhook"
    );
    assert_eq!(
        c.ok(&[
            "get",
            "configmap",
            "cfg",
            "-n",
            "hooked",
            "-o",
            "jsonpath={.metadata.labels.mutated}"
        ]),
        "yes"
    );
    // A matchCondition (CEL) that does not hold skips the webhook.
    c.apply(
        "skipped.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped, namespace: hooked, labels: {skip: \"yes\"}}\n",
    );
    assert_eq!(
        c.ok(&[
            "get",
            "configmap",
            "skipped",
            "-n",
            "hooked",
            "-o",
            "jsonpath={.metadata.labels}"
        ]),
        "{\"skip\":\"yes\"}"
    );
    c.ok(&["create", "configmap", "cfg", "-n", "plain"]);
    assert_eq!(
        c.ok(&[
            "get",
            "configmap",
            "cfg",
            "-n",
            "plain",
            "-o",
            "jsonpath={.metadata.labels}"
        ]),
        ""
    );

    // The refusal reaches kubectl as the webhook wrote it, and nothing is stored.
    let deny = c.sandbox.path("deny.yaml");
    std::fs::write(
        &deny,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope, namespace: plain, labels: {deny: \"yes\"}}\n",
    )
    .unwrap();
    assert_eq!(
        c.refused(&["create", "-f", deny.to_str().unwrap()]),
        "Error from server (Forbidden): error when creating \"".to_owned()
            + deny.to_str().unwrap()
            + "\": admission webhook \"deny.kemu.test\" denied the request: objects labelled deny are not welcome here"
    );
    assert!(
        c.refused(&["get", "configmap", "nope", "-n", "plain"])
            .contains("NotFound")
    );
    // Labelling an existing object `deny` is an UPDATE the webhook refuses.
    let labelled = c.refused(&["label", "configmap", "cfg", "-n", "plain", "deny=yes"]);
    assert!(
        labelled.ends_with(
            "admission webhook \"deny.kemu.test\" denied the request: objects labelled deny are not welcome here"
        ),
        "{labelled}"
    );

    // A webhook that is down: Ignore lets the write through, Fail refuses it.
    let dead = dead_port();
    let down = |policy: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n\
             metadata: {{name: down}}\nwebhooks:\n- name: down.kemu.test\n  \
             admissionReviewVersions: [v1]\n  sideEffects: None\n  timeoutSeconds: 2\n  failurePolicy: {policy}\n  \
             clientConfig: {{url: \"https://127.0.0.1:{dead}/validate\", caBundle: {bundle}}}\n  \
             rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [secrets]}}]\n"
        )
    };
    c.apply("down.yaml", &down("Ignore"));
    c.ok(&[
        "create",
        "secret",
        "generic",
        "passes",
        "-n",
        "plain",
        "--from-literal=a=b",
    ]);
    c.apply("down.yaml", &down("Fail"));
    let failed = c.refused(&[
        "create",
        "secret",
        "generic",
        "blocked",
        "-n",
        "plain",
        "--from-literal=a=b",
    ]);
    assert!(
        failed
            == format!(
                "error: failed to create secret Internal error occurred: failed calling webhook \"down.kemu.test\": failed to call webhook: Post \"https://127.0.0.1:{dead}/validate?timeout=2s\": dial tcp 127.0.0.1:{dead}: connect: connection refused"
            ),
        "{failed}"
    );
    assert!(
        c.refused(&["get", "secret", "blocked", "-n", "plain"])
            .contains("NotFound")
    );
}

/// Pods a ReplicaSet makes pass admission as its controller's
/// ServiceAccount, as in a real cluster: the LimitRange's defaults show on
/// them, the quota stops the third, and the ReplicaSet reports the refusal
/// as upstream's controller does (a `ReplicaFailure` condition and a
/// `FailedCreate` Event carrying the quota's message).
#[test]
fn controller_made_pods_are_admitted() {
    let c = Cluster::new("ctrl-admit");
    c.ok(&["create", "namespace", "team"]);
    c.apply(
        "policy.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: pods, namespace: team}\n\
         spec:\n  hard: {pods: \"2\"}\n---\n\
         apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: team}\n\
         spec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 100m}\n    default: {cpu: 200m}\n",
    );
    c.wait_for(
        &[
            "get",
            "quota",
            "pods",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.used.pods}",
        ],
        "0",
    );
    c.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
        "-n",
        "team",
    ]);
    c.wait_for(
        &[
            "get",
            "rs",
            "-n",
            "team",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[0].status.conditions[0].type}/{.items[0].status.conditions[0].reason}/{.items[0].status.replicas}",
        ],
        "ReplicaFailure/FailedCreate/2",
    );
    let pods: Value =
        serde_json::from_str(&c.ok(&["get", "pods", "-n", "team", "-o", "json"])).unwrap();
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 2, "{pods:?}");
    for pod in pods {
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}),
            "{pod}"
        );
    }
    let rs: Value =
        serde_json::from_str(&c.ok(&["get", "rs", "-n", "team", "-l", "app=web", "-o", "json"]))
            .unwrap();
    let rs = &rs["items"][0];
    let rs_name = rs["metadata"]["name"].as_str().unwrap();
    let condition = rs["status"]["conditions"][0]["message"].as_str().unwrap();
    let quota_words =
        "\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2";
    assert!(
        condition.starts_with(&format!("pods \"{rs_name}-")) && condition.ends_with(quota_words),
        "{condition}"
    );
    let events: Value = serde_json::from_str(&c.ok(&[
        "get",
        "events",
        "-n",
        "team",
        "--field-selector",
        "reason=FailedCreate",
        "-o",
        "json",
    ]))
    .unwrap();
    let event = &events["items"][0];
    assert_eq!(event["involvedObject"]["name"], rs_name, "{events}");
    assert_eq!(event["type"], "Warning");
    let message = event["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("Error creating: pods \"{rs_name}-"))
            && message.ends_with(quota_words),
        "{message}"
    );
    // `kubectl describe rs` shows the condition as upstream's does.
    let described = c.ok(&["describe", "rs", rs_name, "-n", "team"]);
    assert!(
        described.contains("ReplicaFailure   True    FailedCreate"),
        "{described}"
    );
}

/// ValidatingAdmissionPolicy, as upstream's documentation walks through it:
/// `object.spec.replicas <= 5` bound with `Deny` refuses a Deployment of 6
/// in the namespaces its binding selects, with upstream's message; a `Warn`
/// binding lets it in with a warning; a policy with params reads its limit
/// from a ConfigMap; and a policy sees the Pods a ReplicaSet makes as
/// written by the replicaset-controller ServiceAccount.
#[test]
fn validating_admission_policies_deny_and_warn() {
    let c = Cluster::new("vap");
    for (ns, env) in [("test", "test"), ("staging", "staging"), ("ctl", "ctl")] {
        c.ok(&["create", "namespace", ns]);
        c.ok(&["label", "namespace", ns, &format!("environment={env}")]);
    }
    c.apply(
        "policy.yaml",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
         metadata: {name: demo-policy.example.com}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n    \
         - apiGroups: [apps]\n      apiVersions: [v1]\n      operations: [CREATE, UPDATE]\n      resources: [deployments]\n  \
         validations:\n  - expression: object.spec.replicas <= 5\n---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata: {name: demo-binding-test.example.com}\nspec:\n  policyName: demo-policy.example.com\n  validationActions: [Deny]\n  \
         matchResources:\n    namespaceSelector:\n      matchLabels: {environment: test}\n---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata: {name: demo-binding-staging.example.com}\nspec:\n  policyName: demo-policy.example.com\n  validationActions: [Warn]\n  \
         matchResources:\n    namespaceSelector:\n      matchLabels: {environment: staging}\n",
    );
    // Served, and listed by kubectl.
    let listed = c.ok(&["get", "validatingadmissionpolicies", "-o", "name"]);
    assert_eq!(
        listed.trim(),
        "validatingadmissionpolicy.admissionregistration.k8s.io/demo-policy.example.com"
    );

    let denied = "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5";
    assert_eq!(
        c.refused(&[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=6",
            "-n",
            "test"
        ]),
        format!(
            "error: failed to create deployment: deployments.apps \"nginx\" is forbidden: {denied}"
        )
    );
    // kubectl apply reads the 422's cause, as against a real cluster.
    let manifest = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: nginx}}\nspec:\n  replicas: {replicas}\n  \
             selector: {{matchLabels: {{app: nginx}}}}\n  template:\n    metadata: {{labels: {{app: nginx}}}}\n    \
             spec: {{containers: [{{name: nginx, image: nginx}}]}}\n"
        )
    };
    let six = c.sandbox.path("six.yaml");
    std::fs::write(&six, manifest(6)).unwrap();
    assert_eq!(
        c.refused(&["apply", "-f", six.to_str().unwrap(), "-n", "test"]),
        format!("The deployments \"nginx\" is invalid: : {denied}")
    );
    c.ok(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=5",
        "-n",
        "test",
    ]);
    // Updates are validated too.
    assert!(
        c.refused(&[
            "patch",
            "deployment",
            "nginx",
            "-n",
            "test",
            "-p",
            "{\"spec\":{\"replicas\":9}}"
        ])
        .contains(denied)
    );

    // Warn: admitted, with upstream's warning.
    let out = c.kubectl(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=6",
        "-n",
        "staging",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-staging.example.com': failed expression: object.spec.replicas <= 5"
    );

    // Params from a ConfigMap, a variable, a messageExpression and a
    // policy on the Pods the replicaset-controller writes.
    c.ok(&[
        "create",
        "configmap",
        "pod-limits",
        "-n",
        "ctl",
        "--from-literal=maxContainers=1",
    ]);
    c.apply(
        "pods-policy.yaml",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
         metadata: {name: controller-pods}\nspec:\n  paramKind: {apiVersion: v1, kind: ConfigMap}\n  matchConstraints:\n    resourceRules:\n    \
         - apiGroups: [\"\"]\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n  \
         matchConditions:\n  - name: from-replicasets\n    expression: request.userInfo.username == 'system:serviceaccount:kube-system:replicaset-controller'\n  \
         variables:\n  - name: count\n    expression: size(object.spec.containers)\n  \
         validations:\n  - expression: variables.count <= int(params.data.maxContainers)\n    \
         messageExpression: \"'at most ' + params.data.maxContainers + ' container(s), got ' + string(variables.count)\"\n---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata: {name: controller-pods-ctl}\nspec:\n  policyName: controller-pods\n  validationActions: [Deny]\n  \
         paramRef: {name: pod-limits, parameterNotFoundAction: Deny}\n  \
         matchResources:\n    namespaceSelector:\n      matchLabels: {environment: ctl}\n",
    );
    // A Pod kubectl creates is not the controller's: admitted.
    c.ok(&["run", "two", "--image=nginx", "-n", "ctl"]);
    let two = c.sandbox.path("two.yaml");
    std::fs::write(
        &two,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: two, namespace: ctl}\nspec:\n  replicas: 1\n  \
         selector: {matchLabels: {app: two}}\n  template:\n    metadata: {labels: {app: two}}\n    \
         spec: {containers: [{name: a, image: nginx}, {name: b, image: nginx}]}\n",
    )
    .unwrap();
    c.ok(&["apply", "-f", two.to_str().unwrap()]);
    c.wait_for(
        &[
            "get",
            "rs",
            "-n",
            "ctl",
            "-l",
            "app=two",
            "-o",
            "jsonpath={.items[0].status.conditions[0].reason}",
        ],
        "FailedCreate",
    );
    let message = c.ok(&[
        "get",
        "rs",
        "-n",
        "ctl",
        "-l",
        "app=two",
        "-o",
        "jsonpath={.items[0].status.conditions[0].message}",
    ]);
    assert!(
        message.ends_with(
            "is forbidden: ValidatingAdmissionPolicy 'controller-pods' with binding 'controller-pods-ctl' denied request: at most 1 container(s), got 2"
        ),
        "{message}"
    );
}

#[test]
fn pod_security_refuses_warns_and_holds_controllers_to_it() {
    let c = Cluster::new("pod-security");
    c.ok(&["create", "namespace", "locked"]);
    c.ok(&[
        "label",
        "namespace",
        "locked",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    let bad_label = c.refused(&[
        "label",
        "namespace",
        "locked",
        "pod-security.kubernetes.io/warn=strictest",
    ]);
    assert!(
        bad_label.contains("metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"strictest\": must be one of privileged, baseline, restricted"),
        "{bad_label}"
    );

    let refused = c.refused(&[
        "run",
        "priv",
        "-n",
        "locked",
        "--image=busybox",
        "--privileged",
    ]);
    assert!(
        refused.contains("pods \"priv\" is forbidden: violates PodSecurity \"restricted:latest\": privileged (container \"priv\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false"),
        "{refused}"
    );

    // A workload is admitted with a warning; its Pods are not.
    let out = c.kubectl(&[
        "create",
        "deployment",
        "web",
        "-n",
        "locked",
        "--image=nginx",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(
        warned.contains("Warning: would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"nginx\" must set securityContext.allowPrivilegeEscalation=false)"),
        "{warned}"
    );
    let failed = &[
        "get",
        "events",
        "-n",
        "locked",
        "--field-selector=reason=FailedCreate",
        "-o",
        "jsonpath={.items[*].message}",
    ];
    let mut events = String::new();
    for _ in 0..200 {
        events = c.ok(failed);
        if !events.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        events.contains("Error creating: pods \"web-")
            && events.contains("is forbidden: violates PodSecurity \"restricted:latest\""),
        "{events}"
    );
    assert_eq!(c.ok(&["get", "pods", "-n", "locked", "-o", "name"]), "");

    // Raising a namespace's level names the Pods it would now refuse.
    c.ok(&["create", "namespace", "open"]);
    c.ok(&["run", "p", "-n", "open", "--image=busybox", "--privileged"]);
    let out = c.kubectl(&[
        "label",
        "namespace",
        "open",
        "pod-security.kubernetes.io/enforce=baseline",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(
        warned.contains("Warning: existing pods in namespace \"open\" violate the new PodSecurity enforce level \"baseline:latest\"")
            && warned.contains("Warning: p: privileged"),
        "{warned}"
    );
}
