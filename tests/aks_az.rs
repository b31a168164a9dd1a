//! `az` 2.91 drives the AKS facade end to end over HTTPS with kemu's CA, and
//! kubectl reaches the cluster with the kubeconfig `az aks get-credentials`
//! writes.

mod common;

use std::collections::BTreeMap;

use base64::Engine;
use common::aks::{az, az_json, az_ok, blocking, login, serve};
use common::{Sandbox, eks_spec, text};
use kemu::Kemu;
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::{Cloud, ClusterRecord};

fn aks_record(kemu: &Kemu, name: &str) -> ClusterRecord {
    kemu.registry()
        .list_cloud(Cloud::Aks)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no AKS cluster {name} in the registry"))
}

fn pools(record: &ClusterRecord) -> BTreeMap<String, u32> {
    record
        .node_pools
        .iter()
        .map(|p| (p.name.clone(), p.count))
        .collect()
}

/// The (CN, O…) of the client certificate in a kubeconfig file.
fn client_identity(path: &std::path::Path) -> (String, Vec<String>) {
    let out = std::process::Command::new("kubectl")
        .args([
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "json",
            "--kubeconfig",
        ])
        .arg(path)
        .output()
        .expect("kubectl config view");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kubeconfig json");
    let b64 = base64::engine::general_purpose::STANDARD;
    let pem = b64
        .decode(
            doc["users"][0]["user"]["client-certificate-data"]
                .as_str()
                .expect("client cert"),
        )
        .expect("base64");
    let body: String = String::from_utf8(pem)
        .expect("pem")
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = b64.decode(body).expect("der");
    kemu::shared::pki::certificate_identity(&der).expect("certificate identity")
}

/// The cluster's Nodes as `kubectl get nodes -o json` lists them, counted per
/// AKS agent pool label; every Node must carry AKS's labels.
fn kube_nodes(sandbox: &Sandbox, kubeconfig: &std::path::Path) -> BTreeMap<String, u32> {
    let out = sandbox.kubectl(kubeconfig, &["get", "nodes", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("node list json");
    let mut per_pool = BTreeMap::new();
    for node in list["items"].as_array().expect("items") {
        let labels = &node["metadata"]["labels"];
        let pool = labels["kubernetes.azure.com/agentpool"]
            .as_str()
            .unwrap_or_else(|| panic!("Node without its AKS pool label: {node}"));
        let mode = if pool == "nodepool1" {
            "system"
        } else {
            "user"
        };
        assert_eq!(labels["kubernetes.azure.com/mode"], mode, "{node}");
        assert_eq!(labels["kubernetes.io/os"], "linux", "{node}");
        assert!(
            labels["node.kubernetes.io/instance-type"].is_string(),
            "{node}"
        );
        assert!(labels["topology.kubernetes.io/zone"].is_string(), "{node}");
        *per_pool.entry(pool.to_owned()).or_insert(0) += 1;
    }
    per_pool
}

#[actix_web::test]
async fn az_drives_aks_end_to_end() {
    let kemu = Kemu::builder().build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    blocking(move || az_flow(&kemu, &sandbox, &arm, &ca)).await;
    served.running.stop().await;
}

fn az_flow(kemu: &Kemu, sandbox: &Sandbox, arm: &str, ca: &std::path::Path) {
    let sb = sandbox;
    let out = login(
        sb,
        arm,
        ca,
        "11111111-2222-3333-4444-555555555555",
        "any-secret",
    );
    assert!(out.status.success(), "az login: {}", text(&out));
    let accounts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(accounts[0]["id"], kemu_aks::state::DEFAULT_SUBSCRIPTION);
    assert_eq!(accounts[0]["user"]["type"], "servicePrincipal");

    let group = az_json(sb, ca, &["group", "create", "-n", "rg1", "-l", "eastus"]);
    assert_eq!(group["properties"]["provisioningState"], "Succeeded");

    let created = az_json(
        sb,
        ca,
        &[
            "aks",
            "create",
            "-g",
            "rg1",
            "-n",
            "c1",
            "-k",
            "1.33",
            "--node-count",
            "2",
            "--generate-ssh-keys",
        ],
    );
    assert_eq!(created["provisioningState"], "Succeeded");
    assert_eq!(created["currentKubernetesVersion"], "1.33.5");
    assert_eq!(created["agentPoolProfiles"][0]["count"], 2);
    assert_eq!(created["agentPoolProfiles"][0]["mode"], "System");
    assert!(
        sandbox.path(".ssh/id_rsa.pub").is_file(),
        "az generated the ssh key in HOME"
    );
    let record = aks_record(kemu, "c1");
    assert_eq!(pools(&record), BTreeMap::from([("nodepool1".into(), 2)]));
    let labels = &record.node_pools[0].labels;
    assert_eq!(labels["kubernetes.azure.com/agentpool"], "nodepool1");
    assert_eq!(labels["kubernetes.azure.com/mode"], "system");
    assert_eq!(
        labels["node.kubernetes.io/instance-type"],
        "Standard_DS2_v2"
    );
    assert_eq!(labels["topology.kubernetes.io/region"], "eastus");

    let shown = az_json(sb, ca, &["aks", "show", "-g", "rg1", "-n", "c1"]);
    assert_eq!(shown["powerState"]["code"], "Running");
    assert_eq!(shown["nodeResourceGroup"], "MC_rg1_c1_eastus");
    assert_eq!(shown["fqdn"], "127.0.0.1");
    assert!(shown["identity"]["principalId"].is_string());
    let listed = az_json(sb, ca, &["aks", "list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0]["name"], "c1");

    // get-credentials writes a kubeconfig kubectl can use, with a client
    // certificate from the cluster CA.
    let kubeconfig = sandbox.path("kubeconfig");
    az_ok(sb, ca, &["aks", "get-credentials", "-g", "rg1", "-n", "c1"]);
    let version = sandbox.kubectl(&kubeconfig, &["get", "--raw", "/version"]);
    assert!(version.status.success(), "{}", text(&version));
    let user = client_identity(&kubeconfig);
    assert_eq!(user, ("clusterUser".into(), vec!["system:masters".into()]));
    // `--node-count 2` is two Nodes, and a Deployment rolls out on them.
    assert_eq!(
        kube_nodes(sandbox, &kubeconfig),
        BTreeMap::from([("nodepool1".into(), 2)])
    );
    let k = |args: &[&str]| {
        let out = sandbox.kubectl(&kubeconfig, args);
        assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    k(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let rollout = k(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(rollout.contains("successfully rolled out"), "{rollout}");
    let admin_kc = sandbox.path("admin.kubeconfig");
    let admin_path = admin_kc.to_string_lossy().into_owned();
    az_ok(
        sb,
        ca,
        &[
            "aks",
            "get-credentials",
            "-g",
            "rg1",
            "-n",
            "c1",
            "--admin",
            "--file",
            &admin_path,
        ],
    );
    let version = sandbox.kubectl(&admin_kc, &["get", "--raw", "/version"]);
    assert!(version.status.success(), "{}", text(&version));
    assert_eq!(
        client_identity(&admin_kc),
        ("masterclient".into(), vec!["system:masters".into()])
    );

    let whoami = sandbox.kubectl(&kubeconfig, &["auth", "whoami", "-o", "json"]);
    assert!(whoami.status.success(), "{}", text(&whoami));
    let review: serde_json::Value = serde_json::from_slice(&whoami.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "clusterUser");

    // An Azure AD token for the AKS server application, as kubelogin gets
    // one, authenticates too: the caller is the service principal's object id.
    let token = az_ok(
        sb,
        ca,
        &[
            "account",
            "get-access-token",
            "--resource",
            kemu_aks::auth::AKS_SERVER_APP_ID,
            "--query",
            "accessToken",
            "-o",
            "tsv",
        ],
    );
    let record = aks_record(kemu, "c1");
    let server = kemu::shared::advertise(&record).server_url().unwrap();
    let token_kc = sandbox.path("token.kubeconfig");
    let auth = UserAuth::Token(token.trim().to_owned());
    std::fs::write(
        &token_kc,
        kubeconfig::render("c1", &server, record.ca.cert_pem(), "aad", &auth),
    )
    .unwrap();
    let whoami = sandbox.kubectl(&token_kc, &["auth", "whoami", "-o", "json"]);
    assert!(whoami.status.success(), "{}", text(&whoami));
    let review: serde_json::Value = serde_json::from_slice(&whoami.stdout).unwrap();
    let oid = kemu_aks::identity::claims(token.trim()).unwrap()["oid"].clone();
    assert_eq!(review["status"]["userInfo"]["username"], oid);

    // A client certificate from another cluster's CA is refused: 401.
    let other = kemu.registry().create(eks_spec("other")).unwrap();
    let foreign = other
        .ca
        .client_cert(
            "masterclient",
            &["system:masters".into()],
            kemu.clock().now(),
        )
        .unwrap();
    let forged = sandbox.path("forged.kubeconfig");
    let text_kc = kubeconfig::render(
        "c1",
        &server,
        record.ca.cert_pem(),
        "forged",
        &UserAuth::ClientCert {
            cert_pem: foreign.cert_pem,
            key_pem: foreign.key_pem,
        },
    );
    std::fs::write(&forged, text_kc).unwrap();
    let refused = sandbox.kubectl(&forged, &["get", "--raw", "/version"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    // As kube-apiserver: the handshake takes the certificate, the x509
    // authenticator refuses it (another CA), and no credential is left: 401,
    // saying how to get a working kubeconfig.
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "error: You must be logged in to the server (Unauthorized: the client certificate was not issued by cluster c1's CA (a kubeconfig from before a reset, or for another cluster?): get a fresh one with `az aks get-credentials --resource-group rg1 --name c1` (or `kemu kubeconfig c1`))",
        "{}",
        text(&refused)
    );

    // Scaling edits the cluster's agentPoolProfiles.
    az_ok(
        sb,
        ca,
        &["aks", "scale", "-g", "rg1", "-n", "c1", "--node-count", "3"],
    );
    assert_eq!(pools(&aks_record(kemu, "c1"))["nodepool1"], 3);
    assert_eq!(
        kube_nodes(sandbox, &kubeconfig),
        BTreeMap::from([("nodepool1".into(), 3)])
    );

    // Node pools go through the agentPools child resource: one source of truth.
    let added = az_json(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "add",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "-n",
            "np2",
            "--node-count",
            "2",
            "--labels",
            "team=a",
            "--node-taints",
            "k=v:NoSchedule",
        ],
    );
    assert_eq!(added["mode"], "User");
    assert_eq!(added["provisioningState"], "Succeeded");
    let record = aks_record(kemu, "c1");
    let np2 = record.node_pools.iter().find(|p| p.name == "np2").unwrap();
    assert_eq!((np2.count, np2.labels["team"].as_str()), (2, "a"));
    assert_eq!(np2.labels["kubernetes.azure.com/mode"], "user");
    assert_eq!(np2.taints[0].effect, "NoSchedule");
    assert_eq!(
        kube_nodes(sandbox, &kubeconfig),
        BTreeMap::from([("nodepool1".into(), 3), ("np2".into(), 2)])
    );
    let names = az_ok(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "list",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "--query",
            "[].name",
            "-o",
            "tsv",
        ],
    );
    assert_eq!(
        names.split_whitespace().collect::<Vec<_>>(),
        ["nodepool1", "np2"]
    );
    az_ok(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "scale",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "-n",
            "np2",
            "--node-count",
            "4",
        ],
    );
    let np2 = az_json(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "show",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "-n",
            "np2",
        ],
    );
    assert_eq!(np2["count"], 4);
    assert_eq!(pools(&aks_record(kemu, "c1"))["np2"], 4);
    assert_eq!(
        kube_nodes(sandbox, &kubeconfig),
        BTreeMap::from([("nodepool1".into(), 3), ("np2".into(), 4)])
    );
    az_ok(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "delete",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "-n",
            "np2",
        ],
    );
    assert_eq!(
        pools(&aks_record(kemu, "c1")),
        BTreeMap::from([("nodepool1".into(), 3)])
    );
    assert_eq!(
        kube_nodes(sandbox, &kubeconfig),
        BTreeMap::from([("nodepool1".into(), 3)])
    );
    // The Deployment is still available after the pool changes.
    let ready = k(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(ready, "2");

    let upgraded = az_json(
        sb,
        ca,
        &[
            "aks", "upgrade", "-g", "rg1", "-n", "c1", "-k", "1.34", "--yes",
        ],
    );
    assert_eq!(upgraded["currentKubernetesVersion"], "1.34.1");
    assert_eq!(
        upgraded["agentPoolProfiles"][0]["currentOrchestratorVersion"],
        "1.34.1"
    );
    assert_eq!(aks_record(kemu, "c1").version, "1.34");
    let profile = az_json(
        sb,
        ca,
        &[
            "aks",
            "nodepool",
            "get-upgrades",
            "-g",
            "rg1",
            "--cluster-name",
            "c1",
            "--nodepool-name",
            "nodepool1",
        ],
    );
    assert_eq!(profile["kubernetesVersion"], "1.34.1");
    assert_eq!(profile["upgrades"], serde_json::json!([]));

    // az aks update reads the kubelet identity AKS created.
    let tags = az_json(
        sb,
        ca,
        &[
            "aks",
            "update",
            "-g",
            "rg1",
            "-n",
            "c1",
            "--tags",
            "team=platform",
            "--query",
            "tags",
        ],
    );
    assert_eq!(tags, serde_json::json!({ "team": "platform" }));
    assert_eq!(aks_record(kemu, "c1").tags["team"], "platform");

    az_ok(sb, ca, &["aks", "stop", "-g", "rg1", "-n", "c1"]);
    let power = az_ok(
        sb,
        ca,
        &[
            "aks",
            "show",
            "-g",
            "rg1",
            "-n",
            "c1",
            "--query",
            "powerState.code",
            "-o",
            "tsv",
        ],
    );
    assert_eq!(power.trim(), "Stopped");
    az_ok(sb, ca, &["aks", "start", "-g", "rg1", "-n", "c1"]);
    let power = az_ok(
        sb,
        ca,
        &[
            "aks",
            "show",
            "-g",
            "rg1",
            "-n",
            "c1",
            "--query",
            "powerState.code",
            "-o",
            "tsv",
        ],
    );
    assert_eq!(power.trim(), "Running");

    let missing = az(sb, ca, &["aks", "show", "-g", "rg1", "-n", "nope"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("(ResourceNotFound)"),
        "{}",
        text(&missing)
    );

    az_ok(sb, ca, &["aks", "delete", "-g", "rg1", "-n", "c1", "--yes"]);
    assert!(kemu.registry().list_cloud(Cloud::Aks).is_empty());
    az_ok(sb, ca, &["group", "delete", "-n", "rg1", "--yes"]);
    let exists = az_ok(sb, ca, &["group", "exists", "-n", "rg1"]);
    assert_eq!(exists.trim(), "false");
}

#[actix_web::test]
async fn az_login_with_a_wrong_secret_gets_the_aad_error() {
    let config = kemu_aks::AksConfig {
        service_principals: BTreeMap::from([("app1".into(), "s3cret".into())]),
        ..Default::default()
    };
    let kemu = Kemu::builder()
        .dataplane(false)
        .aks_config(config)
        .build()
        .unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu, &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    blocking(move || {
        let out = login(&sandbox, &arm, &ca, "app1", "wrong");
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("AADSTS7000215: Invalid client secret provided"),
            "{}",
            text(&out)
        );
        let ok = az(
            &sandbox,
            &ca,
            &[
                "login",
                "--service-principal",
                "-u",
                "app1",
                "-p",
                "s3cret",
                "--tenant",
                kemu_aks::state::DEFAULT_TENANT,
            ],
        );
        assert!(ok.status.success(), "{}", text(&ok));
    })
    .await;
    served.running.stop().await;
}

#[actix_web::test]
async fn az_reads_the_cloud_list_of_arm_cloud_metadata_url() {
    let kemu = Kemu::builder().dataplane(false).build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu, &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    blocking(move || {
        let out = sandbox
            .command("az")
            .env("REQUESTS_CA_BUNDLE", &ca)
            // az fetches this URL with urllib, which trusts SSL_CERT_FILE.
            .env("SSL_CERT_FILE", &ca)
            .env("AZURE_CORE_COLLECT_TELEMETRY", "false")
            .env(
                "ARM_CLOUD_METADATA_URL",
                format!("{arm}/metadata/endpoints?api-version=2019-05-01"),
            )
            .args([
                "cloud",
                "show",
                "-n",
                "kemu",
                "--query",
                "endpoints.resourceManager",
                "-o",
                "tsv",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{arm}/")
        );
    })
    .await;
    served.running.stop().await;
}
