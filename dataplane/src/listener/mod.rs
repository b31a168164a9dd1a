//! One HTTPS listener per cluster.
//!
//! Kubeconfigs written by `aws`, `gcloud` and `az` carry only a server URL and a
//! CA, so a cluster's TLS identity is chosen by its address: each cluster gets a
//! port of its own on the advertise host, presenting a certificate from its own
//! CA. The port is bound synchronously when the registry asks (so the cluster's
//! endpoint is real from the first read) and served by an actix server owned by
//! the data plane's control thread, so it does not depend on which facade worker
//! created the cluster.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::Arc;

use actix_http::{HttpService, Protocol};
use actix_service::{IntoServiceFactory as _, ServiceFactoryExt as _, map_config};
use actix_tls::accept::rustls_0_23::{Acceptor, TlsStream};
use actix_web::App;
use actix_web::dev::{AppConfig, Extensions, ServerHandle};
use actix_web::rt::net::TcpStream;
use kemu_shared::{ClusterRecord, ClusterRegistry, Config, DataPlaneHook};
use parking_lot::Mutex;
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::authz::Mode;
use crate::engine::{ClusterContext, Engine};
use crate::identity;

mod spdy_upgrade;

use self::spdy_upgrade::SpdyUpgrade;

/// How long an idle keep-alive connection stays open: kube-apiserver's
/// `IdleTimeout` (90 s, Go's `DefaultTransport` keep-alive), so clients that
/// reuse a connection after a pause do not meet a reset.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);
/// Worker threads per cluster listener at most: idle ones cost a stack each,
/// and more than this is more than one cluster's traffic keeps busy here.
const MAX_WORKERS: usize = 8;

/// Worker threads of each cluster's listener: one per core, up to
/// [`MAX_WORKERS`].
fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS))
}

/// What starting or driving the data plane can fail with.
#[derive(Debug, Error)]
pub enum DataPlaneError {
    /// The control thread could not be started.
    #[error("data plane thread: {0}")]
    Thread(#[from] std::io::Error),
    /// The control thread is gone.
    #[error("data plane stopped")]
    Stopped,
}

enum Command {
    Serve {
        cluster: ClusterContext,
        engine: Engine,
        listener: TcpListener,
        tls: Box<rustls::ServerConfig>,
    },
    Retire {
        id: String,
    },
    Shutdown {
        done: oneshot::Sender<()>,
    },
}

/// The data plane: the engine and the listeners of every cluster.
#[derive(Clone)]
pub struct DataPlane {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    engine: Engine,
    commands: mpsc::UnboundedSender<Command>,
    /// Port of each served cluster.
    ports: Mutex<HashMap<String, u16>>,
}

impl std::fmt::Debug for DataPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataPlane")
            .field("clusters", &self.inner.ports.lock().len())
            .finish_non_exhaustive()
    }
}

impl DataPlane {
    /// Starts the data plane for `registry` and attaches it, which binds a
    /// listener for every cluster already registered.
    pub fn start(config: Config, registry: ClusterRegistry) -> Result<Self, DataPlaneError> {
        Self::start_authorizing(config, registry, Mode::default())
    }

    /// [`DataPlane::start`] with the clusters authorizing requests in `mode`.
    pub fn start_authorizing(
        config: Config,
        registry: ClusterRegistry,
        mode: Mode,
    ) -> Result<Self, DataPlaneError> {
        kemu_shared::pki::install_crypto_provider();
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("kemu-dataplane".into())
            .spawn(move || actix_rt::System::new().block_on(control_loop(rx)))?;
        let dataplane = Self {
            inner: Arc::new(Inner {
                config,
                engine: Engine::new(registry.clone()).with_authorization(mode),
                commands: tx,
                ports: Mutex::new(HashMap::new()),
            }),
        };
        registry.attach_dataplane(Arc::new(dataplane.clone()));
        Ok(dataplane)
    }

    /// The engine serving every listener.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The port a cluster is served on, if it is.
    pub fn port_of(&self, id: &str) -> Option<u16> {
        self.inner.ports.lock().get(id).copied()
    }

    /// Closes every listener and stops the control thread.
    pub async fn shutdown(&self) {
        let (done, wait) = oneshot::channel();
        if self.inner.commands.send(Command::Shutdown { done }).is_ok() {
            let _ = wait.await;
        }
        self.inner.ports.lock().clear();
    }

    fn bind(&self, record: &ClusterRecord) -> Result<(TcpListener, rustls::ServerConfig), String> {
        let config = &self.inner.config;
        let listener = TcpListener::bind((config.bind_host.as_str(), record.port.unwrap_or(0)))
            .map_err(|e| {
                format!(
                    "bind {}:{}: {e}",
                    config.bind_host,
                    record.port.unwrap_or(0)
                )
            })?;
        let mut hosts = config.serving_hosts();
        hosts.extend(
            [
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ]
            .map(String::from),
        );
        let now = self.inner.engine.registry().clock().now();
        let serving = record
            .ca
            .serving_cert(&hosts, now)
            .map_err(|e| e.to_string())?;
        let tls = record
            .ca
            .rustls_server_config(&serving, true)
            .map_err(|e| e.to_string())?;
        Ok((listener, tls))
    }
}

impl DataPlaneHook for DataPlane {
    fn serve(&self, record: &ClusterRecord) -> Result<(String, u16), String> {
        let host = self.inner.config.advertise_host.clone();
        // Also for a cluster already served: its store may have just been
        // replaced (restore, reset) and needs its controllers.
        self.inner.engine.open_store(record);
        if let Some(port) = self.port_of(&record.id) {
            return Ok((host, port));
        }
        let (listener, tls) = self.bind(record)?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        // The socket is bound now and queues connections until the control
        // thread's server accepts them, so the endpoint is real from here on.
        self.inner
            .commands
            .send(Command::Serve {
                cluster: ClusterContext {
                    id: record.id.clone(),
                    name: record.name.clone(),
                },
                engine: self.inner.engine.clone(),
                listener,
                tls: Box::new(tls),
            })
            .map_err(|_| DataPlaneError::Stopped.to_string())?;
        self.inner.ports.lock().insert(record.id.clone(), port);
        self.inner.engine.listener_bound(&record.id, &host, port);
        tracing::info!(cluster = %record.name, port, "cluster listener serving");
        Ok((host, port))
    }

    fn record_changed(&self, record: &ClusterRecord) {
        self.inner.engine.record_changed(record);
    }

    fn retire(&self, id: &str) {
        self.inner.engine.drop_store(id);
        if self.inner.ports.lock().remove(id).is_some() {
            let _ = self
                .inner
                .commands
                .send(Command::Retire { id: id.to_owned() });
        }
    }
}

async fn control_loop(mut rx: mpsc::UnboundedReceiver<Command>) {
    let mut servers: HashMap<String, ServerHandle> = HashMap::new();
    while let Some(cmd) = rx.recv().await {
        match cmd {
            Command::Serve {
                cluster,
                engine,
                listener,
                tls,
            } => match start_server(cluster.clone(), engine, listener, *tls) {
                Ok(handle) => {
                    servers.insert(cluster.id, handle);
                }
                Err(e) => {
                    tracing::error!(cluster = %cluster.name, error = %e, "cluster listener failed");
                }
            },
            Command::Retire { id } => {
                if let Some(handle) = servers.remove(&id) {
                    handle.stop(false).await;
                }
            }
            Command::Shutdown { done } => {
                for (_, handle) in servers.drain() {
                    handle.stop(false).await;
                }
                let _ = done.send(());
                return;
            }
        }
    }
}

fn start_server(
    cluster: ClusterContext,
    engine: Engine,
    listener: TcpListener,
    mut tls: rustls::ServerConfig,
) -> std::io::Result<ServerHandle> {
    let mut protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    protocols.extend(std::mem::take(&mut tls.alpn_protocols));
    tls.alpn_protocols = protocols;
    let acceptor = Acceptor::new(tls);
    let name = format!("kemu-cluster-{}", cluster.id);
    // actix-web's HttpServer, spelled out to put SpdyUpgrade between TLS
    // and HTTP.
    let server = actix_server::Server::build()
        // Each cluster's requests spread over the cores, as kube-apiserver's
        // goroutines do: a busy cluster is not held to one thread.
        .workers(workers())
        .disable_signals()
        .shutdown_timeout(0)
        .listen(name, listener, move || {
            let cluster = cluster.clone();
            let engine = engine.clone();
            let app = App::new()
                .wrap(actix_web::middleware::from_fn(crate::auth::authenticate))
                .wrap(actix_web::middleware::from_fn(
                    crate::api::deadline::deadline,
                ))
                .wrap(actix_web::middleware::from_fn(
                    crate::api::recover::catch_panics,
                ))
                .wrap(actix_web::middleware::from_fn(crate::api::observe::record))
                .configure(move |cfg| engine.configure(cfg, cluster));
            let http = HttpService::build()
                .keep_alive(IDLE_TIMEOUT)
                .on_connect_ext(
                    |io: &SpdyUpgrade<TlsStream<TcpStream>>, ext: &mut Extensions| {
                        identity::on_connect(io.get_ref() as &dyn std::any::Any, ext)
                    },
                )
                .finish(map_config(app.into_factory(), |()| AppConfig::default()));
            acceptor
                .clone()
                .map_err(|e| tracing::debug!(error = ?e, "TLS handshake"))
                .and_then(|io: TlsStream<TcpStream>| async move {
                    let h2 = io.get_ref().1.alpn_protocol() == Some(b"h2");
                    let protocol = if h2 { Protocol::Http2 } else { Protocol::Http1 };
                    let peer = io.get_ref().0.peer_addr().ok();
                    Ok((SpdyUpgrade::new(io, !h2), protocol, peer))
                })
                .and_then(http.map_err(|e| tracing::debug!(error = ?e, "connection")))
        })?
        .run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok(handle)
}
