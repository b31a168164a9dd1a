//! The aws CLI v1 drives the EKS facade end to end: clusters with their
//! waiters, pagination, errors, update-kubeconfig and kubectl through the
//! `aws eks get-token` exec plugin, node groups, updates, add-ons, access
//! entries, tags, and deletion with the `wait … deleted` waiters.

mod common;
mod eks_support;

use common::{Sandbox, text};
use eks_support::{Aws, blocking, start};
use kemu::Kemu;
use serde_json::Value;

const ROLE: &str = "arn:aws:iam::123456789012:role/eks";

fn create(aws: &Aws, name: &str) -> Value {
    aws.json(&[
        "create-cluster",
        "--name",
        name,
        "--role-arn",
        ROLE,
        "--resources-vpc-config",
        "subnetIds=subnet-a,subnet-b,endpointPublicAccess=true",
        "--kubernetes-version",
        "1.32",
        "--tags",
        "team=a",
    ])
}

#[actix_web::test]
async fn clusters_kubeconfig_and_kubectl() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || cluster_flow(&Aws::new(&sandbox, &endpoint), &sandbox)).await;
    running.stop().await;
}

fn cluster_flow(aws: &Aws, sandbox: &Sandbox) {
    let created = create(aws, "demo");
    let c = &created["cluster"];
    assert_eq!(c["arn"], "arn:aws:eks:us-east-1:000000000000:cluster/demo");
    assert_eq!(c["version"], "1.32");
    assert!(
        c["createdAt"].is_f64() || c["createdAt"].is_u64(),
        "epoch seconds: {c}"
    );
    assert!(
        c["identity"]["oidc"]["issuer"]
            .as_str()
            .unwrap()
            .starts_with("https://oidc.eks.us-east-1.amazonaws.com/id/")
    );
    // The waiter passes on its first poll (each extra poll costs 30 s).
    aws.ok(&["wait", "cluster-active", "--name", "demo"]);
    let described = aws.json(&["describe-cluster", "--name", "demo"]);
    let d = &described["cluster"];
    assert_eq!(d["status"], "ACTIVE");
    assert!(
        d["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:"),
        "{d}"
    );
    assert!(d["certificateAuthority"]["data"].is_string(), "{d}");
    assert_eq!(d["tags"]["team"], "a");
    assert_eq!(d["resourcesVpcConfig"]["subnetIds"][1], "subnet-b");

    // Pagination: --page-size 2 pages through all four and merges them.
    for n in ["b", "c", "d"] {
        create(aws, n);
    }
    let listed = aws.json(&["list-clusters", "--page-size", "2"]);
    assert_eq!(
        listed["clusters"],
        serde_json::json!(["b", "c", "d", "demo"])
    );
    let page = aws.json(&["list-clusters", "--no-paginate", "--max-results", "3"]);
    assert_eq!(page["clusters"].as_array().unwrap().len(), 3);
    assert!(page["nextToken"].is_string());

    // Errors in EKS's own wire format.
    let out = aws.eks(&["describe-cluster", "--name", "nope"]);
    assert_eq!(out.status.code(), Some(255), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(ResourceNotFoundException)"),
        "{}",
        text(&out)
    );
    let out = aws.eks(&[
        "create-cluster",
        "--name",
        "demo",
        "--role-arn",
        ROLE,
        "--resources-vpc-config",
        "subnetIds=subnet-a",
    ]);
    assert_eq!(out.status.code(), Some(255));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(ResourceInUseException)"),
        "{}",
        text(&out)
    );

    // update-kubeconfig, then kubectl through the exec token.
    let kc = sandbox.path("eks.kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "demo",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let out = aws.kubectl(&kc, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", text(&out));
    let version: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(version["major"], "1");
    // The record's version, not the engine's served minor.
    assert_eq!(version["minor"], "32", "{version}");
    // The token authenticates as the cluster creator, admin by its access entry.
    let out = aws.kubectl(&kc, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"], "arn:aws:iam::000000000000:user/test",
        "{who}"
    );
    let groups = who["status"]["userInfo"]["groups"].to_string();
    assert!(
        groups.contains("system:masters") && groups.contains("system:authenticated"),
        "{who}"
    );

    // A token minted for cluster b is refused by demo's API server.
    let token = aws
        .command()
        .args([
            "eks",
            "get-token",
            "--cluster-name",
            "b",
            "--query",
            "status.token",
            "--output",
            "text",
        ])
        .output()
        .unwrap();
    assert!(token.status.success(), "{}", text(&token));
    let token = String::from_utf8(token.stdout).unwrap();
    let out = aws.kubectl(&kc, &["--token", token.trim(), "auth", "whoami"]);
    assert!(
        !out.status.success(),
        "a token for b was accepted by demo: {}",
        text(&out)
    );
    // It says whose token it is and how to get a right one.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "(Unauthorized: this token is for cluster b, not demo: get one for this cluster with `aws eks update-kubeconfig --name demo --region us-east-1` (or `kemu kubeconfig demo`))"
        ),
        "{}",
        text(&out)
    );
}

#[actix_web::test]
async fn nodegroups_updates_addons_access_tags_and_deletion() {
    let sandbox = Sandbox::new();
    let kemu = Kemu::builder().build().unwrap();
    let registry = kemu.registry().clone();
    let running = start(kemu, &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || resource_flow(&Aws::new(&sandbox, &endpoint), &sandbox, &registry)).await;
    running.stop().await;
}

/// The Nodes kubectl lists through the exec token, by name, with their labels.
fn nodes(aws: &Aws, kc: &std::path::Path) -> Vec<Value> {
    let out = aws.kubectl(kc, &["get", "nodes", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// `kubectl version -o json`'s server half.
fn server_version(aws: &Aws, kc: &std::path::Path) -> Value {
    let out = aws.kubectl(kc, &["version", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["serverVersion"].clone()
}

fn resource_flow(aws: &Aws, sandbox: &Sandbox, registry: &kemu::ClusterRegistry) {
    create(aws, "demo");
    aws.ok(&["wait", "cluster-active", "--name", "demo"]);
    let kc = sandbox.path("demo.kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "demo",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    assert!(nodes(aws, &kc).is_empty(), "no node group yet");
    let v = server_version(aws, &kc);
    assert_eq!(
        (&v["major"], &v["minor"]),
        (&"1".into(), &"32".into()),
        "{v}"
    );
    assert_eq!(v["gitVersion"], "v1.32.0-eks-kemu", "{v}");

    // Node groups become node pools of the shared record, labelled as EKS does.
    let ng = aws.json(&[
        "create-nodegroup",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
        "--subnets",
        "subnet-a",
        "subnet-b",
        "--node-role",
        "arn:aws:iam::123456789012:role/node",
        "--scaling-config",
        "minSize=1,maxSize=3,desiredSize=2",
        "--instance-types",
        "t3.large",
        "--labels",
        "role=worker",
        "--taints",
        "key=dedicated,value=gpu,effect=NO_SCHEDULE",
    ]);
    assert!(
        ng["nodegroup"]["nodegroupArn"]
            .as_str()
            .unwrap()
            .starts_with("arn:aws:eks:us-east-1:000000000000:nodegroup/demo/ng1/")
    );
    aws.ok(&[
        "wait",
        "nodegroup-active",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
    ]);
    let pool = |registry: &kemu::ClusterRegistry| {
        let scope = kemu::shared::OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        };
        registry.find(&scope, "demo").unwrap().node_pools
    };
    let pools = pool(registry);
    assert_eq!(pools.len(), 1);
    assert_eq!(
        (pools[0].count, pools[0].machine_type.as_str()),
        (2, "t3.large")
    );
    for (k, v) in [
        ("eks.amazonaws.com/nodegroup", "ng1"),
        ("eks.amazonaws.com/capacityType", "ON_DEMAND"),
        ("node.kubernetes.io/instance-type", "t3.large"),
        ("topology.kubernetes.io/region", "us-east-1"),
        ("role", "worker"),
    ] {
        assert_eq!(
            pools[0].labels.get(k).map(String::as_str),
            Some(v),
            "{k}: {:?}",
            pools[0].labels
        );
    }
    assert_eq!(pools[0].taints[0].effect, "NoSchedule");
    // kubectl sees the group's two Nodes, labelled and tainted as EKS does.
    let listed = nodes(aws, &kc);
    assert_eq!(listed.len(), 2, "{listed:?}");
    for node in &listed {
        let labels = &node["metadata"]["labels"];
        assert_eq!(labels["eks.amazonaws.com/nodegroup"], "ng1", "{node}");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "t3.large");
        assert_eq!(labels["role"], "worker");
        assert_eq!(
            node["spec"]["taints"][0],
            serde_json::json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
        );
    }

    // Scaling is an update that reaches Successful; the pool follows.
    let upd = aws.json(&[
        "update-nodegroup-config",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
        "--scaling-config",
        "desiredSize=3",
    ]);
    let id = upd["update"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        upd["update"]["params"][0],
        serde_json::json!({"type": "DesiredSize", "value": "3"})
    );
    let d = aws.json(&[
        "describe-update",
        "--name",
        "demo",
        "--update-id",
        &id,
        "--nodegroup-name",
        "ng1",
    ]);
    assert_eq!(d["update"]["status"], "Successful");
    assert_eq!(pool(registry)[0].count, 3);
    let selected = aws.kubectl(
        &kc,
        &[
            "get",
            "nodes",
            "-l",
            "eks.amazonaws.com/nodegroup=ng1",
            "-o",
            "name",
        ],
    );
    assert!(selected.status.success(), "{}", text(&selected));
    assert_eq!(
        String::from_utf8_lossy(&selected.stdout).lines().count(),
        3,
        "{}",
        text(&selected)
    );

    // Dropping the taint through the facade frees the Nodes for ordinary
    // pods: a Deployment rolls out on them.
    aws.ok(&[
        "update-nodegroup-config",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
        "--taints",
        "removeTaints=[{key=dedicated,value=gpu,effect=NO_SCHEDULE}]",
    ]);
    assert!(
        nodes(aws, &kc)
            .iter()
            .all(|n| n["spec"]["taints"].is_null()),
        "taints left on the Nodes"
    );
    let out = aws.kubectl(
        &kc,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = aws.kubectl(
        &kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("successfully rolled out"),
        "{}",
        text(&out)
    );
    let out = aws.kubectl(&kc, &["get", "pods", "-l", "app=web", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let pods: Value = serde_json::from_slice(&out.stdout).unwrap();
    let placed: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str())
        .collect();
    assert_eq!(placed.len(), 2, "{pods}");
    let names: Vec<String> = nodes(aws, &kc)
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        placed.iter().all(|p| names.iter().any(|n| n == p)),
        "{placed:?} on {names:?}"
    );
    // Both node group updates (scaling, taints) are listed.
    let ids = aws.json(&["list-updates", "--name", "demo", "--nodegroup-name", "ng1"]);
    let ids = ids["updateIds"].as_array().unwrap();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&Value::String(id.clone())), "{ids:?}");
    // "No changes needed" is an InvalidParameterException.
    let out = aws.eks(&[
        "update-nodegroup-config",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
        "--scaling-config",
        "desiredSize=3",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(InvalidParameterException)"),
        "{}",
        text(&out)
    );

    // Cluster version, one minor at a time.
    let v = aws.json(&[
        "update-cluster-version",
        "--name",
        "demo",
        "--kubernetes-version",
        "1.33",
    ]);
    assert_eq!(v["update"]["type"], "VersionUpdate");
    assert_eq!(
        aws.json(&["describe-cluster", "--name", "demo"])["cluster"]["version"],
        "1.33"
    );
    // /version follows the upgrade, through kubectl version and the raw path.
    let v = server_version(aws, &kc);
    assert_eq!(
        (&v["major"], &v["minor"]),
        (&"1".into(), &"33".into()),
        "{v}"
    );
    assert_eq!(v["gitVersion"], "v1.33.0-eks-kemu", "{v}");
    let out = aws.kubectl(&kc, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", text(&out));
    let raw: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(raw["minor"], "33", "{raw}");
    let out = aws.eks(&[
        "update-cluster-version",
        "--name",
        "demo",
        "--kubernetes-version",
        "1.32",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(InvalidParameterException)"),
        "{}",
        text(&out)
    );

    // Add-ons.
    aws.ok(&[
        "create-addon",
        "--cluster-name",
        "demo",
        "--addon-name",
        "vpc-cni",
    ]);
    aws.ok(&[
        "wait",
        "addon-active",
        "--cluster-name",
        "demo",
        "--addon-name",
        "vpc-cni",
    ]);
    assert_eq!(
        aws.json(&["list-addons", "--cluster-name", "demo"])["addons"],
        serde_json::json!(["vpc-cni"])
    );
    let versions = aws.json(&[
        "describe-addon-versions",
        "--kubernetes-version",
        "1.33",
        "--addon-name",
        "coredns",
    ]);
    assert_eq!(versions["addons"][0]["addonName"], "coredns");

    // Access entries and policies; the creator's bootstrap entry is there.
    let dev = "arn:aws:iam::123456789012:role/dev";
    aws.ok(&[
        "create-access-entry",
        "--cluster-name",
        "demo",
        "--principal-arn",
        dev,
        "--kubernetes-groups",
        "devs",
    ]);
    aws.ok(&[
        "associate-access-policy",
        "--cluster-name",
        "demo",
        "--principal-arn",
        dev,
        "--policy-arn",
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
        "--access-scope",
        "type=namespace,namespaces=ns1,ns2",
    ]);
    let entries = aws.json(&["list-access-entries", "--cluster-name", "demo"]);
    assert_eq!(
        entries["accessEntries"],
        serde_json::json!(["arn:aws:iam::000000000000:user/test", dev])
    );
    let assoc = aws.json(&[
        "list-associated-access-policies",
        "--cluster-name",
        "demo",
        "--principal-arn",
        dev,
    ]);
    assert_eq!(
        assoc["associatedAccessPolicies"][0]["accessScope"]["namespaces"],
        serde_json::json!(["ns1", "ns2"])
    );

    // Tags by ARN, on the cluster and on a node group.
    let arn = "arn:aws:eks:us-east-1:000000000000:cluster/demo";
    aws.ok(&[
        "tag-resource",
        "--resource-arn",
        arn,
        "--tags",
        "owner=me,cost=1",
    ]);
    aws.ok(&[
        "untag-resource",
        "--resource-arn",
        arn,
        "--tag-keys",
        "owner",
        "team",
    ]);
    assert_eq!(
        aws.json(&["list-tags-for-resource", "--resource-arn", arn])["tags"],
        serde_json::json!({"cost": "1"})
    );
    let ng_arn = ng["nodegroup"]["nodegroupArn"].as_str().unwrap();
    aws.ok(&["tag-resource", "--resource-arn", ng_arn, "--tags", "x=y"]);
    assert_eq!(
        aws.json(&[
            "describe-nodegroup",
            "--cluster-name",
            "demo",
            "--nodegroup-name",
            "ng1"
        ])["nodegroup"]["tags"]["x"],
        "y"
    );
    let out = aws.eks(&[
        "list-tags-for-resource",
        "--resource-arn",
        "arn:aws:eks:us-east-1:000000000000:cluster/nope",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(NotFoundException)"),
        "{}",
        text(&out)
    );

    // Deletion: refused while a node group remains, then the waiters.
    let out = aws.eks(&["delete-cluster", "--name", "demo"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(ResourceInUseException)"),
        "{}",
        text(&out)
    );
    let del = aws.json(&[
        "delete-nodegroup",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
    ]);
    assert_eq!(del["nodegroup"]["status"], "DELETING");
    aws.ok(&[
        "wait",
        "nodegroup-deleted",
        "--cluster-name",
        "demo",
        "--nodegroup-name",
        "ng1",
    ]);
    assert!(pool(registry).is_empty());
    let del = aws.json(&["delete-cluster", "--name", "demo"]);
    assert_eq!(del["cluster"]["status"], "DELETING");
    aws.ok(&["wait", "cluster-deleted", "--name", "demo"]);
    let out = aws.eks(&["describe-cluster", "--name", "demo"]);
    assert_eq!(out.status.code(), Some(255));
}

/// Without a data plane the cluster is ACTIVE (waiters and terraform need it)
/// but shows the sentinel endpoint and no CA. update-kubeconfig checks only
/// the status, client-side, so it writes the sentinel server; kubectl then
/// fails at once, naming the sentinel host.
#[actix_web::test]
async fn without_dataplane_the_kubeconfig_names_the_sentinel() {
    let sandbox = Sandbox::new();
    let running = start(
        Kemu::builder().dataplane(false).build().unwrap(),
        &sandbox.path("run"),
    );
    let endpoint = running.ready.eks.clone();
    blocking(move || {
        let aws = Aws::new(&sandbox, &endpoint);
        dark_flow(&aws, &sandbox);
    })
    .await;
    running.stop().await;
}

fn dark_flow(aws: &Aws, sandbox: &Sandbox) {
    create(aws, "dark");
    aws.ok(&["wait", "cluster-active", "--name", "dark"]);
    let d = aws.json(&["describe-cluster", "--name", "dark"]);
    assert_eq!(
        d["cluster"]["endpoint"],
        "https://dataplane-not-live.kemu.invalid:443"
    );
    assert_eq!(d["cluster"]["certificateAuthority"], serde_json::json!({}));
    let kc = sandbox.path("dark.kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "dark",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let out = aws.kubectl(&kc, &["get", "--raw", "/version"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("dataplane-not-live.kemu.invalid"),
        "{}",
        text(&out)
    );
}
