//! The authz module's answers read by the real kubectl, on their own (tests/authz_e2e.rs
//! covers them wired into the engine): a bare HTTP server routes every request through
//! `authz::check_request` and serves the access reviews from the same
//! authorizer, so the 403 wording, `auth can-i` and `auth can-i --list` are
//! checked against kubectl's own parsing and printing.

mod common;

use std::sync::mpsc;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use common::{Sandbox, text};
use kemu_dataplane::authz::{
    self, Authorizer, Layered, MemorySource, Mode, bootstrap, impersonation, review, rules,
};
use kemu_shared::UserInfo;
use serde_json::{Value, json};

/// The cluster's own RBAC objects: `ci` in `dev` may read pods and create deployments.
fn own() -> MemorySource {
    MemorySource::new([
        json!({"kind":"Role","metadata":{"name":"ci","namespace":"dev"},"rules":[
            {"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]},
            {"apiGroups":["apps"],"resources":["deployments"],"verbs":["create"]}]}),
        json!({"kind":"RoleBinding","metadata":{"name":"ci","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"ci"},
            "subjects":[{"kind":"ServiceAccount","name":"ci","namespace":"dev"}]}),
    ])
}

/// Who calls: kubectl sends no bearer token over plain HTTP, so each
/// listener stands for one caller, as an authenticator would have found it.
fn user_of(who: &str) -> UserInfo {
    match who {
        "ci" => UserInfo {
            username: "system:serviceaccount:dev:ci".into(),
            groups: rules::service_account_groups("dev"),
            ..Default::default()
        },
        "admin" => UserInfo {
            username: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        },
        _ => UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        },
    }
}

/// Minimal legacy discovery, so kubectl can map `pods`, `secrets`, `deployments`.
fn discovery(path: &str) -> Option<Value> {
    let res = |name: &str, kind: &str| {
        json!({"name":name,"singularName":"","namespaced":true,"kind":kind,
        "verbs":["create","delete","get","list","patch","update","watch"]})
    };
    Some(match path {
        "/api" => json!({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}),
        "/apis" => json!({"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps",
            "versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}),
        "/api/v1" => json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1",
            "resources":[res("pods","Pod"),res("secrets","Secret")]}),
        "/apis/apps/v1" => {
            json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1",
            "resources":[res("deployments","Deployment")]})
        }
        _ => return None,
    })
}

async fn handle(req: HttpRequest, body: web::Bytes, who: web::Data<String>) -> HttpResponse {
    let (boot, own) = (bootstrap::source(), own());
    let src = Layered(vec![&boot, &own]);
    let mut user = user_of(who.as_str());
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    match impersonation::impersonate(&Authorizer::new(Mode::Rbac, &src), &user, &headers) {
        Ok(Some(as_user)) => user = as_user,
        Ok(None) => {}
        Err(impersonation::Refusal::Forbidden(f)) => {
            return HttpResponse::Forbidden().json(f.status());
        }
        Err(impersonation::Refusal::BadRequest(m)) => return HttpResponse::BadRequest().body(m),
    }
    let attrs = match authz::check_request(
        Mode::Rbac,
        &src,
        user.clone(),
        req.method().as_str(),
        req.path(),
        req.query_string(),
    ) {
        Ok(a) => a,
        Err(f) => return HttpResponse::Forbidden().json(f.status()),
    };
    if let Some(d) = discovery(req.path()) {
        return HttpResponse::Ok().json(d);
    }
    let protobuf = req.headers().get("content-type").is_some_and(|c| {
        c.as_bytes()
            .starts_with(b"application/vnd.kubernetes.protobuf")
    });
    let body: Value = if protobuf {
        kemu_dataplane::api::protobuf::decode(&body).unwrap_or(Value::Null)
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    let authorizer = Authorizer::new(Mode::Rbac, &src);
    let answer = match (attrs.resource.as_str(), attrs.verb.as_str()) {
        ("selfsubjectaccessreviews", "create") => {
            review::self_subject_access_review(&authorizer, &user, &body)
        }
        ("selfsubjectrulesreviews", "create") => {
            review::self_subject_rules_review(&authorizer, &user, &body)
        }
        ("pods", "list") => {
            Ok(json!({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}))
        }
        _ => {
            return HttpResponse::NotFound().json(json!({"kind":"Status","apiVersion":"v1",
                "status":"Failure","reason":"NotFound","code":404,"message":"not served by this test"}));
        }
    };
    match answer {
        Ok(v) => HttpResponse::Created().json(v),
        Err(e) => actix_web::ResponseError::error_response(&e),
    }
}

fn serve(who: &str) -> u16 {
    let (tx, rx) = mpsc::channel();
    let who = who.to_owned();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(web::Data::new(who.clone()))
                    .default_service(web::to(handle))
            })
            .workers(1)
            .bind(("127.0.0.1", 0))
            .expect("bind");
            tx.send(server.addrs()[0].port()).expect("send port");
            server.run().await.expect("run");
        });
    });
    rx.recv().expect("port")
}

fn kubeconfig(sandbox: &Sandbox, port: u16, who: &str) -> std::path::PathBuf {
    let path = sandbox.path(&format!("{who}.kubeconfig"));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\n\
         users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: dev\n\
         current-context: c\n"
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

#[test]
fn kubectl_reads_rbac_answers_as_from_a_real_cluster() {
    let sandbox = Sandbox::new();
    let ci = kubeconfig(&sandbox, serve("ci"), "ci");

    let out = sandbox.kubectl(&ci, &["get", "pods"]);
    assert!(out.status.success(), "{}", text(&out));

    let out = sandbox.kubectl(&ci, &["get", "secrets"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): secrets is forbidden: User \"system:serviceaccount:dev:ci\" cannot list resource \"secrets\" in API group \"\" in the namespace \"dev\"",
        "{}",
        text(&out)
    );
    let out = sandbox.kubectl(&ci, &["get", "pods", "-n", "prod"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot list resource \"pods\" in API group \"\" in the namespace \"prod\""),
        "{}",
        text(&out)
    );

    for (args, want) in [
        (&["auth", "can-i", "list", "pods"][..], "yes"),
        (&["auth", "can-i", "create", "deployments.apps"][..], "yes"),
        (&["auth", "can-i", "delete", "pods"][..], "no"),
        (&["auth", "can-i", "list", "pods", "-n", "prod"][..], "no"),
    ] {
        let out = sandbox.kubectl(&ci, args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "{args:?}: {}",
            text(&out)
        );
    }

    let out = sandbox.kubectl(&ci, &["auth", "can-i", "--list"]);
    assert!(out.status.success(), "{}", text(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    let row = |resource: &str, verbs: &str| {
        listing.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.first() == Some(&resource) && l.trim_end().ends_with(verbs)
        })
    };
    assert!(row("pods", "[get list watch]"), "{listing}");
    assert!(row("deployments.apps", "[create]"), "{listing}");
    assert!(
        row("selfsubjectaccessreviews.authorization.k8s.io", "[create]"),
        "{listing}"
    );
    assert!(listing.contains("[/version]"), "{listing}");

    // Impersonation: an admin acts as the ServiceAccount; the ServiceAccount
    // may not act as anyone.
    let admin = kubeconfig(&sandbox, serve("admin"), "admin");
    let out = sandbox.kubectl(
        &admin,
        &["get", "secrets", "--as", "system:serviceaccount:dev:ci"],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("User \"system:serviceaccount:dev:ci\" cannot list resource \"secrets\""),
        "{}",
        text(&out)
    );
    let out = sandbox.kubectl(
        &admin,
        &[
            "auth",
            "can-i",
            "list",
            "pods",
            "--as",
            "system:serviceaccount:dev:ci",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "yes",
        "{}",
        text(&out)
    );
    let out = sandbox.kubectl(&ci, &["get", "pods", "--as", "alice"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "users \"alice\" is forbidden: User \"system:serviceaccount:dev:ci\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        ),
        "{}",
        text(&out)
    );

    // Anonymous callers reach /version (system:public-info-viewer), not the API.
    let anon = kubeconfig(&sandbox, serve("anonymous"), "anonymous");
    let out = sandbox.kubectl(&anon, &["get", "--raw", "/api"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("forbidden: User \\\"system:anonymous\\\" cannot get path \\\"/api\\\"")
            || String::from_utf8_lossy(&out.stderr)
                .contains("forbidden: User \"system:anonymous\" cannot get path \"/api\""),
        "{}",
        text(&out)
    );
}
