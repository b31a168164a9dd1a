//! A bounded fuzzing campaign over the parsers kemu runs on what clients
//! send: request bodies (JSON, YAML, protobuf), label and field selectors,
//! query strings and integers, quantities, durations, timestamps, CIDRs,
//! CronJob schedules (with the search for the next run), the exec shell's
//! grammar and the port-forward HTTP responder; and at the facades, SigV4
//! headers, EKS tokens, GKE and ARM request bodies (JSON of any shape over the
//! APIs' own field names) and fixture files. Each target takes strings drawn
//! from its grammar's alphabet and mutations of valid seeds, and must answer
//! every one (an error is fine; a panic or a hang is not; a facade answers no
//! 5xx). The patch and managed-fields proptests live beside their code.
//!
//! Cases per target: `CASES` (`PROPTEST_CASES` overrides it).

use kemu_dataplane::api::{deadline, options, protobuf, request, selectors};
use kemu_dataplane::authz::admission::quantity::Quantity;
use kemu_dataplane::controllers::{cronjob, obj};
use kemu_dataplane::exec::{Container, fs, ports};
use kemu_dataplane::label_selector::LabelSelector;
use kemu_dataplane::network::cidr::Cidr;
use proptest::prelude::*;
use serde_json::{Value, json};

mod common;

/// An nginx container with its default page.
fn container() -> Container {
    let mut root = fs::Node::dir(0o755, 0);
    fs::put(
        &mut root,
        &fs::components("/", "/usr/share/nginx/html/index.html"),
        fs::Node::file(b"hi\n".to_vec(), 0o644, 0),
    );
    Container {
        fs: fs::Fs::new(fs::shared(root)),
        env: Vec::new(),
        cwd: "/".into(),
        hostname: "web".into(),
        image: "nginx".into(),
    }
}

const CASES: u32 = 2000;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CASES);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A seed with bytes replaced, inserted and cut at random places.
fn mutated(seeds: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(seeds),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..8),
    )
        .prop_map(|(seed, edits)| {
            let mut b = seed.as_bytes().to_vec();
            for (at, byte, op) in edits {
                let i = if b.is_empty() { 0 } else { at.index(b.len()) };
                match op {
                    0 if !b.is_empty() => b[i] = byte,
                    1 => b.insert(i, byte),
                    _ if !b.is_empty() => {
                        b.remove(i);
                    }
                    _ => b.push(byte),
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        })
}

/// Text from a grammar's alphabet, or a mutated seed.
fn input(alphabet: &'static str, seeds: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        prop::string::string_regex(&format!("[{alphabet}]{{0,64}}")).unwrap(),
        mutated(seeds),
        any::<String>(),
    ]
    .boxed()
}

const BODIES: &[&str] = &[
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}"#,
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    args: [\"a\", 1, 2.5e300]\n",
    "a: &x [*x, *x]\nb: !!binary aGk=\n",
    "[[[[[[[[[[{}]]]]]]]]]]",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bodies_decode_or_are_refused(s in input(r#"\[\]{}:,"'a-z0-9 \n\-&*!|>."#, BODIES)) {
        let _ = request::decode_json(s.as_bytes());
        let _ = request::decode_yaml(s.as_bytes());
        let _ = request::decode_object("application/yaml", s.as_bytes());
        let _ = request::decode_object("application/json", s.as_bytes());
    }

    #[test]
    fn protobuf_bodies_decode_or_are_refused(b in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut v| {
            let mut b = b"k8s\x00".to_vec();
            b.append(&mut v);
            b
        }),
    ]) {
        let _ = protobuf::decode(&b);
    }

    #[test]
    fn label_selectors_parse_or_are_refused(s in input(r"a-z0-9=!,()\-_./ ", &[
        "app=web,tier!=db", "env in (prod, dev),!canary", "x notin (a),y", "a.b/c==d",
    ])) {
        let _ = LabelSelector::parse(&s);
    }

    #[test]
    fn field_selectors_parse_or_are_refused(s in input(r"a-z.=!,\\ ", &[
        "metadata.name=web", "spec.nodeName!=n1,status.phase=Running", "metadata.namespace==a\\,b",
    ])) {
        let _ = selectors::FieldSelector::parse(&s, "", "Pod");
        let _ = selectors::FieldSelector::parse(&s, "apps", "Deployment");
    }

    #[test]
    fn queries_and_integers_parse_or_are_refused(s in input(r"a-z0-9=&%+\-", &[
        "limit=500&continue=eyJ2IjoxfQ", "gracePeriodSeconds=9223372036854775808", "watch=1&timeoutSeconds=-1",
    ])) {
        let _ = request::Params::parse(&s);
        let _ = options::parse_int(&s);
    }

    #[test]
    fn quantities_parse_or_are_refused(s in input(r"0-9.eEkKMGTPimun+\-", &[
        "100m", "1.5Gi", "1e3", "9223372036854775807Ei", "0.000000001", "-1k",
    ])) {
        if let Some(q) = Quantity::parse(&s) {
            let _ = q.milli();
            let _ = q.to_string();
        }
    }

    #[test]
    fn durations_times_and_cidrs_parse_or_are_refused(s in input(r"0-9.hmsunµTZ:+\-/", &[
        "1h30m", "500ms", "99999999999999999999h", "2026-12-07T06:55:10Z", "10.0.0.0/16", "2026-12-07T06:55:10.123+01:00",
        "-9223372036854775808ns", ".5µs", "1.0000000000000000000001h",
    ])) {
        let _ = obj::parse_duration(&s);
        let _ = deadline::parse_go_duration(&s);
        let _ = obj::parse_time(&s);
        if let Some(c) = Cidr::parse(&s) {
            let _ = c.usable();
        }
    }

    #[test]
    fn schedules_parse_and_find_their_next_run(s in input(r"0-9*/,\- LW#@a-z", &[
        "*/5 * * * *", "0 0 31 2 *", "@hourly", "59 23 29 2 1", "0 0 1-31/2 * MON-FRI", "@midnight",
    ])) {
        if let Ok(cron) = cronjob::parse_schedule(&s) {
            let from = chrono::DateTime::<chrono::Utc>::from_timestamp(1_800_000_000, 0).unwrap();
            let _ = cron.find_next_occurrence(&from, false);
        }
    }

    #[test]
    fn forwarded_http_is_answered_or_refused(reqs in prop::collection::vec(input(
        r"A-Za-z0-9 /:?=&%\r\n.\-",
        &[
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /echo?msg=a%20b HTTP/1.1\r\n\r\n",
            "POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            "HEAD /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        ],
    ), 1..4)) {
        for server in [ports::Server::Nginx, ports::Server::Netexec] {
            let mut listeners = ports::Listeners::new("uid");
            listeners.add(80, server, container());
            let mut conn = listeners.connect(80).unwrap();
            let now = chrono::DateTime::<chrono::Utc>::from_timestamp(0, 0).unwrap();
            for r in &reqs {
                let _ = conn.feed(r.as_bytes(), now);
            }
        }
    }

    #[test]
    fn shell_scripts_parse_or_are_refused(s in input(r#"a-z0-9 ;|&()<>$`'"{}\\\n#=*?\[\]!"#, &[
        "cat /etc/config/x; exit 3", "for i in 1 2; do echo $i; done | wc -l",
        "if [ -f /x ]; then echo ${A:-b}; fi", "echo $((1 + (2 * 3))) 2>&1 >/dev/null",
    ])) {
        let _ = kemu_dataplane::exec::shell::parse::parse(&s);
    }
}

/// JSON of any shape, its keys the facades' own field names.
fn json_body() -> impl Strategy<Value = Value> {
    const KEYS: &[&str] = &[
        "name",
        "cluster",
        "nodePool",
        "initialNodeCount",
        "nodeCount",
        "nodeConfig",
        "config",
        "machineType",
        "diskSizeGb",
        "autoscaling",
        "enabled",
        "minNodeCount",
        "maxNodeCount",
        "locations",
        "resourceLabels",
        "labels",
        "taints",
        "key",
        "value",
        "effect",
        "location",
        "properties",
        "agentPoolProfiles",
        "count",
        "vmSize",
        "mode",
        "osType",
        "dnsPrefix",
        "kubernetesVersion",
        "tags",
        "enableAutoScaling",
        "minCount",
        "maxCount",
        "nodeLabels",
        "networkProfile",
        "podCidr",
        "serviceCidr",
        "identity",
        "type",
        "sku",
        "x",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop::sample::select(
            &[
                "",
                "a",
                "e2-medium",
                "Standard_DS2_v2",
                "System",
                "User",
                "eastus",
                "us-central1-a",
                "1.34",
                "Linux",
                "NoSchedule",
                "-1",
                "\u{0}",
                "SystemAssigned",
            ][..]
        )
        .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// One kemu without a data plane, its facades' state shared by every case.
struct Facades {
    kemu: kemu::Kemu,
    eks: kemu::shared::ClusterRecord,
    gke: kemu_gke::Gke,
    aks: kemu_aks::Aks,
}

fn facades() -> &'static Facades {
    static FACADES: std::sync::OnceLock<Facades> = std::sync::OnceLock::new();
    FACADES.get_or_init(|| {
        let kemu = kemu::Kemu::builder().dataplane(false).build().unwrap();
        let eks = kemu.registry().create(common::eks_spec("fuzz")).unwrap();
        let gke = kemu_gke::Gke::new(kemu.registry().clone());
        let aks = kemu_aks::Aks::new(kemu.registry().clone());
        // What the cases' routes name exists, so their bodies are read.
        let v = "api-version=2026-06-01";
        let pools = json!([{"name": "p0", "count": 1, "mode": "System"}]);
        let setup = [
            (gke.clone().configurer(), "POST", format!("{GKE_AT}/clusters"),
                json!({"cluster": {"name": "a", "initialNodeCount": 1}})),
            (aks.clone().configurer(), "PUT", format!("{}?{v}", arm_group()),
                json!({"location": "eastus"})),
            (aks.clone().configurer(), "PUT", format!("{}/a?{v}", arm_clusters()),
                json!({"location": "eastus", "properties": {"dnsPrefix": "a", "agentPoolProfiles": pools}})),
        ];
        for (configure, method, uri, body) in setup {
            let status = send(configure, method, &uri, &serde_json::to_vec(&body).unwrap());
            assert!((200..300).contains(&status), "setup {method} {uri}: {status}");
        }
        Facades {
            kemu,
            eks,
            gke,
            aks,
        }
    })
}

const GKE_AT: &str = "/v1/projects/fuzz/locations/us-central1-a";

fn arm_group() -> String {
    format!(
        "/subscriptions/{}/resourcegroups/fuzz",
        kemu_aks::state::DEFAULT_SUBSCRIPTION
    )
}

fn arm_clusters() -> String {
    format!(
        "{}/providers/Microsoft.ContainerService/managedClusters",
        arm_group()
    )
}

type Configure = std::rc::Rc<dyn Fn(&mut actix_web::web::ServiceConfig)>;

/// An app's configuration with one facade's routes.
trait Configurer {
    fn configurer(self) -> Configure;
}

impl Configurer for kemu_aks::Aks {
    fn configurer(self) -> Configure {
        std::rc::Rc::new(move |c| self.clone().configure(c))
    }
}

impl Configurer for kemu_gke::Gke {
    fn configurer(self) -> Configure {
        std::rc::Rc::new(move |c| self.clone().configure(c))
    }
}

fn request(method: &str, uri: &str, body: &[u8]) -> actix_web::test::TestRequest {
    actix_web::test::TestRequest::default()
        .method(method.parse().unwrap())
        .uri(uri)
        .insert_header(("authorization", "Bearer fuzz"))
        .insert_header(("content-type", "application/json"))
        .set_payload(body.to_vec())
}

/// One request to a facade; its status.
fn send(configure: Configure, method: &str, uri: &str, body: &[u8]) -> u16 {
    actix_web::rt::System::new().block_on(async {
        let app =
            actix_web::test::init_service(actix_web::App::new().configure(|c| configure(c))).await;
        actix_web::test::call_service(&app, request(method, uri, body).to_request())
            .await
            .status()
            .as_u16()
    })
}

/// `valid` with the fields of `extra` (an object) laid over it.
fn over(mut valid: Value, extra: &Value) -> Value {
    if let (Some(v), Some(e)) = (valid.as_object_mut(), extra.as_object()) {
        v.extend(e.clone());
    }
    valid
}

/// Sends each route its body; every answer is below 500.
fn facade_answers(
    configure: Configure,
    routes: &[(&str, String, Value)],
) -> Result<(), TestCaseError> {
    actix_web::rt::System::new().block_on(async {
        let app =
            actix_web::test::init_service(actix_web::App::new().configure(|c| configure(c))).await;
        for (method, uri, body) in routes {
            let body = serde_json::to_vec(body).unwrap();
            let resp =
                actix_web::test::call_service(&app, request(method, uri, &body).to_request()).await;
            prop_assert!(
                resp.status().as_u16() < 500,
                "{method} {uri}: {}",
                resp.status()
            );
        }
        Ok(())
    })
}

const STS_URL: &str = "https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDFUZZ%2F20261207%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date=20261207T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Signature=0123abcd";

const FIXTURES: &[&str] = &[
    "clusters:\n  - cloud: eks\n    name: shop\n    region: us-east-1\n    version: \"1.34\"\n    tags: {team: shop}\n    nodePools:\n      - {name: general, count: 2, machineType: m5.large, labels: {tier: web}}\n    manifests:\n      - yaml: |\n          apiVersion: v1\n          kind: ConfigMap\n          metadata: {name: c}\n",
    "clusters:\n  - cloud: gke\n    name: a\n    project: p\n    location: us-central1-a\n    nodePools:\n      - name: batch\n        count: 1\n        taints:\n          - {key: dedicated, value: batch, effect: NoSchedule}\n",
    "clusters:\n  - {cloud: aks, name: c, subscription: s, resourceGroup: RG, location: West Europe}\n",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sigv4_headers_are_checked_or_refused(
        auth in input(r"A-Za-z0-9=/,;_\- ", &[
            "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/eks/aws4_request, SignedHeaders=host;x-amz-date, Signature=0",
            "AWS4-HMAC-SHA256 Credential=a/b/c, Signature=, SignedHeaders",
        ]),
        date in input(r"0-9TZ", &["20260101T000000Z", "20260101"]),
        query in input(r"A-Za-z0-9=&%\-", &["X-Amz-Signature=abc&X-Amz-Date=20260101T000000Z"]),
    ) {
        let mut req = actix_web::test::TestRequest::default();
        for (name, value) in [("authorization", &auth), ("x-amz-date", &date)] {
            if let Ok(value) = actix_web::http::header::HeaderValue::from_str(value) {
                req = req.insert_header((name, value));
            }
        }
        if let Ok(uri) = format!("/clusters?{query}").parse::<actix_web::http::Uri>() {
            req = req.uri(&uri.to_string());
        }
        let _ = kemu_eks::sigv4::check(&req.to_http_request());
    }

    #[test]
    fn eks_tokens_are_verified_or_refused(
        url in input(r"A-Za-z0-9:/?=&%.\-", &[STS_URL]),
        raw in any::<bool>(),
    ) {
        use base64::Engine as _;
        let f = facades();
        let token = match raw {
            true => url,
            false => format!(
                "k8s-aws-v1.{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url)
            ),
        };
        let _ = f.kemu.registry().authenticate_token(&f.eks, &token);
    }

    #[test]
    fn gke_bodies_are_answered_below_500(body in json_body(), wrapped in any::<bool>()) {
        // Bare, or over a valid resource under the field its request nests it in.
        let under = |field: &str, valid: Value| match wrapped {
            true => json!({ field: over(valid, &body) }),
            false => body.clone(),
        };
        // A valid body creates, then is deleted, so the next is no duplicate.
        let pool = || json!({"name": "np", "initialNodeCount": 1});
        let at = GKE_AT;
        let routes = [
            ("POST", format!("{at}/clusters"), under("cluster", json!({"name": "fz", "initialNodeCount": 1}))),
            ("POST", format!("{at}/clusters/a/nodePools"), under("nodePool", pool())),
            ("POST", format!("{at}/clusters/a/nodePools/default-pool:setSize"), body.clone()),
            ("PUT", format!("{at}/clusters/a"), under("update", json!({"desiredNodeVersion": "1.34"}))),
            ("DELETE", format!("{at}/clusters/fz"), Value::Null),
            ("DELETE", format!("{at}/clusters/a/nodePools/np"), Value::Null),
        ];
        facade_answers(facades().gke.clone().configurer(), &routes)?;
    }

    #[test]
    fn arm_bodies_are_answered_below_500(body in json_body(), wrapped in any::<bool>()) {
        let valid = json!({"dnsPrefix": "b", "agentPoolProfiles": [{"name": "p0", "count": 1, "mode": "System"}]});
        let tracked = match wrapped {
            true => json!({"location": "eastus", "properties": over(valid, &body)}),
            false => body.clone(),
        };
        let v = "api-version=2026-06-01";
        let (rg, mc) = (arm_group(), arm_clusters());
        let routes = [
            ("PUT", format!("{rg}?{v}"), body.clone()),
            ("PUT", format!("{mc}/a?{v}"), tracked.clone()),
            ("PUT", format!("{mc}/b?{v}"), tracked),
            ("PUT", format!("{mc}/a/agentPools/p1?{v}"), json!({"properties": body})),
            ("POST", format!("{mc}/a/listClusterUserCredential?{v}"), Value::Null),
        ];
        facade_answers(facades().aks.clone().configurer(), &routes)?;
    }

    #[test]
    fn fixture_files_load_or_are_refused(text in mutated(FIXTURES)) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.yaml");
        std::fs::write(&file, text).unwrap();
        let _ = kemu::fixtures::read(&[file], "123456789012");
    }
}
