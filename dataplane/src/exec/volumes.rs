//! What a Pod's volumes hold, as the kubelet's volume plugins write them:
//! ConfigMap, Secret, projected (with the ServiceAccount token, `ca.crt` and
//! `namespace`) and downward API volumes in the atomic writer's layout (a
//! `..<timestamp>` directory, `..data` linking to it, one link per key),
//! read-only; everything else a writable directory.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use kemu_shared::ClusterRecord;
use serde_json::Value;

use super::env;
use super::fs::{Node, components, put};
use crate::controllers::obj;
use crate::sa_token;
use crate::store::{ObjectKey, Store};

/// What a volume is to the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Files the kubelet writes from objects and keeps in sync.
    Projected(Vec<(String, Vec<u8>, u32)>),
    /// A writable directory kept for the Pod (emptyDir and the like).
    Scratch,
    /// A writable directory kept per claim (`persistentVolumeClaim`).
    Claim(String),
    /// A writable directory kept per Node and path (`hostPath`).
    Host(String),
}

/// Where the cluster's objects and keys come from.
pub struct Ctx<'a> {
    /// The cluster's store.
    pub store: &'a dyn Store,
    /// The cluster (CA, ServiceAccount key).
    pub record: &'a ClusterRecord,
    /// The Pod.
    pub pod: &'a Value,
    /// The Pod's Node.
    pub node: Option<&'a Value>,
    /// Now.
    pub now: DateTime<Utc>,
}

fn mode_of(v: &Value, default: u32) -> u32 {
    v.as_u64()
        .and_then(|m| u32::try_from(m).ok())
        .map_or(default, |m| m & 0o7777)
}

/// A ConfigMap's or Secret's keys, values decoded.
fn keys(ctx: &Ctx, resource: &str, name: &str) -> Option<Vec<(String, Vec<u8>)>> {
    let o = ctx
        .store
        .get(&ObjectKey::new(resource, obj::namespace(ctx.pod), name))?;
    let b64 = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .ok()
    };
    let mut out = Vec::new();
    for (k, v) in o["data"].as_object().into_iter().flatten() {
        let bytes = if resource == "secrets" {
            b64(v)?
        } else {
            v.as_str().unwrap_or_default().as_bytes().to_vec()
        };
        out.push((k.clone(), bytes));
    }
    for (k, v) in o["binaryData"].as_object().into_iter().flatten() {
        out.push((k.clone(), b64(v)?));
    }
    out.sort();
    Some(out)
}

/// The files of a ConfigMap or Secret source (`items` pick and rename keys).
fn object_files(
    ctx: &Ctx,
    resource: &str,
    src: &Value,
    default_mode: u32,
) -> Vec<(String, Vec<u8>, u32)> {
    let name = src["name"]
        .as_str()
        .or(src["secretName"].as_str())
        .unwrap_or_default();
    let Some(keys) = keys(ctx, resource, name) else {
        return Vec::new();
    };
    match src["items"].as_array() {
        Some(items) => items
            .iter()
            .filter_map(|it| {
                let key = it["key"].as_str()?;
                let (_, data) = keys.iter().find(|(k, _)| k == key)?;
                Some((
                    it["path"].as_str().unwrap_or(key).to_owned(),
                    data.clone(),
                    mode_of(&it["mode"], default_mode),
                ))
            })
            .collect(),
        None => keys
            .into_iter()
            .map(|(k, d)| (k, d, default_mode))
            .collect(),
    }
}

fn downward_files(ctx: &Ctx, items: &Value, default_mode: u32) -> Vec<(String, Vec<u8>, u32)> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|it| {
            let path = it["path"].as_str()?.to_owned();
            let value = if let Some(f) = it["fieldRef"]["fieldPath"].as_str() {
                env::field(ctx.pod, f)?
            } else {
                let r = &it["resourceFieldRef"];
                let c = r["containerName"].as_str();
                let container = ctx.pod["spec"]["containers"]
                    .as_array()?
                    .iter()
                    .find(|x| c.is_none_or(|c| x["name"] == c))?;
                env::resource(container, ctx.node, r["resource"].as_str()?, &r["divisor"])?
            };
            Some((path, value.into_bytes(), mode_of(&it["mode"], default_mode)))
        })
        .collect()
}

/// A ServiceAccount token for the Pod, as the kubelet requests one.
fn token(ctx: &Ctx, src: &Value) -> Option<Vec<u8>> {
    let ns = obj::namespace(ctx.pod);
    let sa_name = ctx.pod["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or("default");
    let sa = ctx
        .store
        .get(&ObjectKey::new("serviceaccounts", ns, sa_name))?;
    let audiences: Vec<String> = src["audience"]
        .as_str()
        .map(|a| vec![a.to_owned()])
        .unwrap_or_default();
    let request = sa_token::Request {
        service_account: &sa,
        audiences,
        expiration_seconds: src["expirationSeconds"].as_i64().unwrap_or(3607),
        bound: Some(("Pod", ctx.pod)),
    };
    let claims = sa_token::claims(ctx.record, &request, ctx.now);
    ctx.record
        .sa_key
        .sign_jwt(&claims)
        .ok()
        .map(String::into_bytes)
}

/// What the volume named `name` is.
pub fn source(ctx: &Ctx, volume: &Value) -> Source {
    let default = |v: &Value| mode_of(&v["defaultMode"], 0o644);
    if let Some(cm) = volume.get("configMap") {
        return Source::Projected(object_files(ctx, "configmaps", cm, default(cm)));
    }
    if let Some(s) = volume.get("secret") {
        return Source::Projected(object_files(ctx, "secrets", s, default(s)));
    }
    if let Some(d) = volume.get("downwardAPI") {
        return Source::Projected(downward_files(ctx, &d["items"], default(d)));
    }
    if let Some(p) = volume.get("projected") {
        let mode = default(p);
        let mut files = Vec::new();
        for s in p["sources"].as_array().into_iter().flatten() {
            if let Some(cm) = s.get("configMap") {
                files.extend(object_files(ctx, "configmaps", cm, mode));
            } else if let Some(sec) = s.get("secret") {
                files.extend(object_files(ctx, "secrets", sec, mode));
            } else if let Some(d) = s.get("downwardAPI") {
                files.extend(downward_files(ctx, &d["items"], mode));
            } else if let Some(t) = s.get("serviceAccountToken")
                && let Some(tok) = token(ctx, t)
            {
                files.push((t["path"].as_str().unwrap_or("token").to_owned(), tok, mode));
            }
        }
        // kube-api-access's ca.crt is its kube-root-ca.crt ConfigMap source.
        return Source::Projected(files);
    }
    if let Some(c) = volume["persistentVolumeClaim"]["claimName"].as_str() {
        return Source::Claim(c.to_owned());
    }
    if let Some(path) = volume["hostPath"]["path"].as_str() {
        return Source::Host(path.to_owned());
    }
    Source::Scratch
}

/// A projected volume's tree in the atomic writer's layout.
pub fn atomic_tree(files: &[(String, Vec<u8>, u32)], now: DateTime<Utc>, serial: u64) -> Node {
    let mtime = now.timestamp();
    let stamp = format!(
        "..{}.{:09}",
        now.format("%Y_%m_%d_%H_%M_%S"),
        serial % 1_000_000_000
    );
    let mut root = Node::dir(0o1777, mtime);
    let mut data = Node::dir(0o755, mtime);
    let mut top: Vec<String> = Vec::new();
    for (path, content, mode) in files {
        let rel = components("/", path);
        let Some(first) = rel.first() else {
            continue;
        };
        if !top.contains(first) {
            top.push(first.clone());
        }
        put(&mut data, &rel, Node::file(content.clone(), *mode, mtime));
    }
    if let Node::Dir(entries, _) = &mut root {
        entries.insert(stamp.clone(), data);
        entries.insert("..data".into(), Node::Link(stamp));
        for name in top {
            entries.insert(name.clone(), Node::Link(format!("..data/{name}")));
        }
    }
    root
}

/// The image's own tree: the usual directories, and the kubelet's
/// `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf`.
pub fn image_root(ctx: &Ctx, image: &str, hostname: &str, now: i64) -> Node {
    let mut root = Node::dir(0o755, now);
    for d in [
        "bin",
        "dev",
        "etc",
        "home",
        "proc",
        "root",
        "run",
        "sbin",
        "sys",
        "usr/bin",
        "usr/local/bin",
        "usr/sbin",
        "var/log",
        "var/run",
    ] {
        put(&mut root, &components("/", d), Node::dir(0o755, now));
    }
    put(&mut root, &components("/", "/tmp"), Node::dir(0o1777, now));
    let file = |s: String| Node::file(s, 0o644, now);
    put(
        &mut root,
        &components("/", "/etc/hostname"),
        file(format!("{hostname}\n")),
    );
    put(
        &mut root,
        &components("/", "/etc/hosts"),
        file(hosts(ctx.pod, hostname)),
    );
    put(
        &mut root,
        &components("/", "/etc/resolv.conf"),
        file(resolv(ctx)),
    );
    put(
        &mut root,
        &components("/", "/etc/passwd"),
        file(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n".into(),
        ),
    );
    put(
        &mut root,
        &components("/", "/etc/group"),
        file("root:x:0:\nnobody:x:65534:\n".into()),
    );
    let image_name = image_name(image);
    if image_name == "nginx" {
        put(
            &mut root,
            &components("/", "/usr/share/nginx/html/index.html"),
            file(NGINX_INDEX.into()),
        );
    }
    if image_name == "httpd" {
        put(
            &mut root,
            &components("/", "/usr/local/apache2/htdocs/index.html"),
            file("<html><body><h1>It works!</h1></body></html>\n".into()),
        );
    }
    root
}

/// An image's name without registry, path, tag or digest (`nginx` of
/// `docker.io/library/nginx:1.27`).
pub fn image_name(image: &str) -> &str {
    image
        .rsplit('/')
        .next()
        .unwrap_or(image)
        .split([':', '@'])
        .next()
        .unwrap_or_default()
}

/// nginx's default page.
pub const NGINX_INDEX: &str = "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n<style>\nhtml { color-scheme: light dark; }\nbody { width: 35em; margin: 0 auto;\nfont-family: Tahoma, Verdana, Arial, sans-serif; }\n</style>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and\nworking. Further configuration is required.</p>\n\n<p>For online documentation and support please refer to\n<a href=\"http://nginx.org/\">nginx.org</a>.<br/>\nCommercial support is available at\n<a href=\"http://nginx.com/\">nginx.com</a>.</p>\n\n<p><em>Thank you for using nginx.</em></p>\n</body>\n</html>\n";

/// The Pod's `/etc/hosts`, as `managedHostsFileContent` writes it.
pub fn hosts(pod: &Value, hostname: &str) -> String {
    let mut s = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    let ips: Vec<&str> = pod["status"]["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["ip"].as_str())
        .collect();
    let subdomain = pod["spec"]["subdomain"].as_str().filter(|s| !s.is_empty());
    for ip in ips {
        match subdomain {
            Some(sub) => s.push_str(&format!(
                "{ip}\t{hostname}.{sub}.{}.svc.cluster.local\t{hostname}\n",
                obj::namespace(pod)
            )),
            None => s.push_str(&format!("{ip}\t{hostname}\n")),
        }
    }
    let aliases: Vec<&Value> = pod["spec"]["hostAliases"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    if !aliases.is_empty() {
        s.push_str("\n# Entries added by HostAliases.\n");
        for a in aliases {
            let names: Vec<&str> = a["hostnames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            s.push_str(&format!(
                "{}\t{}\n",
                a["ip"].as_str().unwrap_or_default(),
                names.join("\t")
            ));
        }
    }
    s
}

/// The cluster DNS address: kube-dns's cluster IP, else the service
/// range's tenth address, as the clouds place it.
fn dns_ip(store: &dyn Store) -> String {
    if let Some(s) = store.get(&ObjectKey::new("services", "kube-system", "kube-dns"))
        && let Some(ip) = s["spec"]["clusterIP"].as_str()
    {
        return ip.to_owned();
    }
    let api = store
        .get(&ObjectKey::new("services", "default", "kubernetes"))
        .and_then(|s| s["spec"]["clusterIP"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "10.96.0.1".into());
    match api.rsplit_once('.') {
        Some((net, _)) => format!("{net}.10"),
        None => api,
    }
}

/// `/etc/resolv.conf` for the Pod's `dnsPolicy`.
pub fn resolv(ctx: &Ctx) -> String {
    let ns = obj::namespace(ctx.pod);
    let policy = ctx.pod["spec"]["dnsPolicy"]
        .as_str()
        .unwrap_or("ClusterFirst");
    let config = &ctx.pod["spec"]["dnsConfig"];
    let mut search: Vec<String> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    let mut options: Vec<String> = Vec::new();
    if policy != "None" {
        search = vec![
            format!("{ns}.svc.cluster.local"),
            "svc.cluster.local".into(),
            "cluster.local".into(),
        ];
        servers.push(dns_ip(ctx.store));
        options.push("ndots:5".into());
    }
    for s in config["searches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !search.iter().any(|x| x == s) {
            search.push(s.to_owned());
        }
    }
    servers.extend(
        config["nameservers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned),
    );
    for o in config["options"].as_array().into_iter().flatten() {
        let name = o["name"].as_str().unwrap_or_default();
        options.retain(|x| x.split(':').next() != Some(name));
        options.push(match o["value"].as_str() {
            Some(v) => format!("{name}:{v}"),
            None => name.to_owned(),
        });
    }
    let mut s = String::new();
    if !search.is_empty() {
        s.push_str(&format!("search {}\n", search.join(" ")));
    }
    for n in servers {
        s.push_str(&format!("nameserver {n}\n"));
    }
    if !options.is_empty() {
        s.push_str(&format!("options {}\n", options.join(" ")));
    }
    s
}

/// A sample Pod for tests.
#[cfg(test)]
pub fn sample_pod() -> Value {
    serde_json::json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]},
           "status": {"podIP": "10.1.0.4", "podIPs": [{"ip": "10.1.0.4"}]}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::fs::{Fs, shared};

    #[test]
    fn the_hosts_file_is_the_kubelets() {
        let h = hosts(&sample_pod(), "web");
        assert!(h.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"));
        assert!(h.ends_with("fe00::2\tip6-allrouters\n10.1.0.4\tweb\n"));
    }

    #[test]
    fn an_atomic_tree_links_each_key_through_data() {
        let files = vec![("app.yaml".to_owned(), b"a: 1\n".to_vec(), 0o644)];
        let tree = atomic_tree(
            &files,
            DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
            7,
        );
        let mut fs = Fs::new(shared(Node::dir(0o755, 0)));
        fs.mount("/etc/config", shared(tree), true);
        assert_eq!(fs.read("/", "/etc/config/app.yaml").unwrap(), b"a: 1\n");
        let names: Vec<_> = fs
            .list("/", "/etc/config")
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            ["..2026_01_01_00_00_00.000000007", "..data", "app.yaml"]
        );
    }
}
