//! The processes a run starts (a `kemu` serving one EKS cluster, nginx
//! serving fixed bytes) and the memory of any process.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, anyhow, bail};
use kemu_shared::Clock as _;

use super::target::Target;

/// A process that is killed when dropped.
#[derive(Debug)]
pub struct Spawned {
    child: std::process::Child,
}

impl Spawned {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `/proc/PID/status` figure (`VmRSS`, `VmHWM`) in KiB.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    proc_kib(&format!("/proc/{pid}/status"), field)
}

/// A `FIELD:   N kB` line of a `/proc` file (`status`, `meminfo`), in KiB.
pub fn proc_kib(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

/// The summed `VmRSS` of `pids`, in KiB.
pub fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|p| status_kib(*p, "VmRSS")).sum()
}

/// The process ids listed in `path`, one per line or space-separated (as
/// `scripts/upstream start` writes `DIR/pids`).
pub fn read_pids(path: &Path) -> anyhow::Result<Vec<u32>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.split_whitespace()
        .map(|p| {
            p.parse()
                .with_context(|| format!("{}: {p}", path.display()))
        })
        .collect()
}

/// A `kemu` process with one EKS cluster of `nodes` Nodes (none for 0),
/// started by `bin` from a fixture in `dir`, and a target holding that
/// cluster's admin kubeconfig.
pub fn start_kemu(bin: &Path, dir: &Path, nodes: usize) -> anyhow::Result<(Spawned, Target)> {
    std::fs::create_dir_all(dir)?;
    let mut fixture = String::from(
        "clusters:\n  - cloud: eks\n    name: bench\n    region: us-east-1\n    version: \"1.34\"\n",
    );
    if nodes > 0 {
        fixture.push_str("    nodePools:\n");
        let groups = nodes.div_ceil(kemu_eks::nodegroup::MAX_NODES_PER_NODEGROUP as usize);
        for g in 0..groups {
            let count = nodes / groups + usize::from(g < nodes % groups);
            fixture.push_str(&format!(
                "      - name: pool-{g}\n        count: {count}\n        machineType: m5.4xlarge\n"
            ));
        }
    }
    let fixture_path = dir.join("bench.yaml");
    std::fs::write(&fixture_path, fixture)?;
    let log = std::fs::File::create(dir.join("kemu.log"))?;
    let mut child = Command::new(bin)
        .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .args(["--admin-port", "0", "--no-dashboard", "--log", "warn"])
        .arg("--run-dir")
        .arg(dir.join("run"))
        .arg("--fixture")
        .arg(&fixture_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let spawned = Spawned { child };
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if line.trim().is_empty() {
        let log = std::fs::read_to_string(dir.join("kemu.log")).unwrap_or_default();
        bail!("kemu exited before its ready line: {log}");
    }
    let ready: crate::server::ReadyLine =
        serde_json::from_str(&line).with_context(|| format!("ready line {line}"))?;
    let kubeconfig = ready
        .clusters
        .first()
        .ok_or_else(|| anyhow!("the ready line names no cluster: {line}"))?
        .kubeconfig
        .clone();
    Ok((spawned, Target::from_kubeconfig(Path::new(&kubeconfig))?))
}

/// The nginx binary to compare with: `NGINX`, else `nginx` on the PATH or in
/// `/usr/sbin`.
pub fn find_nginx(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return Some(p.to_owned());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

/// nginx on a free loopback port serving each `(path, bytes)` over TLS (a
/// certificate from a CA of its own, HTTP/2 offered), one worker per core.
pub fn start_nginx(
    bin: &Path,
    dir: &Path,
    files: &[(&str, &[u8])],
) -> anyhow::Result<(Spawned, Target)> {
    use std::os::unix::fs::PermissionsExt as _;
    let www = dir.join("www");
    std::fs::create_dir_all(&www)?;
    for (name, bytes) in files {
        std::fs::write(www.join(name), bytes)?;
    }
    let now = kemu_shared::SystemClock.now();
    let ca = kemu_shared::pki::ClusterCa::generate("kemu-bench-nginx", now)?;
    let cert = ca.serving_cert(&["127.0.0.1".to_owned()], now)?;
    std::fs::write(dir.join("cert.pem"), &cert.cert_pem)?;
    std::fs::write(dir.join("key.pem"), &cert.key_pem)?;
    // nginx's workers drop to an unprivileged user, who must read the files.
    for p in [dir.to_owned(), www.clone()] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    }
    let port = free_port()?;
    let d = dir.display();
    let conf = format!(
        "daemon off;\nworker_processes auto;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/tmp;\n  proxy_temp_path {d}/tmp;\n  \
         fastcgi_temp_path {d}/tmp;\n  uwsgi_temp_path {d}/tmp;\n  scgi_temp_path {d}/tmp;\n  \
         keepalive_timeout 90s;\n  keepalive_requests 1000000;\n  \
         server {{\n    listen 127.0.0.1:{port} ssl http2;\n    ssl_certificate {d}/cert.pem;\n    \
         ssl_certificate_key {d}/key.pem;\n    root {d}/www;\n    default_type application/json;\n  }}\n}}\n"
    );
    std::fs::create_dir_all(dir.join("tmp"))?;
    std::fs::write(dir.join("nginx.conf"), conf)?;
    let log = std::fs::File::create(dir.join("stderr.log"))?;
    let child = Command::new(bin)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let spawned = Spawned { child };
    let target = Target::anonymous(
        &format!("https://127.0.0.1:{port}"),
        ca.cert_pem().as_bytes(),
    );
    // Up once it accepts connections.
    for _ in 0..500 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((spawned, target));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
    bail!("nginx did not listen on {port}: {log}")
}

/// A free loopback port, never 8080 (kubectl's default).
fn free_port() -> anyhow::Result<u16> {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if port != 8080 {
            return Ok(port);
        }
    }
}
