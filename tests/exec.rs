//! `kubectl exec`, `cp` and `attach`, the Python client's `stream()` and
//! kube-rs's `AttachParams` against simulated containers: files from the
//! Pod's volumes, the kubelet's environment, exit codes, a terminal, and a
//! ConfigMap change reaching its mounted file at the kubelet's sync.

mod common;

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::Duration;

use common::{KubectlCluster, eks_spec_with_pool};
use kemu::shared::FakeClock;

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {app.yaml: "color: blue\n"}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: a
    image: busybox:1.36
    command: [sleep, "3600"]
    workingDir: /work
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: db, key: password}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: GREETING, value: "hi $(POD_NAME)"}
    volumeMounts:
    - {name: config, mountPath: /etc/config}
    - {name: shared, mountPath: /shared}
  - name: b
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts:
    - {name: shared, mountPath: /data}
  volumes:
  - {name: config, configMap: {name: app-config}}
  - {name: shared, emptyDir: {}}
"#;

struct Env {
    clock: std::sync::Arc<FakeClock>,
    k: KubectlCluster,
}

impl Env {
    fn new(name: &str) -> Self {
        let clock = FakeClock::at_epoch();
        let kemu = kemu::Kemu::builder().clock(clock.clone()).build().unwrap();
        let k = KubectlCluster::with_kemu(kemu, eks_spec_with_pool(name, 1, "m5.large"));
        let path = k.file("objects.yaml", OBJECTS);
        k.ok(&["apply", "-f", &path]);
        k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
        Self { clock, k }
    }

    /// `kubectl exec` with `input` on stdin (when given): (stdout, stderr, exit code).
    fn exec(&self, args: &[&str], input: Option<&str>) -> (String, String, i32) {
        let mut cmd = self.k.sandbox.command("kubectl");
        cmd.arg("--kubeconfig").arg(&self.k.kubeconfig).arg("exec");
        if input.is_some() {
            cmd.arg("-i");
        }
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        if let Some(i) = input {
            stdin.write_all(i.as_bytes()).unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code().unwrap_or(-1),
        )
    }
}

#[test]
fn exec_sees_the_pods_files_environment_and_exit_codes() {
    let env = Env::new("exec");
    let (out, err, code) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "cat /etc/config/app.yaml; exit 3",
        ],
        None,
    );
    assert_eq!((out.as_str(), code), ("color: blue\n", 3), "{err}");
    assert!(err.contains("command terminated with exit code 3"), "{err}");

    let (out, _, code) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "printenv PASSWORD; echo $GREETING; pwd; hostname",
        ],
        None,
    );
    assert_eq!((out.as_str(), code), ("s3cret\nhi web\n/work\nweb\n", 0));

    let (out, _, _) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "cat",
            "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
        ],
        None,
    );
    assert_eq!(out, "default");
    let (out, _, _) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "grep -c BEGIN /var/run/secrets/kubernetes.io/serviceaccount/ca.crt; ls /etc/config",
        ],
        None,
    );
    assert_eq!(out, "1\napp.yaml\n");

    // The ServiceAccount token in the Pod is a token the cluster accepts.
    let (token, _, _) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "cat",
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
        ],
        None,
    );
    let server = kemu::shared::advertise(&env.k.record).server_url().unwrap();
    let ca = env.k.file("ca.pem", env.k.record.ca.cert_pem());
    let who = env.k.ok(&[
        "--kubeconfig=/dev/null",
        &format!("--server={server}"),
        &format!("--certificate-authority={ca}"),
        &format!("--token={token}"),
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who, "system:serviceaccount:default:default");

    // An emptyDir is shared by the Pod's containers; a ConfigMap volume is read-only.
    let (_, err, code) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "echo from-a > /shared/x; echo no > /etc/config/y",
        ],
        None,
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("sh: can't create /etc/config/y: Read-only file system"),
        "{err}"
    );
    let (out, _, _) = env.exec(&["web", "-c", "b", "--", "cat", "/data/x"], None);
    assert_eq!(out, "from-a\n");

    // Stdin reaches the command; the client closes it with the v5 close frame.
    let (out, _, code) = env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "cat > /tmp/in; wc -c < /tmp/in",
        ],
        Some("hello\n"),
    );
    assert_eq!((out.as_str(), code), ("6\n", 0));

    // A command the image lacks fails as containerd's exec does.
    let (_, err, code) = env.exec(&["web", "-c", "a", "--", "nosuchcmd"], None);
    assert_eq!(code, 1);
    assert!(
        err.contains(r#"exec: "nosuchcmd": executable file not found in $PATH"#),
        "{err}"
    );
    // Within a shell, busybox's words.
    let (_, err, code) = env.exec(&["web", "-c", "a", "--", "sh", "-c", "nosuchcmd"], None);
    assert_eq!(
        (err.as_str(), code),
        (
            "sh: nosuchcmd: not found\ncommand terminated with exit code 127\n",
            127
        )
    );

    // Upstream's checks before the upgrade.
    let err = env.k.fails(&["exec", "web", "-c", "zz", "--", "ls"]);
    assert!(
        err.contains("container zz is not valid for pod web"),
        "{err}"
    );
    let err = env.k.fails(&["exec", "missing", "--", "ls"]);
    assert!(err.contains("pods \"missing\" not found"), "{err}");
}

#[test]
fn a_configmap_change_reaches_the_mounted_file_at_the_kubelets_sync() {
    let env = Env::new("sync");
    let cat = ["web", "-c", "a", "--", "cat", "/etc/config/app.yaml"];
    assert_eq!(env.exec(&cat, None).0, "color: blue\n");
    env.k.ok(&[
        "patch",
        "configmap",
        "app-config",
        "-p",
        r#"{"data":{"app.yaml":"color: green\n"}}"#,
    ]);
    // The kubelet has not synced yet: the file still holds what it held.
    assert_eq!(env.exec(&cat, None).0, "color: blue\n");
    env.clock.advance(Duration::from_secs(61));
    assert_eq!(env.exec(&cat, None).0, "color: green\n");
    let (out, _, _) = env.exec(&["web", "-c", "a", "--", "ls", "-a", "/etc/config"], None);
    assert!(
        out.contains("..data\n") && out.contains("app.yaml\n"),
        "{out}"
    );
}

#[test]
fn kubectl_cp_copies_files_and_directories_both_ways() {
    let env = Env::new("cp");
    let local = env.k.file("notes.txt", "line one\nline two\n");
    env.k.ok(&["cp", &local, "web:/tmp/notes.txt", "-c", "a"]);
    let (out, _, _) = env.exec(&["web", "-c", "a", "--", "cat", "/tmp/notes.txt"], None);
    assert_eq!(out, "line one\nline two\n");

    env.exec(
        &[
            "web",
            "-c",
            "a",
            "--",
            "sh",
            "-c",
            "mkdir -p /tmp/out/sub && echo deep > /tmp/out/sub/f && echo top > /tmp/out/g",
        ],
        None,
    );
    let dest = env.k.sandbox.path("fetched");
    env.k
        .ok(&["cp", "web:/tmp/out", dest.to_str().unwrap(), "-c", "a"]);
    assert_eq!(
        std::fs::read_to_string(dest.join("sub/f")).unwrap(),
        "deep\n"
    );
    assert_eq!(std::fs::read_to_string(dest.join("g")).unwrap(), "top\n");

    // Into a directory that exists: the file keeps its name.
    env.k.ok(&["cp", &local, "web:/tmp", "-c", "a"]);
    let (out, _, _) = env.exec(&["web", "-c", "a", "--", "ls", "/tmp"], None);
    assert_eq!(out, "notes.txt\nout\n");
}

#[test]
fn exec_with_a_terminal_is_an_interactive_shell() {
    let env = Env::new("tty");
    common::which("script");
    let command = format!(
        "kubectl --kubeconfig {} exec -it web -c a -- sh",
        env.k.kubeconfig.display()
    );
    let mut child = env
        .k
        .sandbox
        .command("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo $((40 + 2)) $TERM\rexit 5\r")
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(out.contains("42 xterm\r\n"), "{out:?}");
    assert!(out.contains("/work # "), "{out:?}");
    assert_eq!(status.code(), Some(5), "{out:?}");
}

#[test]
fn the_python_client_streams_exec_with_stdin_and_exit_codes() {
    let env = Env::new("py-exec");
    env.k.python_ok("exec_stream.py");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_attach_params_exec_with_stdin() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, AttachParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::{Client, Config};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let env = tokio::task::spawn_blocking(|| Env::new("kube-exec"))
        .await
        .unwrap();
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&env.k.kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(Client::try_from(config).unwrap(), "default");
    let params = AttachParams::default()
        .container("a")
        .stdin(true)
        .stderr(false);
    let mut proc = pods
        .exec(
            "web",
            ["sh", "-c", "read name; echo hello $name; exit 9"],
            &params,
        )
        .await
        .unwrap();
    let mut stdin = proc.stdin().unwrap();
    stdin.write_all(b"kube\n").await.unwrap();
    let mut stdout = proc.stdout().unwrap();
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "hello kube\n");
    let status = proc.take_status().unwrap().await.unwrap();
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let code = status
        .details
        .and_then(|d| d.causes)
        .and_then(|c| c.into_iter().next())
        .and_then(|c| c.message);
    assert_eq!(code.as_deref(), Some("9"));
    drop(env);
}

#[test]
fn exec_needs_create_on_pods_exec_as_upstream_asks_of_a_websocket() {
    let env = Env::new("exec-rbac");
    let rbac = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: peek}
rules:
- {apiGroups: [""], resources: [pods, pods/exec], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: peek}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: peek}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#;
    let path = env.k.file("rbac.yaml", rbac);
    env.k.ok(&["apply", "-f", &path]);
    let (_, err, code) = env.exec(&["--as=alice", "web", "-c", "a", "--", "true"], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
        ),
        "{err}"
    );
    env.k.ok(&[
        "patch",
        "role",
        "peek",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["pods/exec"],"verbs":["create"]}}]"#,
    ]);
    let (out, err, code) = env.exec(&["--as=alice", "web", "-c", "a", "--", "echo", "in"], None);
    assert_eq!((out.as_str(), code), ("in\n", 0), "{err}");
}
