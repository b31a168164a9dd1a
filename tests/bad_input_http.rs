//! Generated bad input at all four APIs over HTTP: valid requests of each
//! (Kubernetes creates and patches, EKS clusters and node groups, GKE
//! clusters and node pools, AKS managed clusters and agent pools), each
//! mutated many ways from a fixed seed (a value replaced by a hostile one, a
//! key dropped or added, the body truncated or a byte flipped, a wrong
//! content type, hostile query parameters). Every answer must be a non-5xx
//! in the API's own error format, come within a bound, and a refused request
//! must store nothing; at the end every API still answers.
//!
//! `KEMU_BAD_INPUT_SEED` picks another seed; `KEMU_BAD_INPUT_ROUNDS` the
//! mutations per request (40 by default).

mod common;
mod eks_support;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Sandbox, eks_signed, eks_spec};
use kemu::Kemu;
use serde_json::{Value, json};

/// A stall detector, far above any answer seen: a hang fails here instead of
/// timing the whole test out.
const BOUND: Duration = Duration::from_secs(10);

/// xorshift64*: the cases are the same for a seed on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values no field expects all of.
fn hostile(rng: &mut Rng) -> Value {
    let deep_array = (0..200).fold(json!(1), |v, _| json!([v]));
    let deep_object = (0..200).fold(json!(1), |v, _| json!({ "a": v }));
    let values = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(2_147_483_648u64),
        serde_json::from_str("9223372036854775808").unwrap(),
        serde_json::from_str("-9223372036854775809").unwrap(),
        serde_json::from_str("1e308").unwrap(),
        json!(1.5),
        json!(""),
        json!("x"),
        json!("-1"),
        json!("99999999999999999999h"),
        json!("\u{1F4A5}\u{0000}\u{FFFF}"),
        json!("a".repeat(70_000)),
        json!([]),
        json!({}),
        json!([1, "two", null]),
        json!({"k": "v"}),
        deep_array,
        deep_object,
    ];
    values[rng.below(values.len())].clone()
}

/// JSON pointers of every node but the root.
fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                paths(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                paths(child, p, out);
            }
        }
        _ => {}
    }
}

/// One mutation of `body`: the bytes to send and their content type.
fn mutate(rng: &mut Rng, body: &Value, content_type: &str) -> (Vec<u8>, String) {
    let mut v = body.clone();
    let mut all = Vec::new();
    paths(&v, String::new(), &mut all);
    let pick = |rng: &mut Rng| all[rng.below(all.len())].clone();
    let ct = content_type.to_owned();
    match rng.below(10) {
        0..=2 => {
            let path = pick(rng);
            *v.pointer_mut(&path).unwrap() = hostile(rng);
        }
        3 => {
            let path = pick(rng);
            let (parent, key) = path.rsplit_once('/').unwrap();
            match v.pointer_mut(parent) {
                Some(Value::Object(m)) => {
                    m.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(a)) => {
                    a.clear();
                }
                _ => {}
            }
        }
        4 => {
            let path = pick(rng);
            let value = hostile(rng);
            match v.pointer_mut(&path) {
                Some(Value::Object(m)) => {
                    m.insert("kemuUnknownField".into(), value);
                }
                Some(Value::Array(a)) => a.push(value),
                _ => {
                    if let Some(m) = v.as_object_mut() {
                        m.insert("kemuUnknownField".into(), value);
                    }
                }
            }
        }
        5 => {
            let bytes = serde_json::to_vec(&v).unwrap();
            let cut = rng.below(bytes.len());
            return (bytes[..cut].to_vec(), ct);
        }
        6 => {
            let mut bytes = serde_json::to_vec(&v).unwrap();
            let at = rng.below(bytes.len());
            bytes[at] = (rng.next() & 0xff) as u8;
            return (bytes, ct);
        }
        7 => {
            let types = [
                "text/plain",
                "application/xml",
                "a/b;c",
                "application/json; charset=utf-16",
                "",
            ];
            let bytes = serde_json::to_vec(&v).unwrap();
            return (bytes, types[rng.below(types.len())].to_owned());
        }
        8 => {
            // The whole body one hostile value.
            v = hostile(rng);
        }
        _ => {
            // Two mutations at once.
            let path = pick(rng);
            *v.pointer_mut(&path).unwrap() = hostile(rng);
            let mut again = Vec::new();
            paths(&v, String::new(), &mut again);
            if let Some(path) = again.get(rng.below(again.len())) {
                let value = hostile(rng);
                *v.pointer_mut(path).unwrap() = value;
            }
        }
    }
    (serde_json::to_vec(&v).unwrap(), ct)
}

/// Query parameters a client might get wrong.
fn hostile_query(rng: &mut Rng) -> &'static str {
    let queries = [
        "limit=-1",
        "limit=99999999999999999999",
        "limit=abc",
        "continue=garbage",
        "resourceVersion=abc",
        "resourceVersion=99999999999999999999",
        "resourceVersionMatch=Exact",
        "resourceVersionMatch=NotOlderThan&resourceVersion=0",
        "labelSelector=a%20in%20(",
        "labelSelector=%21%21%21",
        "fieldSelector=metadata.name%3D%3D%3D",
        "fieldSelector=spec.unknown%3Dx",
        "timeout=1",
        "timeout=-5s",
        "timeout=99999999999999999999h",
        "timeoutSeconds=-1",
        "fieldManager=%00",
        "fieldValidation=Bogus",
        "dryRun=Maybe",
        "pretty=yes",
        "gracePeriodSeconds=9223372036854775808",
        "propagationPolicy=Sideways",
        "api-version=1999-01-01",
        "pageSize=-3",
        "pageToken=%FF",
    ];
    queries[rng.below(queries.len())]
}

/// What an API's error looks like on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Kubernetes,
    Eks,
    Gke,
    Arm,
}

/// Whether a refused answer is in the API's own format.
fn wire_format(api: Api, status: u16, headers: &reqwest::header::HeaderMap, body: &Value) -> bool {
    match api {
        Api::Kubernetes => body["kind"] == "Status" && body["code"] == status,
        Api::Eks => headers.contains_key("x-amzn-errortype"),
        Api::Gke => body["error"]["code"] == status && body["error"]["status"].is_string(),
        Api::Arm => body["error"]["code"].is_string() && body["error"]["message"].is_string(),
    }
}

/// A valid request, the base of its mutations.
struct Base {
    api: Api,
    method: &'static str,
    url: String,
    content_type: &'static str,
    body: Value,
    /// Where the names of what it creates are listed, and the JSON pointer of
    /// that list's array and of a name in an item; or the URL of the object
    /// it changes (its resourceVersion must not move when refused).
    watch: Watch,
}

enum Watch {
    Collection {
        url: String,
        items: &'static str,
        name: &'static str,
    },
    /// The object, and the JSON pointer of what a refused request must not
    /// move (its resourceVersion, or its generation where controllers write
    /// its status).
    Object(String, &'static str),
    Nothing,
}

/// The clients of each API.
struct Clients {
    kube: reqwest::Client,
    plain: reqwest::Client,
    arm: reqwest::Client,
}

impl Clients {
    fn request(&self, api: Api, method: &str, url: &str) -> reqwest::RequestBuilder {
        let method = method.parse().unwrap();
        match api {
            Api::Kubernetes => self.kube.request(method, url),
            Api::Eks => eks_signed(self.plain.request(method, url)),
            Api::Gke => self
                .plain
                .request(method, url)
                .header("authorization", "Bearer kemu-test"),
            Api::Arm => self.arm.request(method, url),
        }
    }

    async fn get(&self, api: Api, url: &str) -> Value {
        let resp = self.request(api, "GET", url).send().await.unwrap();
        assert!(resp.status().is_success(), "GET {url}: {}", resp.status());
        resp.json().await.unwrap()
    }

    /// What `watch` shows now.
    async fn state(&self, api: Api, watch: &Watch) -> Option<Value> {
        match watch {
            Watch::Collection { url, items, name } => {
                let list = self.get(api, url).await;
                let names: BTreeSet<String> = list
                    .pointer(items)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|i| match i.pointer(name) {
                        Some(Value::String(s)) => s.clone(),
                        _ => i.as_str().unwrap_or_default().to_owned(),
                    })
                    .collect();
                Some(json!(names))
            }
            Watch::Object(url, pointer) => self.get(api, url).await.pointer(pointer).cloned(),
            Watch::Nothing => None,
        }
    }
}

fn bases(kube: &str, eks: &str, gke: &str, arm: &str) -> Vec<Base> {
    let ns = format!("{kube}/api/v1/namespaces/default");
    let apps = format!("{kube}/apis/apps/v1/namespaces/default");
    let batch = format!("{kube}/apis/batch/v1/namespaces/default");
    let gke_at = format!("{gke}/v1/projects/p/locations/us-central1-a");
    let sub = kemu_aks::state::DEFAULT_SUBSCRIPTION;
    let rg = format!(
        "{arm}/subscriptions/{sub}/resourceGroups/bad/providers/Microsoft.ContainerService"
    );
    let v = "api-version=2026-06-01";
    // A Kubernetes create, watched by the names in its collection.
    let create = |collection: String, body: Value| Base {
        api: Api::Kubernetes,
        method: "POST",
        url: collection.clone(),
        content_type: "application/json",
        body,
        watch: Watch::Collection {
            url: collection,
            items: "/items",
            name: "/metadata/name",
        },
    };
    let template = json!({
        "metadata": {"labels": {"app": "bi"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 1}}],
            "terminationGracePeriodSeconds": 30}
    });
    vec![
        create(
            format!("{ns}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bi", "labels": {"a": "b"}, "annotations": {"kemu.dev/x": "y"}},
                "data": {"k": "v"}}),
        ),
        create(
            format!("{apps}/deployments"),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bi"},
                "spec": {"replicas": 1, "minReadySeconds": 0, "progressDeadlineSeconds": 600,
                    "selector": {"matchLabels": {"app": "bi"}}, "template": template.clone()}}),
        ),
        create(
            format!("{ns}/services"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bi"},
                "spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}],
                    "selector": {"app": "bi"}, "type": "ClusterIP"}}),
        ),
        create(
            format!("{batch}/jobs"),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bi"},
                "spec": {"activeDeadlineSeconds": 600, "backoffLimit": 2, "completions": 1,
                    "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
        Base {
            api: Api::Kubernetes,
            method: "PATCH",
            url: format!("{ns}/configmaps/base"),
            content_type: "application/merge-patch+json",
            body: json!({"metadata": {"labels": {"x": "y"}}, "data": {"z": "1"}}),
            watch: Watch::Object(format!("{ns}/configmaps/base"), "/metadata/resourceVersion"),
        },
        Base {
            api: Api::Kubernetes,
            method: "PATCH",
            url: format!("{ns}/configmaps/base?fieldManager=bad-input"),
            content_type: "application/apply-patch+yaml",
            body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base"},
                "data": {"applied": "yes"}}),
            watch: Watch::Object(format!("{ns}/configmaps/base"), "/metadata/resourceVersion"),
        },
        Base {
            api: Api::Kubernetes,
            method: "PATCH",
            url: format!("{ns}/configmaps/base"),
            content_type: "application/json-patch+json",
            body: json!([{"op": "add", "path": "/data/j", "value": "1"},
                {"op": "test", "path": "/metadata/name", "value": "base"}]),
            watch: Watch::Object(format!("{ns}/configmaps/base"), "/metadata/resourceVersion"),
        },
        Base {
            api: Api::Kubernetes,
            method: "PATCH",
            url: format!("{apps}/deployments/base"),
            content_type: "application/strategic-merge-patch+json",
            body: json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
            watch: Watch::Object(format!("{apps}/deployments/base"), "/metadata/generation"),
        },
        Base {
            api: Api::Eks,
            method: "POST",
            url: format!("{eks}/clusters"),
            content_type: "application/json",
            body: json!({"name": "bi", "roleArn": "arn:aws:iam::123456789012:role/eks", "version": "1.34",
                "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "endpointPublicAccess": true},
                "tags": {"team": "a"}, "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.100.0.0/16"}}),
            watch: Watch::Collection {
                url: format!("{eks}/clusters"),
                items: "/clusters",
                name: "",
            },
        },
        Base {
            api: Api::Eks,
            method: "POST",
            url: format!("{eks}/clusters/base/node-groups"),
            content_type: "application/json",
            body: json!({"nodegroupName": "bi", "nodeRole": "arn:aws:iam::123456789012:role/node",
                "subnets": ["subnet-a"], "instanceTypes": ["m5.large"], "diskSize": 20,
                "scalingConfig": {"minSize": 1, "maxSize": 2, "desiredSize": 1},
                "labels": {"a": "b"}, "taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}]}),
            watch: Watch::Collection {
                url: format!("{eks}/clusters/base/node-groups"),
                items: "/nodegroups",
                name: "",
            },
        },
        Base {
            api: Api::Eks,
            method: "POST",
            url: format!("{eks}/clusters/base/update-config"),
            content_type: "application/json",
            body: json!({"resourcesVpcConfig": {"endpointPrivateAccess": true},
                "logging": {"clusterLogging": [{"types": ["api"], "enabled": true}]}}),
            watch: Watch::Nothing,
        },
        Base {
            api: Api::Gke,
            method: "POST",
            url: format!("{gke_at}/clusters"),
            content_type: "application/json",
            body: json!({"cluster": {"name": "bi", "initialNodeCount": 1,
                "nodeConfig": {"machineType": "e2-medium", "diskSizeGb": 100, "labels": {"a": "b"}},
                "resourceLabels": {"team": "a"}}}),
            watch: Watch::Collection {
                url: format!("{gke_at}/clusters"),
                items: "/clusters",
                name: "/name",
            },
        },
        Base {
            api: Api::Gke,
            method: "POST",
            url: format!("{gke_at}/clusters/base/nodePools"),
            content_type: "application/json",
            body: json!({"nodePool": {"name": "bi", "initialNodeCount": 1,
                "config": {"machineType": "e2-medium", "diskSizeGb": 50},
                "autoscaling": {"enabled": true, "minNodeCount": 1, "maxNodeCount": 3}}}),
            watch: Watch::Collection {
                url: format!("{gke_at}/clusters/base/nodePools"),
                items: "/nodePools",
                name: "/name",
            },
        },
        Base {
            api: Api::Gke,
            method: "POST",
            url: format!("{gke_at}/clusters/base/nodePools/default-pool:setSize"),
            content_type: "application/json",
            body: json!({"nodeCount": 2}),
            watch: Watch::Nothing,
        },
        Base {
            api: Api::Arm,
            method: "PUT",
            url: format!("{rg}/managedClusters/bi?{v}"),
            content_type: "application/json",
            body: json!({"location": "eastus", "tags": {"team": "a"},
                "properties": {"dnsPrefix": "bi", "kubernetesVersion": "1.34",
                    "agentPoolProfiles": [{"name": "nodepool1", "count": 1, "vmSize": "Standard_DS2_v2",
                        "mode": "System", "osType": "Linux", "osDiskSizeGB": 128}]}}),
            watch: Watch::Collection {
                url: format!("{rg}/managedClusters?{v}"),
                items: "/value",
                name: "/name",
            },
        },
        Base {
            api: Api::Arm,
            method: "PUT",
            url: format!("{rg}/managedClusters/base/agentPools/bp?{v}"),
            content_type: "application/json",
            body: json!({"properties": {"count": 1, "vmSize": "Standard_DS2_v2", "mode": "User",
                "minCount": 1, "maxCount": 3, "enableAutoScaling": true, "nodeLabels": {"a": "b"}}}),
            watch: Watch::Collection {
                url: format!("{rg}/managedClusters/base/agentPools?{v}"),
                items: "/value",
                name: "/name",
            },
        },
    ]
}

/// The 500s kube-apiserver itself answers (its patch code's plain errors):
/// an applied field the type does not declare, a strategic-merge list item
/// without its merge key.
fn upstream_500(api: Api, answer: &Value) -> bool {
    let message = answer["message"].as_str().unwrap_or_default();
    api == Api::Kubernetes
        && answer["code"] == 500
        && (message.starts_with("failed to create typed patch object")
            || message.contains("does not contain declared merge key"))
}

/// One answer that breaks a rule.
fn violation(what: &str, method: &str, url: &str, ct: &str, body: &[u8], detail: String) -> String {
    let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    format!("{what}: {method} {url} ({ct}) {shown:?}: {detail}")
}

#[actix_web::test]
async fn generated_bad_input_is_refused_in_each_apis_format_and_stores_nothing() {
    let seed: u64 = std::env::var("KEMU_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6b65_6d75);
    let rounds: usize = std::env::var("KEMU_BAD_INPUT_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let sandbox = Sandbox::new();
    let kemu = Kemu::builder().build().unwrap();
    let record = kemu.registry().create(eks_spec("bad")).unwrap();
    let cert = record
        .ca
        .client_cert("kemu-admin", &["system:masters".into()], kemu.clock().now())
        .unwrap();
    let running = eks_support::start(kemu, &sandbox.path("run"));
    let ready = running.ready.clone();
    kemu::shared::pki::install_crypto_provider();
    let identity = format!("{}{}", cert.cert_pem, cert.key_pem);
    let clients = Clients {
        kube: reqwest::Client::builder()
            .tls_certs_only([
                reqwest::Certificate::from_pem(record.ca.cert_pem().as_bytes()).unwrap(),
            ])
            .identity(reqwest::Identity::from_pem(identity.as_bytes()).unwrap())
            .build()
            .unwrap(),
        plain: common::http_client(),
        arm: common::arm_client(&std::fs::read_to_string(&ready.ca_bundle).unwrap()),
    };
    let kube = kemu::shared::sentinel::advertise(&record)
        .server_url()
        .unwrap();
    let bases = bases(&kube, &ready.eks, &ready.gke, &ready.aks);

    // What the patches and the node pools work on.
    let setup = [
        (
            Api::Kubernetes,
            "POST",
            format!("{kube}/api/v1/namespaces/default/configmaps"),
            json!({"metadata": {"name": "base"}, "data": {"k": "v"}}),
        ),
        (
            Api::Kubernetes,
            "POST",
            format!("{kube}/apis/apps/v1/namespaces/default/deployments"),
            bases[1].body.clone().tap_name("base"),
        ),
        (
            Api::Eks,
            "POST",
            format!("{}/clusters", ready.eks),
            bases[8].body.clone().tap_key("name", "base"),
        ),
        (
            Api::Gke,
            "POST",
            format!(
                "{}/v1/projects/p/locations/us-central1-a/clusters",
                ready.gke
            ),
            json!({"cluster": {"name": "base", "initialNodeCount": 1}}),
        ),
        (
            Api::Arm,
            "PUT",
            format!(
                "{}/subscriptions/{}/resourcegroups/bad?api-version=2021-04-01",
                ready.aks,
                kemu_aks::state::DEFAULT_SUBSCRIPTION
            ),
            json!({"location": "eastus"}),
        ),
        (
            Api::Arm,
            "PUT",
            bases[14]
                .url
                .replace("/managedClusters/bi?", "/managedClusters/base?"),
            bases[14].body.clone(),
        ),
    ];
    for (api, method, url, body) in setup {
        let resp = clients
            .request(api, method, &url)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert!(status.is_success(), "setup {method} {url}: {status} {text}");
    }

    let mut rng = Rng(seed | 1);
    let mut violations = Vec::new();
    let (mut cases, mut refused, mut slowest) = (0usize, 0usize, Duration::ZERO);
    for (b, base) in bases.iter().enumerate() {
        for round in 0..rounds {
            let (body, ct) = mutate(&mut rng, &base.body, base.content_type);
            // Every fourth request also carries a hostile query parameter.
            let url = if round % 4 == 3 {
                let sep = if base.url.contains('?') { '&' } else { '?' };
                format!("{}{sep}{}", base.url, hostile_query(&mut rng))
            } else {
                base.url.clone()
            };
            // Creates get fresh names, so an accepted one is no conflict.
            let url = url
                .replace(
                    "/managedClusters/bi?",
                    &format!("/managedClusters/bi{b}x{round}?"),
                )
                .replace("/agentPools/bp?", &format!("/agentPools/bp{round}?"));
            let body = String::from_utf8_lossy(&body)
                .replace("\"bi\"", &format!("\"bi{b}x{round}\""))
                .into_bytes();
            let before = clients.state(base.api, &base.watch).await;
            let mut req = clients
                .request(base.api, base.method, &url)
                .body(body.clone());
            if !ct.is_empty() {
                req = req.header("content-type", &ct);
            }
            let started = kemu::SystemClock::instant();
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let answer = resp.bytes().await.unwrap();
            let took = started.elapsed();
            cases += 1;
            slowest = slowest.max(took);
            let answer: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
            let say =
                |what: &str, detail: String| violation(what, base.method, &url, &ct, &body, detail);
            if took > BOUND {
                violations.push(say("slow", format!("{took:?}")));
            }
            if status >= 500 && !upstream_500(base.api, &answer) {
                violations.push(say("5xx", format!("{status} {answer}")));
            }
            if (200..300).contains(&status) {
                continue;
            }
            refused += 1;
            if !wire_format(base.api, status, &headers, &answer) {
                violations.push(say("format", format!("{status} {answer}")));
            }
            let after = clients.state(base.api, &base.watch).await;
            if before != after {
                violations.push(say(
                    "stored",
                    format!("{status} {answer}: {before:?} -> {after:?}"),
                ));
            }
        }
    }

    // Every API still answers.
    assert_eq!(
        clients
            .request(Api::Kubernetes, "GET", &format!("{kube}/readyz"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "ok"
    );
    clients
        .get(Api::Eks, &format!("{}/clusters", ready.eks))
        .await;
    clients
        .get(
            Api::Gke,
            &format!("{}/v1/projects/p/locations/-/clusters", ready.gke),
        )
        .await;
    clients.get(Api::Arm, &bases[14].watch_url()).await;
    println!("{cases} cases from seed {seed:#x}: {refused} refused, slowest answer {slowest:?}");
    assert!(
        violations.is_empty(),
        "{} of {cases} cases broke a rule:\n{}",
        violations.len(),
        violations.join("\n")
    );
    drop(running);
}

/// Small edits of a base body for the setup requests.
trait Tap {
    fn tap_name(self, name: &str) -> Value;
    fn tap_key(self, key: &str, value: &str) -> Value;
}

impl Tap for Value {
    fn tap_name(mut self, name: &str) -> Value {
        self["metadata"]["name"] = json!(name);
        self
    }

    fn tap_key(mut self, key: &str, value: &str) -> Value {
        self[key] = json!(value);
        self
    }
}

impl Base {
    fn watch_url(&self) -> String {
        match &self.watch {
            Watch::Collection { url, .. } | Watch::Object(url, _) => url.clone(),
            Watch::Nothing => self.url.clone(),
        }
    }
}
