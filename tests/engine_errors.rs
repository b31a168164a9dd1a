//! Bad requests get the `metav1.Status` kube-apiserver answers, and change
//! nothing: malformed JSON, wrong type meta, bad names, a name that disagrees
//! with the URL, unsupported media types, oversized objects, unsupported field
//! selectors, expired continue tokens.

mod common;

use std::time::Duration;

use common::eks_spec;
use kemu::Kemu;
use kemu::shared::{Clock, FakeClock};
use serde_json::{Value, json};

struct Api {
    client: reqwest::Client,
    server: String,
    rt: tokio::runtime::Runtime,
}

impl Api {
    fn call(&self, method: &str, path: &str, ct: &str, body: Vec<u8>) -> (u16, Value) {
        self.rt.block_on(async {
            let resp = self
                .client
                .request(method.parse().unwrap(), format!("{}{path}", self.server))
                .header("content-type", ct)
                .body(body)
                .send()
                .await
                .unwrap();
            let code = resp.status().as_u16();
            let body = resp.bytes().await.unwrap();
            (code, serde_json::from_slice(&body).unwrap_or(Value::Null))
        })
    }

    fn json(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        self.call(
            method,
            path,
            "application/json",
            body.to_string().into_bytes(),
        )
    }
}

fn setup(clock: std::sync::Arc<FakeClock>) -> (Kemu, Api) {
    let kemu = Kemu::builder().clock(clock.clone()).build().unwrap();
    let a = kemu.registry().create(eks_spec("errs")).unwrap();
    let cert =
        a.ca.client_cert("kemu-admin", &["system:masters".into()], clock.now())
            .unwrap();
    kemu::shared::pki::install_crypto_provider();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(a.ca.cert_pem().as_bytes()).unwrap()])
        .identity(
            reqwest::Identity::from_pem(format!("{}{}", cert.cert_pem, cert.key_pem).as_bytes())
                .unwrap(),
        )
        .build()
        .unwrap();
    let server = kemu::shared::advertise(&a).server_url().unwrap();
    common::wait_for_bootstrap(&kemu, &a);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (kemu, Api { client, server, rt })
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn bad_requests_get_upstream_statuses_and_store_nothing() {
    let (_kemu, api) = setup(FakeClock::at_epoch());
    let (_, list) = api.json("GET", CMS, Value::Null);
    let rv = list["metadata"]["resourceVersion"].clone();

    let (code, s) = api.call("POST", CMS, "application/json", b"{not json".to_vec());
    assert_eq!(
        (code, s["reason"].as_str()),
        (400, Some("BadRequest")),
        "{s}"
    );
    assert_eq!(s["kind"], "Status");

    let (code, s) = api.json(
        "POST",
        CMS,
        json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    );
    assert_eq!(code, 400, "{s}");
    assert_eq!(
        s["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
    let (code, s) = api.json(
        "POST",
        CMS,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}),
    );
    assert_eq!(code, 400, "{s}");

    let (code, s) = api.json("POST", CMS, json!({"metadata": {"name": "Not_Valid"}}));
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")), "{s}");
    assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    let (code, s) = api.json("POST", CMS, json!({"metadata": {}}));
    assert_eq!(code, 422, "{s}");
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("name or generateName is required")
    );

    let (code, s) = api.json(
        "POST",
        CMS,
        json!({"metadata": {"name": "x", "namespace": "other"}}),
    );
    assert_eq!(code, 400, "{s}");

    let (code, s) = api.call("POST", CMS, "text/plain", b"hello".to_vec());
    assert_eq!(
        (code, s["reason"].as_str()),
        (415, Some("UnsupportedMediaType")),
        "{s}"
    );

    // Within the 3 MiB body limit, over ConfigMap's 1 MiB of data: upstream's
    // validation refuses it before the store sees it.
    let big = json!({"metadata": {"name": "big"}, "data": {"a": "x".repeat(2_000_000)}});
    let (code, s) = api.json("POST", CMS, big);
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")), "{s}");
    assert_eq!(
        s["message"],
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );
    let huge = json!({"metadata": {"name": "huge"}, "data": {"a": "x".repeat(4_000_000)}});
    let (code, _) = api.json("POST", CMS, huge);
    assert_eq!(code, 413);

    let (code, s) = api.json(
        "GET",
        &format!("{CMS}?fieldSelector=spec.foo%3Dbar"),
        Value::Null,
    );
    assert_eq!(
        (code, s["message"].as_str()),
        (
            400,
            Some(
                "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )
        )
    );
    let (code, _) = api.json("GET", &format!("{CMS}?labelSelector=a%20b"), Value::Null);
    assert_eq!(code, 400);

    let (code, s) = api.json(
        "POST",
        "/api/v1/configmaps",
        json!({"metadata": {"name": "x"}}),
    );
    assert_eq!(
        (code, s["reason"].as_str()),
        (405, Some("MethodNotAllowed")),
        "{s}"
    );
    let (code, _) = api.json(
        "GET",
        "/api/v1/namespaces/default/nosuchthings",
        Value::Null,
    );
    assert_eq!(code, 404);

    let (_, list) = api.json("GET", CMS, Value::Null);
    assert_eq!(
        list["metadata"]["resourceVersion"], rv,
        "nothing was stored"
    );
    // Only the kube-root-ca.crt the controllers publish in every namespace.
    let names: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["metadata"]["name"])
        .collect();
    assert_eq!(names, [&json!("kube-root-ca.crt")]);

    // A good create, then a PUT whose body names another object.
    let (code, created) = api.json(
        "POST",
        CMS,
        json!({"metadata": {"generateName": "gen-"}, "data": {"k": "v"}}),
    );
    assert_eq!(code, 201, "{created}");
    let name = created["metadata"]["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let mut other = created.clone();
    other["metadata"]["name"] = json!("someone-else");
    let (code, s) = api.json("PUT", &format!("{CMS}/{name}"), other);
    assert_eq!(code, 400, "{s}");
    assert_eq!(
        s["message"],
        format!(
            "the name of the object (someone-else) does not match the name on the URL ({name})"
        )
    );
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}"),
        "application/xml",
        b"<x/>".to_vec(),
    );
    assert_eq!(code, 415, "{s}");
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}"),
        "application/json-patch+json",
        br#"[{"op":"remove","path":"/data/nope"}]"#.to_vec(),
    );
    // Upstream answers a JSON patch that does not apply with a generic 422.
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["reason"], "Invalid");
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}"),
        "application/json-patch+json",
        br#"[{"op":"add","path":"/data/n","value":"1"}]"#.to_vec(),
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["data"], json!({"k": "v", "n": "1"}));
    // Server-side apply without a field manager, and force on a non-apply patch:
    // upstream's PatchOptions validation.
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}"),
        "application/apply-patch+yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n".to_vec(),
    );
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(s["details"]["causes"][0]["field"], "fieldManager");
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}?force=true"),
        "application/merge-patch+json",
        b"{}".to_vec(),
    );
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["details"]["causes"][0]["field"], "force");
    // An invalid strategic merge patch: a plain 500 as upstream, nothing stored.
    let (code, s) = api.call(
        "PATCH",
        &format!("{CMS}/{name}"),
        "application/strategic-merge-patch+json",
        br#"{"metadata":{"$patch":"frob"}}"#.to_vec(),
    );
    assert_eq!(code, 500, "{s}");
    assert!(s.get("reason").is_none(), "{s}");
    assert_eq!(
        s["message"],
        "unknown patch type: frob in map: map[$patch:frob]"
    );
}

#[test]
fn expired_continue_tokens_get_410() {
    let clock = FakeClock::at_epoch();
    let (_kemu, api) = setup(clock.clone());
    for i in 0..5 {
        let (code, _) = api.json("POST", CMS, json!({"metadata": {"name": format!("c{i}")}}));
        assert_eq!(code, 201);
    }
    let (_, page) = api.json("GET", &format!("{CMS}?limit=2"), Value::Null);
    // c0..c4 and the kube-root-ca.crt every namespace holds: 2 of 6 returned.
    assert_eq!(page["metadata"]["remainingItemCount"], 4);
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    api.json("POST", CMS, json!({"metadata": {"name": "later"}}));
    let (code, next) = api.json(
        "GET",
        &format!("{CMS}?limit=2&continue={token}"),
        Value::Null,
    );
    assert_eq!(code, 200);
    let names: Vec<&str> = next["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c2", "c3"]);
    assert_eq!(
        next["metadata"]["resourceVersion"],
        page["metadata"]["resourceVersion"]
    );
    clock.advance(Duration::from_secs(6 * 60));
    let (code, s) = api.json(
        "GET",
        &format!("{CMS}?limit=2&continue={token}"),
        Value::Null,
    );
    assert_eq!((code, s["reason"].as_str()), (410, Some("Expired")), "{s}");
    // As upstream: the Status carries a token that goes on from the same key
    // at the latest resourceVersion, an inconsistent list that sees `later`.
    let inconsistent = s["metadata"]["continue"].as_str().unwrap().to_owned();
    let (code, rest) = api.json(
        "GET",
        &format!("{CMS}?limit=10&continue={inconsistent}"),
        Value::Null,
    );
    assert_eq!(code, 200, "{rest}");
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c2", "c3", "c4", "kube-root-ca.crt", "later"]);
    assert_ne!(
        rest["metadata"]["resourceVersion"],
        page["metadata"]["resourceVersion"]
    );
}
