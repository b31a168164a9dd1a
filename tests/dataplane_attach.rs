//! A cluster created while the data plane is off shows the sentinel, and gets
//! its real endpoint and CA once the data plane attaches.

mod common;

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{Advertised, advertise};

#[test]
fn attach_reconciles_sentinel_clusters() {
    let kemu = Kemu::builder().dataplane(false).build().unwrap();
    let created = kemu.registry().create(eks_spec("early")).unwrap();
    assert_eq!(advertise(&created), Advertised::Sentinel);
    let eks = kemu_eks::render::cluster(&created);
    assert_eq!(
        eks["endpoint"],
        "https://dataplane-not-live.kemu.invalid:443"
    );
    assert_eq!(eks["certificateAuthority"], serde_json::json!({}));

    kemu.attach_dataplane().unwrap();
    let live = kemu.registry().get(&created.id).unwrap();
    let Advertised::Live { host, port, ca_pem } = advertise(&live) else {
        panic!("not live after attach: {live:?}");
    };
    assert_eq!(host, "127.0.0.1");
    assert_eq!(Some(port), live.port);
    assert_eq!(
        ca_pem,
        created.ca.cert_pem(),
        "the CA made at create is kept"
    );

    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &live, &ca_pem, kemu.clock().now());
    let out = sandbox.kubectl(&kc, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", text(&out));
}
