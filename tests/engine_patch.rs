//! The patch family and server-side apply through real clients: kubectl
//! `patch --type strategic|merge|json` (a failing `test` changes nothing),
//! `set image`, `edit` with a scripted editor, `replace`, `apply
//! --server-side` by two managers with the conflict kubectl prints and
//! `--force-conflicts`, client-side to server-side apply migration, managed
//! fields shown by `--show-managed-fields`; kube-rs `Patch::Apply`.

mod common;

use common::{KubectlCluster, eks_spec, text};
use serde_json::{Value, json};

type Cluster = KubectlCluster;

/// kubectl hides managed fields unless asked.
trait ManagedJson {
    fn json_mf(&self, args: &[&str]) -> Value;
}

impl ManagedJson for KubectlCluster {
    fn json_mf(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--show-managed-fields");
        self.json(&all)
    }
}

fn cluster(name: &str) -> Cluster {
    KubectlCluster::new(eks_spec(name))
}

const DEPLOY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
      - name: sidecar
        image: busybox:1
"#;

fn containers(d: &Value) -> Vec<(String, String)> {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["image"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn manager<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == name)
}

#[test]
fn kubectl_patch_types_set_image_edit_and_replace() {
    let c = cluster("patches");
    let f = c.file("web.yaml", DEPLOY);
    c.ok(&["create", "-f", &f]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(
        manager(&d, "kubectl-create").unwrap()["operation"],
        "Update"
    );

    // Strategic: containers merge by name, env by name; an item new to the
    // list comes first, as kube-apiserver orders it.
    c.ok(&[
        "patch", "deploy", "web", "--type", "strategic", "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B","value":"2"}]}]}}}}"#,
    ]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    let nginx = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        nginx["env"],
        json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
    );
    assert_eq!(containers(&d).len(), 2);
    assert!(manager(&d, "kubectl-patch").is_some());

    // Strategic `$patch: delete` drops one container.
    c.ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#,
    ]);
    assert_eq!(
        containers(&c.json_mf(&["get", "deploy", "web"])),
        [("nginx".into(), "nginx:1.25".into())]
    );

    // Merge: labels merge, null deletes.
    c.ok(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"labels":{"tier":"front","app":null}}}"#,
    ]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"], json!({"tier": "front"}));

    // JSON patch with test, add, replace.
    c.ok(&[
        "patch", "deploy", "web", "--type", "json", "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":2},{"op":"add","path":"/metadata/labels/x~1y","value":"z"}]"#,
    ]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"]["x/y"], "z");
    let rv = d["metadata"]["resourceVersion"].clone();

    // A failing test: kubectl prints upstream's 422, the object is unchanged.
    let err = c.fails(&[
        "patch", "deploy", "web", "--type", "json", "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":7},{"op":"test","path":"/spec/replicas","value":1}]"#,
    ]);
    assert!(
        err.contains("the server rejected our request due to an error in our request"),
        "{err}"
    );
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["resourceVersion"], rv);

    // An invalid strategic patch (no merge key) is refused too.
    let err = c.fails(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
    ]);
    assert!(
        err.contains("does not contain declared merge key: name"),
        "{err}"
    );

    // set image: a strategic patch with $setElementOrder.
    c.ok(&["set", "image", "deploy/web", "nginx=nginx:1.27"]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(containers(&d), [("nginx".into(), "nginx:1.27".into())]);
    assert!(manager(&d, "kubectl-set").is_some());

    // edit, with a scripted editor.
    let editor = c.file(
        "editor.sh",
        "#!/bin/sh\nsed -i 's/replicas: 2/replicas: 4/' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = c
        .sandbox
        .command("kubectl")
        .env("KUBE_EDITOR", &editor)
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(["edit", "deploy", "web"])
        .output()
        .unwrap();
    assert!(out.status.success(), "edit: {}", text(&out));
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(
        manager(&d, "kubectl-edit").unwrap()["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
    assert!(
        manager(&d, "kubectl-patch").unwrap()["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none(),
        "the edit took spec.replicas from kubectl-patch"
    );

    // replace: the whole object, managed fields recorded for kubectl-replace.
    let mut d = c.json_mf(&["get", "deploy", "web"]);
    d["spec"]["replicas"] = json!(3);
    let f = c.file("replace.json", &d.to_string());
    c.ok(&["replace", "-f", &f]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert!(manager(&d, "kubectl-replace").is_some());

    // scale: recorded with its subresource, owning spec.replicas (taken
    // from kubectl-replace, whose only field it was: its entry goes).
    c.ok(&["scale", "deploy", "web", "--replicas=6"]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 6);
    // kubectl scale sends no fieldManager: the manager comes from the user agent.
    let e = manager(&d, "kubectl").unwrap();
    assert_eq!(e["subresource"], "scale");
    assert_eq!(e["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(manager(&d, "kubectl-replace").is_none());
}

const SSA: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {owner: ops}
data:
  a: "1"
  b: "2"
"#;

#[test]
fn kubectl_server_side_apply_conflicts_and_force() {
    let c = cluster("ssa");
    let f = c.file("cm.yaml", SSA);
    let out = c.ok(&["apply", "--server-side", "-f", &f]);
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let first = c.json_mf(&["get", "cm", "settings"]);
    let out = c.ok(&["apply", "--server-side", "-f", &f]);
    assert!(out.contains("serverside-applied"), "{out}");
    let again = c.json_mf(&["get", "cm", "settings"]);
    assert_eq!(
        again["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"],
        "a re-apply of the same configuration is a no-op"
    );
    let e = manager(&again, "kubectl").unwrap();
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert_eq!(e["fieldsV1"]["f:data"], json!({"f:a": {}, "f:b": {}}));

    // A second manager changing a field kubectl owns: the conflict kubectl prints.
    let other = c.file(
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"9\"\n",
    );
    let err = c.fails(&[
        "apply",
        "--server-side",
        "--field-manager",
        "ci",
        "-f",
        &other,
    ]);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
        "{err}"
    );
    assert_eq!(c.json_mf(&["get", "cm", "settings"])["data"]["a"], "1");
    let out = c.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "ci",
        "--force-conflicts",
        "-f",
        &other,
    ]);
    assert!(out.contains("serverside-applied"), "{out}");
    let d = c.json_mf(&["get", "cm", "settings"]);
    assert_eq!(d["data"]["a"], "9");
    assert!(
        manager(&d, "kubectl").unwrap()["fieldsV1"]["f:data"]
            .get("f:a")
            .is_none()
    );
    assert_eq!(
        manager(&d, "ci").unwrap()["fieldsV1"]["f:data"]["f:a"],
        json!({})
    );

    // kubectl stops applying b: it goes (nobody else owns it); a stays (ci owns it).
    let less = c.file("less.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {owner: ops}\ndata:\n  c: \"3\"\n");
    c.ok(&["apply", "--server-side", "-f", &less]);
    let d = c.json_mf(&["get", "cm", "settings"]);
    assert_eq!(d["data"], json!({"a": "9", "c": "3"}));

    // Managed fields are shown on request.
    let yaml = c.ok(&[
        "get",
        "cm",
        "settings",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(
        yaml.contains("managedFields:") && yaml.contains("manager: ci"),
        "{yaml}"
    );
    assert!(
        yaml.contains("fieldsType: FieldsV1") && yaml.contains("f:c: {}"),
        "{yaml}"
    );
    let plain = c.ok(&["get", "cm", "settings", "-o", "yaml"]);
    assert!(!plain.contains("managedFields"), "{plain}");
}

#[test]
fn client_side_apply_migrates_to_server_side() {
    let c = cluster("migrate");
    let f = c.file("web.yaml", DEPLOY);
    c.ok(&["apply", "-f", &f]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert!(manager(&d, "kubectl-client-side-apply").is_some());
    let scaled = c.file("web3.yaml", &DEPLOY.replace("replicas: 1", "replicas: 3"));
    // The fields client-side apply set are taken over without a conflict.
    c.ok(&["apply", "--server-side", "-f", &scaled]);
    let d = c.json_mf(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        manager(&d, "kubectl").unwrap()["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
    let la: Value = serde_json::from_str(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        la["spec"]["replicas"], 3,
        "the annotation follows the apply"
    );
    // Another manager still conflicts, naming the Update manager as upstream does.
    let other = c.file("web5.yaml", &DEPLOY.replace("replicas: 1", "replicas: 5"));
    let err = c.fails(&[
        "apply",
        "--server-side",
        "--field-manager",
        "ci",
        "-f",
        &other,
    ]);
    assert!(err.contains("conflict with \"kubectl\""), "{err}");
}

async fn kube_client(c: &Cluster) -> kube::Client {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&c.kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("not an API error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_server_side_apply() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::Api;
    use kube::api::{Patch, PatchParams};

    let c = cluster("kubers");
    let api: Api<Deployment> = Api::namespaced(kube_client(&c).await, "default");
    let cfg = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "api"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "app", "image": "app:1",
                    "ports": [{"containerPort": 8080}], "env": [{"name": "MODE", "value": "a"}]}]}}}
    });
    // Apply creates.
    let d = api
        .patch("api", &PatchParams::apply("deployer"), &Patch::Apply(&cfg))
        .await
        .unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(2));
    let mf = d.metadata.managed_fields.clone().unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("deployer"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    assert!(mf[0].time.is_some());
    let fields = &mf[0].fields_v1.as_ref().unwrap().0;
    assert!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"]["f:ports"]
            ["k:{\"containerPort\":8080,\"protocol\":\"TCP\"}"]
            .is_object(),
        "{fields}"
    );

    // Another manager: 409 with upstream's reason and causes.
    let scale = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "api"}, "spec": {"replicas": 5}});
    let e = api
        .patch(
            "api",
            &PatchParams::apply("autoscaler"),
            &Patch::Apply(&scale),
        )
        .await
        .unwrap_err();
    let (code, reason, message) = api_error(e);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"deployer\": .spec.replicas"
    );
    let d = api
        .patch(
            "api",
            &PatchParams::apply("autoscaler").force(),
            &Patch::Apply(&scale),
        )
        .await
        .unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(5));

    // An apply body for another object is refused and changes nothing.
    let mut other = cfg.clone();
    other["metadata"]["name"] = json!("zzz");
    let (code, _, message) = api_error(
        api.patch(
            "api",
            &PatchParams::apply("deployer"),
            &Patch::Apply(&other),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 400);
    assert_eq!(
        message,
        "the name of the object (zzz) does not match the name on the URL (api)"
    );
    let mut wrong_kind = cfg.clone();
    wrong_kind["apiVersion"] = json!("apps/v1beta1");
    let (code, _, _) = api_error(
        api.patch(
            "api",
            &PatchParams::apply("deployer"),
            &Patch::Apply(&wrong_kind),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 400);

    // The deployer drops its env entry and the replicas it lost: the env
    // entry goes, the replicas the autoscaler owns stay.
    let mut fewer = cfg.clone();
    fewer["spec"].as_object_mut().unwrap().remove("replicas");
    fewer["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("env");
    let d = api
        .patch(
            "api",
            &PatchParams::apply("deployer"),
            &Patch::Apply(&fewer),
        )
        .await
        .unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(5));
    assert!(spec.template.spec.unwrap().containers[0].env.is_none());

    // Apply through the status subresource: its own entry, status only.
    use k8s_openapi::api::core::v1::Service;
    let svcs: Api<Service> = Api::namespaced(kube_client(&c).await, "default");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "api"}}});
    svcs.patch("lb", &PatchParams::apply("deployer"), &Patch::Apply(&svc))
        .await
        .unwrap();
    let status = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
        "spec": {"ports": [{"port": 9999}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}});
    let s = svcs
        .patch_status(
            "lb",
            &PatchParams::apply("lb-controller"),
            &Patch::Apply(&status),
        )
        .await
        .unwrap();
    assert_eq!(
        s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port,
        80,
        "spec untouched"
    );
    let ingress = s.status.unwrap().load_balancer.unwrap().ingress.unwrap();
    assert_eq!(ingress[0].ip.as_deref(), Some("10.0.0.9"));
    let mf = s.metadata.managed_fields.unwrap();
    let e = mf
        .iter()
        .find(|e| e.manager.as_deref() == Some("lb-controller"))
        .unwrap();
    assert_eq!(e.subresource.as_deref(), Some("status"));
    assert_eq!(e.operation.as_deref(), Some("Apply"));
    assert!(e.fields_v1.as_ref().unwrap().0.get("f:spec").is_none());
}
