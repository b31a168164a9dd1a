//! The three facades render the one sentinel rule identically, for every
//! lifecycle state and every data-plane state.

mod common;

use base64::Engine;
use kemu::FakeClock;
use kemu::shared::kubeconfig::UserAuth;
use kemu::shared::sentinel::SENTINEL_HOST;
use kemu::shared::{ClusterRegistry, ClusterSpec, Lifecycle, OwnerScope, Serving};

/// What a client could take away from one rendering: (host, CA PEM).
type Seen = (Option<String>, Option<String>);

fn b64(v: &serde_json::Value) -> Option<String> {
    v.as_str().map(|s| {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(s).unwrap()).unwrap()
    })
}

fn host_of(endpoint: &str) -> String {
    let rest = endpoint.trim_start_matches("https://");
    rest.rsplit_once(':').map_or(rest, |(h, _)| h).to_owned()
}

fn spec(scope: OwnerScope) -> ClusterSpec {
    ClusterSpec {
        scope,
        name: "c".into(),
        version: "1.34".into(),
        node_pools: vec![],
        tags: Default::default(),
        provisioning: std::time::Duration::ZERO,
        extra: serde_json::Value::Null,
    }
}

#[test]
fn all_clouds_agree_for_every_state() {
    let registry = ClusterRegistry::new(FakeClock::at_epoch());
    let scopes = [
        OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        },
        OwnerScope::Gke {
            project: "p".into(),
            location: "us-central1".into(),
        },
        OwnerScope::Aks {
            subscription: "s".into(),
            resource_group: "rg".into(),
            location: "westeurope".into(),
        },
    ];
    let servings = [
        Serving::Disabled,
        Serving::Pending,
        Serving::Live {
            host: "127.0.0.1".into(),
            port: 40001,
        },
    ];
    let mut cases = 0;
    for lifecycle in Lifecycle::ALL {
        for serving in &servings {
            let mut seen: Vec<Seen> = Vec::new();
            let mut ca_pem = String::new();
            for scope in &scopes {
                let created = registry
                    .find(scope, "c")
                    .or_else(|_| registry.create(spec(scope.clone())))
                    .unwrap();
                let (_, record) = registry
                    .update(&created.id, |c| {
                        c.lifecycle = lifecycle;
                        c.serving = serving.clone();
                        Ok(())
                    })
                    .unwrap();
                ca_pem = record.ca.cert_pem().to_owned();
                let got: Seen = match scope.cloud() {
                    kemu::shared::Cloud::Eks => {
                        let c = kemu_eks::render::cluster(&record);
                        (
                            c["endpoint"].as_str().map(host_of),
                            b64(&c["certificateAuthority"]["data"]),
                        )
                    }
                    kemu::shared::Cloud::Gke => {
                        let c = kemu_gke::render::cluster(&record);
                        (
                            c["endpoint"].as_str().map(host_of),
                            b64(&c["masterAuth"]["clusterCaCertificate"]),
                        )
                    }
                    kemu::shared::Cloud::Aks => {
                        let c = kemu_aks::render::managed_cluster(&record);
                        let kubeconfig = kemu_aks::render::kubeconfig(
                            &record,
                            "clusterUser",
                            &UserAuth::Token("t".into()),
                        );
                        let ca = kubeconfig.map(|k| {
                            let doc: serde_json::Value = serde_json::from_str(&k).unwrap();
                            let cluster = &doc["clusters"][0]["cluster"];
                            assert_eq!(
                                cluster["server"].as_str().map(host_of),
                                c["properties"]["fqdn"].as_str().map(str::to_owned),
                            );
                            b64(&cluster["certificate-authority-data"]).unwrap()
                        });
                        (c["properties"]["fqdn"].as_str().map(str::to_owned), ca)
                    }
                };
                // The credential hooks agree with what is rendered.
                assert_eq!(
                    kemu_eks::render::credentials_available(&record),
                    got.1.is_some()
                );
                assert_eq!(
                    kemu_gke::render::credentials_available(&record),
                    got.1.is_some()
                );
                seen.push(got);
                cases += 1;
            }
            let expected: Seen = match (lifecycle, serving) {
                (Lifecycle::Provisioning | Lifecycle::Failed, _) => (None, None),
                (_, Serving::Live { host, .. }) => (Some(host.clone()), Some(ca_pem.clone())),
                _ => (Some(SENTINEL_HOST.to_owned()), None),
            };
            for (cloud, got) in ["eks", "gke", "aks"].iter().zip(&seen) {
                // The CAs differ per cluster; compare presence and host.
                assert_eq!(
                    (&got.0, got.1.is_some()),
                    (&expected.0, expected.1.is_some()),
                    "{cloud} {lifecycle:?} {serving:?}"
                );
                assert!(
                    got.1.is_none() || got.0.as_deref() != Some(SENTINEL_HOST),
                    "{cloud}: a CA beside the sentinel endpoint"
                );
            }
        }
    }
    assert_eq!(cases, 5 * 3 * 3);
}
