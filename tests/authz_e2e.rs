//! RBAC enforced on a kemu cluster, read by the real kubectl: a user with no
//! bindings gets upstream's 403, a RoleBinding to `view` opens one namespace,
//! `auth can-i` (and `--list`), `--as` impersonation, `auth whoami`,
//! anonymous access to the public-info paths only, and the allow-all mode.

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{Sandbox, eks_spec, https_client, text, write_kubeconfig};
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::{ClusterRecord, advertise};
use kemu::{Kemu, Mode};
use serde_json::Value;

struct Cluster {
    _kemu: Kemu,
    record: ClusterRecord,
    sandbox: Sandbox,
    admin: PathBuf,
    jane: PathBuf,
}

impl Cluster {
    fn new(mode: Mode) -> Self {
        let kemu = Kemu::builder().authorization(mode).build().unwrap();
        let record = kemu.registry().create(eks_spec("rbac")).unwrap();
        let sandbox = Sandbox::new();
        let admin = sandbox.path("admin.kubeconfig");
        write_kubeconfig(&admin, &record, record.ca.cert_pem(), kemu.clock().now());
        // A client certificate CN=jane with no O: user "jane", no groups.
        let jane = sandbox.path("jane.kubeconfig");
        let cert = record
            .ca
            .client_cert("jane", &[], kemu.clock().now())
            .unwrap();
        let server = advertise(&record).server_url().unwrap();
        let auth = UserAuth::ClientCert {
            cert_pem: cert.cert_pem,
            key_pem: cert.key_pem,
        };
        std::fs::write(
            &jane,
            kubeconfig::render("rbac", &server, record.ca.cert_pem(), "jane", &auth),
        )
        .unwrap();
        Self {
            _kemu: kemu,
            record,
            sandbox,
            admin,
            jane,
        }
    }

    fn admin(&self, args: &[&str]) -> Output {
        self.sandbox.kubectl(&self.admin, args)
    }

    fn jane(&self, args: &[&str]) -> Output {
        self.sandbox.kubectl(&self.jane, args)
    }
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn refused(out: Output) -> String {
    assert!(!out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stderr).trim().to_owned()
}

#[test]
fn rbac_is_enforced_as_on_a_real_cluster() {
    let c = Cluster::new(Mode::Rbac);
    ok(c.admin(&["create", "namespace", "dev"]));
    ok(c.admin(&["create", "namespace", "other"]));

    // No binding: upstream's 403 line, word for word.
    assert_eq!(
        refused(c.jane(&["get", "pods", "-n", "dev"])),
        "Error from server (Forbidden): pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"dev\""
    );

    // The bootstrap roles are stored, as on a real cluster.
    let roles: Value =
        serde_json::from_str(&ok(c.admin(&["get", "clusterrole", "view", "-o", "json"]))).unwrap();
    assert!(roles["aggregationRule"].is_object());

    ok(c.admin(&[
        "create",
        "rolebinding",
        "jane-view",
        "--clusterrole=view",
        "--user=jane",
        "-n",
        "dev",
    ]));
    let listed = ok(c.jane(&["get", "pods", "-n", "dev"]));
    assert!(listed.is_empty(), "{listed}");
    assert!(
        refused(c.jane(&["get", "pods", "-n", "other"])).ends_with(
            "cannot list resource \"pods\" in API group \"\" in the namespace \"other\""
        )
    );
    assert!(
        refused(c.jane(&["create", "configmap", "x", "-n", "dev"]))
            .contains("User \"jane\" cannot create resource \"configmaps\"")
    );

    // kubectl auth can-i (a protobuf SelfSubjectAccessReview).
    assert_eq!(
        ok(c.jane(&["auth", "can-i", "list", "pods", "-n", "dev"])).trim(),
        "yes"
    );
    let no = c.jane(&["auth", "can-i", "create", "pods", "-n", "dev"]);
    assert_eq!(no.status.code(), Some(1), "{}", text(&no));
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    let no = c.jane(&["auth", "can-i", "list", "pods", "-n", "other"]);
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    assert_eq!(ok(c.admin(&["auth", "can-i", "*", "*"])).trim(), "yes");

    // SubjectAccessReview and LocalSubjectAccessReview, as an admin creates them.
    let reviews = c.sandbox.path("reviews.yaml");
    std::fs::write(
        &reviews,
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: jane\n  \
         resourceAttributes: {verb: list, resource: pods, namespace: dev}\n---\n\
         apiVersion: authorization.k8s.io/v1\nkind: LocalSubjectAccessReview\nmetadata: {namespace: other}\n\
         spec:\n  user: jane\n  resourceAttributes: {verb: list, resource: pods, namespace: other}\n",
    )
    .unwrap();
    let out = ok(c.admin(&["create", "-f", reviews.to_str().unwrap(), "-o", "json"]));
    // kubectl prints one JSON document per created object.
    let answers: Vec<Value> = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(answers.len(), 2, "{out}");
    assert_eq!(answers[0]["kind"], "SubjectAccessReview");
    assert_eq!(answers[0]["status"]["allowed"], true, "{out}");
    assert_eq!(answers[1]["kind"], "LocalSubjectAccessReview");
    assert_eq!(answers[1]["status"]["allowed"], false, "{out}");
    let denied = refused(c.jane(&[
        "create",
        "--validate=false",
        "-f",
        reviews.to_str().unwrap(),
    ]));
    assert!(
        denied.contains("cannot create resource \"subjectaccessreviews\""),
        "{denied}"
    );

    // kubectl auth can-i --list (a SelfSubjectRulesReview).
    let list = ok(c.jane(&["auth", "can-i", "--list", "-n", "dev"]));
    let pods = list
        .lines()
        .find(|l| l.starts_with("pods "))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(pods.contains("[get list watch]"), "{list}");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );
    let other = ok(c.jane(&["auth", "can-i", "--list", "-n", "other"]));
    assert!(!other.lines().any(|l| l.starts_with("pods ")), "{other}");

    // Impersonation: allowed for the admin, refused to jane.
    ok(c.admin(&["get", "pods", "-n", "dev", "--as", "jane"]));
    assert!(
        refused(c.admin(&["get", "pods", "-n", "other", "--as", "jane"]))
            .contains("User \"jane\" cannot list resource \"pods\"")
    );
    assert_eq!(
        refused(c.jane(&["get", "pods", "-n", "dev", "--as", "kemu-admin"])),
        "Error from server (Forbidden): users \"kemu-admin\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    let who: Value = serde_json::from_str(&ok(c.admin(&[
        "auth",
        "whoami",
        "--as",
        "bob",
        "--as-group",
        "devs",
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );

    // kubectl auth whoami.
    let who: Value = serde_json::from_str(&ok(c.jane(&["auth", "whoami", "-o", "json"]))).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "jane");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["system:authenticated"])
    );

    // Anonymous: the public-info paths only.
    let server = advertise(&c.record).server_url().unwrap();
    let client = https_client(c.record.ca.cert_pem());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (api, api_body, version) = rt.block_on(async {
        let api = client.get(format!("{server}/api")).send().await.unwrap();
        let code = api.status().as_u16();
        let body: Value = api.json().await.unwrap();
        let version = client
            .get(format!("{server}/version"))
            .send()
            .await
            .unwrap();
        (code, body, version.status().as_u16())
    });
    assert_eq!(api, 403);
    assert_eq!(
        api_body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    assert_eq!(api_body["reason"], "Forbidden");
    assert_eq!(version, 200);

    // Escalation: as a namespace admin jane may bind roles she holds, never
    // more than she holds.
    ok(c.admin(&[
        "create",
        "rolebinding",
        "jane-admin",
        "--clusterrole=admin",
        "--user=jane",
        "-n",
        "dev",
    ]));
    ok(c.jane(&[
        "create",
        "rolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
        "-n",
        "dev",
    ]));
    let denied = refused(c.jane(&[
        "create",
        "rolebinding",
        "bob-root",
        "--clusterrole=cluster-admin",
        "--user=bob",
        "-n",
        "dev",
    ]));
    assert!(
        denied.starts_with("error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io \"bob-root\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:"),
        "{denied}"
    );
    // Nothing was stored.
    assert_eq!(
        refused(c.jane(&["get", "rolebinding", "bob-root", "-n", "dev"])),
        "Error from server (NotFound): rolebindings.rbac.authorization.k8s.io \"bob-root\" not found"
    );
}

#[test]
fn allow_all_lets_anyone_do_anything() {
    let c = Cluster::new(Mode::AllowAll);
    ok(c.jane(&["create", "namespace", "dev"]));
    ok(c.jane(&["create", "configmap", "x", "-n", "dev"]));
    ok(c.jane(&["get", "pods", "-n", "dev"]));
    ok(c.jane(&["get", "nodes"]));
    assert_eq!(
        ok(c.jane(&["auth", "can-i", "delete", "nodes"])).trim(),
        "yes"
    );
    ok(c.jane(&["get", "pods", "-n", "dev", "--as", "someone"]));
}
