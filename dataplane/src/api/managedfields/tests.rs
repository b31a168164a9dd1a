//! Field management against upstream's documented behaviour.

use serde_json::{Value, json};

use super::*;
use crate::api::openapi;

fn writer(manager: &str, now: &str) -> Writer<'static> {
    Writer {
        manager: Box::leak(manager.to_owned().into_boxed_str()),
        api_version: "apps/v1".into(),
        now: now.into(),
        schema: openapi::definitions().get("io.k8s.api.apps.v1.Deployment"),
        status_subresource: true,
        subresource: None,
        reset: &[],
    }
}

fn deploy(replicas: i64, containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers}}}})
}

fn entry<'a>(o: &'a Value, manager: &str) -> Option<&'a Value> {
    o["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
}

#[test]
fn apply_creates_then_reapply_is_a_no_op() {
    let cfg = deploy(2, json!([{"name": "c", "image": "nginx:1"}]));
    let w = writer("kubectl", "2026-01-01T00:00:00Z");
    let created = apply(None, &cfg, &w, false).unwrap();
    let e = entry(&created, "kubectl").unwrap();
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["time"], "2026-01-01T00:00:00Z");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert_eq!(e["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    let w2 = writer("kubectl", "2026-01-01T00:05:00Z");
    let again = apply(Some(&created), &cfg, &w2, false).unwrap();
    assert_eq!(again, created, "same config, same object, same times");
}

#[test]
fn second_manager_conflicts_then_forces() {
    let w = writer("kubectl", "2026-01-01T00:00:00Z");
    let live = apply(
        None,
        &deploy(2, json!([{"name": "c", "image": "nginx:1"}])),
        &w,
        false,
    )
    .unwrap();
    let other = writer("ci", "2026-01-01T00:01:00Z");
    let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let err = apply(Some(&live), &cfg, &other, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"
    );
    let api: ApiError = err.into();
    let s = api.status();
    assert_eq!(s["code"], 409);
    assert_eq!(s["details"]["causes"][0]["reason"], "FieldManagerConflict");
    assert_eq!(s["details"]["causes"][0]["field"], ".spec.replicas");
    let forced = apply(Some(&live), &cfg, &other, true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    assert!(
        entry(&forced, "kubectl").unwrap()["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(
        entry(&forced, "ci").unwrap()["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
}

#[test]
fn dropped_fields_are_pruned_unless_owned() {
    let w = writer("a", "2026-01-01T00:00:00Z");
    let two = json!([{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]);
    let live = apply(None, &deploy(1, two), &w, false).unwrap();
    let one = apply(
        Some(&live),
        &deploy(1, json!([{"name": "c", "image": "i"}])),
        &w,
        false,
    )
    .unwrap();
    let names: Vec<&Value> = one["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("c")]);
    // An Update manager's label stays when the applier drops its own.
    let mut edited = one.clone();
    edited["metadata"]["labels"]["team"] = json!("x");
    track_update(
        Some(&one),
        &mut edited,
        &writer("kubectl-edit", "2026-01-01T00:02:00Z"),
    );
    assert_eq!(
        entry(&edited, "kubectl-edit").unwrap()["operation"],
        "Update"
    );
    let mut cfg = deploy(1, json!([{"name": "c", "image": "i"}]));
    cfg["metadata"]["labels"] = json!({"team": "x"});
    let after = apply(Some(&edited), &cfg, &w, false).unwrap();
    assert_eq!(after["metadata"]["labels"], json!({"team": "x"}));
}

#[test]
fn updates_record_their_manager_and_before_first_apply() {
    let mut created = deploy(1, json!([{"name": "c", "image": "i"}]));
    track_update(
        None,
        &mut created,
        &writer("kubectl-create", "2026-01-01T00:00:00Z"),
    );
    let e = entry(&created, "kubectl-create").unwrap();
    assert_eq!(
        e["fieldsV1"]["f:metadata"]["f:labels"],
        json!({".": {}, "f:app": {}})
    );
    assert!(
        e["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["."]
            .is_object()
    );
    // No managed fields yet: the first apply gives what exists to before-first-apply.
    let mut bare = created.clone();
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    let applied = apply(
        Some(&bare),
        &deploy(3, json!([{"name": "c", "image": "i"}])),
        &writer("mgr", "t"),
        true,
    )
    .unwrap();
    assert!(entry(&applied, BEFORE_FIRST_APPLY).is_some());
    assert_eq!(applied["spec"]["replicas"], 3);
}

#[test]
fn client_side_apply_migrates_to_kubectl() {
    let mut live = deploy(1, json!([{"name": "c", "image": "i"}]));
    let la = serde_json::to_string(&live).unwrap();
    live["metadata"]["annotations"] = json!({LAST_APPLIED: la});
    let mut stored = live.clone();
    track_update(
        None,
        &mut stored,
        &writer("kubectl-client-side-apply", "t0"),
    );
    let cfg = deploy(4, json!([{"name": "c", "image": "i"}]));
    let migrated = apply(Some(&stored), &cfg, &writer("kubectl", "t1"), false).unwrap();
    assert_eq!(migrated["spec"]["replicas"], 4);
    let err = apply(Some(&stored), &cfg, &writer("other", "t1"), false).unwrap_err();
    assert!(
        err.to_string()
            .contains("conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"),
        "{err}"
    );
}

#[test]
fn managed_fields_in_config_are_refused() {
    let mut cfg = deploy(1, json!([]));
    cfg["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        apply(None, &cfg, &writer("a", "t"), false),
        Err(ManagedFieldsError::BadRequest(
            "metadata.managedFields must be nil".into()
        ))
    );
}
