//! Each cloud's identities in the cluster's authorization, through the real
//! aws CLI and kubectl: the EKS cluster creator is admin by its bootstrap
//! access entry; an IAM role given an access entry with AmazonEKSViewPolicy
//! scoped to one namespace (`aws eks create-access-entry` +
//! `associate-access-policy`) lists pods there and nowhere else through
//! `aws eks get-token`; a principal without an entry gets 401 as EKS
//! answers; a malformed token and a client certificate from another CA get
//! 401 and change nothing. In the `CONFIG_MAP` mode the creator is admin
//! implicitly (`kubernetes-admin`, not in `aws-auth`, no access entry)
//! unless `bootstrapClusterCreatorAdminPermissions` is false.

mod common;
mod eks_support;

use common::{Sandbox, text};
use eks_support::{Aws, blocking, start};
use kemu::Kemu;
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::pki::ClusterCa;
use kemu::shared::{OwnerScope, advertise};

const ACCOUNT: &str = "000000000000";

fn settings() -> kemu_eks::Settings {
    let mut settings = kemu_eks::Settings::default();
    for (key, principal) in [
        (
            "viewer",
            format!("arn:aws:sts::{ACCOUNT}:assumed-role/viewer/ci"),
        ),
        ("nobody", format!("arn:aws:iam::{ACCOUNT}:user/nobody")),
    ] {
        settings.credentials.insert(
            key.into(),
            kemu_eks::Credential {
                secret: key.into(),
                principal_arn: principal,
            },
        );
    }
    settings
}

#[actix_web::test]
async fn eks_access_entries_and_policies_authorize_as_on_eks() {
    let sandbox = Sandbox::new();
    let kemu = Kemu::builder().eks_settings(settings()).build().unwrap();
    let running = start(kemu.clone(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || flow(&kemu, &sandbox, &endpoint)).await;
    running.stop().await;
}

fn flow(kemu: &Kemu, sandbox: &Sandbox, endpoint: &str) {
    let admin = Aws::new(sandbox, endpoint);
    admin.ok(&[
        "create-cluster",
        "--name",
        "demo",
        "--role-arn",
        "arn:aws:iam::000000000000:role/eks",
        "--resources-vpc-config",
        "subnetIds=subnet-a",
    ]);
    let kc = sandbox.path("eks.kubeconfig");
    admin.ok(&[
        "update-kubeconfig",
        "--name",
        "demo",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let run = |aws: &Aws, args: &[&str]| aws.kubectl(&kc, args);
    let ok = |aws: &Aws, args: &[&str]| -> String {
        let out = run(aws, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let refused = |aws: &Aws, args: &[&str]| -> String {
        let out = run(aws, args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stderr).trim().to_owned()
    };

    // The creator is admin by its bootstrap entry.
    for ns in ["team", "other"] {
        ok(&admin, &["create", "namespace", ns]);
        ok(&admin, &["run", "app", "--image=nginx", "-n", ns]);
    }

    // A role with no access entry is not mapped: 401, as EKS answers.
    let mut viewer = Aws::new(sandbox, endpoint);
    viewer.access_key = "viewer".into();
    assert_eq!(
        refused(&viewer, &["get", "pods", "-n", "team"]),
        "error: You must be logged in to the server (Unauthorized)"
    );

    let role = format!("arn:aws:iam::{ACCOUNT}:role/viewer");
    admin.ok(&[
        "create-access-entry",
        "--cluster-name",
        "demo",
        "--principal-arn",
        &role,
    ]);
    // An entry without a policy authenticates but may do nothing.
    let denied = refused(&viewer, &["get", "pods", "-n", "team"]);
    assert_eq!(
        denied,
        format!(
            "Error from server (Forbidden): pods is forbidden: User \"arn:aws:sts::{ACCOUNT}:assumed-role/viewer/ci\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
        )
    );
    admin.ok(&[
        "associate-access-policy",
        "--cluster-name",
        "demo",
        "--principal-arn",
        &role,
        "--policy-arn",
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
        "--access-scope",
        "type=namespace,namespaces=team",
    ]);
    let listed = ok(&viewer, &["get", "pods", "-n", "team", "-o", "name"]);
    assert_eq!(listed.trim(), "pod/app");
    assert!(
        refused(&viewer, &["get", "pods", "-n", "other"]).ends_with(&format!(
            "User \"arn:aws:sts::{ACCOUNT}:assumed-role/viewer/ci\" cannot list resource \"pods\" in API group \"\" in the namespace \"other\""
        ))
    );
    assert!(
        refused(&viewer, &["create", "configmap", "x", "-n", "team"])
            .contains("cannot create resource \"configmaps\"")
    );
    assert_eq!(
        ok(&viewer, &["auth", "can-i", "list", "pods", "-n", "team"]).trim(),
        "yes"
    );
    let who: serde_json::Value =
        serde_json::from_str(&ok(&viewer, &["auth", "whoami", "-o", "json"])).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        format!("arn:aws:sts::{ACCOUNT}:assumed-role/viewer/ci")
    );
    assert_eq!(
        who["status"]["userInfo"]["extra"]["canonicalArn"],
        serde_json::json!([role])
    );

    // A user with no entry, nor an aws-auth mapping: 401.
    let mut nobody = Aws::new(sandbox, endpoint);
    nobody.access_key = "nobody".into();
    assert_eq!(
        refused(&nobody, &["get", "pods", "-n", "team"]),
        "error: You must be logged in to the server (Unauthorized)"
    );
    // Mapped by aws-auth (API_AND_CONFIG_MAP, EKS's default mode): in.
    ok(
        &admin,
        &[
            "create",
            "configmap",
            "aws-auth",
            "-n",
            "kube-system",
            &format!(
                "--from-literal=mapUsers=- userarn: arn:aws:iam::{ACCOUNT}:user/nobody\n  username: mapped-nobody\n  groups: [readers]\n"
            ),
        ],
    );
    assert!(
        refused(&nobody, &["get", "pods", "-n", "team"])
            .contains("User \"mapped-nobody\" cannot list resource \"pods\"")
    );

    // A malformed token: 401 saying why, nothing created.
    assert_eq!(
        refused(
            &admin,
            &[
                "--token",
                "k8s-aws-v1.not-a-token",
                "create",
                "namespace",
                "evil"
            ]
        ),
        "error: You must be logged in to the server (Unauthorized: token is not base64url)"
    );
    // A client certificate from another CA, even naming system:masters: 401.
    let scope = OwnerScope::Eks {
        account: ACCOUNT.into(),
        region: "us-east-1".into(),
    };
    let record = kemu.registry().find(&scope, "demo").unwrap();
    let now = kemu.clock().now();
    let stranger_ca = ClusterCa::generate("stranger", now).unwrap();
    let cert = stranger_ca
        .client_cert("intruder", &["system:masters".into()], now)
        .unwrap();
    let forged = sandbox.path("forged.kubeconfig");
    std::fs::write(
        &forged,
        kubeconfig::render(
            "demo",
            &advertise(&record).server_url().unwrap(),
            record.ca.cert_pem(),
            "intruder",
            &UserAuth::ClientCert {
                cert_pem: cert.cert_pem,
                key_pem: cert.key_pem,
            },
        ),
    )
    .unwrap();
    let out = sandbox.kubectl(&forged, &["create", "namespace", "evil"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: You must be logged in to the server (Unauthorized: the client certificate was not issued by cluster demo's CA (a kubeconfig from before a reset, or for another cluster?): get a fresh one with `aws eks update-kubeconfig --name demo --region us-east-1` (or `kemu kubeconfig demo`))"
    );
    assert!(
        refused(&admin, &["get", "namespace", "evil"]).contains("NotFound"),
        "nothing was created"
    );
}

#[actix_web::test]
async fn eks_config_map_creator_is_admin_implicitly() {
    let sandbox = Sandbox::new();
    let kemu = Kemu::builder().eks_settings(settings()).build().unwrap();
    let running = start(kemu.clone(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || config_map_flow(&sandbox, &endpoint)).await;
    running.stop().await;
}

fn config_map_flow(sandbox: &Sandbox, endpoint: &str) {
    let creator = Aws::new(sandbox, endpoint);
    let mut viewer = Aws::new(sandbox, endpoint);
    viewer.access_key = "viewer".into();
    for (name, bootstrap) in [("legacy", "true"), ("locked", "false")] {
        creator.ok(&[
            "create-cluster",
            "--name",
            name,
            "--role-arn",
            "arn:aws:iam::000000000000:role/eks",
            "--resources-vpc-config",
            "subnetIds=subnet-a",
            "--access-config",
            &format!(
                "authenticationMode=CONFIG_MAP,bootstrapClusterCreatorAdminPermissions={bootstrap}"
            ),
        ]);
    }
    let kubeconfig = |name: &str| {
        let kc = sandbox.path(&format!("{name}.kubeconfig"));
        creator.ok(&[
            "update-kubeconfig",
            "--name",
            name,
            "--kubeconfig",
            kc.to_str().unwrap(),
        ]);
        kc
    };
    let legacy = kubeconfig("legacy");
    let ok = |aws: &Aws, args: &[&str]| -> String {
        let out = aws.kubectl(&legacy, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // The creator is kubernetes-admin in system:masters, as EKS maps it.
    assert_eq!(
        ok(
            &creator,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}/{.status.userInfo.groups[0]}"
            ]
        ),
        "kubernetes-admin/system:masters"
    );
    ok(&creator, &["create", "namespace", "team"]);
    // Not through aws-auth (there is none) nor an access entry.
    let out = creator.kubectl(
        &legacy,
        &["get", "configmap", "aws-auth", "-n", "kube-system"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let entries = creator.json(&["list-access-entries", "--cluster-name", "legacy"]);
    assert_eq!(entries["accessEntries"], serde_json::json!([]));
    // Another role, unmapped: 401.
    let out = viewer.kubectl(&legacy, &["get", "pods", "-n", "team"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: You must be logged in to the server (Unauthorized)"
    );

    // Without the bootstrap permission the creator is no one either.
    let locked = kubeconfig("locked");
    let out = creator.kubectl(&locked, &["get", "pods"]);
    // kubectl's discovery (no cache for this server yet) is refused first.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.trim().lines().last().is_some_and(|l| l
            == "error: You must be logged in to the server (the server has asked for the client to provide credentials)"),
        "{stderr}"
    );
}
