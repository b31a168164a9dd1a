//! The standalone server: one listener per facade (AKS over HTTPS, as `az`
//! requires), all on one [`Kemu`], and the machine-readable ready line.

use std::net::TcpListener;
use std::path::PathBuf;

use actix_web::dev::{Server, ServerHandle};
use actix_web::web::ServiceConfig;
use actix_web::{App, HttpServer};
use serde::{Deserialize, Serialize};

use crate::Kemu;
use crate::admin::Admin;
use crate::persist::Persistence;
use crate::persist::facade_hook::{CloudLog, log_cloud_writes};

/// Where each facade listens. Port 0 picks a free port.
#[derive(Debug, Clone)]
pub struct Listeners {
    /// Address the facades bind to.
    pub bind_host: String,
    /// EKS facade port (HTTP).
    pub eks_port: u16,
    /// GKE facade port (HTTP).
    pub gke_port: u16,
    /// AKS facade port (HTTPS).
    pub aks_port: u16,
    /// Directory for files kemu hands to clients (the CA bundle).
    pub run_dir: PathBuf,
}

/// What the binary adds to the listeners: the admin endpoint and the state
/// directory the facades log to.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Admin endpoint port (plain HTTP on the bind host); `None`: no admin
    /// endpoint, 0: a free port.
    pub admin_port: Option<u16>,
    /// Where every mutating cloud call is logged.
    pub persistence: Option<Persistence>,
    /// Whether the admin endpoint serves the web dashboard.
    pub dashboard: bool,
}

/// The line printed on stdout once every listener is bound.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReadyLine {
    /// Always `ready`.
    pub kemu: String,
    /// kemu's version.
    pub version: String,
    /// EKS facade base URL.
    pub eks: String,
    /// GKE facade base URL.
    pub gke: String,
    /// AKS facade base URL (HTTPS).
    pub aks: String,
    /// `live` or `disabled`.
    pub dataplane: String,
    /// PEM file of the CA the HTTPS facades present.
    pub ca_bundle: String,
    /// Admin endpoint base URL (snapshot, reset), when there is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub admin: String,
    /// The clusters `--fixture` files loaded, each with the kubeconfig kemu
    /// wrote for it; absent when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<crate::fixtures::LoadedCluster>,
}

/// A running standalone server.
pub struct Running {
    /// What was printed (or is to be printed) as the ready line.
    pub ready: ReadyLine,
    kemu: Kemu,
    handles: Vec<ServerHandle>,
    admin: Option<std::sync::Arc<Admin>>,
    persistence: Option<Persistence>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("ready", &self.ready)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// The engine behind the listeners.
    pub fn kemu(&self) -> &Kemu {
        &self.kemu
    }

    /// Start-up is complete: what a reset returns to is the state now.
    pub fn mark_started(&self) {
        if let Some(p) = &self.persistence {
            // What start-up made in-process (fixtures) is in the log before
            // the ready line.
            p.record_cloud(&self.kemu);
        }
        if let Some(admin) = &self.admin {
            admin.mark_start(&self.ready);
        }
    }

    /// Stops the facades and closes every cluster listener.
    pub async fn stop(self) {
        for handle in &self.handles {
            handle.stop(true).await;
        }
        self.kemu.shutdown().await;
        if let Some(p) = &self.persistence {
            p.stop();
        }
    }
}

/// Binds every facade listener of `kemu` and starts serving; must run inside an
/// actix system (the binary's `main`, or `#[actix_web::test]`).
pub fn start(kemu: Kemu, listeners: &Listeners) -> anyhow::Result<Running> {
    start_with(kemu, listeners, Extras::default())
}

/// [`start`] with the binary's extras: an admin endpoint, a state directory.
pub fn start_with(kemu: Kemu, listeners: &Listeners, extras: Extras) -> anyhow::Result<Running> {
    std::fs::create_dir_all(&listeners.run_dir)?;
    let ca_bundle = listeners.run_dir.join("ca.pem");
    std::fs::write(&ca_bundle, kemu.facade_ca_pem())?;

    // A port taken is named with the flag that moves it.
    let bind = |port: u16, flag: &str| {
        TcpListener::bind((listeners.bind_host.as_str(), port)).map_err(|e| {
            let taken = e.kind() == std::io::ErrorKind::AddrInUse;
            let advice = if taken {
                format!(" (another process holds it: pass {flag} with another port, or 0 for a free one)")
            } else {
                String::new()
            };
            anyhow::anyhow!("cannot listen on {}:{port} for {flag}: {e}{advice}", listeners.bind_host)
        })
    };
    let (eks_l, gke_l, aks_l) = (
        bind(listeners.eks_port, "--eks-port")?,
        bind(listeners.gke_port, "--gke-port")?,
        bind(listeners.aks_port, "--aks-port")?,
    );
    let admin_l = extras
        .admin_port
        .map(|p| bind(p, "--admin-port"))
        .transpose()?;
    let url = |scheme: &str, l: &TcpListener| -> std::io::Result<String> {
        let port = l.local_addr()?.port();
        let host = advertised(&kemu.config().advertise_host);
        Ok(format!("{scheme}://{host}:{port}"))
    };
    let ready = ReadyLine {
        kemu: "ready".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        eks: url("http", &eks_l)?,
        gke: url("http", &gke_l)?,
        aks: url("https", &aks_l)?,
        dataplane: if kemu.dataplane_live() {
            "live"
        } else {
            "disabled"
        }
        .into(),
        ca_bundle: ca_bundle.display().to_string(),
        admin: admin_l
            .as_ref()
            .map(|l| url("http", l))
            .transpose()?
            .unwrap_or_default(),
        clusters: Vec::new(),
    };

    let log = CloudLog(extras.persistence.clone().map(|p| (p, kemu.clone())));
    let mut servers = vec![
        serve_facade(kemu.eks(), eks_l, None, log.clone())?,
        serve_facade(kemu.gke(), gke_l, None, log.clone())?,
        serve_facade(kemu.aks(), aks_l, Some(kemu.facade_tls()?), log)?,
    ];
    let admin = admin_l
        .map(|l| -> std::io::Result<_> {
            let admin = std::sync::Arc::new(Admin::new(
                kemu.clone(),
                extras.persistence.clone(),
                extras.dashboard,
            ));
            let mount = admin.clone();
            let server = HttpServer::new(move || App::new().configure(|cfg| mount.configure(cfg)))
                .workers(1)
                .disable_signals()
                .shutdown_timeout(1)
                .listen(l)?
                .run();
            servers.push(server);
            Ok(admin)
        })
        .transpose()?;
    let handles = servers
        .into_iter()
        .map(|server| {
            let handle = server.handle();
            actix_rt::spawn(server);
            handle
        })
        .collect();
    Ok(Running {
        ready,
        kemu,
        handles,
        admin,
        persistence: extras.persistence,
    })
}

fn serve_facade(
    mount: impl Fn(&mut ServiceConfig) + Clone + Send + 'static,
    listener: TcpListener,
    tls: Option<rustls::ServerConfig>,
    log: CloudLog,
) -> std::io::Result<Server> {
    let server = HttpServer::new(move || {
        App::new()
            .app_data(actix_web::web::Data::new(log.clone()))
            .wrap(actix_web::middleware::from_fn(log_cloud_writes))
            .configure(mount.clone())
    })
    .workers(1)
    // As the clouds' endpoints and the cluster listeners: an SDK reusing a
    // pooled connection after a pause is not reset.
    .keep_alive(kemu_dataplane::listener::IDLE_TIMEOUT)
    .disable_signals()
    .shutdown_timeout(1);
    Ok(match tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls)?.run(),
        None => server.listen(listener)?.run(),
    })
}

/// The host clients should use: a wildcard bind is reached over loopback.
fn advertised(host: &str) -> String {
    match host {
        "0.0.0.0" | "" => "127.0.0.1".into(),
        "::" => "[::1]".into(),
        h if h.contains(':') => format!("[{h}]"),
        h => h.into(),
    }
}
