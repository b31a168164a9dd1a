//! `kemu`: EKS, GKE and AKS facades and their clusters' Kubernetes API, in one
//! process with in-memory state.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use kemu::persist::{self, Persistence, SyncPolicy};
use kemu::server::{self, Listeners};
use kemu::{Config, Kemu};

// glibc's allocator costs a third of the controllers' CPU at scale and
// fragments across worker threads; a host mounting kemu picks its own.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Log output format.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Emulates Amazon EKS, Google GKE and Azure AKS on this machine.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Talk to a running kemu instead of starting one.
    #[command(subcommand)]
    command: Option<Admin>,
    /// Keep every cloud resource, cluster CA and Kubernetes object in DIR (a
    /// write-ahead log plus snapshots): a restart, even `kill -9`, loses no
    /// acknowledged write.
    #[arg(long, env = "KEMU_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Start from a state file written by `kemu snapshot` (replacing what
    /// --data-dir holds).
    #[arg(long, env = "KEMU_RESTORE")]
    restore: Option<PathBuf>,
    /// When the state directory's log reaches the disk: `group` (fdatasync
    /// every 50 ms; a crash of kemu loses nothing, a power cut up to 50 ms) or
    /// `always` (before every answer).
    #[arg(long, env = "KEMU_FSYNC", value_enum, default_value = "group")]
    fsync: SyncPolicy,
    /// Log bytes after which the state directory is compacted into a snapshot.
    #[arg(long, env = "KEMU_COMPACT_AFTER", default_value_t = persist::COMPACT_AFTER)]
    compact_after: u64,
    /// Admin endpoint port (snapshot, reset; plain HTTP on the bind host). The
    /// default, 0, picks a free one: the ready line's `admin` says which.
    #[arg(long, env = "KEMU_ADMIN_PORT", default_value_t = 0)]
    admin_port: u16,
    /// Also append every request kemu serves (facades and clusters) to FILE,
    /// one JSON object per line (`kemu requests` reads the last 10,000 from
    /// memory).
    #[arg(long, env = "KEMU_REQUEST_LOG")]
    request_log: Option<PathBuf>,
    /// Address the facades and cluster listeners bind to.
    #[arg(long, env = "KEMU_BIND_HOST", default_value = "127.0.0.1")]
    bind_host: String,
    /// Host put in cluster endpoints and certificates (default: the bind host,
    /// or 127.0.0.1 for a wildcard bind).
    #[arg(long, env = "KEMU_ADVERTISE_HOST")]
    advertise_host: Option<String>,
    /// EKS facade port (HTTP); 0 picks a free one.
    #[arg(long, env = "KEMU_EKS_PORT", default_value_t = 4750)]
    eks_port: u16,
    /// GKE facade port (HTTP); 0 picks a free one.
    #[arg(long, env = "KEMU_GKE_PORT", default_value_t = 4751)]
    gke_port: u16,
    /// AKS facade port (HTTPS); 0 picks a free one.
    #[arg(long, env = "KEMU_AKS_PORT", default_value_t = 4752)]
    aks_port: u16,
    /// An AKS service principal as `CLIENT_ID=SECRET` (repeatable). With none,
    /// any client id and secret log in.
    #[arg(
        long = "aks-service-principal",
        env = "KEMU_AKS_SERVICE_PRINCIPALS",
        value_delimiter = ','
    )]
    aks_service_principals: Vec<String>,
    /// Seconds an AKS create, update or delete stays in progress.
    #[arg(long, env = "KEMU_AKS_PROVISIONING_DELAY", default_value_t = 0)]
    aks_provisioning_delay: u64,
    /// Seconds an EKS cluster stays CREATING (and node groups, add-ons and
    /// updates in their transitional status), as on AWS.
    #[arg(long, env = "KEMU_EKS_PROVISIONING_DELAY", default_value_t = 0)]
    eks_provisioning_delay: u64,
    /// Seconds a GKE cluster stays PROVISIONING (updates RECONCILING,
    /// deletions STOPPING) and its operations RUNNING, as on Google Cloud.
    #[arg(long, env = "KEMU_GKE_PROVISIONING_DELAY", default_value_t = 0)]
    gke_provisioning_delay: u64,
    /// Serve no web dashboard on the admin endpoint (its API stays).
    #[arg(long, env = "KEMU_NO_DASHBOARD")]
    no_dashboard: bool,
    /// Run the facades only: clusters show the sentinel endpoint and no CA.
    #[arg(long, env = "KEMU_NO_DATAPLANE")]
    no_dataplane: bool,
    /// Directory for files kemu hands to clients (the facades' CA bundle).
    #[arg(long, env = "KEMU_RUN_DIR")]
    run_dir: Option<PathBuf>,
    /// How clusters authorize requests: `rbac` (as a real cluster) or
    /// `allow-all` (every request is allowed, anonymous ones included).
    #[arg(long, env = "KEMU_AUTHORIZATION", default_value = "rbac")]
    authorization: kemu::Mode,
    /// A fixture file to load at start-up (repeatable): clusters in any cloud
    /// and the manifests to apply in each. See fixtures/README.md.
    #[arg(long = "fixture", env = "KEMU_FIXTURES", value_delimiter = ',')]
    fixtures: Vec<PathBuf>,
    /// Log format.
    #[arg(long, env = "KEMU_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Log filter, in `tracing` env-filter syntax.
    #[arg(long, env = "KEMU_LOG", default_value = "warn,kemu=info")]
    log: String,
}

/// Commands for a running kemu, through its admin endpoint, and the
/// benchmark.
#[derive(Debug, Subcommand)]
enum Admin {
    /// Start kemu as a process of its own, measure one of its clusters over
    /// HTTPS and print a table, with nginx serving the same bytes and any real
    /// cluster given beside it (see scripts/bench).
    Bench {
        /// Runs of each case.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Replicas of the scale case's Deployment (100 per Node); 0 skips it.
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
        /// ConfigMaps created per run of the memory case.
        #[arg(long, default_value_t = 20_000)]
        objects: usize,
        /// The nginx binary (default: nginx on the PATH or in /usr/sbin).
        #[arg(long)]
        nginx: Option<PathBuf>,
        /// A kubeconfig of a real cluster to measure beside kemu.
        #[arg(long)]
        peer_kubeconfig: Option<PathBuf>,
        /// A file of the peer's process ids (one per line), for its memory.
        #[arg(long)]
        peer_pids: Option<PathBuf>,
        /// The peer's name in the table.
        #[arg(long, default_value = "kube-apiserver + etcd")]
        peer_name: String,
        /// Only these cases (get, list, token, create, watch, memory, pods).
        #[arg(long, value_delimiter = ',', value_parser = kemu::bench::CASES)]
        cases: Vec<String>,
    },
    /// Write the whole state of a running kemu to FILE (for `--restore FILE`).
    Snapshot {
        /// Where to write the state file.
        file: PathBuf,
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
    },
    /// Return a running kemu to its start-up state.
    Reset {
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
    },
    /// Print the shell lines that point a cloud CLI at a running kemu:
    /// `eval "$(kemu env aws)"`.
    Env {
        /// aws, gcloud or az.
        #[arg(value_parser = ["aws", "gcloud", "az"])]
        cli: String,
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
    },
    /// List every cluster of every cloud a running kemu holds.
    Clusters {
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print (or write) a cluster-admin kubeconfig for one cluster.
    Kubeconfig {
        /// The cluster's name.
        name: String,
        /// Its cloud (eks, gke or aks), when two clouds have one of that name.
        #[arg(long)]
        cloud: Option<String>,
        /// Write it to FILE instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
    },
    /// Print the requests a running kemu served: every facade and cluster.
    Requests {
        /// The admin endpoint: the ready line's `admin`.
        #[arg(long, env = "KEMU_ADMIN_URL")]
        admin: String,
        /// Only this cluster's (its name).
        #[arg(long)]
        cluster: Option<String>,
        /// Only these status codes: `404`, or a class such as `4xx`.
        #[arg(long)]
        status: Option<String>,
        /// Only this API's: kubernetes, eks, gke or aks.
        #[arg(long)]
        api: Option<String>,
        /// Keep printing requests as they come.
        #[arg(long, short)]
        follow: bool,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    init_logging(&cli);
    let result = match &cli.command {
        Some(command) => admin(command),
        None => actix_rt::System::new().block_on(run(cli)),
    };
    // The message alone (with its causes), never a backtrace: a bad fixture's
    // file, line and reason is what the user needs to read.
    if let Err(e) = result {
        eprintln!("Error: {e:#}");
        std::process::exit(1);
    }
}

fn bench(options: kemu::bench::Options) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(kemu::bench::run(&options))
}

fn admin(command: &Admin) -> anyhow::Result<()> {
    match command {
        Admin::Bench {
            runs,
            pods,
            objects,
            nginx,
            peer_kubeconfig,
            peer_pids,
            peer_name,
            cases,
        } => bench(kemu::bench::Options {
            kemu: std::env::current_exe().unwrap_or_else(|_| "kemu".into()),
            runs: (*runs).max(1),
            pods: *pods,
            objects: (*objects).max(1),
            nginx: nginx.clone(),
            peer_kubeconfig: peer_kubeconfig.clone(),
            peer_pids: peer_pids.clone(),
            peer_name: peer_name.clone(),
            cases: cases.clone(),
        })?,
        Admin::Snapshot { file, admin } => {
            let body = kemu::admin::call(admin, "GET", "/kemu/snapshot")?;
            let tmp = file.with_extension("tmp");
            std::fs::write(&tmp, &body)?;
            std::fs::rename(&tmp, file)?;
            eprintln!("kemu: wrote {} ({} bytes)", file.display(), body.len());
        }
        Admin::Reset { admin } => {
            let body = kemu::admin::call(admin, "POST", "/kemu/reset")?;
            println!("{}", String::from_utf8_lossy(&body));
        }
        Admin::Env { cli, admin } => {
            let body = kemu::admin::call(admin, "GET", "/kemu/ready")?;
            let ready: kemu::server::ReadyLine = serde_json::from_slice(&body)?;
            let lines = kemu::env::lines(cli, &ready)
                .ok_or_else(|| anyhow::anyhow!("kemu env: unknown CLI {cli}"))?;
            print!("{lines}");
        }
        Admin::Clusters { admin, json } => {
            let body = kemu::admin::call(admin, "GET", "/kemu/clusters")?;
            let rows: Vec<kemu::admin::ClusterRow> = serde_json::from_slice(&body)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!(
                    "{:<6} {:<24} {:<48} {:<13} {:<8} {:<30} KUBECONFIG",
                    "CLOUD", "NAME", "SCOPE", "STATE", "VERSION", "ENDPOINT"
                );
                for r in rows {
                    println!(
                        "{:<6} {:<24} {:<48} {:<13} {:<8} {:<30} {}",
                        r.cloud, r.name, r.scope, r.state, r.version, r.endpoint, r.kubeconfig
                    );
                }
            }
        }
        Admin::Kubeconfig {
            name,
            cloud,
            output,
            admin,
        } => {
            let mut path = format!("/kemu/kubeconfig?name={}", kemu::admin::query_escape(name));
            if let Some(c) = cloud {
                path.push_str(&format!("&cloud={}", kemu::admin::query_escape(c)));
            }
            let body = kemu::admin::call(admin, "GET", &path)?;
            match output {
                Some(file) => {
                    std::fs::write(file, &body)
                        .with_context(|| format!("writing {}", file.display()))?;
                    eprintln!("kemu: wrote {}", file.display());
                }
                None => print!("{}", String::from_utf8_lossy(&body)),
            }
        }
        Admin::Requests {
            admin,
            cluster,
            status,
            api,
            follow,
            json,
        } => {
            let mut query = String::new();
            for (k, v) in [("cluster", cluster), ("status", status), ("api", api)] {
                if let Some(v) = v {
                    query.push_str(&format!("&{k}={}", kemu::admin::query_escape(v)));
                }
            }
            let mut after = 0;
            let mut printer = kemu::admin::RequestTable::new(*json);
            loop {
                // A follower's call waits on the server for the next record.
                let wait = if *follow { "&wait=1" } else { "" };
                let path = format!("/kemu/requests?after={after}{query}{wait}");
                let body = kemu::admin::call(admin, "GET", &path)?;
                let records: Vec<kemu::shared::observe::Record> = serde_json::from_slice(&body)?;
                if let Some(last) = records.last() {
                    after = last.seq;
                }
                printer.print(&records);
                if !*follow {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Loads the state to start from (a state file, the state directory) and
/// puts it in place; returns the state directory kemu now logs to.
fn load_state(kemu: &kemu::Kemu, cli: &Cli) -> anyhow::Result<Option<Persistence>> {
    let restored = cli
        .restore
        .as_deref()
        .map(persist::read_state_file)
        .transpose()?;
    let Some(dir) = &cli.data_dir else {
        if let Some(image) = &restored {
            persist::apply(kemu, image, persist::ApplyMode::Startup)?;
        }
        return Ok(None);
    };
    let (persistence, stored) = Persistence::open_with(dir, cli.fsync, cli.compact_after)?;
    let rewrite = restored.is_some();
    persistence.attach(kemu, restored.as_ref().unwrap_or(&stored), rewrite)?;
    Ok(Some(persistence))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let advertise_host =
        cli.advertise_host
            .clone()
            .unwrap_or_else(|| match cli.bind_host.as_str() {
                "0.0.0.0" | "::" => "127.0.0.1".to_owned(),
                h => h.to_owned(),
            });
    let builder = || -> anyhow::Result<kemu::KemuBuilder> {
        Ok(Kemu::builder()
            .config(Config {
                advertise_host: advertise_host.clone(),
                bind_host: cli.bind_host.clone(),
            })
            .dataplane(!cli.no_dataplane)
            .authorization(cli.authorization)
            .aks_config(aks_config(&cli)?)
            .eks_settings(kemu_eks::Settings {
                provisioning: std::time::Duration::from_secs(cli.eks_provisioning_delay),
                transition: std::time::Duration::from_secs(cli.eks_provisioning_delay),
                ..Default::default()
            })
            .gke_options(kemu_gke::GkeOptions {
                provisioning: std::time::Duration::from_secs(cli.gke_provisioning_delay),
            }))
    };
    // A bad fixture fails here, before the real kemu holds any state (or
    // touches the state directory): the files are checked, then loaded into a
    // throwaway kemu.
    let fixtures = kemu::fixtures::read(&cli.fixtures, kemu_eks::DEFAULT_ACCOUNT)?;
    if !fixtures.is_empty() && cli.no_dataplane {
        anyhow::bail!(
            "--fixture needs the data plane: its manifests are applied through each cluster's API (drop --no-dataplane)"
        );
    }
    if !fixtures.is_empty() {
        tracing::info!(
            clusters = fixtures.len(),
            "checking the fixtures in a throwaway kemu"
        );
        let scratch = builder()?
            .dataplane(true)
            .aks_config(kemu_aks::AksConfig::default())
            .build()?;
        kemu::fixtures::dry_run(scratch, &fixtures, &cli.bind_host).await?;
    }
    let kemu = builder()?.build()?;
    if let Some(path) = &cli.request_log {
        kemu.registry()
            .observer()
            .log_to(path)
            .with_context(|| format!("--request-log {}", path.display()))?;
    }
    let persistence = load_state(&kemu, &cli)?;
    // A state directory or state file that already holds clusters is the
    // world the fixtures made on an earlier start: they are not loaded twice.
    let resumed = !kemu.registry().list(|_| true).is_empty();
    let run_dir = cli
        .run_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("kemu-{}", std::process::id())));
    let mut running = server::start_with(
        kemu,
        &Listeners {
            bind_host: cli.bind_host.clone(),
            eks_port: cli.eks_port,
            gke_port: cli.gke_port,
            aks_port: cli.aks_port,
            run_dir: run_dir.clone(),
        },
        server::Extras {
            admin_port: Some(cli.admin_port),
            persistence,
            dashboard: !cli.no_dashboard,
        },
    )?;
    if resumed && !fixtures.is_empty() {
        eprintln!("kemu: the state already holds clusters; fixtures are not loaded again");
    } else if !fixtures.is_empty() {
        tracing::info!(clusters = fixtures.len(), "loading the fixtures");
        let kemu = running.kemu().clone();
        running.ready.clusters = kemu::fixtures::load(
            &kemu,
            &running.ready,
            &fixtures,
            &run_dir.join("kubeconfigs"),
        )
        .await?;
    }
    // Listen for signals before announcing readiness: a script may send SIGTERM
    // the moment it reads the ready line.
    let signals = shutdown_signal()?;
    running.mark_started();
    println!("{}", serde_json::to_string(&running.ready)?);
    // Text for a person; never inside JSON logs.
    if matches!(cli.log_format, LogFormat::Text) {
        eprint!("{}", kemu::env::hint(&running.ready));
    }

    signals.await;
    tracing::info!("shutting down");
    running.stop().await;
    Ok(())
}

fn aks_config(cli: &Cli) -> anyhow::Result<kemu_aks::AksConfig> {
    let mut config = kemu_aks::AksConfig {
        provisioning_delay: std::time::Duration::from_secs(cli.aks_provisioning_delay),
        ..Default::default()
    };
    for principal in &cli.aks_service_principals {
        let (id, secret) = principal.split_once('=').ok_or_else(|| {
            anyhow::anyhow!("--aks-service-principal {principal}: expected CLIENT_ID=SECRET")
        })?;
        config
            .service_principals
            .insert(id.to_owned(), secret.to_owned());
    }
    Ok(config)
}

/// Resolves on SIGINT or SIGTERM; the handlers are installed when this returns.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    })
}

fn init_logging(cli: &Cli) {
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    use std::io::IsTerminal as _;
    // Colour only for a person at a terminal, never into a file or a pipe.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
