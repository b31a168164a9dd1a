//! Azure RBAC for Kubernetes on AKS, through the real az and kubectl: on a
//! cluster created with `--enable-aad --enable-azure-rbac`, `az role
//! assignment create --role "Azure Kubernetes Service RBAC Reader"` (role
//! definition looked up by name, then `PUT
//! {scope}/providers/Microsoft.Authorization/roleAssignments/{name}`) scoped
//! to one namespace lets that principal's Azure AD token read there and
//! nowhere else, and write nowhere.

mod common;

use common::aks::{az, az_ok, blocking, login, serve};
use common::{Sandbox, text};
use kemu::Kemu;
use kemu::shared::kubeconfig::{self, UserAuth};

#[actix_web::test]
async fn azure_role_assignments_authorize_on_aks() {
    let kemu = Kemu::builder().build().unwrap();
    let sandbox = Sandbox::new();
    let dev_sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    blocking(move || flow(&kemu, &sandbox, &dev_sandbox, &arm, &ca)).await;
    served.running.stop().await;
}

fn flow(kemu: &Kemu, sb: &Sandbox, dev_sb: &Sandbox, arm: &str, ca: &std::path::Path) {
    let out = login(sb, arm, ca, "11111111-2222-3333-4444-555555555555", "s");
    assert!(out.status.success(), "{}", text(&out));
    az_ok(sb, ca, &["group", "create", "-n", "rg1", "-l", "eastus"]);
    az_ok(
        sb,
        ca,
        &[
            "aks",
            "create",
            "-g",
            "rg1",
            "-n",
            "c1",
            "--node-count",
            "1",
            "--generate-ssh-keys",
            "--enable-aad",
            "--enable-azure-rbac",
        ],
    );
    let cluster_id = az_ok(
        sb,
        ca,
        &[
            "aks", "show", "-g", "rg1", "-n", "c1", "--query", "id", "-o", "tsv",
        ],
    )
    .trim()
    .to_owned();
    // The admin credential's client certificate makes the namespaces.
    let admin_kc = sb.path("admin.kubeconfig");
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
            admin_kc.to_str().unwrap(),
        ],
    );
    for ns in ["team", "other"] {
        let out = sb.kubectl(&admin_kc, &["create", "namespace", ns]);
        assert!(out.status.success(), "{}", text(&out));
        let out = sb.kubectl(&admin_kc, &["run", "app", "--image=nginx", "-n", ns]);
        assert!(out.status.success(), "{}", text(&out));
    }

    // Another service principal's Azure AD token for the AKS server app.
    let out = login(dev_sb, arm, ca, "66666666-7777-8888-9999-000000000000", "s");
    assert!(out.status.success(), "{}", text(&out));
    let token = az_ok(
        dev_sb,
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
    let token = token.trim().to_owned();
    let oid = kemu_aks::identity::claims(&token).unwrap()["oid"]
        .as_str()
        .unwrap()
        .to_owned();
    let record = kemu.registry().list(|r| r.name == "c1").remove(0);
    let dev_kc = dev_sb.path("dev.kubeconfig");
    std::fs::write(
        &dev_kc,
        kubeconfig::render(
            "c1",
            &kemu::shared::advertise(&record).server_url().unwrap(),
            record.ca.cert_pem(),
            "dev",
            &UserAuth::Token(token),
        ),
    )
    .unwrap();
    let dev = |args: &[&str]| dev_sb.kubectl(&dev_kc, args);
    let forbidden = |verb: &str, ns: &str| {
        format!(
            "Error from server (Forbidden): pods is forbidden: User \"{oid}\" cannot {verb} resource \"pods\" in API group \"\" in the namespace \"{ns}\""
        )
    };
    let out = dev(&["get", "pods", "-n", "team"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        forbidden("list", "team")
    );

    // A role name az resolves through the role definitions it lists.
    let out = az(
        sb,
        ca,
        &[
            "role",
            "assignment",
            "create",
            "--role",
            "Azure Kubernetes Service RBAC Reader",
            "--assignee-object-id",
            &oid,
            "--assignee-principal-type",
            "ServicePrincipal",
            "--scope",
            &format!("{cluster_id}/namespaces/team"),
            "-o",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let assignment: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(assignment["principalId"], oid.as_str());
    assert_eq!(
        assignment["roleDefinitionId"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next(),
        Some("7f6c6a51-bcf8-42ba-9220-52d62157d7db")
    );

    let out = dev(&["get", "pods", "-n", "team", "-o", "name"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "pod/app");
    let out = dev(&["get", "pods", "-n", "other"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        forbidden("list", "other")
    );
    let out = dev(&["run", "mine", "--image=nginx", "-n", "team"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        forbidden("create", "team")
    );
    // An unknown role is refused by az, as against Azure.
    let out = az(
        sb,
        ca,
        &[
            "role",
            "assignment",
            "create",
            "--role",
            "No Such Role",
            "--assignee-object-id",
            &oid,
            "--assignee-principal-type",
            "ServicePrincipal",
            "--scope",
            &cluster_id,
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
}
