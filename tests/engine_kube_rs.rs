//! kube-rs against a kemu cluster: a reflector (list+watch, and the streaming
//! watch-list with `sendInitialEvents`) stays in sync through creates,
//! updates and deletes.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Sandbox, eks_spec, write_kubeconfig};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Config};

fn names(store: &Store<ConfigMap>) -> BTreeMap<String, Option<String>> {
    store
        .state()
        .iter()
        // Every namespace holds the controllers' kube-root-ca.crt, as on a real cluster.
        .filter(|cm| cm.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|cm| {
            let v = cm.data.as_ref().and_then(|d| d.get("v").cloned());
            (cm.metadata.name.clone().unwrap_or_default(), v)
        })
        .collect()
}

/// Waits (bounded) until the reflector shows `want`.
async fn converge(store: &Store<ConfigMap>, want: &[(&str, &str)]) {
    let want: BTreeMap<String, Option<String>> = want
        .iter()
        .map(|(n, v)| ((*n).to_owned(), Some((*v).to_owned())))
        .collect();
    for _ in 0..500 {
        if names(store) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(names(store), want, "reflector out of sync");
}

fn cm(name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("v".to_owned(), v.to_owned())].into()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflectors_stay_in_sync() {
    let kemu = kemu::Kemu::builder().build().unwrap();
    let a = kemu.registry().create(eks_spec("kube")).unwrap();
    let sandbox = Sandbox::new();
    let path = sandbox.path("kubeconfig");
    write_kubeconfig(&path, &a, a.ca.cert_pem(), kemu.clock().now());
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&path).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = Client::try_from(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("before", "0"))
        .await
        .unwrap();

    let mut stores = Vec::new();
    for cfg in [
        watcher::Config::default(),
        watcher::Config::default().streaming_lists(),
    ] {
        let (reader, writer) = reflector::store();
        let stream = reflector::reflector(writer, watcher(api.clone(), cfg)).applied_objects();
        tokio::spawn(stream.for_each(|_| std::future::ready(())));
        reader.wait_until_ready().await.unwrap();
        stores.push(reader);
    }
    for s in &stores {
        converge(s, &[("before", "0")]).await;
    }

    api.create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    let mut b = api.get("b").await.unwrap();
    b.data = Some([("v".to_owned(), "3".to_owned())].into());
    api.replace("b", &PostParams::default(), &b).await.unwrap();
    api.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    for s in &stores {
        converge(s, &[("a", "2"), ("b", "3")]).await;
    }
}
