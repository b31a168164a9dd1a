//! A host application mounting kemu's three facades on its own listeners, one
//! call each, over one shared registry and data plane. Prints one JSON line
//! with its URLs, then serves until killed.

use actix_web::{App, HttpServer};

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let kemu = kemu::Kemu::builder().build()?;
    let (eks, gke, aks) = (kemu.eks(), kemu.gke(), kemu.aks());

    // The host's own routes live beside the facades.
    let eks_server = HttpServer::new(move || {
        App::new()
            .route(
                "/host/health",
                actix_web::web::get().to(|| async { "host ok" }),
            )
            .configure(eks.clone())
    })
    .workers(1)
    .bind(("127.0.0.1", 0))?;
    let gke_server = HttpServer::new(move || App::new().configure(gke.clone()))
        .workers(1)
        .bind(("127.0.0.1", 0))?;
    let aks_server = HttpServer::new(move || App::new().configure(aks.clone()))
        .workers(1)
        .bind_rustls_0_23(("127.0.0.1", 0), kemu.facade_tls()?)?;

    let line = serde_json::json!({
        "eks": format!("http://{}", eks_server.addrs()[0]),
        "gke": format!("http://{}", gke_server.addrs()[0]),
        "aks": format!("https://{}", aks_server.addrs()[0]),
        "ca": kemu.facade_ca_pem(),
    });
    println!("{line}");

    // A cluster registered by the host is visible through every facade's
    // registry and served by the shared data plane.
    kemu.registry().create(kemu::shared::ClusterSpec {
        scope: kemu::shared::OwnerScope::Eks {
            account: kemu_eks::DEFAULT_ACCOUNT.into(),
            region: kemu_eks::DEFAULT_REGION.into(),
        },
        name: "hosted".into(),
        version: "1.34".into(),
        node_pools: vec![],
        tags: Default::default(),
        provisioning: std::time::Duration::ZERO,
        extra: serde_json::Value::Null,
    })?;

    futures_util::future::try_join3(eks_server.run(), gke_server.run(), aks_server.run()).await?;
    Ok(())
}
