//! The generated registry agrees with the typed models (k8s-openapi).

use kemu_k8s_types::k8s_openapi::{self, api, apiextensions_apiserver, kube_aggregator};

use super::*;

/// The registry entry of `K` matches its `Resource` consts and scope.
fn agrees<K>(reg: &ResourceRegistry)
where
    K: k8s_openapi::Resource + k8s_openapi::ListableResource,
    K::Scope: 'static,
{
    let rt = reg
        .lookup(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)
        .unwrap_or_else(|| panic!("{} missing", K::KIND));
    assert_eq!(rt.kind, K::KIND);
    assert_eq!(rt.api_version(), K::API_VERSION);
    assert_eq!(rt.list_kind, K::LIST_KIND);
    let namespaced = std::any::TypeId::of::<K::Scope>()
        == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
    assert_eq!(rt.namespaced, namespaced, "{}", K::KIND);
}

#[test]
fn registry_matches_the_typed_models() {
    let reg = ResourceRegistry::builtin();
    agrees::<api::core::v1::Pod>(&reg);
    agrees::<api::core::v1::Namespace>(&reg);
    agrees::<api::core::v1::Node>(&reg);
    agrees::<api::core::v1::ConfigMap>(&reg);
    agrees::<api::core::v1::Secret>(&reg);
    agrees::<api::core::v1::Service>(&reg);
    agrees::<api::core::v1::Endpoints>(&reg);
    agrees::<api::core::v1::PersistentVolume>(&reg);
    agrees::<api::core::v1::PersistentVolumeClaim>(&reg);
    agrees::<api::core::v1::ServiceAccount>(&reg);
    agrees::<api::core::v1::Event>(&reg);
    agrees::<api::apps::v1::Deployment>(&reg);
    agrees::<api::apps::v1::StatefulSet>(&reg);
    agrees::<api::apps::v1::DaemonSet>(&reg);
    agrees::<api::apps::v1::ReplicaSet>(&reg);
    agrees::<api::batch::v1::Job>(&reg);
    agrees::<api::batch::v1::CronJob>(&reg);
    agrees::<api::autoscaling::v2::HorizontalPodAutoscaler>(&reg);
    agrees::<api::networking::v1::Ingress>(&reg);
    agrees::<api::networking::v1::IPAddress>(&reg);
    agrees::<api::rbac::v1::ClusterRole>(&reg);
    agrees::<api::rbac::v1::RoleBinding>(&reg);
    agrees::<api::storage::v1::StorageClass>(&reg);
    agrees::<api::storage::v1::CSIStorageCapacity>(&reg);
    agrees::<api::coordination::v1::Lease>(&reg);
    agrees::<api::discovery::v1::EndpointSlice>(&reg);
    agrees::<api::resource::v1::ResourceClaim>(&reg);
    agrees::<api::flowcontrol::v1::FlowSchema>(&reg);
    agrees::<api::admissionregistration::v1::ValidatingAdmissionPolicy>(&reg);
    agrees::<apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&reg);
    agrees::<kube_aggregator::pkg::apis::apiregistration::v1::APIService>(&reg);
}

#[test]
fn every_type_is_well_formed() {
    let reg = ResourceRegistry::builtin();
    assert!(reg.all().len() >= 60, "{}", reg.all().len());
    for t in reg.all() {
        assert!(!t.definition.is_empty(), "{}", t.kind);
        assert_eq!(t.singular, t.kind.to_ascii_lowercase());
        assert!(!t.verbs.is_empty(), "{}", t.kind);
        assert!(crate::api::openapi::definitions().contains_key(&t.definition));
    }
}

#[test]
fn metadata_kubectl_relies_on() {
    let reg = ResourceRegistry::builtin();
    let deploy = reg.lookup("apps", "v1", "deployments").unwrap();
    assert_eq!(deploy.short_names, ["deploy"]);
    assert_eq!(deploy.categories, ["all"]);
    let scale = deploy
        .subresources
        .iter()
        .find(|s| s.name == "scale")
        .unwrap();
    assert_eq!(
        (scale.kind.as_str(), scale.api_version.as_str()),
        ("Scale", "autoscaling/v1")
    );
    let pods = reg.lookup("", "v1", "pods").unwrap();
    let subs: Vec<&str> = pods.subresources.iter().map(|s| s.name.as_str()).collect();
    for s in [
        "attach",
        "binding",
        "eviction",
        "ephemeralcontainers",
        "exec",
        "log",
        "portforward",
        "proxy",
        "resize",
        "status",
    ] {
        assert!(subs.contains(&s), "pods/{s}");
    }
    let exec = pods.subresources.iter().find(|s| s.name == "exec").unwrap();
    assert_eq!(exec.kind, "PodExecOptions");
    assert_eq!(exec.verbs, ["create", "get"]);
    let token = reg
        .subresource("", "v1", "serviceaccounts", "token")
        .unwrap()
        .1;
    assert_eq!(token.api_version, "authentication.k8s.io/v1");
    assert!(reg.subresource("", "v1", "nodes", "proxy").is_some());
    assert!(reg.subresource("", "v1", "services", "proxy").is_some());
    let all: Vec<&str> = reg
        .all()
        .iter()
        .filter(|t| t.categories.contains(&"all".to_string()))
        .map(|t| t.plural.as_str())
        .collect();
    for p in [
        "pods",
        "services",
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
        "jobs",
        "cronjobs",
        "replicationcontrollers",
    ] {
        assert!(all.contains(&p), "{p} in all");
    }
    assert_eq!(reg.resolve("deploy").unwrap().kind, "Deployment");
    assert_eq!(reg.resolve("hpa").unwrap().version, "v2");
    assert_eq!(reg.group("autoscaling").unwrap().preferred(), "v2");
    assert_eq!(reg.groups()[0].name, "");
    // Only versions enabled by default in the served minor: no alpha or beta.
    assert!(
        reg.all()
            .iter()
            .all(|t| version_priority(&t.version).0 == 3)
    );
}

#[test]
fn versions_sort_as_upstream() {
    let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "v1beta1"];
    v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1"]);
}
